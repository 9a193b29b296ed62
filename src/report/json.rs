//! The machine-readable report: one versioned JSON document per run,
//! described by `schemas/report.schema.json`.

use serde_json::{json, Map, Value};

use crate::exec::result::HostReport;
use crate::exec::RunOutcome;
use crate::report::custom_stats;

/// 2: every task names its control and observation; every change carries
/// `expected`, `actual` and the probes that observed it.
pub const SCHEMA_VERSION: u32 = 2;

/// The run's document, each host's object made only while it is written
/// ([`Document::write`]), so that a fleet's report costs the memory of one
/// host's object rather than of them all; [`Document::value`] makes it
/// whole, for the reports derived from it.
pub struct Document<'a> {
    /// The fields before `hosts`, in their order.
    head: Map<String, Value>,
    reports: &'a [HostReport],
    /// The fields after `hosts`.
    tail: Map<String, Value>,
    /// What every value goes through before it is written (masking).
    redact: fn(&mut Value),
}

impl<'a> Document<'a> {
    pub fn new(outcome: &'a RunOutcome, mode: &str, playbook: &str, exit_code: u8) -> Self {
        let head = json!({
            "schema_version": SCHEMA_VERSION,
            "tool": "nodeprov",
            "version": env!("CARGO_PKG_VERSION"),
            "mode": mode,
            "playbook": playbook,
            "exit_code": exit_code,
            "halted": outcome.halted,
            "never_touched": outcome.never_touched,
        });
        let mut tail = Map::new();
        // As Ansible's json callback names them, where `set_stats` ran.
        let stats = custom_stats::of(outcome);
        if !stats.hosts.is_empty() {
            tail.insert("custom_stats".into(), Value::Object(stats.hosts));
        }
        if !stats.run.is_empty() {
            tail.insert("global_custom_stats".into(), Value::Object(stats.run));
        }
        Document {
            head: match head {
                Value::Object(m) => m,
                _ => unreachable!("a json! object"),
            },
            reports: &outcome.reports,
            tail,
            redact: |_| {},
        }
    }

    /// A field after the others (`shard`).
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.tail.insert(key.into(), value);
        self
    }

    /// Every value masked by `redact` before it is written.
    pub fn redacted(self, redact: fn(&mut Value)) -> Self {
        Document { redact, ..self }
    }

    /// The whole document as one value.
    pub fn value(&self) -> Value {
        let mut doc = self.head.clone();
        let hosts = self.reports.iter().map(|r| self.host(r)).collect();
        doc.insert("hosts".into(), Value::Array(hosts));
        doc.extend(self.tail.clone());
        let mut doc = Value::Object(doc);
        (self.redact)(&mut doc);
        doc
    }

    /// Writes the document as [`text`] would print its [`Document::value`].
    pub fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::new(out);
        serde_json::to_writer_pretty(&mut out, self)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn host(&self, r: &HostReport) -> Value {
        let mut v = host(r);
        (self.redact)(&mut v);
        v
    }
}

impl serde::Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Hosts<'d, 'a>(&'d Document<'a>);
        impl serde::Serialize for Hosts<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.reports.len()))?;
                for r in self.0.reports {
                    seq.serialize_element(&self.0.host(r))?;
                }
                seq.end()
            }
        }
        let redacted = |v: &Value| {
            let mut v = v.clone();
            (self.redact)(&mut v);
            v
        };
        let mut map = s.serialize_map(None)?;
        for (k, v) in &self.head {
            map.serialize_entry(k, &redacted(v))?;
        }
        map.serialize_entry("hosts", &Hosts(self))?;
        for (k, v) in &self.tail {
            map.serialize_entry(k, &redacted(v))?;
        }
        map.end()
    }
}

/// The whole document of a run.
pub fn document(outcome: &RunOutcome, mode: &str, playbook: &str, exit_code: u8) -> Value {
    Document::new(outcome, mode, playbook, exit_code).value()
}

/// The document as `--format json` prints it and `--report` stores it.
pub fn text(doc: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(doc).expect("json"))
}

fn host(r: &HostReport) -> Value {
    let mut v = serde_json::to_value(r).expect("reports serialize");
    v["recap"] = serde_json::to_value(r.recap()).expect("recap serializes");
    v["failed"] = json!(r.failed());
    for (task, t) in v["tasks"]
        .as_array_mut()
        .expect("tasks are a list")
        .iter_mut()
        .zip(&r.tasks)
    {
        task["host"] = json!(r.host);
        task["control"] = json!({
            "task": t.id.task,
            "tags": t.id.tags,
            "location": t.id.location,
            "play": r.play,
        });
        // A key names one probe script: any of its observations gives the command.
        let probes: Vec<Value> = (t.evidence.observed_by.iter())
            .filter_map(|key| r.probes.iter().find(|o| &o.key == key))
            .map(|o| json!({"key": o.key, "command": o.command}))
            .collect();
        // `get_mut`: indexing would add `"changes": null` to a task without any.
        for (change, c) in task
            .get_mut("changes")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .zip(&t.changes)
        {
            change["expected"] = json!(c.after);
            change["actual"] = json!(c.before);
            change["observed_at"] = json!(t.evidence.observed_at);
            change["observed_by"] = json!(probes);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::result::{Evidence, Observation, Status, TaskId, TaskResult};
    use crate::modules::Change;

    fn outcome() -> RunOutcome {
        let mut change = Change::new("vm.swappiness", Some("60".into()), Some("10".into()));
        change.evidence = Some("live value in /proc/sys/vm/swappiness".into());
        let observation = |key: &str, at: &str| Observation {
            key: key.into(),
            command: format!("cat {key}"),
            observed_at: at.into(),
        };
        let id = TaskId {
            tags: vec!["sysctl".into()],
            ..TaskId::new("swappiness", "sysctl", "gpu-node.yml:9:7")
        };
        let task = TaskResult {
            changes: vec![change],
            duration_ms: 1,
            evidence: Evidence {
                observed_by: vec!["sysctl".into(), "facts".into(), "predicted".into()],
                observed_at: Some("2026-11-30T16:00:01Z".into()),
            },
            ..TaskResult::new(id, Status::Drift)
        };
        RunOutcome {
            reports: vec![HostReport {
                host: "gpu-01".into(),
                play: "GPU node".into(),
                unreachable: None,
                tasks: vec![task],
                round_trips: 2,
                duration_ms: 5,
                probes: vec![
                    observation("facts", "2026-11-30T16:00:00Z"),
                    observation("sysctl", "2026-11-30T16:00:00Z"),
                    observation("sysctl", "2026-11-30T16:00:01Z"),
                ],
            }],
            never_touched: Vec::new(),
            halted: None,
        }
    }

    #[test]
    fn the_streamed_document_is_the_whole_one_as_text() {
        let outcome = outcome();
        let doc = Document::new(&outcome, "check", "gpu-node.yml", 2)
            .with("shard", json!({"index": 1, "count": 2}))
            .redacted(|v| {
                if let Some(h) = v.get_mut("host") {
                    *h = json!("masked");
                }
            });
        let mut streamed = Vec::new();
        doc.write(&mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), text(&doc.value()));
        assert_eq!(doc.value()["hosts"][0]["host"], "masked");
        assert_eq!(doc.value()["shard"]["count"], 2);
    }

    #[test]
    fn a_finding_carries_its_control_and_evidence() {
        let doc = document(&outcome(), "check", "gpu-node.yml", 2);
        assert_eq!(doc["schema_version"], 2);
        let task = &doc["hosts"][0]["tasks"][0];
        assert_eq!(task["host"], "gpu-01");
        assert_eq!(
            task["control"],
            json!({"task": "swappiness", "tags": ["sysctl"], "location": "gpu-node.yml:9:7", "play": "GPU node"})
        );
        assert_eq!(
            task["changes"][0],
            json!({
                "subject": "vm.swappiness",
                "before": "60",
                "after": "10",
                "evidence": "live value in /proc/sys/vm/swappiness",
                "expected": "10",
                "actual": "60",
                "observed_at": "2026-11-30T16:00:01Z",
                "observed_by": [
                    {"key": "sysctl", "command": "cat sysctl"},
                    {"key": "facts", "command": "cat facts"},
                ],
            })
        );
    }
}
