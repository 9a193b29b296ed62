//! `wait_for_connection`: waits until the host answers a script, logging in
//! again while it does not. The schedule carries it out.
//!
//! # Example
//!
//! ```yaml
//! - name: Wait for the node to come back from its reinstall
//!   wait_for_connection:
//!     delay: 60
//!     timeout: 1800
//! ```

use std::time::Duration;

use crate::modules::kit::connection::{ConnectionAction, WaitFor};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub const WAIT_FOR_CONNECTION: ModuleSpec = ModuleSpec {
    name: "wait_for_connection",
    source: file!(),
    aliases: &["ansible.builtin.wait_for_connection"],
    params: &WaitArgs::SPEC,
    free_form: None,
    kind: ModuleKind::AwaitLogin,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct WaitArgs {
        /// seconds to wait before the first attempt
        delay: Option<i64> = Some(0),
        /// seconds between attempts (default 1)
        sleep: Option<i64> = Some(1),
        /// seconds to wait in all (default 600)
        timeout: Option<i64> = Some(600),
        /// seconds for each login attempt (default 5)
        connect_timeout: Option<i64> = Some(5),
    }
}

struct Wait(WaitFor);

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = WaitArgs::read(p)?;
    let seconds = |key: &str, v: Option<i64>| match v.unwrap_or_default() {
        n if n < 0 => Err(p.error(key, format!("'{key}' must not be negative"))),
        n => Ok(Duration::from_secs(n as u64)),
    };
    Ok(Box::new(Wait(WaitFor {
        delay: seconds("delay", a.delay)?,
        sleep: seconds("sleep", a.sleep)?,
        timeout: seconds("timeout", a.timeout)?,
        connect_timeout: seconds("connect_timeout", a.connect_timeout)?.max(Duration::from_secs(1)),
    })))
}

impl Module for Wait {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        Ok(Plan::default())
    }

    fn connection_action(&self) -> Option<ConnectionAction> {
        Some(ConnectionAction::WaitFor(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test};
    use serde_json::json;

    #[test]
    fn parameters_are_read_as_seconds() {
        let m = build_test(&WAIT_FOR_CONNECTION, json!({"sleep": 15, "timeout": "300"})).unwrap();
        let Some(ConnectionAction::WaitFor(w)) = m.connection_action() else {
            panic!("waits for the connection");
        };
        let s = Duration::from_secs;
        assert_eq!(
            (w.delay, w.sleep, w.timeout, w.connect_timeout),
            (s(0), s(15), s(300), s(5))
        );
        let e = build_error(&WAIT_FOR_CONNECTION, json!({"sleep": -2}));
        assert!(e.contains("'sleep' must not be negative"), "{e}");
    }
}
