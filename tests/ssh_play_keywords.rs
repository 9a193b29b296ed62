//! The play's `remote_user` over real SSH: the login of hosts whose
//! inventory names no `ansible_user`, while an inventory's user still wins.
//! `throttle`: a task's changes are applied by at most so many hosts at
//! once.

mod support;

use support::control::{Control, Run};
use support::sshd::{SshFleet, SshHost, TestKey};
use support::{assert_machine_unchanged, machine_digest};

const PLAYBOOK: &str = "
- hosts: all
  remote_user: deploy
  gather_facts: false
  tasks:
    - name: record the login user
      shell: id -un > /tmp/whoami
";

fn whoami(host: &SshHost) -> String {
    std::fs::read_to_string(host.host.path("/tmp/whoami")).unwrap_or_default()
}

#[test]
fn remote_user_logs_in_where_the_inventory_names_no_user() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let (plain, named) = (&fleet.hosts[0], &fleet.hosts[1]);
    let control = Control::new(&fleet);
    let key = TestKey::get().path();
    let line = |h: &SshHost, extra: &str| {
        format!(
            "{} ansible_host={} ansible_ssh_private_key_file={} {extra}\n",
            h.name(),
            h.ip(),
            key.display()
        )
    };
    let inventory = control.write(
        "inventory.ini",
        &(line(plain, "") + &line(named, "ansible_user=ops")),
    );
    let playbook = control.write("whoami.yml", PLAYBOOK);
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(whoami(plain), "deploy\n");
    assert_eq!(whoami(named), "ops\n");
    assert_machine_unchanged(&before);
}

/// `meta: reset_connection` logs in again, so a group the login user just
/// joined holds for the tasks after it, as after Ansible's reset.
#[test]
fn reset_connection_makes_a_new_group_hold() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write(
        "groups.yml",
        "
- hosts: all
  gather_facts: false
  tasks:
    - group: {name: npjoined}
    - user: {name: root, groups: npjoined, append: true}
    - shell: id -Gn > /root/np-groups-before
    - meta: reset_connection
    - shell: id -Gn > /root/np-groups-after
",
    );
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    let groups = |f: &str| std::fs::read_to_string(host.host.path(f)).unwrap_or_default();
    assert!(!groups("/root/np-groups-before").contains("npjoined"));
    assert!(
        groups("/root/np-groups-after").contains("npjoined"),
        "{run}"
    );
    assert_machine_unchanged(&before);
}

/// Each host records when its step started and ended (nanoseconds since
/// the epoch, the machine's one clock): with `throttle: 1` no two hosts'
/// spans overlap, while the tasks around it still run on all hosts at once.
#[test]
fn a_throttled_task_is_applied_by_one_host_at_a_time() {
    let before = machine_digest();
    let fleet = SshFleet::start(3);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write(
        "throttled.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: before\n      copy: {dest: /root/before, content: x}\n    - name: one at a time\n      throttle: 1\n      shell: date +%s%N > /root/start; sleep 0.3; date +%s%N > /root/end\n",
    );
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    let read = |h: &SshHost, f: &str| -> u128 {
        let text = std::fs::read_to_string(h.host.path(f)).unwrap();
        text.trim().parse().unwrap()
    };
    let mut spans: Vec<(u128, u128)> = fleet
        .hosts
        .iter()
        .map(|h| (read(h, "/root/start"), read(h, "/root/end")))
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two hosts ran it at once: {spans:?}"
        );
    }
    assert_machine_unchanged(&before);
}
