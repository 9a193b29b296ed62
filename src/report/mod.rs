//! Reporters: the only place that turns results into text. Modules and the
//! executor never print.

pub mod fleet;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod merge;
pub mod progress;

use std::borrow::Cow;
use std::fmt::Write;
use std::io::Write as _;
use std::path::{Path, PathBuf};

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
    (if drift { EXIT_DRIFT } else { EXIT_OK }) | (if failed { EXIT_FAILED } else { EXIT_OK })
}

/// Text that may hold bytes from a host, made safe for a terminal: control
/// characters (escape sequences, OSC titles, carriage returns, line breaks
/// inside what is one line) are shown as `\x1b`-style escapes. `keep_tab`
/// leaves tabs, for diff bodies. The JSON report keeps the text exact.
pub fn printable(text: &str, keep_tab: bool) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && !(keep_tab && c == '\t');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            // Every control character is below U+00A0.
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create report folder {}: {source}", dir.display())]
    Folder {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write report {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Creates the `--report` folder; done before the run, so a folder that
/// cannot be made stops it before any host is touched.
pub fn report_dir(dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Folder {
        dir: dir.to_path_buf(),
        source,
    })
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
/// one is complete.
pub fn write_atomically(dir: &Path, name: &str, content: &str) -> Result<(), ReportError> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(content.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    written.map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        ReportError::Write { path, source }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        let hostile = "a\x1b]0;owned\x07b\x1b[2Jc\rd\te\u{9b}f\ng é";
        assert_eq!(
            printable(hostile, false),
            "a\\x1b]0;owned\\x07b\\x1b[2Jc\\x0dd\\x09e\\x9bf\\x0ag é"
        );
        assert_eq!(printable("d\te", true), "d\te");
        assert!(matches!(printable("plain é", false), Cow::Borrowed(_)));
    }

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
        let gone = dir.path().join("missing");
        let err = write_atomically(&gone, "junit.xml", "x").unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "cannot write report {}/junit.xml: ",
                gone.display()
            )),
            "{err}"
        );
    }
}
