//! User authentication in Ansible's (and OpenSSH's) order: agent keys, key
//! files, then a password; the error lists what was tried.

use std::path::{Path, PathBuf};

use base64::Engine;
use ssh2::{KeyboardInteractivePrompt, Prompt, Session};

use super::error::AuthError;
use super::Secret;
use crate::base::fd_limit;

pub struct AuthPlan<'a> {
    pub user: &'a str,
    pub use_agent: bool,
    pub keys: &'a [PathBuf],
    pub key_passphrase: Option<&'a Secret>,
    pub password: Option<&'a Secret>,
    /// For showing key paths as `~/...`.
    pub home: &'a Path,
}

/// libssh2's codes for a connection that broke or went silent, as opposed to
/// a server that answered "no": socket send, timeout, disconnect, socket
/// timeout, receive.
const BROKEN: [i32; 5] = [-7, -9, -13, -30, -43];

/// Whether an attempt failed because the connection did, not the credential.
fn broke(e: &ssh2::Error) -> bool {
    matches!(e.code(), ssh2::ErrorCode::Session(c) if BROKEN.contains(&c))
}

/// Ok(true) when the server accepted, Ok(false) when it refused; a broken or
/// silent connection ends the attempts, since no other credential can help.
fn accepted(result: Result<(), ssh2::Error>) -> Result<bool, ssh2::Error> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if broke(&e) => Err(e),
        Err(_) => Ok(false),
    }
}

/// Authenticates or returns the list of what was tried.
pub fn authenticate(session: &Session, plan: &AuthPlan) -> Result<(), AuthError> {
    // Asking for the methods is itself the "none" attempt, which some
    // servers accept outright.
    let methods = match session.auth_methods(plan.user) {
        Ok(m) => m.to_string(),
        Err(_) if session.authenticated() => return Ok(()),
        Err(e) if broke(&e) => {
            let tried = vec!["the server's methods".to_string()];
            return Err(AuthError::Broken { tried, source: e });
        }
        Err(e) => return Err(AuthError::ListMethods(e)),
    };
    let mut tried = Vec::new();
    match try_all(session, plan, &methods, &mut tried) {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(source) => return Err(AuthError::Broken { tried, source }),
    }
    if tried.is_empty() {
        tried.push(format!(
            "nothing: no agent, key file or password usable with the server's methods ({methods})"
        ));
    }
    Err(AuthError::Exhausted(tried))
}

/// Every usable credential in order until one is accepted.
fn try_all(
    session: &Session,
    plan: &AuthPlan,
    methods: &str,
    tried: &mut Vec<String>,
) -> Result<bool, ssh2::Error> {
    if methods.contains("publickey") {
        if plan.use_agent && try_agent(session, plan.user, tried)? {
            return Ok(true);
        }
        for key in plan.keys {
            if try_key(session, plan, key, tried)? {
                return Ok(true);
            }
        }
    }
    match plan.password {
        Some(pw) => try_password(session, plan.user, pw, methods, tried),
        None => Ok(false),
    }
}

fn try_agent(session: &Session, user: &str, tried: &mut Vec<String>) -> Result<bool, ssh2::Error> {
    if std::env::var_os("SSH_AUTH_SOCK").is_none() {
        return Ok(false);
    }
    let Ok(mut agent) = session.agent() else {
        return Ok(false);
    };
    if agent.connect().is_err() || agent.list_identities().is_err() {
        return Ok(false);
    }
    let identities = agent.identities().unwrap_or_default();
    if identities.is_empty() {
        return Ok(false);
    }
    tried.push("agent".into());
    let mut ok = Ok(false);
    for id in &identities {
        ok = accepted(agent.userauth(user, id));
        if !matches!(ok, Ok(false)) {
            break;
        }
    }
    let _ = agent.disconnect();
    ok
}

/// Key files are read here, not by libssh2, so that a failure to open one
/// keeps its cause (out of file descriptors is not a bad key).
fn try_key(
    session: &Session,
    plan: &AuthPlan,
    key: &Path,
    tried: &mut Vec<String>,
) -> Result<bool, ssh2::Error> {
    let shown = tilde(key, plan.home);
    let unreadable = |why: String| format!("key {shown} ({why})");
    let text = match crate::base::input::read_text(key) {
        Ok(text) => text,
        Err(e) => {
            tried.push(unreadable(format!("unreadable: {}", e.reason())));
            return Ok(false);
        }
    };
    let encrypted = is_encrypted(&text);
    if encrypted && plan.key_passphrase.is_none() {
        tried.push(format!(
            "key {shown} (encrypted; set NODEPROV_KEY_PASSPHRASE or load it into ssh-agent)"
        ));
        return Ok(false);
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
                return Ok(false);
            }
            None => None,
        },
    };
    let passphrase = plan
        .key_passphrase
        .filter(|_| encrypted)
        .map(Secret::expose);
    tried.push(format!("key {shown}"));
    accepted(session.userauth_pubkey_memory(plan.user, public.as_deref(), &text, passphrase))
}

fn try_password(
    session: &Session,
    user: &str,
    pw: &Secret,
    methods: &str,
    tried: &mut Vec<String>,
) -> Result<bool, ssh2::Error> {
    if methods.contains("password") {
        tried.push("password".into());
        if accepted(session.userauth_password(user, pw.expose()))? {
            return Ok(true);
        }
    }
    if methods.contains("keyboard-interactive") {
        tried.push("keyboard-interactive".into());
        let mut answer = PasswordAnswer(pw);
        return accepted(session.userauth_keyboard_interactive(user, &mut answer));
    }
    Ok(false)
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
    fn a_refusal_tries_the_next_credential_and_a_broken_connection_stops() {
        let code = |c| ssh2::Error::new(ssh2::ErrorCode::Session(c), "x");
        // LIBSSH2_ERROR_AUTHENTICATION_FAILED, _PUBLICKEY_UNVERIFIED
        assert!(matches!(accepted(Err(code(-18))), Ok(false)));
        assert!(matches!(accepted(Err(code(-19))), Ok(false)));
        assert!(matches!(accepted(Ok(())), Ok(true)));
        // LIBSSH2_ERROR_TIMEOUT, _SOCKET_DISCONNECT
        assert!(accepted(Err(code(-9))).is_err());
        assert!(accepted(Err(code(-13))).is_err());
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
