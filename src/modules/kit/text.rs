//! What modules that edit text share: regular expressions as Ansible's
//! parameters give them, and where a new line or block goes.

use regex::{Regex, RegexBuilder};

use crate::modules::params::{ParamError, Params};

/// `r` compiled; `multi_line` and `dot_all` as Python's `re.MULTILINE` and
/// `re.DOTALL`. A bad pattern is one line naming what is wrong (the regex
/// crate draws a multi-line picture whose last line says it).
pub(crate) fn regex(
    p: &Params,
    key: &str,
    r: &str,
    multi_line: bool,
    dot_all: bool,
) -> Result<Regex, ParamError> {
    RegexBuilder::new(r)
        .multi_line(multi_line)
        .dot_matches_new_line(dot_all)
        .build()
        .map_err(|e| {
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default();
            let why = why.trim_start_matches("error: ");
            p.error(key, format!("invalid regular expression '{r}': {why}"))
        })
}

/// `insertafter` / `insertbefore`: where new text goes.
pub(crate) enum Anchor {
    Bof,
    Eof,
    After(Regex),
    Before(Regex),
}

impl Anchor {
    /// From the two parameters, at most one of which may be set.
    pub(crate) fn read(
        p: &Params,
        after: Option<&str>,
        before: Option<&str>,
    ) -> Result<Anchor, ParamError> {
        Ok(match (after, before) {
            (Some("EOF") | None, None) => Anchor::Eof,
            (None, Some("BOF")) => Anchor::Bof,
            (Some(r), None) => Anchor::After(regex(p, "insertafter", r, false, false)?),
            (None, Some(r)) => Anchor::Before(regex(p, "insertbefore", r, false, false)?),
            _ => {
                return Err(p.error(
                    "insertbefore",
                    "give only one of 'insertafter' and 'insertbefore'",
                ))
            }
        })
    }

    /// After or before the last line the anchor matches; at the end when
    /// none does.
    pub(crate) fn position<S: AsRef<str>>(&self, lines: &[S]) -> usize {
        let last = |r: &Regex| lines.iter().rposition(|l| r.is_match(l.as_ref()));
        match self {
            Anchor::Bof => 0,
            Anchor::Eof => lines.len(),
            Anchor::After(r) => last(r).map_or(lines.len(), |i| i + 1),
            Anchor::Before(r) => last(r).unwrap_or(lines.len()),
        }
    }
}
