//! The machine-readable report: one versioned JSON document per run.

use serde_json::{json, Value};

use crate::exec::RunOutcome;

pub const SCHEMA_VERSION: u32 = 1;

pub fn document(outcome: &RunOutcome, mode: &str, playbook: &str, exit_code: u8) -> Value {
    let hosts: Vec<Value> = outcome
        .reports
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).expect("reports serialize");
            v["recap"] = serde_json::to_value(r.recap()).expect("recap serializes");
            v["failed"] = json!(r.failed());
            v
        })
        .collect();
    json!({
        "schema_version": SCHEMA_VERSION,
        "tool": "nodeprov",
        "version": env!("CARGO_PKG_VERSION"),
        "mode": mode,
        "playbook": playbook,
        "exit_code": exit_code,
        "halted": outcome.halted,
        "never_touched": outcome.never_touched,
        "hosts": hosts,
    })
}
