//! The real binary over SSH when things go wrong: hostile passwords, hosts
//! that die or freeze mid-run, a controller killed mid-run, full disks.
//! Every run must report what really happened, and the next run converge.

mod support;

use support::control::{Control, Run};
use support::sshd::{SshFleet, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

/// Writes a root-owned file in /etc, which only an escalated (or root) login can.
const MARKER_PLAYBOOK: &str = "
- name: marker
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: root-owned marker
      copy: {dest: /etc/nodeprov-marker, content: \"{{ inventory_hostname }}\\n\", mode: \"0644\"}
";

#[test]
fn a_become_password_with_a_line_break_is_refused_and_never_reaches_the_shell() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);
    let injected = "touch /etc/injected";

    let inventory = control.write("inventory.ini", &fleet.inventory("deploy", ""));
    let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
    cmd.env(
        "NODEPROV_BECOME_PASSWORD",
        format!("{DEPLOY_PASSWORD}\n{injected}"),
    );
    let from_env = Run::of(cmd);
    assert_eq!(from_env.code, 1, "{from_env}");
    assert!(
        from_env
            .stderr
            .contains("NODEPROV_BECOME_PASSWORD: the become password contains a newline"),
        "{from_env}"
    );

    let yaml = format!(
        "all:\n  hosts:\n    {}:\n      ansible_host: {}\n      ansible_user: deploy\n      \
         ansible_ssh_private_key_file: {}\n      ansible_become_password: \"{DEPLOY_PASSWORD}\\r{injected}\"\n",
        host.name(),
        host.ip(),
        host.key_path().display()
    );
    let inventory = control.write("inventory.yml", &yaml);
    let from_inventory = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(from_inventory.code, 4, "{from_inventory}");
    let msg = from_inventory.unreachable(host.name());
    assert!(
        msg.contains("ansible_become_password: the become password contains a carriage return"),
        "{msg}"
    );
    assert!(
        !host.host.path("/etc/injected").exists(),
        "{from_inventory}"
    );
    assert!(!host.host.path("/etc/nodeprov-marker").exists());
    assert_machine_unchanged(&before);
}
