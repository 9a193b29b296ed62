//! A host's cost of a run, read from outside: processes started in its PID
//! namespace and the CPU time they used.
//!
//! Processes: PIDs in a namespace are handed out in order, so a shell
//! started inside (`nsenter`) before and after the run sees how many PIDs
//! the run took. CPU: the host's sshd is the namespace's first process and
//! reaps every session, so its own and its reaped children's CPU (`utime`
//! to `cstime` in /proc/PID/stat), plus the same of every process still
//! running under it, grows by everything the run did on the host, the SSH
//! session's own crypto included. Counting the running ones matters for a
//! session that outlives the run (an ssh ControlPersist master keeps its
//! session open): its CPU is counted when it is used, not when the session
//! ends in some later run. A process ending between the two reads is
//! rare and off by its own last share at most.

use std::process::Command;

use crate::support::sshd::SshHost;

pub struct Meter {
    /// The host's sshd, as seen from outside.
    pub pid: i32,
}

pub struct Reading {
    last_pid: u64,
    ticks: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    pub processes: u64,
    pub cpu_s: f64,
}

impl Meter {
    pub fn new(host: &SshHost) -> Meter {
        Meter {
            pid: host.sshd_pid(),
        }
    }

    pub fn read(&self) -> Reading {
        let ticks = ticks(self.pid).expect("sshd stat") + descendants_ticks(self.pid);
        let out = Command::new("nsenter")
            .args(["-t", &self.pid.to_string(), "-p", "sh", "-c", "echo $$"])
            .output()
            .expect("nsenter");
        let last_pid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a pid from inside the host");
        Reading { last_pid, ticks }
    }
}

/// A process's own and reaped children's CPU in clock ticks, or None once
/// it is gone.
fn ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: state is 3rd,
    // utime 14th .. cstime 17th of the whole line.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields = after.split(' ').skip(11).take(4);
    fields.map(|f| f.parse::<u64>().ok()).sum()
}

/// [`ticks`] of every process running under `pid`.
fn descendants_ticks(pid: i32) -> u64 {
    let children = format!("/proc/{pid}/task/{pid}/children");
    let listed = std::fs::read_to_string(children).unwrap_or_default();
    listed
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .map(|c| ticks(c).unwrap_or(0) + descendants_ticks(c))
        .sum()
}

impl Reading {
    /// What happened on the host since `before`, less the reading's own shell.
    pub fn since(&self, before: &Reading) -> Cost {
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Cost {
            processes: self.last_pid - before.last_pid - 1,
            cpu_s: self.ticks.saturating_sub(before.ticks) as f64 / hz,
        }
    }
}

impl Cost {
    /// The median of the processes, and the mean of the CPU time: CPU is
    /// read in clock ticks (10 ms, about a third of a run), and a run's delta
    /// is off by under a tick either way, so a median snaps to whole ticks
    /// where the mean over many runs does not.
    pub fn typical(costs: &[Cost]) -> Cost {
        let mut p: Vec<u64> = costs.iter().map(|c| c.processes).collect();
        p.sort_unstable();
        Cost {
            processes: p[p.len() / 2],
            cpu_s: costs.iter().map(|c| c.cpu_s).sum::<f64>() / costs.len() as f64,
        }
    }
}
