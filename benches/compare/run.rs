//! Runs a tool's processes and reads what they cost the controller: wall
//! time, and from wait4(2) the CPU time and peak memory of each process
//! together with the children it waited for (Ansible's forks, every tool's
//! `ssh` clients), and of the `ssh` clients it left running (Ansible's
//! ControlPersist masters), which are ended after the run.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

/// What one process printed and how it ended.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Processes started together and waited for together.
pub struct Measured {
    pub secs: f64,
    pub finished: Vec<Finished>,
    /// CPU seconds, user + system, of all of them and their waited-for
    /// children.
    pub cpu_s: f64,
    /// The largest peak resident set of any single process among them, KiB
    /// (wait4 reports the largest, not the sum).
    pub peak_rss_kib: u64,
}

/// Starts every command at once and waits for all of them.
pub fn run_all(commands: Vec<Command>) -> Measured {
    let started = Instant::now();
    let running: Vec<_> = commands
        .into_iter()
        .map(|mut cmd| {
            let mut child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn tool");
            let out = drain(child.stdout.take().expect("stdout"));
            let err = drain(child.stderr.take().expect("stderr"));
            (child, out, err)
        })
        .collect();
    let mut measured = Measured {
        secs: 0.0,
        finished: Vec::new(),
        cpu_s: 0.0,
        peak_rss_kib: 0,
    };
    for (child, out, err) in running {
        let (status, usage) = wait4(child.id());
        measured.cpu_s += cpu_s(&usage);
        measured.peak_rss_kib = measured.peak_rss_kib.max(usage.ru_maxrss as u64);
        measured.finished.push(Finished {
            status,
            stdout: out.join().expect("stdout reader"),
            stderr: err.join().expect("stderr reader"),
        });
    }
    measured.secs = started.elapsed().as_secs_f64();
    end_leftovers(&mut measured);
    measured
}

/// Makes this process the reaper of its orphaned descendants: a helper a
/// tool leaves running in the background (an ssh ControlPersist master)
/// becomes its child, so its cost can be read and its connection ended.
pub fn adopt_orphans() {
    // SAFETY: prctl with an integer flag changes only this process.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(rc, 0, "prctl: {}", std::io::Error::last_os_error());
}

/// Ends the `ssh` clients a run left behind and adds their cost: otherwise
/// their sessions would go on on the hosts and be counted in a later run.
fn end_leftovers(measured: &mut Measured) {
    for pid in children_named("ssh") {
        // SAFETY: SIGTERM to an orphaned ssh client this process adopted.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let (_, usage) = wait4(pid);
        measured.cpu_s += cpu_s(&usage);
        measured.peak_rss_kib = measured.peak_rss_kib.max(usage.ru_maxrss as u64);
    }
}

/// This process's children whose command name is `name`.
fn children_named(name: &str) -> Vec<u32> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("read /proc/self/task");
    let listed: String = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .collect::<Vec<_>>()
        .join(" ");
    listed
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            comm.trim_end() == name
        })
        .collect()
}

fn cpu_s(usage: &libc::rusage) -> f64 {
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Reads a pipe to its end on a thread of its own, so a tool that fills
/// one pipe while the other is being read cannot block.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `pid` (a child std started and nobody else waits for) and
/// returns its status and resource usage.
fn wait4(pid: u32) -> (ExitStatus, libc::rusage) {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 only writes the two out
    // parameters it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid as i32, "wait4: {}", std::io::Error::last_os_error());
    (ExitStatus::from_raw(status), usage)
}
