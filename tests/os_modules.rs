//! Operating-system settings modules (selinux, timezone, ini_file, ufw), symbolic
//! modes, `file` recurse and `validate` through the real binary with
//! `-c local` inside an isolated host: apply writes the config, a second
//! apply changes nothing, a hand edit is drift that `check` names and
//! leaves alone.

mod support;

use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const CONF: &str = "/etc/selinux/config";

const PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: selinux off
      ansible.posix.selinux:
        state: disabled
      register: se
    - name: reboot said
      assert:
        that:
          - se.reboot_required is sameas false
          - se.configfile == "/etc/selinux/config"
"#;

#[test]
fn selinux_config_is_written_once_and_a_hand_edit_is_drift() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/etc/selinux")).unwrap();
    let original = "# managed\nSELINUX=enforcing\nSELINUXTYPE=targeted\n";
    std::fs::write(host.path(CONF), original).unwrap();
    std::fs::write(host.path("/root/os.yml"), PLAYBOOK).unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[BIN, cmd, "/root/os.yml", "-c", "local", "--format", "json"],
        )
    };
    // This machine runs no SELinux: only the config can change.
    assert!(!std::path::Path::new("/sys/fs/selinux/enforce").exists());
    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed", "ok"], "{first:#}");
    assert_eq!(
        std::fs::read_to_string(host.path(CONF)).unwrap(),
        "# managed\nSELINUX=disabled\nSELINUXTYPE=targeted\n"
    );
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok"], "{second:#}");

    std::fs::write(host.path(CONF), original).unwrap();
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["drift", "ok"], "{check:#}");
    let diff = check["hosts"][0]["tasks"][0]["changes"][0]["diff"]
        .as_str()
        .unwrap_or_default();
    assert!(
        diff.contains("-SELINUX=enforcing\n+SELINUX=disabled"),
        "{check:#}"
    );
    assert_eq!(std::fs::read_to_string(host.path(CONF)).unwrap(), original);
    assert_machine_unchanged(&before);
}

#[test]
fn timezone_links_localtime_once_and_a_changed_link_is_drift() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let localtime = host.path("/etc/localtime");
    let _ = std::fs::remove_file(&localtime);
    std::os::unix::fs::symlink("/usr/share/zoneinfo/Etc/UTC", &localtime).unwrap();
    std::fs::write(host.path("/etc/timezone"), "Etc/UTC\n").unwrap();
    std::fs::write(
        host.path("/root/tz.yml"),
        "- hosts: all\n  tasks:\n    - name: zone\n      community.general.timezone:\n        name: Europe/Paris\n",
    )
    .unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[BIN, cmd, "/root/tz.yml", "-c", "local", "--format", "json"],
        )
    };
    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed"], "{first:#}");
    assert_eq!(
        std::fs::read_link(&localtime).unwrap(),
        std::path::Path::new("/usr/share/zoneinfo/Europe/Paris")
    );
    assert_eq!(
        std::fs::read_to_string(host.path("/etc/timezone")).unwrap(),
        "Europe/Paris\n"
    );
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"], "{second:#}");

    std::fs::remove_file(&localtime).unwrap();
    std::os::unix::fs::symlink("/usr/share/zoneinfo/Etc/UTC", &localtime).unwrap();
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    let change = &check["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(
        change["before"], "/usr/share/zoneinfo/Etc/UTC",
        "{change:#}"
    );
    assert_eq!(
        change["evidence"], "readlink -f /etc/localtime",
        "{change:#}"
    );
    assert_eq!(
        std::fs::read_link(&localtime).unwrap(),
        std::path::Path::new("/usr/share/zoneinfo/Etc/UTC")
    );
    assert_machine_unchanged(&before);
}

#[test]
fn ini_file_sets_an_option_in_its_section_once() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let conf = "/etc/nodeprov-test/tuned.conf";
    let original = "[main]\nsummary=HPC\n\n[sysctl]\nkernel.numa_balancing = 1\n";
    std::fs::create_dir_all(host.path("/etc/nodeprov-test")).unwrap();
    std::fs::write(host.path(conf), original).unwrap();
    std::fs::write(
        host.path("/root/ini.yml"),
        format!(
            "- hosts: all\n  tasks:\n    - name: min free\n      community.general.ini_file:\n        path: {conf}\n        section: sysctl\n        option: vm.min_free_kbytes\n        value: \">135168\"\n        mode: \"0600\"\n"
        ),
    )
    .unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[BIN, cmd, "/root/ini.yml", "-c", "local", "--format", "json"],
        )
    };
    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed"], "{first:#}");
    let want = "[main]\nsummary=HPC\n\n[sysctl]\nkernel.numa_balancing = 1\nvm.min_free_kbytes = >135168\n";
    assert_eq!(std::fs::read_to_string(host.path(conf)).unwrap(), want);
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"], "{second:#}");

    let edited = want.replace(">135168", "65536");
    std::fs::write(host.path(conf), &edited).unwrap();
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    let diff = check["hosts"][0]["tasks"][0]["changes"][0]["diff"]
        .as_str()
        .unwrap_or_default();
    assert!(
        diff.contains("-vm.min_free_kbytes = 65536\n+vm.min_free_kbytes = >135168"),
        "{check:#}"
    );
    assert_eq!(std::fs::read_to_string(host.path(conf)).unwrap(), edited);
    assert_machine_unchanged(&before);
}

#[test]
fn a_symbolic_mode_is_applied_once() {
    use std::os::unix::fs::PermissionsExt;
    let host = IsolatedHost::new();
    let path = "/etc/nodeprov-test/tool.sh";
    std::fs::create_dir_all(host.path("/etc/nodeprov-test")).unwrap();
    std::fs::write(host.path(path), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(host.path(path), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(
        host.path("/root/mode.yml"),
        format!("- hosts: all\n  tasks:\n    - name: mode\n      file:\n        path: {path}\n        mode: u=rwx,go=rX\n"),
    )
    .unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/mode.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        )
    };
    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed"], "{first:#}");
    let change = &first["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(change["after"], "0755", "{change:#}");
    let mode = std::fs::metadata(host.path(path))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"], "{second:#}");
}

#[test]
fn recurse_sets_a_directorys_contents_once() {
    use std::os::unix::fs::PermissionsExt;
    let host = IsolatedHost::new();
    let dir = "/etc/nodeprov-test/tree";
    std::fs::create_dir_all(host.path(&format!("{dir}/sub"))).unwrap();
    std::fs::write(host.path(&format!("{dir}/sub/a")), "a\n").unwrap();
    std::fs::write(
        host.path("/root/tree.yml"),
        format!("- hosts: all\n  tasks:\n    - name: tree\n      file:\n        path: {dir}\n        state: directory\n        recurse: yes\n        mode: \"0750\"\n"),
    )
    .unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/tree.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        )
    };
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    let subjects: Vec<&str> = check["hosts"][0]["tasks"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert!(
        subjects.contains(&"/etc/nodeprov-test/tree contents"),
        "{check:#}"
    );
    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    let mode = |p: &str| {
        std::fs::metadata(host.path(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode(&format!("{dir}/sub/a")), 0o750);
    assert_eq!(mode(&format!("{dir}/sub")), 0o750);
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"], "{second:#}");
}

#[test]
fn validate_keeps_a_refused_file_out() {
    let host = IsolatedHost::new();
    let path = "/etc/nodeprov-test/sudoers";
    std::fs::create_dir_all(host.path("/etc/nodeprov-test")).unwrap();
    std::fs::write(host.path(path), "ok\n").unwrap();
    std::fs::write(
        host.path("/root/validate.yml"),
        format!(
            "- hosts: all\n  tasks:\n    - name: accepted\n      lineinfile:\n        path: {path}\n        line: ok too\n        validate: grep -q '^ok' %s\n    - name: refused\n      lineinfile:\n        path: {path}\n        line: broken\n        validate: grep -q '^never' %s\n"
        ),
    )
    .unwrap();
    let (code, doc) = run_json(
        &host,
        &[
            BIN,
            "apply",
            "/root/validate.yml",
            "-c",
            "local",
            "--format",
            "json",
        ],
    );
    assert_ne!(code, 0, "{doc:#}");
    assert_eq!(statuses(&doc), ["changed", "failed"], "{doc:#}");
    let message = doc["hosts"][0]["tasks"][1]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("refused the new content"), "{doc:#}");
    assert_eq!(
        std::fs::read_to_string(host.path(path)).unwrap(),
        "ok\nok too\n"
    );
    let left = std::fs::read_dir(host.path("/etc/nodeprov-test"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".nodeprov.")
        })
        .count();
    assert_eq!(left, 0, "no temp file is left");
}

#[test]
fn ufw_on_a_host_without_it_fails_saying_so() {
    let host = IsolatedHost::new();
    std::fs::write(
        host.path("/root/ufw.yml"),
        "- hosts: all\n  tasks:\n    - name: firewall\n      community.general.ufw:\n        state: enabled\n",
    )
    .unwrap();
    // ufw lives in sbin: a PATH without it is a host without ufw.
    let (code, doc) = run_json(
        &host,
        &[
            "/usr/bin/env",
            "PATH=/usr/bin:/bin",
            BIN,
            "check",
            "/root/ufw.yml",
            "-c",
            "local",
            "--format",
            "json",
        ],
    );
    assert_ne!(code, 0, "{doc:#}");
    assert_eq!(statuses(&doc), ["failed"], "{doc:#}");
    let message = doc["hosts"][0]["tasks"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(message, "ufw is not installed on this host", "{doc:#}");
}

/// The write options every file module takes (symbolic `mode`, `validate`,
/// `backup`, `create`, `insertafter`) through the binary: applied once,
/// then nothing to do, and a hand edit is drift that check leaves.
const WRITE_OPTIONS: &str = r#"- hosts: all
  tasks:
    - name: copied
      copy:
        dest: /etc/nodeprov-test/copied.conf
        content: "Defaults env_reset\n"
        mode: u=rw,go=r
        validate: grep -q '^Defaults' %s
    - name: templated
      template:
        src: /root/rendered.j2
        dest: /etc/nodeprov-test/rendered.conf
        mode: u=rw,g=r,o=
        validate: grep -q '^name=' %s
    - name: block in an existing file
      blockinfile:
        path: /etc/nodeprov-test/existing.conf
        insertafter: '^first'
        block: inserted
        backup: true
    - name: block in a new file
      blockinfile:
        path: /etc/nodeprov-test/created.conf
        create: true
        block: created
"#;

#[test]
fn write_options_hold_through_the_binary_once() {
    use std::os::unix::fs::PermissionsExt;
    let host = IsolatedHost::new();
    let dir = host.path("/etc/nodeprov-test");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("existing.conf"), "first\nlast\n").unwrap();
    std::fs::write(
        host.path("/root/rendered.j2"),
        "name={{ inventory_hostname }}\n",
    )
    .unwrap();
    std::fs::write(host.path("/root/write.yml"), WRITE_OPTIONS).unwrap();
    let run = |cmd: &str| {
        let argv = [
            BIN,
            cmd,
            "/root/write.yml",
            "-c",
            "local",
            "--format",
            "json",
        ];
        run_json(&host, &argv)
    };
    let mode = |name: &str| {
        let meta = std::fs::metadata(dir.join(name)).unwrap();
        meta.permissions().mode() & 0o7777
    };
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();

    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed"; 4], "{first:#}");
    assert_eq!((mode("copied.conf"), mode("rendered.conf")), (0o644, 0o640));
    assert_eq!(read("rendered.conf"), "name=localhost\n");
    let existing = read("existing.conf");
    let order: Vec<&str> = existing.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(order, ["first", "inserted", "last"], "{existing}");
    assert!(read("created.conf").contains("\ncreated\n"));
    let backups: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("existing.conf.") && n != "existing.conf")
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(read(&backups[0]), "first\nlast\n");

    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"; 4], "{second:#}");

    std::fs::write(dir.join("copied.conf"), "Defaults !env_reset\n").unwrap();
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["drift", "ok", "ok", "ok"], "{check:#}");
    assert_eq!(read("copied.conf"), "Defaults !env_reset\n");
}
