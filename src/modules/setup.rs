//! `setup`: gathers the host's facts as a task (a play with
//! `gather_facts: false` asks for them here). The facts ride in the same
//! batched probe as every other task's, and become the host's variables.
//!
//! # Example
//!
//! ```yaml
//! - name: Gather only the facts the driver install needs
//!   setup:
//!     filter: ["ansible_distribution*", "ansible_kernel"]
//! ```

use serde_json::Value;

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::host_facts;
use crate::remote::probe::Probe;

pub const SETUP: ModuleSpec = ModuleSpec {
    name: "setup",
    source: file!(),
    aliases: &[
        "ansible.builtin.setup",
        "gather_facts",
        "ansible.builtin.gather_facts",
    ],
    params: &SetupArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct SetupArgs {
        /// only the facts whose names match these shell-style patterns
        filter: Vec<String>,
        /// accepted: nodeprov gathers its one set of facts in one probe
        gather_subset: Vec<String>,
        /// accepted: the probe is bounded by --command-timeout
        gather_timeout: Option<i64>,
    }
}

struct Setup {
    filter: Vec<regex::Regex>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = SetupArgs::read(p)?;
    let _ = (a.gather_subset, a.gather_timeout);
    let filter = a
        .filter
        .iter()
        .map(|glob| {
            let re = format!(
                "^{}$",
                glob.split('*')
                    .map(regex::escape)
                    .collect::<Vec<_>>()
                    .join(".*")
            );
            regex::Regex::new(&re).map_err(|e| p.error("filter", e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    Ok(Box::new(Setup { filter }))
}

impl Module for Setup {
    fn probes(&self) -> Vec<Probe> {
        vec![host_facts::probe()]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let gathered = host_facts::parse(facts.get(host_facts::KEY)?);
        let kept: serde_json::Map<String, Value> = gathered
            .into_iter()
            .filter(|(k, _)| self.filter.is_empty() || self.filter.iter().any(|r| r.is_match(k)))
            .collect();
        Ok(Plan {
            returns: [("ansible_facts".to_string(), Value::Object(kept.clone()))]
                .into_iter()
                .collect(),
            sets: kept,
            ..Plan::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_test, facts_of};
    use serde_json::json;

    #[test]
    fn gathered_facts_become_variables_filtered_by_pattern() {
        let facts = facts_of(&[(
            host_facts::KEY,
            "osfile=/etc/os-release\nos NAME=\"Rocky Linux\"\nos ID=\"rocky\"\nos VERSION_ID=\"9.4\"\nrelease redhat-release Rocky Linux release 9.4 (Blue Onyx)\nkernel=5.14\n",
        )]);
        let all = build_test(&SETUP, json!({})).unwrap().plan(&facts).unwrap();
        assert_eq!(all.sets["ansible_distribution"], "Rocky");
        assert_eq!(all.sets["ansible_facts"]["kernel"], "5.14");
        let some = build_test(&SETUP, json!({"filter": ["ansible_distribution*"]}))
            .unwrap()
            .plan(&facts)
            .unwrap();
        assert!(some
            .sets
            .keys()
            .all(|k| k.starts_with("ansible_distribution")));
        assert_eq!(some.sets["ansible_distribution_major_version"], "9");
    }
}
