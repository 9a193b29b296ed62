//! The binary's contract where no host is involved: validation errors with
//! positions, exit codes, help text, and the JSON report's shape (on a
//! playbook confined to a temporary folder).

use std::path::Path;
use std::process::{Command, Output};

fn nodeprov(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn shipped_playbooks_validate() {
    for pb in [
        "playbooks/gpu-node.yml",
        "playbooks/sysctl-rollout.yml",
        "playbooks/compliance.yml",
    ] {
        let out = nodeprov(&["validate", pb, "-i", "playbooks/inventory.example.ini"]);
        assert_eq!(out.status.code(), Some(0), "{pb}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(": ok ("),
            "{}",
            text(&out.stdout)
        );
    }
}

#[test]
fn validate_names_file_line_column_with_caret_and_hint() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(dir.path(), "bad.yml", "- hosts: all\n  tasks:\n    - name: tune\n      sysctll: {name: vm.swappiness, value: 10}\n");
    let out = nodeprov(&["validate", &pb]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("error: unknown module or task keyword 'sysctll'"),
        "{err}"
    );
    assert!(err.contains(&format!("--> {pb}:4:7")), "{err}");
    assert!(
        err.contains(" 4 |       sysctll: {name: vm.swappiness, value: 10}\n   |       ^"),
        "{err}"
    );
    assert!(err.contains("hint: did you mean 'sysctl'?"), "{err}");
}

#[test]
fn validate_catches_bad_templates_and_conditions() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(
        dir.path(),
        "t.yml",
        "- hosts: all\n  tasks:\n    - copy: {dest: /x, content: \"{{ a }\"}\n    - file: {path: /y}\n      when: a ==\n",
    );
    let out = nodeprov(&["validate", &pb]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{pb}:3:33")) && err.contains("template error"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{pb}:5:13")) && err.contains("invalid condition"),
        "{err}"
    );
}

#[test]
fn yaml_syntax_error_has_position() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(dir.path(), "s.yml", "- hosts: all\n  tasks: [\n");
    let out = nodeprov(&["check", &pb]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("{pb}:3:")),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn usage_errors_exit_1_and_help_documents_exit_codes() {
    assert_eq!(nodeprov(&["apply"]).status.code(), Some(1));
    let help = nodeprov(&["check", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("2  check mode found drift"));
}

#[test]
fn unknown_host_pattern_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(dir.path(), "p.yml", "- hosts: gpuu\n  tasks: []\n");
    let inv = write(dir.path(), "inv.ini", "[gpu]\ngpu-01\n");
    let out = nodeprov(&["check", &pb, "-i", &inv]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("gpuu"), "{}", text(&out.stderr));
}

#[test]
fn json_report_is_one_versioned_document() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("managed.conf");
    let pb = write(
        dir.path(),
        "j.yml",
        &format!("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: conf\n      copy: {{dest: {}, content: \"a = 1\\n\"}}\n", target.display()),
    );
    let out = nodeprov(&["check", &pb, "-c", "local", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["mode"], "check");
    assert_eq!(doc["exit_code"], 2);
    let task = &doc["hosts"][0]["tasks"][0];
    assert_eq!(task["status"], "drift");
    assert_eq!(task["changes"][0]["subject"], target.display().to_string());
    assert_eq!(task["location"], format!("{pb}:4:7"));
    assert_eq!(task["control"]["task"], "conf");
    assert_eq!(task["control"]["location"], format!("{pb}:4:7"));
    let change = &task["changes"][0];
    assert_eq!(change["expected"], change["after"]);
    assert_eq!(change["actual"], change["before"]);
    assert!(change["expected"].is_string(), "{change}");
    let probe = &change["observed_by"][0];
    assert!(
        probe["command"].as_str().unwrap().contains("managed.conf"),
        "{probe}"
    );
    let at = change["observed_at"].as_str().expect("an observation time");
    assert!(
        at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
        "{at}"
    );
    assert_eq!(doc["hosts"][0]["probes"][0]["observed_at"], at);
    assert!(!target.exists(), "check must not write");
}

#[test]
fn validate_checks_literal_parameter_values() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(
        dir.path(),
        "v.yml",
        "- hosts: all\n  tasks:\n    - file: {path: /x, state: directry}\n",
    );
    let out = nodeprov(&["validate", &pb]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("'directry' is not a valid state"), "{err}");
    assert!(err.contains(&format!("--> {pb}:3:31")), "{err}");
    assert!(err.contains("hint: did you mean 'directory'?"), "{err}");
}

#[test]
fn validate_finds_template_sources_where_apply_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("templates")).unwrap();
    std::fs::write(dir.path().join("templates/motd.j2"), "{{ greeting }}\n").unwrap();
    let ok = write(
        dir.path(),
        "ok.yml",
        "- hosts: all\n  tasks:\n    - template: {src: motd.j2, dest: /etc/motd}\n",
    );
    assert_eq!(nodeprov(&["validate", &ok]).status.code(), Some(0));
    let bad = write(
        dir.path(),
        "bad.yml",
        "- hosts: all\n  tasks:\n    - template: {src: nope.j2, dest: /etc/motd}\n",
    );
    let out = nodeprov(&["validate", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("template 'nope.j2' not found") && err.contains(&format!("{bad}:3:23")),
        "{err}"
    );
}

/// A `vars_files` file that is nowhere is skipped, as Ansible skips it
/// without a word; nodeprov names it in a warning. One that is there but
/// holds no mapping is refused, as Ansible refuses it.
#[test]
fn a_vars_file_that_is_nowhere_is_a_warning_and_a_bad_one_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(
        dir.path(),
        "p.yml",
        "- hosts: all\n  vars_files: [gone.yml, [nope.yml, also.yml]]\n  tasks:\n    - debug: msg=hi\n",
    );
    let out = nodeprov(&["validate", &pb]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "warning: {pb}:2:16: vars_files: gone.yml is in neither"
        )) && err.contains("nope.yml or also.yml is in neither")
            && err.contains("Ansible skips the entry without a word"),
        "{err}"
    );
    write(dir.path(), "gone.yml", "- a list\n");
    let out = nodeprov(&["validate", &pb]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("must hold a mapping of variables"));
}

/// As in Ansible, `failed_when: false` keeps a module's failure (here one
/// found while planning, a missing file for `state: file`) from failing
/// the task, and the failed result is what `register` holds.
#[test]
fn failed_when_false_overrules_a_module_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let pb = write(
        dir.path(),
        "f.yml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: missing\n      file: {{path: {d}/nonexistent, state: file}}\n      register: r\n      failed_when: false\n    - name: after\n      copy: {{dest: {d}/after, content: \"{{{{ r.failed }}}} {{{{ r.msg is defined }}}}\"}}\n    - name: judged\n      file: {{path: {d}/nonexistent, state: file}}\n      failed_when: \"'nonexistent' not in result.msg\"\n"
        ),
    );
    let out = nodeprov(&["apply", &pb, "-c", "local", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let statuses: Vec<&str> = doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "changed", "ok"], "{doc:#}");
    let after = std::fs::read_to_string(dir.path().join("after")).unwrap();
    assert_eq!(after, "False True");
}

/// An attribute a defined value lacks is named with the value's type, as
/// ansible-playbook names it, not only as "undefined".
#[test]
fn a_missing_attribute_says_which_and_of_what_type() {
    let dir = tempfile::tempdir().unwrap();
    let pb = write(
        dir.path(),
        "u.yml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  vars:\n    svc: [a, b]\n  tasks:\n    - name: pick\n      file: {{path: \"{}\", state: touch}}\n",
            "{{ svc.Debian }}"
        ),
    );
    let out = nodeprov(&["apply", &pb, "-c", "local", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(4), "{doc:#}");
    let task = &doc["hosts"][0]["tasks"][0];
    assert_eq!(task["status"], "failed");
    let message = task["message"].as_str().unwrap();
    assert!(
        message.ends_with(
            "parameter 'path': 'svc.Debian' is undefined: object of type 'list' has no attribute 'Debian'"
        ),
        "{message}"
    );
}

#[test]
fn version_names_the_release_and_the_commit() {
    let out = nodeprov(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let version = text(&out.stdout);
    let commit = version
        .strip_prefix(concat!("nodeprov ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{version}"));
    let hex = !commit.is_empty() && commit.chars().all(|c| c.is_ascii_hexdigit());
    assert!(hex || commit == "unknown", "{version}");
}

/// Completions and the man page come from the command line's own
/// definition, so each names every subcommand and a flag deep inside one.
#[test]
fn completions_and_man_page_cover_every_subcommand() {
    let outputs = [
        ("bash", nodeprov(&["completions", "bash"])),
        ("zsh", nodeprov(&["completions", "zsh"])),
        ("fish", nodeprov(&["completions", "fish"])),
        ("man", nodeprov(&["man"])),
    ];
    for (what, out) in outputs {
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        let words = [
            "apply",
            "check",
            "validate",
            "inventory",
            "facts",
            "smoke",
            "report",
            "completions",
        ];
        for word in words {
            assert!(script.contains(word), "{what} lacks {word}");
        }
        if what != "man" {
            assert!(script.contains("skip-tags"), "{what} lacks --skip-tags");
        }
    }
    let page = text(&nodeprov(&["man"]).stdout);
    assert!(page.contains(".TH nodeprov 1"), "{page}");
    let shells = nodeprov(&["completions", "tcsh"]);
    assert_eq!(
        shells.status.code(),
        Some(1),
        "an unknown shell is a usage error"
    );
}
