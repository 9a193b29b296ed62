//! The custom statistics `set_stats` gathers, as Ansible's strategy and
//! `AggregateStats` gather them: per host, or for the whole run; with
//! `aggregate` a name given again adds to what it holds (numbers add up,
//! strings and lists join, mappings merge recursively; a value of another
//! type is dropped), else it replaces it.

use serde_json::{Map, Value};

use crate::base::python;
use crate::exec::result::HostReport;
use crate::exec::RunOutcome;

/// Per host, and for the whole run.
#[derive(Debug, Default, PartialEq)]
pub struct CustomStats {
    pub hosts: Map<String, Value>,
    pub run: Map<String, Value>,
}

/// The statistics of a run, gathered in the order Ansible's linear
/// strategy meets them: play by play, each task for every host of the play
/// before the next task.
pub fn of(outcome: &RunOutcome) -> CustomStats {
    let mut stats = CustomStats::default();
    let mut plays: Vec<(&str, Vec<&HostReport>)> = Vec::new();
    for report in &outcome.reports {
        match plays.iter_mut().find(|(play, _)| *play == report.play) {
            Some((_, hosts)) => hosts.push(report),
            None => plays.push((&report.play, vec![report])),
        }
    }
    for (_, hosts) in plays {
        let longest = hosts.iter().map(|r| r.tasks.len()).max().unwrap_or(0);
        let met = (0..longest).flat_map(|i| {
            hosts
                .iter()
                .filter_map(move |r| Some((&r.host, r.tasks.get(i)?.for_run.stats.as_ref()?)))
        });
        for (host, ansible_stats) in met {
            let Some(data) = ansible_stats["data"].as_object().filter(|d| !d.is_empty()) else {
                continue;
            };
            let aggregate = ansible_stats["aggregate"] == Value::Bool(true);
            let into = match ansible_stats["per_host"] == Value::Bool(true) {
                true => host_map(&mut stats.hosts, host),
                false => &mut stats.run,
            };
            for (name, value) in data {
                match aggregate {
                    true => update(into, name, value),
                    false => {
                        into.insert(name.clone(), value.clone());
                    }
                }
            }
        }
    }
    stats
}

fn host_map<'m>(hosts: &'m mut Map<String, Value>, host: &str) -> &'m mut Map<String, Value> {
    let entry = hosts
        .entry(host.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made a mapping above")
}

/// `AggregateStats.update_custom_stats` for one name: a value of another
/// type than the one held (`isinstance`, a bool being an int) is dropped.
pub fn update(into: &mut Map<String, Value>, name: &str, value: &Value) {
    let Some(old) = into.get_mut(name) else {
        into.insert(name.to_string(), value.clone());
        return;
    };
    let (held, given) = (python::type_name(old), python::type_name(value));
    if !(held == given || (held == "int" && given == "bool")) {
        return;
    }
    match (old, value) {
        (Value::Object(old), Value::Object(new)) => merge_hash(old, new),
        (Value::Array(old), Value::Array(new)) => old.extend(new.iter().cloned()),
        (Value::String(old), Value::String(new)) => old.push_str(new),
        (old, new) => {
            if let Some(sum) = add(old, new) {
                *old = sum;
            }
        }
    }
}

/// Python's `+` of two ints (a bool counting as one) or two floats.
fn add(a: &Value, b: &Value) -> Option<Value> {
    let int = |v: &Value| match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => Some(Value::from(x.checked_add(y)?)),
        _ => Some(Value::from(a.as_f64()? + b.as_f64()?)),
    }
}

/// Ansible's `merge_hash` (recursive, lists replaced).
fn merge_hash(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (key, new) in from {
        match (into.get_mut(key), new) {
            (Some(Value::Object(old)), Value::Object(new)) => merge_hash(old, new),
            _ => {
                into.insert(key.clone(), new.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aggregating_adds_joins_and_merges_as_ansible_does() {
        let mut run = Map::new();
        for value in [json!(1), json!(2), json!(true)] {
            update(&mut run, "n", &value);
        }
        update(&mut run, "l", &json!([1]));
        update(&mut run, "l", &json!([2]));
        update(&mut run, "s", &json!("a"));
        update(&mut run, "s", &json!("b"));
        update(&mut run, "d", &json!({"a": {"x": 1}, "k": [1]}));
        update(&mut run, "d", &json!({"a": {"y": 2}, "k": [2]}));
        update(&mut run, "f", &json!(1.0));
        update(&mut run, "f", &json!(0.5));
        update(&mut run, "i", &json!(1));
        update(&mut run, "i", &json!(0.5));
        update(&mut run, "mixed", &json!("a"));
        update(&mut run, "mixed", &json!(1));
        assert_eq!(
            Value::Object(run),
            json!({"n": 4, "l": [1, 2], "s": "ab", "d": {"a": {"x": 1, "y": 2}, "k": [2]}, "f": 1.5, "i": 1, "mixed": "a"})
        );
    }
}
