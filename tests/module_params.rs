//! Parity with Ansible's argument specs: for every native module with an
//! Ansible namesake, `ansible-doc --json` (the newest ansible-core
//! scripts/test.sh installs) lists its parameters and aliases. Each one
//! nodeprov does not take natively must, in a task `nodeprov validate`
//! reads, run Ansible's own module (in the task's place, or where
//! Ansible's action plugin hands the task over as it is, `remote_src:
//! true`), or be refused with the reason the module declares. None may be
//! an "unknown parameter": a parameter upstream adds shows up here.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use nodeprov::modules::registry;
use nodeprov::modules::ModuleSpec;
use serde_json::Value;
use support::newest_ansible_bin;

/// The name Ansible documents the module by.
fn ansible_name(spec: &ModuleSpec) -> Option<&'static str> {
    spec.aliases.iter().copied().find(|a| {
        ["ansible.builtin.", "ansible.posix.", "community.general."]
            .iter()
            .any(|p| a.starts_with(p))
    })
}

/// Every name a task may give each of the module's Ansible parameters.
fn ansible_names(doc: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (name, option) in doc["options"].as_object().into_iter().flatten() {
        out.insert(name.clone());
        for alias in option["aliases"].as_array().into_iter().flatten() {
            out.insert(alias.as_str().unwrap().to_string());
        }
    }
    // The free-form string is how a task is written, not a parameter.
    out.remove("free_form");
    out.remove("free-form");
    out
}

fn native(spec: &ModuleSpec, name: &str) -> bool {
    spec.params.names.contains(&name) || spec.params.canonical(name).is_some()
}

/// `nodeprov validate` of one task per parameter: the errors (first lines
/// with their `--> file:line:col`) of each task, by parameter.
fn validate_each(
    spec: &ModuleSpec,
    module: &str,
    names: &[&String],
    extra: &[(&str, &str)],
) -> Vec<(String, Vec<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut playbook = String::from("- hosts: all\n  gather_facts: false\n  tasks:\n");
    let mut lines = Vec::new();
    for name in names {
        lines.push(playbook.lines().count() + 1);
        playbook += &format!("    - {module}:\n");
        for required in spec.params.required {
            playbook += &format!("        {required}: x\n");
        }
        for (k, v) in extra {
            playbook += &format!("        {k}: {v}\n");
        }
        playbook += &format!("        {name}: x\n");
    }
    let path = dir.path().join("params.yml");
    std::fs::write(&path, &playbook).unwrap();
    let home = tempfile::tempdir().unwrap();
    let path_var = format!(
        "{}:{}",
        newest_ansible_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(["validate", path.to_str().unwrap(), "-i", "h1,"])
        .env("PATH", path_var)
        .env("HOME", home.path())
        .env_remove("NODEPROV_ANSIBLE_PYTHON")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // Each error's first line, and the playbook line it points at.
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut current: Option<String> = None;
    for line in stderr.lines() {
        if line.starts_with("error") {
            current = Some(line.to_string());
        } else if let Some(at) = line.trim_start().strip_prefix("--> ") {
            let n = at.rsplit(':').nth(1).and_then(|n| n.parse().ok());
            if let (Some(msg), Some(n)) = (current.take(), n) {
                errors.push((n, msg));
            }
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let end = lines.get(i + 1).copied().unwrap_or(usize::MAX);
            let own = errors
                .iter()
                .filter(|(n, _)| *n >= lines[i] && *n < end)
                .map(|(_, m)| m.clone())
                .collect();
            (name.to_string(), own)
        })
        .collect()
}

#[test]
fn every_ansible_parameter_is_native_runs_ansibles_module_or_is_refused_with_why() {
    let specs: Vec<(&ModuleSpec, &str)> = registry()
        .iter()
        .filter_map(|s| ansible_name(s).map(|n| (s, n)))
        .collect();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(newest_ansible_bin().join("ansible-doc"))
        .arg("--json")
        .args(specs.iter().map(|(_, n)| *n))
        .env("HOME", home.path())
        .output()
        .unwrap();
    let docs: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("ansible-doc: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let mut failures = Vec::new();
    let mut checked = 0;
    for (spec, module) in &specs {
        let Some(doc) = docs.get(*module).map(|d| &d["doc"]) else {
            failures.push(format!("{module}: not in ansible-doc"));
            continue;
        };
        let names = ansible_names(doc);
        let plugin = spec.plugin;
        for (lacked, _) in plugin.iter().flat_map(|p| p.lacked()) {
            if !names.contains(*lacked) || native(spec, lacked) {
                failures.push(format!(
                    "{module}: '{lacked}' is declared lacking but Ansible has no such parameter, or nodeprov takes it"
                ));
            }
        }
        let lacking: Vec<&String> = names.iter().filter(|n| !native(spec, n)).collect();
        if lacking.is_empty() {
            continue;
        }
        checked += lacking.len();
        let plain = validate_each(spec, module, &lacking, &[]);
        let handed: Vec<(&str, &str)> = plugin
            .iter()
            .flat_map(|p| p.hands_over)
            .filter(|(_, when)| *when)
            .map(|(p, _)| (*p, "true"))
            .collect();
        let over = (!handed.is_empty()).then(|| validate_each(spec, module, &lacking, &handed));
        for (i, (name, errors)) in plain.iter().enumerate() {
            let declared = plugin
                .iter()
                .flat_map(|p| p.lacked())
                .any(|(l, _)| l == name);
            let refused = errors
                .iter()
                .any(|e| e.contains("not supported by nodeprov"));
            let unknown = |errors: &[String]| {
                errors
                    .iter()
                    .any(|e| e.contains(&format!(") module: {name}")))
            };
            let handed_over_ok = over.as_ref().is_some_and(|o| !unknown(&o[i].1));
            if unknown(errors) && !handed_over_ok {
                failures.push(format!(
                    "{module}: '{name}' is neither native, nor run through Ansible's module, nor declared lacking: {errors:?}"
                ));
            }
            if refused && !declared {
                failures.push(format!(
                    "{module}: '{name}' refused without a declaration: {errors:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Not vacuous: many parameters are nodeprov's through Ansible's module.
    assert!(checked > 150, "{checked}");
}

/// For every action plugin of the installed ansible-core: whether it runs
/// a task as a job (`async`), as its `_supports_async` says or, for a plugin
/// that hands the task to another plugin (`shell` to `command`), that one's.
const ASYNC_SUPPORT: &str = r#"
import importlib, inspect, json, pkgutil, re
import ansible.plugins.action as actions
own, hands = {}, {}
for m in pkgutil.iter_modules(actions.__path__):
    mod = importlib.import_module("ansible.plugins.action." + m.name)
    cls = getattr(mod, "ActionModule", None)
    if cls is None:
        continue
    # Some set it as they run (`command`, `package`).
    own[m.name] = "_supports_async = True" in inspect.getsource(cls)
    to = re.search(r"action_loader\.get\(\s*'ansible\.legacy\.(\w+)'", inspect.getsource(cls))
    if to and "super" not in inspect.getsource(cls.run):
        hands[m.name] = to.group(1)
print(json.dumps({n: own[hands.get(n, n)] for n in own}))
"#;

#[test]
fn modules_run_as_jobs_where_ansibles_do() {
    let out = Command::new(newest_ansible_bin().join("python"))
        .args(["-c", ASYNC_SUPPORT])
        .output()
        .unwrap();
    let plugins: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(plugins["command"], true, "{plugins}");
    assert_eq!(plugins["copy"], false, "{plugins}");
    let mut differ = Vec::new();
    for spec in registry() {
        let Some(name) = spec
            .aliases
            .iter()
            .find_map(|a| a.strip_prefix("ansible.builtin."))
        else {
            continue;
        };
        // `meta` steers the run; Ansible never runs it as a task of a host.
        if name == "meta" {
            continue;
        }
        // A module without an action plugin runs through Ansible's
        // `normal` plugin, which takes `async`.
        let ansible = plugins.get(name).unwrap_or(&plugins["normal"]) == true;
        if nodeprov::modules::runs_as_job(spec) != ansible {
            differ.push(format!("{name}: Ansible runs it as a job: {ansible}"));
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}
