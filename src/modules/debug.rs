//! `debug`: a message or a variable's value shown in the report. Decided on
//! the controller: it probes nothing and changes nothing.
//!
//! # Example
//!
//! ```yaml
//! - name: Say which driver branch this node gets
//!   debug:
//!     msg: "NVIDIA driver branch {{ gpu_driver_branch | default('580') }}"
//! - name: Show the kernel the driver is built for
//!   debug:
//!     var: ansible_facts.kernel
//! ```

use serde_json::{json, Value};

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Expression, ParamError, Params};
use crate::remote::probe::Probe;

pub const DEBUG: ModuleSpec = ModuleSpec {
    name: "debug",
    source: file!(),
    aliases: &["ansible.builtin.debug"],
    params: &DebugArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct DebugArgs {
        /// the message, any value (default "Hello world!")
        msg: Option<Value>,
        /// a variable (or expression) to show instead of `msg`; an undefined one shows as not defined, as in Ansible
        var: Option<Expression>,
        /// shown only at this `-v` level in Ansible; nodeprov shows level 0 only (above 0 hides it)
        verbosity: Option<i64>,
    }
}

struct Debug {
    /// What the task returns: `{msg: …}` or `{<var>: …}`.
    returns: serde_json::Map<String, Value>,
    shown: Option<String>,
    /// Why `var` could not be shown, which fails the task when it runs.
    failure: Option<String>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = DebugArgs::read(p)?;
    let (key, value) = match (a.msg, a.var) {
        (Some(_), Some(_)) => return Err(p.error("var", "give only one of 'msg' and 'var'")),
        (msg, None) => ("msg".to_string(), msg.unwrap_or(json!("Hello world!"))),
        (None, Some(Expression(var))) => {
            let expr = json!(format!("{{{{ {var} }}}}"));
            // Ansible shows an undefined variable rather than failing; any
            // other error fails the task.
            let value = match p.ctx.templates.render_value(&expr, p.ctx.all_vars()) {
                Ok(value) => value,
                Err(e) if e.is_undefined => json!("VARIABLE IS NOT DEFINED!"),
                Err(e) => {
                    let why = format!("Error while resolving `var` expression: {e}");
                    return Ok(Box::new(Debug {
                        returns: Default::default(),
                        shown: None,
                        failure: Some(why),
                    }));
                }
            };
            (var, value)
        }
    };
    let shown = (a.verbosity.unwrap_or(0) <= 0).then(|| match &value {
        Value::String(s) => format!("{key}: {s}"),
        other => format!("{key}: {other}"),
    });
    let mut returns = serde_json::Map::new();
    returns.insert(key, value);
    Ok(Box::new(Debug {
        returns,
        shown,
        failure: None,
    }))
}

impl Module for Debug {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        if let Some(why) = &self.failure {
            return Err(ModuleError::Asserted(why.clone()));
        }
        Ok(Plan {
            notes: self.shown.iter().cloned().collect(),
            returns: self.returns.clone(),
            ..Plan::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test_with};

    fn planned(params: Value, vars: Value) -> Plan {
        build_test_with(&DEBUG, params, vars, &[])
            .unwrap()
            .plan(&Facts::default())
            .unwrap()
    }

    #[test]
    fn shows_a_message_or_a_variable_and_returns_it() {
        let p = planned(json!({"msg": "swap is {{ 1 + 1 }}G"}), json!({}));
        assert_eq!(
            p.notes,
            ["msg: swap is {{ 1 + 1 }}G"],
            "parameters arrive rendered"
        );
        assert_eq!(p.returns["msg"], "swap is {{ 1 + 1 }}G");
        let p = planned(json!({"var": "gpus"}), json!({"gpus": [0, 1]}));
        assert_eq!(p.notes, ["gpus: [0,1]"]);
        assert_eq!(p.returns["gpus"], json!([0, 1]));
        let p = planned(json!({"var": "nope"}), json!({}));
        assert_eq!(p.returns["nope"], "VARIABLE IS NOT DEFINED!");
        let broken = build_test_with(&DEBUG, json!({"var": "1 | urlsplit('x')"}), json!({}), &[])
            .unwrap()
            .plan(&Facts::default())
            .unwrap_err();
        assert!(
            broken
                .to_string()
                .starts_with("Error while resolving `var` expression"),
            "an error that is no undefined variable fails the task: {broken}"
        );
        assert!(planned(json!({"msg": "x", "verbosity": 2}), json!({}))
            .notes
            .is_empty());
        assert!(planned(json!({}), json!({})).changes.is_empty());
        assert!(build_error(&DEBUG, json!({"msg": "a", "var": "b"})).contains("only one of"));
    }
}
