//! Chooses the transport for a host: `-c` wins, then `ansible_connection`.

use std::io::{BufRead, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::cli::{Connection, SshArgs};
use crate::remote::local::LocalTransport;
use crate::remote::ssh::config::SshConfig;
use crate::remote::ssh::error::{BecomePasswordError, ConfigError};
use crate::remote::ssh::{check_become_password, Secret, SshOptions, SshTransport};
use crate::remote::{Transport, TransportError};

/// Why the run-wide connection settings could not be built.
#[derive(Debug, Error)]
pub enum OptionsError {
    #[error(transparent)]
    SshConfig(#[from] ConfigError),
    #[error(transparent)]
    BecomePassword(#[from] BecomePasswordError),
    #[error("cannot ask for a password on the terminal: {0}")]
    Terminal(std::io::Error),
    #[error("{} {path}: {problem}", BECOME_FILE_ENV)]
    PasswordFile { path: String, problem: String },
    #[error("both {} and {} are set: keep one", BECOME_ENV, BECOME_FILE_ENV)]
    TwoBecomePasswords,
}

const BECOME_ENV: &str = "NODEPROV_BECOME_PASSWORD";
/// Names a file holding the become password, for runs whose environment
/// outlives them or is shown to others (a batch scheduler keeps a job's).
const BECOME_FILE_ENV: &str = "NODEPROV_BECOME_PASSWORD_FILE";

/// Run-wide connection settings, built once before hosts are worked on.
#[derive(Debug)]
pub struct ConnectOptions {
    pub connection: Option<Connection>,
    /// Shared with every host's transport, which logs in again with it
    /// after a reboot.
    pub ssh: Arc<SshOptions>,
}

impl ConnectOptions {
    /// Reads ssh_config and asks for passwords once for the whole run;
    /// `-c local` needs neither.
    pub fn from_cli(connection: Option<Connection>, args: &SshArgs) -> Result<Self, OptionsError> {
        let ssh = if connection == Some(Connection::Local) {
            SshOptions::default()
        } else {
            ssh_options(args)?
        };
        Ok(ConnectOptions {
            connection,
            ssh: Arc::new(ssh),
        })
    }
}

fn ssh_options(args: &SshArgs) -> Result<SshOptions, OptionsError> {
    let defaults = SshOptions::default();
    // As `ssh -o` options do, these outrank every file.
    let given = SshConfig::parse(&args.extra_ssh_config.join("\n"), "ansible.cfg ssh_args")?;
    let files = match &args.ssh_config {
        Some(file) if !file.exists() => {
            return Err(ConfigError::Missing(file.display().to_string()).into())
        }
        Some(file) => SshConfig::load(file)?,
        None => SshConfig::load(&defaults.home.join(".ssh/config"))?
            .then(SshConfig::load(Path::new("/etc/ssh/ssh_config"))?),
    };
    let config = given.then(files);
    let system_known_hosts = Some(PathBuf::from("/etc/ssh/ssh_known_hosts"));
    Ok(SshOptions {
        config,
        user: args.user.clone(),
        private_key: args.private_key.clone(),
        password: secret(args.ask_pass, "SSH password: ", "NODEPROV_SSH_PASSWORD")?,
        become_password: become_secret(args.ask_become_pass)?,
        key_passphrase: std::env::var("NODEPROV_KEY_PASSPHRASE")
            .ok()
            .map(Secret::new),
        known_hosts: args.known_hosts.clone(),
        system_known_hosts: system_known_hosts.filter(|_| args.known_hosts.is_none()),
        accept_new_host_keys: args.accept_new_host_keys,
        connect_timeout: args.timeout.map(Duration::from_secs),
        command_timeout: Duration::from_secs(args.command_timeout),
        ..defaults
    })
}

fn become_secret(ask: bool) -> Result<Option<Secret>, OptionsError> {
    if ask {
        let password = read_tty_secret("BECOME password: ").map_err(OptionsError::Terminal)?;
        check_become_password(&password, "--ask-become-pass")?;
        return Ok(Some(password));
    }
    become_secret_from(
        std::env::var(BECOME_ENV).ok(),
        std::env::var_os(BECOME_FILE_ENV).map(PathBuf::from),
    )
}

/// The become password given by the environment: the variable itself or the
/// file it names. Both at once is refused, so a stale one cannot silently win.
fn become_secret_from(
    value: Option<String>,
    file: Option<PathBuf>,
) -> Result<Option<Secret>, OptionsError> {
    let (password, origin) = match (value, file) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(OptionsError::TwoBecomePasswords),
        (Some(value), None) => (Secret::new(value), BECOME_ENV.to_string()),
        (None, Some(file)) => (
            read_password_file(&file)?,
            format!("{BECOME_FILE_ENV} {}", file.display()),
        ),
    };
    check_become_password(&password, &origin)?;
    Ok(Some(password))
}

/// What a file only its owner can open holds, less its trailing line
/// break, as ssh insists for keys. A symlink is refused rather than followed, so the file whose mode
/// is checked is the one read; O_NONBLOCK keeps a FIFO from hanging the open.
fn read_password_file(path: &Path) -> Result<Secret, OptionsError> {
    let refuse = |problem: String| OptionsError::PasswordFile {
        path: path.display().to_string(),
        problem,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("is a symbolic link: name the file itself".into()),
            _ => refuse(e.to_string()),
        })?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "mode {mode:04o} opens it to group or others: chmod 600 it"
        )));
    }
    let text = std::io::read_to_string(file).map_err(|e| refuse(e.to_string()))?;
    Ok(Secret::new(text.trim_end_matches(['\r', '\n']).to_string()))
}

/// A prompt on the terminal when asked for, else the environment variable.
fn secret(ask: bool, prompt: &str, env: &str) -> Result<Option<Secret>, OptionsError> {
    if ask {
        return read_tty_secret(prompt)
            .map(Some)
            .map_err(OptionsError::Terminal);
    }
    Ok(std::env::var(env).ok().map(Secret::new))
}

/// Reads a line from the controlling terminal with echo off.
pub(crate) fn read_tty_secret(prompt: &str) -> std::io::Result<Secret> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    let echo = EchoOff::new(&tty);
    (&tty).write_all(prompt.as_bytes())?;
    let mut line = String::new();
    std::io::BufReader::new(&tty).read_line(&mut line)?;
    drop(echo);
    let _ = (&tty).write_all(b"\n");
    Ok(Secret::new(line.trim_end_matches(['\r', '\n']).to_string()))
}

/// Turns terminal echo off until dropped.
struct EchoOff {
    fd: i32,
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new(tty: &std::fs::File) -> EchoOff {
        use std::os::fd::AsRawFd;
        let fd = tty.as_raw_fd();
        // SAFETY: termios is plain data and fd is an open terminal.
        let saved = unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            (libc::tcgetattr(fd, &mut t) == 0).then(|| {
                let mut quiet = t;
                quiet.c_lflag &= !libc::ECHO;
                libc::tcsetattr(fd, libc::TCSANOW, &quiet);
                t
            })
        };
        EchoOff { fd, saved }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            // SAFETY: restores the settings read in `new` on the same fd.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, t) };
        }
    }
}

pub fn connection_for(cli: Option<Connection>, vars: &Map<String, Value>) -> Connection {
    cli.unwrap_or_else(
        || match vars.get("ansible_connection").and_then(Value::as_str) {
            Some("local") => Connection::Local,
            _ => Connection::Ssh,
        },
    )
}

pub fn open(
    opts: &ConnectOptions,
    host: &str,
    vars: &Map<String, Value>,
) -> Result<Box<dyn Transport>, TransportError> {
    match connection_for(opts.connection, vars) {
        Connection::Local => Ok(Box::new(LocalTransport)),
        Connection::Ssh => Ok(Box::new(SshTransport::connect(&opts.ssh, host, vars)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password_file(text: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("become-password");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    fn refusal(value: Option<&str>, file: &Path) -> String {
        become_secret_from(value.map(String::from), Some(file.to_path_buf()))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_password_file_only_its_owner_reads_gives_its_line() {
        let (_dir, path) = password_file("s3cret\n", 0o600);
        let password = become_secret_from(None, Some(path)).unwrap().unwrap();
        assert_eq!(password.expose(), "s3cret");
    }

    #[test]
    fn a_password_file_group_or_others_can_read_is_refused() {
        for mode in [0o640, 0o604] {
            let (_dir, path) = password_file("s3cret\n", mode);
            let msg = refusal(None, &path);
            assert!(
                msg.starts_with("NODEPROV_BECOME_PASSWORD_FILE ")
                    && msg.ends_with(&format!(
                        "mode {mode:04o} opens it to group or others: chmod 600 it"
                    )),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_symlink_to_a_password_file_is_refused() {
        let (dir, target) = password_file("s3cret\n", 0o600);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let msg = refusal(None, &link);
        assert!(
            msg.ends_with("is a symbolic link: name the file itself"),
            "{msg}"
        );
    }

    #[test]
    fn a_second_line_in_the_password_file_is_refused() {
        let (_dir, path) = password_file("s3cret\ntouch /etc/injected\n", 0o600);
        let msg = refusal(None, &path);
        assert!(
            msg.contains("the become password contains a newline"),
            "{msg}"
        );
    }

    #[test]
    fn the_password_and_its_file_together_are_refused() {
        let (_dir, path) = password_file("s3cret\n", 0o600);
        assert_eq!(
            refusal(Some("other"), &path),
            "both NODEPROV_BECOME_PASSWORD and NODEPROV_BECOME_PASSWORD_FILE are set: keep one"
        );
    }
}
