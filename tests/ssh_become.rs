//! Task-level `become` over real SSH: a play that logs in as `deploy`
//! (sudo with a password) where one task becomes root, one becomes `ops`
//! (by name, and by a variable each host renders) and one stays the login
//! user; each file is owned by its task's user, and a second run changes
//! nothing.

mod support;

use std::os::unix::fs::MetadataExt;

use support::control::{Control, Run};
use support::sshd::{SshFleet, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

const PLAYBOOK: &str = "
- hosts: all
  gather_facts: false
  vars:
    app_user: ops
  tasks:
    - name: as root
      copy: {dest: /etc/np-become-root, content: \"root\\n\", mode: \"0644\"}
      become: true
    - name: as ops
      copy: {dest: /tmp/np-become-ops, content: \"ops\\n\", mode: \"0644\"}
      become: true
      become_user: ops
    - name: as the user a variable names
      copy: {dest: /tmp/np-become-var, content: \"var\\n\", mode: \"0644\"}
      become: true
      become_user: \"{{ app_user }}\"
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
        ("/tmp/np-become-var", "ops"),
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

/// The command line of every process on the machine; the isolated hosts'
/// processes are among them, seen from the parent namespace.
fn command_lines() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .collect()
}

#[test]
fn a_dropped_step_is_in_no_command_line_and_starts_clean() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("deploy", ""));
    // Larger than one argument may be (128 KiB).
    let big = "x".repeat(200_000);
    let playbook = control.write(
        "dropped.yml",
        &format!(
            "
- hosts: all
  gather_facts: false
  tasks:
    - name: a big file as ops
      copy: {{dest: /tmp/np-big-ops, content: \"{big}\", mode: \"0644\"}}
      become: true
      become_user: ops
    - name: a secret in the environment as ops
      shell: sleep 1.5
      environment: {{API_TOKEN: OPS-ENV-SECRET}}
      become: true
      become_user: ops
    - name: a secret in the environment as the login user
      shell: sleep 1.5
      environment: {{API_TOKEN: LOGIN-ENV-SECRET}}
    - name: as root
      copy: {{dest: /etc/np-root, content: \"root\\n\"}}
      become: true
    - name: how a dropped step starts
      shell: \"{{ env; echo cwd=$(pwd); ls -l /proc/$$/fd; }} > /tmp/np-ops-start\"
      become: true
      become_user: ops
"
        ),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (seen, run) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let (mut leaked, mut sleeps) = (Vec::new(), 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for line in command_lines() {
                    if line.contains("ENV-SECRET") {
                        leaked.push(line);
                    } else if line.trim_end() == "sleep 1.5" {
                        sleeps += 1;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            (leaked, sleeps)
        });
        let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD);
        let run = Run::json(cmd);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (sampler.join().unwrap(), run)
    });
    assert_eq!(run.code, 0, "{run}");
    let (leaked, sleeps) = seen;
    assert!(sleeps > 0, "the sampler never saw the steps run");
    assert!(leaked.is_empty(), "secrets on command lines: {leaked:?}");
    let big_file = std::fs::read_to_string(host.host.path("/tmp/np-big-ops")).unwrap();
    assert_eq!(big_file.len(), big.len());
    let start = std::fs::read_to_string(host.host.path("/tmp/np-ops-start")).unwrap();
    assert!(start.lines().any(|l| l == "HOME=/run/home/ops"), "{start}");
    assert!(start.lines().any(|l| l == "cwd=/run/home/ops"), "{start}");
    assert!(
        !start.contains("SUDO_") && !start.contains("NODEPROV"),
        "root's environment reached the step: {start}"
    );
    assert!(
        !start.contains("/nodeprov."),
        "a descriptor into root's staging folder: {start}"
    );
    assert_machine_unchanged(&before);
}

#[test]
fn what_a_task_reads_it_reads_as_its_own_user() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    // ops owns a folder and plants in it a link to /etc.
    let setup = host.host.run(&[
        "/bin/sh",
        "-c",
        "set -e
         printf 'ROOT-ONLY-SECRET\\n' >/etc/np-secret.conf; chmod 600 /etc/np-secret.conf
         mkdir -p /tmp/apphome; printf 'ops-content\\n' >/tmp/apphome/own.conf
         ln -s /etc /tmp/apphome/cfg; chown -hR ops: /tmp/apphome",
    ]);
    assert!(setup.status.success(), "{setup:?}");
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("deploy", ""));
    let playbook = control.write(
        "reads.yml",
        "
- hosts: all
  gather_facts: false
  tasks:
    - name: through the planted link
      slurp: {src: /tmp/apphome/cfg/np-secret.conf}
      become: true
      become_user: ops
      ignore_errors: true
    - name: its own file
      slurp: {src: /tmp/apphome/own.conf}
      become: true
      become_user: ops
      register: own
    - name: a root-only file edited as ops
      lineinfile: {path: /etc/np-secret.conf, line: added}
      become: true
      become_user: ops
      ignore_errors: true
    - name: as root
      copy: {dest: /etc/np-root, content: \"root\\n\"}
      become: true
    - name: what ops read
      debug: {msg: \"read {{ own.content | b64decode | trim }}\"}
",
    );
    for format in ["json", "human"] {
        let mut cmd = control.nodeprov(&[
            "check", &playbook, "-i", &inventory, "--diff", "--format", format,
        ]);
        cmd.env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD);
        let run = Run::of(cmd);
        let all = format!("{run}");
        assert!(!all.contains("ROOT-ONLY-SECRET"), "{format}: {all}");
        assert!(all.contains("read ops-content"), "{format}: {all}");
        if format == "json" {
            let tasks = &run.host(host.name())["tasks"];
            assert_eq!(tasks[0]["status"], "failed", "{all}");
            for t in [&tasks[0], &tasks[2]] {
                let message = t["message"].as_str().unwrap_or_default();
                assert!(message.contains("Permission denied"), "{message}");
            }
            assert_eq!(tasks[1]["status"], "ok", "{all}");
            assert_eq!(tasks[2]["status"], "failed", "{all}");
            let probes = run.host(host.name())["probes"].to_string();
            assert!(probes.contains("(as ops)"), "{probes}");
        }
    }
    let secret = std::fs::read_to_string(host.host.path("/etc/np-secret.conf")).unwrap();
    assert_eq!(secret, "ROOT-ONLY-SECRET\n");
    assert_machine_unchanged(&before);
}

/// `become_flags` reach sudo: a play's `-i` makes a login shell of the
/// target user (its home the working folder), and a host's
/// `ansible_become_flags` outranks the play's, as in Ansible.
#[test]
fn a_plays_become_flags_reach_sudo_and_a_hosts_outrank_them() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let playbook = control.write(
        "flags.yml",
        "
- hosts: all
  gather_facts: false
  become: true
  become_flags: -i
  tasks:
    - command: pwd
      register: where
    - copy: {dest: /tmp/np-where, content: \"{{ where.stdout }}\"}
",
    );
    let run = |host_vars: &str| {
        let inventory = control.write("inventory.ini", &fleet.inventory("deploy", host_vars));
        let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD);
        let run = Run::json(cmd);
        assert_eq!(run.code, 0, "{run}");
        std::fs::read_to_string(host.host.path("/tmp/np-where")).unwrap()
    };
    assert_eq!(run(""), "/root");
    assert_ne!(run("ansible_become_flags=-H"), "/root");
    assert_machine_unchanged(&before);
}
