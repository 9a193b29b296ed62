//! Drives one exec channel without blocking: stdin is written, stdout and
//! stderr are drained as they come (a script that floods stderr while we
//! still write its stdin cannot deadlock us), and a host that stops
//! answering is noticed by keepalives instead of hanging the worker.

use std::borrow::Cow;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use ssh2::{BlockDirections, Channel, Session};

use super::escalate::{classify, strip_prompts, BecomeCtx, Step, SudoMarkers};
use super::Secret;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The longest one script may run.
    pub command: Duration,
    /// Keepalive interval; three unanswered intervals mean the host is gone.
    pub keepalive: Duration,
}

/// What to write on stdin, and when.
pub enum Feed<'a> {
    Script(&'a [u8]),
    Sudo {
        body: &'a [u8],
        markers: SudoMarkers,
        ctx: BecomeCtx<'a>,
        password: Option<&'a Secret>,
    },
}

#[derive(Debug)]
pub enum PumpError {
    /// The host stopped answering or the script ran too long; the session
    /// is unusable afterwards.
    Stalled(String),
    Become(String),
    Io(String),
}

pub struct Collected {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs the exchange on an exec'd channel until the remote side closes its
/// output. The session is non-blocking for the duration. What arrived is
/// returned even when the exchange broke off.
pub fn pump(
    session: &Session,
    fd: RawFd,
    channel: &mut Channel,
    feed: Feed,
    limits: Limits,
) -> (Collected, Result<(), PumpError>) {
    session.set_blocking(false);
    let mut exchange = Exchange::new(feed);
    let ended = exchange.run(session, fd, channel, limits);
    session.set_blocking(true);
    (exchange.finish(), ended)
}

struct Exchange<'a> {
    feed: Feed<'a>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The script is written from where it lies, never copied.
    pending: Cow<'a, [u8]>,
    written: usize,
    /// The script body is queued (at once without sudo; after sudo's
    /// success marker with it).
    escalated: bool,
    password_sent: bool,
    eof_sent: bool,
}

impl<'a> Exchange<'a> {
    fn new(feed: Feed<'a>) -> Exchange<'a> {
        let (pending, escalated) = match &feed {
            Feed::Script(body) => (Cow::Borrowed(*body), true),
            Feed::Sudo { .. } => (Cow::Borrowed(&[][..]), false),
        };
        Exchange {
            feed,
            stdout: Vec::new(),
            stderr: Vec::new(),
            pending,
            written: 0,
            escalated,
            password_sent: false,
            eof_sent: false,
        }
    }

    fn run(
        &mut self,
        session: &Session,
        fd: RawFd,
        channel: &mut Channel,
        limits: Limits,
    ) -> Result<(), PumpError> {
        let mut clock = Liveness::new(limits);
        loop {
            let mut progress = drain(&mut channel.stream(0), &mut self.stdout)?;
            progress |= drain(&mut channel.stderr(), &mut self.stderr)?;
            let closed = channel.eof();
            if !self.escalated {
                self.escalate(closed)?;
            }
            if !closed {
                progress |= self.write(channel)?;
            }
            if closed && !progress {
                return Ok(());
            }
            if progress {
                clock.heard();
            } else {
                clock.wait(session, fd)?;
            }
        }
    }

    /// Advances the sudo conversation by what has arrived so far.
    fn escalate(&mut self, closed: bool) -> Result<(), PumpError> {
        let Feed::Sudo {
            body,
            markers,
            ctx,
            password,
        } = &self.feed
        else {
            return Ok(());
        };
        let step = classify(
            markers,
            ctx,
            &self.stdout,
            &self.stderr,
            password.is_some(),
            self.password_sent,
            closed,
        );
        match step {
            Step::Wait => {}
            Step::SendPassword => {
                let pw = password.expect("classify asks only when there is one");
                self.pending = Cow::Owned(format!("{}\n", pw.expose()).into_bytes());
                self.written = 0;
                self.password_sent = true;
            }
            Step::Ready(marker_len) => {
                self.stdout.drain(..marker_len);
                self.pending = Cow::Borrowed(*body);
                self.written = 0;
                self.escalated = true;
            }
            Step::Failed(msg) => return Err(PumpError::Become(msg)),
        }
        Ok(())
    }

    /// Writes what is pending, then closes stdin once the body is sent.
    fn write(&mut self, channel: &mut Channel) -> Result<bool, PumpError> {
        if self.written < self.pending.len() {
            return match channel.write(&self.pending[self.written..]) {
                Ok(n) => {
                    self.written += n;
                    Ok(n > 0)
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
                // The script exited without reading all its input; its
                // output and exit status still tell what happened.
                Err(_) => {
                    self.written = self.pending.len();
                    Ok(true)
                }
            };
        }
        if !self.escalated || self.eof_sent {
            return Ok(false);
        }
        match channel.send_eof() {
            Ok(()) => {
                self.eof_sent = true;
                Ok(true)
            }
            Err(e) if is_would_block(&e) => Ok(false),
            Err(e) => Err(PumpError::Io(format!("closing the script's stdin: {e}"))),
        }
    }

    fn finish(self) -> Collected {
        let stderr = match &self.feed {
            Feed::Sudo { markers, .. } => strip_prompts(&self.stderr, &markers.prompt),
            Feed::Script(_) => self.stderr,
        };
        Collected {
            stdout: self.stdout,
            stderr,
        }
    }
}

/// Reads everything available; true if anything arrived.
fn drain(stream: &mut impl Read, into: &mut Vec<u8>) -> Result<bool, PumpError> {
    let mut buf = [0u8; 32 * 1024];
    let mut got = false;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => {
                into.extend_from_slice(&buf[..n]);
                got = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(got),
            Err(e) => return Err(PumpError::Io(format!("reading script output: {e}"))),
        }
    }
}

fn is_would_block(e: &ssh2::Error) -> bool {
    // LIBSSH2_ERROR_EAGAIN
    e.code() == ssh2::ErrorCode::Session(-37)
}

/// Tracks the command deadline and when the host was last heard from.
struct Liveness {
    limits: Limits,
    started: Instant,
    last_heard: Instant,
}

impl Liveness {
    fn new(limits: Limits) -> Liveness {
        let now = Instant::now();
        Liveness {
            limits,
            started: now,
            last_heard: now,
        }
    }

    fn heard(&mut self) {
        self.last_heard = Instant::now();
    }

    /// Sleeps until the socket is ready or a keepalive is due.
    fn wait(&mut self, session: &Session, fd: RawFd) -> Result<(), PumpError> {
        let now = Instant::now();
        if now - self.started > self.limits.command {
            return Err(PumpError::Stalled(format!(
                "the script did not finish within {} s (--command-timeout)",
                self.limits.command.as_secs()
            )));
        }
        let silent_limit = self.limits.keepalive * 3;
        if now - self.last_heard > silent_limit {
            return Err(PumpError::Stalled(format!(
                "no answer from the host for {} s (keepalives unanswered)",
                silent_limit.as_secs()
            )));
        }
        // Not answering a keepalive is what reveals a frozen host.
        let _ = session.keepalive_send();
        let outbound = matches!(
            session.block_directions(),
            BlockDirections::Outbound | BlockDirections::Both
        );
        if poll_fd(
            fd,
            outbound,
            self.limits.keepalive.min(Duration::from_secs(1)),
        ) {
            self.heard();
        }
        Ok(())
    }
}

/// Waits for `fd` to become readable (or writable when asked); true if
/// data came in.
pub fn poll_fd(fd: RawFd, want_write: bool, timeout: Duration) -> bool {
    let events = libc::POLLIN | if want_write { libc::POLLOUT } else { 0 };
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}
