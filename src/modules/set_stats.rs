//! `set_stats`: custom statistics for the end of the run, as Ansible's
//! plugin gathers them. Decided on the controller: nothing on the host
//! changes. The run's JSON report carries them, per host (`per_host:
//! true`) or for the whole run (`global_custom_stats`); with `aggregate`
//! (the default) a key given again adds to what it holds (numbers add up,
//! lists and strings join, mappings merge), else it replaces it.
//!
//! # Example
//!
//! ```yaml
//! - name: Count the GPUs the run brought up
//!   set_stats:
//!     data:
//!       gpus_ready: "{{ ansible_local.gpus | default(8) | int }}"
//! ```

use serde_json::{json, Map, Value};

use crate::modules::kit::module::{AnsiblePlugin, Decided, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::Plan;
use crate::modules::params::{module_params, ParamError, Params};

pub const SET_STATS: ModuleSpec = ModuleSpec {
    name: "set_stats",
    source: file!(),
    aliases: &["ansible.builtin.set_stats"],
    params: &SetStatsArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[],
    }),
    controller_file: None,
    build,
};

module_params! {
    struct SetStatsArgs {
        /// the statistics, a mapping of names to values
        data: Option<Value>,
        /// kept for each host apart, not for the whole run
        per_host: bool = false,
        /// add to what a name already holds, rather than replace it
        aggregate: bool = true,
    }
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = SetStatsArgs::read(p)?;
    let data = match a.data {
        None => Map::new(),
        Some(Value::Object(data)) => data,
        Some(_) => return Err(p.error("data", "The 'data' option needs to be a dictionary/hash")),
    };
    if let Some(bad) = data
        .keys()
        .find(|k| !crate::load::playbook::is_identifier(k))
    {
        return Err(p.error(
            "data",
            format!(
                "The variable name '{bad}' is not valid. Variables must start with a letter or underscore character, and contain only letters, numbers and underscores."
            ),
        ));
    }
    let mut plan = Plan::noop();
    plan.returns.insert(
        "ansible_stats".into(),
        json!({"data": data, "per_host": a.per_host, "aggregate": a.aggregate}),
    );
    Ok(Box::new(Decided(plan)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::plan::Facts;
    use crate::modules::kit::testing::build_test;

    #[test]
    fn the_stats_are_returned_as_ansibles_plugin_returns_them() {
        let m = build_test(&SET_STATS, json!({"data": {"gpus": 8}, "per_host": true})).unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert_eq!(
            plan.returns["ansible_stats"],
            json!({"data": {"gpus": 8}, "per_host": true, "aggregate": true})
        );
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        let err = build_test(&SET_STATS, json!({"data": {"1st": 1}}))
            .err()
            .unwrap();
        assert!(err.message.contains("'1st' is not valid"), "{err:?}");
        assert!(build_test(&SET_STATS, json!({"data": [1]})).is_err());
    }
}
