//! A project laid out as `ansible-galaxy collection install` leaves it
//! (`collections/ansible_collections/NS/COLL/roles/…`) whose roles are used
//! by FQCN, through a play's `collections:` and as a collection role's
//! dependency: the real binary validates it, applies it from the controller
//! over SSH to an isolated host, and a second apply changes nothing. What
//! is missing or foreign is refused at validate with the `ansible-galaxy`
//! command or the FQCN.

mod support;

use std::path::Path;
use std::process::Command;

use support::control::{Control, Run};
use support::sshd::{SshFleet, TestKey};
use support::{assert_machine_unchanged, machine_digest};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const GPU: &str = "collections/ansible_collections/acme/gpu";
const BASE: &str = "collections/ansible_collections/acme/base";

fn project() -> Vec<(String, &'static str)> {
    let gpu = |p: &str| format!("{GPU}/{p}");
    vec![
        (
            gpu("roles/tune/defaults/main.yml"),
            "tune_power_limit: 300\ntune_conf: /etc/acme/tune.conf\n",
        ),
        (
            gpu("roles/tune/meta/main.yml"),
            "collections: [acme.base]\ndependencies:\n  - role: layout\n    layout_dir: /etc/acme\n",
        ),
        (
            gpu("roles/tune/tasks/main.yml"),
            "- name: tuning file\n  template: {src: tune.conf.j2, dest: '{{ tune_conf }}', mode: '0644'}\n",
        ),
        (
            gpu("roles/tune/tasks/extra.yml"),
            "- name: role names\n  copy: {dest: \"{{ names_file | default('/etc/acme/names') }}\", content: \"{{ role_name }} {{ ansible_role_name }}\\n\"}\n",
        ),
        (gpu("roles/tune/vars/more.yml"), "names_file: /etc/acme/names-included\n"),
        (
            gpu("roles/tune/templates/tune.conf.j2"),
            "power_limit={{ tune_power_limit }}\nrole={{ role_name }}\n",
        ),
        (
            format!("{BASE}/roles/layout/tasks/main.yml"),
            "- name: layout folder\n  file: {path: '{{ layout_dir }}', state: directory, mode: '0755'}\n",
        ),
        (
            "site.yml".into(),
            "- hosts: all\n  gather_facts: false\n  roles:\n    - role: acme.gpu.tune\n      tune_power_limit: 250\n  tasks:\n    - import_role:\n        name: acme.gpu.tune\n        tasks_from: extra\n\
             - hosts: all\n  gather_facts: false\n  collections: [acme.gpu]\n  roles:\n    - role: tune\n      tune_conf: /etc/acme/short.conf\n  tasks:\n    - include_role: {name: tune, tasks_from: extra, vars_from: more}\n",
        ),
    ]
}

fn write_tree(root: &Path, files: &[(String, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// `nodeprov validate` of `site.yml` in a temp dir holding `files`.
fn validate(files: &[(String, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), files);
    validate_at(&dir.path().join("site.yml"), &[], None)
}

/// `nodeprov validate PLAYBOOK ARGS` with ANSIBLE_COLLECTIONS_PATH set to
/// `env` (or unset).
fn validate_at(playbook: &Path, args: &[&str], env: Option<&Path>) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("validate").arg(playbook).args(args);
    cmd.env_remove("ANSIBLE_COLLECTIONS_PATH")
        .env_remove("ANSIBLE_COLLECTIONS_PATHS");
    if let Some(dir) = env {
        cmd.env("ANSIBLE_COLLECTIONS_PATH", dir);
    }
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn recap(run: &Run, field: &str) -> u64 {
    run.doc["hosts"][0]["recap"][field].as_u64().unwrap()
}

#[test]
fn collection_roles_validate_apply_over_ssh_and_converge() {
    let (code, text) = validate(&project());
    assert_eq!(code, 0, "{text}");

    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    write_tree(&control.path("project"), &project());
    let inventory = control.write(
        "inventory.ini",
        &format!(
            "{} ansible_host={} ansible_ssh_private_key_file={}\n",
            host.name(),
            host.ip(),
            TestKey::get().path().display()
        ),
    );
    let site = control.path("project/site.yml").display().to_string();
    let run = |cmd: &str| Run::json(control.nodeprov(&[cmd, &site, "-i", &inventory]));
    let read = |p: &str| std::fs::read_to_string(host.host.path(p)).unwrap_or_default();

    let check = run("check");
    assert_eq!(recap(&check, "failed"), 0, "{check}");
    assert!(
        !host.host.path("/etc/acme").exists(),
        "check changed the host"
    );

    let first = run("apply");
    assert_eq!(first.code, 0, "{first}");
    // The role parameter beats the collection role's default.
    assert_eq!(read("/etc/acme/tune.conf"), "power_limit=250\nrole=tune\n");
    // The short name through the play's `collections:` is the same role.
    assert_eq!(read("/etc/acme/short.conf"), "power_limit=300\nrole=tune\n");
    assert_eq!(read("/etc/acme/names"), "tune acme.gpu.tune\n");
    // `include_role` by short name, with `tasks_from` and `vars_from`.
    assert_eq!(read("/etc/acme/names-included"), "tune acme.gpu.tune\n");
    // The dependency, found through the role's meta `collections:`, made the folder.
    assert!(host.host.path("/etc/acme").is_dir());

    let second = run("apply");
    assert_eq!(second.code, 0, "{second}");
    assert_eq!(recap(&second, "changed"), 0, "{second}");
    let again = run("check");
    assert_eq!((again.code, recap(&again, "drift")), (0, 0), "{again}");
    assert_machine_unchanged(&before);
}

#[test]
fn collections_are_found_through_the_flag_and_ansible_collections_path() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &project());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::rename(dir.path().join("collections"), &elsewhere).unwrap();
    let site = dir.path().join("site.yml");
    let (code, text) = validate_at(&site, &[], None);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("collection acme.gpu is not installed"),
        "{text}"
    );
    let (code, text) = validate_at(&site, &[], Some(&elsewhere));
    assert_eq!(code, 0, "{text}");
    let flag = elsewhere.join("ansible_collections").display().to_string();
    let (code, text) = validate_at(&site, &["--collections-path", &flag], None);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn a_missing_collection_role_names_the_galaxy_command_from_requirements() {
    let files = vec![
        (
            "collections/requirements.yml".to_string(),
            "collections:\n  - name: acme.net\n    version: 1.2.0\n",
        ),
        (
            "site.yml".into(),
            "- hosts: all\n  roles: [acme.net.bond]\n",
        ),
    ];
    let (code, text) = validate(&files);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("role 'acme.net.bond' not found"), "{text}");
    assert!(text.contains("site.yml:2:11"), "{text}");
    assert!(
        text.contains(
            "collection acme.net is not installed (looked for ansible_collections/acme/net in: "
        ),
        "{text}"
    );
    assert!(
        text.contains("install it with `ansible-galaxy collection install -r ")
            && text.contains("collections/requirements.yml`"),
        "{text}"
    );
}

#[test]
fn a_collection_module_nodeprov_lacks_is_refused_at_validate() {
    let mut files = project();
    files.push((format!("{GPU}/plugins/modules/clocks.py"), "# a module\n"));
    files.push((
        "site.yml".into(),
        "- hosts: all\n  collections: [acme.gpu]\n  tasks:\n    - acme.gpu.clocks: {gpu: 0}\n    - clocks: {gpu: 0}\n    - ansible.posix.sysctl: {name: vm.swappiness, value: '10'}\n",
    ));
    let (code, text) = validate(&files);
    assert_ne!(code, 0, "{text}");
    // Whether or not this controller has ansible-core, which says why.
    let refusal = "module 'acme.gpu.clocks' is not supported: nodeprov has no native version \
                   of it, and Ansible's own module cannot run instead: ";
    assert_eq!(text.matches(refusal).count(), 2, "{text}");
    assert!(
        text.contains("site.yml:4:7") && text.contains("site.yml:5:7"),
        "{text}"
    );
    assert!(!text.contains("sysctl"), "the native FQCN is taken: {text}");
}

/// dev-sec's `os_hardening`, vendored as an installed collection: the role,
/// its 23 task files, templates and vars files all resolve and load,
/// templated `set_fact` names (`"{{ item.key }}"` over `with_dict`) too,
/// and its `meta/argument_specs.yml` is checked first, as Ansible does;
/// `ansible-playbook --syntax-check` (the ansible-core scripts/test.sh
/// installs) takes the same project. Then a check run over SSH reports the
/// fresh host's drift from the hardening and changes nothing.
#[test]
fn devsec_os_hardening_by_fqcn_validates_as_ansible_playbook_does_and_checks_over_ssh() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/projects/devsec_hardening");
    let site = project.join("site.yml");
    let (code, text) = validate_at(&site, &[], None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("ok (1 plays, 141 tasks)"), "{text}");

    let venv = std::env::var("NODEPROV_ANSIBLE_VENV").unwrap_or("target/ansible-venv".into());
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(venv).join("bin");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(bin.join("ansible-playbook"))
        .args(["--syntax-check", "-i", "localhost,", "site.yml"])
        .current_dir(&project)
        .env("HOME", home.path())
        .env("ANSIBLE_LOCAL_TEMP", home.path())
        .env_remove("ANSIBLE_CONFIG")
        .env_remove("ANSIBLE_COLLECTIONS_PATH")
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ansible-playbook --syntax-check: {said}"
    );

    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &format!(
            "{} ansible_host={} ansible_ssh_private_key_file={}\n",
            host.name(),
            host.ip(),
            TestKey::get().path().display()
        ),
    );
    let login_defs =
        || std::fs::read_to_string(host.host.path("/etc/login.defs")).unwrap_or_default();
    let was = login_defs();
    let site = site.display().to_string();
    let check = Run::json(control.nodeprov(&["check", &site, "-i", &inventory]));
    assert_eq!(recap(&check, "failed"), 0, "{check}");
    assert!(
        recap(&check, "drift") > 0,
        "a fresh host is not hardened: {check}"
    );
    assert_eq!(login_defs(), was, "check mode changed the host");
    drop(fleet);
    assert_machine_unchanged(&before);
}
