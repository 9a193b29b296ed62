//! The server's identification line, awaited before libssh2 takes the
//! socket. OpenSSH's ConnectTimeout bounds the TCP connect and this line;
//! the key exchange after it is the server's CPU work and may take longer
//! on a loaded host. libssh2 bounds both with one timeout, so the line is
//! peeked at here (left in the socket for libssh2 to read).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::channel::poll_fd;

/// Whether a full line arrived within `limit`. A closed connection also
/// returns true: libssh2 then reports it as it does.
pub fn arrives(fd: RawFd, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 512];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !poll_fd(fd, false, left) {
            return false;
        }
        // SAFETY: buf is valid for its length; MSG_PEEK leaves the bytes queued.
        let n = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        match n {
            n if n > 0 => {
                let got = &buf[..n as usize];
                // A full buffer without a line break is still a server talking.
                if got.contains(&b'\n') || got.len() == buf.len() {
                    return true;
                }
                // Peeking again at once would return the same bytes.
                std::thread::sleep(Duration::from_millis(5));
            }
            0 => return true,
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::Interrupted
                {
                    return true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_line_is_seen_and_left_for_the_reader() {
        let (mut server, mut client) = UnixStream::pair().unwrap();
        server.write_all(b"SSH-2.0-Test\r\n").unwrap();
        assert!(arrives(client.as_raw_fd(), Duration::from_secs(1)));
        let mut line = [0u8; 14];
        client.read_exact(&mut line).unwrap();
        assert_eq!(&line, b"SSH-2.0-Test\r\n");
    }

    #[test]
    fn silence_or_half_a_line_times_out() {
        let (mut server, client) = UnixStream::pair().unwrap();
        assert!(!arrives(client.as_raw_fd(), Duration::from_millis(50)));
        server.write_all(b"SSH-2.0-").unwrap();
        assert!(!arrives(client.as_raw_fd(), Duration::from_millis(50)));
    }
}
