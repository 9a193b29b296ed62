//! Inventory scripts, and the JSON they print: `SCRIPT --list` gives groups
//! (`hosts`, `vars`, `children`) and usually `_meta.hostvars`; without
//! `_meta`, `SCRIPT --host H` gives each host's variables. The same reader
//! takes `ansible-inventory --list` output for plugins nodeprov runs
//! through ansible-core.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{check_var, Inventory, Vars};
use crate::base::diag::{Diagnostic, Span};

/// How much of a failing command's stderr an error quotes.
const STDERR_TAIL: usize = 2000;

/// Runs the executable inventory `path` and adds what it lists.
pub(super) fn run(inv: &mut Inventory, path: &Path) -> Result<(), Diagnostic> {
    let name = path.display().to_string();
    let list = output(&name, Command::new(path).arg("--list"), "--list")?;
    let host_script = |host: &str| -> Result<Value, Diagnostic> {
        output(
            &name,
            Command::new(path).args(["--host", host]),
            &format!("--host {host}"),
        )
    };
    read_json(inv, &list, &name, Some(&host_script))
}

/// Runs `ansible-inventory --list -i FILE` for a plugin nodeprov does not
/// implement, and adds what ansible-core resolved.
pub(super) fn run_ansible_inventory(
    inv: &mut Inventory,
    program: &Path,
    file: &Path,
) -> Result<(), Diagnostic> {
    let name = file.display().to_string();
    let mut cmd = Command::new(program);
    cmd.args(["--list", "-i"]).arg(file);
    let list = output(&name, &mut cmd, "through ansible-inventory --list")?;
    read_json(inv, &list, &name, None)
}

fn fail(name: &str, message: String) -> Diagnostic {
    Diagnostic::new(&Span::synthetic(name), message)
}

/// The JSON a command prints; a failure or anything else is one error
/// naming the command.
fn output(name: &str, cmd: &mut Command, what: &str) -> Result<Value, Diagnostic> {
    // nodeprov's passwords are no business of an inventory script.
    crate::base::child_env::without_own_settings(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(name, format!("cannot run inventory script {name}: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail = &stderr[stderr.len().saturating_sub(STDERR_TAIL)..];
        let tail = tail.trim();
        let said = if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        };
        return Err(fail(
            name,
            format!(
                "inventory script {name} {what} failed ({}){said}",
                out.status
            ),
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        fail(
            name,
            format!("inventory script {name} {what} did not print a JSON inventory: {e}"),
        )
    })
}

type HostQuery<'a> = &'a dyn Fn(&str) -> Result<Value, Diagnostic>;

/// Adds the groups and hosts of a `--list` document. Host variables come
/// from `_meta.hostvars`; when `_meta` is missing, from `host_query`.
fn read_json(
    inv: &mut Inventory,
    doc: &Value,
    name: &str,
    host_query: Option<HostQuery>,
) -> Result<(), Diagnostic> {
    let bad = |what: String| fail(name, format!("inventory script {name}: {what}"));
    let Value::Object(groups) = doc else {
        return Err(bad("--list must print a JSON object of groups".into()));
    };
    let mut listed: Vec<String> = Vec::new();
    for (group, body) in groups.iter().filter(|(k, _)| *k != "_meta") {
        let g = inv.group(group);
        let (hosts, vars, children) = match body {
            Value::Array(_) => (Some(body), None, None),
            Value::Object(entry) => (entry.get("hosts"), entry.get("vars"), entry.get("children")),
            // An empty group, as Ansible's script plugin takes it.
            Value::Null => (None, None, None),
            _ => {
                return Err(bad(format!(
                    "group '{group}' must be an object or a list of hosts"
                )))
            }
        };
        for host in names(hosts, group, "hosts").map_err(&bad)? {
            inv.room_for(std::slice::from_ref(&host)).map_err(&bad)?;
            inv.add_host_to(g, &host, Vars::new());
            listed.push(host);
        }
        for child in names(children, group, "children").map_err(&bad)? {
            let c = inv.group(&child);
            inv.add_child(g, c).map_err(&bad)?;
        }
        if let Some(vars) = vars {
            let vars = checked(vars, &format!("vars of group '{group}'")).map_err(&bad)?;
            inv.groups[g].vars.extend(vars);
        }
    }
    let meta = groups.get("_meta").and_then(|m| m.get("hostvars"));
    for host in listed {
        let vars = match (meta, host_query) {
            (Some(all), _) => all.get(&host).cloned().unwrap_or(Value::Null),
            (None, Some(query)) => query(&host)?,
            (None, None) => Value::Null,
        };
        let vars = checked(&vars, &format!("variables of host '{host}'")).map_err(&bad)?;
        let h = inv.host_index[&host];
        inv.hosts[h].vars.extend(vars);
    }
    Ok(())
}

fn names(list: Option<&Value>, group: &str, what: &str) -> Result<Vec<String>, String> {
    match list {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                other => Err(format!(
                    "`{what}` of group '{group}' holds {other}, not a name"
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "`{what}` of group '{group}' must be a list, found {other}"
        )),
    }
}

fn checked(vars: &Value, what: &str) -> Result<Vars, String> {
    match vars {
        Value::Null => Ok(Vars::new()),
        Value::Object(map) => {
            for (k, v) in map {
                check_var(k, v)?;
            }
            Ok(map.clone())
        }
        other => Err(format!("{what} must be an object, found {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(doc: Value, query: Option<HostQuery>) -> Result<Inventory, Diagnostic> {
        let mut inv = Inventory::empty();
        read_json(&mut inv, &doc, "inv.py", query)?;
        inv.finish();
        Ok(inv)
    }

    #[test]
    fn groups_children_vars_and_meta_hostvars() {
        let inv = read(
            serde_json::json!({
                "gpu": {"hosts": ["g1", "g2"], "vars": {"tier": "gpu"}},
                "dc": {"children": ["gpu"], "vars": {"site": "x"}},
                "web": ["w1"],
                "_meta": {"hostvars": {"g1": {"ansible_host": "10.0.0.1"}}}
            }),
            None,
        )
        .unwrap();
        assert_eq!(inv.hosts(), ["g1", "g2", "w1"]);
        let g1 = inv.host_vars("g1");
        assert_eq!(g1["ansible_host"], "10.0.0.1");
        assert_eq!(g1["tier"], "gpu");
        assert_eq!(g1["site"], "x");
        assert_eq!(inv.groups()["dc"], ["g1", "g2"]);
    }

    #[test]
    fn without_meta_each_host_is_asked_for() {
        let query = |h: &str| Ok(serde_json::json!({"who": h}));
        let inv = read(
            serde_json::json!({"all": {"hosts": ["a", "b"]}}),
            Some(&query),
        )
        .unwrap();
        assert_eq!(inv.host_vars("b")["who"], "b");
    }

    #[test]
    fn malformed_documents_name_the_script() {
        let msg = |doc: Value| read(doc, None).unwrap_err().message;
        assert_eq!(
            msg(serde_json::json!([1])),
            "inventory script inv.py: --list must print a JSON object of groups"
        );
        assert_eq!(
            msg(serde_json::json!({"g": {"hosts": "a"}})),
            "inventory script inv.py: `hosts` of group 'g' must be a list, found \"a\""
        );
        assert!(
            msg(serde_json::json!({"g": {"hosts": ["a"], "vars": {"ansible_port": "x"}}}))
                .contains("ansible_port must be a port number")
        );
    }
}
