//! Host key verification against OpenSSH `known_hosts` files. A changed key
//! is always fatal; an unknown host is fatal unless accept-new is on, and
//! then it is recorded the way OpenSSH records it.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use ssh2::{CheckResult, HashType, HostKeyType, KnownHostFileKind, KnownHosts, Session};

use super::error::KnownHostsError;
use crate::remote::fd_limit;

/// OpenSSH's host key algorithm order. libssh2's default prefers ECDSA, so
/// a host recorded by `ssh` with its Ed25519 key would look changed.
const OPENSSH_ORDER: [&str; 7] = [
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
    "rsa-sha2-256",
    "ssh-rsa",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKeyPolicy {
    /// Files to check; new keys are appended to the first.
    pub files: Vec<PathBuf>,
    pub accept_new: bool,
}

/// What the server presented.
pub struct PresentedKey<'a> {
    pub blob: &'a [u8],
    pub kind: HostKeyType,
    pub fingerprint: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Trusted,
    /// Unknown and accepted: append this line to the first file.
    Record(String),
    Refused(String),
}

pub struct KnownHostsDb {
    db: KnownHosts,
    policy: HostKeyPolicy,
}

impl KnownHostsDb {
    /// Loads every existing file of the policy; missing files are empty.
    /// The files are read here rather than by libssh2 so that a failure to
    /// open one keeps its cause (out of file descriptors is not a bad file).
    pub fn load(
        session: &Session,
        policy: &HostKeyPolicy,
    ) -> Result<KnownHostsDb, KnownHostsError> {
        let mut db = session.known_hosts().map_err(KnownHostsError::Init)?;
        for file in &policy.files {
            let text = match std::fs::read_to_string(file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(match fd_limit::explain(&source) {
                        Some(why) => KnownHostsError::Descriptors(why),
                        None => KnownHostsError::Read {
                            file: file.display().to_string(),
                            source,
                        },
                    })
                }
            };
            for line in text.lines() {
                db.read_str(line, KnownHostFileKind::OpenSSH)
                    .map_err(|source| KnownHostsError::Parse {
                        file: file.display().to_string(),
                        source,
                    })?;
            }
        }
        Ok(KnownHostsDb {
            db,
            policy: policy.clone(),
        })
    }

    /// Host key algorithms to offer: the types recorded for this host first
    /// (from unhashed entries), then OpenSSH's order.
    pub fn algorithm_preference(&self, host: &str, port: u16) -> String {
        let names = [host_pattern(host, port), host.to_string()];
        let known: Vec<String> = self
            .db
            .iter()
            .unwrap_or_default()
            .iter()
            .filter(|h| h.name().is_some_and(|n| names.iter().any(|x| x == n)))
            .filter_map(|h| key_type_of(h.key()))
            .collect();
        let mut order: Vec<&str> = Vec::new();
        for kind in &known {
            match kind.as_str() {
                // One RSA key serves three signature algorithms; old
                // SHA-1 `ssh-rsa` goes last since servers disable it.
                "ssh-rsa" => order.extend(&OPENSSH_ORDER[4..]),
                other => order.push(other),
            }
        }
        order.extend(OPENSSH_ORDER);
        let mut seen = Vec::new();
        order.retain(|a| {
            let new = !seen.contains(a);
            seen.push(*a);
            new
        });
        order.join(",")
    }

    pub fn verify(&self, host: &str, port: u16, key: &PresentedKey, display: &str) -> Verdict {
        let result = self.db.check_port(host, port, key.blob);
        verdict(result, &self.policy, host, port, key, display)
    }
}

/// Turns libssh2's check result into a decision and, when refused, the
/// message the user sees.
pub fn verdict(
    result: CheckResult,
    policy: &HostKeyPolicy,
    host: &str,
    port: u16,
    key: &PresentedKey,
    display: &str,
) -> Verdict {
    let files = files_list(&policy.files);
    let kind = key_type_name(key.kind);
    match result {
        CheckResult::Match => Verdict::Trusted,
        CheckResult::Mismatch => Verdict::Refused(format!(
            "{display}: HOST KEY MISMATCH, possible man-in-the-middle attack: \
             the {kind} key it presented ({}) differs from the one recorded in {files}; \
             if the host was reinstalled, remove the old entry (ssh-keygen -R '{}')",
            key.fingerprint,
            host_pattern(host, port)
        )),
        CheckResult::NotFound if policy.accept_new && !policy.files.is_empty() => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(key.blob);
            Verdict::Record(format!("{} {kind} {b64}\n", host_pattern(host, port)))
        }
        CheckResult::NotFound => Verdict::Refused(format!(
            "{display}: host key is not known (not in {files}); its {kind} key is {}; \
             verify it and add it, or pass --accept-new-host-keys",
            key.fingerprint
        )),
        CheckResult::Failure => Verdict::Refused(format!(
            "{display}: could not check the host key against {files}"
        )),
    }
}

/// Appends a recorded key, creating the file (and `~/.ssh`) if needed.
pub fn record(file: &Path, line: &str) -> Result<(), KnownHostsError> {
    let fail = |e: std::io::Error| KnownHostsError::Record {
        file: file.display().to_string(),
        why: fd_limit::explain(&e).unwrap_or_else(|| e.to_string()),
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(fail)
}

/// `host`, or `[host]:port` off the default port, as known_hosts writes it.
pub fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// `SHA256:<base64>` as `ssh-keygen -l` prints it.
pub fn fingerprint(session: &Session) -> String {
    session
        .host_key_hash(HashType::Sha256)
        .map(|h| {
            format!(
                "SHA256:{}",
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(h)
            )
        })
        .unwrap_or_else(|| "SHA256:?".into())
}

pub fn key_type_name(kind: HostKeyType) -> &'static str {
    match kind {
        HostKeyType::Rsa => "ssh-rsa",
        HostKeyType::Dss => "ssh-dss",
        HostKeyType::Ecdsa256 => "ecdsa-sha2-nistp256",
        HostKeyType::Ecdsa384 => "ecdsa-sha2-nistp384",
        HostKeyType::Ecdsa521 => "ecdsa-sha2-nistp521",
        HostKeyType::Ed25519 => "ssh-ed25519",
        HostKeyType::Unknown => "unknown",
    }
}

/// The algorithm name at the start of a base64 public key blob.
fn key_type_of(b64: &str) -> Option<String> {
    let blob = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    String::from_utf8(blob.get(4..4 + len)?.to_vec()).ok()
}

fn files_list(files: &[PathBuf]) -> String {
    if files.is_empty() {
        return "no known_hosts file".into();
    }
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The public key of a throwaway ed25519 key, and the same line as
    /// `ssh-keygen -H` hashes it for host `gpu-03`.
    const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAICIxOqNlpEq/88r/8ByK7Xw4FOdH/UJZcnstDUWj+BlK";
    const HASHED: &str = "|1|2ulc5ct2UMEA5hnxH8EXC6+Iz00=|rLYJFB1xzqz8aonSfPo7FGutwtg= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICIxOqNlpEq/88r/8ByK7Xw4FOdH/UJZcnstDUWj+BlK\n";

    fn blob(b64: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    fn other_blob() -> Vec<u8> {
        let mut b = blob(KEY);
        let last = b.len() - 1;
        b[last] ^= 1;
        b
    }

    fn db(text: &str, accept_new: bool) -> (Session, KnownHosts, HostKeyPolicy) {
        let session = Session::new().unwrap();
        let mut kh = session.known_hosts().unwrap();
        kh.read_str(text, KnownHostFileKind::OpenSSH).unwrap();
        let policy = HostKeyPolicy {
            files: vec![PathBuf::from("/tmp/kh")],
            accept_new,
        };
        (session, kh, policy)
    }

    fn check(text: &str, accept_new: bool, host: &str, port: u16, key: &[u8]) -> Verdict {
        let (_s, kh, policy) = db(text, accept_new);
        let presented = PresentedKey {
            blob: key,
            kind: HostKeyType::Ed25519,
            fingerprint: "SHA256:abc".into(),
        };
        let result = kh.check_port(host, port, key);
        verdict(
            result,
            &policy,
            host,
            port,
            &presented,
            "gpu-03 (10.0.0.3:22)",
        )
    }

    #[test]
    fn plain_hashed_and_port_entries_match() {
        let plain = format!("gpu-03 ssh-ed25519 {KEY}\n");
        assert_eq!(
            check(&plain, false, "gpu-03", 22, &blob(KEY)),
            Verdict::Trusted
        );
        assert_eq!(
            check(HASHED, false, "gpu-03", 22, &blob(KEY)),
            Verdict::Trusted
        );
        let ported = format!("[gpu-03]:2222 ssh-ed25519 {KEY}\n");
        assert_eq!(
            check(&ported, false, "gpu-03", 2222, &blob(KEY)),
            Verdict::Trusted
        );
    }

    #[test]
    fn changed_key_is_refused_with_fingerprint_even_with_accept_new() {
        let Verdict::Refused(msg) = check(HASHED, true, "gpu-03", 22, &other_blob()) else {
            panic!("mismatch must be refused");
        };
        assert!(msg.contains("gpu-03 (10.0.0.3:22)"), "{msg}");
        assert!(msg.contains("man-in-the-middle"), "{msg}");
        assert!(msg.contains("ssh-ed25519"), "{msg}");
        assert!(msg.contains("SHA256:abc"), "{msg}");
    }

    #[test]
    fn unknown_host_refused_unless_accept_new() {
        let plain = format!("gpu-03 ssh-ed25519 {KEY}\n");
        let Verdict::Refused(msg) = check(&plain, false, "gpu-04", 22, &blob(KEY)) else {
            panic!("unknown must be refused");
        };
        assert!(
            msg.contains("not known") && msg.contains("--accept-new-host-keys"),
            "{msg}"
        );
        assert_eq!(
            check(&plain, true, "gpu-04", 2200, &blob(KEY)),
            Verdict::Record(format!("[gpu-04]:2200 ssh-ed25519 {KEY}\n"))
        );
    }

    #[test]
    fn recorded_types_come_first_in_algorithm_preference() {
        let rsa_key = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7";
        let text = format!("[gpu-03]:2222 ssh-rsa {rsa_key}\n");
        let (_s, kh, policy) = db(&text, false);
        let db = KnownHostsDb { db: kh, policy };
        let pref = db.algorithm_preference("gpu-03", 2222);
        assert!(
            pref.starts_with("rsa-sha2-512,rsa-sha2-256,ssh-rsa,ssh-ed25519"),
            "{pref}"
        );
        assert!(db
            .algorithm_preference("gpu-09", 22)
            .starts_with("ssh-ed25519,"));
    }
}
