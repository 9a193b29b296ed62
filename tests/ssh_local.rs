//! The SSH transport itself against one real OpenSSH host (a namespaced
//! `sshd` from the test harness, root login with the test key).
//!
//! Client-side files (known_hosts, extra keys) live in a temp dir: the real
//! `~/.ssh` and `/etc/ssh` are never read or written.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nodeprov::remote::ssh::{SshOptions, SshTransport};
use nodeprov::remote::{Purpose, Script, Transport, TransportError};
use serde_json::Map;
use support::sshd::{keygen, SshFleet, SshHost};

struct Sshd {
    server: SshHost,
    dir: tempfile::TempDir,
    user: String,
}

fn start() -> Sshd {
    let server = SshFleet::start(1).hosts.pop().expect("one host");
    Sshd {
        server,
        dir: tempfile::tempdir().unwrap(),
        user: "root".into(),
    }
}

impl Sshd {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn ip(&self) -> String {
        self.server.ip()
    }

    fn options(&self, accept_new: bool) -> SshOptions {
        SshOptions {
            user: Some(self.user.clone()),
            private_key: Some(self.server.key_path()),
            known_hosts: Some(self.path("known_hosts")),
            accept_new_host_keys: accept_new,
            use_agent: false,
            home: self.dir.path().to_path_buf(),
            connect_timeout: Some(Duration::from_secs(5)),
            ..SshOptions::default()
        }
    }

    fn vars(&self) -> Map<String, serde_json::Value> {
        serde_json::json!({"ansible_host": self.ip(), "ansible_port": 22})
            .as_object()
            .unwrap()
            .clone()
    }

    fn connect(&self, opts: &SshOptions) -> Result<SshTransport, TransportError> {
        SshTransport::connect(&Arc::new(opts.clone()), "testhost", &self.vars())
    }
}

fn script(body: impl Into<String>) -> Script {
    Script {
        purpose: Purpose::Probe,
        body: body.into(),
        become_user: None,
        become_flags: None,
    }
}

fn unreachable_message(r: Result<SshTransport, TransportError>) -> String {
    match r {
        Err(TransportError::Unreachable(m)) => m,
        Err(e) => panic!("expected unreachable, got {e}"),
        Ok(_) => panic!("expected the connection to be refused"),
    }
}

#[test]
fn key_auth_runs_scripts_and_keeps_exit_status_and_streams_apart() {
    let sshd = start();
    let mut t = sshd.connect(&sshd.options(true)).unwrap();
    let out = t
        .run(&script(
            "echo out; echo err >&2; echo \"$LC_ALL\"; exit 3\n",
        ))
        .unwrap();
    assert_eq!(out.status, 3);
    assert_eq!(out.stdout, b"out\nC\n");
    assert_eq!(out.stderr, b"err\n");
    // The same session serves the next script.
    assert_eq!(
        t.run(&script("id -un\n")).unwrap().stdout,
        format!("{}\n", sshd.user).as_bytes()
    );
    let recorded = std::fs::read_to_string(sshd.path("known_hosts")).unwrap();
    assert!(
        recorded.starts_with(&format!("{} ssh-ed25519 ", sshd.ip())),
        "{recorded}"
    );
    // Now known: accepted without the flag.
    sshd.connect(&sshd.options(false)).unwrap();
}

#[test]
fn unknown_host_is_refused_without_accept_new() {
    let sshd = start();
    let msg = unreachable_message(sshd.connect(&sshd.options(false)));
    assert!(
        msg.contains("not known") && msg.contains("SHA256:"),
        "{msg}"
    );
    assert!(!sshd.path("known_hosts").exists());
}

#[test]
fn changed_host_key_is_refused_with_fingerprint() {
    let sshd = start();
    keygen(&sshd.path("other_key"));
    let other = std::fs::read_to_string(sshd.path("other_key.pub")).unwrap();
    let line = format!("{} {}", sshd.ip(), other);
    std::fs::write(sshd.path("known_hosts"), &line).unwrap();
    let msg = unreachable_message(sshd.connect(&sshd.options(true)));
    assert!(msg.contains("man-in-the-middle"), "{msg}");
    assert!(
        msg.contains("ssh-ed25519") && msg.contains("SHA256:"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(sshd.path("known_hosts")).unwrap(),
        line
    );
}

#[test]
fn wrong_key_names_what_was_tried() {
    let sshd = start();
    keygen(&sshd.path("stranger"));
    let mut opts = sshd.options(true);
    opts.private_key = Some(sshd.path("stranger"));
    let msg = unreachable_message(sshd.connect(&opts));
    assert!(
        msg.contains(&format!("authentication failed for user {}", sshd.user)),
        "{msg}"
    );
    assert!(msg.contains("tried: key ~/stranger"), "{msg}");
}

#[test]
fn ten_megabytes_of_stderr_while_stdin_is_still_being_sent() {
    let sshd = start();
    let mut t = sshd.connect(&sshd.options(true)).unwrap();
    // The shell floods stderr before reading the rest of a large script,
    // so neither side may wait for the other.
    let mut body = String::from("head -c 10485760 /dev/zero | tr '\\0' x >&2\n");
    body.push_str(&format!("# {}\n", "y".repeat(4 << 20)));
    body.push_str("echo done\n");
    let out = t.run(&script(body)).unwrap();
    assert_eq!(out.status, 0);
    assert_eq!(out.stderr.len(), 10 << 20);
    assert_eq!(out.stdout, b"done\n");
}

#[test]
fn a_script_over_its_time_makes_the_host_unreachable() {
    let sshd = start();
    let mut opts = sshd.options(true);
    opts.command_timeout = Duration::from_secs(1);
    let mut t = sshd.connect(&opts).unwrap();
    let started = Instant::now();
    let err = t.run(&script("sleep 30\n")).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&err, TransportError::Interrupted { why, .. } if why.contains("within 1 s")),
        "{err}"
    );
    assert!(matches!(
        t.run(&script("true\n")),
        Err(TransportError::Unreachable(_))
    ));
}

#[test]
fn proxy_jump_tunnels_through_the_jump_host() {
    let sshd = start();
    let mut vars = sshd.vars();
    let jump = format!("-J {}@{}:22", sshd.user, sshd.ip());
    vars.insert("ansible_ssh_common_args".into(), jump.into());
    let opts = Arc::new(sshd.options(true));
    let mut t = SshTransport::connect(&opts, "testhost", &vars).unwrap();
    let out = t.run(&script("echo through; exit 7\n")).unwrap();
    assert_eq!((out.status, out.stdout.as_slice()), (7, &b"through\n"[..]));
    // A reboot's new login takes the same route.
    t.reconnect(None).unwrap();
    let out = t.run(&script("echo again\n")).unwrap();
    assert_eq!(out.stdout, b"again\n");
}

/// What a reboot does to the session: the host drops it. Logging in again
/// gives a working session on a new sshd process.
#[test]
fn a_session_the_host_dropped_is_replaced_by_logging_in_again() {
    let sshd = start();
    let mut t = sshd.connect(&sshd.options(true)).unwrap();
    assert!(t.can_reconnect());
    let first = session_processes(&sshd);
    for pid in &first {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(t.run(&script("true\n")).is_err());
    t.reconnect(Some(Duration::from_secs(10))).unwrap();
    let out = t.run(&script("echo back\n")).unwrap();
    assert_eq!((out.status, out.stdout.as_slice()), (0, &b"back\n"[..]));
    let second = session_processes(&sshd);
    assert!(!second.is_empty() && second.iter().all(|p| !first.contains(p)));
}

/// Per-connection sshd processes, children of the listening one.
fn session_processes(sshd: &Sshd) -> Vec<i32> {
    let pid = sshd.server.sshd_pid();
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_frozen_host_is_noticed_by_keepalives() {
    let sshd = start();
    let mut opts = sshd.options(true);
    opts.keepalive = Duration::from_secs(1);
    let mut t = sshd.connect(&opts).unwrap();
    let frozen = session_processes(&sshd);
    assert!(!frozen.is_empty(), "no per-connection sshd found");
    for pid in &frozen {
        // SAFETY: signals only processes this test's sshd started.
        unsafe { libc::kill(*pid, libc::SIGSTOP) };
    }
    let started = Instant::now();
    let err = t.run(&script("echo never\n")).unwrap_err();
    for pid in &frozen {
        unsafe { libc::kill(*pid, libc::SIGCONT) };
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, TransportError::Unreachable(_)), "{err}");
}
