//! An Ansible project run from its root with no `-i`: ansible.cfg names
//! the inventory (a script), the roles path, the login user and key; the
//! `ANSIBLE_*` environment beats the file and flags beat both. The SSH
//! tests log in to an isolated sshd (tests/support) as the cfg says.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::control::{Control, Run};
use support::sshd::{SshFleet, SshHost, TestKey};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const SITE: &str = "
- hosts: gpu
  gather_facts: false
  roles:
    - marker
";

const MARKER_ROLE: &str = "
- name: who logged in
  copy: {dest: /tmp/np-cfg-login, content: \"{{ inventory_hostname }} {{ tier }}\\n\", mode: \"0644\"}
";

/// An inventory script with `_meta`, in Python, listing `hosts` (name, ip).
fn script(hosts: &[(&str, &str)]) -> String {
    let names: Vec<String> = hosts.iter().map(|(n, _)| format!("'{n}'")).collect();
    let vars: Vec<String> = hosts
        .iter()
        .map(|(n, ip)| format!("'{n}': {{'ansible_host': '{ip}'}}"))
        .collect();
    format!(
        "#!/usr/bin/python3\nimport json, sys\nassert sys.argv[1:] == ['--list']\n\
         print(json.dumps({{'gpu': {{'hosts': [{}], 'vars': {{'tier': 'a100'}}}}, \
         '_meta': {{'hostvars': {{{}}}}}}}))\n",
        names.join(", "),
        vars.join(", ")
    )
}

/// A project laid out as real ones are, in `root`.
fn lay_out(root: &Path, cfg: &str, hosts: &[(&str, &str)]) {
    let write = |name: &str, text: &str| {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    };
    write("ansible.cfg", cfg);
    let inv = write("inventory/hosts.py", &script(hosts));
    std::fs::set_permissions(inv, std::fs::Permissions::from_mode(0o755)).unwrap();
    write("site.yml", SITE);
    write("shared_roles/marker/tasks/main.yml", MARKER_ROLE);
}

const CFG: &str = "# as ansible-config init writes it\n[defaults]\ninventory = inventory/hosts.py\nroles_path = shared_roles\nremote_user: deploy\n";

/// nodeprov in `dir` with only the given environment.
fn run_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn list(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn project(cfg: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    lay_out(
        dir.path(),
        cfg,
        &[("gpu-01", "10.1.0.1"), ("gpu-02", "10.1.0.2")],
    );
    dir
}

#[test]
fn the_cfg_inventory_script_and_roles_path_serve_inventory_and_validate() {
    let p = project(CFG);
    let list = list(&run_in(p.path(), &["inventory", "--list"], &[]));
    assert_eq!(
        list["gpu"]["hosts"],
        serde_json::json!(["gpu-01", "gpu-02"]),
        "{list}"
    );
    assert_eq!(
        list["_meta"]["hostvars"]["gpu-02"]["ansible_host"],
        "10.1.0.2"
    );
    assert_eq!(list["_meta"]["hostvars"]["gpu-01"]["tier"], "a100");

    let out = run_in(p.path(), &["validate", "site.yml"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim(), "site.yml: ok (1 plays, 1 tasks)");
}

#[test]
fn ansible_config_then_the_environment_then_flags_win() {
    let p = project(CFG);
    let other = p.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(
        other.join("ansible.cfg"),
        "[defaults]\ninventory = only.ini\n",
    )
    .unwrap();
    std::fs::write(other.join("only.ini"), "[other]\no1\n").unwrap();
    std::fs::write(p.path().join("env.ini"), "[env]\ne1\n").unwrap();
    std::fs::write(p.path().join("flag.ini"), "[flag]\nf1\n").unwrap();
    let config = other.display().to_string();

    // ANSIBLE_CONFIG (a folder) beats ./ansible.cfg; its paths are its own.
    let by_config = list(&run_in(
        p.path(),
        &["inventory", "--list"],
        &[("ANSIBLE_CONFIG", &config)],
    ));
    assert_eq!(
        by_config["other"]["hosts"],
        serde_json::json!(["o1"]),
        "{by_config}"
    );

    let env = [
        ("ANSIBLE_CONFIG", config.as_str()),
        ("ANSIBLE_INVENTORY", "env.ini"),
    ];
    let by_env = list(&run_in(p.path(), &["inventory", "--list"], &env));
    assert_eq!(
        by_env["env"]["hosts"],
        serde_json::json!(["e1"]),
        "{by_env}"
    );
    assert!(by_env.get("other").is_none(), "{by_env}");

    let by_flag = list(&run_in(
        p.path(),
        &["inventory", "--list", "-i", "flag.ini"],
        &env,
    ));
    assert_eq!(
        by_flag["flag"]["hosts"],
        serde_json::json!(["f1"]),
        "{by_flag}"
    );
    assert!(by_flag.get("env").is_none(), "{by_flag}");
}

#[test]
fn an_ignored_key_warns_once_and_does_not_fail() {
    let p = project(&format!(
        "{CFG}stdout_callback = yaml\n[colors]\nok = green\n"
    ));
    let out = run_in(p.path(), &["inventory", "--list"], &[]);
    list(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cfg = p.path().join("ansible.cfg").display().to_string();
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            format!("warning: {cfg}: [colors] ok is not used by nodeprov; ignored"),
            format!("warning: {cfg}: [defaults] stdout_callback is not used by nodeprov; ignored"),
        ]
    );
}

#[test]
fn a_cfg_in_a_world_writable_cwd_is_ignored_with_ansibles_warning() {
    let p = project(CFG);
    std::fs::set_permissions(p.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_in(p.path(), &["inventory", "--list"], &[]);
    let list = list(&out);
    assert!(
        list.get("gpu").is_none(),
        "the cfg's inventory is not used: {list}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: Ansible is being run in a world writable directory ({}), ignoring it as an ansible.cfg source.",
            p.path().display()
        )),
        "{stderr}"
    );
}

fn uid_of(host: &SshHost, name: &str) -> u32 {
    let passwd = std::fs::read_to_string(host.host.path("/etc/passwd")).unwrap();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == name).then(|| f[2].parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no user {name}"))
}

/// The project in the control dir, its script listing `host`, run from
/// there with no `-i`, no `-u` and no key flag.
fn run_project(control: &Control, host: &SshHost, cfg: &str, args: &[&str]) -> Run {
    lay_out(control.dir.path(), cfg, &[(host.name(), &host.ip())]);
    let mut cmd = control.nodeprov(args);
    // The local user is not the one to log in as: only the cfg says deploy.
    cmd.current_dir(control.dir.path()).env("USER", "nobody");
    Run::json(cmd)
}

fn key_cfg(extra: &str) -> String {
    format!(
        "{CFG}private_key_file = {}\n{extra}",
        TestKey::get().path().display()
    )
}

#[test]
fn check_and_apply_log_in_as_the_cfgs_remote_user_with_its_key() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let cfg = key_cfg("");
    let check = run_project(&control, host, &cfg, &["check", "site.yml"]);
    assert_eq!(check.code, 2, "drift: the file is missing. {check}");
    let apply = run_project(&control, host, &cfg, &["apply", "site.yml"]);
    assert_eq!(apply.code, 0, "{apply}");
    let written = host.host.path("/tmp/np-cfg-login");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        format!("{} a100\n", host.name())
    );
    assert_eq!(
        std::fs::metadata(&written).unwrap().uid(),
        uid_of(host, "deploy")
    );
}

#[test]
fn host_key_checking_false_records_new_keys_and_still_refuses_a_changed_one() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    control.write("known_hosts", "");
    let cfg = key_cfg("host_key_checking = False\n");
    let run = run_project(&control, host, &cfg, &["apply", "site.yml"]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stderr.contains("note: host_key_checking is False: the keys of hosts not yet in known_hosts are recorded"),
        "{run}"
    );
    assert_eq!(
        control.read("known_hosts").trim_end(),
        host.known_hosts_line()
    );

    // Another key for the same address: the server's no longer matches.
    let client = TestKey::get().public();
    let forged = format!(
        "{} {}\n",
        host.ip(),
        client.split(' ').take(2).collect::<Vec<_>>().join(" ")
    );
    control.write("known_hosts", &forged);
    let run = run_project(&control, host, &cfg, &["apply", "site.yml"]);
    assert_eq!(run.code, 4, "{run}");
    assert!(
        run.unreachable(host.name()).contains("man-in-the-middle"),
        "{run}"
    );
    assert_eq!(control.read("known_hosts"), forged, "nothing is recorded");
}

#[test]
fn the_readme_lists_the_honoured_keys_as_declared() {
    let table = nodeprov::load::ansible_cfg::keys_markdown();
    assert!(
        include_str!("../docs/ansible-projects.md").contains(&table),
        "docs/ansible-projects.md's ansible.cfg table should read:\n{table}"
    );
}

#[test]
fn retry_files_go_where_the_cfg_says_or_nowhere() {
    let cfg = format!("{CFG}timeout = 3\nretry_files_save_path = retries\n");
    let dir = tempfile::tempdir().unwrap();
    lay_out(dir.path(), &cfg, &[("gone-01", "127.0.0.3")]);
    std::fs::create_dir(dir.path().join("retries")).unwrap();
    let out = run_in(dir.path(), &["apply", "site.yml"], &[]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let retry = dir.path().join("retries/site.retry");
    assert_eq!(std::fs::read_to_string(&retry).unwrap(), "gone-01\n");
    assert!(!dir.path().join("site.retry").exists());

    std::fs::remove_file(&retry).unwrap();
    let env = [("ANSIBLE_RETRY_FILES_ENABLED", "no")];
    let out = run_in(dir.path(), &["apply", "site.yml"], &env);
    assert_eq!(out.status.code(), Some(4));
    assert!(!retry.exists(), "no retry file when disabled");
}
