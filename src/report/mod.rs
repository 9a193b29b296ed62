//! Reporters: the only place that turns results into text. Modules and the
//! executor never print.

pub mod human;
pub mod json;
pub mod progress;

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
