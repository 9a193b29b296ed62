//! `sysctl`'s `tuned_profile` through the real binary and the real
//! `tuned-adm` inside an isolated host laid out as EL ships tuned (the
//! profiles in /usr/lib/tuned, `virtual-guest` active, `reapply_sysctl = 0`
//! so the profile beats sysctl files). No tuned daemon runs there, so
//! `tuned-adm` only records the profile; its settings reach the kernel
//! through the task's own live step, and at boot through the profile.

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const PLAYBOOK: &str = "/root/tuned.yml";

fn run(host: &IsolatedHost, cmd: &str) -> (i32, serde_json::Value) {
    run_json(
        host,
        &[BIN, cmd, PLAYBOOK, "-c", "local", "--format", "json"],
    )
}

fn changes(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["hosts"][0]["tasks"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["subject"].as_str().unwrap().to_string(),
                c["evidence"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_selected_profile_is_switched_to_with_tuned_adm() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/etc/tuned")).unwrap();
    std::fs::write(host.path("/etc/tuned/active_profile"), "virtual-guest\n").unwrap();
    std::fs::write(
        host.path("/etc/tuned/tuned-main.conf"),
        "daemon = 1\nreapply_sysctl = 0\n",
    )
    .unwrap();
    std::fs::write(
        host.path(PLAYBOOK),
        "- hosts: all\n  tasks:\n    - name: swappiness under a throughput profile\n      sysctl:\n        settings: {vm.swappiness: 10}\n        file: /etc/sysctl.d/90-gpu-node.conf\n        tuned_profile: throughput-performance\n",
    )
    .unwrap();

    let (code, check) = run(&host, "check");
    assert_eq!(code, 2, "{check:#}");
    let found = changes(&check);
    let subjects: Vec<&str> = found.iter().map(|(s, _)| s.as_str()).collect();
    assert!(subjects.contains(&"tuned profile"), "{check:#}");
    let boot = found
        .iter()
        .find(|(s, _)| s == "vm.swappiness at boot")
        .unwrap_or_else(|| panic!("{check:#}"));
    assert!(
        boot.1
            .contains("tuned profile 'virtual-guest' sets 30 and wins over files"),
        "the shipped virtual-guest profile: {}",
        boot.1
    );

    let (code, applied) = run(&host, "apply");
    assert_eq!(code, 0, "{applied:#}");
    let active = std::fs::read_to_string(host.path("/etc/tuned/active_profile")).unwrap();
    assert_eq!(active.trim(), "throughput-performance");
    assert_eq!(host.sysctl("vm.swappiness"), "10");

    let (code, again) = run(&host, "apply");
    assert_eq!(code, 0);
    assert_eq!(again["hosts"][0]["recap"]["changed"], 0, "{again:#}");
    let (code, clean) = run(&host, "check");
    assert_eq!(code, 0, "{clean:#}");
    let notes = clean["hosts"][0]["tasks"][0]["notes"].to_string();
    assert!(
        notes.contains("tuned profile 'throughput-performance' sets 10"),
        "{notes}"
    );
    assert_machine_unchanged(&before);
}
