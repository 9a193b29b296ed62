//! `pause` for a number of seconds or minutes: the host's run waits, then
//! goes on. The schedule carries it out, after what is pending has run, as
//! Ansible waits between the tasks before and after it. A pause with neither
//! `seconds` nor `minutes` waits for a key press and is refused: nodeprov runs
//! unattended. A loop or `run_once` over a pause is refused too.
//!
//! # Example
//!
//! ```yaml
//! - name: Give nvidia-persistenced time to bring the GPUs up
//!   pause:
//!     seconds: 30
//!     prompt: waiting for the GPUs after the driver reload
//! ```

use std::time::Duration;

use crate::modules::kit::connection::{self, ConnectionAction};
use crate::modules::kit::module::{AnsiblePlugin, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub const PAUSE: ModuleSpec = ModuleSpec {
    name: "pause",
    source: file!(),
    aliases: &["ansible.builtin.pause"],
    params: &PauseArgs::SPEC,
    free_form: None,
    kind: ModuleKind::Pause,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[(
            "echo",
            "a pause that waits for a key press is refused, so nothing is echoed",
        )],
    }),
    controller_file: None,
    build,
};

module_params! {
    struct PauseArgs {
        /// seconds to wait
        seconds: Option<i64>,
        /// minutes to wait (with `seconds`, `seconds` wins, as in Ansible)
        minutes: Option<i64>,
        /// shown in the report with the task
        prompt: Option<String>,
    }
}

struct Pause(connection::Pause);

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = PauseArgs::read(p)?;
    let seconds = match (a.seconds, a.minutes) {
        (Some(s), _) => ("seconds", s),
        (None, Some(m)) => ("minutes", m.saturating_mul(60)),
        (None, None) => {
            return Err(p.error(
                "prompt",
                "a pause without 'seconds' or 'minutes' waits for a key press, and nodeprov runs unattended; give it 'seconds'",
            ))
        }
    };
    match seconds {
        (key, n) if n < 0 => Err(p.error(key, format!("'{key}' must not be negative"))),
        (_, n) => Ok(Box::new(Pause(connection::Pause {
            wait: Duration::from_secs(n as u64),
            prompt: a.prompt,
        }))),
    }
}

impl Module for Pause {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        Ok(Plan::default())
    }

    fn connection_action(&self) -> Option<ConnectionAction> {
        Some(ConnectionAction::Pause(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test};
    use serde_json::json;

    fn waits(params: serde_json::Value) -> Duration {
        let m = build_test(&PAUSE, params).unwrap();
        let Some(ConnectionAction::Pause(p)) = m.connection_action() else {
            panic!("pauses");
        };
        p.wait
    }

    #[test]
    fn waits_seconds_or_minutes_and_never_for_a_key() {
        assert_eq!(waits(json!({"seconds": "20"})), Duration::from_secs(20));
        assert_eq!(waits(json!({"minutes": 2})), Duration::from_secs(120));
        assert_eq!(
            waits(json!({"minutes": 2, "seconds": 5, "prompt": "settling"})),
            Duration::from_secs(5)
        );
        let e = build_error(&PAUSE, json!({"prompt": "press enter"}));
        assert!(e.contains("waits for a key press"), "{e}");
        let e = build_error(&PAUSE, json!({"seconds": -1}));
        assert!(e.contains("must not be negative"), "{e}");
    }
}
