//! The Ansible fallback on the oldest and the newest ansible-core users
//! have, besides the 2.17 the rest of the suite uses: each API generation
//! of ansible-core's module packing (2.15's, 2.16-2.18's, and 2.19's on)
//! and of its templating. Over real SSH, with each release's own venv (the
//! ones scripts/test.sh installs): a role-local module, a role-local
//! `WANT_JSON` shell script, an old-style one and a binary module, a builtin nodeprov
//! has no native version of, a filter of a collection the project keeps,
//! and `ansible.builtin` and Jinja filters, tests and lookups nodeprov
//! lacks, through check, apply, apply again (nothing changes) and check
//! again; a lookup neither has is refused at `validate`.

mod support;

use std::path::{Path, PathBuf};

use support::control::{Control, Run};
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

/// The venvs scripts/test.sh makes, relative to the project: each holds
/// ansible-core of one release line, and its Python is the controller's.
const VENVS: &[(&str, &str)] = &[
    ("NODEPROV_ANSIBLE_OLDEST_VENV", "target/ansible-core-oldest"),
    ("NODEPROV_ANSIBLE_VENV", "target/ansible-venv"),
    ("NODEPROV_ANSIBLE_NEWEST_VENV", "target/ansible-core-newest"),
];

/// `nodeprov validate PLAYBOOK` with ansible-core from `python`.
fn validate_with(python: &Path, playbook: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nodeprov"));
    cmd.arg("validate")
        .arg(playbook)
        .env("NODEPROV_ANSIBLE_PYTHON", python);
    cmd
}

fn venv_python(var: &str, default: &str) -> PathBuf {
    let dir = std::env::var(var).unwrap_or(default.into());
    let python = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(dir)
        .join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which installs ansible-core there ({var} names another venv)",
        python.display()
    );
    python
}

const ROLE_MODULE: &str = r#"
import os
from ansible.module_utils.basic import AnsibleModule

def main():
    m = AnsibleModule(argument_spec=dict(path=dict(type='str', required=True)),
                      supports_check_mode=True)
    path = m.params['path']
    if os.path.exists(path):
        m.exit_json(changed=False, path=path)
    if not m.check_mode:
        with open(path, 'w') as f:
            f.write('made\n')
    m.exit_json(changed=True, path=path)

main()
"#;

/// A module as linux-system-roles ship some: a shell script that reads its
/// arguments from the JSON file it is given.
const WANT_JSON_MODULE: &str = r#"#!/bin/sh
# WANT_JSON
path=$(sed -n 's/.*"path": *"\([^"]*\)".*/\1/p' "$1")
if [ -e "$path" ]; then
  echo '{"changed": false, "path": "'"$path"'"}'
  exit 0
fi
if ! grep -q '"_ansible_check_mode": *true' "$1"; then
  echo made > "$path"
fi
echo '{"changed": true, "path": "'"$path"'"}'
"#;

/// An old-style module: a shell script that sources its arguments, the
/// `key=value` words Ansible writes (a value with a quote and a `$(...)`
/// must stay data).
const OLD_STYLE_MODULE: &str = r#"#!/bin/sh
. "$1"
if [ -e "$path" ]; then
  echo '{"changed": false, "path": "'"$path"'"}'
  exit 0
fi
if [ "$_ansible_check_mode" != True ]; then
  printf '%s\n' "$note" > "$path"
fi
echo '{"changed": true, "path": "'"$path"'"}'
"#;

/// A binary module's source, compiled by the test with the controller's
/// C compiler: it reads the file of its arguments and says so.
const BINARY_MODULE_C: &str = r#"
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    printf("{\"changed\": false, \"msg\": \"binary read %s\"}\n", f ? "its arguments" : "nothing");
    return 0;
}
"#;

const COLLECTION_FILTER: &str = r#"
def shout(value, times=1):
    return (str(value).upper() + "!") * times

class FilterModule(object):
    def filters(self):
        return {"shout": shout}
"#;

const ROLE_TASKS: &str = r#"
- name: the role's own module
  my_mod: {path: "/root/np-made-{{ release }}"}
  register: made
- name: the role's own WANT_JSON script
  script_mod: {path: "/root/np-script-made-{{ release }}"}
  register: scripted
- name: the role's own old-style module
  old_mod: {path: "/root/np-old-made-{{ release }}", note: "it's $(echo run)"}
  register: old
- name: the role's own binary module
  bin_mod: {}
  register: binary
- name: a with_<lookup> loop of a lookup nodeprov lacks
  debug: {msg: "{{ item }}"}
  with_sequence: start=1 end=3
  register: seq
- name: a collection's filter reads what the module returned
  copy:
    dest: "/root/np-summary-{{ release }}"
    content: "{{ 'ok' | np.demo.shout(2) }} {{ made.path }} {{ 'a.b' | regex_escape }} {{ 'hi' | center(6) }} {{ [1, 2] is subset([1, 2, 3]) }} {{ query('items', release) | first }} {{ query('inventory_hostnames', 'all') | length }} {{ seq.results | map(attribute='item') | join('') }} {{ scripted.path | basename }} {{ old.path | basename }} {{ binary.msg }}\n"
"#;

const PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  roles: [maker]
  tasks:
    - name: a builtin nodeprov lacks
      known_hosts:
        path: "/root/np-known-{{ release }}"
        name: np-peer.example
        key: "np-peer.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFH3rV0oGr0kX3v6zYqGJ+Q0gX5a8m3fQp1o2b4c5d6e"
"#;

#[test]
fn the_fallback_runs_on_the_oldest_and_the_newest_ansible_core() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    for dir in [
        "roles/maker/library",
        "roles/maker/tasks",
        "collections/ansible_collections/np/demo/plugins/filter",
    ] {
        std::fs::create_dir_all(control.path(dir)).unwrap();
    }
    control.write("roles/maker/library/my_mod.py", ROLE_MODULE);
    control.write("roles/maker/library/script_mod.sh", WANT_JSON_MODULE);
    control.write("roles/maker/library/old_mod.sh", OLD_STYLE_MODULE);
    let source = control.write("bin_mod.c", BINARY_MODULE_C);
    let compiled = std::process::Command::new("cc")
        .arg("-o")
        .arg(control.path("roles/maker/library/bin_mod"))
        .arg(&source)
        .status()
        .expect("the controller's C compiler (cc) runs");
    assert!(compiled.success());
    control.write("roles/maker/tasks/main.yml", ROLE_TASKS);
    control.write(
        "collections/ansible_collections/np/demo/plugins/filter/demo.py",
        COLLECTION_FILTER,
    );
    control.write(
        "collections/ansible_collections/np/demo/galaxy.yml",
        "namespace: np\nname: demo\nversion: 1.0.0\n",
    );
    control.write(
        "ansible.cfg",
        &format!(
            "[defaults]\ncollections_path = {}\n",
            control.path("collections").display()
        ),
    );
    let playbook = control.write("site.yml", PLAYBOOK);
    let mut releases = Vec::new();
    for (var, default) in VENVS {
        let python = venv_python(var, default);
        let version = std::process::Command::new(&python)
            .args([
                "-c",
                "import ansible.release; print(ansible.release.__version__)",
            ])
            .output()
            .unwrap();
        let release = String::from_utf8(version.stdout)
            .unwrap()
            .trim()
            .to_string();
        assert!(
            !release.is_empty(),
            "{}",
            String::from_utf8_lossy(&version.stderr)
        );
        let inventory = control.write(
            "inventory.ini",
            &fleet.inventory("root", &format!("release={release}")),
        );
        let run = |verb: &str| {
            let mut cmd = control.nodeprov(&[verb, &playbook, "-i", &inventory]);
            cmd.current_dir(control.path(""))
                .env("NODEPROV_ANSIBLE_PYTHON", &python);
            Run::json(cmd)
        };
        let validate = |playbook: &str| {
            let mut cmd = validate_with(&python, Path::new(playbook));
            cmd.args(["-i", &inventory]).current_dir(control.path(""));
            Run::of(cmd)
        };
        let validated = validate(&playbook);
        assert_eq!(validated.code, 0, "{release}: {validated}");
        assert!(
            validated.stdout.contains(&format!(
                "runs Ansible's module my_mod (ansible-core {release}"
            )),
            "{release}: {validated}"
        );
        for line in [
            "filter np.demo.shout: runs through ansible-core",
            "filter regex_escape: runs through ansible-core",
            "filter center: runs through ansible-core",
            "test subset: runs through ansible-core",
            "lookup items: runs through ansible-core",
            "lookup inventory_hostnames: runs through ansible-core",
            "lookup sequence: runs through ansible-core",
        ] {
            assert!(
                validated.stdout.contains(line),
                "{release}: {line}: {validated}"
            );
        }
        let typo = control.write(
            "typo.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ lookup('no_such_lookup', 'x') }}\"}\n",
        );
        let refused = validate(&typo);
        assert_eq!(refused.code, 1, "{release}: {refused}");
        assert!(
            refused.stderr.contains("unknown lookup 'no_such_lookup'"),
            "{release}: {refused}"
        );
        let host_recap = |r: &Run| r.host(host.name())["recap"].clone();

        let first_check = run("check");
        assert_eq!(first_check.code, 2, "{release}: {first_check}");
        assert_eq!(
            host_recap(&first_check)["drift"],
            5,
            "{release}: {first_check}"
        );
        let apply = run("apply");
        assert_eq!(apply.code, 0, "{release}: {apply}");
        assert_eq!(host_recap(&apply)["changed"], 5, "{release}: {apply}");
        let again = run("apply");
        assert_eq!(again.code, 0, "{release}: {again}");
        assert_eq!(host_recap(&again)["changed"], 0, "{release}: {again}");
        let last_check = run("check");
        assert_eq!(last_check.code, 0, "{release}: {last_check}");
        assert_eq!(
            host_recap(&last_check)["drift"],
            0,
            "{release}: {last_check}"
        );

        let summary =
            std::fs::read_to_string(host.host.path(&format!("/root/np-summary-{release}")))
                .unwrap();
        assert_eq!(
            summary,
            format!("OK!OK! /root/np-made-{release} a\\.b   hi   True {release} 1 123 np-script-made-{release} np-old-made-{release} binary read its arguments\n")
        );
        let known =
            std::fs::read_to_string(host.host.path(&format!("/root/np-known-{release}"))).unwrap();
        assert!(known.starts_with("np-peer.example ssh-ed25519 "), "{known}");
        let scripted =
            std::fs::read_to_string(host.host.path(&format!("/root/np-script-made-{release}")))
                .unwrap();
        assert_eq!(scripted, "made\n");
        let old = std::fs::read_to_string(host.host.path(&format!("/root/np-old-made-{release}")))
            .unwrap();
        assert_eq!(old, "it's $(echo run)\n", "the words stay data");
        releases.push(release);
    }
    // Another venv may be named for a one-off run; the default is 2.15.
    if std::env::var_os(VENVS[0].0).is_none() {
        assert!(
            releases[0].starts_with("2.15."),
            "the oldest venv: {releases:?}"
        );
    }
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// An ansible-core older than the oldest the bridge drives is refused at
/// `validate` with one line naming it, not run and misread.
#[test]
fn an_ansible_core_older_than_2_15_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // A Python that answers as the bridge of ansible-core 2.14 would.
    let python = dir.path().join("python");
    std::fs::write(
        &python,
        "#!/bin/sh\necho '{\"ready\": true, \"ansible_version\": \"2.14.18\"}'\ncat >/dev/null\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let playbook = dir.path().join("site.yml");
    std::fs::write(
        &playbook,
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - wait_for: {path: /etc/hostname}\n",
    )
    .unwrap();
    let out = validate_with(&python, &playbook).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} has ansible-core 2.14.18, older than 2.15, the oldest nodeprov drives",
            python.display()
        )),
        "{stderr}"
    );
}

/// Every `ansible.builtin` filter, test and lookup that each release's
/// `ansible-doc -l` lists runs: natively, or through that ansible-core.
/// `validate` compiles a template naming each one and lists those it
/// hands to ansible-core.
#[test]
fn every_ansible_builtin_filter_test_and_lookup_is_native_or_bridged() {
    let dir = tempfile::tempdir().unwrap();
    for (var, default) in VENVS {
        let python = venv_python(var, default);
        let ansible_doc = python.with_file_name("ansible-doc");
        let mut listed = Vec::new();
        let mut template = String::from("{% if false %}");
        for kind in ["filter", "test", "lookup"] {
            let out = std::process::Command::new(&ansible_doc)
                .args(["-t", kind, "-l", "-j"])
                .env("ANSIBLE_NOCOLOR", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for name in doc.as_object().unwrap().keys() {
                let Some(short) = name.strip_prefix("ansible.builtin.") else {
                    continue;
                };
                template.push_str(&match kind {
                    "filter" => format!("{{{{ x | {short} }}}}"),
                    "test" => format!("{{{{ x is {short} }}}}"),
                    _ => format!("{{{{ lookup('{short}') }}}}"),
                });
                listed.push(format!("{kind} {short}"));
            }
        }
        template.push_str("{% endif %}");
        let playbook = dir.path().join("all.yml");
        std::fs::write(
            &playbook,
            format!(
                "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: {}\n",
                serde_json::Value::String(template)
            ),
        )
        .unwrap();
        let out = validate_with(&python, &playbook).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let bridged = listed
            .iter()
            .filter(|l| stdout.contains(&format!("  {l}: runs through ansible-core")))
            .count();
        assert!(listed.len() > 100, "{listed:?}");
        println!(
            "{}: {} ansible.builtin filters, tests and lookups: {} native, {bridged} through ansible-core",
            python.display(),
            listed.len(),
            listed.len() - bridged
        );
    }
}
