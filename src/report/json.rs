//! The machine-readable report: one versioned JSON document per run,
//! described by `schemas/report.schema.json`.

use serde_json::{json, Value};

use crate::exec::result::HostReport;
use crate::exec::RunOutcome;
use crate::report::custom_stats;

/// 2: every task names its control and observation; every change carries
/// `expected`, `actual` and the probes that observed it.
pub const SCHEMA_VERSION: u32 = 2;

pub fn document(outcome: &RunOutcome, mode: &str, playbook: &str, exit_code: u8) -> Value {
    let hosts: Vec<Value> = outcome.reports.iter().map(host).collect();
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "tool": "nodeprov",
        "version": env!("CARGO_PKG_VERSION"),
        "mode": mode,
        "playbook": playbook,
        "exit_code": exit_code,
        "halted": outcome.halted,
        "never_touched": outcome.never_touched,
        "hosts": hosts,
    });
    // As Ansible's json callback names them, where `set_stats` ran.
    let stats = custom_stats::of(outcome);
    if !stats.hosts.is_empty() {
        doc["custom_stats"] = Value::Object(stats.hosts);
    }
    if !stats.run.is_empty() {
        doc["global_custom_stats"] = Value::Object(stats.run);
    }
    doc
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
