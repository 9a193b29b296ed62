//! `pip` and `firewalld` through the real binary with `-c local` inside an
//! isolated host. pip installs a wheel the test writes into a local folder
//! (`--no-index --find-links`, nothing from the network) into a virtualenv
//! the task makes; firewalld edits the host's /etc/firewalld with the real
//! `firewall-offline-cmd`, as on a host whose daemon does not run. Each is
//! applied twice (the second run changes nothing), then a hand change is
//! drift that `check` names and leaves alone.
//!
//! firewalld is not installed on the test machine (installing it would
//! enable its unit there): scripts/test.sh unpacks its packages into
//! target/firewalld-offline, and the host runs the command from there.

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

/// Where scripts/test.sh unpacked firewalld and what its offline command needs.
const FIREWALLD_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/firewalld-offline");

/// A host whose `firewall-offline-cmd` (first on PATH, in /root/bin) runs
/// the unpacked one on the host's own /etc/firewalld, started from the
/// package's defaults.
fn host_with_offline_firewalld() -> IsolatedHost {
    let cmd = format!("{FIREWALLD_ROOT}/usr/bin/firewall-offline-cmd");
    assert!(
        std::path::Path::new(&cmd).exists(),
        "{cmd} is missing: scripts/test.sh unpacks it"
    );
    let host = IsolatedHost::new();
    let bin = host.path("/root/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = format!(
        "#!/bin/sh\nR={FIREWALLD_ROOT}\n\
         PYTHONPATH=$R/usr/lib/python3/dist-packages LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu \\\n\
         exec {PYTHON} $R/usr/bin/firewall-offline-cmd --default-config $R/usr/lib/firewalld \"$@\"\n"
    );
    let path = bin.join("firewall-offline-cmd");
    std::fs::write(&path, wrapper).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let copied = std::process::Command::new("cp")
        .args(["-a", &format!("{FIREWALLD_ROOT}/etc/firewalld")])
        .arg(host.path("/etc/firewalld"))
        .status()
        .unwrap();
    assert!(copied.success());
    host
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
        "firewall-offline-cmd --zone=gpu --list-ports"
    );
    let zone = std::fs::read_to_string(host.path("/etc/firewalld/zones/gpu.xml")).unwrap();
    assert!(!zone.contains("6817"), "check changed nothing: {zone}");
    assert_machine_unchanged(&before);
}
