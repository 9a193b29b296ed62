//! `get_url`, `uri` and `unarchive` through the real binary with `-c local` inside an
//! isolated host, against an HTTP server this test runs on loopback: apply
//! downloads once, a second apply downloads nothing, a tampered file is
//! drift that `check` names by its digest and leaves alone, a download with
//! the wrong checksum fails without touching `dest`; `uri` registers its
//! answer in check and apply alike and fails on an unexpected status; an
//! archive downloaded earlier in the same run is extracted once, and a
//! removed member is drift.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const BODY: &str = "tool v1\n";
/// A digest no download has.
const WRONG_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Serves BODY at every path but `/missing`, on an ephemeral loopback port;
/// counts the requests it answered.
fn serve() -> (String, Arc<AtomicUsize>) {
    serve_bytes(BODY.as_bytes().to_vec())
}

fn serve_bytes(body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let missing = String::from_utf8_lossy(&req).starts_with("GET /missing ");
            let reply = if missing {
                b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
            } else {
                let mut r = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                r.extend_from_slice(&body);
                r
            };
            let _ = s.write_all(&reply);
        }
    });
    (base, hits)
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
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn get_url_downloads_once_and_check_names_a_tampered_file() {
    let before = machine_digest();
    let (base, hits) = serve();
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
    let (base, hits) = serve();
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

/// A tar.gz of `pkg-1.0/` holding `bin/tool` and `README`.
fn tarball() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg-1.0");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(pkg.join("bin/tool"), "#!/bin/sh\n").unwrap();
    std::fs::write(pkg.join("README"), "pkg\n").unwrap();
    let out = std::process::Command::new("tar")
        .args(["-czf", "-", "-C"])
        .arg(dir.path())
        .args(["pkg-1.0/bin", "pkg-1.0/README"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

#[test]
fn an_archive_downloaded_earlier_in_the_run_is_extracted_once() {
    let (base, _) = serve_bytes(tarball());
    let host = IsolatedHost::new();
    write(
        &host,
        "/root/pkg.yml",
        &format!(
            r#"- hosts: all
  tasks:
    - name: folder
      file:
        path: /root/pkg
        state: directory
    - name: download
      get_url:
        url: {base}/pkg.tar.gz
        dest: /root/pkg.tar.gz
    - name: extract
      unarchive:
        src: /root/pkg.tar.gz
        dest: /root/pkg
        remote_src: yes
        extra_opts: [--strip-components=1]
"#
        ),
    );
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
