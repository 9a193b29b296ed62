//! Runs scripts over SSH (libssh2): one session per host, one channel per
//! script, the script fed on stdin to `/bin/sh -s`.

mod auth;
mod banner;
mod channel;
pub mod config;
pub mod endpoint;
pub mod error;
mod escalate;
mod jump;
pub mod known_hosts;

use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use ssh2::{MethodType, Session};

use super::{Output, Script, Transport, TransportError};
use crate::base::fd_limit;
use channel::{Feed, Limits, PumpError};
use config::SshConfig;
use endpoint::Endpoint;
use error::{AuthError, BecomePasswordError, ConnectError};
use escalate::{BecomeCtx, SudoMarkers};
use known_hosts::{KnownHostsDb, PresentedKey, Verdict};

pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);
const KEEPALIVE: Duration = Duration::from_secs(15);
/// The least the key exchange and the login may take. As OpenSSH's
/// ConnectTimeout, `-T` bounds the TCP connect and the server's banner; what
/// follows is the server's CPU work (key exchange, forking its session, PAM)
/// and takes longer on a busy host, so it waits at least this long, as
/// paramiko's auth_timeout does, and a host that hangs there is still given
/// up on.
const SETUP_TIMEOUT_FLOOR: Duration = Duration::from_secs(30);

/// A password or passphrase; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: String) -> Secret {
        Secret(s)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// sudo reads its password up to the first newline or carriage return and
/// leaves the rest on stdin, where the escalated shell would run it as a
/// command; such a password can never be the right one, so it is refused
/// before any host is contacted. NUL would cut it short the same way.
pub fn check_become_password(password: &Secret, origin: &str) -> Result<(), BecomePasswordError> {
    match password.0.chars().find(|c| matches!(c, '\n' | '\r' | '\0')) {
        None => Ok(()),
        Some(c) => Err(BecomePasswordError {
            origin: origin.to_string(),
            character: match c {
                '\n' => "newline",
                '\r' => "carriage return",
                _ => "NUL",
            },
        }),
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Run-wide SSH settings from the command line and the environment;
/// per-host inventory variables are applied on top in [`endpoint::resolve`].
#[derive(Clone, Debug)]
pub struct SshOptions {
    pub config: SshConfig,
    pub user: Option<String>,
    pub private_key: Option<PathBuf>,
    pub password: Option<Secret>,
    pub become_password: Option<Secret>,
    pub key_passphrase: Option<Secret>,
    pub known_hosts: Option<PathBuf>,
    /// `/etc/ssh/ssh_known_hosts`, consulted read-only.
    pub system_known_hosts: Option<PathBuf>,
    pub accept_new_host_keys: bool,
    pub connect_timeout: Option<Duration>,
    pub command_timeout: Duration,
    pub keepalive: Duration,
    pub use_agent: bool,
    /// Where `~` points, for keys and known_hosts.
    pub home: PathBuf,
    pub local_user: String,
}

impl Default for SshOptions {
    fn default() -> SshOptions {
        SshOptions {
            config: SshConfig::default(),
            user: None,
            private_key: None,
            password: None,
            become_password: None,
            key_passphrase: None,
            known_hosts: None,
            system_known_hosts: None,
            accept_new_host_keys: false,
            connect_timeout: None,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            keepalive: KEEPALIVE,
            use_agent: true,
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default(),
            local_user: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        }
    }
}

pub struct SshTransport {
    opts: Arc<SshOptions>,
    /// Where the target is reached through, for logging in again.
    jumps: Vec<Endpoint>,
    target: Endpoint,
    session: Session,
    fd: RawFd,
    become_password: Option<Secret>,
    become_method: String,
    /// `ansible_become_flags`, which outranks the play's `become_flags`.
    become_flags: Option<String>,
    limits: Limits,
    /// Set once the session is unusable; later scripts fail fast with it.
    broken: Option<String>,
}

impl SshTransport {
    /// Connects (through any jump hosts), verifies the host key and logs in.
    pub fn connect(
        opts: &Arc<SshOptions>,
        name: &str,
        vars: &Map<String, Value>,
    ) -> Result<SshTransport, TransportError> {
        let unreachable = |e: ConnectError| TransportError::Unreachable(e.to_string());
        let route =
            endpoint::resolve(opts, name, vars).map_err(|e| unreachable(ConnectError::Route(e)))?;
        let (session, fd) = open_route(opts, &route.jumps, &route.target).map_err(unreachable)?;
        let transport = SshTransport {
            opts: Arc::clone(opts),
            jumps: route.jumps,
            target: route.target,
            session,
            fd,
            become_password: route.become_password,
            become_method: route.become_method,
            become_flags: route.become_flags,
            limits: Limits {
                command: opts.command_timeout,
                keepalive: opts.keepalive,
            },
            broken: None,
        };
        // Blocking calls from now on (opening a channel) are part of running
        // a script, so a frozen host costs no more than the command timeout.
        transport
            .session
            .set_timeout(millis(transport.blocking_limit()));
        Ok(transport)
    }

    /// Opening a channel makes sshd fork the session, which on a loaded
    /// host takes as long as a login: it gets the login's floor, and never
    /// more than the command timeout.
    fn blocking_limit(&self) -> Duration {
        self.target
            .connect_timeout
            .max(SETUP_TIMEOUT_FLOOR)
            .min(self.limits.command)
    }

    fn exec(&mut self, script: &Script) -> Result<Output, TransportError> {
        let display = self.target.display();
        let escalate_to = script
            .become_user
            .as_deref()
            .filter(|u| *u != self.target.user);
        if escalate_to.is_some() && !crate::base::escalation::is_sudo(&self.become_method) {
            return Err(TransportError::Become(format!(
                "{display}: become_method '{}' is not supported over ssh; use sudo",
                self.become_method
            )));
        }
        let markers = SudoMarkers::random();
        let command = match escalate_to {
            Some(user) => {
                let flags = self
                    .become_flags
                    .as_deref()
                    .or(script.become_flags.as_deref());
                escalate::sudo_command(user, flags, &markers)
            }
            None => "env LC_ALL=C /bin/sh -s".to_string(),
        };
        let mut channel = self
            .session
            .channel_session()
            .and_then(|mut c| c.exec(&command).map(|()| c))
            .map_err(|e| {
                let why = match is_timeout(&e) {
                    true => format!(
                        "starting the script timed out after {} s",
                        self.blocking_limit().as_secs()
                    ),
                    false => format!("cannot start a shell: {e}"),
                };
                self.fail(why)
            })?;
        let feed = match escalate_to {
            Some(user) => Feed::Sudo {
                body: script.body.as_bytes(),
                markers,
                ctx: BecomeCtx {
                    host: &self.target.name,
                    login_user: &self.target.user,
                    become_user: user,
                },
                password: self.become_password.as_ref(),
            },
            None => Feed::Script(script.body.as_bytes()),
        };
        let (collected, ended) =
            channel::pump(&self.session, self.fd, &mut channel, feed, self.limits);
        match ended {
            Ok(()) => {}
            Err(PumpError::Become(msg)) => return Err(TransportError::Become(msg)),
            Err(PumpError::Stalled(msg) | PumpError::Io(msg)) => {
                return Err(self.interrupted(msg, collected.stdout))
            }
        }
        if let Err(e) = channel.wait_close() {
            let why = format!("waiting for the script to end: {e}");
            return Err(self.interrupted(why, collected.stdout));
        }
        Ok(Output {
            status: exit_status(&channel),
            stdout: collected.stdout,
            stderr: collected.stderr,
        })
    }

    /// Marks the session dead: the host counts as unreachable from now on.
    fn fail(&mut self, why: String) -> TransportError {
        TransportError::Unreachable(self.broke(why))
    }

    /// Like `fail`, for a script that had started: what it printed so far
    /// goes with the error.
    fn interrupted(&mut self, why: String, stdout: Vec<u8>) -> TransportError {
        TransportError::Interrupted {
            why: self.broke(why),
            stdout,
        }
    }

    fn broke(&mut self, why: String) -> String {
        let msg = format!("{}: {why}", self.target.display());
        self.broken = Some(msg.clone());
        // Closing a channel or session politely waits for the host's answer,
        // which a frozen host never sends: cut the connection instead.
        // SAFETY: shutdown(2) on the session's own socket, still open.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        msg
    }
}

impl Transport for SshTransport {
    fn run(&mut self, script: &Script) -> Result<Output, TransportError> {
        if let Some(why) = &self.broken {
            return Err(TransportError::Unreachable(why.clone()));
        }
        self.exec(script)
    }

    fn can_reconnect(&self) -> bool {
        true
    }

    fn reconnect(&mut self, timeout: Option<Duration>) -> Result<(), TransportError> {
        // The old session's socket may still look open to us while its host
        // is long gone; cut it so nothing waits on it.
        // SAFETY: shutdown(2) on the session's own socket, still open.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        let mut target = self.target.clone();
        target.connect_timeout = timeout.unwrap_or(target.connect_timeout);
        let (session, fd) = open_route(&self.opts, &self.jumps, &target)
            .map_err(|e| TransportError::Unreachable(e.to_string()))?;
        session.set_timeout(millis(self.blocking_limit()));
        self.session = session;
        self.fd = fd;
        self.broken = None;
        Ok(())
    }
}

/// The exit status, or 128 + signal number as a shell reports a killed
/// command (libssh2 reports status 0 for those).
fn exit_status(channel: &ssh2::Channel) -> i32 {
    let signal = channel.exit_signal().ok().and_then(|s| s.exit_signal);
    match signal.as_deref() {
        None => channel.exit_status().unwrap_or(-1),
        Some(sig) => {
            let n = [
                "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV",
                "USR2", "PIPE", "ALRM", "TERM",
            ]
            .iter()
            .position(|s| *s == sig)
            .map_or(127, |i| i as i32 + 1);
            128 + n
        }
    }
}

/// Logs in to each jump host in turn, tunnels through it to the next hop,
/// and finally to the target.
fn open_route(
    opts: &SshOptions,
    jumps: &[Endpoint],
    target: &Endpoint,
) -> Result<(Session, RawFd), ConnectError> {
    let mut hops = jumps.iter().chain([target]);
    let first = hops.next().expect("the target is always there");
    // Reported under the target's name, so say whose failure it really is.
    let first_hop = |e: ConnectError| match jumps.is_empty() {
        true => e,
        false => ConnectError::FirstJump {
            source: Box::new(e),
            target: target.display(),
        },
    };
    let tcp = tcp_connect(first).map_err(first_hop)?;
    let fd = tcp.as_raw_fd();
    let mut current = (establish(opts, first, tcp).map_err(first_hop)?, fd, first);
    for next in hops {
        let (session, _, via) = current;
        let sock = jump::tunnel(session, current.1, &next.host, next.port).map_err(|source| {
            ConnectError::Tunnel {
                hop: next.display(),
                via: via.display(),
                source,
            }
        })?;
        let fd = sock.as_raw_fd();
        current = (
            establish(opts, next, sock).map_err(|e| ConnectError::Via {
                source: Box::new(e),
                via: via.name.clone(),
            })?,
            fd,
            next,
        );
    }
    Ok((current.0, current.1))
}

fn tcp_connect(ep: &Endpoint) -> Result<TcpStream, ConnectError> {
    let host = ep.display();
    let addrs = (ep.host.as_str(), ep.port)
        .to_socket_addrs()
        .map_err(|source| ConnectError::Resolve {
            host: host.clone(),
            source,
        })?;
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, ep.connect_timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => match fd_limit::explain(&e) {
                Some(why) => return Err(ConnectError::Descriptors { host, why }),
                None => last = Some(e),
            },
        }
    }
    Err(match last {
        Some(e) if e.kind() == std::io::ErrorKind::TimedOut => ConnectError::ConnectTimeout {
            host,
            secs: ep.connect_timeout.as_secs(),
        },
        Some(source) => ConnectError::Connect { host, source },
        None => ConnectError::NoAddress { host },
    })
}

/// Handshake, host key check and login on an open socket.
fn establish<S: AsRawFd + 'static>(
    opts: &SshOptions,
    ep: &Endpoint,
    socket: S,
) -> Result<Session, ConnectError> {
    let host = ep.display();
    let mut session = Session::new().map_err(|source| ConnectError::Session {
        host: host.clone(),
        source,
    })?;
    if !banner::arrives(socket.as_raw_fd(), ep.connect_timeout) {
        return Err(ConnectError::NoBanner {
            host,
            secs: ep.connect_timeout.as_secs(),
        });
    }
    let setup_limit = ep.connect_timeout.max(SETUP_TIMEOUT_FLOOR);
    session.set_timeout(millis(setup_limit));
    let db = KnownHostsDb::load(&ep.host_keys).map_err(|source| ConnectError::KnownHosts {
        host: host.clone(),
        source,
    })?;
    // Unsupported names are dropped by libssh2; failing here only loses
    // the preference.
    let _ = session.method_pref(
        MethodType::HostKey,
        &db.algorithm_preference(&ep.host, ep.port),
    );
    session.set_tcp_stream(socket);
    session
        .handshake()
        .map_err(|source| match is_timeout(&source) {
            true => ConnectError::HandshakeTimeout {
                host: host.clone(),
                secs: setup_limit.as_secs(),
            },
            false => ConnectError::Handshake {
                host: host.clone(),
                source,
            },
        })?;
    check_host_key(&session, &db, ep)?;
    let plan = auth::AuthPlan {
        user: &ep.user,
        use_agent: opts.use_agent,
        keys: &ep.keys,
        key_passphrase: opts.key_passphrase.as_ref(),
        password: ep.password.as_ref(),
        home: &opts.home,
    };
    auth::authenticate(&session, &plan)
        .map_err(|source| login_error(host, ep, setup_limit, source))?;
    session.set_keepalive(true, opts.keepalive.as_secs().max(1) as u32);
    Ok(session)
}

fn login_error(host: String, ep: &Endpoint, limit: Duration, source: AuthError) -> ConnectError {
    let user = ep.user.clone();
    match &source {
        AuthError::Broken { source: e, .. } if is_timeout(e) => ConnectError::AuthTimeout {
            host,
            user,
            secs: limit.as_secs(),
        },
        AuthError::Broken { .. } => ConnectError::AuthBroken { host, user, source },
        _ => ConnectError::Auth { host, user, source },
    }
}

fn check_host_key(session: &Session, db: &KnownHostsDb, ep: &Endpoint) -> Result<(), ConnectError> {
    let display = ep.display();
    let (blob, kind) = session.host_key().ok_or_else(|| ConnectError::NoHostKey {
        host: display.clone(),
    })?;
    let presented = PresentedKey {
        blob,
        kind,
        fingerprint: known_hosts::fingerprint(session),
    };
    match db.verify(&ep.host, ep.port, &presented, &display) {
        Verdict::Trusted => Ok(()),
        Verdict::Record(line) => {
            known_hosts::record(&ep.host_keys.files[0], &line).map_err(|source| {
                ConnectError::KnownHosts {
                    host: display,
                    source,
                }
            })
        }
        Verdict::Refused(msg) => Err(ConnectError::HostKeyRefused(msg)),
    }
}

fn is_timeout(e: &ssh2::Error) -> bool {
    // LIBSSH2_ERROR_TIMEOUT
    e.code() == ssh2::ErrorCode::Session(-9)
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2".into());
        assert_eq!(format!("{s:?}"), "***");
        let opts = SshOptions {
            become_password: Some(s),
            ..SshOptions::default()
        };
        assert!(!format!("{opts:?}").contains("hunter2"));
    }
}
