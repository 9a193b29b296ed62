//! User authentication in Ansible's (and OpenSSH's) order: agent keys, key
//! files, then a password; the error lists what was tried.

use std::path::{Path, PathBuf};

use base64::Engine;
use ssh2::{KeyboardInteractivePrompt, Prompt, Session};

use super::error::AuthError;
use super::Secret;
use crate::remote::fd_limit;

pub struct AuthPlan<'a> {
    pub user: &'a str,
    pub use_agent: bool,
    pub keys: &'a [PathBuf],
    pub key_passphrase: Option<&'a Secret>,
    pub password: Option<&'a Secret>,
    /// For showing key paths as `~/...`.
    pub home: &'a Path,
}

/// Authenticates or returns the list of what was tried.
pub fn authenticate(session: &Session, plan: &AuthPlan) -> Result<(), AuthError> {
    // Asking for the methods is itself the "none" attempt, which some
    // servers accept outright.
    let methods = match session.auth_methods(plan.user) {
        Ok(m) => m.to_string(),
        Err(_) if session.authenticated() => return Ok(()),
        Err(e) => return Err(AuthError::ListMethods(e)),
    };
    let mut tried = Vec::new();
    if methods.contains("publickey") {
        if plan.use_agent && try_agent(session, plan.user, &mut tried) {
            return Ok(());
        }
        for key in plan.keys {
            if try_key(session, plan, key, &mut tried) {
                return Ok(());
            }
        }
    }
    if let Some(pw) = plan.password {
        if try_password(session, plan.user, pw, &methods, &mut tried) {
            return Ok(());
        }
    }
    if tried.is_empty() {
        tried.push(format!(
            "nothing: no agent, key file or password usable with the server's methods ({methods})"
        ));
    }
    Err(AuthError::Exhausted(tried))
}

fn try_agent(session: &Session, user: &str, tried: &mut Vec<String>) -> bool {
    if std::env::var_os("SSH_AUTH_SOCK").is_none() {
        return false;
    }
    let Ok(mut agent) = session.agent() else {
        return false;
    };
    if agent.connect().is_err() || agent.list_identities().is_err() {
        return false;
    }
    let identities = agent.identities().unwrap_or_default();
    if identities.is_empty() {
        return false;
    }
    tried.push("agent".into());
    let ok = identities.iter().any(|id| agent.userauth(user, id).is_ok());
    let _ = agent.disconnect();
    ok
}

/// Key files are read here, not by libssh2, so that a failure to open one
/// keeps its cause (out of file descriptors is not a bad key).
fn try_key(session: &Session, plan: &AuthPlan, key: &Path, tried: &mut Vec<String>) -> bool {
    let shown = tilde(key, plan.home);
    let unreadable = |why: String| format!("key {shown} ({why})");
    let text = match crate::load::input::read_text(key) {
        Ok(text) => text,
        Err(e) => {
            tried.push(unreadable(format!("unreadable: {}", e.reason())));
            return false;
        }
    };
    let encrypted = is_encrypted(&text);
    if encrypted && plan.key_passphrase.is_none() {
        tried.push(format!(
            "key {shown} (encrypted; set NODEPROV_KEY_PASSPHRASE or load it into ssh-agent)"
        ));
        return false;
    }
    // With the .pub next to it libssh2 need not decrypt the key just to
    // offer it.
    let public = key.with_extension(match key.extension() {
        Some(ext) => format!("{}.pub", ext.to_string_lossy()),
        None => "pub".into(),
    });
    // A missing .pub is fine; running out of descriptors is not.
    let public = match std::fs::read_to_string(public) {
        Ok(text) => Some(text),
        Err(e) => match fd_limit::explain(&e) {
            Some(why) => {
                tried.push(unreadable(why));
                return false;
            }
            None => None,
        },
    };
    let passphrase = plan
        .key_passphrase
        .filter(|_| encrypted)
        .map(Secret::expose);
    tried.push(format!("key {shown}"));
    session
        .userauth_pubkey_memory(plan.user, public.as_deref(), &text, passphrase)
        .is_ok()
}

fn try_password(
    session: &Session,
    user: &str,
    pw: &Secret,
    methods: &str,
    tried: &mut Vec<String>,
) -> bool {
    if methods.contains("password") {
        tried.push("password".into());
        if session.userauth_password(user, pw.expose()).is_ok() {
            return true;
        }
    }
    if methods.contains("keyboard-interactive") {
        tried.push("keyboard-interactive".into());
        let mut answer = PasswordAnswer(pw);
        return session
            .userauth_keyboard_interactive(user, &mut answer)
            .is_ok();
    }
    false
}

/// Answers every keyboard-interactive prompt with the password (PAM's
/// "Password:" is the only prompt on the servers we provision).
struct PasswordAnswer<'a>(&'a Secret);

impl KeyboardInteractivePrompt for PasswordAnswer<'_> {
    fn prompt<'b>(
        &mut self,
        _username: &str,
        _instructions: &str,
        prompts: &[Prompt<'b>],
    ) -> Vec<String> {
        prompts
            .iter()
            .map(|_| self.0.expose().to_string())
            .collect()
    }
}

/// Whether a private key file needs a passphrase (PEM or OpenSSH format).
pub fn is_encrypted(text: &str) -> bool {
    if text.contains("ENCRYPTED") {
        return true;
    }
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let Ok(blob) = base64::engine::general_purpose::STANDARD.decode(body.trim()) else {
        return false;
    };
    // openssh-key-v1\0, then the cipher name as an SSH string.
    let Some(rest) = blob.strip_prefix(b"openssh-key-v1\0") else {
        return false;
    };
    let cipher = rest
        .get(..4)
        .map(|n| u32::from_be_bytes(n.try_into().expect("4 bytes")) as usize)
        .and_then(|len| rest.get(4..4 + len));
    cipher.is_some_and(|c| c != b"none")
}

/// Shows a path under `home` as `~/...`, as users wrote it.
pub fn tilde(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !home.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keygen(dir: &Path, name: &str, passphrase: &str) -> Option<String> {
        let path = dir.join(name);
        let ok = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", passphrase, "-f"])
            .arg(&path)
            .status()
            .ok()?
            .success();
        ok.then(|| std::fs::read_to_string(&path).unwrap())
    }

    #[test]
    fn encrypted_keys_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let (Some(plain), Some(locked)) = (
            keygen(dir.path(), "plain", ""),
            keygen(dir.path(), "locked", "sesame"),
        ) else {
            eprintln!("ssh-keygen not available; skipped");
            return;
        };
        assert!(!is_encrypted(&plain));
        assert!(is_encrypted(&locked));
        assert!(is_encrypted(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        ));
    }

    #[test]
    fn paths_under_home_show_with_tilde() {
        let home = Path::new("/home/me");
        assert_eq!(
            tilde(Path::new("/home/me/.ssh/id_rsa"), home),
            "~/.ssh/id_rsa"
        );
        assert_eq!(tilde(Path::new("/etc/k"), home), "/etc/k");
    }
}
