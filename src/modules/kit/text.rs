//! What modules that edit text share: regular expressions as Ansible's
//! parameters give them, and where a new line or block goes.

use crate::modules::params::{ParamError, Params};
use crate::pyre::{Flags, MatchError, PatternError, Regex};

/// `r` compiled as Python's `re` does; `multi_line` and `dot_all` as
/// `re.MULTILINE` and `re.DOTALL`. A bad pattern is one line naming what is
/// wrong.
pub(crate) fn regex(
    p: &Params,
    key: &str,
    r: &str,
    multi_line: bool,
    dot_all: bool,
) -> Result<Regex, ParamError> {
    let flags = Flags {
        multi_line,
        dot_all,
        ..Flags::default()
    };
    Regex::new(r, flags).map_err(|e| p.error(key, format!("invalid regular expression '{r}': {e}")))
}

/// Python's `str.splitlines(keepends=True)`: each line with its own ending,
/// which is any of Python's line boundaries (`\r\n`, `\r`, `\x0b`, `\x0c`,
/// `\x1c`-`\x1e`, `\x85`, `\u2028`, `\u2029` besides `\n`).
pub(crate) fn splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '\r' if chars.peek().is_some_and(|(_, n)| *n == '\n') => {
                chars.next();
                i + 2
            }
            '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => i + c.len_utf8(),
            _ => continue,
        };
        lines.push(&text[start..end]);
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
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

    /// blockinfile's reading of a `MULTILINE` pattern, searched in the
    /// whole text: the line after the one its first match ends on
    /// (`insertafter`) or the line it starts on (`insertbefore`), the end
    /// when it does not match. `None` for any other anchor.
    pub(crate) fn search_text(&self, text: &str) -> Result<Option<usize>, MatchError> {
        let (r, after) = match self {
            Anchor::After(r) if r.multi_line() => (r, true),
            Anchor::Before(r) if r.multi_line() => (r, false),
            _ => return Ok(None),
        };
        let lines_before = |at: usize| text[..at].matches('\n').count();
        Ok(Some(match r.find_at(text)? {
            None => splitlines(text).len(),
            Some((_, end)) if after => lines_before(end) + 1,
            Some((start, _)) => lines_before(start),
        }))
    }

    /// After or before the last line the anchor matches; at the end when
    /// none does.
    pub(crate) fn position<S: AsRef<str>>(&self, lines: &[S]) -> Result<usize, MatchError> {
        let last = |r: &Regex| -> Result<Option<usize>, MatchError> {
            for (i, l) in lines.iter().enumerate().rev() {
                if r.is_match(l.as_ref())? {
                    return Ok(Some(i));
                }
            }
            Ok(None)
        };
        Ok(match self {
            Anchor::Bof => 0,
            Anchor::Eof => lines.len(),
            Anchor::After(r) => last(r)?.map_or(lines.len(), |i| i + 1),
            Anchor::Before(r) => last(r)?.unwrap_or(lines.len()),
        })
    }
}

/// Python's `fnmatch.translate`, anchored at both ends: `*` and `?` match
/// any characters (`/` and newlines too), `[seq]` and `[!seq]` one of a
/// set, and a `[` that no `]` closes is itself.
pub(crate) fn fnmatch_regex(glob: &str) -> Result<Regex, PatternError> {
    let chars: Vec<char> = glob.chars().collect();
    let mut re = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => match class_end(&chars, i + 1) {
                Some(end) => {
                    re.push_str(&set_regex(&chars[i + 1..end]));
                    i = end;
                }
                None => re.push_str("\\["),
            },
            c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    re.push('$');
    Regex::new(&re, Flags::default())
}

/// Where the set opened before `start` closes: a `]` right after the
/// opening (or after its `!`) is a member, not the end.
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut j = start;
    if chars.get(j) == Some(&'!') {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    (j..chars.len()).find(|&k| chars[k] == ']')
}

/// A set's members as a regex class; only `-` keeps its meaning (ranges).
fn set_regex(members: &[char]) -> String {
    let (negated, members) = match members.split_first() {
        Some(('!', rest)) => (true, rest),
        _ => (false, members),
    };
    let mut class = String::from(if negated { "[^" } else { "[" });
    for &c in members {
        match c {
            '-' => class.push('-'),
            c if c.is_ascii_punctuation() => {
                class.push('\\');
                class.push(c);
            }
            c => class.push(c),
        }
    }
    class.push(']');
    class
}

#[cfg(test)]
mod tests {
    use super::{fnmatch_regex, splitlines};

    #[test]
    fn splitlines_keeps_each_ending_as_python_does() {
        assert_eq!(
            splitlines("a\nb\r\nc\rd\u{2028}e"),
            ["a\n", "b\r\n", "c\r", "d\u{2028}", "e"]
        );
        assert!(splitlines("").is_empty());
        assert_eq!(splitlines("\n\n"), ["\n", "\n"]);
    }

    #[test]
    fn globs_match_as_python_fnmatch_does() {
        let m = |g: &str, s: &str| fnmatch_regex(g).unwrap().is_match(s).unwrap();
        assert!(m("*.log", "a b.log") && m("*.log", "x\n.log") && !m("*.log", "a.LOG"));
        assert!(m("?.conf", "a.conf") && !m("?.conf", "ab.conf"));
        assert!(m("[!a]x", "bx") && !m("[!a]x", "ax"));
        assert!(m("[a-c]", "b") && m("[]]", "]") && m("[", "[") && m("a[b", "a[b"));
        assert!(m("[&~]", "&") && m("[[]", "[") && !m("x.*", "xy"));
        assert!(fnmatch_regex("[z-a]").is_err());
    }
}
