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

/// One task on one host (one item of a loop): which it was, what came of
/// it, and what that was judged from. The JSON report writes its fields
/// flat, in this order.
#[derive(Clone, Debug, Serialize)]
pub struct TaskResult {
    #[serde(flatten)]
    pub id: TaskId,
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
    #[serde(flatten)]
    pub evidence: Evidence,
    #[serde(skip)]
    pub for_run: ForTheRun,
}

/// What a task gives the rest of the run beyond its host.
#[derive(Clone, Debug, Default)]
pub struct ForTheRun {
    /// Custom statistics for the run's report: what it returned as
    /// `ansible_stats` (`set_stats`), which Ansible's strategy gathers.
    pub stats: Option<serde_json::Value>,
}

/// Which task a result is of.
#[derive(Clone, Debug, Serialize)]
pub struct TaskId {
    pub task: String,
    pub module: &'static str,
    /// playbook file:line:column of the task.
    pub location: String,
    /// The task's own tags and its play's, the control's labels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
}

impl TaskId {
    /// A task of no loop, without tags.
    pub fn new(task: &str, module: &'static str, location: &str) -> Self {
        TaskId {
            task: task.into(),
            module,
            location: location.into(),
            tags: Vec::new(),
            item: None,
        }
    }
}

/// What a result was planned from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    /// Keys of the probes whose answers the task was planned from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observed_by: Vec<String>,
    /// When the newest of those answers was read from the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
}

impl TaskResult {
    /// A result with nothing said yet but its status.
    pub fn new(id: TaskId, status: Status) -> Self {
        TaskResult {
            id,
            status,
            changes: Vec::new(),
            notes: Vec::new(),
            message: None,
            ignored: false,
            duration_ms: 0,
            evidence: Evidence::default(),
            for_run: ForTheRun::default(),
        }
    }
}

/// One read-only probe sent to a host: what it ran and when.
#[derive(Clone, Debug, Serialize)]
pub struct Observation {
    pub key: String,
    pub command: String,
    pub observed_at: String,
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
    /// Every probe sent, in order; a key probed again appears again.
    pub probes: Vec<Observation>,
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
