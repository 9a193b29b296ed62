//! Reporters: the only place that turns results into text. Modules and the
//! executor never print.

pub mod html;
pub mod human;
pub mod json;
pub mod progress;

use std::borrow::Cow;
use std::fmt::Write;

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
}
