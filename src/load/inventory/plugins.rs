//! Inventory plugin files: YAML whose `plugin:` key names the plugin, as
//! Ansible's `auto` plugin dispatches them. `yaml`, `constructed` and
//! `generator` are read here; any other plugin is handed to ansible-core's
//! `ansible-inventory` when it is on PATH, else refused by name.

use std::path::Path;

use serde_json::Value as Json;

use super::{script, Inventory, Vars, UNGROUPED};
use crate::base::diag::Diagnostic;
use crate::load::yaml::{Node, Value};
use crate::template::Templates;

/// What loading a plugin file may use beyond the file itself.
#[derive(Clone, Debug, Default)]
pub struct PluginRunner {
    /// `ansible-inventory`, for plugins nodeprov has no reader of.
    pub ansible_inventory: Option<std::path::PathBuf>,
}

/// The plugin a YAML document configures, if it is a plugin file.
pub(super) fn plugin_name(doc: &Node) -> Option<&Node> {
    doc.get("plugin")
}

pub(super) fn load(
    inv: &mut Inventory,
    doc: &Node,
    path: &Path,
    runner: &PluginRunner,
) -> Result<(), Diagnostic> {
    let key = plugin_name(doc).expect("a plugin file");
    let Some(name) = key.as_str() else {
        return Err(key.error(format!("`plugin:` names a plugin, found {}", key.kind())));
    };
    let short = name.strip_prefix("ansible.builtin.").unwrap_or(name);
    match short {
        "yaml" => super::yaml::parse(inv, &without_plugin_key(doc)),
        "constructed" => constructed(inv, doc),
        "generator" => generator(inv, doc),
        _ => match &runner.ansible_inventory {
            Some(program) => script::run_ansible_inventory(inv, program, path),
            None => Err(key
                .error(format!(
                    "inventory plugin '{name}' in {} needs ansible-core's `ansible-inventory` on PATH; \
                     nodeprov itself reads the yaml, constructed and generator plugins",
                    path.display()
                ))
                .with_hint("install ansible-core, or export the inventory with `ansible-inventory --list` elsewhere and use that")),
        },
    }
}

fn without_plugin_key(doc: &Node) -> Node {
    let entries = match &doc.value {
        Value::Map(entries) => entries
            .iter()
            .filter(|(k, _)| k.as_str() != Some("plugin"))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    Node::new(Value::Map(entries), doc.span.clone())
}

fn string_option(doc: &Node, key: &str, default: &str) -> Result<String, Diagnostic> {
    match doc.get(key) {
        None => Ok(default.to_string()),
        Some(n) => n
            .scalar_text()
            .ok_or_else(|| n.error(format!("`{key}` must be text, found {}", n.kind()))),
    }
}

fn bool_option(doc: &Node, key: &str, default: bool) -> Result<bool, Diagnostic> {
    match doc.get(key) {
        None => Ok(default),
        Some(n) => match n.to_json() {
            Json::Bool(b) => Ok(b),
            _ => Err(n.error(format!("`{key}` must be true or false, found {}", n.kind()))),
        },
    }
}

fn entries<'a>(doc: &'a Node, key: &str) -> Result<&'a [(Node, Node)], Diagnostic> {
    match doc.get(key).map(|n| (n, &n.value)) {
        None | Some((_, Value::Null)) => Ok(&[]),
        Some((_, Value::Map(entries))) => Ok(entries),
        Some((n, _)) => Err(n.error(format!("`{key}` must be a mapping, found {}", n.kind()))),
    }
}

/// Ansible's `constructed`: `compose` sets variables from expressions,
/// `groups` adds hosts to groups whose condition holds, `keyed_groups`
/// makes groups from a value. It sees the hosts of the sources read
/// before it, with their inventory variables. With `strict: false` (the
/// default) an expression that fails skips that entry for the host.
fn constructed(inv: &mut Inventory, doc: &Node) -> Result<(), Diagnostic> {
    let strict = bool_option(doc, "strict", false)?;
    let templates = Templates::new();
    let compose = entries(doc, "compose")?;
    let groups = entries(doc, "groups")?;
    let keyed = match doc.get("keyed_groups").map(|n| (n, &n.value)) {
        None | Some((_, Value::Null)) => &[][..],
        Some((_, Value::Seq(items))) => &items[..],
        Some((n, _)) => {
            return Err(n.error(format!("`keyed_groups` must be a list, found {}", n.kind())))
        }
    };
    // Only the precedence of group variables is needed now: completing the
    // tree would tie groups to `all` that a later source may nest.
    inv.set_depths();
    for host in inv.hosts() {
        let mut vars = Json::Object(inv.host_vars(&host));
        for (name, expr) in compose {
            let var = key_text(name)?;
            let value = match templates.render_value(&expression(expr)?, &vars) {
                Ok(v) => Some(v),
                Err(e) => skip_unless_strict(strict, &host, expr, e)?,
            };
            if let Some(value) = value {
                let h = inv.host_index[&host];
                inv.hosts[h].vars.insert(var.clone(), value.clone());
                vars[&var] = value;
            }
        }
        for (group, cond) in groups {
            let cond_text = Json::String(expression_text(cond)?);
            let holds = match templates.eval_condition(&cond_text, &vars) {
                Ok(b) => Some(b),
                Err(e) => skip_unless_strict(strict, &host, cond, e)?,
            };
            if holds == Some(true) {
                let g = inv.group(&key_text(group)?);
                inv.add_host_to(g, &host, Vars::new());
            }
        }
        for entry in keyed {
            let key_node = entry
                .get("key")
                .ok_or_else(|| entry.error("a keyed_groups entry needs `key:`"))?;
            let value = match templates.render_value(&expression(key_node)?, &vars) {
                Ok(v) => v,
                Err(e) => match skip_unless_strict(strict, &host, key_node, e)? {
                    Some(v) => v,
                    None => continue,
                },
            };
            for name in keyed_names(entry, &value)? {
                let g = inv.group(&name);
                inv.add_host_to(g, &host, Vars::new());
                if let Some(parent) = entry.get("parent_group") {
                    let p = inv.group(&key_text(parent)?);
                    inv.add_child(p, g).map_err(|m| parent.error(m))?;
                }
            }
        }
    }
    Ok(())
}

/// A failed expression: an error with `strict: true`, else nothing.
fn skip_unless_strict<T>(
    strict: bool,
    host: &str,
    at: &Node,
    e: crate::template::TemplateError,
) -> Result<Option<T>, Diagnostic> {
    match strict {
        true => Err(at.error(format!("host '{host}': {e}"))),
        false => Ok(None),
    }
}

/// The group names one `keyed_groups` entry gives for a value, as
/// Ansible's `_add_host_to_keyed_groups` builds them.
fn keyed_names(entry: &Node, value: &Json) -> Result<Vec<String>, Diagnostic> {
    let prefix = string_option(entry, "prefix", "")?;
    let mut sep = string_option(entry, "separator", "_")?;
    let default = entry.get("default_value").and_then(Node::scalar_text);
    let trailing = bool_option(entry, "trailing_separator", true)?;
    let text = |v: &Json| match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    let or_default = |s: String| match (&default, s.is_empty()) {
        (Some(d), true) => d.clone(),
        _ => s,
    };
    let bare: Vec<String> = match value {
        Json::Null => Vec::new(),
        Json::Array(items) => items.iter().map(|v| or_default(text(v))).collect(),
        Json::Object(map) => map
            .iter()
            .map(|(k, v)| match (text(v), &default) {
                (v, _) if !v.is_empty() => format!("{k}{sep}{v}"),
                (_, Some(d)) => format!("{k}{sep}{d}"),
                _ if !trailing => k.clone(),
                _ => format!("{k}{sep}"),
            })
            .collect(),
        other => vec![or_default(text(other))],
    };
    if prefix.is_empty() && !bool_option(entry, "leading_separator", true)? {
        sep.clear();
    }
    Ok(bare
        .into_iter()
        .map(|b| format!("{prefix}{sep}{b}"))
        .collect())
}

/// An expression entry (`compose`, `key`) as the template that renders it
/// to its native value.
fn expression(node: &Node) -> Result<Json, Diagnostic> {
    Ok(Json::String(format!(
        "{{{{ {} }}}}",
        expression_text(node)?
    )))
}

fn expression_text(node: &Node) -> Result<String, Diagnostic> {
    node.scalar_text()
        .ok_or_else(|| node.error(format!("expected an expression, found {}", node.kind())))
}

fn key_text(node: &Node) -> Result<String, Diagnostic> {
    match node.scalar_text() {
        Some(t) if !t.is_empty() => Ok(t),
        _ => Err(node.error(format!("expected a name, found {}", node.kind()))),
    }
}

/// Ansible's `generator`: one host per combination of the `layers`
/// values (in the order the layers are written), named by the `hosts.name`
/// template, with `parents` groups (templated names and vars) above it.
fn generator(inv: &mut Inventory, doc: &Node) -> Result<(), Diagnostic> {
    let hosts = doc
        .get("hosts")
        .ok_or_else(|| doc.error("the generator plugin needs `hosts:` with `name:`"))?;
    let name = hosts
        .get("name")
        .ok_or_else(|| hosts.error("`hosts:` needs `name:`, a template of the layers"))?;
    let mut combos: Vec<Vars> = vec![Vars::new()];
    for (layer, values) in entries(doc, "layers")? {
        let layer = key_text(layer)?;
        let Value::Seq(values) = &values.value else {
            return Err(values.error(format!(
                "layer '{layer}' must be a list, found {}",
                values.kind()
            )));
        };
        if combos.len().saturating_mul(values.len()) > super::MAX_INVENTORY_HOSTS {
            return Err(doc.error(format!(
                "the layers make more than {} hosts",
                super::MAX_INVENTORY_HOSTS
            )));
        }
        combos = combos
            .iter()
            .flat_map(|c| {
                values.iter().map(|v| {
                    let mut c = c.clone();
                    c.insert(layer.clone(), v.to_json());
                    c
                })
            })
            .collect();
    }
    let templates = Templates::new();
    for combo in combos {
        let vars = Json::Object(combo);
        let host = render_text(&templates, name, &vars)?;
        inv.add_host_to(UNGROUPED, &host, Vars::new());
        add_parents(inv, &templates, hosts, &vars, Child::Host(&host))?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Child<'a> {
    Host(&'a str),
    Group(usize),
}

fn add_parents(
    inv: &mut Inventory,
    templates: &Templates,
    node: &Node,
    vars: &Json,
    child: Child,
) -> Result<(), Diagnostic> {
    let parents = match node.get("parents").map(|n| (n, &n.value)) {
        None | Some((_, Value::Null)) => return Ok(()),
        Some((_, Value::Seq(items))) => items,
        Some((n, _)) => {
            return Err(n.error(format!("`parents` must be a list, found {}", n.kind())))
        }
    };
    for parent in parents {
        let name_node = parent
            .get("name")
            .ok_or_else(|| parent.error("a parent needs `name:`"))?;
        let g = inv.group(&render_text(templates, name_node, vars)?);
        for (k, v) in entries(parent, "vars")? {
            let value = templates
                .render_value(&v.to_json(), vars)
                .map_err(|e| v.error(e.to_string()))?;
            inv.groups[g].vars.insert(key_text(k)?, value);
        }
        match child {
            Child::Host(h) => inv.add_host_to(g, h, Vars::new()),
            Child::Group(c) => inv.add_child(g, c).map_err(|m| name_node.error(m))?,
        }
        add_parents(inv, templates, parent, vars, Child::Group(g))?;
    }
    Ok(())
}

fn render_text(templates: &Templates, node: &Node, vars: &Json) -> Result<String, Diagnostic> {
    let text = key_text(node)?;
    templates
        .render_str(&text, vars)
        .map_err(|e| node.error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(entry: &str, value: Json) -> Vec<String> {
        let node = crate::load::yaml::load_str(entry, "c.yml").unwrap();
        keyed_names(&node, &value).unwrap()
    }

    #[test]
    fn keyed_group_names_are_built_as_ansible_builds_them() {
        let tags = serde_json::json!({"role": "db", "env": ""});
        assert_eq!(names("key: k\n", "x".into()), ["_x"]);
        assert_eq!(
            names("key: k\nleading_separator: false\n", "x".into()),
            ["x"]
        );
        assert_eq!(
            names("key: k\nprefix: tag\n", tags.clone()),
            ["tag_role_db", "tag_env_"]
        );
        assert_eq!(
            names(
                "key: k\nprefix: tag\ntrailing_separator: false\n",
                tags.clone()
            ),
            ["tag_role_db", "tag_env"]
        );
        assert_eq!(
            names("key: k\nprefix: tag\ndefault_value: none\n", tags),
            ["tag_role_db", "tag_env_none"]
        );
        assert_eq!(
            names(
                "key: k\nprefix: os\nseparator: '-'\n",
                serde_json::json!(["a", 7])
            ),
            ["os-a", "os-7"]
        );
    }

    #[test]
    fn generator_parents_nest_and_carry_templated_vars() {
        let text = "plugin: generator\nhosts:\n  name: \"{{ app }}-{{ env }}\"\n  parents:\n    - name: \"{{ app }}_{{ env }}\"\n      parents:\n        - name: \"{{ app }}\"\n          vars: {application: \"{{ app }}\"}\nlayers:\n  app: [web]\n  env: [dev, prod]\n";
        let doc = crate::load::yaml::load_str(text, "gen.yml").unwrap();
        let mut inv = Inventory::empty();
        load(
            &mut inv,
            &doc,
            Path::new("gen.yml"),
            &PluginRunner::default(),
        )
        .unwrap();
        inv.finish();
        assert_eq!(inv.hosts(), ["web-dev", "web-prod"]);
        assert_eq!(inv.groups()["web"], ["web-dev", "web-prod"]);
        assert_eq!(inv.host_vars("web-prod")["application"], "web");
    }
}
