//! Errors at Ansible's moment, differentially: what Ansible finds only when
//! a task runs (an unknown or removed parameter, an unknown filter, a
//! Windows module, a dynamic include's file for another platform with a
//! module no collection has) or a variable is read fails only what
//! reaches it, in
//! nodeprov as in ansible-playbook (the newest ansible-core scripts/test.sh
//! installs, whose collections know the Windows modules), on one isolated
//! sshd host. `validate` lists every one and exits 1; `--strict` refuses
//! the run before any host.

mod support;

use std::process::Command;

use serde_json::Value;
use support::control::{Control, Run};
use support::newest_ansible_bin;
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

/// Dead corners of a real role: each reached only where `upgrade` or
/// `os_family` says so, and a variable nothing reads.
const PLAYBOOK: &str = r#"- hosts: all
  gather_facts: false
  vars:
    os_family: Debian
    unread: "{{ 'x' | no_such_filter }}"
  tasks:
    - name: written
      copy: {dest: /root/written, content: "hi\n"}
    - name: windows only
      win_ping:
      when: os_family == 'Windows'
    - name: upgrades only
      command: echo upgrading
      args: {warn: false}
      when: upgrade | default(false) | bool
    - name: filter on upgrades
      debug: {msg: "{{ 'a' | nope_filter }}"}
      when: upgrade | default(false) | bool
    - name: per platform
      include_tasks: "tasks/{{ os_family }}.yml"
    - name: still runs
      debug: {msg: done}
"#;

const DEBIAN: &str = "- name: debian only\n  debug: {msg: debian}\n";
const WINDOWS: &str = "- name: windows tasks\n  community.windows.win_no_such_module: {}\n";

/// The include itself: Ansible reports it as a task; nodeprov expands it
/// as it loads and reports the copy for the other platform skipped.
const INCLUDE: &str = "per platform";

/// Task name → status, as nodeprov reported them.
fn nodeprov_statuses(run: &Run) -> Vec<(String, String)> {
    run.hosts()[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["task"] != INCLUDE)
        .map(|t| {
            let status = match t["status"].as_str().unwrap() {
                // Check mode's drift is Ansible's changed.
                "drift" => "changed",
                other => other,
            };
            (t["task"].as_str().unwrap().to_string(), status.to_string())
        })
        .collect()
}

/// The same from ansible-playbook's JSON callback.
fn ansible_statuses(doc: &Value, host: &str) -> Vec<(String, String)> {
    doc["plays"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["task"]["name"] != INCLUDE)
        .filter_map(|t| {
            let r = t["hosts"].get(host)?;
            let status = if r["failed"] == true {
                "failed"
            } else if r["skipped"] == true {
                "skipped"
            } else if r["changed"] == true {
                "changed"
            } else {
                "ok"
            };
            Some((t["task"]["name"].as_str()?.to_string(), status.to_string()))
        })
        .collect()
}

#[test]
fn errors_ansible_finds_when_a_task_runs_fail_only_what_reaches_them() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &fleet.inventory("root", "ansible_python_interpreter=/usr/bin/python3"),
    );
    let playbook = control.write("site.yml", PLAYBOOK);
    control.write("tasks/Debian.yml", DEBIAN);
    let windows = control.write("tasks/Windows.yml", WINDOWS);
    let python = newest_ansible_bin().join("python");
    let nodeprov = |args: &[&str]| {
        let mut cmd = control.nodeprov(args);
        cmd.env("NODEPROV_ANSIBLE_PYTHON", &python);
        cmd
    };
    let logins = || host.log().matches("Accepted publickey").count();

    // validate lists all four, where each is written, and exits 1.
    let out = Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(["validate", &playbook, "-i", &inventory])
        .env("NODEPROV_ANSIBLE_PYTHON", &python)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for (at, what) in [
        (":5:13", "unknown filter 'no_such_filter'"),
        (":10:7", "ansible.windows.win_ping is a Windows module"),
        (
            ":14:20",
            "Unsupported parameters for (command) module: warn",
        ),
        (":17:20", "unknown filter 'nope_filter'"),
        ("", "community.windows.win_no_such_module"),
    ] {
        let file = match at {
            "" => format!("{windows}:2:3"),
            at => format!("{playbook}{at}"),
        };
        let shown = stderr
            .split("error: ")
            .any(|e| e.contains(what) && e.contains(&file));
        assert!(shown, "{what} at {at} not listed: {stderr}");
    }

    // --strict refuses them before any host is reached.
    let seen = logins();
    let strict = Run::of(nodeprov(&[
        "check", "--strict", &playbook, "-i", &inventory,
    ]));
    assert_eq!(strict.code, 1, "{strict}");
    assert!(strict.stderr.contains("nope_filter"), "{strict}");
    assert_eq!(logins(), seen, "--strict reached the host");

    // Without it, check and apply run every other task, as Ansible does.
    let (code, theirs_check) = control.ansible_playbook(&["--check", "-i", &inventory, &playbook]);
    assert_eq!(code, 0, "{theirs_check:#}");
    let check = Run::json(nodeprov(&["check", &playbook, "-i", &inventory]));
    assert_eq!(check.code, 2, "{check}");
    assert!(check.stderr.contains("5 error(s)"), "{check}");
    assert_eq!(
        nodeprov_statuses(&check),
        ansible_statuses(&theirs_check, host.name())
    );
    assert!(!host.host.path("/root/written").exists());

    let apply = Run::json(nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(apply.code, 0, "{apply}");
    assert_eq!(host.host.sh("cat /root/written"), "hi\n");
    let (code, theirs) = control.ansible_playbook(&["-i", &inventory, &playbook]);
    assert_eq!(code, 0, "{theirs:#}");
    let ours: Vec<(String, String)> = nodeprov_statuses(&apply);
    let expected = [
        ("written", "changed"),
        ("windows only", "skipped"),
        ("upgrades only", "skipped"),
        ("filter on upgrades", "skipped"),
        ("debian only", "ok"),
        ("still runs", "ok"),
    ]
    .map(|(t, s)| (t.to_string(), s.to_string()));
    assert_eq!(ours, expected);
    // Ansible's apply comes second, and finds the file written.
    let mut after = expected.clone();
    after[0].1 = "ok".into();
    assert_eq!(ansible_statuses(&theirs, host.name()), after);

    // Reached, the removed parameter fails its task in both, and the host
    // stops there.
    let args = ["-i", &inventory, &playbook, "-e", "upgrade=true"];
    let reached = Run::json(nodeprov(&[&["apply"], &args[..]].concat()));
    assert_eq!(reached.code, 4, "{reached}");
    let (code, theirs) = control.ansible_playbook(&args);
    assert_eq!(code, 2, "{theirs:#}");
    let failed = |statuses: Vec<(String, String)>| {
        statuses
            .into_iter()
            .filter(|(_, s)| s == "failed")
            .map(|(t, _)| t)
            .collect::<Vec<_>>()
    };
    assert_eq!(failed(nodeprov_statuses(&reached)), ["upgrades only"]);
    assert_eq!(
        failed(ansible_statuses(&theirs, host.name())),
        ["upgrades only"]
    );
    assert_eq!(nodeprov_statuses(&reached).len(), 3, "{reached}");
    assert_machine_unchanged(&before);
}
