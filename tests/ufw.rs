//! The real ufw, turned on inside an isolated host that has a network
//! namespace of its own (`IsolatedHost::with_network`), driven by the real
//! binary with `-c local`: apply twice, see the rules in that namespace's
//! iptables, then drift made by hand found by `check`. The machine's own
//! netfilter rules and /etc (its ufw stays disabled) are compared before
//! and after.

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, task_statuses, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// Rules given in Ansible's spellings (aliases, a hostile comment), each as
/// a task of its own, then ufw turned on and a rule inserted while it runs.
const PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: ssh from the lab
      community.general.ufw:
        rule: allow
        port: "22"
        proto: tcp
        from: 10.0.0.0/255.0.0.0
        comment: "lab; $(touch /tmp/pwned) `id`"
    - name: web
      ufw:
        rule: allow
        port: "80,443"
        protocol: tcp
    - name: no mail out
      ufw:
        rule: deny
        direction: out
        to_port: "25"
        proto: tcp
    - name: old rule gone
      ufw:
        rule: allow
        port: "8080"
        proto: tcp
        delete: true
    - name: outgoing policy
      ufw:
        policy: reject
        direction: outgoing
    - name: logging
      ufw:
        logging: medium
    - name: firewall on
      ufw:
        state: enabled
    - name: limit ssh on lo
      ufw:
        rule: limit
        if: lo
        port: "2222"
        proto: tcp
        insert: 1
"#;

fn nodeprov(host: &IsolatedHost, cmd: &str) -> (i32, serde_json::Value) {
    run_json(
        host,
        &[BIN, cmd, "/root/ufw.yml", "-c", "local", "--format", "json"],
    )
}

/// Runs a shell line inside the host and returns its stdout; it must succeed.
fn sh(host: &IsolatedHost, line: &str) -> String {
    let out = host.run(&["sh", "-c", line]);
    assert!(out.status.success(), "{line}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn recap(doc: &serde_json::Value, field: &str) -> u64 {
    doc["hosts"][0]["recap"][field].as_u64().unwrap()
}

#[test]
fn ufw_rules_converge_in_a_host_of_its_own_network_and_drift_is_checked() {
    // The machine's rules are compared only as far as its tools list them.
    for tool in ["iptables-save", "nft"] {
        let listed = std::process::Command::new(tool).arg("--version").output();
        assert!(
            listed.is_ok(),
            "{tool} is needed (scripts/test.sh installs it)"
        );
    }
    let before = machine_digest();
    let host = IsolatedHost::new().with_network();
    std::fs::write(host.path("/root/ufw.yml"), PLAYBOOK).unwrap();
    // A rule left from before, for the task that deletes it.
    sh(&host, "ufw allow 8080/tcp");
    assert!(sh(&host, "ufw status").starts_with("Status: inactive"));

    // Check mode first: every task drifts, nothing is touched.
    let files = || {
        sh(
            &host,
            "cat /etc/ufw/user.rules /etc/ufw/user6.rules /etc/ufw/ufw.conf /etc/default/ufw",
        )
    };
    let untouched = files();
    let (code, dry) = nodeprov(&host, "check");
    assert_eq!(code, 2, "{dry:#}");
    assert_eq!(task_statuses(&dry), vec!["drift"; 8], "{dry:#}");
    assert_eq!(files(), untouched);
    assert!(sh(&host, "ufw status").starts_with("Status: inactive"));

    let (code, first) = nodeprov(&host, "apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(recap(&first, "changed"), 8, "{:?}", task_statuses(&first));

    let status = sh(&host, "ufw status verbose");
    assert!(status.starts_with("Status: active"), "{status}");
    assert!(status.contains("Logging: on (medium)"), "{status}");
    assert!(status.contains("reject (outgoing)"), "{status}");
    let added = sh(&host, "ufw show added");
    assert_eq!(
        added.lines().skip(1).collect::<Vec<_>>(),
        [
            "ufw limit in on lo to any port 2222 proto tcp",
            "ufw allow from 10.0.0.0/8 to any port 22 proto tcp comment 'lab; $(touch /tmp/pwned) `id`'",
            "ufw allow 80,443/tcp",
            "ufw deny out 25/tcp",
        ],
        "{added}"
    );
    let iptables = sh(&host, "iptables -S");
    for rule in [
        "-A ufw-user-input -s 10.0.0.0/8 -p tcp -m tcp --dport 22 -j ACCEPT",
        "-A ufw-user-input -p tcp -m multiport --dports 80,443 -j ACCEPT",
        "-A ufw-user-output -p tcp -m tcp --dport 25 -j DROP",
    ] {
        assert!(iptables.contains(rule), "{rule} not in:\n{iptables}");
    }
    assert!(
        !host.path("/tmp/pwned").exists(),
        "the comment ran as a command"
    );

    let (code, second) = nodeprov(&host, "apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(recap(&second, "changed"), 0, "{:?}", task_statuses(&second));
    assert_eq!(nodeprov(&host, "check").0, 0);

    // Drift by hand, inside the host's own namespace.
    sh(&host, "ufw delete allow 80,443/tcp");
    let (code, check) = nodeprov(&host, "check");
    assert_eq!(code, 2, "{check:#}");
    let web = &check["hosts"][0]["tasks"][1];
    assert_eq!(web["task"], "web");
    assert_eq!(web["status"], "drift", "{check:#}");
    let change = &web["changes"][0];
    assert_eq!(change["subject"], "ufw rule: allow 80,443/tcp");
    assert_eq!(change["before"], serde_json::Value::Null);
    assert_eq!(change["after"], "ufw allow 80,443/tcp");
    assert_eq!(
        change["evidence"],
        "ufw show added: no such line among 3 rules"
    );
    assert!(!sh(&host, "iptables -S").contains("--dports 80,443"));

    // The machine's /etc (its own ufw.conf among it) and netfilter rules.
    drop(host);
    assert_machine_unchanged(&before);
}
