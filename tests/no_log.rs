//! `no_log` over real SSH: tasks of every kind, each carrying a secret of
//! its own (a declared query and a loop of them, a command run in check
//! mode, `uri` with a user, a password and a token in its URL, `get_url`
//! with `url_password` and with a user in its URL, `copy`, `template`,
//! `lineinfile`, `file` on a path that is itself secret), run by `check` and `apply` with `--format json` and
//! `--report`: no secret is in stdout, stderr, report.json, junit.xml or
//! report.html, nor on curl's command line, while the requests still
//! carry them to the server.

mod support;

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;

use base64::Engine;

use support::control::{Control, Run};
use support::http::{argv_recorder, Server};
use support::sshd::{SshFleet, SshHost};
use support::{assert_machine_unchanged, machine_digest};

/// Each no_log task's own secret, all of which the tasks send or write.
const SECRETS: &[&str] = &[
    "query-secret-1",
    "loop-secret-2a",
    "loop-secret-2b",
    "step-secret-3",
    "uri-pass-secret-4",
    "uri-token-secret-5",
    "gu-pass-secret-6",
    "gu-userinfo-secret-7",
    "gu-query-secret-8",
    "copy-secret-9",
    "template-secret-10",
    "line-secret-11",
    "path-secret-12",
];

/// The tasks, `{base}` the test server's URL and `{template}` the template's path.
const PLAYBOOK: &str = r#"
- hosts: all
  gather_facts: false
  vars:
    tpl_secret: template-secret-10
  tasks:
    - name: a declared query
      command: echo query-secret-1
      changed_when: false
      check_mode: false
      register: asked
      no_log: true
    - name: a loop of declared queries
      command: "echo {{ item }}"
      loop: [loop-secret-2a, loop-secret-2b]
      changed_when: false
      check_mode: false
      no_log: true
    - name: a command run in check mode too
      command: echo step-secret-3
      check_mode: false
      no_log: true
    - name: an API behind a user and a token
      uri:
        url: "{base}/api?access_token=uri-token-secret-5"
        url_username: api
        url_password: uri-pass-secret-4
        force_basic_auth: true
      no_log: true
    - name: a file behind a password
      get_url:
        url: "{base}/files/a.txt"
        dest: /root/np/a.txt
        url_username: gu
        url_password: gu-pass-secret-6
        force_basic_auth: true
      no_log: true
    - name: a file behind a user and a signature in its URL
      get_url:
        url: "{userinfo}/files/b.txt?sig=gu-query-secret-8"
        dest: /root/np/b.txt
      no_log: true
    - name: a token file
      copy: {content: "copy-secret-9\n", dest: /root/np/copy}
      no_log: true
    - name: a templated token
      template: {src: "{template}", dest: /root/np/template}
      no_log: true
    - name: a token line
      lineinfile: {path: /root/np/lines, line: line-secret-11, create: true}
      no_log: true
    - name: a folder whose name is the secret
      file: {path: /root/np/path-secret-12, state: directory}
      no_log: true
    - name: shown
      copy: {content: "visible\n", dest: /root/np/visible}
"#;

fn basic(user_password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(user_password);
    format!("authorization: basic {}", encoded.to_ascii_lowercase())
}

#[test]
fn no_log_secrets_reach_the_server_and_no_report_and_no_command_line() {
    let before = machine_digest();
    let server = Server::start(|_| ("200 OK", b"fetched\n".to_vec()));
    let userinfo = server
        .base
        .replace("http://", "http://gu:gu-userinfo-secret-7@");
    // An address no other SSH test starts a host on, so it runs beside them.
    let mut host = SshHost::start_on(Ipv4Addr::new(127, 0, 93, 1));
    // The host's sessions find the fake curl first.
    let bin = host.host.path("/root/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(host.host.path("/root/np")).unwrap();
    std::fs::write(bin.join("curl"), argv_recorder("curl")).unwrap();
    std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    host.reconfigure("SetEnv PATH=/root/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\n");
    let fleet = SshFleet { hosts: vec![host] };
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let template = control.write("token.j2", "token={{ tpl_secret }}\n");
    let playbook = control.write(
        "secret.yml",
        &PLAYBOOK
            .replace("{base}", &server.base)
            .replace("{userinfo}", &userinfo)
            .replace("{template}", &template),
    );

    for (cmd, expected) in [("check", 2), ("apply", 0)] {
        let reports = control.path(cmd).display().to_string();
        let mut args = vec![cmd, &playbook, "-i", &inventory, "--report", &reports];
        if cmd == "check" {
            args.push("--diff");
        }
        let run = Run::json(control.nodeprov(&args));
        assert_eq!(run.code, expected, "{run}");
        let doc = &run.doc["hosts"][0];
        assert!(
            run.stdout.contains("visible"),
            "the other task shows: {run}"
        );
        let mut outputs = vec![
            ("stdout", run.stdout.clone()),
            ("stderr", run.stderr.clone()),
        ];
        for f in ["report.json", "junit.xml", "report.html"] {
            outputs.push((f, control.read(&format!("{cmd}/{f}"))));
        }
        for (name, text) in &outputs {
            assert!(
                *name == "stderr" || !text.is_empty(),
                "{cmd}: {name} is empty"
            );
            for secret in SECRETS {
                assert!(
                    !text.contains(secret),
                    "{cmd}: {name} shows {secret}:\n{text}"
                );
            }
            assert!(
                !text.contains("gu:"),
                "{cmd}: {name} shows a URL's user:\n{text}"
            );
        }
        let probes = doc["probes"].as_array().unwrap();
        let hidden = |p: &&serde_json::Value| {
            p["key"]
                .as_str()
                .unwrap()
                .starts_with("(hidden by no_log) ")
        };
        assert!(probes.iter().filter(hidden).count() >= 5, "{run}");
    }

    let host = &fleet.hosts[0].host;
    for (path, content) in [
        ("/root/np/a.txt", "fetched\n"),
        ("/root/np/b.txt", "fetched\n"),
        ("/root/np/copy", "copy-secret-9\n"),
        ("/root/np/template", "token=template-secret-10\n"),
        ("/root/np/lines", "line-secret-11\n"),
    ] {
        let found = std::fs::read_to_string(host.path(path)).unwrap_or_default();
        assert_eq!(found, content, "{path}");
    }
    // Credentials and the query reached the server through curl's config.
    let api = server.received("GET /api?access_token=uri-token-secret-5 ");
    assert!(!api.is_empty(), "{:?}", server.requests);
    assert!(api[0]
        .to_ascii_lowercase()
        .contains(&basic("api:uri-pass-secret-4")));
    let a = server.received("GET /files/a.txt ");
    assert!(a[0]
        .to_ascii_lowercase()
        .contains(&basic("gu:gu-pass-secret-6")));
    let b = server.received("GET /files/b.txt?sig=gu-query-secret-8 ");
    assert!(!b.is_empty(), "{:?}", server.requests);
    assert!(b[0]
        .to_ascii_lowercase()
        .contains(&basic("gu:gu-userinfo-secret-7")));
    // ...and none of it was on its command line.
    let argv = std::fs::read_to_string(host.path("/root/curl-argv")).unwrap_or_default();
    assert!(argv.lines().count() >= 3, "curl ran: {argv}");
    for secret in SECRETS {
        assert!(
            !argv.contains(secret),
            "curl's arguments show {secret}: {argv}"
        );
    }
    assert!(
        !argv.contains("127.0.0.1"),
        "the URL is in curl's config: {argv}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}
