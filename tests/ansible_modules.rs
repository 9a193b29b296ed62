//! Ansible's own modules where nodeprov has none, over real SSH with the
//! ansible-core that scripts/test.sh installs (target/ansible-venv, or the
//! venv NODEPROV_ANSIBLE_VENV names): a custom module from the playbook's
//! `library/` and a builtin nodeprov lacks run in check, apply, apply
//! again (nothing changed, one round trip) and check again; `register` and
//! `when` read their return values; `become_user` and `no_log` hold, and
//! the secret argument is on no command line and in no report. Without
//! ansible-core on the controller, or Python on the host, each says so in
//! one line.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use support::control::{Control, Run};
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

/// A module as a role or playbook ships one: it makes a file once, knows
/// check mode, takes a secret, and can linger so a sampler sees it run.
const MY_MOD: &str = r#"
import os, time
from ansible.module_utils.basic import AnsibleModule

def main():
    m = AnsibleModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            secret=dict(type='str', no_log=True),
            linger=dict(type='float', default=0),
        ),
        supports_check_mode=True,
    )
    time.sleep(m.params['linger'])
    path = m.params['path']
    if os.path.exists(path):
        m.exit_json(changed=False, path=path, uid=os.getuid())
    if not m.check_mode:
        with open(path, 'w') as f:
            f.write('made\n')
    m.exit_json(changed=True, path=path, uid=os.getuid(), msg='made %s' % path)

main()
"#;

const SECRET: &str = "FALLBACK-SECRET-7731";

const PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: a native task before
      copy: {dest: /root/np-native-1, content: "one\n"}
    - name: the playbook's own module
      my_mod: {path: /root/np-made}
      register: made
    - name: a builtin nodeprov lacks
      known_hosts: {path: /root/np_known_hosts, name: np-peer.example, key: "np-peer.example {key}"}
      register: known
    - name: register and when read what the modules returned
      copy:
        dest: /root/np-summary
        content: "{{ made.path }} {{ known.failed }}\n"
      when: made.uid == 0
    - name: a parameter the native module lacks
      file: {path: /root/np-dir, state: directory, mode: "0750", unsafe_writes: false}
    - name: as ops, with a secret
      my_mod: {path: /tmp/np-ops-made, secret: "FALLBACK-SECRET-7731", linger: 1.5}
      become: true
      become_user: ops
      no_log: true
    - name: a native task after
      copy: {dest: /root/np-native-2, content: "two\n"}
"#;

/// The Python of the venv holding ansible-core.
fn ansible_python() -> PathBuf {
    let dir = std::env::var("NODEPROV_ANSIBLE_VENV").unwrap_or("target/ansible-venv".into());
    let python = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(dir)
        .join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which installs ansible-core there",
        python.display()
    );
    python
}

/// Every process by its PID, with its command line, the isolated hosts'
/// among them.
fn processes() -> Vec<(i32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
            let line = std::fs::read(e.path().join("cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&line).replace('\0', " ")))
        })
        .collect()
}

fn command_lines() -> Vec<String> {
    processes().into_iter().map(|(_, line)| line).collect()
}

#[test]
fn ansible_modules_check_apply_apply_again_and_check_again() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    std::fs::create_dir(control.path("library")).unwrap();
    control.write("library/my_mod.py", MY_MOD);
    let public = support::sshd::TestKey::get().public();
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    let playbook = control.write("site.yml", &PLAYBOOK.replace("{key}", &key.join(" ")));
    let python = ansible_python();
    let run = |verb: &str, report: &str| {
        let reports = control.path(report).display().to_string();
        let mut cmd = control.nodeprov(&[verb, &playbook, "-i", &inventory, "--report", &reports]);
        cmd.env("NODEPROV_ANSIBLE_PYTHON", &python);
        Run::json(cmd)
    };

    let mut validate = std::process::Command::new(env!("CARGO_BIN_EXE_nodeprov"));
    validate
        .args(["validate", &playbook, "-i", &inventory])
        .env("NODEPROV_ANSIBLE_PYTHON", &python);
    let validate = Run::of(validate);
    assert_eq!(validate.code, 0, "{validate}");
    for line in [
        "site.yml:8:7: runs Ansible's module my_mod (ansible-core 2.17",
        "site.yml:11:7: runs Ansible's module ansible.builtin.known_hosts (ansible-core 2.17",
    ] {
        assert!(validate.stdout.contains(line), "{line}: {validate}");
    }
    assert!(
        validate.stdout.contains("; native: no, no native module)"),
        "{validate}"
    );
    assert!(
        validate.stdout.contains(
            "site.yml:19:7: runs Ansible's module ansible.builtin.file (ansible-core 2.17"
        ) && validate
            .stdout
            .contains("native: no, the native module lacks 'unsafe_writes')"),
        "{validate}"
    );

    let check = run("check", "check-1");
    assert_eq!(check.code, 2, "drift before the first apply: {check}");
    assert!(
        !host.host.path("/root/np-made").exists(),
        "check made the file"
    );
    let h = check.host(host.name());
    let made = &h["tasks"][1];
    assert_eq!(made["status"], "drift", "{made}");
    assert_eq!(h["tasks"][2]["status"], "drift", "{h}");

    let stop = AtomicBool::new(false);
    let (leaked, sampled, first) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let (mut leaked, mut sampled) = (Vec::new(), 0);
            while !stop.load(Ordering::Relaxed) {
                for line in command_lines() {
                    if line.contains(SECRET) {
                        leaked.push(line);
                    } else if line.contains("ansible.modules.my_mod") {
                        sampled += 1;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            (leaked, sampled)
        });
        let first = run("apply", "apply-1");
        stop.store(true, Ordering::Relaxed);
        let (leaked, sampled) = sampler.join().unwrap();
        (leaked, sampled, first)
    });
    assert_eq!(first.code, 0, "{first}");
    assert!(sampled > 0, "the sampler never saw the module run");
    assert!(
        leaked.is_empty(),
        "the secret on a command line: {leaked:?}"
    );
    let h = first.host(host.name());
    assert_eq!(h["recap"]["changed"], 7, "{h}");
    let made = std::fs::read_to_string(host.host.path("/root/np-made")).unwrap_or_default();
    assert_eq!(made, "made\n");
    let summary = std::fs::read_to_string(host.host.path("/root/np-summary")).unwrap_or_default();
    assert_eq!(summary, "/root/np-made False\n");
    let known = std::fs::read_to_string(host.host.path("/root/np_known_hosts")).unwrap_or_default();
    assert_eq!(known, format!("np-peer.example {}\n", key.join(" ")));
    let dir = std::fs::metadata(host.host.path("/root/np-dir")).map(|m| m.mode() & 0o7777);
    assert_eq!(dir.ok(), Some(0o750));
    let ops_file = host.host.path("/tmp/np-ops-made");
    let ops_uid = std::fs::metadata(&ops_file).map(|m| m.uid()).unwrap_or(0);
    assert_ne!(ops_uid, 0, "the module ran as ops: {}", ops_file.display());
    // The payload was kept in each user's own folder, not world-readable.
    for home in ["/root", "/run/home/ops"] {
        let dir = host.host.path(&format!("{home}/.ansible/nodeprov"));
        let mode = std::fs::metadata(&dir)
            .map(|m| m.mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o700, "{}", dir.display());
    }

    let again = run("apply", "apply-2");
    assert_eq!(again.code, 0, "{again}");
    let h = again.host(host.name());
    let changed: Vec<&serde_json::Value> = h["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] != "ok")
        .collect();
    assert_eq!(h["recap"]["changed"], 0, "{changed:?}");
    // The native tasks' one trip, and one for each run of Ansible's
    // modules, as Ansible pays; the unchanged runs keep the facts.
    assert_eq!(h["round_trips"], 5, "{h}");

    let last = run("check", "check-2");
    assert_eq!(last.code, 0, "{last}");
    assert_eq!(last.host(host.name())["round_trips"], 1, "{last}");

    // A module without check mode: unknown in check, run in apply, where
    // its "unchanged" keeps the facts the native task after it reads.
    let waits = control.write(
        "waits.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - wait_for: {path: /etc/hostname, timeout: 5}\n\
         \x20   - copy: {dest: /root/np-native-1, content: \"one\\n\"}\n",
    );
    let wait = |verb: &str| {
        let mut cmd = control.nodeprov(&[verb, &waits, "-i", &inventory]);
        cmd.env("NODEPROV_ANSIBLE_PYTHON", &python);
        Run::json(cmd)
    };
    let checked = wait("check");
    let task = &checked.host(host.name())["tasks"][0];
    assert_eq!(task["status"], "unknown", "{checked}");
    assert!(
        task["message"]
            .as_str()
            .unwrap_or_default()
            .contains("does not support check mode"),
        "{task}"
    );
    let applied = wait("apply");
    assert_eq!(applied.code, 0, "{applied}");
    let h = applied.host(host.name());
    assert_eq!(h["recap"]["ok"], 2, "{h}");
    assert_eq!(h["round_trips"], 2, "the probe, then the module's run: {h}");

    let mut outputs = Vec::new();
    for (run, dir) in [
        (&check, "check-1"),
        (&first, "apply-1"),
        (&again, "apply-2"),
        (&last, "check-2"),
    ] {
        outputs.push(run.stdout.clone());
        outputs.push(run.stderr.clone());
        for f in ["report.json", "junit.xml", "report.html"] {
            outputs.push(control.read(&format!("{dir}/{f}")));
        }
    }
    for text in &outputs {
        assert!(!text.contains(SECRET), "a report shows the secret:\n{text}");
        // The payload travels on stdin and no report carries a copy.
        assert!(text.len() < 200_000, "a report of {} bytes", text.len());
    }
    drop(fleet);
    assert_machine_unchanged(&before);
}

#[test]
fn no_ansible_core_on_the_controller_is_one_clear_error_at_validate() {
    let dir = tempfile::tempdir().unwrap();
    let playbook = dir.path().join("site.yml");
    std::fs::write(
        &playbook,
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - tempfile: {state: file}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .arg("validate")
        .arg(&playbook)
        .env("NODEPROV_ANSIBLE_PYTHON", dir.path().join("no-such-python"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("site.yml:4:7"), "{stderr}");
    assert!(
        stderr.contains("no ansible-core on this controller"),
        "{stderr}"
    );
}

/// The cached payload may change between the probe that put it in place
/// and the run, minutes later in a long apply: whoever could swap it (a
/// link at `~/.ansible`, a loose cache folder) must get nothing run. The
/// first task swaps every cached payload for one of its own, as such a
/// user would in between.
#[test]
fn a_payload_swapped_between_probe_and_run_runs_nothing() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let python = ansible_python();
    let made = std::process::Command::new(&python)
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('ansible/__init__.py', '')\n\
             z.writestr('ansible/modules/__init__.py', '')\n\
             z.writestr('ansible/modules/wait_for.py', \"open('/root/np-swapped', 'w').write('ran')\\n\")\n\
             z.close()\n",
        ])
        .arg(host.host.path("/root/swapped.zip"))
        .status()
        .unwrap();
    assert!(made.success());
    let playbook = control.write(
        "site.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    \
         - shell: for f in /root/.ansible/nodeprov/*.zip; do cp /root/swapped.zip \"$f\"; done\n    \
         - wait_for: {path: /etc/hostname}\n",
    );
    let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
    cmd.env("NODEPROV_ANSIBLE_PYTHON", &python);
    let run = Run::json(cmd);
    assert_eq!(run.code, 4, "{run}");
    let task = &run.host(host.name())["tasks"][1];
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["message"].as_str().unwrap_or_default();
    assert!(message.contains("changed since it was checked"), "{task}");
    assert!(
        !host.host.path("/root/np-swapped").exists(),
        "the swapped payload ran"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}

#[test]
fn no_python_on_the_host_is_one_clear_line() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &fleet.inventory("root", "ansible_python_interpreter=/opt/none/python3"),
    );
    let playbook = control.write(
        "site.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - wait_for: {path: /etc/hostname}\n",
    );
    let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
    cmd.env("NODEPROV_ANSIBLE_PYTHON", ansible_python());
    let run = Run::json(cmd);
    assert_eq!(run.code, 4, "a host failed: {run}");
    let task = &run.host(host.name())["tasks"][0];
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["message"].as_str().unwrap_or_default();
    assert_eq!(
        message, "The module interpreter '/opt/none/python3' was not found.",
        "the interpreter the inventory names, in Ansible's words: {task}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// A role's and a playbook's filter and test plugins, as RHEL9-CIS ships
/// its `grub_hash`: `validate` knows their names, and a run renders them
/// through ansible-core, with positional and keyword arguments.
#[test]
fn filter_and_test_plugins_of_the_playbook_and_its_roles_render() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    for dir in [
        "filter_plugins",
        "test_plugins",
        "roles/tune/tasks",
        "roles/tune/filter_plugins",
    ] {
        std::fs::create_dir_all(control.path(dir)).unwrap();
    }
    control.write(
        "filter_plugins/site.py",
        "class FilterModule(object):\n    def filters(self):\n        \
         return {'shout': lambda s, times=1: (s.upper() + '!') * times}\n",
    );
    control.write(
        "test_plugins/site.py",
        "class TestModule(object):\n    def tests(self):\n        \
         return {'even_length': lambda s: len(s) % 2 == 0}\n",
    );
    control.write(
        "roles/tune/filter_plugins/hashing.py",
        "import hashlib\n\nclass FilterModule(object):\n    def filters(self):\n        \
         return {'short_hash': lambda s, n: hashlib.sha256(s.encode()).hexdigest()[:n]}\n",
    );
    control.write(
        "roles/tune/tasks/main.yml",
        "- copy:\n    dest: /root/np-plugins\n    \
         content: \"{{ 'grub' | short_hash(8) }} {{ 'hi' | shout(times=2) }} {{ 'ab' is even_length }} \
         {{ ['a', 'a', 'b'] | community.general.counter | dict2items | map(attribute='value') | join(',') }}\\n\"\n",
    );
    let playbook = control.write(
        "site.yml",
        "- hosts: all\n  gather_facts: false\n  roles: [tune]\n",
    );
    let python = ansible_python();
    let run = |verb: &str| {
        let mut cmd = control.nodeprov(&[verb, &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_ANSIBLE_PYTHON", &python);
        Run::json(cmd)
    };
    let first = run("apply");
    assert_eq!(first.code, 0, "{first}");
    let written = std::fs::read_to_string(host.host.path("/root/np-plugins")).unwrap_or_default();
    // The last, a collection's filter, named by its full name.
    assert_eq!(written, "f78c9c9d HI!HI! True 2,1\n");
    let again = run("check");
    assert_eq!(again.code, 0, "{again}");

    // Without ansible-core, validate says why the plugins cannot run.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(["validate", &playbook])
        .env("NODEPROV_ANSIBLE_PYTHON", control.path("no-such-python"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown filter 'short_hash' (the plugins in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no ansible-core on this controller"),
        "{stderr}"
    );
    assert!(
        stderr.contains("and community.general.counter cannot run"),
        "{stderr}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// What the native `package` cannot do, under the names Ansible runs its
/// `dnf` module by: a package group, and a parameter only `dnf` has, given
/// to `dnf` and to `yum` (whose module ansible-core 2.17 dropped: its
/// action plugin redirects to `dnf`'s, which runs the `dnf` module).
#[test]
fn package_groups_and_dnf_parameters_run_ansibles_dnf() {
    let control = tempfile::tempdir().unwrap();
    let playbook = control.path().join("site.yml");
    std::fs::write(
        &playbook,
        "- hosts: all\n  tasks:\n    - dnf: {name: \"@Development Tools\"}\n    - yum: {name: \"@DGX-1 Configurations\", state: present}\n    - yum: {name: tmux, sslverify: false}\n",
    )
    .unwrap();
    let mut validate = std::process::Command::new(env!("CARGO_BIN_EXE_nodeprov"));
    validate
        .args(["validate", playbook.to_str().unwrap(), "-i", "localhost,"])
        .current_dir(control.path())
        .env("NODEPROV_ANSIBLE_PYTHON", ansible_python());
    let validate = Run::of(validate);
    assert_eq!(validate.code, 0, "{validate}");
    for (line, why) in [
        (3, "is a package group"),
        (4, "is a package group"),
        (5, "the native module lacks 'sslverify'"),
    ] {
        let at = format!("site.yml:{line}:7: runs Ansible's module ansible.builtin.dnf (");
        let shown = validate.stdout.lines().find(|l| l.contains(&at));
        assert!(
            shown.is_some_and(|l| l.contains(why)),
            "{at} {why}: {validate}"
        );
    }
}

/// A module that says which process ran it, and what it was given.
const WHO_MOD: &str = r#"
import os
from ansible.module_utils.basic import AnsibleModule

def main():
    m = AnsibleModule(argument_spec=dict(n=dict(type='int')), supports_check_mode=True)
    with open('/proc/%d/cmdline' % os.getppid(), 'rb') as f:
        parent = f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    umask = os.umask(0)
    os.umask(umask)
    m.exit_json(changed=False, pid=os.getpid(), ppid=os.getppid(), uid=os.getuid(),
                parent=parent, token=os.environ.get('NP_TOKEN', ''), umask=umask)

main()
"#;

const RUNNER_SECRET: &str = "RUNNER-SECRET-4410";

/// The processes whose command line holds `needle`, in `sshd`'s PID
/// namespace (the isolated host's), by their PID out here.
fn processes_of_host(sshd: i32, needle: &str) -> Vec<i32> {
    let ns = |pid: i32| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let host_ns = ns(sshd);
    assert!(host_ns.is_some(), "no sshd {sshd}");
    processes()
        .into_iter()
        .filter(|(pid, line)| line.contains(needle) && ns(*pid) == host_ns)
        .map(|(pid, _)| pid)
        .collect()
}

/// Ansible's modules run in forks of one runner per host and user, which
/// already imported module_utils, instead of a Python per task: the tasks
/// of one user share a runner, another user gets their own, each fork
/// sees its task's environment and umask, the runner itself carries no
/// task's secret, and it ends on its own once the run is over.
#[test]
fn ansible_modules_run_in_forks_of_one_runner_per_host_and_user() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    std::fs::create_dir(control.path("library")).unwrap();
    control.write("library/who.py", WHO_MOD);
    let playbook = control.write(
        "site.yml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    \
             - who: {{n: 1}}\n      register: r1\n    \
             - who: {{n: 2}}\n      register: r2\n      environment: {{NP_TOKEN: {RUNNER_SECRET}}}\n    \
             - who: {{n: 3}}\n      register: r3\n      become: true\n      become_user: ops\n    \
             - copy:\n        dest: /root/np-runner.json\n        content: \"{{{{ [r1, r2, r3] | to_json }}}}\"\n"
        ),
    );
    let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
    cmd.env("NODEPROV_ANSIBLE_PYTHON", ansible_python());
    let run = Run::json(cmd);
    assert_eq!(run.code, 0, "{run}");

    let runners = processes_of_host(host.sshd_pid(), "--serve run-");
    assert_eq!(runners.len(), 2, "one runner for root, one for ops");
    for pid in &runners {
        for what in ["cmdline", "environ"] {
            let text = std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&text).contains(RUNNER_SECRET),
                "a task's secret in the runner's {what}"
            );
        }
    }

    let text = std::fs::read_to_string(host.host.path("/root/np-runner.json")).unwrap();
    let r: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    for result in &r {
        let parent = result["parent"].as_str().unwrap_or_default();
        assert!(parent.contains("--serve run-"), "run by a runner: {result}");
        assert_eq!(result["umask"], 0o22, "{result}");
    }
    assert_eq!(r[0]["ppid"], r[1]["ppid"], "one runner for root's tasks");
    assert_ne!(r[0]["pid"], r[1]["pid"], "a fork per task");
    assert_eq!(r[0]["token"], "", "{}", r[0]);
    assert_eq!(r[1]["token"], RUNNER_SECRET, "the task's environment");
    assert_ne!(r[2]["uid"], 0, "ops's task ran as ops: {}", r[2]);
    assert_ne!(r[2]["ppid"], r[0]["ppid"], "ops has a runner of their own");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !processes_of_host(host.sshd_pid(), "--serve run-").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the runners outlived the run by a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    for home in ["/root", "/run/home/ops"] {
        let cache = host.host.path(&format!("{home}/.ansible/nodeprov"));
        let left: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("run-") || n.starts_with(".run."))
            .collect();
        assert!(
            left.is_empty(),
            "the runner left {left:?} in {}",
            cache.display()
        );
    }
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// The host-side runner script alone, with the host's own Python: a task
/// no runner answers runs in the client, with site-packages as a plain
/// Python has them; a started runner runs it in a fork, passes on the
/// module's output and exit status, and leaves nothing behind once idle.
#[test]
fn the_runner_script_runs_a_task_itself_or_in_a_fork_of_its_runner() {
    const RUNNER: &str = include_str!("../src/modules/ansible_module/runner.py");
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("payload.zip");
    let made = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             for p in ['ansible/__init__.py', 'ansible/module_utils/__init__.py',\n\
                       'ansible/module_utils/common/__init__.py', 'ansible/modules/__init__.py']:\n\
             \x20   z.writestr(p, '')\n\
             z.writestr('ansible/module_utils/common/parameters.py', 'PASS_VARS = {}\\n')\n\
             z.writestr('ansible/module_utils/basic.py', '_ANSIBLE_ARGS = None\\n')\n\
             z.writestr('ansible/modules/probe.py', '''\n\
             import json, os, resource, sys\n\
             from ansible.module_utils import basic\n\
             parent = open('/proc/%d/cmdline' % os.getppid(), 'rb').read().replace(b'\\\\0', b' ').decode()\n\
             site = any(p.endswith(('site-packages', 'dist-packages')) for p in sys.path)\n\
             print(json.dumps(dict(args=json.loads(basic._ANSIBLE_ARGS), parent=parent, site=site,\n\
             \x20                     cwd=os.getcwd(), x=os.environ.get('NP_X'),\n\
             \x20                     nofile=resource.getrlimit(resource.RLIMIT_NOFILE)[0])))\n\
             sys.exit(3)\n\
             ''')\n\
             z.close()\n",
        ])
        .arg(&zip)
        .status()
        .unwrap();
    assert!(made.success());
    let socket = dir.path().join("run-test");
    let ask = || {
        // The task's shell lowers a limit, which its fork takes on too.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "ulimit -S -n 200 && exec \"$0\" \"$@\"",
                "/usr/bin/python3",
            ])
            .args(["-S", "-c", RUNNER, "--via"])
            .arg(&socket)
            .arg(&zip)
            .arg("ansible.modules.probe")
            .current_dir("/")
            .env("NP_X", "task's own")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(br#"{"ANSIBLE_MODULE_ARGS": {"a": 1, "_ansible_check_mode": true}}"#)
            .unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let result: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code(), result)
    };

    let (code, alone) = ask();
    assert_eq!(code, Some(3), "the module's exit status: {alone}");
    assert!(
        !alone["parent"].as_str().unwrap().contains("--serve"),
        "{alone}"
    );
    assert_eq!(alone["site"], true, "site-packages for the module: {alone}");
    // Internal arguments this payload does not know are dropped.
    assert_eq!(
        alone["args"],
        serde_json::json!({"ANSIBLE_MODULE_ARGS": {"a": 1}})
    );

    let started = std::process::Command::new("/usr/bin/python3")
        .args(["-c", RUNNER, "--serve", "run-test", "1"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(started.success());
    let (code, forked) = ask();
    assert_eq!(code, Some(3), "the module's exit status: {forked}");
    assert!(
        forked["parent"]
            .as_str()
            .unwrap()
            .contains("--serve run-test"),
        "{forked}"
    );
    assert_eq!(forked["args"], alone["args"]);
    assert_eq!((&forked["cwd"], &forked["x"]), (&alone["cwd"], &alone["x"]));
    assert_eq!(
        (&alone["nofile"], &forked["nofile"]),
        (&200.into(), &200.into())
    );
    assert_eq!(forked["site"], true, "{forked}");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_dir(dir.path()).unwrap().count() > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the idle runner stayed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
