//! The host's session replaced: a reboot waited out, or a host waited for
//! until it answers. Each script sent counts as a round trip; logging in
//! again does not.

use std::time::{Duration, Instant};

use super::Wire;
use crate::modules::{Reboot, WaitFor};
use crate::remote::{Output, Purpose, TransportError};

/// Between login attempts while a host reboots.
const REBOOT_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconnectError {
    #[error("reboot needs a connection to another machine; over a local connection it would restart this one")]
    Local,
    #[error("the reboot did not start: {0}")]
    NotStarted(String),
    #[error("the host did not come back within {secs} s after the reboot: {last}")]
    NotBack { secs: u64, last: String },
    #[error("the host did not answer within {secs} s: {last}")]
    NoAnswer { secs: u64, last: String },
}

impl Wire<'_> {
    /// Reboots the host and waits until it is back with a new boot id and
    /// a passing test command; returns how long that took.
    pub fn reboot(&mut self, r: &Reboot) -> Result<Duration, ReconnectError> {
        if !self.transport.can_reconnect() {
            return Err(ReconnectError::Local);
        }
        let started = Instant::now();
        let script = format!("{} || exit 1\n{}\n", r.boot_id_command, r.reboot_script);
        let before = self
            .answer(Purpose::Mutate, script)
            .map_err(ReconnectError::NotStarted)?;
        let deadline = started + r.timeout;
        let mut last = String::from("no login attempt finished");
        loop {
            if !pause_until(REBOOT_POLL, deadline) {
                let secs = r.timeout.as_secs();
                return Err(ReconnectError::NotBack { secs, last });
            }
            match self.back_from_reboot(r, &before) {
                Ok(()) => break,
                Err(why) => last = why,
            }
        }
        std::thread::sleep(r.post_delay);
        Ok(started.elapsed())
    }

    /// One attempt: log in, see a new boot id, pass the test command.
    fn back_from_reboot(&mut self, r: &Reboot, before: &str) -> Result<(), String> {
        self.transport
            .reconnect(r.connect_timeout)
            .map_err(|e| e.to_string())?;
        let now = self.answer(Purpose::Probe, r.boot_id_command.clone())?;
        if now == before {
            return Err("the host has not gone down yet".into());
        }
        self.answer(Purpose::Probe, r.test_command.clone())
            .map(drop)
            .map_err(|e| format!("test command '{}': {e}", r.test_command))
    }

    /// Logs in again (`meta: reset_connection`), so that what a login
    /// decides (a user's new groups) holds for the scripts after it.
    pub fn reset(&mut self) -> Result<(), ReconnectError> {
        if !self.transport.can_reconnect() {
            return Ok(());
        }
        self.transport
            .reconnect(None)
            .map_err(|e| ReconnectError::NoAnswer {
                secs: 0,
                last: e.to_string(),
            })?;
        self.answer(Purpose::Probe, "true".into())
            .map(drop)
            .map_err(|last| ReconnectError::NoAnswer { secs: 0, last })
    }

    /// Waits until the host runs a script, logging in again between tries.
    pub fn wait_for(&mut self, w: &WaitFor) -> Result<Duration, ReconnectError> {
        let started = Instant::now();
        std::thread::sleep(w.delay);
        let deadline = started + w.timeout;
        loop {
            let last = match self.answer(Purpose::Probe, "true".into()) {
                Ok(_) => return Ok(started.elapsed()),
                Err(why) => why,
            };
            if !pause_until(w.sleep, deadline) {
                let secs = w.timeout.as_secs();
                return Err(ReconnectError::NoAnswer { secs, last });
            }
            // A failed login is the next attempt's failure too.
            let _ = self.transport.reconnect(Some(w.connect_timeout));
        }
    }

    /// Runs a script; its trimmed output, or why it gave none.
    fn answer(&mut self, purpose: Purpose, body: String) -> Result<String, String> {
        match self.send(purpose, body) {
            Ok(Output {
                status: 0, stdout, ..
            }) => Ok(String::from_utf8_lossy(&stdout).trim().to_string()),
            Ok(Output { status, stderr, .. }) => Err(format!(
                "exit status {status}: {}",
                String::from_utf8_lossy(&stderr).trim()
            )),
            Err(TransportError::Unreachable(why) | TransportError::Interrupted { why, .. }) => {
                Err(why)
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Sleeps `pause`, unless that would pass `deadline`: false then.
fn pause_until(pause: Duration, deadline: Instant) -> bool {
    if Instant::now() + pause >= deadline {
        return false;
    }
    std::thread::sleep(pause);
    true
}
