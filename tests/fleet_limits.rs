//! Fleet-size limits of the controller: open files grow with `--forks`, not
//! with the number of hosts, and memory does not grow with the number of
//! hosts either.
//!
//! Inventory hosts here share a few real sshd servers (tests/support/sshd.rs)
//! by `ansible_host`: each inventory host is still its own SSH connection,
//! which is what the controller's limits are about, and hundreds of hosts
//! then cost a few servers instead of hundreds.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::control::Control;
use support::sshd::SshFleet;

/// Two plays over every host: the second one needs each host again after
/// its connection was closed.
const TWO_PLAYS: &str = "
- name: first
  hosts: all
  gather_facts: false
  tasks:
    - copy: {dest: \"/tmp/fleet-{{ inventory_hostname }}\", content: \"one\\n\"}
- name: second
  hosts: all
  gather_facts: false
  tasks:
    - copy: {dest: \"/tmp/fleet-{{ inventory_hostname }}\", content: \"two\\n\"}
";

const FD_MESSAGE: &str = "lower --forks or raise ulimit -n";

/// The operator's side with an inventory of `count` hosts spread over the
/// servers of `fleet`.
fn control(fleet: &SshFleet, count: usize) -> Control {
    let control = Control::new(fleet);
    control.write("inventory.ini", &fleet.shared_inventory(count));
    control
}

/// `nodeprov VERB` of `playbook` in JSON under `ulimit LIMIT`.
fn run(control: &Control, verb: &str, limit: &str, playbook: &str, extra: &[&str]) -> Run {
    let book = control.write("playbook.yml", playbook);
    let inventory = control.path("inventory.ini").display().to_string();
    let mut args = vec![verb, "--format", "json", "-i", &inventory];
    args.extend(extra);
    args.push(&book);
    Run::of(control.nodeprov_with_ulimit(limit, &args))
}

fn apply(control: &Control, limit: &str, playbook: &str, extra: &[&str]) -> Run {
    run(control, "apply", limit, playbook, extra)
}

/// One finished run and the peak memory of its process.
struct Run {
    code: i32,
    doc: Value,
    stdout: String,
    stderr: String,
    max_rss_kib: i64,
}

impl Run {
    /// Waits with wait4(2) for the rusage of this one child, which
    /// RUSAGE_CHILDREN would mix with every other child of the test process.
    fn of(mut cmd: Command) -> Run {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        // Reaped by wait4 below, which also tells its peak memory.
        #[allow(clippy::zombie_processes)]
        let mut child = cmd.spawn().expect("spawn nodeprov");
        let mut out_pipe = child.stdout.take().unwrap();
        let mut err_pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err_pipe.read_to_string(&mut s);
            s
        });
        let mut stdout = String::new();
        let _ = out_pipe.read_to_string(&mut stdout);
        let mut status = 0;
        // SAFETY: rusage is plain data; the pid is our own unwaited child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
        assert_eq!(pid, child.id() as i32, "wait4 failed");
        assert!(libc::WIFEXITED(status), "nodeprov killed: {status}");
        Run {
            code: libc::WEXITSTATUS(status),
            doc: serde_json::from_str(&stdout).unwrap_or(Value::Null),
            stdout,
            stderr: stderr.join().unwrap(),
            max_rss_kib: usage.ru_maxrss,
        }
    }

    fn hosts(&self) -> Vec<&Value> {
        match self.doc["hosts"].as_array() {
            Some(hosts) => hosts.iter().collect(),
            None => panic!("no JSON report: {self}"),
        }
    }

    /// (host, message) of every host report that failed or was unreachable.
    fn failures(&self) -> Vec<(String, String)> {
        self.hosts()
            .into_iter()
            .filter(|h| h["failed"] == true || !h["unreachable"].is_null())
            .map(|h| (h["host"].to_string(), h.to_string()))
            .collect()
    }

    /// Asserts that every host of every play changed what it should.
    fn assert_all_changed(&self, hosts: usize, plays: usize) {
        assert_eq!(self.code, 0, "{self}");
        let reports = self.hosts();
        assert_eq!(reports.len(), hosts * plays, "{self}");
        for r in reports {
            assert_eq!(r["recap"]["changed"], 1, "{r}");
            assert_eq!(r["round_trips"], 3, "{r}");
        }
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tail = |s: &str| s[s.len().saturating_sub(3000)..].to_string();
        write!(
            f,
            "exit {}, peak RSS {} KiB\nstdout (end): {}\nstderr (end): {}",
            self.code,
            self.max_rss_kib,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

#[test]
fn open_files_grow_with_forks_not_with_the_fleet() {
    let fleet = SshFleet::start(4);
    let hosts = 150;
    let control = control(&fleet, hosts);

    // 150 hosts, two plays, 64 files: one connection kept per host would
    // run out halfway through the first play.
    let run = apply(&control, "-n 64", TWO_PLAYS, &["--forks", "20"]);
    run.assert_all_changed(hosts, 2);

    // The soft limit is raised to the hard one: 20 workers do not fit in 16.
    let run = apply(&control, "-Sn 16", TWO_PLAYS, &["--forks", "20"]);
    run.assert_all_changed(hosts, 2);

    // Hard limit 16 and 20 workers: hosts fail, and say why.
    let run = apply(&control, "-n 16", TWO_PLAYS, &["--forks", "20"]);
    let failures = run.failures();
    assert!(
        !failures.is_empty(),
        "16 files cannot serve 20 workers: {run}"
    );
    for (host, report) in &failures {
        assert!(
            report.contains(&format!("too many open files (limit 16): {FD_MESSAGE}")),
            "{host}: {report}"
        );
        assert!(!report.contains("known_hosts"), "{host}: {report}");
    }
}

/// Size of each of the files copied to every host: as large as is still
/// compared by content (larger ones are compared by checksum).
const PAYLOAD_BYTES: usize = 1 << 20;
const PAYLOAD_FILES: usize = 3;

/// Copies every payload file to each host, under a name of its own.
const PAYLOAD_PLAY: &str = "
- name: payload
  hosts: all
  gather_facts: false
  tasks:
    - copy: {src: \"payload{{ item }}.txt\", dest: \"/tmp/payload-{{ inventory_hostname }}-{{ item }}\"}
      loop: [0, 1, 2]
";

/// Text that no encoding shrinks, `PAYLOAD_BYTES` long.
fn payload(seed: u64) -> String {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..PAYLOAD_BYTES)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if i % 64 == 63 {
                '\n'
            } else {
                char::from(b'a' + (x >> 60) as u8)
            }
        })
        .collect()
}

/// Peak memory of an apply of the payload to `hosts` hosts, `forks` at once.
fn payload_run(fleet: &SshFleet, hosts: usize, forks: &str) -> i64 {
    let control = control(fleet, hosts);
    for i in 0..PAYLOAD_FILES {
        std::fs::write(control.path(&format!("payload{i}.txt")), payload(i as u64)).unwrap();
    }
    let run = apply(&control, "-n 1024", PAYLOAD_PLAY, &["--forks", forks]);
    assert_eq!(run.code, 0, "{:?}\n{run}", run.failures());
    for r in run.hosts() {
        assert_eq!(r["recap"]["changed"], PAYLOAD_FILES, "{r}");
    }
    for server in &fleet.hosts {
        // Each server holds the files of a quarter of the hosts; remove
        // them so the next run writes again.
        for entry in std::fs::read_dir(server.host.path("/tmp")).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("payload-")
            {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    eprintln!(
        "{hosts} hosts, --forks {forks}: peak RSS {} KiB",
        run.max_rss_kib
    );
    run.max_rss_kib
}

#[test]
fn controller_memory_does_not_grow_with_the_fleet() {
    let fleet = SshFleet::start(4);
    let n = 8;
    let payload_kib = (PAYLOAD_FILES * PAYLOAD_BYTES / 1024) as i64;
    let few = payload_run(&fleet, n, "4");
    let many = payload_run(&fleet, 2 * n, "4");
    // Twice the hosts, as many at once: what a finished host leaves behind
    // is a report line, not its payload.
    let per_host_kib = 256;
    let slack_kib = 16 * 1024;
    assert!(
        many - few < n as i64 * per_host_kib + slack_kib,
        "{n} more hosts took {} KiB more (peak {few} KiB, then {many} KiB)",
        many - few
    );
    // Each host in flight holds its script and what it reads back, a small
    // multiple of the payload, never one copy per step of the way.
    let all_at_once = payload_run(&fleet, 2 * n, "16");
    let in_flight = (2 * n - 4) as i64;
    assert!(
        all_at_once - many < in_flight * 4 * payload_kib,
        "{in_flight} more hosts in flight took {} KiB more (payload {payload_kib} KiB)",
        all_at_once - many
    );
}

/// One read-only task: every host answers in its single probe round trip.
const ONE_CHECK: &str = "
- name: audit
  hosts: all
  gather_facts: false
  tasks:
    - copy: {dest: /tmp/fleet-audit, content: \"audited\\n\"}
";

#[test]
fn more_hosts_than_the_default_open_file_limit() {
    let fleet = SshFleet::start(4);
    let hosts = 1500;
    let control = control(&fleet, hosts);
    // Soft and hard limit both at the usual default, and the default forks:
    // a connection kept per host would need 1,500 descriptors.
    let run = run(&control, "check", "-n 1024", ONE_CHECK, &[]);
    assert_eq!(run.code, 2, "every host drifts, none fails: {run}");
    let reports = run.hosts();
    assert_eq!(reports.len(), hosts, "{run}");
    for r in reports {
        assert_eq!(r["recap"]["drift"], 1, "{r}");
        assert_eq!(r["round_trips"], 1, "{r}");
    }
    eprintln!("{hosts} hosts: peak RSS {} KiB", run.max_rss_kib);
    assert!(
        run.max_rss_kib < 256 * 1024,
        "{hosts} hosts took {} KiB",
        run.max_rss_kib
    );
}
