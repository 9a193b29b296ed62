//! `set_fact` and `include_vars`: variables for the host's later tasks,
//! decided on the controller (from the task's parameters, or a vars file
//! found as Ansible finds it: in `vars/` of the role, then the role, the
//! task file's folder and the playbook's folder, and directly in each), so
//! they cost no step.
//!
//! `set_fact` takes any variable names, templated names too, with their
//! values.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the GPU nodes' settings
//!   include_vars:
//!     file: gpu.yml
//! - name: Name the driver package from them
//!   set_fact:
//!     nvidia_driver_package: "nvidia-driver-{{ gpu_driver_branch | default('580') }}"
//! ```

use serde_json::Value;

use crate::modules::kit::module::{AnsiblePlugin, ControllerFile, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, ParamSpec, Params};
use crate::remote::probe::Probe;

/// Its parameters are the variables to set: any variable name.
pub const SET_FACT: ModuleSpec = ModuleSpec {
    name: "set_fact",
    source: file!(),
    aliases: &["ansible.builtin.set_fact"],
    params: &ParamSpec {
        any_variable: true,
        ..SetFactArgs::SPEC
    },
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build: build_set_fact,
};

/// Why `include_vars` reads one file only.
const VARS_FOLDER: &str = "a folder of variables files is not read natively; name each file";

pub const INCLUDE_VARS: ModuleSpec = ModuleSpec {
    name: "include_vars",
    source: file!(),
    aliases: &["ansible.builtin.include_vars"],
    params: &IncludeVarsArgs::SPEC,
    free_form: Some("file"),
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[
            ("dir", VARS_FOLDER),
            ("depth", VARS_FOLDER),
            ("extensions", VARS_FOLDER),
            ("files_matching", VARS_FOLDER),
            ("ignore_files", VARS_FOLDER),
            ("ignore_unknown_extensions", VARS_FOLDER),
            (
                "hash_behaviour",
                "variables files replace, as Ansible's default hash_behaviour does",
            ),
        ],
    }),
    controller_file: Some(ControllerFile {
        param: "file",
        subdir: "vars",
        template: false,
    }),
    build: build_include_vars,
};

module_params! {
    struct SetFactArgs {
        /// accepted as Ansible does; facts last for the run
        cacheable: Option<bool>,
    }
}

module_params! {
    struct IncludeVarsArgs {
        /// the YAML file, found in `vars/` of the role, then of the task file's and the playbook's folders, or directly in each
        file: String,
        /// put the file's variables under this one name
        name: Option<String>,
    }
}

struct SetVars(serde_json::Map<String, Value>);

fn build_set_fact(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    // Facts last for the run: there is no fact cache to keep them in.
    let _ = SetFactArgs::read(p)?.cacheable;
    let mut vars = serde_json::Map::new();
    for (name, value) in p.entries().filter(|(k, _)| *k != "cacheable") {
        // A name rendered from a template is only known here.
        if !crate::load::playbook::is_identifier(name) {
            return Err(p.error(name, format!("'{name}' is not a valid variable name")));
        }
        vars.insert(name.to_string(), value.clone());
    }
    Ok(Box::new(SetVars(vars)))
}

fn build_include_vars(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = IncludeVarsArgs::read(p)?;
    let path = p
        .ctx
        .find_file("vars", &a.file)
        .ok_or_else(|| p.error("file", format!("vars file '{}' not found", a.file)))?;
    let node = crate::load::yaml::load_file(&path).map_err(|d| p.error("file", d.to_string()))?;
    let vars = match node.to_json() {
        Value::Object(m) => m,
        Value::Null => serde_json::Map::new(),
        other => {
            return Err(p.error(
                "file",
                format!(
                    "{} must hold a mapping of variables, found {other}",
                    path.display()
                ),
            ))
        }
    };
    Ok(Box::new(SetVars(match a.name {
        Some(name) => [(name, Value::Object(vars))].into_iter().collect(),
        None => vars,
    })))
}

impl Module for SetVars {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        Ok(Plan {
            sets: self.0.clone(),
            returns: [("ansible_facts".to_string(), Value::Object(self.0.clone()))]
                .into_iter()
                .collect(),
            ..Plan::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test, build_test_with};
    use serde_json::json;

    #[test]
    fn set_fact_sets_its_parameters_and_changes_nothing() {
        let m = build_test(&SET_FACT, json!({"gpu_count": 8, "cacheable": true})).unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert_eq!(Value::Object(plan.sets), json!({"gpu_count": 8}));
        assert!(plan.changes.is_empty() && plan.steps.is_empty() && m.probes().is_empty());
    }

    #[test]
    fn include_vars_reads_the_file_from_vars_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("vars")).unwrap();
        std::fs::write(
            dir.path().join("vars/RedHat.yml"),
            "pkgs: [cuda-toolkit-12-4]\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("list.yml"), "- a\n").unwrap();
        let dirs = [dir.path().to_path_buf()];
        let plan = |params: Value| {
            build_test_with(&INCLUDE_VARS, params, json!({}), &dirs)
                .map(|m| Value::Object(m.plan(&Facts::default()).unwrap().sets))
        };
        assert_eq!(
            plan(json!({"file": "RedHat.yml"})).unwrap(),
            json!({"pkgs": ["cuda-toolkit-12-4"]})
        );
        assert_eq!(
            plan(json!({"file": "RedHat.yml", "name": "os"})).unwrap(),
            json!({"os": {"pkgs": ["cuda-toolkit-12-4"]}})
        );
        assert!(plan(json!({"file": "list.yml"}))
            .map(drop)
            .unwrap_err()
            .message
            .contains("must hold a mapping"));
        assert!(build_error(&INCLUDE_VARS, json!({"file": "nope.yml"})).contains("not found"));
    }
}
