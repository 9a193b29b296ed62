//! The processes one run starts on a host, for the list in PROBE_COST.md:
//! `strace -f` attached to the host's sshd from outside follows every
//! session and what each process execs.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::meter::Meter;

/// strace following one host's sshd until [`Tracer::finish`].
pub struct Tracer {
    strace: Child,
    log: tempfile::NamedTempFile,
    sshd: i32,
}

impl Meter {
    /// Attaches strace to the host's sshd and returns once it is attached.
    pub fn trace(&self) -> Tracer {
        let log = tempfile::NamedTempFile::new().expect("trace log");
        let strace = Command::new("strace")
            .args(["-f", "-qq", "-s", "48", "--pidns-translation"])
            .args(["-e", "trace=process", "-o"])
            .arg(log.path())
            .args(["-p", &self.pid.to_string()])
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn strace (NODEPROV_BENCH_TRACE needs it)");
        let tracer = Tracer {
            strace,
            log,
            sshd: self.pid,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while tracer_pid(self.pid) == 0 {
            assert!(Instant::now() < deadline, "strace never attached");
            std::thread::sleep(Duration::from_millis(20));
        }
        tracer
    }
}

fn tracer_pid(pid: i32) -> i32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("TracerPid:"));
    line.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

impl Tracer {
    /// Detaches and names each process the run started, in order: the
    /// command line it ran last, or `(fork of …)` for one that ran nothing
    /// (a subshell, or an sshd process that only forked).
    pub fn finish(mut self) -> Vec<String> {
        // SAFETY: SIGINT to the strace this tracer started; it detaches.
        unsafe { libc::kill(self.strace.id() as i32, libc::SIGINT) };
        let _ = self.strace.wait();
        let text = std::fs::read_to_string(self.log.path()).expect("read trace");
        processes(self.sshd, &text)
    }
}

/// Reads an `strace -f -o` log into one line per process started. A child's
/// first calls may be logged before its parent's fork returns, so the log is
/// read whole first: who forked whom, and what each process exec'd last.
fn processes(root: i32, log: &str) -> Vec<String> {
    let mut parent = HashMap::new();
    let mut started = Vec::new();
    let mut ran: HashMap<i32, String> = [(root, "sshd".to_string())].into();
    for (pid, call) in calls(log) {
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let ret = rest.rsplit_once(" = ").map_or("", |(_, r)| r.trim());
        match name {
            "clone" | "clone3" | "fork" | "vfork" if !rest.contains("CLONE_THREAD") => {
                if let Some(child) = child_pid(ret) {
                    parent.insert(child, pid);
                    started.push(child);
                }
            }
            "execve" if ret == "0" => {
                ran.insert(pid, argv(rest));
            }
            _ => {}
        }
    }
    let label = |mut pid: i32| {
        let mut forks = 0;
        loop {
            if let Some(argv) = ran.get(&pid) {
                return match forks {
                    0 => argv.clone(),
                    _ => format!("(fork of {argv})"),
                };
            }
            match parent.get(&pid) {
                Some(&p) => (pid, forks) = (p, forks + 1),
                None => return "?".into(),
            }
        }
    };
    started.into_iter().map(label).collect()
}

/// The child a fork returned, as strace sees it: the return value is the
/// PID in the host's namespace, followed by `/* N in strace's PID NS */`.
fn child_pid(ret: &str) -> Option<i32> {
    let outside = ret.split_once("/* ").map_or(ret, |(_, n)| n);
    outside.split_whitespace().next()?.parse().ok()
}

/// `(pid, call)` per finished system call, an `<unfinished ...>` call joined
/// with its `<... resumed>` rest.
fn calls(log: &str) -> Vec<(i32, String)> {
    let mut pending: HashMap<i32, String> = HashMap::new();
    let mut done = Vec::new();
    for line in log.lines() {
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        let call = call.trim_start();
        if let Some(head) = call.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.to_string());
        } else if let Some(tail) = call.strip_prefix("<... ") {
            let tail = tail.split_once("resumed>").map_or(tail, |(_, t)| t);
            let head = pending.remove(&pid).unwrap_or_default();
            done.push((pid, head + tail));
        } else {
            done.push((pid, call.to_string()));
        }
    }
    done
}

/// The argument list of an `execve(...)` line, as words.
fn argv(rest: &str) -> String {
    let list = rest.split_once('[').map_or("", |(_, l)| l);
    let list = list.split_once("], ").map_or(list, |(l, _)| l);
    list.split("\", \"")
        .map(|w| w.trim_matches('"'))
        .collect::<Vec<_>>()
        .join(" ")
}
