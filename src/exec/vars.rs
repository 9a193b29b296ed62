//! Variable layers for one host, merged in Ansible's precedence order
//! (lowest first): inventory (all < groups < host) < gathered facts < play
//! `vars` < `vars_files` < task `vars` < registered results < loop item <
//! extra vars (`-e`).

use serde_json::{Map, Value};

use crate::template::Templates;

#[derive(Clone, Default)]
pub struct VarLayers {
    pub inventory: Map<String, Value>,
    pub facts: Map<String, Value>,
    pub play: Map<String, Value>,
    pub registered: Map<String, Value>,
    pub extra: Map<String, Value>,
}

impl VarLayers {
    /// The context a task renders in.
    pub fn context(
        &self,
        templates: &Templates,
        task_vars: &Map<String, Value>,
        item: Option<(&str, &Value)>,
    ) -> Value {
        let mut all = self.inventory.clone();
        for layer in [&self.facts, &self.play, task_vars, &self.registered] {
            all.extend(layer.clone());
        }
        if let Some((name, value)) = item {
            all.insert(name.to_string(), value.clone());
        }
        all.extend(self.extra.clone());
        resolve(templates, all)
    }
}

/// Variables may refer to other variables (`bin: "{{ home }}/bin"`); Ansible
/// resolves them lazily. Re-rendering until nothing changes gives the same
/// answer for any chain shorter than the pass limit.
fn resolve(templates: &Templates, mut vars: Map<String, Value>) -> Value {
    for _ in 0..4 {
        let ctx = Value::Object(vars.clone());
        let mut changed = false;
        for (_, v) in vars.iter_mut() {
            if !has_template(v) {
                continue;
            }
            if let Ok(r) = templates.render_value(v, &ctx) {
                changed |= r != *v;
                *v = r;
            }
        }
        if !changed {
            break;
        }
    }
    Value::Object(vars)
}

pub fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => crate::template::is_templated(s),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(m) => m.values().any(has_template),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn precedence_and_chained_references() {
        let layers = VarLayers {
            inventory: map(json!({"a": "inv", "b": "inv", "home": "/usr/local/cuda"})),
            facts: Map::new(),
            play: map(json!({"b": "play", "c": "play", "bin": "{{ home }}/bin"})),
            registered: Map::new(),
            extra: map(json!({"c": "extra"})),
        };
        let t = Templates::new();
        let ctx = layers.context(&t, &map(json!({"d": "task"})), Some(("item", &json!(1))));
        assert_eq!(ctx["a"], "inv");
        assert_eq!(ctx["b"], "play");
        assert_eq!(ctx["c"], "extra");
        assert_eq!(ctx["d"], "task");
        assert_eq!(ctx["item"], 1);
        assert_eq!(ctx["bin"], "/usr/local/cuda/bin");
    }
}
