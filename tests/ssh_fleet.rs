//! The real binary over SSH against fleets of isolated hosts, each with its own
//! sshd on 127.0.1.N:22 (tests/support/sshd.rs). nodeprov runs on this side as
//! an operator would run it; everything it reads here (inventory, known_hosts,
//! ssh_config, HOME) lives in a temp dir, never the real ~/.ssh.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::control::{Control, Run, MARKER_PLAYBOOK};
use support::sshd::{keygen, SshFleet, SshHost, TestKey, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

const ROLLOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/sysctl-rollout.yml");

/// Records who logged in, without escalating.
const WHOAMI_PLAYBOOK: &str = "
- name: whoami
  hosts: all
  gather_facts: false
  tasks:
    - name: record the login user
      shell: id -un > /tmp/whoami
";

fn names(fleet: &SshFleet) -> Vec<String> {
    fleet.hosts.iter().map(|h| h.name().to_string()).collect()
}

fn read_inside(host: &SshHost, path: &str) -> String {
    std::fs::read_to_string(host.host.path(path)).unwrap_or_default()
}

/// `SHA256:...` of the host's key, as ssh-keygen prints it.
fn fingerprint(host: &SshHost) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(host.host.path("/etc/ssh/ssh_host_ed25519_key.pub"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn key_auth_as_root_provisions_the_hosts_private_etc() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);

    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    for h in &fleet.hosts {
        assert_eq!(
            read_inside(h, "/etc/nodeprov-marker"),
            format!("{}\n", h.name())
        );
    }
    assert!(!std::path::Path::new("/etc/nodeprov-marker").exists());
    assert_machine_unchanged(&before);
}

/// An ssh-agent on a temp socket, holding the test key.
struct Agent {
    child: Child,
    socket: PathBuf,
}

impl Agent {
    fn start(dir: &std::path::Path) -> Agent {
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn ssh-agent");
        let agent = Agent { child, socket };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !agent.socket.exists() {
            assert!(Instant::now() < deadline, "ssh-agent did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let added = Command::new("ssh-add")
            .arg(TestKey::get().path())
            .env("SSH_AUTH_SOCK", &agent.socket)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(added.success(), "ssh-add failed");
        agent
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn agent_auth_logs_in_without_a_key_file() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &format!(
            "{} ansible_host={} ansible_user=ops\n",
            host.name(),
            host.ip()
        ),
    );
    let playbook = control.write("whoami.yml", WHOAMI_PLAYBOOK);
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];

    let without = Run::json(control.nodeprov(&args));
    assert_eq!(without.code, 4, "{without}");
    assert!(
        without
            .unreachable(host.name())
            .contains("authentication failed"),
        "{without}"
    );

    let agent = Agent::start(control.dir.path());
    let mut cmd = control.nodeprov(&args);
    cmd.env("SSH_AUTH_SOCK", &agent.socket);
    let with = Run::json(cmd);
    assert_eq!(with.code, 0, "{with}");
    assert_eq!(read_inside(host, "/tmp/whoami"), "ops\n");
    assert_machine_unchanged(&before);
}

#[test]
fn password_auth_from_inventory_or_environment() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let (a, b) = (&fleet.hosts[0], &fleet.hosts[1]);
    let control = Control::new(&fleet);
    let playbook = control.write("whoami.yml", WHOAMI_PLAYBOOK);
    let line = |h: &SshHost, extra: &str| {
        format!(
            "{} ansible_host={} ansible_user=deploy {extra}\n",
            h.name(),
            h.ip()
        )
    };
    // a: ansible_password; b: nothing, so it needs NODEPROV_SSH_PASSWORD.
    let inventory = control.write(
        "inventory.ini",
        &(line(a, &format!("ansible_password={DEPLOY_PASSWORD}")) + &line(b, "")),
    );
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];

    let inventory_only = Run::json(control.nodeprov(&args));
    assert_eq!(inventory_only.code, 4, "{inventory_only}");
    assert_eq!(inventory_only.hosts_with("changed"), [a.name()]);
    assert!(inventory_only
        .unreachable(b.name())
        .contains("authentication failed for user deploy"));
    assert_eq!(read_inside(a, "/tmp/whoami"), "deploy\n");

    let mut with_env = control.nodeprov(&args);
    with_env.env("NODEPROV_SSH_PASSWORD", DEPLOY_PASSWORD);
    let both = Run::json(with_env);
    assert_eq!(both.code, 0, "{both}");
    assert_eq!(read_inside(b, "/tmp/whoami"), "deploy\n");

    let mut wrong = control.nodeprov(&args);
    wrong.env("NODEPROV_SSH_PASSWORD", "not-the-password");
    let refused = Run::json(wrong);
    assert_eq!(refused.code, 4, "{refused}");
    assert!(refused.unreachable(b.name()).contains("tried: password"));
    assert_machine_unchanged(&before);
}

#[test]
fn host_keys_unknown_refused_changed_refused_new_accepted_on_request() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("whoami.yml", WHOAMI_PLAYBOOK);
    let args = ["apply", playbook.as_str(), "-i", inventory.as_str()];
    let real = fingerprint(host);

    control.write("known_hosts", "");
    let unknown = Run::json(control.nodeprov(&args));
    assert_eq!(unknown.code, 4, "{unknown}");
    let msg = unknown.unreachable(host.name());
    assert!(msg.contains("not known") && msg.contains(&real), "{msg}");
    assert_eq!(control.read("known_hosts"), "", "nothing recorded");

    let impostor = control.path("impostor");
    keygen(&impostor);
    let other = std::fs::read_to_string(impostor.with_extension("pub")).unwrap();
    let stale = format!("{} {}", host.ip(), other);
    control.write("known_hosts", &stale);
    let mut cmd = control.nodeprov(&args);
    cmd.arg("--accept-new-host-keys");
    let changed = Run::json(cmd);
    assert_eq!(changed.code, 4, "{changed}");
    let msg = changed.unreachable(host.name());
    assert!(
        msg.contains("HOST KEY MISMATCH") && msg.contains(&real),
        "{msg}"
    );
    assert_eq!(
        control.read("known_hosts"),
        stale,
        "a changed key is never replaced"
    );
    assert_eq!(read_inside(host, "/tmp/whoami"), "", "no script ran");

    control.write("known_hosts", "");
    let mut cmd = control.nodeprov(&args);
    cmd.arg("--accept-new-host-keys");
    let accepted = Run::json(cmd);
    assert_eq!(accepted.code, 0, "{accepted}");
    assert_eq!(
        control.read("known_hosts"),
        format!("{}\n", host.known_hosts_line())
    );
    assert_eq!(Run::json(control.nodeprov(&args)).code, 0, "now known");
    assert_machine_unchanged(&before);
}

#[test]
fn proxy_jump_from_ssh_config_goes_through_the_jump_host() {
    let before = machine_digest();
    let mut fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (jump, target) = (&fleet.hosts[0], &fleet.hosts[1]);
    let config = control.write(
        "ssh_config",
        &format!(
            "Host {}\n    ProxyJump root@{}\nHost *\n    IdentityFile {}\n",
            target.ip(),
            jump.ip(),
            TestKey::get().path().display()
        ),
    );
    let inventory = control.write(
        "inventory.ini",
        &format!(
            "{} ansible_host={} ansible_user=root\n",
            target.name(),
            target.ip()
        ),
    );
    let playbook = control.write("whoami.yml", WHOAMI_PLAYBOOK);
    let (target_name, jump_ip) = (target.name().to_string(), jump.ip());
    let args = [
        "apply",
        &playbook,
        "-i",
        &inventory,
        "--ssh-config",
        &config,
        "-T",
        "5",
    ];

    let through = Run::json(control.nodeprov(&args));
    assert_eq!(through.code, 0, "{through}");
    assert_eq!(read_inside(target, "/tmp/whoami"), "root\n");

    // With the jump host down the target, itself still up, is out of reach.
    fleet.hosts[0].stop();
    let cut_off = Run::json(control.nodeprov(&args));
    assert_eq!(cut_off.code, 4, "{cut_off}");
    let msg = cut_off.unreachable(&target_name);
    assert!(msg.contains(&jump_ip) && msg.contains("jump host"), "{msg}");
    assert_machine_unchanged(&before);
}

#[test]
fn become_with_sudo_nopasswd_and_with_password() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let (ops, deploy) = (&fleet.hosts[0], &fleet.hosts[1]);
    let control = Control::new(&fleet);
    let key = TestKey::get().path();
    let line = |h: &SshHost, user: &str| {
        format!(
            "{} ansible_host={} ansible_user={user} ansible_ssh_private_key_file={}\n",
            h.name(),
            h.ip(),
            key.display()
        )
    };
    let inventory = control.write(
        "inventory.ini",
        &(line(ops, "ops") + &line(deploy, "deploy")),
    );
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);
    let apply = |password: &str| {
        let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_BECOME_PASSWORD", password);
        Run::json(cmd)
    };

    let wrong = apply("not-the-password");
    assert_eq!(wrong.code, 4, "{wrong}");
    assert_eq!(wrong.hosts_with("changed"), [ops.name()], "{wrong}");
    let msg = wrong.unreachable(deploy.name());
    assert!(msg.contains("incorrect password for deploy"), "{msg}");
    // One attempt: the password is sent once and the host given up, not retried.
    assert_eq!(wrong.host(deploy.name())["round_trips"], 1, "{wrong}");
    assert!(wrong.took < Duration::from_secs(20), "{wrong}");
    assert_eq!(read_inside(deploy, "/etc/nodeprov-marker"), "");

    let right = apply(DEPLOY_PASSWORD);
    assert_eq!(right.code, 0, "{right}");
    for h in [ops, deploy] {
        let marker = h.host.path("/etc/nodeprov-marker");
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap(),
            format!("{}\n", h.name())
        );
        assert_eq!(std::fs::metadata(&marker).unwrap().uid(), 0, "{}", h.name());
    }
    assert_machine_unchanged(&before);
}

#[test]
fn a_hung_host_is_unreachable_within_the_timeout_while_the_others_finish() {
    let before = machine_digest();
    let fleet = SshFleet::start(3);
    let hung = &fleet.hosts[1];
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);
    hung.pause();
    let run = Run::json(control.nodeprov(&[
        "apply",
        &playbook,
        "-i",
        &inventory,
        "-T",
        "3",
        "--command-timeout",
        "10",
    ]));
    hung.resume();
    assert_eq!(run.code, 4, "{run}");
    assert!(run.took < Duration::from_secs(10), "{run}");
    let why = run.unreachable(hung.name());
    assert!(
        why.contains("TCP connected, but the server sent no SSH banner within 3 s (-T/--timeout)"),
        "{run}"
    );
    let others = [fleet.hosts[0].name(), fleet.hosts[2].name()];
    assert_eq!(run.hosts_with("changed"), others, "{run}");
    assert_machine_unchanged(&before);
}

#[test]
fn ten_megabytes_on_stderr_from_a_shell_task_do_not_hang() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write(
        "flood.yml",
        "
- name: flood
  hosts: all
  gather_facts: false
  tasks:
    - name: ten megabytes on stderr
      shell: head -c 10485760 /dev/zero | tr '\\0' x >&2; echo done > /tmp/flooded
",
    );
    let run = Run::json(control.nodeprov(&[
        "apply",
        &playbook,
        "-i",
        &inventory,
        "--command-timeout",
        "60",
    ]));
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(read_inside(&fleet.hosts[0], "/tmp/flooded"), "done\n");
    assert_machine_unchanged(&before);
}

#[test]
fn a_failed_canary_halts_the_rollout_and_lists_hosts_never_touched() {
    let before = machine_digest();
    let fleet = SshFleet::start(5);
    let canary = &fleet.hosts[0];
    // The sysctl file cannot be written where a directory stands.
    std::fs::create_dir_all(canary.host.path("/etc/sysctl.d/90-gpu-node.conf")).unwrap();
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let args = ["apply", ROLLOUT, "-i", inventory.as_str()];

    let run = Run::json(control.nodeprov(&args));
    assert_eq!(run.code, 4, "{run}");
    assert_eq!(run.hosts_with("failed"), [canary.name()], "{run}");
    let rest = &names(&fleet)[1..];
    assert_eq!(run.doc["never_touched"], serde_json::json!(rest), "{run}");
    assert!(run.doc["halted"].as_str().is_some(), "{run}");
    for h in &fleet.hosts[1..] {
        assert_eq!(
            h.host.sysctl("vm.swappiness"),
            "60",
            "{} was touched",
            h.name()
        );
    }

    let human = Run::of(control.nodeprov(&args));
    assert_eq!(human.code, 4, "{human}");
    let listed = format!("never touched: {}", rest.join(", "));
    assert!(human.stdout.contains(&listed), "{human}");
    assert_machine_unchanged(&before);
}

#[test]
fn a_rollout_that_breaks_the_gpus_halts_at_the_canary() {
    let before = machine_digest();
    let fleet = SshFleet::start(3);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    // A host without a GPU driver fails the smoke test as a broken GPU does.
    let run =
        Run::json(control.nodeprov(&["apply", ROLLOUT, "-i", &inventory, "--tags", "sysctl"]));
    assert_eq!(run.code, 4, "{run}");
    let canary = &fleet.hosts[0];
    assert_eq!(run.hosts_with("failed"), [canary.name()], "{run}");
    let tasks = run.host(canary.name())["tasks"].as_array().unwrap();
    let smoke = tasks.last().unwrap();
    assert_eq!(smoke["module"], "gpu_smoke", "{run}");
    assert_eq!(smoke["status"], "failed", "{run}");
    assert_eq!(
        canary.host.sysctl("vm.swappiness"),
        "10",
        "the canary was changed"
    );
    assert_eq!(
        run.doc["never_touched"],
        serde_json::json!(&names(&fleet)[1..]),
        "{run}"
    );
    for h in &fleet.hosts[1..] {
        assert_eq!(
            h.host.sysctl("vm.swappiness"),
            "60",
            "{} was touched",
            h.name()
        );
    }
    assert_machine_unchanged(&before);
}

#[test]
fn twenty_hosts_converge_stay_idempotent_and_check_names_only_the_drifted_one() {
    let before = machine_digest();
    let started = Instant::now();
    let fleet = SshFleet::start(20);
    eprintln!("20 ssh hosts up in {:?}", started.elapsed());
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let all = names(&fleet);
    // sshd test hosts have no GPU: the rollout's smoke gate is off here.
    let run = |cmd: &str| {
        Run::json(control.nodeprov(&[cmd, ROLLOUT, "-i", &inventory, "-e", "gpu_validate=false"]))
    };

    let first = run("apply");
    assert_eq!(first.code, 0, "{first}");
    assert_eq!(first.hosts_with("changed"), all, "{first}");
    for h in &fleet.hosts {
        assert_eq!(h.host.sysctl("vm.swappiness"), "10", "{}", h.name());
        assert_eq!(h.host.sysctl("vm.overcommit_memory"), "1", "{}", h.name());
        assert_eq!(
            read_inside(h, "/etc/sysctl.d/90-gpu-node.conf"),
            "vm.swappiness = 10\nvm.overcommit_memory = 1\n"
        );
    }
    let second = run("apply");
    assert_eq!(second.code, 0, "{second}");
    assert_eq!(second.hosts().len(), 20, "{second}");
    assert!(second.hosts_with("changed").is_empty(), "{second}");
    let compliant = run("check");
    assert_eq!(compliant.code, 0, "{compliant}");

    let drifted = &fleet.hosts[13];
    drifted.host.set_sysctl("vm.swappiness", "60");
    let check = run("check");
    assert_eq!(check.code, 2, "{check}");
    assert_eq!(check.hosts_with("drift"), [drifted.name()], "{check}");
    assert_eq!(
        drifted.host.sysctl("vm.swappiness"),
        "60",
        "check changes nothing"
    );
    eprintln!("20-host rollout test took {:?}", started.elapsed());
    assert_machine_unchanged(&before);
}
