//! Where a host's variables come from, differentially: one project whose
//! inventory lives in a folder of its own (`inventory/`), with variables
//! in the inventory source (`[all:vars]`, `[gpu:vars]`, the host's line),
//! in `group_vars/` and `host_vars/` beside the inventory and beside the
//! playbook, each name set in a different set of places. nodeprov and
//! ansible-playbook (the newest ansible-core scripts/test.sh installs) must
//! resolve every name alike. Only `debug` tasks run, on `local`
//! connections: nothing is changed.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{assert_machine_unchanged, machine_digest, newest_ansible_bin};

/// Each name is set at the places marked in its value's spelling, so that
/// every pair of neighbouring sources in Ansible's order is decided by
/// one name.
const FILES: &[(&str, &str)] = &[
    (
        "inventory/hosts.ini",
        "node1 ansible_connection=local ansible_python_interpreter=/usr/bin/python3 k=src-host m=src-host\n\
         node2 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n\
         [gpu]\nnode1\nnode2\n\
         [gpu:vars]\nb=src-gpu c=src-gpu d=src-gpu e=src-gpu f=src-gpu g=src-gpu\n\
         [all:vars]\na=src-all b=src-all c=src-all d=src-all\n",
    ),
    (
        "inventory/group_vars/all.yml",
        "c: inv-all\nd: inv-all\ne: inv-all\nh: inv-all\n",
    ),
    (
        "group_vars/all.yml",
        "d: play-all\ne: play-all\nf: play-all\ni: play-all\n",
    ),
    (
        "inventory/group_vars/gpu.yml",
        "f: inv-gpu\ng: inv-gpu\nh: inv-gpu\ni: inv-gpu\nj: inv-gpu\n",
    ),
    ("group_vars/gpu.yml", "g: play-gpu\nj: play-gpu\nk: play-gpu\n"),
    (
        "inventory/host_vars/node1.yml",
        "l: inv-host\nm: inv-host\nn: inv-host\n",
    ),
    ("host_vars/node1.yml", "n: play-host\no: play-host\n"),
];

const NAMES: &[&str] = &[
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
];

fn playbook() -> String {
    let shown: Vec<String> = NAMES
        .iter()
        .map(|n| format!("'{n}': {n} | default('-')"))
        .collect();
    format!(
        "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: \"{{{{ {{{}}} | to_json }}}}\"\n",
        shown.join(", ")
    )
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in FILES {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(dir.path().join("site.yml"), playbook()).unwrap();
    dir
}

/// Each host's resolved names, from nodeprov's JSON report.
fn nodeprov(dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args([
            "apply",
            "site.yml",
            "-i",
            "inventory/hosts.ini",
            "--format",
            "json",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut by_host = serde_json::Map::new();
    for host in report["hosts"].as_array().unwrap() {
        let msg = host["tasks"][0]["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|n| n.as_str()?.strip_prefix("msg: "))
            .unwrap_or_else(|| panic!("no msg: {host}"));
        let name = host["host"].as_str().unwrap().to_string();
        by_host.insert(name, serde_json::from_str(msg).unwrap());
    }
    Value::Object(by_host)
}

/// Each host's resolved names, from ansible-playbook's `json` callback.
fn ansible(dir: &Path) -> Value {
    let out = Command::new(newest_ansible_bin().join("ansible-playbook"))
        .args(["-i", "inventory/hosts.ini", "site.yml"])
        .env("HOME", dir)
        .env("ANSIBLE_LOCAL_TEMP", dir)
        .env("ANSIBLE_STDOUT_CALLBACK", "ansible.builtin.json")
        .env_remove("ANSIBLE_CONFIG")
        .current_dir(dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ansible-playbook gave no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let hosts = report["plays"][0]["tasks"][0]["hosts"].as_object().unwrap();
    let by_host = hosts
        .iter()
        .map(|(name, r)| {
            let msg = r["msg"].as_str().unwrap_or_else(|| panic!("{r}"));
            (name.clone(), serde_json::from_str(msg).unwrap())
        })
        .collect();
    Value::Object(by_host)
}

#[test]
fn variables_beside_the_inventory_and_the_playbook_resolve_as_in_ansible() {
    let before = machine_digest();
    let dir = project();
    let (ours, theirs) = (nodeprov(dir.path()), ansible(dir.path()));
    assert_eq!(
        ours, theirs,
        "nodeprov:\n{ours:#}\nansible-playbook:\n{theirs:#}"
    );
    // What Ansible's order makes of them, so that the comparison is known
    // to decide something: `group_vars/all` wins over `[gpu:vars]`, the
    // playbook's folder over the inventory's.
    let node1 = &theirs["node1"];
    for (name, from) in [
        ("c", "inv-all"),
        ("e", "play-all"),
        ("i", "inv-gpu"),
        ("j", "play-gpu"),
        ("k", "src-host"),
        ("n", "play-host"),
    ] {
        assert_eq!(node1[name], from, "{name}: {node1}");
    }
    assert_eq!(theirs["node2"]["o"], "-");
    assert_machine_unchanged(&before);
}
