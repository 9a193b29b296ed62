//! Why reaching a host over SSH failed: one variant per step (reading
//! ssh_config, choosing the route, TCP, handshake, host key, login, jump
//! tunnel), so the message names the step and callers can tell them apart.
//! Each message starts with the host as `name (address:port)`.

use thiserror::Error;

use crate::base::input::ReadError;

/// A value in ssh_config, a `-J` option or an inventory variable that
/// cannot be used.
#[derive(Debug, Error, PartialEq)]
pub enum ValueError {
    #[error("'{0}' is not a port number")]
    Port(String),
    #[error("ConnectTimeout '{0}' is not a number of seconds")]
    Timeout(String),
    #[error("StrictHostKeyChecking '{0}' is not yes, no, ask or accept-new")]
    Strict(String),
    #[error("ProxyJump hop '{0}' is not [user@]host[:port]")]
    Jump(String),
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error(transparent)]
    Read(ReadError),
    #[error("--ssh-config {0}: no such file")]
    Missing(String),
    #[error("{origin}:{line}: '{keyword}' needs a value")]
    NoValue {
        origin: String,
        line: usize,
        keyword: String,
    },
    #[error("{origin}:{line}: {problem}")]
    BadValue {
        origin: String,
        line: usize,
        problem: ValueError,
    },
}

/// sudo reads its password only up to the first line break, so a password
/// holding one can never be sent safely.
#[derive(Debug, Error, PartialEq)]
#[error(
    "{origin}: the become password contains a {character} character; sudo reads only up to \
     the first line break, so it cannot be sent safely"
)]
pub struct BecomePasswordError {
    pub origin: String,
    pub character: &'static str,
}

/// Per-host inventory variables that do not describe a usable route.
#[derive(Debug, Error, PartialEq)]
pub enum RouteError {
    #[error("{host}: ansible_port '{value}' is not a port number")]
    Port { host: String, value: String },
    #[error("ansible_ssh_common_args: {0}")]
    CommonArgs(ValueError),
    #[error(transparent)]
    BecomePassword(#[from] BecomePasswordError),
    #[error(
        "StrictHostKeyChecking {value} in {at} is not honoured: nodeprov never connects to an \
         unverified host; use accept-new or --accept-new-host-keys"
    )]
    StrictOff { value: String, at: String },
}

/// A known_hosts line that cannot be read; the whole file is refused rather
/// than guessed at, since a skipped line could be a revocation.
#[derive(Debug, Error, PartialEq)]
pub enum LineError {
    #[error("unknown marker '{0}' (only @revoked and @cert-authority exist)")]
    Marker(String),
    #[error("no key after the host names")]
    NoKey,
    #[error("hashed host name '{0}' is not |1|salt|hash in base64")]
    Hashed(String),
}

#[derive(Debug, Error)]
pub enum KnownHostsError {
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    /// Out of file descriptors, said as such.
    #[error("{0}")]
    Descriptors(String),
    #[error("known_hosts {at}: {problem}")]
    Parse { at: String, problem: LineError },
    #[error("cannot record host key in {file}: {why}")]
    Record { file: String, why: String },
}

#[derive(Debug, Error)]
pub enum AuthError {
    #[error("the server refused to list auth methods: {0}")]
    ListMethods(ssh2::Error),
    /// Every method was tried; the list says what and why each failed.
    #[error("{}", .0.join(", "))]
    Exhausted(Vec<String>),
    /// The connection broke or went silent while a credential was offered:
    /// not a refusal, so it must not read as one.
    #[error("while trying {}: {source}", .tried.join(", "))]
    Broken {
        tried: Vec<String>,
        source: ssh2::Error,
    },
}

#[derive(Debug, Error)]
pub enum TunnelError {
    #[error("the jump host could not reach {host}:{port}: {source}")]
    Channel {
        host: String,
        port: u16,
        source: ssh2::Error,
    },
    #[error("cannot create a socket pair: {0}")]
    SocketPair(String),
    #[error("socket pair: {0}")]
    Socket(std::io::Error),
    #[error("cannot start the jump thread: {0}")]
    Thread(std::io::Error),
}

#[derive(Debug, Error)]
pub enum ConnectError {
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error("{host}: cannot resolve host: {source}")]
    Resolve {
        host: String,
        source: std::io::Error,
    },
    #[error("{host}: host name resolved to no address")]
    NoAddress { host: String },
    #[error("{host}: TCP connect timed out after {secs} s (-T/--timeout)")]
    ConnectTimeout { host: String, secs: u64 },
    #[error("{host}: cannot connect: {source}")]
    Connect {
        host: String,
        source: std::io::Error,
    },
    #[error("{host}: {why}")]
    Descriptors { host: String, why: String },
    #[error("{host}: {source}")]
    Session { host: String, source: ssh2::Error },
    #[error("{host}: {source}")]
    KnownHosts {
        host: String,
        source: KnownHostsError,
    },
    #[error(
        "{host}: TCP connected, but the server sent no SSH banner within {secs} s (-T/--timeout)"
    )]
    NoBanner { host: String, secs: u64 },
    #[error(
        "{host}: the server answered, but the SSH key exchange did not finish within {secs} s \
         (it waits -T/--timeout, and at least {floor} s)",
        floor = super::SETUP_TIMEOUT_FLOOR.as_secs()
    )]
    HandshakeTimeout { host: String, secs: u64 },
    #[error("{host}: SSH handshake failed: {source}")]
    Handshake { host: String, source: ssh2::Error },
    #[error("{host}: the server sent no host key")]
    NoHostKey { host: String },
    /// The key is unknown or changed; the message says which and what to do.
    #[error("{0}")]
    HostKeyRefused(String),
    #[error(
        "{host}: connected, but the login of {user} got no answer within {secs} s \
         (a login waits -T/--timeout, and at least {floor} s)",
        floor = super::SETUP_TIMEOUT_FLOOR.as_secs()
    )]
    AuthTimeout {
        host: String,
        user: String,
        secs: u64,
    },
    #[error("{host}: the connection broke while logging in as {user}: {source}")]
    AuthBroken {
        host: String,
        user: String,
        source: AuthError,
    },
    #[error("{host}: authentication failed for user {user} (tried: {source})")]
    Auth {
        host: String,
        user: String,
        source: AuthError,
    },
    #[error("{hop} via {via}: {source}")]
    Tunnel {
        hop: String,
        via: String,
        source: TunnelError,
    },
    /// A failure behind a jump host, said with the hop it went through.
    #[error("{source} (via {via})")]
    Via {
        source: Box<ConnectError>,
        via: String,
    },
    /// The first jump host failed: it is reported under the target's name.
    #[error("{source} (jump host to {target})")]
    FirstJump {
        source: Box<ConnectError>,
        target: String,
    },
}
