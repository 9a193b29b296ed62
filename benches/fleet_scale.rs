//! What the controller costs as the fleet grows to ten thousand hosts.
//!
//! A compliance check (the sysctl scenario in check mode, which changes
//! nothing) of 1,000, 5,000 and 10,000 inventory hosts, by one controller
//! and by 8 `--shard I/8` controllers at once whose JSON reports
//! `nodeprov report merge` then joins. Per run: wall time, controller CPU
//! per host (wait4 of each controller), the largest controller's peak RSS
//! and the most files one controller held open (its `/proc/PID/fd`,
//! sampled).
//!
//! Each controller is started by GNU time (`/usr/bin/time`), which reads
//! its peak RSS. wait4's own `ru_maxrss` would not do: a process this one
//! starts by posix_spawn (vfork) inherits this process's high-water mark
//! at exec, and this one has read the earlier runs' fleet-sized reports by
//! then, so every later controller would seem to grow with the fleet.
//!
//! Every host must come back checked, with the drift a fresh host has
//! (its sysctls), or the cell says failed.
//!
//! The inventory hosts share a few real namespaced sshd servers
//! (tests/support/sshd.rs) by `ansible_host`, as tests/fleet_limits.rs
//! does: each inventory host is still its own SSH connection, login and
//! probe script, so the controller does all of a real fleet's work; only
//! the targets are fewer, and their cost per host is measured by
//! `benches/compare.rs` instead.
//!
//! `cargo bench --bench fleet_scale`. NODEPROV_SCALE_SIZES (default
//! `1000,5000,10000`), NODEPROV_SCALE_CONTROLLERS (default `1,8`: one
//! controller, then that many shards) and NODEPROV_SCALE_SERVERS (default
//! 8) size it; the tables are printed and written to
//! NODEPROV_SCALE_RESULTS if set. Needs root, like the SSH tests, and GNU
//! time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::control::Control;
use support::sshd::SshFleet;

const PLAY: &str = include_str!("scenarios/sysctl/nodeprov.yml");

/// nodeprov's default `--forks`, shared out among the shards.
const FORKS: usize = 50;

fn main() {
    let sizes = list("NODEPROV_SCALE_SIZES", &[1000, 5000, 10000]);
    let servers = list("NODEPROV_SCALE_SERVERS", &[8])[0];
    let ways = list("NODEPROV_SCALE_CONTROLLERS", &[1, 8]);
    let fleet = SshFleet::start_at(201, servers as u8);
    let mut table = String::from(
        "| hosts | controllers | wall s | controller CPU ms/host | peak RSS MiB (largest) | open files (most) | merge s |\n\
         |---:|---|---:|---:|---:|---:|---:|\n",
    );
    for &size in &sizes {
        let control = control(&fleet, size);
        let playbook = control.write("check.yml", PLAY);
        for &controllers in &ways {
            let line = match controllers {
                1 => run_all(&control, &playbook, &[None], size).row(size, "1", None),
                n => {
                    let sharded = run_all(&control, &playbook, &shards(n), size);
                    let merged = sharded.ok.then(|| merge(&sharded.reports, size));
                    sharded.row(size, &format!("{n} shards"), merged)
                }
            };
            eprintln!("{line}");
            table.push_str(&line);
            table.push('\n');
        }
    }
    println!("{table}");
    if let Ok(path) = std::env::var("NODEPROV_SCALE_RESULTS") {
        std::fs::write(path, &table).expect("write the results");
    }
}

fn list(name: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(name) {
        Ok(v) => v
            .split(',')
            .map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{name}: {v}")))
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn shards(n: usize) -> Vec<Option<String>> {
    (1..=n).map(|i| Some(format!("{i}/{n}"))).collect()
}

/// An inventory of `count` hosts dealt over the fleet's servers.
fn control(fleet: &SshFleet, count: usize) -> Control {
    let control = Control::new(fleet);
    control.write("inventory.ini", &fleet.shared_inventory(count));
    control
}

/// What the controllers of one run cost, together.
struct Cost {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: i64,
    max_fds: usize,
    reports: Vec<String>,
    ok: bool,
}

impl Cost {
    fn row(&self, size: usize, label: &str, merge: Option<Duration>) -> String {
        if !self.ok {
            return format!("| {size} | {label} | failed | | | | |");
        }
        format!(
            "| {size} | {label} | {:.1} | {:.2} | {:.0} | {} | {} |",
            self.wall.as_secs_f64(),
            self.cpu.as_secs_f64() * 1000.0 / size as f64,
            self.max_rss_kib as f64 / 1024.0,
            self.max_fds,
            merge.map_or("".into(), |m| format!("{:.2}", m.as_secs_f64())),
        )
    }
}

/// Runs one controller per entry of `shards` at once, each checking its
/// part of the inventory, and waits for them all.
fn run_all(control: &Control, playbook: &str, shards: &[Option<String>], size: usize) -> Cost {
    let inventory = control.path("inventory.ini").display().to_string();
    // The shards share this machine's few servers and cores, which one
    // controller's 50 connections at a time already keep busy: together
    // they open as many, as shards on their own machines would each open
    // to their own part of a real fleet.
    let forks = (FORKS / shards.len()).max(1).to_string();
    let started = Instant::now();
    let runs: Vec<_> = shards
        .iter()
        .enumerate()
        .map(|(i, shard)| {
            let mut args = vec!["check", "--format", "json", "-i", &inventory, "-f", &forks];
            if let Some(s) = shard {
                args.extend(["--shard", s]);
            }
            args.push(playbook);
            let rss = control.path(&format!("rss-{i}"));
            let rss = rss.display().to_string();
            let mut timed = vec!["-f", "%M", "-o", &rss, env!("CARGO_BIN_EXE_nodeprov")];
            timed.extend(args);
            let mut cmd = control.nodeprov_at("/usr/bin/time", &timed);
            let report = control.path(&format!("report-{i}.json"));
            cmd.stdout(std::fs::File::create(&report).unwrap())
                .stderr(Stdio::piped());
            (cmd, rss, report.display().to_string())
        })
        .map(|(cmd, rss, report)| (Controller::start(cmd, rss), report))
        .collect();
    let mut cost = Cost {
        wall: Duration::ZERO,
        cpu: Duration::ZERO,
        max_rss_kib: 0,
        max_fds: 0,
        reports: Vec::new(),
        ok: true,
    };
    let mut checked = 0;
    for (controller, report) in runs {
        let done = controller.wait();
        cost.cpu += done.cpu;
        cost.max_rss_kib = cost.max_rss_kib.max(done.max_rss_kib);
        cost.max_fds = cost.max_fds.max(done.max_fds);
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap_or(Value::Null);
        let hosts = doc["hosts"].as_array().cloned().unwrap_or_default();
        let checked_ok = hosts
            .iter()
            .filter(|h| h["failed"] != true && h["unreachable"].is_null())
            .filter(|h| h["recap"]["drift"].as_u64() > Some(0))
            .count();
        // The hosts keep the sysctls a fresh host has: every one drifts
        // (exit 2), and none may fail or be unreachable.
        if done.code != 2 || checked_ok != hosts.len() {
            let bad = hosts
                .iter()
                .find(|h| h["failed"] == true || !h["unreachable"].is_null());
            let why = bad.map(|h| h.to_string()).unwrap_or_default();
            eprintln!("first host that failed: {}", &why[..why.len().min(600)]);
            eprintln!(
                "a controller exited {} with {} of {} hosts checked, each with its drift: {}",
                done.code,
                checked_ok,
                hosts.len(),
                done.stderr.lines().last().unwrap_or_default()
            );
            cost.ok = false;
        }
        checked += hosts.len();
        cost.reports.push(report);
    }
    cost.wall = started.elapsed();
    if checked != size {
        eprintln!("{checked} hosts reported of {size}");
        cost.ok = false;
    }
    cost
}

/// `nodeprov report merge` of the shards' reports: its wall time, once it
/// has checked that the merged report holds every host.
fn merge(reports: &[String], size: usize) -> Duration {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(["report", "merge", "--format", "json"])
        .args(reports)
        .output()
        .expect("run report merge");
    let took = started.elapsed();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let hosts = doc["hosts"].as_array().map_or(0, Vec::len);
    assert_eq!(
        hosts,
        size,
        "merged report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// One controller process under GNU time, its open files sampled while
/// it runs.
struct Controller {
    child: std::process::Child,
    /// Where GNU time writes the controller's peak RSS in KiB.
    rss: String,
    stderr: std::thread::JoinHandle<String>,
    sampler: std::thread::JoinHandle<()>,
    most_fds: Arc<AtomicUsize>,
    done: Arc<AtomicBool>,
}

struct Finished {
    code: i32,
    cpu: Duration,
    max_rss_kib: i64,
    max_fds: usize,
    stderr: String,
}

impl Controller {
    fn start(mut cmd: Command, rss: String) -> Controller {
        // Reaped by wait4 in `wait`, which also tells its CPU and memory.
        #[allow(clippy::zombie_processes)]
        let mut child = cmd.spawn().expect("spawn nodeprov");
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
            s
        });
        let most_fds = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        // GNU time's one child is the controller.
        let children = format!("/proc/{0}/task/{0}/children", child.id());
        let (most, stop) = (most_fds.clone(), done.clone());
        let sampler = std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let pid = std::fs::read_to_string(&children).unwrap_or_default();
                if let Some(pid) = pid.split_whitespace().next() {
                    if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
                        most.fetch_max(entries.count(), Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        Controller {
            child,
            rss,
            stderr,
            sampler,
            most_fds,
            done,
        }
    }

    fn wait(self) -> Finished {
        let mut status = 0;
        // SAFETY: rusage is plain data; the pid is our own unwaited child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(self.child.id() as i32, &mut status, 0, &mut usage) };
        assert_eq!(pid, self.child.id() as i32, "wait4 failed");
        self.done.store(true, Ordering::Relaxed);
        self.sampler.join().unwrap();
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Finished {
            code: if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            },
            // GNU time's and the controller's together: time's own is
            // next to nothing.
            cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
            // Its last line: a controller that exits non-zero (2, drift)
            // makes it say so first.
            max_rss_kib: std::fs::read_to_string(&self.rss)
                .ok()
                .and_then(|out| out.lines().last()?.trim().parse().ok())
                .unwrap_or_else(|| panic!("GNU time wrote no peak RSS to {}", self.rss)),
            max_fds: self.most_fds.load(Ordering::Relaxed),
            stderr: self.stderr.join().unwrap(),
        }
    }
}
