//! Ansible Vault content as the real `ansible-vault` writes it, decrypted by
//! nodeprov: whole vars files (1.1 and 1.2 with a vault id) read through
//! every path variables come from, inline `!vault` values from
//! `encrypt_string`, and `copy`/`template` sources; each password source
//! (file, script, environment); a wrong password stops the run before any
//! host is touched; and, on an isolated SSH host, decrypted values are
//! written where a task puts them and shown masked everywhere else.
//!
//! The ansible-core venv is the one scripts/test.sh installs; another one
//! is named with NODEPROV_ANSIBLE_VENV.

mod support;

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::control::{Control, Run};
use support::sshd::{SshFleet, SshHost};
use support::{assert_machine_unchanged, machine_digest};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// The venv holding ansible-core, relative to the project unless absolute.
fn venv() -> PathBuf {
    let dir = std::env::var("NODEPROV_ANSIBLE_VENV").unwrap_or("target/ansible-venv".into());
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
}

/// `ansible-vault ARGS` in `dir`, with its stdout.
fn ansible_vault(dir: &Path, args: &[&str]) -> String {
    let bin = venv().join("bin/ansible-vault");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/test.sh, which installs ansible-core there, or \
         `python3 -m venv target/ansible-venv && target/ansible-venv/bin/pip install \
         'ansible-core==2.17.*'` (NODEPROV_ANSIBLE_VENV names another venv)",
        bin.display()
    );
    let out = Command::new(&bin)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .expect("run ansible-vault");
    assert!(
        out.status.success(),
        "ansible-vault {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Encrypts `name` in place: with the default password file, or for a
/// vault id (`prod@pw-prod`).
fn encrypt(dir: &Path, name: &str, text: &str, id: Option<&str>) {
    write(dir, name, text);
    match id {
        None => ansible_vault(dir, &["encrypt", "--vault-password-file", "pw", name]),
        Some(id) => ansible_vault(dir, &["encrypt", "--vault-id", id, name]),
    };
    assert!(std::fs::read_to_string(dir.join(name))
        .unwrap()
        .starts_with("$ANSIBLE_VAULT;"));
}

/// `name: !vault |` for `value`, as `encrypt_string` prints it.
fn encrypt_string(dir: &Path, id: &str, name: &str, value: &str) -> String {
    ansible_vault(
        dir,
        &["encrypt_string", "--vault-id", id, "--name", name, value],
    )
}

fn nodeprov(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .stdin(Stdio::null());
    cmd
}

/// Plaintexts of the local test, each a value only a vault holds.
const LOCAL_SECRETS: &[&str] = &[
    "v11-play-secret",
    "v12-prod-secret",
    "inline-secret",
    "group-secret",
    "extra-secret",
    "included-secret",
    "copied-file-secret",
    "template-secret",
];

const LOCAL_PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  vars_files: [vars/v11.yml, vars/v12.yml]
  vars:
INLINE
  tasks:
    - include_vars: vars/included.yml
    - assert:
        that:
          - play_secret == 'v11-play-secret'
          - prod_secret == 'v12-prod-secret'
          - inline_secret == 'inline-secret'
          - group_secret == 'group-secret'
          - extra_secret == 'extra-secret'
          - included_secret == 'included-secret'
    - copy: {src: secret.txt, dest: "{{ out }}/copied"}
    - template: {src: secret.j2, dest: "{{ out }}/templated"}
    - copy: {content: "{{ inline_secret }} {{ play_secret }}\n", dest: "{{ out }}/content"}
"#;

/// Every place variables and sources are read, with every password source:
/// the real value arrives where a task writes it, and no output shows it.
#[test]
fn ansible_vault_content_decrypts_everywhere_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "pw", "default-pass\n");
    write(d, "pw-prod", "prod-pass\n");
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    encrypt(d, "vars/v11.yml", "play_secret: v11-play-secret\n", None);
    encrypt(
        d,
        "vars/v12.yml",
        "prod_secret: v12-prod-secret\n",
        Some("prod@pw-prod"),
    );
    encrypt(
        d,
        "vars/included.yml",
        "included_secret: included-secret\n",
        None,
    );
    encrypt(
        d,
        "inventory/group_vars/all.yml",
        "group_secret: group-secret\n",
        None,
    );
    encrypt(
        d,
        "extra.yml",
        "extra_secret: extra-secret\n",
        Some("prod@pw-prod"),
    );
    encrypt(d, "files/secret.txt", "copied-file-secret\n", None);
    encrypt(
        d,
        "templates/secret.j2",
        "{{ 'template-' ~ 'secret' }}\n",
        None,
    );
    let inline = encrypt_string(d, "prod@pw-prod", "inline_secret", "inline-secret");
    let indented: String = inline.lines().map(|l| format!("    {l}\n")).collect();
    write(d, "pb.yml", &LOCAL_PLAYBOOK.replace("INLINE\n", &indented));
    write(
        d,
        "inventory/hosts.ini",
        &format!("localhost out={}\n", out.display()),
    );
    // A script whose stdout is the password, found by the environment.
    write(d, "prod-pass.sh", "#!/bin/sh\necho prod-pass\n");
    let script = d.join("prod-pass.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();

    let run = |cmd: &str| {
        let mut c = nodeprov(
            d,
            &[
                cmd,
                "-c",
                "local",
                "pb.yml",
                "-i",
                "inventory/hosts.ini",
                "-e",
                "@extra.yml",
            ],
        );
        c.args(["--vault-password-file", "pw", "--report", "report"])
            .env(
                "ANSIBLE_VAULT_IDENTITY_LIST",
                format!("prod@{}", script.display()),
            );
        Run::of(c)
    };
    let first = run("apply");
    assert_eq!(first.code, 0, "{first}");
    for (file, content) in [
        ("copied", "copied-file-secret\n"),
        ("templated", "template-secret\n"),
        ("content", "inline-secret v11-play-secret\n"),
    ] {
        assert_eq!(std::fs::read_to_string(out.join(file)).unwrap(), content);
    }
    let check = run("check");
    assert_eq!(check.code, 0, "{check}");
    let mut outputs = vec![
        ("stdout", first.stdout.clone() + &check.stdout),
        ("stderr", first.stderr.clone() + &check.stderr),
    ];
    for f in ["report.json", "junit.xml", "report.html"] {
        outputs.push((
            f,
            std::fs::read_to_string(d.join("report").join(f)).unwrap(),
        ));
    }
    for (name, text) in &outputs {
        for secret in LOCAL_SECRETS {
            assert!(!text.contains(secret), "{name} shows {secret}:\n{text}");
        }
    }

    // The same with the passwords from ANSIBLE_VAULT_PASSWORD_FILE and
    // --vault-id, and `validate` decrypting as well.
    let mut c = nodeprov(d, &["validate", "pb.yml", "-i", "inventory/hosts.ini"]);
    c.args(["--vault-id", "prod@pw-prod"])
        .env("ANSIBLE_VAULT_PASSWORD_FILE", d.join("pw"));
    let validated = Run::of(c);
    assert_eq!(validated.code, 0, "{validated}");

    // The same from ansible.cfg's keys alone.
    let cfg = "[defaults]\nvault_password_file = pw\nvault_identity_list = prod@pw-prod\n";
    write(d, "ansible.cfg", cfg);
    let from_cfg = Run::of(nodeprov(
        d,
        &["validate", "pb.yml", "-i", "inventory/hosts.ini"],
    ));
    assert_eq!(from_cfg.code, 0, "{from_cfg}");
    std::fs::remove_file(d.join("ansible.cfg")).unwrap();

    // `vault view` shows what it is asked for, unmasked.
    let mut c = nodeprov(d, &["vault", "view", "vars/v11.yml", "extra.yml"]);
    c.args(["--vault-password-file", "pw", "--vault-id", "prod@pw-prod"]);
    let viewed = Run::of(c);
    assert_eq!(viewed.code, 0, "{viewed}");
    assert_eq!(
        viewed.stdout,
        "play_secret: v11-play-secret\nextra_secret: extra-secret\n"
    );
}

const TYPED_PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  vars_files: [vars/typed.yml]
  tasks:
    - debug:
        msg: "n={{ s_int }} g={{ g_int }} flag={{ s_flag }} tab={{ s_tab }}"
    - debug:
        msg: "{{ s_tab | to_json }}"
    - copy: {content: "{{ s_int }}\n{{ s_tab }}\n{{ s_flag }}\n", dest: "{{ out }}/typed"}
    - file: {path: "{{ out }}/{{ s_int }}", state: touch}
    - assert:
        that: [s_int == 1]
        fail_msg: "got {{ s_int }} and {{ s_tab }}"
      ignore_errors: true
"#;

/// A whole-file vault's numbers and booleans are secrets as its strings
/// are, and a secret is masked in the forms outputs escape it to (a tab as
/// `\t` or `\x09`, `to_json`): in the human output with and without a
/// diff, the JSON, JUnit and HTML reports, an assert's message, a file
/// path, and `inventory --host`. A password script sees none of
/// nodeprov's own settings.
#[test]
fn vaulted_numbers_booleans_and_escaped_secrets_are_masked_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "pw", "typed-pass\n");
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    encrypt(
        d,
        "vars/typed.yml",
        "s_int: 73915286\ns_flag: true\ns_tab: \"tab\\there-secret\"\n",
        None,
    );
    encrypt(d, "inventory/group_vars/all.yml", "g_int: 48213377\n", None);
    write(
        d,
        "inventory/hosts.ini",
        &format!("localhost out={}\n", out.display()),
    );
    write(d, "pb.yml", TYPED_PLAYBOOK);
    write(
        d,
        "pw.sh",
        &format!(
            "#!/bin/sh\nenv > {}/script-env\necho typed-pass\n",
            d.display()
        ),
    );
    std::fs::set_permissions(d.join("pw.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let run = |args: &[&str]| {
        let mut c = nodeprov(d, args);
        c.args(["-c", "local", "pb.yml", "-i", "inventory/hosts.ini"])
            .args(["--vault-password-file", "pw.sh"])
            .env("NODEPROV_BECOME_PASSWORD", "become-pass-3318");
        Run::of(c)
    };
    let applied = run(&["apply", "--report", "report"]);
    assert_eq!(applied.code, 0, "{applied}");
    assert_eq!(
        std::fs::read_to_string(out.join("typed")).unwrap(),
        "73915286\ntab\there-secret\nTrue\n",
        "the task wrote the real values"
    );
    assert!(out.join("73915286").exists());
    std::fs::remove_file(out.join("typed")).unwrap();
    std::fs::remove_file(out.join("73915286")).unwrap();
    let diffed = run(&["check", "--diff"]);
    assert_eq!(diffed.code, 2, "{diffed}");
    let json = run(&["check", "--format", "json"]);
    assert_eq!(json.code, 2, "{json}");
    let mut c = nodeprov(d, &["inventory", "-i", "inventory/hosts.ini"]);
    c.args(["--host", "localhost", "--vault-password-file", "pw"]);
    let host_vars = Run::of(c);
    assert_eq!(host_vars.code, 0, "{host_vars}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&host_vars.stdout).unwrap()["g_int"],
        "********",
        "{host_vars}"
    );

    let mut outputs = vec![
        ("apply stdout", applied.stdout.clone()),
        ("check --diff stdout", diffed.stdout.clone()),
        ("JSON", json.stdout.clone()),
        ("inventory --host", host_vars.stdout.clone()),
    ];
    for f in ["report.json", "junit.xml", "report.html"] {
        outputs.push((
            f,
            std::fs::read_to_string(d.join("report").join(f)).unwrap(),
        ));
    }
    assert!(
        diffed
            .stdout
            .contains("n=******** g=******** flag=******** tab=********"),
        "{diffed}"
    );
    for (name, text) in &outputs {
        for secret in [
            "73915286",
            "48213377",
            "here-secret",
            "flag=True",
            "become-pass",
        ] {
            assert!(!text.contains(secret), "{name} shows {secret}:\n{text}");
        }
    }
    let env = std::fs::read_to_string(d.join("script-env")).unwrap();
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("NODEPROV_"), "the password script saw: {env}");
}

/// A vault's header is the file's bytes: a vault id with control
/// characters is shown escaped in the error, never sent to the terminal.
#[test]
fn a_vault_id_with_control_bytes_is_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "pw", "pw\n");
    write(
        d,
        "pb.yml",
        "- hosts: localhost\n  gather_facts: false\n  vars_files: [v.yml]\n  tasks: []\n",
    );
    let inner: String = format!(
        "{}\n{}\n{}",
        "00".repeat(32),
        "00".repeat(32),
        "00".repeat(16)
    )
    .bytes()
    .map(|b| format!("{b:02x}"))
    .collect();
    let body: Vec<String> = inner
        .as_bytes()
        .chunks(80)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    write(
        d,
        "v.yml",
        &format!(
            "$ANSIBLE_VAULT;1.2;AES256;ev\x1b[2J\x07il\n{}\n",
            body.join("\n")
        ),
    );
    let run = Run::of(nodeprov(
        d,
        &["validate", "pb.yml", "--vault-password-file", "pw"],
    ));
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stderr.contains("vault id 'ev\\x1b[2J\\x07il'"), "{run}");
    assert!(
        !run.stderr.contains('\x1b') && !run.stderr.contains('\x07'),
        "{run}"
    );
}

/// A wrong password, a missing one and tampered data each stop the run at
/// load time with one line naming the file, its line and the vault id.
#[test]
fn a_wrong_missing_or_tampered_vault_stops_before_any_host() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "pw", "default-pass\n");
    write(d, "pw-prod", "prod-pass\n");
    write(d, "wrong", "not-the-pass\n");
    encrypt(
        d,
        "vars/v12.yml",
        "prod_secret: v12-prod-secret\n",
        Some("prod@pw-prod"),
    );
    let inline = encrypt_string(d, "prod@pw-prod", "inline_secret", "inline-secret");
    let indented: String = inline.lines().map(|l| format!("    {l}\n")).collect();
    let playbook = "- hosts: all\n  gather_facts: false\n  vars_files: [vars/v12.yml]\n  \
                    tasks:\n    - copy: {content: x, dest: /nonexistent/never-written}\n";
    write(d, "pb.yml", playbook);
    write(
        d,
        "inline.yml",
        &format!("- hosts: all\n  vars:\n{indented}  tasks: []\n"),
    );

    let stderr_of = |args: &[&str]| {
        let run = Run::of(nodeprov(d, args));
        assert_eq!(run.code, 1, "{run}");
        assert!(run.stdout.is_empty(), "{run}");
        let first = run.stderr.lines().next().unwrap_or_default().to_string();
        assert!(!run.stderr.contains("prod-pass"), "{run}");
        first
    };
    let wrong = stderr_of(&["check", "-c", "local", "pb.yml", "--vault-id", "prod@wrong"]);
    assert_eq!(
        wrong,
        "error: cannot decrypt vars/v12.yml:1 (vault id 'prod'): no vault password given \
         decrypts it (HMAC mismatch: a wrong password, or tampered data)"
    );
    let validate = stderr_of(&["validate", "pb.yml", "--vault-password-file", "wrong"]);
    assert_eq!(validate, wrong);
    let missing = stderr_of(&["validate", "pb.yml"]);
    assert_eq!(
        missing,
        "error: cannot decrypt vars/v12.yml:1 (vault id 'prod'): no vault password was given"
    );
    // An inline value fails only where it is read, as in Ansible; validate
    // still lists it.
    let inline = Run::of(nodeprov(
        d,
        &["validate", "inline.yml", "--vault-id", "prod@wrong"],
    ));
    assert_eq!(inline.code, 1, "{inline}");
    assert!(
        inline
            .stdout
            .contains("loads, with 1 error(s) that Ansible reports when a task runs"),
        "{inline}"
    );
    assert!(
        (inline.stderr.lines().next().unwrap_or_default())
            .starts_with("error: cannot decrypt inline.yml:4 (vault id 'prod'): "),
        "{inline}"
    );
    assert!(!inline.stderr.contains("inline-secret"), "{inline}");

    // A copy source and an include_vars file fail at load too, not on each host.
    encrypt(
        d,
        "files/secret.txt",
        "copied-file-secret\n",
        Some("prod@pw-prod"),
    );
    encrypt(
        d,
        "vars/included.yml",
        "x: included-secret\n",
        Some("prod@pw-prod"),
    );
    let tasks = "- hosts: all\n  tasks:\n    - copy: {src: secret.txt, dest: /nonexistent/x}\n";
    write(d, "copy.yml", tasks);
    write(
        d,
        "include.yml",
        "- hosts: all\n  tasks:\n    - include_vars: included.yml\n",
    );
    for (playbook, file) in [
        ("copy.yml", "files/secret.txt"),
        ("include.yml", "vars/included.yml"),
    ] {
        let failed = stderr_of(&["check", "-c", "local", playbook, "--vault-id", "prod@wrong"]);
        assert!(
            failed.starts_with(&format!(
                "error: cannot decrypt {file}:1 (vault id 'prod'): "
            )),
            "{failed}"
        );
    }

    // One hex digit of the HMAC line changed: refused with the right password.
    let text = std::fs::read_to_string(d.join("vars/v12.yml")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let flipped = if lines[1].starts_with('6') { '3' } else { '6' };
    lines[1].replace_range(0..1, &flipped.to_string());
    write(d, "vars/v12.yml", &(lines.join("\n") + "\n"));
    let tampered = stderr_of(&["validate", "pb.yml", "--vault-id", "prod@pw-prod"]);
    assert!(
        tampered.starts_with("error: cannot decrypt vars/v12.yml:1"),
        "{tampered}"
    );
    assert!(
        tampered.contains("HMAC mismatch") || tampered.contains("malformed"),
        "{tampered}"
    );
}

/// What the secret file on the host holds after apply.
const HOST_FILE: &str = "db=group-file-secret token=group-inline-secret\n";

const SSH_PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: write the credentials
      copy:
        content: "db={{ db_password }} token={{ api_token }}\n"
        dest: /root/vault/creds
        mode: "0600"
    - name: a templated line
      lineinfile: {path: /root/vault/lines, line: "pw {{ db_password }}", create: true}
"#;

/// group_vars holding a whole encrypted file and an inline `!vault` value,
/// over real SSH: check and its reports mask both values, apply writes them
/// and a second apply changes nothing; a wrong password touches no host.
#[test]
fn group_vars_vault_values_reach_the_host_and_no_report() {
    let before = machine_digest();
    // An address no other SSH test starts a host on, so it runs beside them.
    let host = SshHost::start_on(Ipv4Addr::new(127, 0, 95, 1));
    std::fs::create_dir_all(host.host.path("/root/vault")).unwrap();
    let fleet = SshFleet { hosts: vec![host] };
    let control = Control::new(&fleet);
    let d = control.dir.path();
    write(d, "pw", "group-pass\n");
    write(d, "wrong", "wrong-pass\n");
    write(d, "inventory/hosts.ini", &fleet.inventory("root", ""));
    encrypt(
        d,
        "inventory/group_vars/all/vault.yml",
        "db_password: group-file-secret\n",
        None,
    );
    let inline = encrypt_string(d, "default@pw", "api_token", "group-inline-secret");
    write(d, "inventory/group_vars/all/vars.yml", &inline);
    let playbook = write(d, "site.yml", SSH_PLAYBOOK);
    let inventory = d.join("inventory/hosts.ini").display().to_string();
    let secrets = ["group-file-secret", "group-inline-secret", "group-pass"];

    let run = |cmd: &str, password: &str, report: &str| {
        let report = d.join(report).display().to_string();
        let pw = d.join(password).display().to_string();
        let args = [
            cmd,
            &playbook,
            "-i",
            &inventory,
            "--vault-password-file",
            &pw,
            "--report",
            &report,
        ];
        Run::json(control.nodeprov(&args))
    };
    let check = run("check", "pw", "check");
    assert_eq!(check.code, 2, "{check}");
    let diffed = check.doc.to_string();
    assert!(
        diffed.contains("********"),
        "the diff shows the mask: {check}"
    );
    let mut outputs = vec![
        ("stdout", check.stdout.clone()),
        ("stderr", check.stderr.clone()),
    ];
    for f in ["report.json", "junit.xml", "report.html"] {
        outputs.push((f, control.read(&format!("check/{f}"))));
    }
    let human = Run::of(control.nodeprov(&[
        "check",
        &playbook,
        "-i",
        &inventory,
        "--vault-password-file",
        &d.join("pw").display().to_string(),
    ]));
    assert_eq!(human.code, 2, "{human}");
    outputs.push(("human stdout", human.stdout.clone()));
    for (name, text) in &outputs {
        assert!(*name == "stderr" || !text.is_empty(), "{name} is empty");
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "check: {name} shows {secret}:\n{text}"
            );
        }
    }

    let host = &fleet.hosts[0].host;
    let wrong = Run::of(control.nodeprov(&[
        "apply",
        &playbook,
        "-i",
        &inventory,
        "--vault-password-file",
        &d.join("wrong").display().to_string(),
    ]));
    assert_eq!(wrong.code, 1, "{wrong}");
    // The encrypted file refuses the run; the inline value in vars.yml
    // would fail only where a task read it.
    assert_eq!(
        wrong.stderr.lines().next().unwrap_or_default(),
        format!(
            "error: cannot decrypt {}/inventory/group_vars/all/vault.yml:1 (vault id 'default'): \
             no vault password given decrypts it (HMAC mismatch: a wrong password, or tampered data)",
            d.display()
        ),
        "{wrong}"
    );
    assert!(
        !host.path("/root/vault/creds").exists(),
        "a wrong password touched the host"
    );

    let first = run("apply", "pw", "apply");
    assert_eq!(first.code, 0, "{first}");
    let written = std::fs::read_to_string(host.path("/root/vault/creds")).unwrap();
    assert_eq!(written, HOST_FILE);
    let lines = std::fs::read_to_string(host.path("/root/vault/lines")).unwrap();
    assert_eq!(lines, "pw group-file-secret\n");
    for text in [&first.stdout, &control.read("apply/report.json")] {
        for secret in secrets {
            assert!(!text.contains(secret), "apply shows {secret}:\n{text}");
        }
    }
    let second = run("apply", "pw", "again");
    assert_eq!(second.code, 0, "{second}");
    assert_eq!(
        second.host(fleet.hosts[0].name())["recap"]["changed"],
        0,
        "{second}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}
