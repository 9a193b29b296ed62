//! `delegate_to` another inventory host and a task's `connection: local`,
//! over real SSH: the MUNGE key pattern of Slurm roles (read the key on the
//! controller node, install it on every node), a file written on the
//! delegate with the node's own variables, and a task run on the
//! controller, and a file fetched from each node to the controller. Check
//! reports the drift, apply converges, apply again changes nothing and
//! check again is clean.

mod support;

use support::control::{Control, Run};
use support::sshd::{self, SshFleet};
use support::{assert_machine_unchanged, machine_digest};

const PLAYBOOK: &str = r#"
- hosts: nodes
  gather_facts: false
  tasks:
    - name: read the key on the controller node
      slurp: {src: /root/munge.key}
      register: key
      delegate_to: "{{ munge_host }}"
    - name: install it here
      copy:
        dest: /root/munge.key
        content: "{{ key.content | b64decode }}"
        mode: "0400"
    - name: record this node on the controller node
      copy:
        dest: "/root/joined-{{ inventory_hostname }}"
        content: "{{ inventory_hostname }}\n"
      delegate_to: "{{ munge_host }}"
    - name: on the controller
      copy:
        dest: "{{ proof_dir }}/local-{{ inventory_hostname }}"
        content: "{{ inventory_hostname }}\n"
      connection: local
    - name: fetch this node's id
      fetch: {src: /root/node-id, dest: "{{ proof_dir }}/fetched"}
"#;

fn changed(run: &Run, host: &str) -> Vec<String> {
    run.host(host)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "changed" || t["status"] == "drift")
        .map(|t| t["task"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn delegated_tasks_run_on_their_delegate_with_their_host_s_variables() {
    let before = machine_digest();
    let fleet = SshFleet::start(3);
    let (munge, nodes) = (&fleet.hosts[0], &fleet.hosts[1..]);
    std::fs::write(munge.host.path("/root/munge.key"), "SECRET-KEY-BYTES\n").unwrap();
    for node in nodes {
        std::fs::write(
            node.host.path("/root/node-id"),
            format!("id of {}\n", node.name()),
        )
        .unwrap();
    }
    let control = Control::new(&fleet);
    let proof = control.path("proof");
    std::fs::create_dir(&proof).unwrap();
    let extra = format!("munge_host={} proof_dir={}", munge.name(), proof.display());
    let mut ini = sshd::inventory(nodes, "root", &extra).replace("[fleet]", "[nodes]");
    ini.push_str(&sshd::inventory(&fleet.hosts[..1], "root", "").replace("[fleet]", "[ctl]"));
    let inventory = control.write("inventory.ini", &ini);
    let playbook = control.write("site.yml", PLAYBOOK);
    let run = |verb: &str| Run::json(control.nodeprov(&[verb, &playbook, "-i", &inventory]));

    let check = run("check");
    assert_eq!(check.code, 2, "{check}");
    assert!(
        !check.stdout.contains("id of"),
        "a fetched file's content is in the check report"
    );
    for node in nodes {
        let drift = changed(&check, node.name());
        assert_eq!(
            drift,
            [
                "install it here",
                "record this node on the controller node",
                "on the controller",
                "fetch this node's id"
            ],
            "{check}"
        );
        assert!(!node.host.path("/root/munge.key").exists());
    }

    let apply = run("apply");
    assert_eq!(apply.code, 0, "{apply}");
    for node in nodes {
        let name = node.name();
        let key = std::fs::read_to_string(node.host.path("/root/munge.key")).unwrap();
        assert_eq!(key, "SECRET-KEY-BYTES\n");
        let joined = munge.host.path(&format!("/root/joined-{name}"));
        assert_eq!(
            std::fs::read_to_string(joined).unwrap(),
            format!("{name}\n")
        );
        assert!(!node.host.path(&format!("/root/joined-{name}")).exists());
        let local = proof.join(format!("local-{name}"));
        assert_eq!(std::fs::read_to_string(local).unwrap(), format!("{name}\n"));
        let fetched = proof.join(format!("fetched/{name}/root/node-id"));
        assert_eq!(
            std::fs::read_to_string(fetched).unwrap(),
            format!("id of {name}\n")
        );
    }
    assert!(
        !apply.stdout.contains("SECRET-KEY-BYTES"),
        "the key's content is in the report"
    );

    let again = run("apply");
    assert_eq!(again.code, 0, "{again}");
    assert!(again.hosts_with("changed").is_empty(), "{again}");
    let last = run("check");
    assert_eq!(last.code, 0, "{last}");
    drop(fleet);
    assert_machine_unchanged(&before);
}
