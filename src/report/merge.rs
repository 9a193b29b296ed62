//! `nodeprov report merge`: the JSON documents of the N shards of one run
//! (`--shard I/N`) become the one fleet document a single controller would
//! have written, from which every `--report` format is rendered.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::base::input::{read_text, ReadError};
use crate::report::custom_stats;

/// More shards than any controller fleet splits into; the count comes from
/// a file, and every missing index is listed, so it is bounded.
const MAX_SHARDS: u64 = 100_000;

/// Missing shards named in the error; the rest are counted.
const LISTED_MISSING: usize = 10;

fn listed(missing: &[String], more: u64) -> String {
    let names = missing.join(", ");
    match more {
        0 => names,
        n => format!("{names} and {n} more"),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot read shard report: {0}")]
    Read(#[from] ReadError),
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
    #[error("{} says the run has {count} shards; nodeprov merges at most {MAX_SHARDS}", path.display())]
    TooMany { path: PathBuf, count: u64 },
    #[error("missing shard report(s): {}", listed(missing, *more))]
    Missing { missing: Vec<String>, more: u64 },
    #[error("{} is not a report nodeprov wrote: {what}", path.display())]
    Malformed { path: PathBuf, what: String },
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

/// Reads and parses one shard report, through the bounded reader every
/// input file goes through (a FIFO or `/dev/zero` is refused, not read).
pub fn read(path: &Path) -> Result<Value, MergeError> {
    let text = read_text(path)?;
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
    let hosts = hosts(&parts)?;
    let halted = halted(&parts);
    let check = first.doc["mode"] == "check";
    merged.insert("exit_code".into(), exit_code(&hosts, &halted, check).into());
    merged.insert("halted".into(), halted);
    let never: Vec<Value> = parts
        .iter()
        .flat_map(|p| list(&p.doc["never_touched"]).iter().cloned())
        .collect();
    merged.insert("never_touched".into(), Value::Array(never));
    merged.insert("hosts".into(), Value::Array(hosts));
    // Each host is in one shard; the run's statistics add up across them,
    // as one controller would have aggregated them.
    let mut per_host = Map::new();
    let mut run = Map::new();
    for p in &parts {
        if let Some(hosts) = p.doc["custom_stats"].as_object() {
            per_host.extend(hosts.clone());
        }
        for (name, value) in p.doc["global_custom_stats"]
            .as_object()
            .into_iter()
            .flatten()
        {
            custom_stats::update(&mut run, name, value);
        }
    }
    if !per_host.is_empty() {
        merged.insert("custom_stats".into(), Value::Object(per_host));
    }
    if !run.is_empty() {
        merged.insert("global_custom_stats".into(), Value::Object(run));
    }
    Ok(Value::Object(merged))
}

/// The fleet's exit code from the merged statuses, as one controller would
/// have computed it ([`crate::report::exit_code`]); the shards' own codes
/// are not combined, since 1 (a usage error) ORed with 2 is no code at all.
fn exit_code(hosts: &[Value], halted: &Value, check: bool) -> u8 {
    let tasks = || hosts.iter().flat_map(|h| list(&h["tasks"]));
    let drift = check && tasks().any(|t| matches!(t["status"].as_str(), Some("drift" | "unknown")));
    let failed = !halted.is_null() || hosts.iter().any(|h| h["failed"] == Value::Bool(true));
    crate::report::code_of(drift, failed)
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
    if expected > MAX_SHARDS {
        return Err(MergeError::TooMany {
            path: first_path,
            count: expected,
        });
    }
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
    let absent = expected - seen.len() as u64;
    if absent > 0 {
        let missing: Vec<String> = (1..=expected)
            .filter(|i| !seen.contains_key(i))
            .take(LISTED_MISSING)
            .map(|i| format!("shard {i}/{expected}"))
            .collect();
        let more = absent - missing.len() as u64;
        return Err(MergeError::Missing { missing, more });
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
    let plays = list(&parts[0].doc["shard"]["plays"]);
    let mut play_order: HashMap<&str, usize> = HashMap::new();
    // Plays may share a name: a host then has one entry per such play.
    let mut same_name: HashMap<&str, usize> = HashMap::new();
    for (i, play) in plays.iter().enumerate() {
        let name = play.as_str().unwrap_or_default();
        play_order.entry(name).or_insert(i);
        *same_name.entry(name).or_default() += 1;
    }
    let mut owner: HashMap<(&str, &str), (String, usize)> = HashMap::new();
    let mut all = Vec::new();
    for p in parts {
        if !p.doc["hosts"].is_array() {
            return Err(malformed(p, "it has no list of hosts".into()));
        }
        for h in list(&p.doc["hosts"]) {
            let (host, play) = host_entry(p, h)?;
            let seen = owner.entry((host, play)).or_insert((p.name(), 0));
            if seen.0 != p.name() {
                return Err(MergeError::Overlap {
                    host: host.into(),
                    play: play.into(),
                    a: seen.0.clone(),
                    b: p.name(),
                });
            }
            seen.1 += 1;
            if seen.1 > same_name.get(play).copied().unwrap_or(1) {
                return Err(malformed(
                    p,
                    format!("host {host} is listed twice for play '{play}'"),
                ));
            }
            all.push((play_order.get(play).copied().unwrap_or(usize::MAX), host, h));
        }
    }
    // Stable: a host's two plays of one name keep their order.
    all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    Ok(all.into_iter().map(|(_, _, h)| h.clone()).collect())
}

/// A host entry's name and play, once it has the shape nodeprov writes.
fn host_entry<'a>(p: &Part, h: &'a Value) -> Result<(&'a str, &'a str), MergeError> {
    let Some(host) = h["host"].as_str() else {
        return Err(malformed(p, "a host entry has no host name".into()));
    };
    if !h["tasks"].is_array() {
        return Err(malformed(p, format!("host {host} has no list of tasks")));
    }
    Ok((host, h["play"].as_str().unwrap_or_default()))
}

fn malformed(p: &Part, what: String) -> MergeError {
    MergeError::Malformed {
        path: p.path.to_path_buf(),
        what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A shard whose hosts' tasks all end in `status` (none for "").
    fn shard(index: u64, count: u64, status: &str, hosts: &[(&str, &str)]) -> (PathBuf, Value) {
        let tasks = match status {
            "" => json!([]),
            s => json!([{"task": "t", "status": s}]),
        };
        let hosts: Vec<Value> = hosts
            .iter()
            .map(|(h, play)| {
                json!({"host": h, "play": play, "tasks": tasks, "failed": status == "failed"})
            })
            .collect();
        (
            PathBuf::from(format!("s{index}.json")),
            json!({
                "schema_version": 2, "tool": "nodeprov", "version": "0.1.0",
                "mode": "check", "playbook": "p.yml", "exit_code": 0,
                "halted": null, "never_touched": [],
                "shard": {"index": index, "count": count, "plays": ["base", "gpu"]},
                "hosts": hosts,
            }),
        )
    }

    #[test]
    fn custom_stats_of_the_shards_add_up() {
        let mut one = shard(1, 2, "ok", &[("a", "base")]);
        one.1["global_custom_stats"] = json!({"nodes": 1, "names": ["a"]});
        one.1["custom_stats"] = json!({"a": {"mine": 1}});
        let mut two = shard(2, 2, "ok", &[("b", "base")]);
        two.1["global_custom_stats"] = json!({"nodes": 2, "names": ["b"]});
        let doc = merge(&[one, two]).unwrap();
        assert_eq!(
            doc["global_custom_stats"],
            json!({"nodes": 3, "names": ["a", "b"]})
        );
        assert_eq!(doc["custom_stats"], json!({"a": {"mine": 1}}));
    }

    fn err(docs: &[(PathBuf, Value)]) -> String {
        merge(docs).unwrap_err().to_string()
    }

    #[test]
    fn shards_merge_into_play_then_host_order_with_the_fleet_exit_code() {
        let docs = [
            shard(2, 2, "failed", &[("b", "base"), ("b", "gpu")]),
            shard(1, 2, "drift", &[("c", "base"), ("a", "base"), ("a", "gpu")]),
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
        let one = shard(1, 3, "", &[]);
        let three = shard(3, 3, "", &[]);
        assert_eq!(
            err(&[one.clone(), three.clone()]),
            "missing shard report(s): shard 2/3"
        );
        assert_eq!(
            err(&[shard(1, 100_000, "", &[])]),
            "missing shard report(s): shard 2/100000, shard 3/100000, shard 4/100000, \
             shard 5/100000, shard 6/100000, shard 7/100000, shard 8/100000, shard 9/100000, \
             shard 10/100000, shard 11/100000 and 99989 more"
        );
        assert_eq!(
            err(&[shard(1, 1_000_000_000_000, "", &[])]),
            "s1.json says the run has 1000000000000 shards; nodeprov merges at most 100000"
        );
        let mut again = three.clone();
        again.0 = "copy.json".into();
        assert_eq!(
            err(&[one.clone(), three, again]),
            "shard 3/3 is given twice: s3.json and copy.json"
        );
        assert_eq!(
            err(&[one.clone(), shard(2, 4, "", &[])]),
            "s2.json is shard 2/4, but s1.json says the run has 3 shards"
        );
        let mut plain = shard(2, 3, "", &[]);
        plain.1.as_object_mut().unwrap().remove("shard");
        assert!(err(&[one, plain]).starts_with("s2.json is not a shard report"));
        assert_eq!(err(&[]), "no shard reports given");
    }

    #[test]
    fn shards_of_different_runs_or_inventories_are_refused() {
        let mut other = shard(2, 2, "", &[]);
        other.1["playbook"] = json!("q.yml");
        assert_eq!(
            err(&[shard(1, 2, "", &[]), other]),
            "s2.json differs from s1.json in \"playbook\": shards of one run share it"
        );
        assert_eq!(
            err(&[shard(1, 2, "", &[("a", "gpu")]), shard(2, 2, "", &[("a", "gpu")])]),
            "host a (play 'gpu') is in shard 1/2 and in shard 2/2: the shards saw different inventories"
        );
    }

    #[test]
    fn the_fleet_code_comes_from_the_merged_statuses_not_the_shards_codes() {
        let mut usage = shard(1, 2, "", &[]);
        usage.1["exit_code"] = json!(1);
        let drift = shard(2, 2, "unknown", &[("a", "gpu")]);
        assert_eq!(merge(&[usage, drift]).unwrap()["exit_code"], 2);
        let mut halted = shard(1, 1, "ok", &[("a", "gpu")]);
        halted.1["halted"] = json!("every host of the batch failed");
        assert_eq!(merge(&[halted]).unwrap()["exit_code"], 4);
    }

    #[test]
    fn host_entries_of_another_shape_are_refused() {
        let twice = shard(1, 1, "", &[("a", "gpu"), ("a", "gpu")]);
        assert_eq!(
            err(&[twice]),
            "s1.json is not a report nodeprov wrote: host a is listed twice for play 'gpu'"
        );
        let mut two_plays = shard(1, 1, "", &[("a", "gpu"), ("a", "gpu")]);
        two_plays.1["shard"]["plays"] = json!(["gpu", "gpu"]);
        assert_eq!(
            merge(&[two_plays]).unwrap()["hosts"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let mut empty = shard(1, 1, "", &[]);
        empty.1["hosts"] = json!([{}]);
        assert_eq!(
            err(&[empty.clone()]),
            "s1.json is not a report nodeprov wrote: a host entry has no host name"
        );
        empty.1["hosts"] = json!([{"host": "a", "tasks": {"x": 1}}]);
        assert_eq!(
            err(&[empty.clone()]),
            "s1.json is not a report nodeprov wrote: host a has no list of tasks"
        );
        empty.1["hosts"] = json!({"a": 1});
        assert_eq!(
            err(&[empty]),
            "s1.json is not a report nodeprov wrote: it has no list of hosts"
        );
    }

    #[test]
    fn a_shard_path_that_is_no_file_is_refused_unread() {
        let err = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            err,
            "cannot read shard report: cannot read /dev/zero: it is a character device, not a regular file"
        );
    }

    #[test]
    fn every_halted_shard_says_why() {
        let mut one = shard(1, 2, "", &[]);
        one.1["halted"] = json!("play 'gpu': every host of the batch failed");
        one.1["never_touched"] = json!(["x"]);
        let doc = merge(&[one, shard(2, 2, "", &[])]).unwrap();
        assert_eq!(
            doc["halted"],
            "shard 1/2: play 'gpu': every host of the batch failed"
        );
        assert_eq!(doc["never_touched"], json!(["x"]));
    }
}
