//! Reporters: the only place that turns results into text. Modules and the
//! executor never print.

pub mod fleet;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod keyword_doc;
pub mod merge;
pub mod module_doc;
pub mod progress;
pub mod smoke;

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use crate::base::printable::printable;
use crate::exec::RunOutcome;

/// Exit codes, documented in the README and `--help`.
pub const EXIT_OK: u8 = 0;
pub const EXIT_USAGE: u8 = 1;
pub const EXIT_DRIFT: u8 = 2;
pub const EXIT_FAILED: u8 = 4;

/// 2 when check mode found drift (or could not tell), 4 when a host failed
/// or was unreachable, 6 for both.
pub fn exit_code(outcome: &RunOutcome) -> u8 {
    let drift = outcome.reports.iter().any(|r| r.drifted());
    let failed = outcome.reports.iter().any(|r| r.failed()) || outcome.halted.is_some();
    code_of(drift, failed)
}

/// The exit code of a run that found drift and/or a failure.
pub fn code_of(drift: bool, failed: bool) -> u8 {
    (if drift { EXIT_DRIFT } else { EXIT_OK }) | (if failed { EXIT_FAILED } else { EXIT_OK })
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create report folder {}: {source}", dir.display())]
    Folder {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open report folder {}: {source}", dir.display())]
    Open {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("will not write into {}: {why}", dir.display())]
    Unsafe { dir: PathBuf, why: String },
    #[error("cannot write report {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Creates the `--report` folder; done before the run, so a folder that
/// cannot be made, or that another user could steer, stops it before any
/// host is touched.
pub fn report_dir(dir: &Path) -> Result<(), ReportError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o750)
        .create(dir)
        .map_err(|source| ReportError::Folder {
            dir: dir.to_path_buf(),
            source,
        })?;
    owned_folder(dir)
}

/// A folder that is a link, or that belongs to a user other than this
/// process's own or root, lets someone else decide where a file written
/// "into it" lands or who may swap it afterwards: reports hold facts and
/// command output, so nodeprov writes only into folders it can trust.
fn owned_folder(dir: &Path) -> Result<(), ReportError> {
    let unsafe_because = |why: String| ReportError::Unsafe {
        dir: dir.to_path_buf(),
        why,
    };
    let meta = std::fs::symlink_metadata(dir).map_err(|source| ReportError::Open {
        dir: dir.to_path_buf(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(unsafe_because(
            "it is a symbolic link; name the folder it points to".into(),
        ));
    }
    if !meta.is_dir() {
        return Err(unsafe_because("it is not a folder".into()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(unsafe_because(format!(
            "it belongs to uid {}, who could replace or redirect what nodeprov writes there",
            meta.uid()
        )));
    }
    Ok(())
}

/// The `--report` files of one run, from its JSON document: `report.json`
/// exactly as `--format json` prints it, `junit.xml` and the HTML view.
pub fn report_files(doc: &serde_json::Value) -> Vec<(&'static str, String)> {
    vec![
        ("report.json", json::text(doc)),
        ("junit.xml", junit::render(doc)),
        ("report.html", html::render(doc)),
    ]
}

/// Writes each file whole or not at all: a reader (a CI step, an auditor's
/// collector) never sees half a report, and an old one stays until the new
/// one is complete. The file is made under a random name with
/// `O_CREAT|O_EXCL` (so never through a link planted at a name guessed in
/// advance), mode 0640, then renamed over `name`, which replaces a link
/// there rather than writing through it.
pub fn write_atomically(dir: &Path, name: &str, content: &str) -> Result<(), ReportError> {
    owned_folder(dir)?;
    let path = dir.join(name);
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o640))
            .tempfile_in(dir)?;
        tmp.write_all(content.as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|source| ReportError::Write {
        path: path.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_replaces_the_old_one_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        write_atomically(dir.path(), "junit.xml", "old").unwrap();
        write_atomically(dir.path(), "junit.xml", "new").unwrap();
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
        let err = write_atomically(&gone, "junit.xml", "x").unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot open report folder {}: ", gone.display())),
            "{err}"
        );
    }
}
