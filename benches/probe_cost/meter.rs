//! A host's cost of a run, read from outside: processes started in its PID
//! namespace and the CPU time they used.
//!
//! Processes: PIDs in a namespace are handed out in order, so a shell
//! started inside (`nsenter`) before and after the run sees how many PIDs
//! the run took. CPU: the host's sshd is the namespace's first process and
//! reaps every session, so its children's CPU (`cutime` + `cstime` in
//! /proc/PID/stat) grows by everything the run did on the host, the SSH
//! session's own crypto included, for nodeprov and the floor alike.

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
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).expect("sshd stat");
        // Fields after the command name, which may hold spaces: state is 3rd,
        // utime 14th .. cstime 17th of the whole line.
        let after = &stat[stat.rfind(')').expect("stat") + 2..];
        let fields: Vec<u64> = after
            .split(' ')
            .skip(11)
            .take(4)
            .map(|f| f.parse().expect("stat field"))
            .collect();
        let out = Command::new("nsenter")
            .args(["-t", &self.pid.to_string(), "-p", "sh", "-c", "echo $$"])
            .output()
            .expect("nsenter");
        let last_pid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a pid from inside the host");
        Reading {
            last_pid,
            ticks: fields.iter().sum(),
        }
    }
}

impl Reading {
    /// What happened on the host since `before`, less the reading's own shell.
    pub fn since(&self, before: &Reading) -> Cost {
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Cost {
            processes: self.last_pid - before.last_pid - 1,
            cpu_s: (self.ticks - before.ticks) as f64 / hz,
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
