//! `group`, `user` and `authorized_key` through the real binary with `-c local` inside an
//! isolated host, whose /etc is its own: check predicts what apply does,
//! a second apply changes nothing, and a hand change is drift that `check`
//! names and leaves alone.

mod support;

use std::os::unix::fs::MetadataExt;

use support::{
    assert_machine_unchanged, drift_on, machine_digest, run_json, task_statuses as statuses,
    IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const PRESENT: &str = r#"- hosts: all
  tasks:
    - group: {name: np_render, gid: 4242, system: true}
    - group: {name: np_extra}
    - user:
        name: np_alice
        uid: 4243
        group: np_render
        groups: [np_extra]
        shell: /bin/sh
        home: /root/np_alice
        comment: Alice L
        password: "$6$salt$notarealhash"
        password_lock: true
    - user: {name: np_alice, groups: [np_render], append: true}
"#;

const KEYS: &str = r#"- hosts: all
  tasks:
    - authorized_key:
        user: np_alice
        key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA alice@lab
"#;

const ABSENT: &str = r#"- hosts: all
  tasks:
    - user: {name: np_alice, state: absent}
    - group: {name: np_extra, state: absent}
"#;

fn entry(host: &IsolatedHost, file: &str, name: &str) -> Option<String> {
    std::fs::read_to_string(host.path(file))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .map(str::to_string)
}

#[test]
fn groups_a_user_and_a_key_are_made_once_and_a_changed_shell_is_drift() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    // No mail spool: /var/mail is the machine's own.
    std::fs::create_dir_all(host.path("/etc/default")).unwrap();
    std::fs::write(host.path("/etc/default/useradd"), "CREATE_MAIL_SPOOL=no\n").unwrap();
    std::fs::write(host.path("/root/present.yml"), PRESENT).unwrap();
    std::fs::write(host.path("/root/absent.yml"), ABSENT).unwrap();
    std::fs::write(host.path("/root/keys.yml"), KEYS).unwrap();
    let run = |cmd: &str, book: &str| {
        run_json(&host, &[BIN, cmd, book, "-c", "local", "--format", "json"])
    };
    let (code, check) = run("check", "/root/present.yml");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(
        statuses(&check),
        ["drift", "drift", "drift", "drift"],
        "{check:#}"
    );
    assert!(entry(&host, "/etc/passwd", "np_alice").is_none());

    let (code, first) = run("apply", "/root/present.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(
        statuses(&first),
        ["changed", "changed", "changed", "ok"],
        "{first:#}"
    );
    assert!(!first.to_string().contains("notarealhash"), "{first:#}");
    assert_eq!(
        entry(&host, "/etc/passwd", "np_alice").unwrap(),
        "np_alice:x:4243:4242:Alice L:/root/np_alice:/bin/sh"
    );
    assert!(entry(&host, "/etc/group", "np_render")
        .unwrap()
        .starts_with("np_render:x:4242:"));
    assert!(entry(&host, "/etc/group", "np_extra")
        .unwrap()
        .ends_with(":np_alice"));
    assert!(entry(&host, "/etc/shadow", "np_alice")
        .unwrap()
        .starts_with("np_alice:!$6$salt$notarealhash:"));
    assert!(host.path("/root/np_alice").is_dir());

    let (code, second) = run("apply", "/root/present.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok", "ok", "ok"], "{second:#}");

    let (code, keys) = run("apply", "/root/keys.yml");
    assert_eq!(code, 0, "{keys:#}");
    assert_eq!(statuses(&keys), ["changed"], "{keys:#}");
    let file = host.path("/root/np_alice/.ssh/authorized_keys");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA alice@lab\n"
    );
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (meta.mode() & 0o777, meta.uid(), meta.gid()),
        (0o600, 4243, 4242)
    );
    let dir = std::fs::metadata(host.path("/root/np_alice/.ssh")).unwrap();
    assert_eq!((dir.mode() & 0o777, dir.uid()), (0o700, 4243));
    let (code, keys) = run("apply", "/root/keys.yml");
    assert_eq!(code, 0, "{keys:#}");
    assert_eq!(statuses(&keys), ["ok"], "{keys:#}");

    // The key line removed by hand: check names it and leaves the file.
    std::fs::write(&file, "").unwrap();
    let (code, drift) = run("check", "/root/keys.yml");
    let path = "/root/np_alice/.ssh/authorized_keys";
    let key = drift_on(code, &drift, 0, path);
    assert!(
        key["diff"]
            .as_str()
            .is_some_and(|d| d.contains("+ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA alice@lab")),
        "{drift:#}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");

    // A gid changed by hand in /etc/group: check names both gids.
    let group = host.path("/etc/group");
    let text = std::fs::read_to_string(&group).unwrap();
    std::fs::write(
        &group,
        text.replace("np_render:x:4242:", "np_render:x:4299:"),
    )
    .unwrap();
    let (code, drift) = run("check", "/root/present.yml");
    let gid = drift_on(code, &drift, 0, "group np_render");
    assert_eq!(
        [&gid["before"], &gid["after"], &gid["evidence"]],
        ["gid 4299", "gid 4242", "getent group np_render"],
        "{drift:#}"
    );
    assert!(entry(&host, "/etc/group", "np_render")
        .unwrap()
        .starts_with("np_render:x:4299:"));
    std::fs::write(&group, text).unwrap();

    let out = host.run(&["/usr/sbin/usermod", "-s", "/bin/bash", "np_alice"]);
    assert!(out.status.success(), "{out:?}");
    let (code, drift) = run("check", "/root/present.yml");
    assert_eq!(code, 2, "{drift:#}");
    assert_eq!(statuses(&drift), ["ok", "ok", "drift", "ok"], "{drift:#}");
    assert_eq!(
        drift["hosts"][0]["tasks"][2]["changes"][0]["after"], "/bin/sh",
        "{drift:#}"
    );
    assert!(entry(&host, "/etc/passwd", "np_alice")
        .unwrap()
        .ends_with(":/bin/bash"));

    let (code, gone) = run("apply", "/root/absent.yml");
    assert_eq!(code, 0, "{gone:#}");
    assert_eq!(statuses(&gone), ["changed", "changed"], "{gone:#}");
    assert!(entry(&host, "/etc/passwd", "np_alice").is_none());
    assert!(entry(&host, "/etc/group", "np_extra").is_none());
    let (code, again) = run("apply", "/root/absent.yml");
    assert_eq!(code, 0, "{again:#}");
    assert_eq!(statuses(&again), ["ok", "ok"], "{again:#}");
    assert_machine_unchanged(&before);
}

const AGEING: &str = r#"- hosts: all
  tasks:
    - user:
        name: np_aged
        create_home: false
        password_expire_min: 7
        password_expire_max: 90
        password_expire_warn: 14
"#;

/// shadow's min, max and warn fields of an account.
fn ageing(host: &IsolatedHost, name: &str) -> Vec<String> {
    let line = entry(host, "/etc/shadow", name).unwrap();
    line.split(':')
        .skip(3)
        .take(3)
        .map(str::to_string)
        .collect()
}

#[test]
fn password_ageing_is_set_once_and_a_hand_edit_of_shadow_is_drift() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/etc/default")).unwrap();
    std::fs::write(host.path("/etc/default/useradd"), "CREATE_MAIL_SPOOL=no\n").unwrap();
    std::fs::write(host.path("/root/ageing.yml"), AGEING).unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/ageing.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        )
    };
    let out = host.run(&["/usr/sbin/useradd", "-M", "np_aged"]);
    assert!(out.status.success(), "{out:?}");

    let (code, first) = run("apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed"], "{first:#}");
    assert_eq!(ageing(&host, "np_aged"), ["7", "90", "14"]);
    let (code, second) = run("apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok"], "{second:#}");

    let shadow = host.path("/etc/shadow");
    let text = std::fs::read_to_string(&shadow).unwrap();
    let edited: String = text
        .lines()
        .map(|l| match l.strip_prefix("np_aged:") {
            Some(rest) => {
                let mut f: Vec<&str> = rest.split(':').collect();
                f[3] = "30";
                format!("np_aged:{}\n", f.join(":"))
            }
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&shadow, edited).unwrap();
    let (code, drift) = run("check");
    assert_eq!(code, 2, "{drift:#}");
    assert_eq!(statuses(&drift), ["drift"], "{drift:#}");
    let change = &drift["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(
        (&change["before"], &change["after"]),
        (&"30".into(), &"90".into()),
        "{drift:#}"
    );
    assert_eq!(ageing(&host, "np_aged"), ["7", "30", "14"]);
    assert_machine_unchanged(&before);
}
