//! `assert` and `fail`: stop a host with a message when a condition says
//! so. Decided on the controller from the task's variables.
//!
//! # Example
//!
//! ```yaml
//! - name: Refuse a driver branch too old for the H100s
//!   assert:
//!     that:
//!       - gpu_driver_branch | default('580') | int >= 535
//!     fail_msg: the NVIDIA driver branch must be 535 or newer
//!     success_msg: the driver branch is supported
//! - name: Stop on nodes that are not x86_64
//!   fail:
//!     msg: the CUDA repositories here are for x86_64 nodes only
//!   when: ansible_facts['architecture'] | default('x86_64') != 'x86_64'
//! ```

use serde_json::{json, Value};

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Conditions, ParamError, Params};
use crate::remote::probe::Probe;

pub const ASSERT: ModuleSpec = ModuleSpec {
    name: "assert",
    source: file!(),
    aliases: &["ansible.builtin.assert"],
    params: &AssertArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build: build_assert,
};

pub const FAIL: ModuleSpec = ModuleSpec {
    name: "fail",
    source: file!(),
    aliases: &["ansible.builtin.fail"],
    params: &FailArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build: build_fail,
};

module_params! {
    struct AssertArgs {
        /// conditions (one expression or a list, as in `when:`) that must all hold
        that: Conditions [required],
        /// the failure message (default "Assertion failed")
        #[aliases("msg")]
        fail_msg: Option<Value>,
        /// the message when every condition holds
        success_msg: Option<Value>,
        /// no message when every condition holds
        quiet: bool = false,
    }
}

module_params! {
    struct FailArgs {
        /// the failure message
        msg: Option<Value>,
    }
}

/// The verdict, judged when the task is built for a host (after what the
/// tasks before it registered), in the run's templates: `hostvars`,
/// `playbook_dir` and the plugins are there as in any other template.
enum Verdict {
    Holds {
        note: Option<String>,
    },
    Fails {
        msg: String,
        returns: serde_json::Map<String, Value>,
    },
    Unjudged(String),
}

fn text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn build_assert(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AssertArgs::read(p)?;
    if a.that.0.is_empty() {
        return Err(p.error("that", "assert needs at least one condition in 'that'"));
    }
    let vars = p.ctx.all_vars();
    let failure = a.fail_msg.map(text).unwrap_or_default();
    for cond in &a.that.0 {
        let holds = match p.ctx.templates.eval_condition(&json!(cond), vars) {
            Ok(holds) => holds,
            Err(e) => {
                let why = format!("cannot evaluate '{cond}': {e}");
                return Ok(Box::new(Verdict::Unjudged(why)));
            }
        };
        if !holds {
            let msg = match failure.is_empty() {
                true => format!("Assertion failed: {cond}"),
                false => failure,
            };
            // What Ansible's assert returns besides its message.
            let mut returns = serde_json::Map::new();
            returns.insert("assertion".into(), json!(cond));
            returns.insert("evaluated_to".into(), json!(false));
            return Ok(Box::new(Verdict::Fails { msg, returns }));
        }
    }
    let note = match a.quiet {
        true => None,
        false => Some(a.success_msg.map_or("All assertions passed".into(), text)),
    };
    Ok(Box::new(Verdict::Holds { note }))
}

fn build_fail(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FailArgs::read(p)?;
    Ok(Box::new(Verdict::Fails {
        msg: a.msg.map_or("Failed as requested from task".into(), text),
        returns: serde_json::Map::new(),
    }))
}

impl Module for Verdict {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        match self {
            Verdict::Holds { note } => {
                let mut plan = Plan::noop();
                plan.notes.extend(note.clone());
                if let Some(msg) = note {
                    plan.returns.insert("msg".into(), json!(msg));
                }
                Ok(plan)
            }
            Verdict::Fails { msg, returns } => Err(ModuleError::Returned {
                msg: msg.clone(),
                returns: returns.clone(),
            }),
            Verdict::Unjudged(why) => Err(ModuleError::Asserted(why.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::build_test_with;

    fn verdict(spec: &ModuleSpec, params: Value, vars: Value) -> Result<Plan, ModuleError> {
        build_test_with(spec, params, vars, &[])
            .unwrap()
            .plan(&Facts::default())
    }

    #[test]
    fn assert_evaluates_every_condition_and_names_the_first_that_fails() {
        let vars = json!({"swap_mb": 512, "os": "Rocky"});
        let ok = verdict(
            &ASSERT,
            json!({"that": ["swap_mb > 0", "os in ['Rocky', 'CentOS']"]}),
            vars.clone(),
        );
        assert_eq!(ok.unwrap().notes, ["All assertions passed"]);
        let bad = verdict(&ASSERT, json!({"that": "swap_mb > 1024"}), vars.clone());
        assert_eq!(
            bad.unwrap_err().to_string(),
            "Assertion failed: swap_mb > 1024"
        );
        let custom = verdict(
            &ASSERT,
            json!({"that": ["false"], "fail_msg": "need {{ x }}"}),
            vars.clone(),
        );
        assert_eq!(custom.unwrap_err().to_string(), "need {{ x }}");
        let quiet = verdict(&ASSERT, json!({"that": ["true"], "quiet": true}), vars);
        assert!(quiet.unwrap().notes.is_empty());
        let err = verdict(&ASSERT, json!({"that": ["nope > 1"]}), json!({}));
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("cannot evaluate 'nope > 1'"));
    }

    #[test]
    fn fail_fails_with_its_message() {
        let e = verdict(&FAIL, json!({"msg": "unsupported OS"}), json!({})).unwrap_err();
        assert_eq!(e.to_string(), "unsupported OS");
        let e = verdict(&FAIL, json!({}), json!({})).unwrap_err();
        assert_eq!(e.to_string(), "Failed as requested from task");
    }
}
