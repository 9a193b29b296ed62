//! The folder reports and retry files are written into, opened once.
//!
//! A folder that is a link, or that belongs to a user other than this
//! process's own or root, lets someone else decide where a file written
//! "into it" lands or who may swap it afterwards: reports hold facts and
//! command output, so nodeprov writes only into folders it can trust. The
//! folder is judged and written through one descriptor, opened without
//! following a link: a parent folder that another user may write could
//! otherwise swap the judged folder for a link between the check and the
//! write.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::ReportError;

/// What the kernel leaves of a file mode when nodeprov makes a report.
const REPORT_MODE: u32 = 0o640;

pub struct ReportDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl ReportDir {
    /// Creates the `--report` folder and opens it; done before the run, so
    /// a folder that cannot be made, or that another user could steer,
    /// stops it before any host is touched.
    pub fn create(dir: &Path) -> Result<ReportDir, ReportError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)
            .map_err(|source| ReportError::Folder {
                dir: dir.to_path_buf(),
                source,
            })?;
        ReportDir::open(dir)
    }

    /// Opens an existing folder, refusing a link and another user's folder.
    pub fn open(dir: &Path) -> Result<ReportDir, ReportError> {
        let unsafe_because = |why: String| ReportError::Unsafe {
            dir: dir.to_path_buf(),
            why,
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(dir, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Linux answers ENOTDIR for a link opened with O_DIRECTORY.
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_symlink());
                return Err(unsafe_because(match link {
                    true => "it is a symbolic link; name the folder it points to".into(),
                    false => "it is not a folder".into(),
                }));
            }
            Err(e) => {
                return Err(ReportError::Open {
                    dir: dir.to_path_buf(),
                    source: e.into(),
                })
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| ReportError::Open {
            dir: dir.to_path_buf(),
            source: e.into(),
        })?;
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me && st.st_uid != 0 {
            return Err(unsafe_because(format!(
                "it belongs to uid {}, who could replace or redirect what nodeprov writes there",
                st.st_uid
            )));
        }
        Ok(ReportDir {
            path: dir.to_path_buf(),
            fd,
        })
    }

    /// Writes a file whole or not at all: a reader (a CI step, an auditor's
    /// collector) never sees half a report, and an old one stays until the
    /// new one is complete. The file is made under a random name with
    /// `O_CREAT|O_EXCL` (so never through a link planted at a name guessed
    /// in advance), mode 0640, then renamed over `name`, which replaces a
    /// link there rather than writing through it.
    pub fn write(&self, name: &str, content: &str) -> Result<(), ReportError> {
        let path = self.path.join(name);
        let fail = |source: std::io::Error| ReportError::Write {
            path: path.clone(),
            source,
        };
        let temp = format!(".{name}.{}.tmp", random_suffix().map_err(fail)?);
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, &temp, flags, Mode::from_raw_mode(REPORT_MODE))
            .map_err(|e| fail(e.into()))?;
        let written = (|| -> std::io::Result<()> {
            // The umask may have taken bits off; the mode is the same for all.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(REPORT_MODE))?;
            let mut file = std::fs::File::from(fd);
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            rustix::fs::renameat(&self.fd, &temp, &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &temp, AtFlags::empty());
        }
        written.map_err(fail)
    }
}

/// 16 hex digits from the kernel's random source.
fn random_suffix() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_report_replaces_the_old_one_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let folder = ReportDir::open(dir.path()).unwrap();
        folder.write("junit.xml", "old").unwrap();
        folder.write("junit.xml", "new").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["junit.xml"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("junit.xml")).unwrap(),
            "new"
        );
        let mode = std::fs::metadata(dir.path().join("junit.xml"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        let gone = dir.path().join("missing");
        let err = ReportDir::open(&gone).err().unwrap();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot open report folder {}: ", gone.display())),
            "{err}"
        );
    }

    /// Once opened, the folder written is the one judged, wherever its
    /// name points afterwards.
    #[test]
    fn the_folder_written_is_the_one_opened_even_when_its_name_is_swapped() {
        let root = tempfile::tempdir().unwrap();
        let judged = root.path().join("out");
        std::fs::create_dir(&judged).unwrap();
        let folder = ReportDir::open(&judged).unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::rename(&judged, root.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &judged).unwrap();
        folder.write("junit.xml", "x").unwrap();
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(root.path().join("moved/junit.xml").is_file());
    }
}
