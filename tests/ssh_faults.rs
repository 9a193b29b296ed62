//! The real binary over SSH when things go wrong: hostile passwords, hosts
//! that die or freeze mid-run, a controller killed mid-run, full disks.
//! Every run must report what really happened, and the next run converge.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::control::{Control, Run, MARKER_PLAYBOOK};
use support::sshd::{SshFleet, SshHost, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

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

/// Writes /etc/first, then waits in a step for as long as the host's
/// /tmp/hold exists, then writes /etc/last: a test can strike while the
/// host is inside the waiting step.
const HOLD_PLAYBOOK: &str = "
- name: hold
  hosts: all
  gather_facts: false
  tasks:
    - name: first file
      copy: {dest: /etc/first, content: \"1\\n\"}
    - name: wait
      shell: touch /tmp/waiting; while [ -e /tmp/hold ]; do sleep 0.1; done; touch /tmp/waited
      args: {creates: /tmp/waited}
    - name: last file
      copy: {dest: /etc/last, content: \"2\\n\"}
";

/// Starts `nodeprov apply --format json` in the background.
fn start_apply(control: &Control, playbook: &str, inventory: &str, extra: &[&str]) -> Child {
    let mut cmd = control.nodeprov(&["apply", playbook, "-i", inventory, "--format", "json"]);
    cmd.args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("spawn nodeprov")
}

fn finish(child: Child, started: Instant) -> Run {
    let out = child.wait_with_output().expect("wait for nodeprov");
    Run::finished(out, started.elapsed())
}

/// Waits until `path` exists inside the host.
fn wait_for(host: &SshHost, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !host.host.path(path).exists() {
        assert!(
            Instant::now() < deadline,
            "{path} never appeared on {}",
            host.name()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process of the host's sshd tree except the listening sshd itself:
/// the per-connection servers and what they run.
fn session_tree(host: &SshHost) -> Vec<i32> {
    let mut found = Vec::new();
    let mut queue = vec![host.sshd_pid()];
    while let Some(pid) = queue.pop() {
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
        for child in children.unwrap_or_default().split_whitespace() {
            let child: i32 = child.parse().expect("pid");
            found.push(child);
            queue.push(child);
        }
    }
    found
}

fn signal_all(pids: &[i32], sig: i32) {
    for pid in pids {
        // SAFETY: kill(2) on processes of a test host's own sshd tree.
        unsafe { libc::kill(*pid, sig) };
    }
}

/// (task name, status) of a host's tasks in the JSON report.
fn statuses(run: &Run, host: &str) -> Vec<(String, String)> {
    let tasks = run.host(host)["tasks"].as_array().expect("tasks").clone();
    tasks
        .iter()
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            (field("task"), field("status"))
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn exists(host: &SshHost, path: &str) -> bool {
    Path::new(&host.host.path(path)).exists()
}

#[test]
fn sshd_killed_mid_apply_reports_only_the_finished_step_changed_and_the_rerun_converges() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let (victim, other) = (&fleet.hosts[0], &fleet.hosts[1]);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("hold.yml", HOLD_PLAYBOOK);
    std::fs::write(victim.host.path("/tmp/hold"), "").unwrap();

    let started = Instant::now();
    let child = start_apply(&control, &playbook, &inventory, &[]);
    wait_for(victim, "/tmp/waiting");
    signal_all(&session_tree(victim), libc::SIGKILL);
    let run = finish(child, started);

    assert_eq!(run.code, 4, "{run}");
    assert!(
        run.unreachable(victim.name()).contains("host unreachable"),
        "{run}"
    );
    assert_eq!(
        statuses(&run, victim.name()),
        pairs(&[("first file", "changed"), ("wait", "unreachable")]),
        "{run}"
    );
    let wait = &run.host(victim.name())["tasks"][1];
    assert!(
        wait["message"]
            .as_str()
            .unwrap()
            .contains("may have taken effect"),
        "{run}"
    );
    assert_eq!(run.host(victim.name())["recap"]["changed"], 1, "{run}");
    assert_eq!(
        std::fs::read_to_string(victim.host.path("/etc/first")).unwrap(),
        "1\n"
    );
    assert!(!exists(victim, "/etc/last"));
    assert_eq!(write_temps(victim), Vec::<String>::new());
    assert_eq!(
        statuses(&run, other.name()),
        pairs(&[
            ("first file", "changed"),
            ("wait", "changed"),
            ("last file", "changed")
        ]),
        "{run}"
    );

    std::fs::remove_file(victim.host.path("/tmp/hold")).unwrap();
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];
    let rerun = Run::json(control.nodeprov(&args));
    assert_eq!(rerun.code, 0, "{rerun}");
    assert_eq!(
        statuses(&rerun, victim.name()),
        pairs(&[
            ("first file", "ok"),
            ("wait", "changed"),
            ("last file", "changed")
        ]),
        "{rerun}"
    );
    let settled = Run::json(control.nodeprov(&args));
    assert_eq!(settled.code, 0, "{settled}");
    assert!(settled.hosts_with("changed").is_empty(), "{settled}");
    assert_machine_unchanged(&before);
}

/// Temp files of nodeprov's atomic writes left in the host's /etc.
fn write_temps(host: &SshHost) -> Vec<String> {
    let entries = std::fs::read_dir(host.host.path("/etc")).expect("list the host's /etc");
    entries
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".nodeprov."))
        .collect()
}

#[test]
fn sshd_killed_during_the_probe_changes_and_reports_nothing_and_the_rerun_converges() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    // A read-only command rides in the first probe: hold the probe there.
    let playbook = control.write(
        "probe.yml",
        &HOLD_PLAYBOOK.replace(
            "  tasks:\n",
            "  tasks:\n    - name: query\n      shell: touch /tmp/probing; while [ -e /tmp/hold ]; do sleep 0.1; done\n      changed_when: false\n",
        ),
    );
    std::fs::write(host.host.path("/tmp/hold"), "").unwrap();

    let started = Instant::now();
    let child = start_apply(&control, &playbook, &inventory, &[]);
    wait_for(host, "/tmp/probing");
    signal_all(&session_tree(host), libc::SIGKILL);
    let run = finish(child, started);
    assert_eq!(run.code, 4, "{run}");
    assert!(
        run.unreachable(host.name()).contains("host unreachable"),
        "{run}"
    );
    assert_eq!(statuses(&run, host.name()), pairs(&[]), "{run}");
    assert!(!exists(host, "/etc/first") && !exists(host, "/tmp/waiting"));

    std::fs::remove_file(host.host.path("/tmp/hold")).unwrap();
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];
    let rerun = Run::json(control.nodeprov(&args));
    assert_eq!(rerun.code, 0, "{rerun}");
    assert_eq!(rerun.host(host.name())["recap"]["changed"], 3, "{rerun}");
    let settled = Run::json(control.nodeprov(&args));
    assert!(settled.hosts_with("changed").is_empty(), "{settled}");
    assert!(staging_dirs(host).is_empty() && write_temps(host).is_empty());
    assert_machine_unchanged(&before);
}

#[test]
fn a_failed_sudo_reports_no_task_changed() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("ops", ""));
    let playbook = control.write(
        "nosuchuser.yml",
        "
- name: commands as a user that does not exist
  hosts: all
  become: true
  become_user: nosuchuser
  gather_facts: false
  tasks:
    - {name: one, shell: touch /tmp/one}
    - {name: two, shell: touch /tmp/two}
",
    );
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 4, "{run}");
    assert_eq!(
        statuses(&run, host.name()),
        pairs(&[("one", "failed")]),
        "{run}"
    );
    let one = &run.host(host.name())["tasks"][0];
    assert!(
        one["message"]
            .as_str()
            .unwrap()
            .starts_with("not run: privilege escalation failed"),
        "{run}"
    );
    assert!(run.hosts_with("changed").is_empty(), "{run}");
    assert!(!exists(host, "/tmp/one"));
    assert_machine_unchanged(&before);
}
#[test]
fn a_host_frozen_mid_apply_is_unreachable_within_the_command_timeout() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let (victim, other) = (&fleet.hosts[0], &fleet.hosts[1]);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("hold.yml", HOLD_PLAYBOOK);
    std::fs::write(victim.host.path("/tmp/hold"), "").unwrap();

    let started = Instant::now();
    let extra = ["-T", "30", "--command-timeout", "3"];
    let child = start_apply(&control, &playbook, &inventory, &extra);
    wait_for(victim, "/tmp/waiting");
    let frozen = session_tree(victim);
    signal_all(&frozen, libc::SIGSTOP);
    victim.pause();
    let run = finish(child, started);
    victim.resume();
    signal_all(&frozen, libc::SIGCONT);

    assert_eq!(run.code, 4, "{run}");
    let why = run.unreachable(victim.name());
    assert!(why.contains("within 3 s (--command-timeout)"), "{why}");
    assert_eq!(
        statuses(&run, victim.name()),
        pairs(&[("first file", "changed"), ("wait", "unreachable")]),
        "{run}"
    );
    assert_eq!(run.host(other.name())["recap"]["changed"], 3, "{run}");
    // Before, dropping the dead session waited out -T once more, twice.
    assert!(run.took < Duration::from_secs(30), "{run}");
    assert_machine_unchanged(&before);
}

/// Staging directories of nodeprov scripts (and of older versions, which
/// used mktemp's default name) in the host's /tmp.
fn staging_dirs(host: &SshHost) -> Vec<String> {
    let entries = std::fs::read_dir(host.host.path("/tmp")).expect("list the host's /tmp");
    entries
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("nodeprov.") || n.starts_with("tmp."))
        .collect()
}

/// Waits until `done` holds, for at most a minute.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_killed_controller_leaves_no_staging_dirs_on_the_host() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("hold.yml", HOLD_PLAYBOOK);
    let hold = host.host.path("/tmp/hold");
    let strike = |kill_host_side: bool| {
        for leftover in ["/tmp/waiting", "/tmp/waited"] {
            let _ = std::fs::remove_file(host.host.path(leftover));
        }
        std::fs::write(&hold, "").unwrap();
        let mut child = start_apply(&control, &playbook, &inventory, &[]);
        wait_for(host, "/tmp/waiting");
        assert_eq!(staging_dirs(host).len(), 1, "staged while running");
        child.kill().unwrap();
        child.wait().unwrap();
        if kill_host_side {
            let tree = session_tree(host);
            signal_all(&tree, libc::SIGKILL);
            eventually("the session died", || session_tree(host).is_empty());
        }
        std::fs::remove_file(&hold).unwrap();
    };

    // The host-side script outlives the controller and cleans up as it ends.
    strike(false);
    eventually("the host-side script removed its staging dir", || {
        staging_dirs(host).is_empty()
    });

    // Killed on the host too, it cannot: the next run sweeps its dir.
    strike(true);
    assert_eq!(staging_dirs(host).len(), 1, "left by the killed script");
    let rerun = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(rerun.code, 0, "{rerun}");
    assert_eq!(staging_dirs(host), Vec::<String>::new(), "{rerun}");
    assert_machine_unchanged(&before);
}

/// Runs `argv` in the mount namespace of the host's sshd, where its sessions
/// run, and returns its stdout.
fn in_sshd_namespace(host: &SshHost, argv: &[&str]) -> String {
    let out = Command::new("nsenter")
        .args(["-t", &host.sshd_pid().to_string(), "-m", "--"])
        .args(argv)
        .output()
        .expect("spawn nsenter");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{argv:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const FULL_DISK_PLAYBOOK: &str = "
- name: full disk
  hosts: all
  gather_facts: false
  tasks:
    - name: small file
      copy: {dest: /etc/full/small, content: \"fits\\n\"}
    - name: big file
      copy: {src: big.txt, dest: /etc/full/conf}
    - name: after
      copy: {dest: /etc/full/after, content: \"2\\n\"}
";

#[test]
fn a_full_disk_fails_the_write_leaves_the_old_file_and_a_rerun_converges() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("full.yml", FULL_DISK_PLAYBOOK);
    let big = "0123456789abcdef\n".repeat(16 << 10);
    control.write("big.txt", &big);
    std::fs::create_dir(host.host.path("/etc/full")).unwrap();
    // A 64 KiB file system of its own, seen only by the host's sessions.
    in_sshd_namespace(
        host,
        &[
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=64k",
            "tmpfs",
            "/etc/full",
        ],
    );
    in_sshd_namespace(host, &["sh", "-c", "echo old > /etc/full/conf"]);
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];

    let full = Run::json(control.nodeprov(&args));
    assert_eq!(full.code, 4, "{full}");
    assert_eq!(
        statuses(&full, host.name()),
        pairs(&[("small file", "changed"), ("big file", "failed")]),
        "{full}"
    );
    let msg = full.host(host.name())["tasks"][1]["message"]
        .as_str()
        .unwrap();
    assert!(msg.contains("cannot write /etc/full/conf"), "{msg}");
    let listing = in_sshd_namespace(host, &["ls", "-A", "/etc/full"]);
    assert_eq!(listing, "conf\nsmall\n", "no temp file left behind");
    assert_eq!(in_sshd_namespace(host, &["cat", "/etc/full/conf"]), "old\n");
    assert!(staging_dirs(host).is_empty());

    in_sshd_namespace(host, &["mount", "-o", "remount,size=1m", "/etc/full"]);
    let rerun = Run::json(control.nodeprov(&args));
    assert_eq!(rerun.code, 0, "{rerun}");
    assert_eq!(
        statuses(&rerun, host.name()),
        pairs(&[
            ("small file", "ok"),
            ("big file", "changed"),
            ("after", "changed")
        ]),
        "{rerun}"
    );
    assert_eq!(in_sshd_namespace(host, &["cat", "/etc/full/conf"]), big);
    let settled = Run::json(control.nodeprov(&args));
    assert!(settled.hosts_with("changed").is_empty(), "{settled}");
    let mut check = control.nodeprov(&["check", &playbook, "-i", &inventory]);
    check.args(["--format", "json"]);
    assert_eq!(Run::of(check).code, 0);
    assert!(staging_dirs(host).is_empty());
    assert_machine_unchanged(&before);
}

/// A new server still booting: its sshd answers nothing when the play
/// starts. A play that begins with `wait_for_connection` (no facts to
/// gather first) waits for it and goes on; one without is unreachable.
#[test]
fn a_host_that_answers_late_is_waited_for_by_wait_for_connection() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let waits = control.write(
        "waits.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - wait_for_connection: {sleep: 1, timeout: 120}\n    - copy: {dest: /etc/after-wait, content: \"up\\n\"}\n",
    );
    let timeout = ["--timeout", "2"];

    host.pause();
    let started = Instant::now();
    let child = start_apply(&control, &waits, &inventory, &timeout);
    std::thread::sleep(Duration::from_secs(5));
    host.resume();
    let run = finish(child, started);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(
        statuses(&run, host.name()),
        pairs(&[("wait_for_connection", "ok"), ("copy", "changed")])
    );
    let note = run.host(host.name())["tasks"][0]["notes"][0].to_string();
    let waited: u64 = note
        .trim_matches('"')
        .strip_prefix("connected after ")
        .and_then(|n| n.strip_suffix(" s"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!(waited >= 3, "resumed after 5 s, yet {note}");
    assert!(exists(host, "/etc/after-wait"));

    host.pause();
    let plain = control.write("plain.yml", MARKER_PLAYBOOK);
    let run = finish(
        start_apply(&control, &plain, &inventory, &timeout),
        Instant::now(),
    );
    host.resume();
    assert_eq!(run.code, 4, "{run}");
    assert!(
        run.unreachable(host.name())
            .contains("sent no SSH banner within 2 s"),
        "{run}"
    );
}

#[test]
fn a_login_the_server_never_answers_is_said_to_time_out_not_to_be_refused() {
    let mut fleet = SshFleet::start(1);
    // The server looks the key up with a command that outlives the login
    // limit, as a loaded server's slow key lookup would.
    fleet.hosts[0].reconfigure(
        "AuthorizedKeysFile none\nAuthorizedKeysCommand /usr/bin/sleep 90\nAuthorizedKeysCommandUser nobody\n",
    );
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let plain = control.write("plain.yml", MARKER_PLAYBOOK);
    let run = finish(
        start_apply(&control, &plain, &inventory, &["--timeout", "2"]),
        Instant::now(),
    );
    assert_eq!(run.code, 4, "{run}");
    let said = run.unreachable(host.name());
    assert!(
        said.contains("the login of root got no answer within 30 s"),
        "{said}\n{}",
        host.log()
    );
    assert!(!said.contains("authentication failed"), "{said}");
}
