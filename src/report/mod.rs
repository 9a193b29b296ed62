//! Reporters: the only place that turns results into text. Modules and the
//! executor never print.

pub mod custom_stats;
pub mod fleet;
pub mod folder;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod keyword_doc;
pub mod merge;
pub mod module_doc;
pub mod progress;
pub mod smoke;

use std::path::PathBuf;

pub use crate::base::printable::printable;
use crate::exec::RunOutcome;
pub use folder::ReportDir;

/// Exit codes, documented in the README and `--help`.
pub const EXIT_OK: u8 = 0;
pub const EXIT_USAGE: u8 = 1;
pub const EXIT_DRIFT: u8 = 2;
pub const EXIT_FAILED: u8 = 4;

/// 2 when check mode found drift (or could not tell), 4 when a host failed
/// or was unreachable, 6 for both. An apply's tasks run in check mode
/// (`check_mode: true`) report drift without changing the code, as
/// ansible-playbook's.
pub fn exit_code(outcome: &RunOutcome, check: bool) -> u8 {
    let drift = check && outcome.reports.iter().any(|r| r.drifted());
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

/// The `--report` files of one run, from its JSON document: `report.json`
/// exactly as `--format json` prints it, `junit.xml` and the HTML view.
pub fn report_files(doc: &serde_json::Value) -> Vec<(&'static str, String)> {
    vec![
        ("report.json", json::text(doc)),
        ("junit.xml", junit::render(doc)),
        ("report.html", html::render(doc)),
    ]
}
