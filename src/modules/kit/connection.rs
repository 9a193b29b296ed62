//! What a module asks of the host's run rather than of the host: reboot it
//! and log in again, wait until it answers, or wait a while. The schedule
//! carries these out after what is pending has run; after the first two
//! the session itself is replaced and every fact probed before is stale.

use std::time::Duration;

pub(crate) enum ConnectionAction {
    Reboot(Reboot),
    WaitFor(WaitFor),
    Pause(Pause),
}

/// A reboot, proven by a new boot id and a passing test command.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Reboot {
    /// Prints something that differs after every boot.
    pub boot_id_command: String,
    /// Starts the reboot and returns at once, so the script can end
    /// before the host goes down.
    pub reboot_script: String,
    /// Must succeed once the host is back.
    pub test_command: String,
    /// How long the host may take to go down and come back.
    pub timeout: Duration,
    /// Each login attempt; `None`: the connection's own timeout.
    pub connect_timeout: Option<Duration>,
    /// Waited after the host is back, before the play goes on.
    pub post_delay: Duration,
}

/// Waits until the host answers a script (`wait_for_connection`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WaitFor {
    /// Waited before the first attempt.
    pub delay: Duration,
    /// Between attempts.
    pub sleep: Duration,
    pub timeout: Duration,
    pub connect_timeout: Duration,
}

/// Waits on the controller (`pause`); the prompt goes in the report.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pause {
    pub wait: Duration,
    pub prompt: Option<String>,
}
