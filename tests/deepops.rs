//! NVIDIA DeepOps, a whole real Ansible project kept as it is under
//! `tests/projects/deepops/`, used from its root after its own documented
//! setup (`scripts/setup.sh` copies `config.example/` to `config/`; the
//! Galaxy roles and the kubespray submodule it fetches are vendored), with
//! no `-i`: its `ansible.cfg` names the inventory and roles.
//!
//! `tests/projects/deepops.tsv` records, for every playbook under
//! `playbooks/`, what `ansible-playbook --syntax-check` and `nodeprov
//! validate` say of it on this machine, and this test checks both against
//! it. Then one of DeepOps' playbooks is checked, applied and re-applied
//! over SSH to an isolated host.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::control::{Control, Run};
use support::sshd::{SshFleet, TestKey};
use support::{assert_machine_unchanged, machine_digest};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/projects/deepops")
}

/// The ansible-core scripts/test.sh installs: `ansible-playbook` for the
/// comparison, and the Ansible modules nodeprov falls back to.
fn ansible_bin() -> PathBuf {
    let venv = std::env::var("NODEPROV_ANSIBLE_VENV").unwrap_or("target/ansible-venv".into());
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(venv).join("bin");
    assert!(
        bin.join("ansible-playbook").exists(),
        "{} is missing: run scripts/test.sh, which installs ansible-core there",
        bin.display()
    );
    bin
}

/// A copy of the project after `scripts/setup.sh`'s step that matters here:
/// `config/` made from `config.example/`.
fn set_up(into: &Path) -> PathBuf {
    let root = into.join("deepops");
    let status = Command::new("cp")
        .arg("-a")
        .arg(source())
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let status = Command::new("cp")
        .arg("-a")
        .arg(root.join("config.example"))
        .arg(root.join("config"))
        .status()
        .unwrap();
    assert!(status.success());
    root
}

/// Every playbook under `playbooks/`, relative to the root, sorted.
fn playbooks(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![root.join("playbooks")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yml") {
                let rel = path.strip_prefix(root).unwrap();
                found.push(rel.display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// A command run from the project root with the test ansible-core first
/// on PATH, as a user who installed it would have.
fn at_root(root: &Path, program: &str) -> Command {
    let path = format!(
        "{}:{}",
        ansible_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(program);
    cmd.current_dir(root)
        .env("PATH", path)
        .env("HOME", root.join("home"))
        .env("ANSIBLE_LOCAL_TEMP", root.join("home/tmp"))
        .env_remove("ANSIBLE_CONFIG");
    cmd
}

/// `ok`, or the first error line with the project root taken out of it
/// and its location, so that the record reads the same on every machine.
fn nodeprov_verdict(root: &Path, playbook: &str) -> String {
    let out = at_root(root, BIN)
        .args(["validate", playbook])
        .output()
        .unwrap();
    if out.status.success() {
        return "ok".into();
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let mut lines = text.lines().filter(|l| !l.starts_with("warning:"));
    let relative = |text: &str| {
        text.replace(&format!("{}/", root.display()), "")
            .replace("/./", "/")
    };
    let message = relative(lines.next().unwrap_or("(no message)"));
    let at = lines
        .find_map(|l| l.trim_start().strip_prefix("--> "))
        .map(relative)
        .unwrap_or_default();
    format!("{message} at {}", at.trim_start_matches("./"))
}

fn ansible_verdict(root: &Path, playbook: &str) -> String {
    let out = at_root(
        root,
        &ansible_bin().join("ansible-playbook").display().to_string(),
    )
    .args(["--syntax-check", playbook])
    .output()
    .unwrap();
    if out.status.success() {
        "ok".into()
    } else {
        "error".into()
    }
}

/// The recorded table: playbook → (ansible-playbook, nodeprov).
fn recorded() -> Vec<(String, String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/projects/deepops.tsv");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut cols = l.splitn(3, '\t').map(String::from);
            let mut next = || cols.next().unwrap_or_default();
            (next(), next(), next())
        })
        .collect()
}

/// Each playbook's two verdicts, two playbooks at a time.
fn verdicts(root: &Path) -> Vec<(String, String, String)> {
    let books = playbooks(root);
    let slots: Vec<std::sync::Mutex<Option<(String, String)>>> =
        books.iter().map(|_| Default::default()).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(book) = books.get(i) else { break };
                let pair = (ansible_verdict(root, book), nodeprov_verdict(root, book));
                *slots[i].lock().unwrap() = Some(pair);
            });
        }
    });
    books
        .into_iter()
        .zip(slots)
        .map(|(book, slot)| {
            let (ansible, nodeprov) = slot.into_inner().unwrap().unwrap();
            (book, ansible, nodeprov)
        })
        .collect()
}

#[test]
fn every_playbook_is_judged_as_recorded_by_both_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = set_up(dir.path());
    std::fs::create_dir_all(root.join("home/tmp")).unwrap();
    let got = verdicts(&root);
    let want = recorded();
    let table = |rows: &[(String, String, String)]| {
        rows.iter()
            .map(|(b, a, n)| format!("{b}\t{a}\t{n}\n"))
            .collect::<String>()
    };
    assert_eq!(
        table(&got),
        table(&want),
        "tests/projects/deepops.tsv is stale; this machine says:\n{}",
        table(&got)
    );
    // The record is not vacuous: most of the project passes both.
    let both = got
        .iter()
        .filter(|(_, a, n)| a == "ok" && n == "ok")
        .count();
    assert!(both >= 25, "{both} playbooks pass both");
}

#[test]
fn a_deepops_playbook_checks_applies_and_converges_over_ssh() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let root = set_up(control.dir.path());
    // The documented setup's next step: name the nodes in config/inventory
    // and set the role's variables in config/group_vars.
    std::fs::write(
        root.join("config/inventory"),
        format!(
            "[all]\ngpu01 ansible_host={} ansible_ssh_private_key_file={}\n\n[slurm-node]\ngpu01\n",
            host.ip(),
            TestKey::get().path().display()
        ),
    )
    .unwrap();
    let all = root.join("config/group_vars/all.yml");
    let mut vars = std::fs::read_to_string(&all).unwrap();
    vars.push_str(
        "dns_config_servers: [192.0.2.53, 192.0.2.54]\ndns_config_search: [cluster.example]\n",
    );
    std::fs::write(&all, vars).unwrap();

    let run = |cmd: &str| {
        let mut command = control.nodeprov(&[cmd, "playbooks/generic/dns-config.yml"]);
        command.current_dir(&root).env(
            "PATH",
            format!(
                "{}:{}",
                ansible_bin().display(),
                std::env::var("PATH").unwrap()
            ),
        );
        Run::json(command)
    };
    let recap = |run: &Run, field: &str| run.doc["hosts"][0]["recap"][field].as_u64().unwrap();
    let resolv = || std::fs::read_to_string(host.host.path("/etc/resolv.conf")).unwrap_or_default();
    let resolv_before = resolv();

    let check = run("check");
    assert_eq!(recap(&check, "failed"), 0, "{check}");
    assert_eq!(check.code, 2, "drift: {check}");
    assert_eq!(recap(&check, "drift"), 2, "{check}");
    assert_eq!(resolv(), resolv_before, "check mode changed the host");

    let apply = run("apply");
    assert_eq!(apply.code, 0, "{apply}");
    assert_eq!(recap(&apply, "failed"), 0, "{apply}");
    let written = resolv();
    assert!(written.contains("nameserver 192.0.2.53"), "{written}");
    assert!(written.contains("search cluster.example"), "{written}");
    let nsswitch = std::fs::read_to_string(host.host.path("/etc/nsswitch.conf")).unwrap();
    assert!(
        nsswitch.lines().any(|l| l == "hosts: files dns"),
        "{nsswitch}"
    );

    let again = run("apply");
    assert_eq!(recap(&again, "changed"), 0, "{again}");
    assert_eq!(recap(&again, "failed"), 0, "{again}");
    drop(fleet);
    assert_machine_unchanged(&before);
}
