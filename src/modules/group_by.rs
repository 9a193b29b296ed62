//! `group_by`: the host joins a group of the run's inventory, made under
//! `parents` when there is none of that name, as Ansible's plugin does.
//! Decided on the controller: nothing on the host changes, and the task
//! reports changed when the host joined the group or the group a parent
//! (in check mode too), as Ansible does. From its next task on, the
//! host's `group_names` and variables are those of its new groups (their
//! `group_vars/` beside the inventory); the plays after this one select
//! the group and see it in `groups`. The play it runs in keeps its hosts
//! and `groups`, since each host plans its play on its own.
//!
//! # Example
//!
//! ```yaml
//! - name: Group the nodes by their GPU vendor, for the plays after this one
//!   group_by:
//!     key: "gpu_{{ gpu_vendor | default('nvidia') }}"
//!     parents: [gpu_nodes]
//! ```

use serde_json::json;

use crate::modules::kit::module::{AnsiblePlugin, Decided, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{InventoryChange, Plan};
use crate::modules::params::{module_params, ParamError, Params};

pub const GROUP_BY: ModuleSpec = ModuleSpec {
    name: "group_by",
    source: file!(),
    aliases: &["ansible.builtin.group_by"],
    params: &GroupByArgs::SPEC,
    free_form: None,
    kind: ModuleKind::Grouping,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[],
    }),
    controller_file: None,
    build,
};

module_params! {
    struct GroupByArgs {
        /// the group (spaces become dashes, as in Ansible)
        key: String,
        /// the groups it is made under when new (default `all`)
        parents: Vec<String>,
    }
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = GroupByArgs::read(p)?;
    let dashed = |name: &str| name.replace(' ', "-");
    let parents = match a.parents.is_empty() {
        true => vec!["all".to_string()],
        false => a.parents.iter().map(|n| dashed(n)).collect(),
    };
    if a.key.trim().is_empty() {
        return Err(p.error("key", "the group's name is empty"));
    }
    let group = dashed(&a.key);
    let mut plan = Plan::noop();
    plan.notes.push(format!(
        "joins group '{group}' for the plays after this one"
    ));
    plan.returns.insert("add_group".into(), json!(group));
    plan.returns.insert("parent_groups".into(), json!(parents));
    plan.inventory
        .push(InventoryChange::Join { group, parents });
    Ok(Box::new(Decided(plan)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::plan::Facts;
    use crate::modules::kit::testing::build_test;

    #[test]
    fn the_host_joins_the_dashed_group_under_all_by_default() {
        let m = build_test(&GROUP_BY, json!({"key": "os Rocky 9"})).unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert_eq!(
            plan.inventory,
            [InventoryChange::Join {
                group: "os-Rocky-9".into(),
                parents: vec!["all".into()]
            }]
        );
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        let m = build_test(&GROUP_BY, json!({"key": "a", "parents": "gpu nodes"})).unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert!(matches!(
            &plan.inventory[0],
            InventoryChange::Join { parents, .. } if parents == &["gpu-nodes"]
        ));
    }
}
