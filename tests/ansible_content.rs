//! Ansible's structure (roles with dependencies, defaults, vars, templates
//! and handlers; blocks; templated includes; set_fact, stat, assert,
//! include_vars) through the real binary with `-c local` inside an
//! isolated host: it applies, converges, and a no-op rerun is one round
//! trip, as a flat playbook is.

mod support;

use std::path::Path;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const TREE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/roles");

/// A host with the fixture tree copied to /root/play.
fn host_with_tree() -> IsolatedHost {
    let host = IsolatedHost::new();
    copy_tree(Path::new(TREE), &host.path("/root/play"));
    host
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn run(host: &IsolatedHost, cmd: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut argv = vec![
        BIN,
        cmd,
        "/root/play/site.yml",
        "-c",
        "local",
        "--format",
        "json",
    ];
    argv.extend_from_slice(extra);
    run_json(host, &argv)
}

fn tasks(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["task"].as_str().unwrap_or_default().to_string();
            (name, t["status"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

fn recap(doc: &serde_json::Value, field: &str) -> u64 {
    doc["hosts"][0]["recap"][field].as_u64().unwrap()
}

#[test]
fn a_role_based_playbook_applies_converges_and_costs_one_round_trip_when_compliant() {
    let before = machine_digest();
    let host = host_with_tree();
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap_or_default();

    let (code, first) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(recap(&first, "failed"), 0, "{:?}", tasks(&first));
    // Role parameters outrank the role's defaults; vars/ and role_name are set.
    let tuning = read("/etc/node.d/tuning.conf");
    assert!(
        tuning.contains("\nswappiness=10\nrole=gpu_tuning\n"),
        "{tuning}"
    );
    assert!(tuning.starts_with("#\n# Ansible managed\n"), "{tuning}");
    assert_eq!(
        read("/etc/node.d/reloaded"),
        "reloaded\n",
        "the role's handler ran"
    );
    // The include named by a fact: this host is Debian-family.
    assert_eq!(read("/etc/node.d/os"), "debian\n");
    let names: Vec<String> = tasks(&first).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names.iter().position(|n| n == "node folder"),
        Some(1),
        "the dependency runs before the role, after pre_tasks: {names:?}"
    );
    // The other file the include could name was never included, as in
    // Ansible: neither run nor reported skipped.
    assert!(names.contains(&"Debian marker".to_string()), "{names:?}");
    assert!(!names.contains(&"RedHat marker".to_string()), "{names:?}");

    let (code, second) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(recap(&second, "changed"), 0, "{:?}", tasks(&second));
    assert_eq!(second["hosts"][0]["round_trips"], 1, "{second:#}");

    let (code, check) = run(&host, "check", &[]);
    assert_eq!((code, recap(&check, "drift")), (0, 0), "{check:#}");
    // An inventory or -e value beats the role default and shows as drift.
    let (code, drift) = run(&host, "check", &["-e", "gpu_swappiness=30"]);
    assert_ne!(code, 0, "{drift:#}");
    let drifted: Vec<(String, String)> = tasks(&drift)
        .into_iter()
        .filter(|(_, s)| s == "drift")
        .collect();
    assert_eq!(drifted, [("tuning file".to_string(), "drift".to_string())]);
    assert_machine_unchanged(&before);
}

#[test]
fn a_failing_assert_stops_the_host_with_its_message() {
    let host = host_with_tree();
    let (code, doc) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{doc:#}");
    std::fs::remove_file(host.path("/etc/node.d/tuning.conf")).unwrap();
    // With the task that writes it, check predicts the file and the assert
    // holds; without it, stat reads the file as missing.
    let (_, doc) = run(&host, "check", &[]);
    assert!(
        !failures(&doc).iter().any(|m| m.contains("Assertion")),
        "{doc:#}"
    );
    let (code, doc) = run(&host, "check", &["--skip-tags", "tuning"]);
    assert_ne!(code, 0, "{doc:#}");
    assert_eq!(
        failures(&doc),
        ["Assertion failed: conf.stat.exists"],
        "{doc:#}"
    );
}

fn failures(doc: &serde_json::Value) -> Vec<String> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "failed")
        .map(|t| t["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `no_log` hides a task's values from every output: the human report,
/// JSON, JUnit and HTML, diffs included.
#[test]
fn no_log_values_reach_no_report() {
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/root/play")).unwrap();
    std::fs::write(
        host.path("/root/play/secret.yml"),
        "- hosts: all\n  tasks:\n    - name: token file\n      copy: {content: \"token=s3cr3t-value\\n\", dest: /etc/np-token}\n      no_log: true\n    - name: token command\n      command: echo s3cr3t-value\n      no_log: true\n    - name: shown\n      copy: {content: \"visible\\n\", dest: /etc/np-visible}\n",
    )
    .unwrap();
    let out = host.run(&[
        BIN,
        "check",
        "/root/play/secret.yml",
        "-c",
        "local",
        "--diff",
        "--report",
        "/root/reports",
    ]);
    let human = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        human.contains("visible"),
        "the other task still shows: {human}"
    );
    assert!(human.contains("(hidden by no_log)"), "{human}");
    let mut outputs = vec![("stdout".to_string(), human)];
    for f in ["report.json", "junit.xml", "report.html"] {
        let text = std::fs::read_to_string(host.path(&format!("/root/reports/{f}"))).unwrap();
        outputs.push((f.to_string(), text));
    }
    for (name, text) in outputs {
        assert!(!text.contains("s3cr3t"), "{name} shows the secret");
    }
}
