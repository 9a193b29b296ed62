//! The end of a fleet run's human recap: what happened across hosts, with
//! identical findings grouped and host lists compressed into inventory
//! ranges, instead of one line per host.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::printable;
use crate::exec::result::{HostReport, Recap, Status};
use crate::exec::RunOutcome;

/// Above this many hosts the recap is a fleet summary.
pub const FLEET_HOSTS: usize = 5;

pub fn is_fleet(outcome: &RunOutcome) -> bool {
    let hosts: BTreeSet<&str> = outcome.reports.iter().map(|r| r.host.as_str()).collect();
    hosts.len() > FLEET_HOSTS
}

/// The recap's body for a fleet: hosts and tasks by status, then findings
/// and failures grouped across hosts.
pub fn summary(outcome: &RunOutcome) -> String {
    let hosts = host_states(&outcome.reports);
    let mut out = String::new();
    let mut by_state: BTreeMap<&str, usize> = BTreeMap::new();
    for state in hosts.values() {
        *by_state.entry(state.word()).or_default() += 1;
    }
    let counts: Vec<String> = HostState::ALL
        .iter()
        .map(|s| format!("{}={}", s.word(), by_state.get(s.word()).unwrap_or(&0)))
        .collect();
    let _ = writeln!(out, "  {} hosts: {}", hosts.len(), counts.join(" "));
    let t = task_totals(&outcome.reports);
    let _ = writeln!(
        out,
        "  tasks: ok={} changed={} drift={} unknown={} failed={} skipped={}",
        t.ok, t.changed, t.drift, t.unknown, t.failed, t.skipped
    );
    section(&mut out, "findings", findings(&outcome.reports));
    section(&mut out, "failures", failures(&outcome.reports));
    out
}

/// One line per group: the text, then how many hosts and which.
fn section(out: &mut String, title: &str, groups: BTreeMap<String, BTreeSet<&str>>) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}:");
    let mut groups: Vec<_> = groups.into_iter().collect();
    // The most widespread first; ties in text order.
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    for (text, hosts) in groups {
        let names: Vec<&str> = hosts.into_iter().collect();
        let n = names.len();
        let _ = writeln!(
            out,
            "  {} on {n} host{}: {}",
            printable(&text, false),
            if n == 1 { "" } else { "s" },
            printable(&host_ranges(&names), false)
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum HostState {
    Ok,
    Changed,
    Drift,
    Failed,
    Unreachable,
}

impl HostState {
    const ALL: [HostState; 5] = [
        HostState::Ok,
        HostState::Changed,
        HostState::Drift,
        HostState::Failed,
        HostState::Unreachable,
    ];

    fn word(self) -> &'static str {
        match self {
            HostState::Ok => "ok",
            HostState::Changed => "changed",
            HostState::Drift => "drift",
            HostState::Failed => "failed",
            HostState::Unreachable => "unreachable",
        }
    }

    /// The worst that happened to the host in one play.
    fn of(r: &HostReport) -> HostState {
        let c = r.recap();
        if c.unreachable > 0 {
            HostState::Unreachable
        } else if r.failed() {
            HostState::Failed
        } else if r.drifted() {
            HostState::Drift
        } else if c.changed > 0 {
            HostState::Changed
        } else {
            HostState::Ok
        }
    }
}

/// Each host's worst state over all plays.
fn host_states(reports: &[HostReport]) -> BTreeMap<&str, HostState> {
    let mut hosts: BTreeMap<&str, HostState> = BTreeMap::new();
    for r in reports {
        let s = hosts.entry(r.host.as_str()).or_insert(HostState::Ok);
        *s = (*s).max(HostState::of(r));
    }
    hosts
}

fn task_totals(reports: &[HostReport]) -> Recap {
    let mut t = Recap::default();
    for c in reports.iter().map(HostReport::recap) {
        t.ok += c.ok;
        t.changed += c.changed;
        t.drift += c.drift;
        t.unknown += c.unknown;
        t.failed += c.failed;
        t.skipped += c.skipped;
    }
    t
}

/// Identical changes (`subject: before → after`) and the hosts showing them.
fn findings(reports: &[HostReport]) -> BTreeMap<String, BTreeSet<&str>> {
    let mut groups: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for r in reports {
        let shown = r
            .tasks
            .iter()
            .filter(|t| matches!(t.status, Status::Drift | Status::Changed | Status::Unknown));
        for c in shown.flat_map(|t| &t.changes) {
            groups.entry(c.to_string()).or_default().insert(&r.host);
        }
    }
    groups
}

/// Failed tasks and lost hosts, grouped by what went wrong.
fn failures(reports: &[HostReport]) -> BTreeMap<String, BTreeSet<&str>> {
    let mut groups: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for r in reports {
        if let Some(why) = &r.unreachable {
            groups
                .entry(format!("unreachable: {why}"))
                .or_default()
                .insert(&r.host);
        }
        let failed = r
            .tasks
            .iter()
            .filter(|t| t.status == Status::Failed && !t.ignored);
        for t in failed {
            let why = t.message.as_deref().unwrap_or("failed");
            groups
                .entry(format!("failed: {}: {why}", t.id.task))
                .or_default()
                .insert(&r.host);
        }
    }
    groups
}

/// A name split around its last run of digits.
struct Numbered<'a> {
    prefix: &'a str,
    digits: &'a str,
    suffix: &'a str,
}

impl<'a> Numbered<'a> {
    fn parse(name: &'a str) -> Option<Self> {
        let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
        let start = name[..end]
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        Some(Numbered {
            prefix: &name[..start],
            digits: &name[start..end],
            suffix: &name[end..],
        })
    }

    /// Zero-padded numbers keep their width; `gpu-8` and `gpu-10` share
    /// the unpadded width 0.
    fn width(&self) -> usize {
        if self.digits.len() > 1 && self.digits.starts_with('0') {
            self.digits.len()
        } else {
            0
        }
    }
}

/// Host names as inventory ranges: `gpu-001` … `gpu-037` is
/// `gpu-[001:037]`; several ranges and single names are comma-separated.
pub fn host_ranges(names: &[&str]) -> String {
    let numbered: Vec<(&str, Option<(Numbered, u128)>)> = names
        .iter()
        .map(|name| {
            let n =
                Numbered::parse(name).and_then(|n| n.digits.parse::<u128>().ok().map(|v| (n, v)));
            (*name, n)
        })
        .collect();
    // A zero-padded width takes in every number of that many digits
    // (`gpu-099`, `gpu-100`).
    let padded: BTreeSet<(&str, &str, usize)> = numbered
        .iter()
        .filter_map(|(_, n)| n.as_ref())
        .filter(|(n, _)| n.width() > 0)
        .map(|(n, _)| (n.prefix, n.suffix, n.width()))
        .collect();
    let mut groups: BTreeMap<(&str, &str, usize), BTreeSet<u128>> = BTreeMap::new();
    let mut parts: Vec<String> = Vec::new();
    for (name, n) in &numbered {
        let Some((n, value)) = n else {
            parts.push((*name).to_string());
            continue;
        };
        let key = (n.prefix, n.suffix, n.digits.len());
        let width = if padded.contains(&key) { key.2 } else { 0 };
        groups
            .entry((n.prefix, n.suffix, width))
            .or_default()
            .insert(*value);
    }
    // Names without a number first, then each group's ranges in order.
    parts.sort();
    for ((prefix, suffix, width), values) in groups {
        for (first, last) in runs(&values) {
            let num = |v: u128| format!("{v:0width$}");
            parts.push(if first == last {
                format!("{prefix}{}{suffix}", num(first))
            } else {
                format!("{prefix}[{}:{}]{suffix}", num(first), num(last))
            });
        }
    }
    parts.join(",")
}

/// Consecutive numbers as (first, last) pairs.
fn runs(values: &BTreeSet<u128>) -> Vec<(u128, u128)> {
    let mut out: Vec<(u128, u128)> = Vec::new();
    for &v in values {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == v => *last = v,
            _ => out.push((v, v)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::result::{TaskId, TaskResult};
    use crate::modules::Change;

    fn task(status: Status, changes: Vec<Change>, message: Option<&str>) -> TaskResult {
        TaskResult {
            changes,
            message: message.map(Into::into),
            duration_ms: 1,
            ..TaskResult::new(
                TaskId::new("swappiness", "sysctl", "rollout.yml:9:7"),
                status,
            )
        }
    }

    fn host(name: String, tasks: Vec<TaskResult>, unreachable: Option<&str>) -> HostReport {
        HostReport {
            host: name,
            play: "rollout".into(),
            unreachable: unreachable.map(Into::into),
            tasks,
            round_trips: 1,
            duration_ms: 5,
            probes: Vec::new(),
        }
    }

    fn swappiness(from: &str) -> Change {
        Change::new("vm.swappiness", Some(from.into()), Some("10".into()))
    }

    /// gpu-001…037 drift from 60, gpu-038 is compliant, gpu-039 and gpu-041
    /// drift from 30, gpu-040 fails, gpu-042 and gpu-044 are unreachable.
    fn fleet() -> RunOutcome {
        let mut reports = Vec::new();
        for i in 1..=44 {
            let name = format!("gpu-{i:03}");
            let r = match i {
                1..=37 => host(
                    name,
                    vec![task(Status::Drift, vec![swappiness("60")], None)],
                    None,
                ),
                39 | 41 => host(
                    name,
                    vec![task(Status::Drift, vec![swappiness("30")], None)],
                    None,
                ),
                40 => host(
                    name,
                    vec![task(Status::Failed, Vec::new(), Some("no such key"))],
                    None,
                ),
                42 | 44 => host(name, Vec::new(), Some("connection refused")),
                _ => host(name, vec![task(Status::Ok, Vec::new(), None)], None),
            };
            reports.push(r);
        }
        RunOutcome {
            reports,
            never_touched: Vec::new(),
            halted: None,
        }
    }

    #[test]
    fn a_fleet_recap_groups_identical_findings_and_failures() {
        assert_eq!(
            crate::report::human::recap(&fleet()),
            "RECAP
  44 hosts: ok=2 changed=0 drift=39 failed=1 unreachable=2
  tasks: ok=2 changed=0 drift=39 unknown=0 failed=1 skipped=0
findings:
  vm.swappiness: 60 → 10 on 37 hosts: gpu-[001:037]
  vm.swappiness: 30 → 10 on 2 hosts: gpu-039,gpu-041
failures:
  unreachable: connection refused on 2 hosts: gpu-042,gpu-044
  failed: swappiness: no such key on 1 host: gpu-040
"
        );
    }

    #[test]
    fn five_hosts_keep_one_recap_line_each() {
        let mut outcome = fleet();
        outcome.reports.truncate(5);
        let recap = crate::report::human::recap(&outcome);
        assert_eq!(recap.lines().count(), 6, "{recap}");
        assert!(
            recap.contains("\n  gpu-005  ok=0 changed=0 drift=1"),
            "{recap}"
        );
    }

    #[test]
    fn host_lists_become_inventory_ranges() {
        let ranges = |names: &[&str]| host_ranges(names);
        assert_eq!(ranges(&["gpu-003", "gpu-001", "gpu-002"]), "gpu-[001:003]");
        assert_eq!(
            ranges(&["gpu-001", "gpu-002", "gpu-004", "gpu-005", "gpu-007"]),
            "gpu-[001:002],gpu-[004:005],gpu-007"
        );
        assert_eq!(ranges(&["n8", "n9", "n10", "n11"]), "n[8:11]");
        assert_eq!(ranges(&["n098", "n099", "n100"]), "n[098:100]");
        assert_eq!(
            ranges(&["rack1-gpu01.dc", "rack1-gpu02.dc", "rack2-gpu01.dc", "db"]),
            "db,rack1-gpu[01:02].dc,rack2-gpu01.dc"
        );
        assert_eq!(ranges(&["localhost"]), "localhost");
    }
}
