//! Host key verification against OpenSSH `known_hosts` files. A revoked
//! or changed key is always fatal; an unknown host is fatal unless
//! accept-new is on, and then it is recorded the way OpenSSH records it.
//! The files are read here rather than by libssh2, which reads markers
//! and negated patterns as host names.

mod lines;

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use ssh2::{HashType, HostKeyType, Session};

use super::error::KnownHostsError;
use crate::base::fd_limit;
use lines::{Entry, Marker};

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

/// A line and where it was read, `FILE:LINE`, for messages.
struct Line {
    entry: Entry,
    at: String,
}

pub struct KnownHostsDb {
    lines: Vec<Line>,
    policy: HostKeyPolicy,
}

impl KnownHostsDb {
    /// Loads every existing file of the policy; missing files are empty.
    pub fn load(policy: &HostKeyPolicy) -> Result<KnownHostsDb, KnownHostsError> {
        let mut db = KnownHostsDb {
            lines: Vec::new(),
            policy: policy.clone(),
        };
        for file in &policy.files {
            match std::fs::read_to_string(file) {
                Ok(text) => db.read(&file.display().to_string(), &text)?,
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
            }
        }
        Ok(db)
    }

    /// A line that cannot be read refuses the file: skipping it could skip
    /// a revocation.
    fn read(&mut self, file: &str, text: &str) -> Result<(), KnownHostsError> {
        for (n, line) in text.lines().enumerate() {
            let at = format!("{file}:{}", n + 1);
            match lines::parse(line) {
                Ok(Some(entry)) => self.lines.push(Line { entry, at }),
                Ok(None) => {}
                Err(problem) => return Err(KnownHostsError::Parse { at, problem }),
            }
        }
        Ok(())
    }

    /// The lines about this host, whatever their marker.
    fn about<'a>(&'a self, host: &str, port: u16) -> impl Iterator<Item = &'a Line> {
        // A plain `host` line also covers other ports, as libssh2 read it
        // before; OpenSSH would look up only `[host]:port`.
        let names = [host_pattern(host, port), host.to_string()];
        self.lines
            .iter()
            .filter(move |l| names.iter().any(|n| l.entry.names(n)))
    }

    /// Host key algorithms to offer: the types recorded for this host first,
    /// then OpenSSH's order.
    pub fn algorithm_preference(&self, host: &str, port: u16) -> String {
        let mut order: Vec<&str> = Vec::new();
        for line in self.about(host, port) {
            match (line.entry.marker, line.entry.key_type.as_str()) {
                (Marker::Plain, "ssh-rsa") => {
                    // One RSA key serves three signature algorithms; old
                    // SHA-1 `ssh-rsa` goes last since servers disable it.
                    order.extend(&OPENSSH_ORDER[4..])
                }
                (Marker::Plain, other) => order.push(other),
                _ => {}
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

    /// The decision and, when refused, the message the user sees.
    pub fn verify(&self, host: &str, port: u16, key: &PresentedKey, display: &str) -> Verdict {
        let b64 = base64::engine::general_purpose::STANDARD.encode(key.blob);
        let kind = key_type_name(key.kind);
        let fp = &key.fingerprint;
        // A revoked key is refused for every host, whatever names its line
        // gives: fleets cloned from one image share host keys.
        let revoked = self
            .lines
            .iter()
            .find(|l| l.entry.marker == Marker::Revoked && l.entry.key == b64);
        if let Some(line) = revoked {
            return Verdict::Refused(format!(
                "{display}: its {kind} host key {fp} is revoked in {}; nodeprov will not connect",
                line.at
            ));
        }
        let plain: Vec<&Line> = self
            .about(host, port)
            .filter(|l| l.entry.marker == Marker::Plain)
            .collect();
        if plain.iter().any(|l| l.entry.key == b64) {
            return Verdict::Trusted;
        }
        if let Some(line) = plain.first() {
            return Verdict::Refused(format!(
                "{display}: HOST KEY MISMATCH, possible man-in-the-middle attack: \
                 the {kind} key it presented ({fp}) differs from the one recorded in {}; \
                 if the host was reinstalled, remove the old entry (ssh-keygen -R '{}')",
                line.at,
                host_pattern(host, port)
            ));
        }
        // Recording a plain key would replace the certificate check the
        // file asks for, so accept-new does not apply.
        let by_ca = self
            .about(host, port)
            .find(|l| l.entry.marker == Marker::CertAuthority);
        if let Some(line) = by_ca {
            return Verdict::Refused(format!(
                "{display}: host key is not known: known_hosts {}: @cert-authority lines are \
                 not supported; nodeprov checks plain host keys; its {kind} key is {fp}, \
                 verify it and add it as a plain line",
                line.at
            ));
        }
        if self.policy.accept_new && !self.policy.files.is_empty() {
            return Verdict::Record(format!("{} {kind} {b64}\n", host_pattern(host, port)));
        }
        Verdict::Refused(format!(
            "{display}: host key is not known (not in {}); its {kind} key is {fp}; \
             verify it and add it, or pass --accept-new-host-keys",
            files_list(&self.policy.files)
        ))
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

    fn db(text: &str, accept_new: bool) -> KnownHostsDb {
        let mut db = KnownHostsDb {
            lines: Vec::new(),
            policy: HostKeyPolicy {
                files: vec![PathBuf::from("/tmp/kh")],
                accept_new,
            },
        };
        db.read("/tmp/kh", text).unwrap();
        db
    }

    fn check(text: &str, accept_new: bool, host: &str, port: u16, key: &[u8]) -> Verdict {
        let presented = PresentedKey {
            blob: key,
            kind: HostKeyType::Ed25519,
            fingerprint: "SHA256:abc".into(),
        };
        db(text, accept_new).verify(host, port, &presented, "gpu-03 (10.0.0.3:22)")
    }

    fn refusal(verdict: Verdict) -> String {
        match verdict {
            Verdict::Refused(msg) => msg,
            other => panic!("expected a refusal, got {other:?}"),
        }
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
        let globbed = format!("gpu-0?,!gpu-09 ssh-ed25519 {KEY}\n");
        assert_eq!(
            check(&globbed, false, "gpu-03", 22, &blob(KEY)),
            Verdict::Trusted
        );
    }

    #[test]
    fn changed_key_is_refused_with_fingerprint_even_with_accept_new() {
        let msg = refusal(check(HASHED, true, "gpu-03", 22, &other_blob()));
        assert!(msg.contains("gpu-03 (10.0.0.3:22)"), "{msg}");
        assert!(msg.contains("man-in-the-middle"), "{msg}");
        assert!(msg.contains("ssh-ed25519"), "{msg}");
        assert!(msg.contains("SHA256:abc"), "{msg}");
        assert!(msg.contains("recorded in /tmp/kh:1"), "{msg}");
    }

    #[test]
    fn unknown_host_refused_unless_accept_new() {
        let plain = format!("gpu-03 ssh-ed25519 {KEY}\n");
        let msg = refusal(check(&plain, false, "gpu-04", 22, &blob(KEY)));
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
    fn a_revoked_key_is_refused_for_every_host_even_when_listed_or_accept_new() {
        let text =
            format!("gpu-03 ssh-ed25519 {KEY}\n# old disk\n@revoked gpu-01 ssh-ed25519 {KEY}\n");
        for accept_new in [false, true] {
            for host in ["gpu-03", "gpu-04"] {
                let msg = refusal(check(&text, accept_new, host, 22, &blob(KEY)));
                assert_eq!(
                    msg,
                    "gpu-03 (10.0.0.3:22): its ssh-ed25519 host key SHA256:abc is revoked \
                     in /tmp/kh:3; nodeprov will not connect"
                );
            }
        }
        // Another key for the same host is judged as usual.
        let msg = refusal(check(&text, true, "gpu-03", 22, &other_blob()));
        assert!(msg.contains("man-in-the-middle"), "{msg}");
    }

    #[test]
    fn a_negated_host_is_not_known_through_the_line() {
        let text = format!("gpu-03,!gpu-03 ssh-ed25519 {KEY}\n");
        let msg = refusal(check(&text, false, "gpu-03", 22, &blob(KEY)));
        assert!(msg.contains("not known"), "{msg}");
        // Nor is it changed: a different key is simply new.
        assert_eq!(
            check(&text, true, "gpu-03", 22, &other_blob()),
            Verdict::Record(format!(
                "gpu-03 ssh-ed25519 {}\n",
                base64::engine::general_purpose::STANDARD.encode(other_blob())
            ))
        );
    }

    #[test]
    fn a_host_known_only_through_a_cert_authority_is_refused_and_told_why() {
        let text = format!("@cert-authority *.lab ssh-ed25519 {KEY}\n");
        for accept_new in [false, true] {
            let msg = refusal(check(&text, accept_new, "gpu-03.lab", 22, &blob(KEY)));
            assert!(
                msg.contains(
                    "known_hosts /tmp/kh:1: @cert-authority lines are not supported; \
                     nodeprov checks plain host keys"
                ),
                "{msg}"
            );
        }
        // A plain line still decides for its host.
        let both = format!("{text}gpu-03.lab ssh-ed25519 {KEY}\n");
        assert_eq!(
            check(&both, false, "gpu-03.lab", 22, &blob(KEY)),
            Verdict::Trusted
        );
        // Outside the authority's patterns, the host is simply unknown.
        assert!(matches!(
            check(&text, true, "gpu-03.prod", 22, &blob(KEY)),
            Verdict::Record(_)
        ));
    }

    #[test]
    fn a_line_that_cannot_be_read_names_its_file_and_line() {
        let mut db = db("", false);
        let err = db
            .read(
                "/tmp/kh",
                &format!("gpu-03 ssh-ed25519 {KEY}\n@trusted * ssh-ed25519 {KEY}\n"),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "known_hosts /tmp/kh:2: unknown marker '@trusted' (only @revoked and @cert-authority exist)"
        );
    }

    #[test]
    fn recorded_types_come_first_in_algorithm_preference() {
        let rsa_key = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7";
        let text =
            format!("[gpu-03]:2222 ssh-rsa {rsa_key}\n@revoked gpu-03 ecdsa-sha2-nistp256 {KEY}\n");
        let db = db(&text, false);
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
