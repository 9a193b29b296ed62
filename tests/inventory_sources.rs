//! Inventory sources beyond INI and YAML files, through the real binary:
//! scripts (with and without `_meta`), plugin files, folders mixing them,
//! and several `-i` at once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// A script printing `--list` and, for each host, `--host` answers; every
/// call is appended to `calls` beside it.
const SCRIPT_NO_META: &str = r#"#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
  --list) echo '{"gpu": {"hosts": ["g1", "g2"], "vars": {"tier": "gpu"}}}' ;;
  --host) echo "{\"ansible_host\": \"10.0.0.$(echo "$2" | tr -d g)\"}" ;;
esac
"#;

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let project = Project {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(project.path("home")).unwrap();
        project
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.write(name, text);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// nodeprov run from the project root, with no ansible.cfg but the
    /// project's and none of the caller's environment.
    fn run(&self, args: &[&str], path_env: &str) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", path_env)
            .env("HOME", self.path("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn list(&self, sources: &[&Path]) -> Value {
        let mut args = vec!["inventory".to_string(), "--list".to_string()];
        for s in sources {
            args.extend(["-i".to_string(), s.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run(&args, "/usr/bin:/bin");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_script_without_meta_is_asked_for_each_host() {
    let p = Project::new();
    let script = p.script("inv.sh", SCRIPT_NO_META);
    let list = p.list(&[&script]);
    assert_eq!(list["gpu"]["hosts"], serde_json::json!(["g1", "g2"]));
    assert_eq!(list["_meta"]["hostvars"]["g2"]["ansible_host"], "10.0.0.2");
    assert_eq!(list["_meta"]["hostvars"]["g1"]["tier"], "gpu");
    let calls = std::fs::read_to_string(p.path("calls")).unwrap();
    assert_eq!(calls, "--list\n--host g1\n--host g2\n");
}

#[test]
fn a_script_never_sees_nodeprovs_passwords() {
    let p = Project::new();
    let script = p.script(
        "inv.sh",
        "#!/bin/sh\nenv > \"$(dirname \"$0\")/seen\"\necho '{\"_meta\": {\"hostvars\": {}}}'\n",
    );
    let out = Command::new(BIN)
        .args(["inventory", "--list", "-i"])
        .arg(&script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", p.path("home"))
        .env("NODEPROV_BECOME_PASSWORD", "s3cret-become")
        .env("NODEPROV_SSH_PASSWORD", "s3cret-ssh")
        .env("ANSIBLE_INVENTORY_ENV_CHECK", "kept")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = std::fs::read_to_string(p.path("seen")).unwrap();
    assert!(!seen.contains("s3cret"), "{seen}");
    assert!(seen.contains("ANSIBLE_INVENTORY_ENV_CHECK=kept"), "{seen}");
}

#[test]
fn a_failing_script_or_bad_json_is_one_error_naming_the_script() {
    let p = Project::new();
    let failing = p.script("fail.sh", "#!/bin/sh\necho 'no API token' >&2\nexit 3\n");
    let out = p.run(&["inventory", "--list", "-i", "fail.sh"], "/usr/bin:/bin");
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains(&format!(
            "inventory script {} --list failed (exit status: 3): no API token",
            failing.display()
        )),
        "{msg}"
    );
    p.script("garbage.sh", "#!/bin/sh\necho '[group]'\n");
    let msg = stderr(&p.run(
        &["inventory", "--list", "-i", "garbage.sh"],
        "/usr/bin:/bin",
    ));
    assert!(
        msg.contains("garbage.sh --list did not print a JSON inventory"),
        "{msg}"
    );
}

#[test]
fn a_file_without_the_executable_bit_is_never_run() {
    let p = Project::new();
    // Run, it would print no JSON; read as INI, its shebang is a comment.
    let file = p.write("hosts", "#!/bin/sh\n[web]\nw1\n");
    let list = p.list(&[&file]);
    assert_eq!(list["web"]["hosts"], serde_json::json!(["w1"]), "{list}");
    // Executable, but named as INI: read as INI.
    let ini = p.script("hosts.ini", "[db]\nd1\n");
    let list = p.list(&[&ini]);
    assert_eq!(list["db"]["hosts"], serde_json::json!(["d1"]), "{list}");
}

#[test]
fn a_folder_mixes_ini_script_and_constructed_with_group_vars_beside_it() {
    let p = Project::new();
    p.write(
        "inventory/01-static.ini",
        "[web]\nw1 arch=x86_64\nw2 arch=aarch64\n",
    );
    p.script(
        "inventory/02-dynamic.py",
        "#!/usr/bin/python3\nimport json, sys\nprint(json.dumps({'gpu': {'hosts': ['g1'], 'vars': {'arch': 'x86_64'}}, '_meta': {'hostvars': {'g1': {'gpus': 8}}}}))\n",
    );
    p.write(
        "inventory/03-constructed.yml",
        "plugin: ansible.builtin.constructed\nstrict: false\ncompose:\n  total_gpus: gpus * 2\ngroups:\n  big: gpus is defined and gpus > 4\nkeyed_groups:\n  - key: arch\n    prefix: arch\n",
    );
    p.write("inventory/README.md", "not an inventory\n");
    p.write("inventory/group_vars/big.yml", "role: trainer\n");
    let list = p.list(&[&p.path("inventory")]);
    assert_eq!(list["big"]["hosts"], serde_json::json!(["g1"]), "{list}");
    assert_eq!(
        list["arch_x86_64"]["hosts"],
        serde_json::json!(["w1", "g1"]),
        "{list}"
    );
    assert_eq!(
        list["arch_aarch64"]["hosts"],
        serde_json::json!(["w2"]),
        "{list}"
    );
    let g1 = &list["_meta"]["hostvars"]["g1"];
    assert_eq!(g1["total_gpus"], 16, "{list}");
    assert_eq!(g1["role"], "trainer", "{list}");
}

#[test]
fn the_generator_plugin_makes_hosts_from_its_layers() {
    let p = Project::new();
    let file = p.write(
        "gen.yml",
        "plugin: generator\nhosts:\n  name: \"{{ env }}-{{ app }}\"\n  parents:\n    - name: \"{{ env }}\"\n      vars:\n        stage: \"{{ env }}\"\nlayers:\n  env: [dev, prod]\n  app: [web, api]\n",
    );
    let list = p.list(&[&file]);
    assert_eq!(
        list["prod"]["hosts"],
        serde_json::json!(["prod-web", "prod-api"]),
        "{list}"
    );
    assert_eq!(
        list["_meta"]["hostvars"]["dev-api"]["stage"], "dev",
        "{list}"
    );
}

#[test]
fn an_unknown_plugin_is_refused_without_ansible_inventory_and_handed_to_it_with() {
    let p = Project::new();
    p.write(
        "netbox.yml",
        "plugin: netbox.netbox.nb_inventory\napi_endpoint: http://127.0.0.1:9\n",
    );
    let out = p.run(
        &["inventory", "--list", "-i", "netbox.yml"],
        "/usr/bin:/bin",
    );
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("inventory plugin 'netbox.netbox.nb_inventory' in netbox.yml needs ansible-core's `ansible-inventory` on PATH"),
        "{msg}"
    );
    p.script(
        "bin/ansible-inventory",
        "#!/bin/sh\n[ \"$1 $2 $3\" = '--list -i netbox.yml' ] || exit 9\necho '{\"nb\": {\"hosts\": [\"n1\"]}, \"_meta\": {\"hostvars\": {\"n1\": {\"site\": \"ams\"}}}}'\n",
    );
    let path = format!("{}:/usr/bin:/bin", p.path("bin").display());
    let out = p.run(&["inventory", "--list", "-i", "netbox.yml"], &path);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["_meta"]["hostvars"]["n1"]["site"], "ams", "{list}");
}

#[test]
fn several_sources_make_one_inventory() {
    let p = Project::new();
    let ini = p.write("a.ini", "[web]\nw1\n");
    let yml = p.write("b.yml", "gpu:\n  hosts:\n    g1:\n");
    let list = p.list(&[&ini, &yml, Path::new("extra1,extra2")]);
    assert_eq!(list["web"]["hosts"], serde_json::json!(["w1"]));
    assert_eq!(list["gpu"]["hosts"], serde_json::json!(["g1"]));
    assert_eq!(
        list["ungrouped"]["hosts"],
        serde_json::json!(["extra1", "extra2"])
    );
}
