//! `pip` and `firewalld` through the real binary with `-c local` inside an
//! isolated host. pip installs a wheel the test writes into a local folder
//! (`--no-index --find-links`, nothing from the network) into a virtualenv
//! the task makes; firewalld edits the host's /etc/firewalld with the real
//! `firewall-offline-cmd`, as on a host whose daemon does not run, and
//! drives the real daemon through `firewall-cmd` in a host with a network
//! namespace and a system bus of its own. Each is applied twice (the
//! second run changes nothing), then a hand change is drift that `check`
//! names and leaves alone.
//!
//! firewalld is not installed on the test machine (installing it would
//! enable its unit there): scripts/test.sh unpacks its packages into
//! target/firewalld-offline, and the host runs the commands from there.

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, task_statuses, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// The system interpreter: the test runner's `python3` may live under a
/// /root the host does not see.
const PYTHON: &str = "/usr/bin/python3";
const VENV: &str = "/tmp/venv";
const WHEELS: &str = "/tmp/wheels";

/// Writes `nodeprov_demo` 1.0 and 2.0 as pure-Python wheels into WHEELS,
/// by hand: a wheel is a zip with the package and its dist-info.
const MAKE_WHEELS: &str = r#"
import os, zipfile
os.makedirs("/tmp/wheels", exist_ok=True)
for ver in ("1.0", "2.0"):
    info = f"nodeprov_demo-{ver}.dist-info"
    files = {
        "nodeprov_demo/__init__.py": f"VERSION = {ver!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: nodeprov_demo\nVersion: {ver}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(f"/tmp/wheels/nodeprov_demo-{ver}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
"#;

/// A play of one pip task; pip takes `extra_args` on every command, as in
/// Ansible, and `pip uninstall` has no `--no-index`.
fn pip_playbook(name: &str, state: &str, extra_args: &str) -> String {
    format!(
        r#"- hosts: all
  gather_facts: false
  tasks:
    - name: demo
      pip:
        name: {name}
        state: {state}
        virtualenv: {VENV}
        virtualenv_command: {PYTHON} -m venv
        extra_args: "{extra_args}"
"#
    )
}

/// nodeprov in the host, with the host's /root/bin first on its PATH.
fn nodeprov(host: &IsolatedHost, cmd: &str, playbook: &str) -> (i32, serde_json::Value) {
    std::fs::write(host.path("/root/play.yml"), playbook).unwrap();
    let argv = [
        "/bin/sh",
        "-c",
        "PATH=/root/bin:$PATH exec \"$0\" \"$@\"",
        BIN,
        cmd,
        "/root/play.yml",
        "-c",
        "local",
        "--format",
        "json",
    ];
    run_json(host, &argv)
}

/// The virtualenv's pip run inside the host (through sh: a program under
/// the machine's /tmp would be taken from the machine).
fn venv_pip(host: &IsolatedHost, args: &str) -> std::process::Output {
    host.run(&["/bin/sh", "-c", &format!("{VENV}/bin/pip {args}")])
}

/// The demo package's version in the virtualenv, as pip shows it.
fn installed(host: &IsolatedHost) -> String {
    let out = venv_pip(host, "show nodeprov_demo");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap_or("none")
        .to_string()
}

#[test]
fn pip_installs_into_a_new_virtualenv_once_and_check_names_a_hand_change() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let made = host.run(&[PYTHON, "-c", MAKE_WHEELS]);
    assert!(made.status.success(), "{made:?}");
    let pin = pip_playbook(
        "nodeprov-demo==1.0",
        "present",
        &format!("--no-index --find-links {WHEELS}"),
    );

    let (code, first) = nodeprov(&host, "apply", &pin);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(task_statuses(&first), ["changed"], "{first:#}");
    let changes = &first["hosts"][0]["tasks"][0]["changes"];
    assert_eq!(changes[0]["subject"], VENV);
    assert_eq!(
        changes[1]["subject"],
        format!("nodeprov-demo in virtualenv {VENV}")
    );
    assert_eq!(installed(&host), "1.0");

    let (code, second) = nodeprov(&host, "apply", &pin);
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(second["hosts"][0]["recap"]["changed"], 0, "{second:#}");
    assert_eq!(second["hosts"][0]["round_trips"], 1);

    let by_hand = venv_pip(
        &host,
        &format!("install --no-index --find-links {WHEELS} nodeprov_demo==2.0"),
    );
    assert!(by_hand.status.success(), "{by_hand:?}");
    let (code, drift) = nodeprov(&host, "check", &pin);
    assert_eq!(code, 2, "{drift:#}");
    let change = &drift["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(
        (&change["before"], &change["after"]),
        (&"2.0".into(), &"nodeprov-demo==1.0".into()),
        "{drift:#}"
    );
    assert_eq!(change["evidence"], format!("pip list of virtualenv {VENV}"));
    assert_eq!(installed(&host), "2.0", "check changed nothing");

    let remove = pip_playbook("nodeprov_demo", "absent", "-q");
    let (code, removed) = nodeprov(&host, "apply", &remove);
    assert_eq!(
        (code, task_statuses(&removed)),
        (0, vec!["changed".into()]),
        "{removed:#}"
    );
    assert_eq!(installed(&host), "none");
    let (code, again) = nodeprov(&host, "apply", &remove);
    assert_eq!((code, task_statuses(&again)), (0, vec!["ok".into()]));
    assert_machine_unchanged(&before);
}

#[test]
fn firewalld_fails_where_it_is_not_installed_and_refuses_rich_rules() {
    let host = IsolatedHost::new();
    let play = |params: &str| {
        format!("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: fw\n      firewalld:\n{params}")
    };
    let port = "        port: 8080/tcp\n        state: enabled\n        permanent: true\n        offline: true\n";
    let (code, doc) = nodeprov(&host, "check", &play(port));
    assert_eq!(code, 4, "{doc:#}");
    assert_eq!(task_statuses(&doc), ["failed"]);
    let error = doc["hosts"][0]["tasks"][0]["message"].to_string();
    assert!(error.contains("firewalld is not installed"), "{doc:#}");

    let rich = "        rich_rule: rule family=ipv4 accept\n        state: enabled\n";
    std::fs::write(host.path("/root/play.yml"), play(rich)).unwrap();
    let out = host.run(&[BIN, "validate", "/root/play.yml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rich_rule is not supported by nodeprov") && err.contains("play.yml:6:"),
        "{err}"
    );
}

/// Where scripts/test.sh unpacked firewalld and what its commands need.
const FIREWALLD_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/firewalld-offline");

/// The environment under which the unpacked firewalld's Python finds its
/// modules, libraries and GObject typelibs.
fn unpacked_env() -> String {
    format!(
        "R={FIREWALLD_ROOT}\nexport PYTHONPATH=$R/usr/lib/python3/dist-packages \
         LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu \
         GI_TYPELIB_PATH=$R/usr/lib/x86_64-linux-gnu/girepository-1.0\n"
    )
}

/// Fails with what to do when `path` is not in the unpacked tree (one
/// unpacked by an older scripts/test.sh, say).
fn assert_unpacked(path: &str) {
    let unpacked = format!("{FIREWALLD_ROOT}/{path}");
    assert!(
        std::path::Path::new(&unpacked).exists(),
        "{unpacked} is missing: scripts/test.sh unpacks it"
    );
}

/// A host with the package's /etc/firewalld whose firewalld `command`
/// (first on PATH, in /root/bin) runs the unpacked one with `args` first.
fn host_with_firewalld_command(host: IsolatedHost, command: &str, args: &str) -> IsolatedHost {
    add_firewalld_command(&host, command, args);
    let copied = std::process::Command::new("cp")
        .args(["-a", &format!("{FIREWALLD_ROOT}/etc/firewalld")])
        .arg(host.path("/etc/firewalld"))
        .status()
        .unwrap();
    assert!(copied.success());
    host
}

/// Puts the unpacked firewalld `command`, with `args` first, in the host's
/// /root/bin.
fn add_firewalld_command(host: &IsolatedHost, command: &str, args: &str) {
    assert_unpacked(&format!("usr/bin/{command}"));
    let bin = host.path("/root/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = format!(
        "#!/bin/sh\n{}exec {PYTHON} $R/usr/bin/{command} {args} \"$@\"\n",
        unpacked_env()
    );
    let path = bin.join(command);
    std::fs::write(&path, wrapper).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// A host whose `firewall-offline-cmd` edits the host's own
/// /etc/firewalld, started from the package's defaults.
fn host_with_offline_firewalld() -> IsolatedHost {
    let defaults = format!("--default-config {FIREWALLD_ROOT}/usr/lib/firewalld");
    host_with_firewalld_command(IsolatedHost::new(), "firewall-offline-cmd", &defaults)
}

const FIREWALL_PLAY: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: gpu zone
      firewalld: {zone: gpu, state: present, permanent: true, offline: true}
    - name: slurm ports
      firewalld: {zone: gpu, port: 6817-6819/tcp, state: enabled, permanent: true, offline: true}
    - name: fabric
      firewalld: {zone: gpu, interface: ib0, state: enabled, permanent: true, offline: true}
    - name: no dhcpv6
      firewalld: {service: dhcpv6-client, state: disabled, offline: true}
"#;

#[test]
fn firewalld_offline_edits_the_permanent_configuration_once_and_check_names_a_hand_change() {
    let before = machine_digest();
    let host = host_with_offline_firewalld();

    let (code, first) = nodeprov(&host, "apply", FIREWALL_PLAY);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(task_statuses(&first), ["changed"; 4], "{first:#}");
    let tasks = first["hosts"][0]["tasks"].as_array().unwrap();
    assert_eq!(
        tasks[1]["changes"][0]["subject"],
        "firewalld zone gpu port 6817-6819/tcp (permanent)"
    );
    assert_eq!(
        tasks[3]["changes"][0]["subject"],
        "firewalld zone public service dhcpv6-client (permanent)"
    );
    assert!(tasks[3]["notes"][0]
        .as_str()
        .unwrap()
        .contains("only its permanent configuration"));
    let zone = std::fs::read_to_string(host.path("/etc/firewalld/zones/gpu.xml")).unwrap();
    assert!(
        zone.contains(r#"<port port="6817-6819" protocol="tcp"/>"#)
            && zone.contains(r#"<interface name="ib0"/>"#),
        "{zone}"
    );

    let (code, second) = nodeprov(&host, "apply", FIREWALL_PLAY);
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(second["hosts"][0]["recap"]["changed"], 0, "{second:#}");
    assert_eq!(second["hosts"][0]["round_trips"], 1);

    let by_hand = host.run(&[
        "/bin/sh",
        "-c",
        "/root/bin/firewall-offline-cmd --zone=gpu --remove-port=6817-6819/tcp",
    ]);
    assert!(by_hand.status.success(), "{by_hand:?}");
    let (code, drift) = nodeprov(&host, "check", FIREWALL_PLAY);
    assert_eq!(code, 2, "{drift:#}");
    assert_eq!(
        task_statuses(&drift),
        ["ok", "drift", "ok", "ok"],
        "{drift:#}"
    );
    let change = &drift["hosts"][0]["tasks"][1]["changes"][0];
    assert_eq!(
        (&change["before"], &change["after"]),
        (&"disabled".into(), &"enabled".into())
    );
    assert_eq!(
        change["evidence"],
        "firewall-offline-cmd --zone=gpu --list-all"
    );
    let zone = std::fs::read_to_string(host.path("/etc/firewalld/zones/gpu.xml")).unwrap();
    assert!(!zone.contains("6817"), "check changed nothing: {zone}");
    assert_machine_unchanged(&before);
}

/// A system bus of the host's own, at the standard socket under its private
/// /run, open to root: firewalld owns its name there, and without polkit on
/// the bus it lets only root call it.
const BUS_CONF: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="root"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#;

/// Runs in the host as the first process of its namespace: the bus, then
/// the unpacked daemon in the foreground, on the host's /etc/firewalld
/// with the package's defaults (nftables backend).
fn firewalld_daemon() -> String {
    format!(
        "set -e\nmkdir -p /run/dbus\n\
         dbus-daemon --config-file=/root/bus.conf --nofork --nopidfile &\n\
         while [ ! -S /run/dbus/system_bus_socket ]; do sleep 0.1; done\n{}\
         exec {PYTHON} $R/usr/sbin/firewalld --nofork --nopid --log-target console \
         --default-config $R/usr/lib/firewalld\n",
        unpacked_env()
    )
}

/// The running bus and daemon of a host, killed with their namespace when
/// the test ends, even by a failed assertion.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the host's bus and firewalld and waits until `firewall-cmd
/// --state` says `state` (on stderr when not running).
fn start_firewalld(host: &IsolatedHost, state: &str) -> Running {
    std::fs::write(host.path("/root/bus.conf"), BUS_CONF).unwrap();
    let mut daemon = Running(host.spawn(&["/bin/sh", "-c", &firewalld_daemon()]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while firewall_cmd(host, "--state 2>&1") != state {
        let exited = daemon.0.try_wait().unwrap();
        assert!(
            exited.is_none() && std::time::Instant::now() < deadline,
            "firewalld did not start ({exited:?}): {}",
            host.spawn_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    daemon
}

/// What the host's firewall-cmd prints for `args`, trimmed.
fn firewall_cmd(host: &IsolatedHost, args: &str) -> String {
    let out = host.run(&["/bin/sh", "-c", &format!("/root/bin/firewall-cmd {args}")]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The machine's own netfilter as `nft list ruleset` and both iptables
/// back ends' `iptables-save` show it, with the unpacked commands, and
/// whether it forwards (firewalld turns forwarding on for masquerading).
fn machine_netfilter() -> String {
    let script = format!(
        "{}for save in nft iptables-nft-save ip6tables-nft-save iptables-legacy-save \
         ip6tables-legacy-save; do\n\
         echo \"== $save\"; if [ $save = nft ]; then set -- list ruleset; else set --; fi\n\
         $R/usr/sbin/$save \"$@\" || exit 1\ndone\n\
         grep -H . /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding\n",
        unpacked_env()
    );
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn daemon_play(tasks: &str) -> String {
    format!("- hosts: all\n  gather_facts: false\n  tasks:\n{tasks}")
}

const BOTH_LAYERS: &str = r#"    - name: api port
      firewalld: {port: 8080/tcp, state: enabled, immediate: true, permanent: true}
    - name: web
      firewalld: {service: http, state: enabled, immediate: true, permanent: true}
    - name: fabric
      firewalld: {zone: internal, interface: ib0, state: enabled, immediate: true, permanent: true}
    - name: cluster network
      firewalld: {zone: internal, source: 10.9.0.0/16, state: enabled, immediate: true, permanent: true}
    - name: nat
      firewalld: {zone: internal, masquerade: true, state: enabled, immediate: true, permanent: true}
    - name: no dhcpv6
      firewalld: {service: dhcpv6-client, state: disabled, immediate: true, permanent: true}
"#;

/// A host in its own network namespace running the unpacked firewalld,
/// with `firewall-cmd` first on PATH, and the machine's state from before
/// it started.
struct DaemonHost {
    host: IsolatedHost,
    daemon: Running,
    machine: String,
    netfilter: String,
}

fn host_with_running_firewalld() -> DaemonHost {
    host_with_firewalld(|_| (), "running")
}

/// A host whose firewalld starts on its /etc/firewalld after `prepare`
/// edited it, in `state`.
fn host_with_firewalld(prepare: impl FnOnce(&IsolatedHost), state: &str) -> DaemonHost {
    for path in [
        "usr/sbin/firewalld",
        "usr/sbin/nft",
        "usr/sbin/iptables-legacy-save",
    ] {
        assert_unpacked(path);
    }
    let (machine, netfilter) = (machine_digest(), machine_netfilter());
    let host = host_with_firewalld_command(IsolatedHost::new().with_network(), "firewall-cmd", "");
    prepare(&host);
    let daemon = start_firewalld(&host, state);
    DaemonHost {
        host,
        daemon,
        machine,
        netfilter,
    }
}

impl DaemonHost {
    /// Stops the daemon, which must have logged no error, and proves the
    /// machine's netfilter and /etc as they were.
    fn stop(self) {
        let log = self.stop_with_log();
        assert!(!log.contains("ERROR"), "firewalld logged an error: {log}");
    }

    /// Stops the daemon and proves the machine's netfilter and /etc as
    /// they were; what the daemon logged.
    fn stop_with_log(self) -> String {
        drop(self.daemon);
        let log = self.host.spawn_log();
        assert_eq!(
            machine_netfilter(),
            self.netfilter,
            "the machine's netfilter changed"
        );
        assert_machine_unchanged(&self.machine);
        log
    }
}

/// The subjects of a task's changes in a JSON report.
fn change_subjects(doc: &serde_json::Value, task: usize) -> Vec<String> {
    doc["hosts"][0]["tasks"][task]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap().to_string())
        .collect()
}

/// Each layer holds what BOTH_LAYERS asks for, as firewall-cmd lists it,
/// and the host's own netfilter has the port's rule and forwards.
fn assert_both_layers_hold(host: &IsolatedHost) {
    for layer in ["", "--permanent "] {
        let public =
            |list: &str| firewall_cmd(host, &format!("{layer}--zone=public --list-{list}"));
        assert_eq!(public("ports"), "8080/tcp", "{layer}");
        assert_eq!(public("services"), "http ssh", "{layer}");
        let internal = firewall_cmd(host, &format!("{layer}--zone=internal --list-all"));
        for line in ["interfaces: ib0", "sources: 10.9.0.0/16", "masquerade: yes"] {
            assert!(internal.contains(line), "{layer}: {internal}");
        }
    }
    let nft = format!("{}exec $R/usr/sbin/nft list ruleset", unpacked_env());
    let ruleset = host.run(&["/bin/sh", "-c", &nft]);
    let ruleset = String::from_utf8_lossy(&ruleset.stdout);
    assert!(
        ruleset.contains("tcp dport 8080 "),
        "the host's netfilter: {ruleset}"
    );
}

#[test]
fn firewalld_daemon_changes_both_layers_once_and_check_names_runtime_drift() {
    let running = host_with_running_firewalld();
    let host = &running.host;
    let play = daemon_play(BOTH_LAYERS);

    let (code, first) = nodeprov(host, "apply", &play);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(task_statuses(&first), ["changed"; 6], "{first:#}");
    assert_eq!(
        change_subjects(&first, 0),
        [
            "firewalld zone public port 8080/tcp (runtime)",
            "firewalld zone public port 8080/tcp (permanent)"
        ]
    );
    assert_both_layers_hold(host);
    let (code, second) = nodeprov(host, "apply", &play);
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(second["hosts"][0]["recap"]["changed"], 0, "{second:#}");

    let by_hand = firewall_cmd(host, "--zone=public --remove-port=8080/tcp");
    assert_eq!(by_hand, "success");
    let (code, drift) = nodeprov(host, "check", &play);
    assert_eq!(code, 2, "{drift:#}");
    assert_eq!(
        task_statuses(&drift),
        ["drift", "ok", "ok", "ok", "ok", "ok"],
        "{drift:#}"
    );
    let change = &drift["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(
        change_subjects(&drift, 0),
        ["firewalld zone public port 8080/tcp (runtime)"],
        "only the runtime layer drifts"
    );
    assert_eq!(
        (&change["before"], &change["after"]),
        (&"disabled".into(), &"enabled".into())
    );
    assert_eq!(change["evidence"], "firewall-cmd --zone=public --list-all");
    assert_eq!(
        firewall_cmd(host, "--zone=public --list-ports"),
        "",
        "check changed nothing"
    );

    running.stop();
}

const ONE_LAYER: &str = r#"    - name: debug port
      firewalld: {port: 9090/tcp, state: enabled}
    - name: boot port
      firewalld: {port: 7070/tcp, state: enabled, permanent: true}
    - name: gpu zone
      firewalld: {zone: gpu, state: present, permanent: true}
"#;

/// Whether firewall-cmd (with `layer`'s options) lists the gpu zone.
fn has_gpu_zone(host: &IsolatedHost, layer: &str) -> bool {
    let zones = firewall_cmd(host, &format!("{layer}--get-zones"));
    zones.split(' ').any(|z| z == "gpu")
}

#[test]
fn firewalld_daemon_without_immediate_or_permanent_changes_one_layer() {
    let running = host_with_running_firewalld();
    let host = &running.host;
    let play = daemon_play(ONE_LAYER);

    let (code, first) = nodeprov(host, "apply", &play);
    assert_eq!(code, 0, "{first:#}");
    let subjects: Vec<Vec<String>> = (0..3).map(|t| change_subjects(&first, t)).collect();
    assert_eq!(
        subjects,
        [
            ["firewalld zone public port 9090/tcp (runtime)"],
            ["firewalld zone public port 7070/tcp (permanent)"],
            ["firewalld zone gpu (permanent)"],
        ]
    );
    let ports = |layer: &str| firewall_cmd(host, &format!("{layer}--zone=public --list-ports"));
    assert_eq!(
        (ports("").as_str(), ports("--permanent ").as_str()),
        ("9090/tcp", "7070/tcp")
    );
    assert!(has_gpu_zone(host, "--permanent ") && !has_gpu_zone(host, ""));
    let (code, again) = nodeprov(host, "apply", &play);
    assert_eq!(
        (code, task_statuses(&again)),
        (0, vec!["ok".to_string(); 3])
    );

    // A reload rebuilds the running firewall from the permanent layer.
    assert_eq!(firewall_cmd(host, "--reload"), "success");
    assert_eq!(ports(""), "7070/tcp");
    assert!(has_gpu_zone(host, ""));

    running.stop();
}

/// A direct rule iptables refuses: the daemon fails to apply the host's
/// configuration and falls back to its stock one (without direct rules),
/// while firewall-offline-cmd, which applies nothing, still reads and
/// writes the zones.
const BROKEN_DIRECT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<direct>
  <rule ipv="ipv4" table="filter" chain="INPUT" priority="0">-j NO-SUCH-TARGET</rule>
</direct>
"#;

#[test]
fn firewalld_daemon_in_the_failed_state_is_named_and_offline_edits_its_files() {
    let failed = host_with_firewalld(
        |host| {
            let direct = host.path("/etc/firewalld/direct.xml");
            std::fs::write(direct, BROKEN_DIRECT).unwrap();
            let defaults = format!("--default-config {FIREWALLD_ROOT}/usr/lib/firewalld");
            add_firewalld_command(host, "firewall-offline-cmd", &defaults);
        },
        "failed",
    );
    let host = &failed.host;
    let port =
        "    - name: api port\n      firewalld: {port: 8080/tcp, state: enabled, permanent: true";
    let (code, refused) = nodeprov(host, "apply", &daemon_play(&format!("{port}}}\n")));
    assert_eq!(code, 4, "{refused:#}");
    let message = refused["hosts"][0]["tasks"][0]["message"].to_string();
    assert!(
        message.contains("firewalld is installed but its daemon is in the FAILED state"),
        "{refused:#}"
    );

    let offline = daemon_play(&format!("{port}, offline: true}}\n"));
    let (code, first) = nodeprov(host, "apply", &offline);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(
        change_subjects(&first, 0),
        ["firewalld zone public port 8080/tcp (permanent)"]
    );
    let zone = std::fs::read_to_string(host.path("/etc/firewalld/zones/public.xml")).unwrap();
    assert!(
        zone.contains(r#"<port port="8080" protocol="tcp"/>"#),
        "{zone}"
    );
    let (code, again) = nodeprov(host, "apply", &offline);
    assert_eq!((code, task_statuses(&again)), (0, vec!["ok".to_string()]));
    assert_eq!(firewall_cmd(host, "--state 2>&1"), "failed");

    let log = failed.stop_with_log();
    assert!(
        log.contains("Falling back to full stock configuration"),
        "{log}"
    );
}
