//! `nodeprov report merge`: the JSON documents of the N shards of one run
//! (`--shard I/N`) become the one fleet document a single controller would
//! have written, from which every `--report` format is rendered.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot read shard report {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a JSON report: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is not a shard report (no \"shard\": run with --shard I/N)", path.display())]
    NotAShard { path: PathBuf },
    #[error("no shard reports given")]
    Empty,
    #[error("{} is shard {index}/{count}, but {} says the run has {expected} shards", path.display(), first.display())]
    Count {
        path: PathBuf,
        index: u64,
        count: u64,
        first: PathBuf,
        expected: u64,
    },
    #[error("shard {shard} is given twice: {} and {}", first.display(), second.display())]
    Duplicate {
        shard: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("missing shard report(s): {}", missing.join(", "))]
    Missing { missing: Vec<String> },
    #[error("{} differs from {} in \"{field}\": shards of one run share it", path.display(), first.display())]
    Differs {
        path: PathBuf,
        first: PathBuf,
        field: &'static str,
    },
    #[error("host {host} (play '{play}') is in shard {a} and in shard {b}: the shards saw different inventories")]
    Overlap {
        host: String,
        play: String,
        a: String,
        b: String,
    },
}

/// What must agree between the shards of one run.
const SHARED: [&str; 5] = ["schema_version", "tool", "version", "mode", "playbook"];

/// Reads and parses one shard report.
pub fn read(path: &Path) -> Result<Value, MergeError> {
    let text = std::fs::read_to_string(path).map_err(|source| MergeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| MergeError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

struct Part<'a> {
    path: &'a Path,
    doc: &'a Value,
    index: u64,
    count: u64,
}

impl Part<'_> {
    fn name(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// The fleet document: hosts of every shard, grouped by play in playbook
/// order and by name within a play; the exit code of the whole fleet (any
/// drift gives 2, any failure 4); never-reached hosts of every shard.
pub fn merge(docs: &[(PathBuf, Value)]) -> Result<Value, MergeError> {
    let parts = complete_set(docs)?;
    let first = &parts[0];
    for p in &parts[1..] {
        if let Some(field) = SHARED.into_iter().find(|f| p.doc[f] != first.doc[f]) {
            return Err(MergeError::Differs {
                path: p.path.to_path_buf(),
                first: first.path.to_path_buf(),
                field,
            });
        }
    }
    let mut merged = Map::new();
    for field in SHARED {
        merged.insert(field.into(), first.doc[field].clone());
    }
    let code = parts
        .iter()
        .filter_map(|p| p.doc["exit_code"].as_u64())
        .fold(0, |acc, c| acc | c);
    merged.insert("exit_code".into(), code.into());
    merged.insert("halted".into(), halted(&parts));
    let never: Vec<Value> = parts
        .iter()
        .flat_map(|p| list(&p.doc["never_touched"]).iter().cloned())
        .collect();
    merged.insert("never_touched".into(), Value::Array(never));
    merged.insert("hosts".into(), Value::Array(hosts(&parts)?));
    Ok(Value::Object(merged))
}

/// The parts sorted by index, each of 1..=N exactly once.
fn complete_set(docs: &[(PathBuf, Value)]) -> Result<Vec<Part<'_>>, MergeError> {
    let mut parts = Vec::new();
    for (path, doc) in docs {
        let shard = &doc["shard"];
        match (shard["index"].as_u64(), shard["count"].as_u64()) {
            (Some(index), Some(count)) => parts.push(Part {
                path,
                doc,
                index,
                count,
            }),
            _ => return Err(MergeError::NotAShard { path: path.clone() }),
        }
    }
    let first = parts.first().ok_or(MergeError::Empty)?;
    let (expected, first_path) = (first.count, first.path.to_path_buf());
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for p in &parts {
        if p.count != expected || p.index == 0 || p.index > p.count {
            return Err(MergeError::Count {
                path: p.path.to_path_buf(),
                index: p.index,
                count: p.count,
                first: first_path,
                expected,
            });
        }
        if let Some(earlier) = seen.insert(p.index, p.path) {
            return Err(MergeError::Duplicate {
                shard: p.name(),
                first: earlier.to_path_buf(),
                second: p.path.to_path_buf(),
            });
        }
    }
    let missing: Vec<String> = (1..=expected)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("shard {i}/{expected}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing });
    }
    parts.sort_by_key(|p| p.index);
    Ok(parts)
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Each halted shard's reason, prefixed with the shard: a sharded rollout
/// halts per shard, since each shard has its own batches.
fn halted(parts: &[Part]) -> Value {
    let reasons: Vec<String> = parts
        .iter()
        .filter_map(|p| {
            p.doc["halted"]
                .as_str()
                .map(|r| format!("shard {}: {r}", p.name()))
        })
        .collect();
    if reasons.is_empty() {
        Value::Null
    } else {
        Value::String(reasons.join("; "))
    }
}

fn hosts(parts: &[Part]) -> Result<Vec<Value>, MergeError> {
    let mut play_order: HashMap<&str, usize> = HashMap::new();
    for (i, play) in list(&parts[0].doc["shard"]["plays"]).iter().enumerate() {
        play_order
            .entry(play.as_str().unwrap_or_default())
            .or_insert(i);
    }
    let mut owner: HashMap<(&str, &str), String> = HashMap::new();
    let mut all = Vec::new();
    for p in parts {
        for h in list(&p.doc["hosts"]) {
            let (host, play) = (
                h["host"].as_str().unwrap_or_default(),
                h["play"].as_str().unwrap_or_default(),
            );
            if let Some(other) = owner.insert((host, play), p.name()) {
                if other != p.name() {
                    return Err(MergeError::Overlap {
                        host: host.into(),
                        play: play.into(),
                        a: other,
                        b: p.name(),
                    });
                }
            }
            all.push((play_order.get(play).copied().unwrap_or(usize::MAX), host, h));
        }
    }
    // Stable: a host's two plays of one name keep their order.
    all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    Ok(all.into_iter().map(|(_, _, h)| h.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shard(index: u64, count: u64, code: u64, hosts: &[(&str, &str)]) -> (PathBuf, Value) {
        let hosts: Vec<Value> = hosts
            .iter()
            .map(|(h, play)| json!({"host": h, "play": play, "tasks": []}))
            .collect();
        (
            PathBuf::from(format!("s{index}.json")),
            json!({
                "schema_version": 2, "tool": "nodeprov", "version": "0.1.0",
                "mode": "check", "playbook": "p.yml", "exit_code": code,
                "halted": null, "never_touched": [],
                "shard": {"index": index, "count": count, "plays": ["base", "gpu"]},
                "hosts": hosts,
            }),
        )
    }

    fn err(docs: &[(PathBuf, Value)]) -> String {
        merge(docs).unwrap_err().to_string()
    }

    #[test]
    fn shards_merge_into_play_then_host_order_with_the_fleet_exit_code() {
        let docs = [
            shard(2, 2, 4, &[("b", "base"), ("b", "gpu")]),
            shard(1, 2, 2, &[("c", "base"), ("a", "base"), ("a", "gpu")]),
        ];
        let doc = merge(&docs).unwrap();
        let order: Vec<String> = list(&doc["hosts"])
            .iter()
            .map(|h| {
                format!(
                    "{}:{}",
                    h["play"].as_str().unwrap(),
                    h["host"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(order, ["base:a", "base:b", "base:c", "gpu:a", "gpu:b"]);
        assert_eq!(doc["exit_code"], 6);
        assert_eq!(doc["halted"], Value::Null);
        assert!(doc.get("shard").is_none(), "{doc:#}");
    }

    #[test]
    fn a_missing_or_doubled_shard_is_named() {
        let one = shard(1, 3, 0, &[]);
        let three = shard(3, 3, 0, &[]);
        assert_eq!(
            err(&[one.clone(), three.clone()]),
            "missing shard report(s): shard 2/3"
        );
        let mut again = three.clone();
        again.0 = "copy.json".into();
        assert_eq!(
            err(&[one.clone(), three, again]),
            "shard 3/3 is given twice: s3.json and copy.json"
        );
        assert_eq!(
            err(&[one.clone(), shard(2, 4, 0, &[])]),
            "s2.json is shard 2/4, but s1.json says the run has 3 shards"
        );
        let mut plain = shard(2, 3, 0, &[]);
        plain.1.as_object_mut().unwrap().remove("shard");
        assert!(err(&[one, plain]).starts_with("s2.json is not a shard report"));
        assert_eq!(err(&[]), "no shard reports given");
    }

    #[test]
    fn shards_of_different_runs_or_inventories_are_refused() {
        let mut other = shard(2, 2, 0, &[]);
        other.1["playbook"] = json!("q.yml");
        assert_eq!(
            err(&[shard(1, 2, 0, &[]), other]),
            "s2.json differs from s1.json in \"playbook\": shards of one run share it"
        );
        assert_eq!(
            err(&[shard(1, 2, 0, &[("a", "gpu")]), shard(2, 2, 0, &[("a", "gpu")])]),
            "host a (play 'gpu') is in shard 1/2 and in shard 2/2: the shards saw different inventories"
        );
    }

    #[test]
    fn every_halted_shard_says_why() {
        let mut one = shard(1, 2, 4, &[]);
        one.1["halted"] = json!("play 'gpu': every host of the batch failed");
        one.1["never_touched"] = json!(["x"]);
        let doc = merge(&[one, shard(2, 2, 0, &[])]).unwrap();
        assert_eq!(
            doc["halted"],
            "shard 1/2: play 'gpu': every host of the batch failed"
        );
        assert_eq!(doc["never_touched"], json!(["x"]));
    }
}
