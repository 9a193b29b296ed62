//! `ProxyJump`: a `direct-tcpip` channel through the jump host's session,
//! bridged to a local socket pair because libssh2 needs a file descriptor
//! to run the next session on. A thread owns the jump session and copies
//! bytes both ways until either side closes.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ssh2::{BlockDirections, Channel, Session};

use super::error::TunnelError;
use crate::base::fd_limit;

/// Opens a tunnel to `host:port` through `jump`; the returned socket speaks
/// directly to the target.
/// `jump_fd` is the socket the jump session runs on.
pub fn tunnel(
    jump: Session,
    jump_fd: RawFd,
    host: &str,
    port: u16,
) -> Result<UnixStream, TunnelError> {
    let channel = jump
        .channel_direct_tcpip(host, port, None)
        .map_err(|source| TunnelError::Channel {
            host: host.to_string(),
            port,
            source,
        })?;
    let (ours, theirs) = UnixStream::pair().map_err(|e| {
        TunnelError::SocketPair(fd_limit::explain(&e).unwrap_or_else(|| e.to_string()))
    })?;
    theirs.set_nonblocking(true).map_err(TunnelError::Socket)?;
    std::thread::Builder::new()
        .name(format!("ssh-jump {host}:{port}"))
        .spawn(move || Bridge::new(jump, channel, theirs).run(jump_fd))
        .map_err(TunnelError::Thread)?;
    Ok(ours)
}

struct Bridge {
    session: Session,
    channel: Channel,
    local: UnixStream,
    /// Bytes read from one side, not yet written to the other.
    to_local: Vec<u8>,
    to_remote: Vec<u8>,
}

enum Flow {
    Moved,
    Idle,
    Closed,
}

impl Bridge {
    fn new(session: Session, channel: Channel, local: UnixStream) -> Bridge {
        session.set_blocking(false);
        Bridge {
            session,
            channel,
            local,
            to_local: Vec::new(),
            to_remote: Vec::new(),
        }
    }

    fn run(mut self, session_fd: RawFd) {
        loop {
            let a = self.remote_to_local();
            let b = self.local_to_remote();
            match (a, b) {
                (Flow::Closed, _) | (_, Flow::Closed) => return,
                (Flow::Idle, Flow::Idle) => self.wait(session_fd),
                _ => {}
            }
        }
    }

    fn remote_to_local(&mut self) -> Flow {
        if self.to_local.is_empty() {
            match read_some(&mut self.channel) {
                Some(Ok(bytes)) => self.to_local = bytes,
                Some(Err(())) => return Flow::Closed,
                None => {}
            }
        }
        write_some(&mut self.local, &mut self.to_local)
    }

    fn local_to_remote(&mut self) -> Flow {
        if self.to_remote.is_empty() {
            match read_some(&mut self.local) {
                Some(Ok(bytes)) => self.to_remote = bytes,
                Some(Err(())) => return Flow::Closed,
                None => {}
            }
        }
        write_some(&mut self.channel, &mut self.to_remote)
    }

    fn wait(&self, session_fd: RawFd) {
        let _ = self.session.keepalive_send();
        let outbound = matches!(
            self.session.block_directions(),
            BlockDirections::Outbound | BlockDirections::Both
        );
        let mut fds = [
            pollfd(
                session_fd,
                libc::POLLIN | if outbound { libc::POLLOUT } else { 0 },
            ),
            pollfd(
                self.local.as_raw_fd(),
                if self.to_local.is_empty() {
                    libc::POLLIN
                } else {
                    libc::POLLIN | libc::POLLOUT
                },
            ),
        ];
        let ms = Duration::from_secs(1).as_millis() as i32;
        // SAFETY: two valid pollfds for the duration of the call.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    }
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// `None`: nothing available now; `Some(Err)`: the side closed.
fn read_some(from: &mut impl Read) -> Option<Result<Vec<u8>, ()>> {
    let mut buf = vec![0u8; 32 * 1024];
    match from.read(&mut buf) {
        Ok(0) => Some(Err(())),
        Ok(n) => {
            buf.truncate(n);
            Some(Ok(buf))
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(_) => Some(Err(())),
    }
}

fn write_some(to: &mut impl Write, pending: &mut Vec<u8>) -> Flow {
    if pending.is_empty() {
        return Flow::Idle;
    }
    match to.write(pending) {
        Ok(n) => {
            pending.drain(..n);
            Flow::Moved
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => Flow::Idle,
        Err(_) => Flow::Closed,
    }
}
