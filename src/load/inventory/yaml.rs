//! Ansible's YAML inventory format: top-level group names, each with
//! optional `hosts`, `vars` and `children` mappings.
//!
//! Stricter than Ansible in one way: an unknown key in a group is an error
//! with a suggestion (Ansible warns and skips it, hiding typos like `host:`).

use super::{check_var, port_vars, range, Inventory};
use crate::base::diag::{clip, suggest, Diagnostic};
use crate::load::yaml::{Node, Value};

const GROUP_KEYS: [&str; 3] = ["hosts", "vars", "children"];

pub(super) fn parse(inv: &mut Inventory, doc: &Node) -> Result<(), Diagnostic> {
    let entries = match &doc.value {
        Value::Null => return Ok(()),
        Value::Map(entries) => entries,
        _ => {
            let message = format!(
                "a YAML inventory maps group names to groups, found {}",
                doc.kind()
            );
            return Err(doc.error(message).with_hint("start with `all:`"));
        }
    };
    if let Some((key, _)) = entries.iter().find(|(k, _)| k.as_str() == Some("plugin")) {
        return Err(key.error("inventory plugin configurations are not supported"));
    }
    for (name, body) in entries {
        parse_group(inv, name, body)?;
    }
    Ok(())
}

fn parse_group(inv: &mut Inventory, name: &Node, body: &Node) -> Result<usize, Diagnostic> {
    let group_name = key_text(name)?;
    let g = inv.group(&group_name);
    let entries = match &body.value {
        Value::Null => return Ok(g),
        Value::Map(entries) => entries,
        _ => {
            let message = format!(
                "group '{group_name}' must be a mapping, found {}",
                body.kind()
            );
            return Err(body
                .error(message)
                .with_hint("a group takes `hosts:`, `vars:` and `children:`"));
        }
    };
    for (key, value) in entries {
        match key.as_str() {
            Some("hosts") => parse_hosts(inv, g, &group_name, value)?,
            Some("vars") => {
                for (var, val) in section(value, "vars", &group_name)? {
                    let (name, value) = checked_var(&var, &val)?;
                    inv.groups[g].vars.insert(name, value);
                }
            }
            Some("children") => {
                for (child_name, child_body) in section(value, "children", &group_name)? {
                    let child = parse_group(inv, &child_name, &child_body)?;
                    inv.add_child(g, child)
                        .map_err(|msg| child_name.error(msg))?;
                }
            }
            _ => return Err(unknown_key(key, &group_name)),
        }
    }
    Ok(g)
}

fn parse_hosts(inv: &mut Inventory, g: usize, group: &str, hosts: &Node) -> Result<(), Diagnostic> {
    for (spec, vars) in section(hosts, "hosts", group)? {
        let text = key_text(&spec)?;
        let (names, port) = range::parse_host_spec(&text)
            .and_then(|(names, port)| inv.room_for(&names).map(|()| (names, port)))
            .map_err(|msg| spec.error(msg))?;
        let mut host_vars = port_vars(port);
        match &vars.value {
            Value::Null => {}
            Value::Map(entries) => {
                for (var, val) in entries {
                    let (name, value) = checked_var(var, val)?;
                    host_vars.insert(name, value);
                }
            }
            _ => {
                let message = format!(
                    "variables of host '{text}' must be a mapping, found {}",
                    vars.kind()
                );
                return Err(vars.error(message));
            }
        }
        for name in names {
            inv.add_host_to(g, &name, host_vars.clone());
        }
    }
    Ok(())
}

/// The entries of a `hosts`/`vars`/`children` section; as in Ansible, a
/// single string stands for a one-entry mapping.
fn section(node: &Node, what: &str, group: &str) -> Result<Vec<(Node, Node)>, Diagnostic> {
    match &node.value {
        Value::Null => Ok(Vec::new()),
        Value::Str(_) => Ok(vec![(
            node.clone(),
            Node::new(Value::Null, node.span.clone()),
        )]),
        Value::Map(entries) => Ok(entries.clone()),
        _ => {
            let message = format!(
                "`{what}` of group '{group}' must be a mapping, found {}",
                node.kind()
            );
            let hint = match what {
                "vars" => "write variables as `name: value` pairs",
                _ => "write one name per line followed by a colon, e.g. `gpu-01:`",
            };
            Err(node.error(message).with_hint(hint))
        }
    }
}

/// A variable's name and value, the value checked where a bad one would
/// only fail later, at connection time.
pub(super) fn checked_var(
    key: &Node,
    value: &Node,
) -> Result<(String, serde_json::Value), Diagnostic> {
    let name = key_text(key)?;
    let json = value.to_json();
    check_var(&name, &json).map_err(|msg| value.error(msg))?;
    Ok((name, json))
}

fn key_text(key: &Node) -> Result<String, Diagnostic> {
    match key.scalar_text() {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(key.error(format!("expected a name, found {}", key.kind()))),
    }
}

fn unknown_key(key: &Node, group: &str) -> Diagnostic {
    let text = key.scalar_text().unwrap_or_default();
    let hint = match suggest(&text, GROUP_KEYS) {
        Some(s) => format!("did you mean '{s}'?"),
        None => "a group takes `hosts:`, `vars:` and `children:`".to_string(),
    };
    key.error(format!("unknown key '{}' in group '{group}'", clip(&text)))
        .with_hint(hint)
}
