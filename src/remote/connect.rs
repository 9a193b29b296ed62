//! Chooses the transport for a host: `-c` wins, then `ansible_connection`.

use std::io::{BufRead, Write};
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
}

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
    let config = match &args.ssh_config {
        Some(file) if !file.exists() => {
            return Err(ConfigError::Missing(file.display().to_string()).into())
        }
        Some(file) => SshConfig::load(file)?,
        None => SshConfig::load(&defaults.home.join(".ssh/config"))?
            .then(SshConfig::load(Path::new("/etc/ssh/ssh_config"))?),
    };
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
    const ENV: &str = "NODEPROV_BECOME_PASSWORD";
    let password = secret(ask, "BECOME password: ", ENV)?;
    if let Some(pw) = &password {
        check_become_password(pw, if ask { "--ask-become-pass" } else { ENV })?;
    }
    Ok(password)
}

/// A prompt on the terminal when asked for, else the environment variable.
fn secret(ask: bool, prompt: &str, env: &str) -> Result<Option<Secret>, OptionsError> {
    if ask {
        return read_tty_secret(prompt).map(Some);
    }
    Ok(std::env::var(env).ok().map(Secret::new))
}

/// Reads a line from the controlling terminal with echo off.
fn read_tty_secret(prompt: &str) -> Result<Secret, OptionsError> {
    let fail = OptionsError::Terminal;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(fail)?;
    let echo = EchoOff::new(&tty);
    (&tty).write_all(prompt.as_bytes()).map_err(fail)?;
    let mut line = String::new();
    std::io::BufReader::new(&tty)
        .read_line(&mut line)
        .map_err(fail)?;
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
