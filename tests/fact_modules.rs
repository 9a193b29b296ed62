//! The modules that only read the host (slurp, getent, service_facts)
//! through the real binary with `-c local` inside an isolated host: what
//! they return or set reaches later tasks, a file an earlier task writes is
//! read as written, and nothing is changed in check or apply.

mod support;

use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: resolver
      copy:
        content: "nameserver 10.0.0.1\n"
        dest: /etc/nodeprov-test/resolv.conf
    - name: read it
      slurp:
        src: /etc/nodeprov-test/resolv.conf
      register: resolv
    - name: users
      getent:
        database: passwd
    - name: nobody here
      getent:
        database: group
        key: nodeprov-no-such-group
        fail_key: false
    - name: services
      service_facts:
    - name: all read
      assert:
        that:
          - (resolv.content | b64decode) == "nameserver 10.0.0.1\n"
          - resolv.encoding == "base64"
          - getent_passwd.root[1] == "0"
          - ansible_facts.getent_passwd.root[4] == "/root"
          - getent_group['nodeprov-no-such-group'] is none
          - ansible_facts.hostname is defined
          - services is mapping
"#;

#[test]
fn read_only_modules_feed_later_tasks_in_check_and_apply() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/etc/nodeprov-test")).unwrap();
    std::fs::write(host.path("/root/read.yml"), PLAYBOOK).unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/read.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        )
    };
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(
        statuses(&check),
        ["drift", "ok", "ok", "ok", "ok", "ok"],
        "{check:#}"
    );
    assert!(!host.path("/etc/nodeprov-test/resolv.conf").exists());
    let (code, apply) = run("apply");
    assert_eq!(code, 0, "{apply:#}");
    assert_eq!(
        statuses(&apply),
        ["changed", "ok", "ok", "ok", "ok", "ok"],
        "{apply:#}"
    );
    assert_machine_unchanged(&before);
}
