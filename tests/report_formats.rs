//! The report formats from the real binary: every JSON document a run
//! prints validates against `schemas/report.schema.json`, and the JUnit
//! XML against the Jenkins JUnit XSD (`tests/fixtures/junit-10.xsd`).

mod support;

use serde_json::Value;
use support::{run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/report.schema.json");
const JUNIT_XSD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/junit-10.xsd");

/// Drift (vm.swappiness), a skipped task and, last, a failed one.
const MIXED: &str = "\
- name: mixed
  hosts: localhost
  tags: [baseline]
  tasks:
    - name: swappiness
      tags: [sysctl]
      sysctl: {name: vm.swappiness, value: 10, sysctl_file: /etc/sysctl.d/90-gpu-node.conf}
    - name: only elsewhere
      copy: {dest: /etc/elsewhere, content: \"x\\n\"}
      when: false
    - name: required file
      file: {path: /etc/not-there, state: file}
";

/// Nothing to change on a fresh host.
const COMPLIANT: &str = "\
- name: compliant
  hosts: localhost
  tasks:
    - name: etc exists
      file: {path: /etc, state: directory}
";

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema is valid draft 2020-12")
}

fn assert_valid(doc: &Value) {
    let errors: Vec<String> = validator()
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

/// A host with `playbook` at /root/p.yml.
fn host_with(playbook: &str) -> IsolatedHost {
    let host = IsolatedHost::new();
    std::fs::write(host.path("/root/p.yml"), playbook).unwrap();
    host
}

fn run(host: &IsolatedHost, cmd: &str, extra: &[&str]) -> (i32, Value) {
    let mut argv = vec![BIN, cmd, "/root/p.yml", "-c", "local", "--format", "json"];
    argv.extend_from_slice(extra);
    run_json(host, &argv)
}

fn statuses(doc: &Value) -> Vec<&str> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect()
}

#[test]
fn every_report_validates_against_the_schema() {
    let host = host_with(MIXED);
    host.set_sysctl("vm.swappiness", "60");
    let (code, drifted) = run(&host, "check", &[]);
    assert_eq!(code, 6, "{drifted:#}");
    assert_eq!(statuses(&drifted), ["drift", "skipped", "failed"]);
    assert_valid(&drifted);

    let (code, applied) = run(&host, "apply", &[]);
    assert_eq!(code, 4, "{applied:#}");
    assert_eq!(statuses(&applied), ["changed", "skipped", "failed"]);
    assert_valid(&applied);

    let host = host_with(COMPLIANT);
    for cmd in ["check", "apply"] {
        let (code, doc) = run(&host, cmd, &[]);
        assert_eq!(code, 0, "{doc:#}");
        assert_eq!(statuses(&doc), ["ok"]);
        assert_valid(&doc);
    }
}

#[test]
fn the_schema_rejects_a_document_missing_a_required_field() {
    let host = host_with(COMPLIANT);
    let (_, mut doc) = run(&host, "check", &[]);
    assert_valid(&doc);
    doc["hosts"][0]["tasks"][0]
        .as_object_mut()
        .unwrap()
        .remove("control");
    assert!(!validator().is_valid(&doc));
    let (_, mut doc) = run(&host, "check", &[]);
    doc.as_object_mut().unwrap().remove("exit_code");
    assert!(!validator().is_valid(&doc));
}

/// `xmllint --schema` of the JUnit XSD over `xml`.
fn xmllint(xml: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    std::process::Command::new("xmllint")
        .args(["--noout", "--schema", JUNIT_XSD])
        .arg(&file)
        .output()
        .expect("xmllint (libxml2-utils) is installed")
}

fn assert_junit_valid(xml: &str) {
    let out = xmllint(xml);
    assert!(
        out.status.success(),
        "{}\n{xml}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn junit_of_every_outcome_validates_against_the_xsd() {
    let host = host_with(MIXED);
    host.set_sysctl("vm.swappiness", "60");
    let (_, mut doc) = run(&host, "check", &[]);
    // What only a fleet shows: a host that was never reached, and text a
    // host sent back that XML cannot hold as it is.
    let lost = serde_json::json!({"host": "gpu-02", "play": "mixed", "duration_ms": 0,
        "tasks": [], "unreachable": "banner \u{1b}[2J]]> <&\""});
    doc["hosts"].as_array_mut().unwrap().push(lost);
    let xml = nodeprov::report::junit::render(&doc);
    for part in ["<failure", "<error", "<skipped/>", "hostname=\"gpu-02\""] {
        assert!(xml.contains(part), "{part} missing:\n{xml}");
    }
    assert_junit_valid(&xml);
}

#[test]
fn the_xsd_rejects_what_jenkins_would_not_read() {
    let testcase_without_name = "<testsuites><testsuite name=\"h\" tests=\"1\"><testcase classname=\"c\"/></testsuite></testsuites>";
    assert!(!xmllint(testcase_without_name).status.success());
}

/// The document with what differs between two runs of the same check
/// (times and durations) removed.
fn timeless(mut doc: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("observed_at");
                m.remove("duration_ms");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut doc);
    doc
}

#[test]
fn report_dir_holds_the_json_document_junit_and_html_of_the_same_run() {
    let host = host_with(MIXED);
    host.set_sysctl("vm.swappiness", "60");
    let out = host.run(&[
        BIN,
        "check",
        "/root/p.yml",
        "-c",
        "local",
        "--report",
        "/root/out/ci",
    ]);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("PLAY [mixed]") && stdout.contains("RECAP"),
        "{stdout}"
    );

    let read =
        |name: &str| std::fs::read_to_string(host.path(&format!("/root/out/ci/{name}"))).unwrap();
    let stored: Value = serde_json::from_str(&read("report.json")).unwrap();
    assert_valid(&stored);
    let (_, printed) = run(&host, "check", &[]);
    assert_eq!(timeless(stored), timeless(printed));

    let junit = read("junit.xml");
    let failure = junit
        .lines()
        .find(|l| l.contains("<failure "))
        .unwrap_or_default();
    assert!(failure.contains("vm.swappiness: 60 → 10"), "{junit}");
    assert_junit_valid(&junit);
    let html = read("report.html");
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("vm.swappiness 60 → 10"),
        "{html}"
    );
    let files = std::fs::read_dir(host.path("/root/out/ci"))
        .unwrap()
        .count();
    assert_eq!(files, 3, "no temporary file stays behind");
}

#[test]
fn a_report_dir_that_cannot_be_made_stops_the_run_before_any_host() {
    let host = host_with(MIXED);
    host.set_sysctl("vm.swappiness", "60");
    std::fs::write(host.path("/root/taken"), "a file").unwrap();
    let out = host.run(&[
        BIN,
        "apply",
        "/root/p.yml",
        "-c",
        "local",
        "--report",
        "/root/taken/ci",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot create report folder /root/taken/ci: "),
        "{stderr}"
    );
    assert_eq!(host.sysctl("vm.swappiness"), "60");
}
