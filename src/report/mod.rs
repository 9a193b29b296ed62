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

use std::borrow::Cow;
use std::fmt::Write;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
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
    code_of(drift, failed)
}

/// The exit code of a run that found drift and/or a failure.
pub fn code_of(drift: bool, failed: bool) -> u8 {
    (if drift { EXIT_DRIFT } else { EXIT_OK }) | (if failed { EXIT_FAILED } else { EXIT_OK })
}

/// Text that may hold bytes from a host, made safe for a terminal: control
/// characters (escape sequences, OSC titles, carriage returns, line breaks
/// inside what is one line) are shown as `\x1b`-style escapes, and format
/// characters (bidi overrides, zero-width spaces) as `\u{202e}`-style
/// ones. `keep_tab` leaves tabs, for diff bodies. The JSON report keeps the
/// text exact.
pub fn printable(text: &str, keep_tab: bool) -> Cow<'_, str> {
    let escaped = |c: char| (c.is_control() && !(keep_tab && c == '\t')) || is_format(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && escaped(c) {
            // Every control character is below U+00A0.
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else if escaped(c) {
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Unicode's format characters, general category Cf (Unicode 16): they are
/// invisible, and the bidi ones reorder what follows, so a host's text
/// could read as something it does not say.
const FORMAT: [std::ops::RangeInclusive<char>; 21] = [
    '\u{00ad}'..='\u{00ad}',
    '\u{0600}'..='\u{0605}',
    '\u{061c}'..='\u{061c}',
    '\u{06dd}'..='\u{06dd}',
    '\u{070f}'..='\u{070f}',
    '\u{0890}'..='\u{0891}',
    '\u{08e2}'..='\u{08e2}',
    '\u{180e}'..='\u{180e}',
    '\u{200b}'..='\u{200f}',
    '\u{202a}'..='\u{202e}',
    '\u{2060}'..='\u{2064}',
    '\u{2066}'..='\u{206f}',
    '\u{feff}'..='\u{feff}',
    '\u{fff9}'..='\u{fffb}',
    '\u{110bd}'..='\u{110bd}',
    '\u{110cd}'..='\u{110cd}',
    '\u{13430}'..='\u{1343f}',
    '\u{1bca0}'..='\u{1bca3}',
    '\u{1d173}'..='\u{1d17a}',
    '\u{e0001}'..='\u{e0001}',
    '\u{e0020}'..='\u{e007f}',
];

fn is_format(c: char) -> bool {
    FORMAT.iter().any(|r| r.contains(&c))
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
    fn format_characters_are_shown_not_sent() {
        // "txt.exe" written backwards behind a right-to-left override.
        let hostile =
            "ok\u{202e}exe.txt\u{202c} \u{200b}x\u{2066}y\u{2069}\u{feff}\u{ad}\u{e0041}\u{1b}";
        assert_eq!(
            printable(hostile, true),
            "ok\\u{202e}exe.txt\\u{202c} \\u{200b}x\\u{2066}y\\u{2069}\\u{feff}\\u{00ad}\\u{e0041}\\x1b"
        );
        // Right-to-left letters are not format characters.
        assert_eq!(printable("שלום عربى", false), "שלום عربى");
    }

    #[test]
    fn the_format_ranges_are_exactly_unicodes_cf() {
        use unicode_general_category::{get_general_category, GeneralCategory};
        let wrong: Vec<String> = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .filter(|&c| is_format(c) != (get_general_category(c) == GeneralCategory::Format))
            .map(|c| format!("U+{:04X}", u32::from(c)))
            .collect();
        assert!(wrong.is_empty(), "{wrong:?}");
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
