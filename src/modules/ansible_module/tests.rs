use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::modules::kit::ansible::{Payload, Runner};

fn module(check: bool) -> AnsibleModule {
    let payload = Arc::new(Payload {
        fqcn: "ansible.builtin.wait_for".into(),
        import: "ansible.modules.wait_for".into(),
        zip_base64: "UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==".into(),
        sha256: "ab".repeat(32),
        ansible_version: "2.17.0".into(),
        options: None,
        runner: Runner::Zip { loader: None },
        windows: false,
    });
    let mut args = Map::new();
    args.insert("path".into(), json!("/etc/hostname"));
    args.insert("password".into(), json!("s3cr3t-value"));
    AnsibleModule {
        call: AnsibleCall {
            payload,
            why: "nodeprov has no native version".into(),
            check,
            diff: false,
            no_log: false,
        },
        args,
        interpreter: None,
        runner_socket: "run-0123456789abcdef".into(),
    }
}

fn facts(m: &AnsibleModule, check_run: ProbeResult) -> Facts {
    let mut answers = BTreeMap::new();
    answers.insert(m.payload_key(), ProbeResult::ok("kept\n"));
    answers.insert(m.check_key(), check_run);
    Facts::new(answers)
}

fn answer(rc: i32, stdout: &str) -> ProbeResult {
    ProbeResult {
        rc,
        stdout: stdout.into(),
        stderr: String::new(),
    }
}

#[test]
fn an_unchanged_check_run_plans_nothing_and_registers_its_returns() {
    let m = module(true);
    let out =
        "Welcome!\n{\"changed\": false, \"elapsed\": 0, \"invocation\": {\"module_args\": {}}}\n";
    let plan = m.plan(&facts(&m, answer(0, out))).unwrap();
    assert!(plan.changes.is_empty() && plan.steps.is_empty(), "{plan:?}");
    assert_eq!(plan.returns.get("elapsed"), Some(&json!(0)));
    assert!(!plan.returns.contains_key("invocation"));
    assert!(
        plan.notes[0].contains("ansible.builtin.wait_for"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn check_mode_reports_what_the_check_run_would_change_with_its_diff() {
    let m = module(true);
    let out = r#"{"changed": true, "msg": "would wait", "diff": {"before": "a", "after": "b"}}"#;
    let plan = m.plan(&facts(&m, answer(0, out))).unwrap();
    assert_eq!(plan.changes[0].after.as_deref(), Some("would wait"));
    assert_eq!(plan.changes[0].diff.as_deref(), Some("- a\n+ b\n"));
    assert!(plan.steps.is_empty());
}

#[test]
fn apply_runs_the_module_for_real_as_one_step_after_the_payload() {
    let m = module(false);
    let probes: Vec<String> = m.probes().into_iter().map(|p| p.key).collect();
    assert_eq!(probes, [m.payload_key()]);
    assert!(!m.reads_everything());
    let mut answers = BTreeMap::new();
    answers.insert(m.payload_key(), ProbeResult::ok("kept\n"));
    let plan = m.plan(&Facts::new(answers)).unwrap();
    assert_eq!(plan.steps.len(), 1);
    assert!(plan.steps[0].contains("\"_ansible_check_mode\":false"));
    assert_eq!(plan.effects, [Effect::InvalidateAll]);
}

#[test]
fn a_module_without_check_mode_is_unknown_in_check() {
    let out = r#"{"skipped": true, "msg": "remote module (x) does not support check mode"}"#;
    let m = module(true);
    let plan = m.plan(&facts(&m, answer(0, out))).unwrap();
    assert!(plan
        .unknown
        .unwrap()
        .contains("does not support check mode"));
    assert!(plan.steps.is_empty());
}

#[test]
fn a_failed_check_run_is_a_failure_that_earlier_drift_may_excuse() {
    let out = r#"{"failed": true, "msg": "Timeout when waiting for file /nope"}"#;
    let m = module(true);
    let err = m.plan(&facts(&m, answer(1, out))).unwrap_err();
    assert!(
        matches!(err, ModuleError::Absent(ref why) if why.contains("/nope")),
        "{err:?}"
    );
}

#[test]
fn an_interpreter_the_inventory_names_and_the_host_lacks_fails_in_ansibles_words() {
    let mut m = module(false);
    m.interpreter = Some("/bogus/path".into());
    assert!(m
        .payload_probe()
        .script
        .contains("The module interpreter '\\''/bogus/path'\\'' was not found."));
    let none = ProbeResult {
        rc: NO_PYTHON,
        stdout: String::new(),
        stderr: "The module interpreter '/bogus/path' was not found.\n".into(),
    };
    let mut answers = BTreeMap::new();
    answers.insert(m.payload_key(), none);
    let err = m.plan(&Facts::new(answers)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The module interpreter '/bogus/path' was not found."
    );
}

#[test]
fn no_python_and_no_json_are_one_clear_line() {
    let m = module(false);
    let none = ProbeResult {
        rc: NO_PYTHON,
        stdout: String::new(),
        stderr:
            "no Python on the host (looked for /usr/bin/python3); set ansible_python_interpreter\n"
                .into(),
    };
    let mut answers = BTreeMap::new();
    answers.insert(m.payload_key(), none);
    let err = m.plan(&Facts::new(answers)).unwrap_err().to_string();
    assert!(
        err.starts_with("Ansible's module ansible.builtin.wait_for: no Python on the host"),
        "{err}"
    );
    let m = module(true);
    let crash = ProbeResult {
        rc: 1,
        stdout: String::new(),
        stderr: "Traceback...\nImportError: boom\n".into(),
    };
    let err = m.plan(&facts(&m, crash)).unwrap_err().to_string();
    assert!(
        err.contains("no JSON result (exit status 1): ImportError: boom"),
        "{err}"
    );
}

#[test]
fn the_real_runs_result_is_the_modules_own() {
    let m = module(false);
    let r = m.command_result(&answer(0, r#"{"changed": false, "path": "/tmp/x"}"#));
    assert_eq!(
        r,
        json!({"changed": false, "failed": false, "path": "/tmp/x"})
    );
    let r = m.command_result(&answer(1, r#"{"failed": true, "msg": "no"}"#));
    assert_eq!(r["failed"], json!(true));
    assert_eq!(r["msg"], json!("no"));
}

#[test]
fn arguments_travel_on_stdin_and_stay_out_of_keys() {
    let m = module(false);
    assert!(!m.check_key().contains("s3cr3t"));
    let script = m.run_script(true);
    let masked = crate::base::shell::mask_secrets(&script);
    assert!(script.contains("s3cr3t-value") && !masked.contains("s3cr3t-value"));
    assert!(script.contains("\"_ansible_check_mode\":true"));
    // The payload itself goes in the first probe, which sorts first.
    assert!(m.payload_key() < m.check_key());
    assert!(crate::remote::probe::is_durable(&m.payload_key()));
}

#[test]
fn check_runs_of_one_batch_share_a_client_and_each_gets_its_own_answer() {
    let m = module(true);
    let probe = m.check_probe();
    let joint = probe.joint.expect("a zip's check run joins the batch");
    let queries = [joint.query.as_str(), joint.query.as_str()];
    let script = (joint.script)(&queries);
    let masked = crate::base::shell::mask_secrets(&script);
    assert!(script.contains("s3cr3t-value") && !masked.contains("s3cr3t-value"));
    assert!(script.contains("--batch"), "{masked}");

    let both = ProbeResult::ok("0 eyJhIjoxfQ== \n98  dGhlIHBheWxvYWQ=\n");
    let answers = (joint.split)(&queries, &both);
    assert_eq!(answers[0], ProbeResult::ok("{\"a\":1}"));
    assert_eq!(
        (answers[1].rc, answers[1].stderr.as_str()),
        (98, "the payload")
    );

    // A batch that ended before its runs (no Python) answers each alike.
    let none = ProbeResult {
        rc: NO_PYTHON,
        stdout: String::new(),
        stderr: "no Python".into(),
    };
    assert_eq!((joint.split)(&queries, &none), vec![none.clone(), none]);
}
