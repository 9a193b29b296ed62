//! Filter and test plugins of the playbook's and its roles'
//! `filter_plugins/` and `test_plugins/`, run by the controller's
//! ansible-core through the run's one bridge process, as Ansible runs
//! them. Found once, when the playbook is loaded; every environment of the
//! run then knows their names, so `validate` checks them as it checks the
//! native filters.

use std::path::PathBuf;
use std::sync::RwLock;

use minijinja::value::{Kwargs, Rest};
use minijinja::{Environment, Error, ErrorKind, Value};

use crate::load::ansible_core::{self, PluginNames};

/// The run's plugins, or why its plugin folders could not be loaded.
static FOUND: RwLock<Option<Found>> = RwLock::new(None);

struct Found {
    names: PluginNames,
    /// Why the plugin files found could not be loaded, if so.
    failure: Option<String>,
}

/// Loads the plugins of these folders (those that exist and hold Python
/// files; with none, the bridge is never started).
pub fn install(filter_dirs: Vec<PathBuf>, test_dirs: Vec<PathBuf>) {
    let holds_python = |d: &PathBuf| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "py"))
        })
    };
    let filter_dirs: Vec<PathBuf> = filter_dirs.into_iter().filter(holds_python).collect();
    let test_dirs: Vec<PathBuf> = test_dirs.into_iter().filter(holds_python).collect();
    if filter_dirs.is_empty() && test_dirs.is_empty() {
        return;
    }
    let found = match ansible_core::plugins(&filter_dirs, &test_dirs) {
        Ok(names) => Found {
            names,
            failure: None,
        },
        Err(e) => {
            let dirs: Vec<String> = filter_dirs
                .iter()
                .chain(&test_dirs)
                .map(|d| d.display().to_string())
                .collect();
            Found {
                names: PluginNames::default(),
                failure: Some(format!(
                    "the plugins in {} cannot run: {e}",
                    dirs.join(", ")
                )),
            }
        }
    };
    *FOUND.write().unwrap_or_else(|e| e.into_inner()) = Some(found);
}

/// Why a filter or test the templates name may be missing: plugin files
/// that could not be loaded.
pub(super) fn failure() -> Option<String> {
    let found = FOUND.read().unwrap_or_else(|e| e.into_inner());
    found.as_ref().and_then(|f| f.failure.clone())
}

/// Adds the plugins to an environment; a plugin of a native filter's name
/// wins, as a play's own plugin wins over Ansible's in Ansible.
pub(super) fn register(env: &mut Environment<'static>) {
    let found = FOUND.read().unwrap_or_else(|e| e.into_inner());
    let Some(found) = found.as_ref() else {
        return;
    };
    for name in &found.names.filters {
        let own = name.clone();
        env.add_filter(
            name.clone(),
            move |value: Value, args: Rest<Value>, kwargs: Kwargs| {
                call("filter", &own, value, args, kwargs)
            },
        );
    }
    for name in &found.names.tests {
        let own = name.clone();
        env.add_test(
            name.clone(),
            move |value: Value, args: Rest<Value>, kwargs: Kwargs| {
                call("test", &own, value, args, kwargs).map(|v| v.is_true())
            },
        );
    }
}

fn call(
    kind: &str,
    name: &str,
    value: Value,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let json = |v: &Value| {
        serde_json::to_value(v)
            .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("{kind} '{name}': {e}")))
    };
    let mut positional = vec![json(&value)?];
    for a in args.iter() {
        positional.push(json(a)?);
    }
    let mut named = serde_json::Map::new();
    for key in kwargs.args() {
        let v: Value = kwargs.get(key)?;
        named.insert(key.to_string(), json(&v)?);
    }
    kwargs.assert_all_used()?;
    ansible_core::call(kind, name, positional, serde_json::Value::Object(named))
        .map(|v| Value::from(minijinja::value::Serde(&v)))
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("{kind} '{name}': {e}")))
}
