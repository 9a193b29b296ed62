//! An HTTP server on an ephemeral loopback port, for the tests of modules
//! that ask the host to fetch or send something (`get_url`, `uri`,
//! `unarchive`): hosts share the machine's loopback, so they reach it. An
//! archive to serve, and a recorder of the command lines a host's curl or
//! wget is given, go with it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub struct Server {
    pub base: String,
    /// Requests answered.
    pub hits: Arc<AtomicUsize>,
    /// Each request as received, headers and body.
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Answers each request with what `answer` gives for it, the status
    /// line's tail (`"200 OK"`) and the body, until the test ends.
    pub fn start(answer: impl Fn(&str) -> (&'static str, Vec<u8>) + Send + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (counter, log) = (hits.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let req = read_request(&mut s);
                counter.fetch_add(1, Ordering::SeqCst);
                log.lock().unwrap().push(req.clone());
                let (status, reply) = answer(&req);
                let mut r = format!(
                    "HTTP/1.0 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    reply.len()
                )
                .into_bytes();
                r.extend_from_slice(&reply);
                let _ = s.write_all(&r);
            }
        });
        Server {
            base,
            hits,
            requests,
        }
    }

    /// The requests whose first line starts with `start` (`"POST /api"`).
    pub fn received(&self, start: &str) -> Vec<String> {
        let all = self.requests.lock().unwrap();
        all.iter()
            .filter(|r| r.starts_with(start))
            .cloned()
            .collect()
    }
}

/// A tar.gz of `pkg-1.0/` holding `bin/tool` and `README`.
pub fn tarball() -> Vec<u8> {
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

/// A host's `tool` that appends its arguments, one line a call, to
/// `/root/<tool>-argv` and runs the real one, for tests that prove what a
/// command line shows.
pub fn argv_recorder(tool: &str) -> String {
    format!("#!/bin/sh\nprintf '%s\\n' \"$*\" >> /root/{tool}-argv\nexec /usr/bin/{tool} \"$@\"\n")
}

/// A request's head and, by its Content-Length, its body.
fn read_request(s: &mut std::net::TcpStream) -> String {
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    let complete = |req: &[u8]| {
        let Some(end) = req.windows(4).position(|w| w == b"\r\n\r\n") else {
            return false;
        };
        let head = String::from_utf8_lossy(&req[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        req.len() >= end + 4 + length
    };
    while !complete(&req) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&req).into_owned()
}
