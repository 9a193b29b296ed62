//! The GPU smoke test on a host without GPUs: a clear "no NVIDIA driver"
//! failure and exit code 4, in human and JSON form, never a crash.

mod support;

use support::IsolatedHost;

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

#[test]
fn no_driver_is_a_clean_failure_with_exit_4() {
    let host = IsolatedHost::new();
    let out = host.run(&[BIN, "smoke", "-c", "local", "--tier", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("FAIL T0 nvidia_smi  no NVIDIA driver"),
        "{stdout}"
    );

    let out = host.run(&[BIN, "smoke", "-c", "local", "--format", "json"]);
    assert_eq!(out.status.code(), Some(4));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["hosts"][0]["failed"], true);
    assert_eq!(doc["hosts"][0]["checks"][0]["verdict"], "fail");
}

#[test]
fn validate_step_fails_the_host_but_keeps_task_results() {
    let host = IsolatedHost::new();
    std::fs::write(
        host.path("/root/v.yml"),
        "- hosts: localhost\n  tasks:\n    - copy: {dest: /etc/motd.d-test, content: \"gpu node\\n\"}\n  validate:\n    - name: GPUs compute\n      gpu_smoke: {tier: 0}\n",
    )
    .unwrap();
    let out = host.run(&[
        BIN,
        "apply",
        "/root/v.yml",
        "-c",
        "local",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = doc["hosts"][0]["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["status"], "changed");
    assert_eq!(tasks[1]["task"], "GPUs compute");
    assert_eq!(tasks[1]["status"], "failed");
    assert!(
        tasks[1]["message"]
            .as_str()
            .unwrap()
            .contains("no NVIDIA driver"),
        "{:#}",
        tasks[1]
    );
    assert_eq!(
        std::fs::read_to_string(host.path("/etc/motd.d-test")).unwrap(),
        "gpu node\n"
    );
}

#[test]
fn templated_tier_from_extra_vars_reaches_the_smoke_test() {
    // `-e smoke_tier=1` is a string; the shipped playbook templates it into
    // `tier:`, which must run tier 1 rather than fail as a bad parameter.
    let host = IsolatedHost::new();
    let out = host.run(&[
        BIN,
        "check",
        concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/gpu-node.yml"),
        "-c",
        "local",
        "--tags",
        "gpu",
        "-e",
        "smoke_tier=1",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The install role's version checks run whatever the tags; the smoke
    // step is the one the tag selects.
    let task = doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "GPUs answer and compute")
        .unwrap_or_else(|| panic!("{doc:#}"));
    let message = task["message"].as_str().unwrap();
    assert!(message.contains("no NVIDIA driver"), "{message}");
    assert!(!message.contains("parameter"), "{message}");
}
