//! Filter and test plugins of the playbook's and its roles'
//! `filter_plugins/` and `test_plugins/`, run by the controller's
//! ansible-core through the run's one bridge process, as Ansible runs
//! them. Found once, when the playbook is loaded; every environment of the
//! run then knows their names, so `validate` checks them as it checks the
//! native filters.

use std::path::PathBuf;
use std::sync::RwLock;

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, Value};

use crate::load::ansible_core::{self, PluginDirs, PluginKind, PluginNames};

/// The run's plugins, or why its plugin folders could not be loaded.
static FOUND: RwLock<Option<Found>> = RwLock::new(None);

#[derive(Default)]
struct Found {
    names: PluginNames,
    /// Why the plugin files found could not be loaded, if so.
    failure: Option<String>,
    /// Names asked of ansible-core that it does not have either.
    missing: PluginNames,
}

/// Loads the plugins of these folders (those that exist and hold Python
/// files) and the collection plugins named by their full names; with
/// neither, the bridge is never started.
pub fn install(dirs: PluginDirs, named: PluginNames) {
    let holds_python = |d: &PathBuf| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "py"))
        })
    };
    let dirs = PluginDirs {
        filters: dirs.filters.into_iter().filter(holds_python).collect(),
        tests: dirs.tests.into_iter().filter(holds_python).collect(),
        lookups: dirs.lookups.into_iter().filter(holds_python).collect(),
    };
    let no_dirs = dirs.filters.is_empty() && dirs.tests.is_empty() && dirs.lookups.is_empty();
    if no_dirs && named.filters.is_empty() && named.tests.is_empty() {
        return;
    }
    let found = match ansible_core::plugins(&dirs, &named) {
        Ok(names) => Found {
            names,
            ..Found::default()
        },
        Err(e) => {
            let folders: Vec<String> = dirs
                .filters
                .iter()
                .chain(&dirs.tests)
                .chain(&dirs.lookups)
                .map(|d| d.display().to_string())
                .collect();
            let names: Vec<&str> = named
                .filters
                .iter()
                .chain(&named.tests)
                .map(String::as_str)
                .collect();
            let mut what = Vec::new();
            if !folders.is_empty() {
                what.push(format!("in {}", folders.join(", ")));
            }
            if !names.is_empty() {
                what.push(names.join(", "));
            }
            Found {
                failure: Some(format!(
                    "the plugins {} cannot run: {e}",
                    what.join(" and ")
                )),
                ..Found::default()
            }
        }
    };
    *FOUND.write().unwrap_or_else(|e| e.into_inner()) = Some(found);
}

/// The collection filters and tests (`ns.collection.name`) a template
/// text names, which the native ones do not cover.
pub fn named_in(text: &str, out: &mut PluginNames) {
    static FILTER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\|\s*([a-z_]\w*\.[a-z_]\w*\.[a-z_]\w*)").expect("valid")
    });
    static TEST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\bis\s+(?:not\s+)?([a-z_]\w*\.[a-z_]\w*\.[a-z_]\w*)").expect("valid")
    });
    // Ansible's own and the address filters nodeprov has natively.
    let native = |n: &str| {
        [
            "ansible.builtin.",
            "ansible.legacy.",
            "ansible.utils.ip",
            "ansible.netcommon.",
        ]
        .iter()
        .any(|p| n.starts_with(p))
    };
    for (re, list) in [(&*FILTER, &mut out.filters), (&*TEST, &mut out.tests)] {
        for c in re.captures_iter(text) {
            let name = &c[1];
            if !native(name) && !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
    }
}

/// Whether ansible-core has a filter, test or lookup (`kind`) of this name
/// that no native one covers (`from_yaml`, `ansible.builtin.regex_escape`,
/// Jinja's own `center`, `lookup('vars', …)`), loading it through the
/// run's bridge when it does; asked once per name. Environments made from
/// then on hold its filter or test.
pub(super) fn resolve(kind: PluginKind, name: &str) -> bool {
    let mut guard = FOUND.write().unwrap_or_else(|e| e.into_inner());
    let found = guard.get_or_insert_with(Found::default);
    if found.names.of(kind).iter().any(|n| n == name) {
        return true;
    }
    if found.missing.of(kind).iter().any(|n| n == name) {
        return false;
    }
    let mut named = PluginNames::default();
    named.of_mut(kind).push(name.to_string());
    let loaded = match kind {
        PluginKind::Lookup => ansible_core::has_lookup(name).map(|has| match has {
            true => named,
            false => PluginNames::default(),
        }),
        _ => ansible_core::plugins(&PluginDirs::default(), &named),
    };
    if let Err(e) = &loaded {
        found.failure.get_or_insert_with(|| {
            format!("ansible-core, which may have it, cannot be asked: {e}")
        });
    }
    let known = loaded.is_ok_and(|names| names.of(kind).iter().any(|n| n == name));
    match known {
        true => found.names.of_mut(kind).push(name.to_string()),
        false => found.missing.of_mut(kind).push(name.to_string()),
    }
    known
}

/// The filters, tests and lookups the run takes from ansible-core, for
/// `validate` to list.
pub fn bridged() -> PluginNames {
    let found = FOUND.read().unwrap_or_else(|e| e.into_inner());
    found.as_ref().map(|f| f.names.clone()).unwrap_or_default()
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
        // JSON would carry an undefined value as null; Ansible's plugin
        // would meet Jinja's undefined and fail on it.
        if holds_undefined(v) {
            return Err(Error::from(ErrorKind::UndefinedError));
        }
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

fn holds_undefined(v: &Value) -> bool {
    if v.is_undefined() {
        return true;
    }
    let Ok(items) = v.try_iter() else {
        return false;
    };
    match v.kind() {
        ValueKind::Seq => items.into_iter().any(|item| holds_undefined(&item)),
        ValueKind::Map => items
            .into_iter()
            .any(|key| v.get_item(&key).is_ok_and(|item| holds_undefined(&item))),
        _ => false,
    }
}
