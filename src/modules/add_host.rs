//! `add_host`: a host in the run's inventory, new or known, with groups
//! and variables, as Ansible's plugin adds it: once for the hosts of a
//! batch (Ansible's plugin bypasses the host loop; a loop adds one host
//! per item), every parameter besides its name and groups a variable of
//! the host (`ansible_host`, `ansible_user`...). Decided on the
//! controller: nothing on any host changes, and the task reports changed
//! when the run's inventory took something new (the host, a group, a
//! membership, other variables), as Ansible does. From the next task on,
//! `hostvars` holds the host and `delegate_to` reaches it; the plays
//! after this one select it and see it in `groups`, with its `host_vars/`
//! beside the inventory. The play it runs in keeps its own hosts and
//! `groups`.
//!
//! # Example
//!
//! ```yaml
//! - name: Take the new GPU node into the plays after this one
//!   add_host:
//!     name: gpu-node-17
//!     groups: [gpu_nodes]
//!     ansible_host: 10.0.4.17
//! ```

use serde_json::json;

use crate::modules::kit::module::{AnsiblePlugin, Decided, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{InventoryChange, Plan};
use crate::modules::params::{module_params, ParamError, ParamSpec, Params};

/// Its parameters besides `name` and `groups` are the host's variables.
pub const ADD_HOST: ModuleSpec = ModuleSpec {
    name: "add_host",
    source: file!(),
    aliases: &["ansible.builtin.add_host"],
    params: &ParamSpec {
        any_variable: true,
        ..AddHostArgs::SPEC
    },
    free_form: None,
    kind: ModuleKind::NewHosts,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[],
    }),
    controller_file: None,
    build,
};

module_params! {
    struct AddHostArgs {
        /// the host's inventory name (`name:port` sets `ansible_port`)
        #[aliases("host", "hostname")]
        name: String,
        /// the groups it joins (a list, or names separated by commas)
        #[aliases("group", "groupname")]
        groups: Vec<String>,
    }
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    // Words without a key (`add_host: web1 group=x`), as Ansible's plugin
    // refuses them.
    if p.has("_raw_params") {
        return Err(p.error(
            "_raw_params",
            "Invalid raw parameters passed, requires a dictionary/mapping got a  <class 'str'>",
        ));
    }
    let a = AddHostArgs::read(p)?;
    let mut vars = serde_json::Map::new();
    for (name, value) in p
        .entries()
        .filter(|(k, _)| !matches!(*k, "name" | "groups"))
    {
        if !crate::load::playbook::is_identifier(name) {
            return Err(p.error(name, format!("'{name}' is not a valid variable name")));
        }
        vars.insert(name.to_string(), value.clone());
    }
    let mut name = a.name.trim().to_string();
    // `host:port`, as Ansible's parse_address reads it (not an IPv6 address).
    if let Some((host, port)) = name.rsplit_once(':') {
        if !host.contains(':') && !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) {
            vars.insert(
                "ansible_port".into(),
                json!(port.parse::<u64>().unwrap_or_default()),
            );
            name = host.to_string();
        }
    }
    if name.is_empty() {
        return Err(p.error("name", "the host's name is empty"));
    }
    let mut plan = Plan::noop();
    plan.notes
        .push(format!("adds host '{name}' for the plays after this one"));
    plan.returns.insert(
        "add_host".into(),
        json!({"host_name": name, "groups": a.groups, "host_vars": vars}),
    );
    plan.inventory.push(InventoryChange::Host {
        name,
        groups: a.groups,
        vars,
    });
    Ok(Box::new(Decided(plan)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::plan::Facts;
    use crate::modules::kit::testing::build_test;

    #[test]
    fn other_parameters_are_the_hosts_variables_and_a_port_is_split_off() {
        let m = build_test(
            &ADD_HOST,
            json!({"name": "node7:2222", "groups": "gpu,new", "ansible_host": "10.0.0.7"}),
        )
        .unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert_eq!(
            plan.inventory,
            [InventoryChange::Host {
                name: "node7".into(),
                groups: vec!["gpu".into(), "new".into()],
                vars: serde_json::from_value(
                    json!({"ansible_host": "10.0.0.7", "ansible_port": 2222})
                )
                .unwrap(),
            }]
        );
    }
}
