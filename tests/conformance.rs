//! Ansible's own integration tests as nodeprov's conformance suite.
//!
//! ansible-core's source distribution carries `test/integration/targets/`,
//! the tests its developers hold the language and the engine to.
//! scripts/test.sh downloads the release pinned in the record below
//! (GPL-3.0: used at test time, never vendored). Each target that is a
//! role is run the way `ansible-test integration` runs it on a POSIX
//! host: one play on `testhost` (facts gathered unless its aliases say
//! `gather_facts/no`), its `setup/…` targets first, with `output_dir` set
//! and the targets folder as the roles path. The host is an isolated sshd
//! host of tests/support, one per target and tool.
//!
//! The record, `tests/conformance/record.tsv`, says for every selected
//! target whether ansible-playbook passes it here and whether nodeprov
//! passes it, and why each failing one fails. `record` (ignored; run it
//! when the pin changes) writes it by running both tools.
//! `targets_that_pass_keep_passing` runs nodeprov on the ones the record
//! says it passes, and fails on any that no longer does.
//!
//! Selected are the role targets `ansible-test` runs by default on a
//! POSIX host in its container: in a `shippable/posix/` group, not
//! destructive (nothing outside the test's own folders is changed), not
//! disabled, unsupported, unstable or hidden (the `setup_…` helpers), and
//! needing no cloud, no httptester, no privileged container and no
//! skipping in docker. Each host has a /usr of its own (an overlay) and
//! package state of its own with nothing to install from, so a target
//! that would install a package fails for both tools instead of changing
//! this machine.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use support::control::Control;
use support::sshd::{SshFleet, SshHost};
use support::{assert_machine_unchanged, machine_digest, newest_ansible_bin, IsolatedHost};

const RECORD: &str = support::CONFORMANCE_RECORD;

/// A target that runs longer than this has hung.
const TARGET_LIMIT: Duration = Duration::from_secs(300);

/// How many targets run at once.
const AT_ONCE: usize = 4;

/// Aliases that keep a target out of ansible-test's default run in its
/// own container, or out of what an isolated host can give.
const LEFT_OUT: [&str; 10] = [
    "destructive",
    "disabled",
    "unsupported",
    "unstable",
    "hidden",
    "cloud/",
    "needs/httptester",
    "needs/privileged",
    "needs/ssh",
    "skip/docker",
];

/// The alias of the targets ansible-test's CI runs on POSIX hosts.
const POSIX: &str = "shippable/posix/";

struct Target {
    name: String,
    gather_facts: bool,
    /// `setup/always/…` and `setup/once/…` targets, run before it.
    setup: Vec<String>,
}

/// What one tool made of one target.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Pass,
    Fail(String),
}

impl Outcome {
    fn column(&self) -> (&str, &str) {
        match self {
            Outcome::Pass => ("pass", ""),
            Outcome::Fail(why) => ("fail", why),
        }
    }
}

#[derive(Clone, Copy)]
enum Tool {
    Ansible,
    Nodeprov,
}

/// The role targets selected (see the top of this file), by name.
fn selected(dir: &Path) -> Vec<Target> {
    let mut targets = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.join("runme.sh").exists() || !path.join("tasks").is_dir() {
            continue;
        }
        let aliases: Vec<String> = fs::read_to_string(path.join("aliases"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split('#').next())
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        let left_out = aliases
            .iter()
            .any(|a| LEFT_OUT.iter().any(|m| a.starts_with(m)))
            || !aliases.iter().any(|a| a.starts_with(POSIX));
        if left_out || name.starts_with("setup_") || name.starts_with("prepare_") {
            continue;
        }
        targets.push(Target {
            gather_facts: !aliases.iter().any(|a| a == "gather_facts/no"),
            setup: aliases
                .iter()
                .filter_map(|a| {
                    a.strip_prefix("setup/always/")
                        .or_else(|| a.strip_prefix("setup/once/"))
                })
                .map(str::to_string)
                .collect(),
            name,
        });
    }
    targets.sort_by(|a, b| a.name.cmp(&b.name));
    targets
}

/// The playbook ansible-test writes for `target`, its setup targets first.
fn playbook(target: &Target, output_dir: &Path) -> String {
    let play = |role: &str, gather: bool| {
        format!(
            "- hosts: testhost\n  gather_facts: {gather}\n  vars:\n    output_dir: {}\n  roles:\n    - {role}\n",
            output_dir.display()
        )
    };
    let mut text: String = target.setup.iter().map(|s| play(s, false)).collect();
    text += &play(&target.name, target.gather_facts);
    text
}

/// Runs `target` with `tool` on a fresh isolated host.
fn run(target: &Target, dir: &Path, tool: Tool) -> Outcome {
    let fleet = SshFleet {
        hosts: vec![next_host()],
    };
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &format!(
            "testhost ansible_host={} ansible_user=root ansible_ssh_private_key_file={} ansible_python_interpreter=/usr/bin/python3\n",
            host.ip(),
            host.key_path().display()
        ),
    );
    // Shared by the controller and the host, as ansible-test's is when
    // both are one machine: /var/tmp is not among a host's private folders.
    let output_dir = tempfile::Builder::new()
        .prefix("nodeprov-conformance-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let book = control.write("play.yml", &playbook(target, output_dir.path()));
    let home = tempfile::tempdir().unwrap();
    let mut cmd = match tool {
        Tool::Ansible => control.ansible_playbook_command(home.path(), &["-i", &inventory, &book]),
        Tool::Nodeprov => {
            let mut cmd = control.nodeprov(&["apply", &book, "-i", &inventory, "--format", "json"]);
            cmd.current_dir(control.path("")).env(
                "NODEPROV_ANSIBLE_PYTHON",
                newest_ansible_bin().join("python"),
            );
            cmd
        }
    };
    // ansible-test gives the controller the target's output folder.
    cmd.env("ANSIBLE_ROLES_PATH", dir)
        .env("ANSIBLE_FORCE_HANDLERS", "true")
        .env("OUTPUT_DIR", output_dir.path());
    let Some(out) = finish_within(cmd, TARGET_LIMIT) else {
        return Outcome::Fail(format!("ran past {}s", TARGET_LIMIT.as_secs()));
    };
    keep_log(target, tool, &out);
    if out.status.success() {
        return Outcome::Pass;
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let why = match tool {
        Tool::Ansible => ansible_failure(&doc),
        Tool::Nodeprov => nodeprov_failure(&doc),
    };
    let why = why.unwrap_or_else(|| refusal(&String::from_utf8_lossy(&out.stderr)));
    Outcome::Fail(one_line(&why.replace(&format!("{}/", dir.display()), "")))
}

/// Where each run's output is kept, to read why a target failed.
fn log_dir(tool: Tool) -> PathBuf {
    let name = match tool {
        Tool::Ansible => "ansible-playbook",
        Tool::Nodeprov => "nodeprov",
    };
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/conformance")
        .join(name)
}

fn keep_log(target: &Target, tool: Tool, out: &Output) {
    let dir = log_dir(tool);
    fs::create_dir_all(&dir).unwrap();
    let mut text = out.stdout.clone();
    text.extend_from_slice(b"\n--- stderr\n");
    text.extend_from_slice(&out.stderr);
    fs::write(dir.join(format!("{}.log", target.name)), text).unwrap();
}

/// A run refused before any task: its first error and where it points.
fn refusal(stderr: &str) -> String {
    let mut lines = stderr.lines();
    let Some(error) = lines.find(|l| l.starts_with("error")) else {
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return last.unwrap_or("no output").to_string();
    };
    let at = lines
        .next()
        .and_then(|l| l.trim().strip_prefix("--> "))
        .map(|at| format!(" ({at})"))
        .unwrap_or_default();
    format!("{error}{at}")
}

/// A host on the next free address of 127.0.1.x and then 127.0.2.x: the
/// suite starts more hosts than one /24 holds.
fn next_host() -> SshHost {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let (c, d) = (1 + n / 250, 1 + n % 250);
    let ip = std::net::Ipv4Addr::new(127, 0, c as u8, d as u8);
    SshHost::start_as(ip, IsolatedHost::apt().with_own_usr())
}

/// The output of `cmd` (in a process group of its own), or `None` when it
/// ran past `limit` and was killed with its children.
fn finish_within(mut cmd: Command, limit: Duration) -> Option<Output> {
    let child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let group = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.expect("wait")),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            None
        }
    }
}

/// The first failed task in ansible-playbook's JSON document, and its message.
fn ansible_failure(doc: &Value) -> Option<String> {
    doc["plays"].as_array()?.iter().find_map(|play| {
        play["tasks"].as_array()?.iter().find_map(|task| {
            let result = task["hosts"].as_object()?.values().next()?;
            let failed = result["failed"] == true || result["unreachable"] == true;
            (failed && result["ignore_errors"] != true).then(|| {
                let msg = result["msg"].as_str().unwrap_or("");
                format!("{}: {msg}", task["task"]["name"].as_str().unwrap_or("?"))
            })
        })
    })
}

/// The first failed task in nodeprov's JSON report (one entry per host
/// and play), and its message.
fn nodeprov_failure(doc: &Value) -> Option<String> {
    doc["hosts"].as_array()?.iter().find_map(|host| {
        if let Some(msg) = host["unreachable"].as_str() {
            return Some(format!("unreachable: {msg}"));
        }
        host["tasks"].as_array()?.iter().find_map(|task| {
            (task["status"] == "failed" && task["ignored"] != true).then(|| {
                let msg = task["message"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| task["notes"].as_array().map(|n| format!("{n:?}")))
                    .unwrap_or_default();
                format!("{}: {msg}", task["task"].as_str().unwrap_or("?"))
            })
        })
    })
}

/// `text` on one line of a TSV cell, cut to a readable length.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// Runs the targets named in `NODEPROV_CONFORMANCE_TARGETS` (comma
/// separated; unset: every one ansible-playbook passes) with nodeprov,
/// printing each outcome; its output is kept in target/conformance/nodeprov/.
#[test]
#[ignore]
fn some() {
    let dir = support::conformance_targets();
    let record = read_record();
    let wanted = std::env::var("NODEPROV_CONFORMANCE_TARGETS").ok();
    let targets = selected(&dir);
    let some: Vec<&Target> = targets
        .iter()
        .filter(|t| match &wanted {
            Some(w) => w.split(',').any(|w| w == t.name),
            None => record
                .get(&t.name)
                .is_some_and(|r| r.ansible == Outcome::Pass),
        })
        .collect();
    let outcomes = run_all(&some, &dir, Tool::Nodeprov);
    for (t, o) in some.iter().zip(&outcomes) {
        println!("{}: {o:?}", t.name);
    }
    let passed = outcomes.iter().filter(|o| **o == Outcome::Pass).count();
    println!("nodeprov passes {passed} of {}", some.len());
}

/// Runs `targets` with `tool`, `AT_ONCE` at a time.
fn run_all(targets: &[&Target], dir: &Path, tool: Tool) -> Vec<Outcome> {
    let mut outcomes = Vec::with_capacity(targets.len());
    for chunk in targets.chunks(AT_ONCE) {
        std::thread::scope(|s| {
            let running: Vec<_> = chunk
                .iter()
                .map(|t| s.spawn(move || run(t, dir, tool)))
                .collect();
            outcomes.extend(running.into_iter().map(|r| r.join().unwrap()));
        });
    }
    outcomes
}

/// One target's row of the record.
struct Row {
    ansible: Outcome,
    nodeprov: Outcome,
}

/// The record's rows by target: target, ansible-playbook, nodeprov, why
/// nodeprov fails, why ansible-playbook fails.
fn read_record() -> BTreeMap<String, Row> {
    let outcome = |result: &str, why: &str| match result {
        "pass" => Outcome::Pass,
        _ => Outcome::Fail(why.to_string()),
    };
    fs::read_to_string(RECORD)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            assert!(cells.len() == 5, "malformed record row: {l}");
            let row = Row {
                ansible: outcome(cells[1], cells[4]),
                nodeprov: outcome(cells[2], cells[3]),
            };
            (cells[0].to_string(), row)
        })
        .collect()
}

#[test]
fn the_record_lists_every_selected_target() {
    let dir = support::conformance_targets();
    let record = read_record();
    let names: Vec<String> = selected(&dir).into_iter().map(|t| t.name).collect();
    let recorded: Vec<String> = record.keys().cloned().collect();
    assert_eq!(
        recorded, names,
        "the record is not of this selection: rerun `record`"
    );
    // Not vacuous: the selection holds the language's own targets.
    for name in ["loops", "lookup_sequence", "failed_when"] {
        assert!(names.iter().any(|n| n == name), "{name} not selected");
    }
}

#[test]
fn targets_that_pass_keep_passing() {
    let before = machine_digest();
    let dir = support::conformance_targets();
    let record = read_record();
    let targets = selected(&dir);
    let passing: Vec<&Target> = targets
        .iter()
        .filter(|t| {
            record
                .get(&t.name)
                .is_some_and(|r| r.nodeprov == Outcome::Pass)
        })
        .collect();
    assert!(!passing.is_empty(), "the record has no passing target");
    let outcomes = run_all(&passing, &dir, Tool::Nodeprov);
    let stopped: Vec<String> = passing
        .iter()
        .zip(&outcomes)
        .filter_map(|(t, o)| match o {
            Outcome::Fail(why) => Some(format!("{}: {why}", t.name)),
            Outcome::Pass => None,
        })
        .collect();
    assert!(
        stopped.is_empty(),
        "targets that passed no longer pass:\n{}",
        stopped.join("\n")
    );
    assert_machine_unchanged(&before);
}

/// Writes the record: nodeprov on every selected target, and
/// ansible-playbook on those the record does not hold yet, or on all with
/// `NODEPROV_CONFORMANCE_ANSIBLE=1` (when the pinned release changes):
/// `cargo test --test conformance -- --ignored record --nocapture`.
#[test]
#[ignore]
fn record() {
    let before = machine_digest();
    let dir = support::conformance_targets();
    let targets = selected(&dir);
    let recorded = read_record();
    let again = std::env::var("NODEPROV_CONFORMANCE_ANSIBLE").is_ok_and(|v| v == "1");
    let unknown: Vec<&Target> = (targets.iter())
        .filter(|t| again || !recorded.contains_key(&t.name))
        .collect();
    let mut fresh = unknown
        .iter()
        .map(|t| t.name.clone())
        .zip(run_all(&unknown, &dir, Tool::Ansible))
        .collect::<BTreeMap<_, _>>();
    let theirs: Vec<Outcome> = (targets.iter())
        .map(|t| match fresh.remove(&t.name) {
            Some(o) => o,
            None => recorded[&t.name].ansible.clone(),
        })
        .collect();
    let all: Vec<&Target> = targets.iter().collect();
    let ours = run_all(&all, &dir, Tool::Nodeprov);
    let passed_by_ansible = theirs.iter().filter(|o| **o == Outcome::Pass).count();
    let passed_by_both = theirs
        .iter()
        .zip(&ours)
        .filter(|(a, n)| **a == Outcome::Pass && **n == Outcome::Pass)
        .count();
    let summary = format!(
        "nodeprov passes {passed_by_both} of the {passed_by_ansible} targets ansible-playbook passes here ({}%), of {} selected",
        passed_by_both * 100 / passed_by_ansible.max(1),
        targets.len()
    );
    let mut text = format!(
        "# ansible-core {}\n\
         # Role targets of its test/integration/targets, run as ansible-test runs them (tests/conformance.rs).\n\
         # {summary}.\n\
         # target\tansible-playbook\tnodeprov\twhy nodeprov fails\twhy ansible-playbook fails\n",
        support::pinned_release()
    );
    for ((t, a), n) in targets.iter().zip(&theirs).zip(&ours) {
        let (a, why_a) = a.column();
        let (n, why_n) = n.column();
        text += &format!("{}\t{a}\t{n}\t{why_n}\t{why_a}\n", t.name);
    }
    fs::write(RECORD, text).unwrap();
    println!("{summary}");
    assert_machine_unchanged(&before);
}
