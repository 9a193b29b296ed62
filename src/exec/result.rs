//! What happened to each task on each host.

use serde::Serialize;

use crate::modules::Change;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Changed,
    /// Check mode: the host differs from the playbook.
    Drift,
    /// Check mode: the outcome depends on something check mode cannot run.
    Unknown,
    Failed,
    Skipped,
    /// Apply: the host was lost before the step reported, so whether it
    /// took effect is not known.
    Unreachable,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Changed => "changed",
            Status::Drift => "drift",
            Status::Unknown => "unknown",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Unreachable => "unreachable",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskResult {
    pub task: String,
    pub module: &'static str,
    /// playbook file:line:column of the task.
    pub location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The failure was tolerated by `ignore_errors`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
    pub duration_ms: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Recap {
    pub ok: usize,
    pub changed: usize,
    pub drift: usize,
    pub unknown: usize,
    pub failed: usize,
    pub skipped: usize,
    /// 1 when the host was lost (or never reached), as in Ansible's recap.
    pub unreachable: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    pub host: String,
    pub play: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    pub tasks: Vec<TaskResult>,
    /// Scripts sent to the host: the measure of the round-trip contract.
    pub round_trips: usize,
    pub duration_ms: u64,
}

impl HostReport {
    pub fn recap(&self) -> Recap {
        let mut r = Recap {
            unreachable: usize::from(self.unreachable.is_some()),
            ..Recap::default()
        };
        for t in &self.tasks {
            match t.status {
                Status::Ok => r.ok += 1,
                Status::Changed => r.changed += 1,
                Status::Drift => r.drift += 1,
                Status::Unknown => r.unknown += 1,
                Status::Failed if t.ignored => r.ok += 1,
                Status::Failed => r.failed += 1,
                Status::Skipped => r.skipped += 1,
                Status::Unreachable => {}
            }
        }
        r
    }

    /// The host failed: unreachable, or a task failed without `ignore_errors`.
    pub fn failed(&self) -> bool {
        self.unreachable.is_some()
            || self
                .tasks
                .iter()
                .any(|t| t.status == Status::Failed && !t.ignored)
    }

    pub fn drifted(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| matches!(t.status, Status::Drift | Status::Unknown))
    }
}
