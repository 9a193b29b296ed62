//! Output for people: one block per host and play, then a recap.

use std::fmt::Write;

use super::{fleet, printable};
use crate::exec::result::{HostReport, Status, TaskResult};
use crate::exec::RunOutcome;

/// A change's diff is shown where its result kept one: the run's `--diff`
/// or the task's `diff:` decided that as it was planned.
pub fn host_block(r: &HostReport) -> String {
    let mut out = format!(
        "PLAY [{}] {}\n",
        printable(&r.play, false),
        printable(&r.host, false)
    );
    if let Some(why) = &r.unreachable {
        let _ = writeln!(out, "  unreachable  {}", printable(why, false));
        return out;
    }
    for t in &r.tasks {
        task_lines(&mut out, t);
    }
    out
}

fn task_lines(out: &mut String, t: &TaskResult) {
    let word = if t.ignored {
        "ignored"
    } else {
        t.status.word()
    };
    let name = match &t.id.item {
        Some(item) => format!("{} ({item})", t.id.task),
        None => t.id.task.clone(),
    };
    let _ = writeln!(out, "  {word:<8} {}", printable(&name, false));
    if let Some(msg) = &t.message {
        let _ = writeln!(out, "           {}", printable(msg, false));
        if matches!(t.status, Status::Failed | Status::Unreachable) {
            let _ = writeln!(out, "           at {}", t.id.location);
        }
    }
    let show_changes = matches!(
        t.status,
        Status::Drift | Status::Changed | Status::Unknown | Status::Failed | Status::Unreachable
    );
    for c in t.changes.iter().filter(|_| show_changes) {
        let mut line = format!("           {c}");
        if let Some(ev) = &c.evidence {
            let _ = write!(line, "  [{ev}]");
        }
        let _ = writeln!(out, "{}", printable(&line, false));
        if let Some(diff) = &c.diff {
            for l in diff.lines() {
                let _ = writeln!(out, "             {}", printable(l, true));
            }
        }
    }
    for n in &t.notes {
        let _ = writeln!(out, "           note: {}", printable(n, false));
    }
}

/// One line per host, or for more than `fleet::FLEET_HOSTS` hosts the
/// fleet summary; then why a rollout halted and what it never reached.
pub fn recap(outcome: &RunOutcome) -> String {
    let mut out = String::from("RECAP\n");
    if fleet::is_fleet(outcome) {
        out.push_str(&fleet::summary(outcome));
    } else {
        host_lines(&mut out, outcome);
    }
    if let Some(why) = &outcome.halted {
        let _ = writeln!(out, "HALTED: {why}");
    }
    if !outcome.never_touched.is_empty() {
        let _ = writeln!(out, "never touched: {}", outcome.never_touched.join(", "));
    }
    out
}

fn host_lines(out: &mut String, outcome: &RunOutcome) {
    let width = outcome
        .reports
        .iter()
        .map(|r| r.host.len())
        .max()
        .unwrap_or(0);
    for r in &outcome.reports {
        let c = r.recap();
        let _ = writeln!(
            out,
            "  {:<width$}  ok={} changed={} drift={} unknown={} failed={} skipped={} unreachable={}  round_trips={}",
            r.host,
            c.ok,
            c.changed,
            c.drift,
            c.unknown,
            c.failed,
            c.skipped,
            c.unreachable,
            r.round_trips
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::result::TaskId;
    use crate::modules::Change;

    fn report() -> HostReport {
        let mut change = Change::new("vm.swappiness", Some("60".into()), Some("10".into()));
        change.evidence = Some("live value in /proc/sys/vm/swappiness".into());
        let task = |name: &str, status, changes| TaskResult {
            changes,
            duration_ms: 1,
            ..TaskResult::new(TaskId::new(name, "sysctl", "gpu-node.yml:9:7"), status)
        };
        HostReport {
            host: "gpu-01".into(),
            play: "GPU node".into(),
            unreachable: None,
            tasks: vec![
                task("swappiness", Status::Drift, vec![change]),
                task("overcommit", Status::Ok, Vec::new()),
            ],
            round_trips: 1,
            duration_ms: 5,
            probes: Vec::new(),
        }
    }

    #[test]
    fn host_block_snapshot() {
        let text = host_block(&report());
        assert_eq!(
            text,
            "PLAY [GPU node] gpu-01\n  drift    swappiness\n           vm.swappiness: 60 → 10  [live value in /proc/sys/vm/swappiness]\n  ok       overcommit\n"
        );
    }

    #[test]
    fn bytes_from_the_host_cannot_drive_the_terminal() {
        let mut r = report();
        let mut change = Change::new("/etc/motd", Some("old content".into()), None);
        change.diff = Some("@@ -1 +1 @@\n-\x1b]0;pwned\x07old\n+new\tcol\x1b[2J\r\n".into());
        r.tasks[0].changes = vec![change];
        r.tasks[0].message = Some("sudo: \x1b[31mno\nfake line".into());
        r.tasks[0].notes = vec!["\u{9b}31m".into()];
        let text = host_block(&r);
        assert_eq!(
            text,
            "PLAY [GPU node] gpu-01\n  drift    swappiness\n           sudo: \\x1b[31mno\\x0afake line\n           /etc/motd: old content → (none)\n             @@ -1 +1 @@\n             -\\x1b]0;pwned\\x07old\n             +new\tcol\\x1b[2J\n           note: \\x9b31m\n  ok       overcommit\n"
        );
    }

    #[test]
    fn recap_snapshot() {
        let outcome = RunOutcome {
            reports: vec![report()],
            never_touched: vec!["gpu-02".into()],
            halted: Some("play 'x': every host of the batch failed".into()),
        };
        assert_eq!(
            recap(&outcome),
            "RECAP\n  gpu-01  ok=1 changed=0 drift=1 unknown=0 failed=0 skipped=0 unreachable=0  round_trips=1\nHALTED: play 'x': every host of the batch failed\nnever touched: gpu-02\n"
        );
    }
}
