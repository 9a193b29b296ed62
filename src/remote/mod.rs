//! How scripts reach a host. Every call to [`Transport::run`] is one round
//! trip; the executor keeps that number constant per host. The batched probe
//! script, shell quoting and gathered facts live here too: they are what
//! travels over a transport.

pub mod async_job;
pub mod connect;
pub mod deferred;
#[cfg(test)]
pub(crate) mod fake;
pub mod host_facts;
pub mod joint;
pub mod local;
pub mod probe;
pub mod ssh;

use std::time::Duration;

use thiserror::Error;

/// What a script is for: check mode must never send a `Mutate` script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Probe,
    Mutate,
}

/// A POSIX `sh` script to run on the host, fed on stdin.
#[derive(Clone, Debug)]
pub struct Script {
    pub purpose: Purpose,
    pub body: String,
    /// Run through privilege escalation (sudo) when the transport needs it.
    pub become_user: Option<String>,
    /// `become_flags`: sudo's options as the play gives them, in place of
    /// nodeprov's `-H`; `-S` is always added and `-n` left out, since the
    /// transport answers sudo's prompt itself.
    pub become_flags: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

#[derive(Debug, Error)]
pub enum TransportError {
    /// The script never started.
    #[error("host unreachable: {0}")]
    Unreachable(String),
    /// The script started, but the host was lost before it ended: `stdout`
    /// is what arrived until then, so finished steps can still be told apart.
    #[error("host unreachable: {why}")]
    Interrupted { why: String, stdout: Vec<u8> },
    #[error("privilege escalation failed: {0}")]
    Become(String),
    #[error("{0}")]
    Io(String),
}

pub trait Transport: Send {
    /// Runs one script on the host and returns its output; a non-zero exit
    /// status is not an error at this layer.
    fn run(&mut self, script: &Script) -> Result<Output, TransportError>;

    /// Whether [`Transport::reconnect`] can reach the host again after it
    /// rebooted: only a transport to another machine can.
    fn can_reconnect(&self) -> bool {
        false
    }

    /// Drops the session and logs in again, each login waiting at most
    /// `timeout` (`None`: the connection's own) for the host to answer.
    fn reconnect(&mut self, _timeout: Option<Duration>) -> Result<(), TransportError> {
        Ok(())
    }

    /// Whether probes of one group may share a unit (see [`joint`]): not
    /// for a test double that answers each probe by its key.
    fn joins_probes(&self) -> bool {
        true
    }
}
