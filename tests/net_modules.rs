//! `get_url`, `uri` and `unarchive` through the real binary with `-c local` inside an
//! isolated host, against an HTTP server this test runs on loopback: apply
//! downloads once, a second apply downloads nothing, a tampered file is
//! drift that `check` names by its digest and leaves alone, a download with
//! the wrong checksum fails without touching `dest`; a digest is read from
//! a checksum file and credentials reach the server but no report; `uri`
//! registers its answer in check and apply alike and fails on an
//! unexpected status, and a POST is sent in apply only, once with
//! `creates`; an archive downloaded earlier in the same run is extracted
//! once, and a removed member is drift.

mod support;

use std::io::Write;
use std::sync::atomic::Ordering;

use base64::Engine;

use support::http::{tarball, Server};
use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const BODY: &str = "tool v1\n";
/// A digest no download has.
const WRONG_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Serves BODY; see [`serve_bytes`].
fn serve() -> Server {
    serve_bytes(BODY.as_bytes().to_vec())
}

/// The Basic credentials `/private/` wants.
const USER: &str = "bob";
const PASSWORD: &str = "s3cr'et $(reboot)";

/// Serves `body` at every GET path but these: `/missing` is 404,
/// `/SHA256SUMS` lists the body's digest as `tool.tar` (and another file),
/// `/private/…` wants USER and PASSWORD, and any other method is answered
/// 201 with `{"id": 7}`.
fn serve_bytes(body: Vec<u8>) -> Server {
    let sums = format!(
        "{}  other.tar\n{} *tool.tar\n",
        "1".repeat(64),
        sha256_of(&body)
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    Server::start(move |req| {
        let authorized = req.to_ascii_lowercase().contains(&format!(
            "authorization: basic {}",
            basic.to_ascii_lowercase()
        ));
        match req.split(' ').take(2).collect::<Vec<_>>()[..] {
            ["GET", "/missing"] => ("404 Not Found", Vec::new()),
            ["GET", "/SHA256SUMS"] => ("200 OK", sums.clone().into_bytes()),
            ["GET", p] if p.starts_with("/private/") && !authorized => {
                ("401 Unauthorized", Vec::new())
            }
            ["GET" | "HEAD", _] => ("200 OK", body.clone()),
            _ => ("201 Created", b"{\"id\": 7}".to_vec()),
        }
    })
}

fn json(host: &IsolatedHost, cmd: &str, playbook: &str) -> (i32, serde_json::Value) {
    run_json(
        host,
        &[BIN, cmd, playbook, "-c", "local", "--format", "json"],
    )
}

fn write(host: &IsolatedHost, p: &str, text: &str) {
    let path = host.path(p);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn sha256(text: &str) -> String {
    sha256_of(text.as_bytes())
}

fn sha256_of(bytes: &[u8]) -> String {
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn get_url_downloads_once_and_check_names_a_tampered_file() {
    let before = machine_digest();
    let Server { base, hits, .. } = serve();
    let host = IsolatedHost::new();
    let sum = sha256(BODY);
    write(
        &host,
        "/root/dl.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: pinned
      get_url:
        url: {base}/tool.tar
        dest: /root/dl/tool.tar
        checksum: "sha256:{sum}"
        mode: "0600"
    - name: into a folder
      get_url:
        url: {base}/files/notes.txt?v=1
        dest: /root/dl/
"#
        ),
    );
    std::fs::create_dir_all(host.path("/root/dl")).unwrap();

    let (code, first) = json(&host, "apply", "/root/dl.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed", "changed"], "{first:#}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let pinned = host.path("/root/dl/tool.tar");
    assert_eq!(std::fs::read_to_string(&pinned).unwrap(), BODY);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&pinned).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(host.path("/root/dl/notes.txt")).unwrap(),
        BODY
    );

    let (code, second) = json(&host, "apply", "/root/dl.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok"], "{second:#}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "nothing is downloaded again"
    );

    std::fs::write(&pinned, "tampered\n").unwrap();
    let (code, check) = json(&host, "check", "/root/dl.yml");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["drift", "ok"], "{check:#}");
    let change = &check["hosts"][0]["tasks"][0]["changes"][0];
    assert_eq!(
        change["before"].as_str().unwrap(),
        format!("sha256 {}", sha256("tampered\n")),
        "{change:#}"
    );
    assert_eq!(change["evidence"], "sha256sum on the host", "{change:#}");
    assert_eq!(std::fs::read_to_string(&pinned).unwrap(), "tampered\n");
    assert_eq!(hits.load(Ordering::SeqCst), 2, "check downloads nothing");

    write(
        &host,
        "/root/bad.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: not found
      get_url:
        url: {base}/missing
        dest: /root/dl/missing
      ignore_errors: true
    - name: wrong checksum
      get_url:
        url: {base}/tool.tar
        dest: /root/dl/other.tar
        checksum: "sha256:{WRONG_SHA256}"
"#
        ),
    );
    let (code, bad) = json(&host, "apply", "/root/bad.yml");
    assert_ne!(code, 0, "{bad:#}");
    assert_eq!(statuses(&bad), ["failed", "failed"], "{bad:#}");
    let message = |i: usize| {
        bad["hosts"][0]["tasks"][i]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(message(0).contains("cannot download"), "{bad:#}");
    assert!(message(1).contains("does not have sha256"), "{bad:#}");
    assert!(!host.path("/root/dl/missing").exists());
    assert!(!host.path("/root/dl/other.tar").exists());
    let left: Vec<_> = std::fs::read_dir(host.path("/root/dl"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".nodeprov."))
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
    assert_machine_unchanged(&before);
}

#[test]
fn uri_registers_the_answer_in_check_and_apply_and_fails_on_an_unexpected_status() {
    let Server { base, hits, .. } = serve();
    let host = IsolatedHost::new();
    write(
        &host,
        "/root/uri.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: ask
      uri:
        url: {base}/health
        return_content: true
      register: r
    - name: answered
      assert:
        that:
          - r.status == 200
          - r.content == "tool v1\n"
          - r.url == "{base}/health"
    - name: missing
      uri:
        url: {base}/missing
        status_code: [200, 204]
"#
        ),
    );
    for cmd in ["check", "apply"] {
        let (code, doc) = json(&host, cmd, "/root/uri.yml");
        assert_ne!(code, 0, "{doc:#}");
        assert_eq!(statuses(&doc), ["ok", "ok", "failed"], "{cmd}: {doc:#}");
        let message = doc["hosts"][0]["tasks"][2]["message"].as_str().unwrap();
        assert!(
            message.contains("status 404, expected 200 or 204"),
            "{doc:#}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 4);
}

#[test]
fn get_url_reads_a_checksum_file_and_sends_credentials_no_report_shows() {
    let server = serve();
    let base = &server.base;
    let host = IsolatedHost::new();
    write(
        &host,
        "/root/auth.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: pinned by the release's checksum file
      get_url:
        url: {base}/rel/tool.tar
        dest: /root/dl/tool.tar
        checksum: "sha256:{base}/SHA256SUMS"
    - name: behind a password
      get_url:
        url: {base}/private/notes.txt
        dest: /root/dl/notes.txt
        url_username: {USER}
        url_password: "{PASSWORD}"
        force_basic_auth: true
        headers:
          X-Trace: node-7
"#
        ),
    );
    std::fs::create_dir_all(host.path("/root/dl")).unwrap();
    let (code, first) = json(&host, "apply", "/root/auth.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed", "changed"], "{first:#}");
    assert_eq!(
        std::fs::read_to_string(host.path("/root/dl/tool.tar")).unwrap(),
        BODY
    );
    assert_eq!(
        std::fs::read_to_string(host.path("/root/dl/notes.txt")).unwrap(),
        BODY
    );
    let private = server.received("GET /private/notes.txt");
    assert_eq!(private.len(), 1, "{private:?}");
    assert!(private[0].contains("X-Trace: node-7"), "{}", private[0]);

    let (code, second) = json(&host, "apply", "/root/auth.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok"], "{second:#}");
    assert_eq!(server.received("GET /rel/tool.tar").len(), 1);
    assert_eq!(server.received("GET /private/").len(), 1);
    assert_eq!(
        server.received("GET /SHA256SUMS").len(),
        3,
        "the checksum file is read by each probe: apply, verify, apply"
    );
    for doc in [&first, &second] {
        let text = doc.to_string();
        assert!(
            !text.contains("s3cr") && !text.contains("node-7"),
            "{doc:#}"
        );
    }

    write(
        &host,
        "/root/nosum.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: not in the checksum file
      get_url:
        url: {base}/rel/absent.tar
        dest: /root/dl/absent.tar
        checksum: "sha256:{base}/SHA256SUMS"
"#
        ),
    );
    let (code, bad) = json(&host, "apply", "/root/nosum.yml");
    assert_ne!(code, 0, "{bad:#}");
    assert_eq!(statuses(&bad), ["failed"], "{bad:#}");
    let message = bad["hosts"][0]["tasks"][0]["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!("{base}/SHA256SUMS has no checksum for absent.tar")
    );
    assert!(server.received("GET /rel/absent.tar").is_empty());
}

#[test]
fn uri_sends_a_post_in_apply_only_and_once_with_creates() {
    let server = serve();
    let base = &server.base;
    let host = IsolatedHost::new();
    write(
        &host,
        "/root/post.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: register the node
      uri:
        url: {base}/api/nodes
        method: POST
        body_format: json
        body:
          name: "gpu'01"
        status_code: 201
        url_username: {USER}
        url_password: "{PASSWORD}"
        force_basic_auth: true
        creates: /root/registered
      register: r
    - name: remember
      copy:
        content: "yes\n"
        dest: /root/registered
    - name: answered
      assert:
        that:
          - r.status == 201
          - r.json.id == 7
      when: r.status is defined
"#
        ),
    );
    let (_, check) = json(&host, "check", "/root/post.yml");
    assert_eq!(statuses(&check)[0], "unknown", "{check:#}");
    let why = check["hosts"][0]["tasks"][0].to_string();
    assert!(why.contains("not in check mode"), "{check:#}");
    assert!(server.received("POST").is_empty(), "check sends no POST");

    let (code, first) = json(&host, "apply", "/root/post.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed", "changed", "ok"], "{first:#}");
    let posts = server.received("POST /api/nodes");
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert!(
        posts[0].ends_with("\r\n\r\n{\"name\":\"gpu'01\"}"),
        "{}",
        posts[0]
    );
    assert!(
        posts[0].contains("Content-Type: application/json"),
        "{}",
        posts[0]
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    assert!(
        posts[0].contains(&format!("Authorization: Basic {basic}")),
        "{}",
        posts[0]
    );

    let (code, second) = json(&host, "apply", "/root/post.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok", "skipped"], "{second:#}");
    assert_eq!(server.received("POST").len(), 1, "creates: sent once");
    for doc in [&check, &first, &second] {
        assert!(!doc.to_string().contains("s3cr"), "{doc:#}");
    }
}

/// A host whose `/root/pkg.yml` makes `/root/pkg`, then runs `tasks`, in
/// which `{base}` is the URL of a server offering [`tarball`].
fn pkg_play(tasks: &str) -> IsolatedHost {
    let base = serve_bytes(tarball()).base;
    let host = IsolatedHost::new();
    let play = format!(
        "- hosts: all\n  tasks:\n    - name: folder\n      file:\n        path: /root/pkg\n        state: directory\n{}",
        tasks.replace("{base}", &base)
    );
    write(&host, "/root/pkg.yml", &play);
    host
}

#[test]
fn an_archive_downloaded_earlier_in_the_run_is_extracted_once() {
    let host = pkg_play(
        r#"    - name: download
      get_url:
        url: {base}/pkg.tar.gz
        dest: /root/pkg.tar.gz
    - name: extract
      unarchive:
        src: /root/pkg.tar.gz
        dest: /root/pkg
        remote_src: yes
        extra_opts: [--strip-components=1]
"#,
    );
    let (code, check) = json(&host, "check", "/root/pkg.yml");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["drift", "drift", "unknown"], "{check:#}");
    let (code, first) = json(&host, "apply", "/root/pkg.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(
        statuses(&first),
        ["changed", "changed", "changed"],
        "{first:#}"
    );
    assert_eq!(
        std::fs::read_to_string(host.path("/root/pkg/bin/tool")).unwrap(),
        "#!/bin/sh\n"
    );
    let (code, second) = json(&host, "apply", "/root/pkg.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second), ["ok", "ok", "ok"], "{second:#}");

    std::fs::remove_file(host.path("/root/pkg/README")).unwrap();
    let (code, check) = json(&host, "check", "/root/pkg.yml");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["ok", "ok", "drift"], "{check:#}");
    let change = &check["hosts"][0]["tasks"][2]["changes"][0];
    assert_eq!(
        change["before"], "1 of 3 members missing, first README",
        "{change:#}"
    );
    assert!(!host.path("/root/pkg/README").exists());
}

#[test]
fn creates_stops_an_extraction_once_its_path_exists() {
    let host = pkg_play(
        r#"    - name: extract
      unarchive:
        src: {base}/pkg.tar.gz
        dest: /root/pkg
        remote_src: yes
        creates: /root/pkg/pkg-1.0/README
"#,
    );
    // The folder is only predicted in check mode: extracting into it is
    // certain, what it will then hold is not.
    let (code, check) = json(&host, "check", "/root/pkg.yml");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(statuses(&check), ["drift", "unknown"], "{check:#}");
    let (code, first) = json(&host, "apply", "/root/pkg.yml");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(statuses(&first), ["changed", "changed"], "{first:#}");
    assert!(host.path("/root/pkg/pkg-1.0/bin/tool").exists());

    // The path named by creates is all that is asked: another member gone
    // is no reason to extract again, as in Ansible.
    std::fs::remove_file(host.path("/root/pkg/pkg-1.0/bin/tool")).unwrap();
    let (code, check) = json(&host, "check", "/root/pkg.yml");
    assert_eq!(code, 0, "{check:#}");
    let (code, second) = json(&host, "apply", "/root/pkg.yml");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(statuses(&second)[1], statuses(&check)[1], "{second:#}");
    assert_ne!(statuses(&second)[1], "changed", "{second:#}");
    assert!(!host.path("/root/pkg/pkg-1.0/bin/tool").exists());
}
