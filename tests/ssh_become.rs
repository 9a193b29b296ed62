//! Task-level `become` over real SSH: a play that logs in as `deploy`
//! (sudo with a password) where one task becomes root, one becomes `ops`
//! and one stays the login user; each file is owned by its task's user,
//! and a second run changes nothing.

mod support;

use std::os::unix::fs::MetadataExt;

use support::control::{Control, Run};
use support::sshd::{SshFleet, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

const PLAYBOOK: &str = "
- hosts: all
  gather_facts: false
  tasks:
    - name: as root
      copy: {dest: /etc/np-become-root, content: \"root\\n\", mode: \"0644\"}
      become: true
    - name: as ops
      copy: {dest: /tmp/np-become-ops, content: \"ops\\n\", mode: \"0644\"}
      become: true
      become_user: ops
    - name: as the login user
      copy: {dest: /tmp/np-become-login, content: \"login\\n\", mode: \"0644\"}
";

fn uid_of(host: &support::sshd::SshHost, name: &str) -> u32 {
    let passwd = std::fs::read_to_string(host.host.path("/etc/passwd")).unwrap();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == name).then(|| f[2].parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no user {name}"))
}

#[test]
fn each_task_runs_as_its_own_become_user() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("deploy", ""));
    let playbook = control.write("become.yml", PLAYBOOK);
    let apply = || {
        let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD);
        Run::json(cmd)
    };

    let first = apply();
    assert_eq!(first.code, 0, "{first}");
    for (path, user) in [
        ("/etc/np-become-root", "root"),
        ("/tmp/np-become-ops", "ops"),
        ("/tmp/np-become-login", "deploy"),
    ] {
        let meta =
            std::fs::metadata(host.host.path(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(meta.uid(), uid_of(host, user), "{path} belongs to {user}");
    }
    let second = apply();
    assert_eq!(second.code, 0, "{second}");
    assert_eq!(second.host(host.name())["recap"]["changed"], 0, "{second}");
    assert_eq!(second.host(host.name())["round_trips"], 1, "{second}");
    assert_machine_unchanged(&before);
}
