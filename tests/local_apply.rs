//! The real binary with `-c local` inside isolated hosts (private /etc and a
//! fake /proc/sys/vm): apply twice, check compliant and drifted hosts.

mod support;

use std::process::Output;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// A host with the fixture playbook copied into its /root.
fn host_with_playbook() -> IsolatedHost {
    let host = IsolatedHost::new();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/local");
    std::fs::create_dir_all(host.path("/root/templates")).unwrap();
    for f in ["site.yml", "templates/settings.conf.j2"] {
        std::fs::copy(format!("{src}/{f}"), host.path(&format!("/root/{f}"))).unwrap();
    }
    host
}

fn nodeprov(host: &IsolatedHost, args: &[&str]) -> Output {
    let mut argv = vec![BIN];
    argv.extend_from_slice(args);
    host.run(&argv)
}

fn json(host: &IsolatedHost, cmd: &str) -> (i32, serde_json::Value) {
    run_json(
        host,
        &[
            BIN,
            cmd,
            "/root/site.yml",
            "-c",
            "local",
            "--format",
            "json",
        ],
    )
}

fn recap(doc: &serde_json::Value, field: &str) -> u64 {
    doc["hosts"][0]["recap"][field].as_u64().unwrap()
}

fn statuses(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn apply_twice_then_check_is_compliant() {
    let before = machine_digest();
    let host = host_with_playbook();
    let (code, first) = json(&host, "apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(recap(&first, "failed"), 0, "{first:#}");
    assert_eq!(recap(&first, "changed"), 8, "{:?}", statuses(&first));
    // probe; apply up to the command whose result a later task reads; apply
    // the rest with the handler; verify.
    assert_eq!(first["hosts"][0]["round_trips"], 4, "{first:#}");

    assert_eq!(host.sysctl("vm.swappiness"), "10");
    assert_eq!(host.sysctl("vm.overcommit_memory"), "1");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(
        read("/etc/sysctl.d/90-gpu-node.conf"),
        "vm.swappiness = 10\nvm.overcommit_memory = 1\n"
    );
    assert_eq!(
        read("/etc/nodeprov-test/limits.conf"),
        "# limits\nnofile = 65536\n"
    );
    assert_eq!(
        read("/etc/nodeprov-test/hostname"),
        format!("{}\n", host.hostname())
    );
    assert_eq!(read("/etc/nodeprov-test/reloaded"), "yes\n");
    assert!(read("/etc/nodeprov-test/settings.conf")
        .contains("swappiness = 10\nkey_a = A\nkey_b = B\n"));

    let (code, second) = json(&host, "apply");
    assert_eq!(code, 0);
    assert_eq!(
        recap(&second, "changed"),
        0,
        "second run must change nothing: {:?}",
        statuses(&second)
    );

    let (code, check) = json(&host, "check");
    assert_eq!(code, 0, "{:?}", statuses(&check));
    // the `check_mode: false` query rode in the one probe
    assert_eq!(check["hosts"][0]["round_trips"], 1);
    assert_machine_unchanged(&before);
}

#[test]
fn check_on_a_drifted_host_lists_exact_drift_and_changes_nothing() {
    let before = machine_digest();
    let host = host_with_playbook();
    assert_eq!(json(&host, "apply").0, 0);
    host.set_sysctl("vm.swappiness", "60");
    let limits = host.path("/etc/nodeprov-test/limits.conf");
    std::fs::write(&limits, "# limits\nnofile = 1024\n").unwrap();

    let (code, doc) = json(&host, "check");
    assert_eq!(code, 2);
    let drift: Vec<(String, String)> = statuses(&doc)
        .into_iter()
        .filter(|(_, s)| s != "ok" && s != "skipped")
        .collect();
    assert_eq!(
        drift,
        [
            (
                "raise nofile in the file just written".to_string(),
                "drift".to_string()
            ),
            ("vm.swappiness".to_string(), "drift".to_string()),
        ]
    );
    let sw = doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "vm.swappiness")
        .unwrap();
    assert_eq!(sw["changes"][0]["before"], "60");
    assert_eq!(sw["changes"][0]["after"], "10");
    assert_eq!(
        host.sysctl("vm.swappiness"),
        "60",
        "check must not fix anything"
    );
    assert_eq!(
        std::fs::read_to_string(&limits).unwrap(),
        "# limits\nnofile = 1024\n"
    );

    let human = nodeprov(&host, &["check", "/root/site.yml", "-c", "local"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("vm.swappiness: 60 → 10"), "{text}");
    assert!(
        text.contains("-nofile = 1024") || text.contains("+nofile = 65536"),
        "{text}"
    );
    assert_machine_unchanged(&before);
}

/// Extra variables exist only at run time: one that refers to itself fails
/// the task that reads it with its name and the reason, never reaching the
/// host as the text `{{ motd }}`.
#[test]
fn a_self_referencing_extra_var_fails_the_task_that_reads_it() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let pb = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/nodeprov-motd, content: \"{{ motd }}\"}\n";
    std::fs::write(host.path("/root/pb.yml"), pb).unwrap();
    let out = nodeprov(
        &host,
        &[
            "apply",
            "/root/pb.yml",
            "-c",
            "local",
            "-e",
            r#"{"motd": "{{ motd }}!"}"#,
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{text}{err}");
    assert!(
        text.contains("variable 'motd' cannot be rendered: it refers to itself"),
        "{text}"
    );
    assert!(!host.path("/etc/nodeprov-motd").exists());
    assert_machine_unchanged(&before);
}

/// Files around the 1 MiB limit on reading content (compared by SHA-256
/// beyond it) and a 64 MiB one: written once, then left alone.
#[test]
fn files_of_every_size_converge_and_stay_compliant() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    const MIB: usize = 1 << 20;
    let sizes = [0, MIB - 1, MIB, MIB + 1, 64 * MIB];
    std::fs::create_dir_all(host.path("/root/files")).unwrap();
    let mut playbook = String::from("- hosts: all\n  gather_facts: false\n  tasks:\n");
    for size in sizes {
        // Lines, so that a diff of the content would be a real one.
        let line = "0123456789abcdef".repeat(4) + "\n";
        let text: String = line
            .repeat(size / line.len() + 1)
            .chars()
            .take(size)
            .collect();
        std::fs::write(host.path(&format!("/root/files/f{size}")), text).unwrap();
        playbook.push_str(&format!(
            "    - copy: {{src: f{size}, dest: /etc/big-{size}}}\n"
        ));
    }
    std::fs::write(host.path("/root/site.yml"), playbook).unwrap();

    let (code, first) = json(&host, "apply");
    assert_eq!((code, recap(&first, "changed")), (0, 5), "{first}");
    for size in sizes {
        let written = std::fs::metadata(host.path(&format!("/etc/big-{size}"))).unwrap();
        assert_eq!(written.len(), size as u64);
    }
    let (code, second) = json(&host, "apply");
    assert_eq!((code, recap(&second, "changed")), (0, 0), "{second}");
    let (code, check) = json(&host, "check");
    assert_eq!(code, 0, "{check}");
    assert_machine_unchanged(&before);
}

/// Roles written for current Ansible read facts through `ansible_facts`
/// and branch on `ansible_check_mode`.
#[test]
fn ansible_facts_namespace_and_check_mode_variable() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let pb = "- hosts: all\n  tasks:\n    - name: family file\n      copy: {dest: /etc/nodeprov-family, content: \"{{ ansible_facts['os_family'] }} {{ ansible_facts.distribution }}\\n\"}\n      when: ansible_facts['os_family'] in ['Debian', 'RedHat']\n    - name: only when applying\n      copy: {dest: /etc/nodeprov-applied, content: \"yes\\n\"}\n      when: not ansible_check_mode\n";
    std::fs::write(host.path("/root/site.yml"), pb).unwrap();
    let validated = nodeprov(&host, &["validate", "/root/site.yml"]);
    assert_eq!(validated.status.code(), Some(0), "{validated:?}");

    let (code, check) = json(&host, "check");
    assert_eq!(code, 2, "{check}");
    let expected = [("family file", "drift"), ("only when applying", "skipped")];
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(statuses(&check), pairs(&expected));

    let (code, applied) = json(&host, "apply");
    assert_eq!(code, 0, "{applied}");
    assert_eq!(recap(&applied, "changed"), 2, "{applied}");
    let family = std::fs::read_to_string(host.path("/etc/nodeprov-family")).unwrap();
    // The host's /etc/os-release links into the /usr it shares with this machine.
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap();
    let distribution = if os_release.contains("ID=ubuntu") {
        "Ubuntu"
    } else {
        "Debian"
    };
    assert_eq!(family, format!("Debian {distribution}\n"));
    assert!(host.path("/etc/nodeprov-applied").exists());
    assert_machine_unchanged(&before);
}

/// A literal access and modification time is set once and then found in
/// place (the second apply changes nothing); `now` changes on every run.
#[test]
fn file_times_converge_when_literal_and_move_when_now() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/root/times")).unwrap();
    std::fs::write(host.path("/root/times/old"), "x\n").unwrap();
    std::fs::create_dir(host.path("/root/times/dir")).unwrap();
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: pinned
      file:
        path: /root/times/old
        state: file
        modification_time: "202401020304.05"
    - name: folder pinned
      file:
        path: /root/times/dir
        state: directory
        modification_time: "202401020304.05"
        access_time: "2023-12-31 23:59:58"
        access_time_format: "%Y-%m-%d %H:%M:%S"
    - name: made and pinned
      file:
        path: /root/times/new
        state: touch
        modification_time: "202401020304.05"
        access_time: preserve
    - name: moved
      file:
        path: /root/times/now
        state: touch
        modification_time: now
        access_time: now
"#;
    std::fs::write(host.path("/root/site.yml"), playbook).unwrap();
    let (code, first) = json(&host, "apply");
    assert_eq!((code, recap(&first, "changed")), (0, 4), "{first}");
    let stamp = |path: &str, which: &str| {
        let out = host.run(&["stat", "-c", which, path]);
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(stamp("/root/times/old", "%y").starts_with("2024-01-02 03:04:05.000000000"));
    assert!(stamp("/root/times/dir", "%y").starts_with("2024-01-02 03:04:05.000000000"));
    assert!(stamp("/root/times/dir", "%x").starts_with("2023-12-31 23:59:58.000000000"));
    assert!(stamp("/root/times/new", "%y").starts_with("2024-01-02 03:04:05.000000000"));
    let (code, second) = json(&host, "apply");
    assert_eq!((code, recap(&second, "changed")), (0, 1), "{second}");
    let moved: Vec<_> = statuses(&second)
        .into_iter()
        .filter(|(_, s)| s == "changed")
        .collect();
    assert_eq!(moved, [("moved".to_string(), "changed".to_string())]);
    let (code, check) = json(&host, "check");
    assert_eq!((code, recap(&check, "drift")), (2, 1), "{check}");
    assert_machine_unchanged(&before);
}

#[test]
fn commands_run_on_the_controller_never_see_its_nodeprov_variables() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: delegated
      shell: tr '\0' '\n' < /proc/self/environ
      register: delegated
      changed_when: false
      delegate_to: localhost
    - name: local
      command: env
      register: local
      changed_when: false
    - copy:
        dest: /root/environ
        content: "{{ delegated.stdout }}\n{{ local.stdout }}"
"#;
    std::fs::write(host.path("/root/env.yml"), playbook).unwrap();
    let argv = [
        "/usr/bin/env",
        "NODEPROV_BECOME_PASSWORD=become-secret",
        "NODEPROV_SSH_PASSWORD=ssh-secret",
        "NODEPROV_KEY_PASSPHRASE=key-secret",
        "NODEPROV_ANYTHING=other",
        "KEPT_FOR_COMMANDS=yes",
        BIN,
        "apply",
        "/root/env.yml",
        "-c",
        "local",
        "--format",
        "json",
    ];
    let (code, doc) = run_json(&host, &argv);
    assert_eq!(code, 0, "{doc:#}");
    let seen = std::fs::read_to_string(host.path("/root/environ")).unwrap();
    let leaked: Vec<&str> = seen.lines().filter(|l| l.contains("NODEPROV_")).collect();
    assert!(leaked.is_empty(), "{leaked:?}");
    assert!(!seen.contains("secret"), "{seen}");
    assert_eq!(
        seen.matches("KEPT_FOR_COMMANDS=yes").count(),
        2,
        "both commands see the rest of the environment: {seen}"
    );
    assert_machine_unchanged(&before);
}
