//! Play-level Ansible behaviour through the real binary inside an isolated
//! host: `vars_files` named after gathered facts, `with_first_found`, magic
//! variables, a templated `hosts:`, the play's `connection: local`, and
//! loops under `when:`.

mod support;

use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const PLAYBOOK: &str = r#"- hosts: "{{ target }}"
  connection: local
  remote_user: nobody-at-all
  vars_files:
    - ["vars/{{ ansible_facts.os_family }}.yml", vars/default.yml]
  tasks:
    - name: distribution variables
      include_vars: "{{ item }}"
      with_first_found:
        - files: ["nope-{{ ansible_distribution | lower }}.yml", fallback.yml]
          paths: [extra]
          skip: true
    - name: what the play knows
      copy:
        dest: /etc/play-level.conf
        content: |
          family={{ family }} facts={{ ansible_os_family }}
          extra={{ extra_loaded }}
          play={{ ansible_play_hosts_all | join(',') }} batch={{ ansible_play_batch | join(',') }}
          me={{ hostvars[inventory_hostname].inventory_hostname }} short={{ inventory_hostname_short }} groups={{ group_names | join(',') }}
          facts_via_hostvars={{ hostvars[inventory_hostname].ansible_os_family }}
          dir={{ playbook_dir }} inv={{ inventory_dir }} version={{ ansible_version.major }}
    - name: never looped
      copy: {dest: "/etc/{{ item }}", content: "x\n"}
      loop: "{{ not_defined_anywhere }}"
      when: false
    - name: per item
      copy: {dest: "{{ path }}", content: "x\n"}
      vars: {path: "/etc/item-{{ item }}"}
      loop: [a, b]
"#;

/// The playbook, its vars files and an inventory whose only host would be
/// reached over SSH at an address nothing answers, but for the play's
/// `connection: local`.
fn host_with_playbook() -> IsolatedHost {
    let host = IsolatedHost::new();
    let write = |path: &str, text: &str| {
        let path = host.path(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("/root/pb/site.yml", PLAYBOOK);
    for family in ["Debian", "RedHat", "Suse", "Archlinux"] {
        write(
            &format!("/root/pb/vars/{family}.yml"),
            &format!("family: {family}\n"),
        );
    }
    write("/root/pb/vars/default.yml", "family: default\n");
    write("/root/pb/extra/fallback.yml", "extra_loaded: fallback\n");
    write(
        "/root/inv/hosts.ini",
        "[nodes]\nnode.example ansible_host=192.0.2.1\n",
    );
    host
}

fn run(host: &IsolatedHost, cmd: &str) -> (i32, serde_json::Value) {
    let argv = [
        BIN,
        cmd,
        "/root/pb/site.yml",
        "-i",
        "/root/inv/hosts.ini",
        "-e",
        "target=nodes",
        "--format",
        "json",
    ];
    run_json(host, &argv)
}

#[test]
fn a_play_reads_its_facts_files_and_magic_variables_on_a_local_connection() {
    let before = machine_digest();
    let host = host_with_playbook();
    let (code, doc) = run(&host, "apply");
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["hosts"][0]["host"], "node.example");
    assert_eq!(
        statuses(&doc),
        ["ok", "changed", "skipped", "changed", "changed"],
        "{doc:#}"
    );
    let conf = std::fs::read_to_string(host.path("/etc/play-level.conf")).unwrap();
    let lines: Vec<&str> = conf.lines().collect();
    let family = lines[0]
        .strip_prefix("family=")
        .and_then(|l| l.split_once(" facts="))
        .unwrap();
    assert_eq!(family.0, family.1, "the file named after the facts: {conf}");
    assert_eq!(lines[1], "extra=fallback");
    assert_eq!(lines[2], "play=node.example batch=node.example");
    assert_eq!(lines[3], "me=node.example short=node groups=nodes");
    assert_eq!(lines[4], format!("facts_via_hostvars={}", family.1));
    assert_eq!(lines[5], "dir=/root/pb inv=/root/inv version=2");
    for item in ["a", "b"] {
        assert!(host.path(&format!("/etc/item-{item}")).exists());
    }
    let (code, again) = run(&host, "check");
    assert_eq!(code, 0, "{again:#}");
    assert_eq!(again["hosts"][0]["recap"]["drift"], 0, "{again:#}");
    assert_machine_unchanged(&before);
}

#[test]
fn a_vars_file_named_after_facts_that_is_missing_is_skipped_as_ansible_skips_it() {
    let host = host_with_playbook();
    let pb = PLAYBOOK.replace(", vars/default.yml]", "]").replace(
        "vars/{{ ansible_facts.os_family }}.yml",
        "vars/{{ ansible_facts.os_family }}-none.yml",
    );
    std::fs::write(host.path("/root/pb/site.yml"), pb).unwrap();
    let (code, doc) = run(&host, "check");
    // The play runs; the first task reading a variable the file would
    // have set fails, naming it.
    assert_eq!(code & 4, 4, "{doc:#}");
    let tasks = &doc["hosts"][0]["tasks"];
    assert_eq!(tasks[0]["status"], "ok", "{doc:#}");
    assert_eq!(tasks[1]["status"], "failed", "{doc:#}");
    let why = tasks[1]["message"].as_str().unwrap();
    assert!(why.contains("undefined variable 'family'"), "{why}");
}
