//! The one way input files (playbooks, inventories, vars files, templates,
//! `copy` sources, host list files) are read.
//!
//! A path a user gives may name anything: a FIFO that blocks forever,
//! `/dev/zero` that never ends, a symlink loop, a folder. Only regular files
//! of at most [`MAX_INPUT_BYTES`] are read; the text must be UTF-8 without
//! NUL bytes, and a leading byte order mark is dropped.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use crate::base::diag::{Diagnostic, Source, Span};

/// The largest input file read; larger ones are refused before reading.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

const BOM: &str = "\u{feff}";

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {}", io_reason(source))]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot read {path}: it is {kind}, not a regular file")]
    NotAFile { path: String, kind: &'static str },
    #[error("cannot read {path}: it is larger than the limit of {} MiB", MAX_INPUT_BYTES >> 20)]
    TooLarge { path: String },
    #[error("{path} {}, at line {line}, column {col}", bad_byte(*byte))]
    NotText {
        path: String,
        byte: u8,
        line: usize,
        col: usize,
        /// The file with bad bytes replaced, to quote the line.
        text: String,
    },
    /// A vault-encrypted file that did not decrypt; the message names it.
    #[error("{message}")]
    Vault { path: String, message: String },
}

impl ReadError {
    /// The error as a diagnostic: at the bad byte for text that is not
    /// UTF-8, otherwise at `at` (where the path was given).
    pub fn diagnostic(self, at: &Span) -> Diagnostic {
        match self {
            ReadError::NotText {
                ref path,
                byte,
                line,
                col,
                ref text,
            } => {
                let source = Arc::new(Source {
                    name: path.clone(),
                    text: text.clone(),
                });
                let message = format!("{path} {}", bad_byte(byte));
                Diagnostic::new(&Span::new(source, line, col), message)
                    .with_hint("save the file as UTF-8 text")
            }
            other => Diagnostic::new(at, other.to_string()),
        }
    }

    /// Why the file could not be read, without its path.
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let prefix = format!("cannot read {}: ", self.path());
        match full.strip_prefix(&prefix) {
            Some(reason) => reason.to_string(),
            None => full,
        }
    }

    /// The diagnostic for a path that came from no other file.
    pub fn into_diagnostic(self) -> Diagnostic {
        let at = Span::synthetic(self.path());
        self.diagnostic(&at)
    }

    fn path(&self) -> &str {
        match self {
            ReadError::Io { path, .. }
            | ReadError::NotAFile { path, .. }
            | ReadError::TooLarge { path }
            | ReadError::NotText { path, .. }
            | ReadError::Vault { path, .. } => path,
        }
    }
}

/// Running out of descriptors is the run's limit, not the file's fault:
/// say so, and how to fix it.
fn io_reason(e: &std::io::Error) -> String {
    crate::base::fd_limit::explain(e).unwrap_or_else(|| e.to_string())
}

/// Reads a regular file of at most [`MAX_INPUT_BYTES`] as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let name = path.display().to_string();
    let io = |source| ReadError::Io {
        path: name.clone(),
        source,
    };
    // Non-blocking, so that opening a FIFO returns at once and the type
    // check below can refuse it; regular files ignore the flag.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = not_regular(&meta.file_type()) {
        return Err(ReadError::NotAFile { path: name, kind });
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(ReadError::TooLarge { path: name });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while it is read still stops at the limit.
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(ReadError::TooLarge { path: name });
    }
    let text = decode(bytes, &name)?;
    Ok(match text.strip_prefix(BOM) {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// What a file type is, in words, unless it is a regular file.
fn not_regular(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a folder")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn bad_byte(byte: u8) -> String {
    match byte {
        0 => "holds a NUL byte, so it is not a text file".to_string(),
        _ => format!("is not UTF-8 text: byte 0x{byte:02x}"),
    }
}

/// The text, or where its first byte that is not UTF-8 (or is NUL) is.
fn decode(bytes: Vec<u8>, name: &str) -> Result<String, ReadError> {
    let at = match std::str::from_utf8(&bytes) {
        Ok(text) => match text.find('\0') {
            None => return Ok(String::from_utf8(bytes).expect("checked above")),
            Some(at) => at,
        },
        Err(e) => e.valid_up_to(),
    };
    let good = std::str::from_utf8(&bytes[..at]).expect("valid up to here");
    let line_start = good.rfind('\n').map_or(0, |i| i + 1);
    Err(ReadError::NotText {
        path: name.to_string(),
        byte: bytes[at],
        line: good.matches('\n').count() + 1,
        col: good[line_start..].chars().count() + 1,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn reads_text_and_drops_a_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a.yml", b"\xef\xbb\xbfa: 1\n");
        assert_eq!(read_text(&path).unwrap(), "a: 1\n");
        let path = write(dir.path(), "b.yml", "b: \u{e9}\n".as_bytes());
        assert_eq!(read_text(&path).unwrap(), "b: \u{e9}\n");
    }

    #[test]
    fn invalid_utf8_is_reported_at_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "bad.yml", b"a: 1\nb: \xc3\xa9\xff\n");
        let err = read_text(&path).unwrap_err();
        assert!(matches!(
            err,
            ReadError::NotText {
                byte: 0xff,
                line: 2,
                col: 5,
                ..
            }
        ));
        let d = err.into_diagnostic();
        assert!(d.span.location().ends_with("bad.yml:2:5"), "{d}");
        assert!(d.to_string().contains("b: \u{e9}\u{fffd}"), "{d}");
    }

    #[test]
    fn nul_bytes_are_reported_at_their_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "nul.ini", b"[g]\nh\x001\n");
        let d = read_text(&path).unwrap_err().into_diagnostic();
        assert!(
            d.message
                .ends_with("holds a NUL byte, so it is not a text file"),
            "{d}"
        );
        assert!(d.span.location().ends_with("nul.ini:2:2"), "{d}");
    }

    #[test]
    fn fifos_devices_and_folders_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_text(&fifo).unwrap_err().to_string();
        assert!(err.ends_with("it is a FIFO, not a regular file"), "{err}");
        let err = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(err.contains("a character device"), "{err}");
        let err = read_text(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a folder"), "{err}");
    }

    #[test]
    fn symlink_loops_and_missing_files_carry_the_os_reason() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("loop.yml");
        std::os::unix::fs::symlink(&link, &link).unwrap();
        let err = read_text(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic links"), "{err}");
        let err = read_text(&dir.path().join("none")).unwrap_err();
        assert_eq!(err.reason(), "No such file or directory (os error 2)");
    }

    #[test]
    fn files_over_the_limit_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        File::create(&path)
            .unwrap()
            .set_len(MAX_INPUT_BYTES + 1)
            .unwrap();
        let err = read_text(&path).unwrap_err().to_string();
        assert!(err.contains("larger than the limit of 64 MiB"), "{err}");
    }
}
