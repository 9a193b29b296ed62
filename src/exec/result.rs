//! What happened to each task on each host.

use serde::Serialize;

use crate::modules::{Change, InventoryChange};

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
    /// Changes to the run's inventory, for the next plays (`group_by`,
    /// `add_host`).
    pub inventory: Vec<InventoryChange>,
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

/// `SystemTime` as RFC 3339 UTC with seconds (`2026-11-30T16:24:25Z`).
/// Formatted here rather than with a date crate: UTC needs no time zone
/// data, and this is the only date the tool writes.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |s| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_796_055_865), "2026-11-30T16:24:25Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
