//! `reboot`: restarts the host, waits until it is back with a new boot id
//! and a passing test command, and lets the play go on over a new session.
//! The module only reads its parameters into a [`Reboot`]; the schedule
//! carries it out, as only it can replace the session and re-probe.
//!
//! **`reboot`** runs what is pending first, then reboots the host from a
//! script that returns at once (`shutdown -r now`, started in the
//! background after a second, so the session closes cleanly), logs in again
//! over the same route (jump hosts included) until the host answers with a new
//! boot id and a passing `test_command`, and goes on with the play over the new
//! session: everything probed before the reboot is probed again, and what
//! earlier tasks changed is verified after it, so the report proves those
//! changes survived the reboot. The task reports how long the host was away
//! and registers `rebooted` and `elapsed`. A host that is not back within
//! `reboot_timeout` fails the task and is unreachable from then on. Check mode
//! reboots nothing and reports the reboot as drift. With `-c local` the task
//! fails before anything runs: it would restart the controller. A loop over
//! `reboot`, `wait_for_connection` or `pause`, or `run_once` on them, is refused when
//! the playbook is loaded. `wait_for_connection` sends a script until one
//! runs, logging in again between tries. A play that starts with it (and
//! `gather_facts: false`, as Ansible needs too) waits for a host that does
//! not answer yet, a new server still booting, instead of reporting it
//! unreachable; each login then waits `--timeout`, not `connect_timeout`.
//! No task's probe goes out ahead of a reboot or a wait: what it read could
//! not hold after.
//!
//! # Example
//!
//! ```yaml
//! - name: Reboot into the new NVIDIA kernel modules
//!   reboot:
//!     reboot_timeout: 1200
//!     msg: Rebooting for the NVIDIA driver update
//!     test_command: nvidia-smi -L
//! ```

use std::time::Duration;

use crate::base::shell::quote;
use crate::modules::kit::connection::{ConnectionAction, Reboot};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub const REBOOT: ModuleSpec = ModuleSpec {
    name: "reboot",
    source: file!(),
    aliases: &["ansible.builtin.reboot"],
    params: &RebootArgs::SPEC,
    free_form: None,
    kind: ModuleKind::Reboot,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct RebootArgs {
        /// seconds the host may take to go down and come back (default 600)
        reboot_timeout: Option<i64> = Some(600),
        /// seconds for each login attempt while waiting (default: the connection's timeout)
        connect_timeout: Option<i64>,
        /// seconds to wait before rebooting
        pre_reboot_delay: Option<i64> = Some(0),
        /// seconds to wait after the host is back, before the next task
        post_reboot_delay: Option<i64> = Some(0),
        /// must succeed once the host is back (default `whoami`)
        test_command: String = "whoami".into(),
        /// the message `shutdown` broadcasts
        msg: String = "Reboot initiated by nodeprov".into(),
        /// prints what differs after every boot (default: the kernel's boot id)
        boot_time_command: String = "cat /proc/sys/kernel/random/boot_id".into(),
        /// the command that reboots, in place of `shutdown -r now MSG`
        reboot_command: Option<String>,
        /// folders searched for `shutdown` before PATH
        search_paths: Vec<String> = ["/sbin", "/bin", "/usr/sbin", "/usr/bin", "/usr/local/sbin"].map(String::from).to_vec(),
    }
}

struct RebootModule(Reboot);

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = RebootArgs::read(p)?;
    let seconds = |key: &str, v: Option<i64>| -> Result<Option<Duration>, ParamError> {
        match v {
            Some(n) if n < 0 => Err(p.error(key, format!("'{key}' must not be negative"))),
            v => Ok(v.map(|n| Duration::from_secs(n as u64))),
        }
    };
    let timeout = seconds("reboot_timeout", a.reboot_timeout)?.unwrap_or_default();
    let connect_timeout = seconds("connect_timeout", a.connect_timeout)?;
    let pre_delay = seconds("pre_reboot_delay", a.pre_reboot_delay)?.unwrap_or_default();
    let post_delay = seconds("post_reboot_delay", a.post_reboot_delay)?.unwrap_or_default();
    let command = a
        .reboot_command
        .unwrap_or_else(|| format!("shutdown -r now {}", quote(&a.msg)));
    Ok(Box::new(RebootModule(Reboot {
        boot_id_command: a.boot_time_command,
        reboot_script: detached(&a.search_paths, pre_delay, &command),
        test_command: a.test_command,
        timeout,
        connect_timeout,
        post_delay,
    })))
}

/// The reboot, started in the background with its output dropped: the
/// script ends and its session closes cleanly before the host goes down,
/// and a hang-up as the session closes does not stop it.
fn detached(search_paths: &[String], pre_delay: Duration, command: &str) -> String {
    let path: String = search_paths
        .iter()
        .map(|d| format!("{}:", quote(d)))
        .collect();
    format!(
        "(trap '' HUP; PATH={path}\"$PATH\"; sleep {}; {command}) </dev/null >/dev/null 2>&1 &",
        pre_delay.as_secs().max(1)
    )
}

impl Module for RebootModule {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        Ok(Plan::default())
    }

    fn connection_action(&self) -> Option<ConnectionAction> {
        Some(ConnectionAction::Reboot(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_parses, build_error, build_test};
    use serde_json::json;

    fn reboot(params: serde_json::Value) -> Reboot {
        match build_test(&REBOOT, params).unwrap().connection_action() {
            Some(ConnectionAction::Reboot(r)) => r,
            _ => panic!("reboot asks the schedule to reboot"),
        }
    }

    #[test]
    fn defaults_are_ansibles() {
        let r = reboot(json!({}));
        assert_eq!(r.boot_id_command, "cat /proc/sys/kernel/random/boot_id");
        assert_eq!(r.test_command, "whoami");
        assert_eq!(r.timeout, Duration::from_secs(600));
        assert_eq!((r.connect_timeout, r.post_delay), (None, Duration::ZERO));
        assert_eq!(
            r.reboot_script,
            "(trap '' HUP; PATH=/sbin:/bin:/usr/sbin:/usr/bin:/usr/local/sbin:\"$PATH\"; \
             sleep 1; shutdown -r now 'Reboot initiated by nodeprov') </dev/null >/dev/null 2>&1 &"
        );
    }

    #[test]
    fn delays_timeouts_and_a_hostile_message_are_honoured() {
        let r = reboot(json!({
            "reboot_timeout": "900", "connect_timeout": 20, "pre_reboot_delay": 5,
            "post_reboot_delay": 30, "msg": "it's $(reboot)", "search_paths": ["/opt/x y"],
        }));
        assert_eq!(r.timeout, Duration::from_secs(900));
        assert_eq!(r.connect_timeout, Some(Duration::from_secs(20)));
        assert_eq!(r.post_delay, Duration::from_secs(30));
        assert!(r
            .reboot_script
            .contains("sleep 5; shutdown -r now 'it'\\''s $(reboot)')"));
        assert!(r.reboot_script.contains("PATH='/opt/x y':\"$PATH\""));
        assert_sh_parses(&r.reboot_script);
    }

    #[test]
    fn a_reboot_command_replaces_shutdown() {
        let r = reboot(json!({"reboot_command": "systemctl reboot"}));
        assert!(r.reboot_script.contains("sleep 1; systemctl reboot)"));
    }

    #[test]
    fn negative_seconds_are_refused() {
        let e = build_error(&REBOOT, json!({"reboot_timeout": -1}));
        assert!(e.contains("'reboot_timeout' must not be negative"), "{e}");
    }
}
