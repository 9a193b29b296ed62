//! Python's `re` as Ansible content writes it: the replacement templates of
//! `re.sub` and `Match.expand` (`regex_replace`, `replace`, `lineinfile`'s
//! `backrefs`), read once here so every user agrees on `\1`, `\g<name>` and
//! a literal `$`.

use regex::{Captures, Regex};

/// A replacement template that does not parse, worded as Python's `re`
/// words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplacementError {
    #[error("bad escape \\{0} in the replacement")]
    BadEscape(char),
    #[error("bad escape (end of the replacement)")]
    TrailingBackslash,
    #[error("missing < after \\g in the replacement")]
    MissingOpen,
    #[error("missing >, unterminated name after \\g< in the replacement")]
    Unterminated,
    #[error("invalid group reference {0} in the replacement")]
    BadGroup(String),
    #[error("unknown group name '{0}' in the replacement")]
    UnknownName(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group(usize),
}

/// A parsed `re.sub` replacement, its group references checked against the
/// pattern they will read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pieces: Vec<Piece>,
}

impl Replacement {
    /// Python's template syntax: `\1`…`\99` and `\g<1>` / `\g<name>` are
    /// groups, `\0` and three octal digits a character, `\n`, `\t`, `\\` and
    /// the other C escapes their character, any other backslash before a
    /// non-letter itself; `$` has no meaning.
    pub fn new(template: &str, regex: &Regex) -> Result<Replacement, ReplacementError> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut group = |text: &mut String, g: usize| -> Result<(), ReplacementError> {
            if g >= regex.captures_len() {
                return Err(ReplacementError::BadGroup(g.to_string()));
            }
            pieces.push(Piece::Text(std::mem::take(text)));
            pieces.push(Piece::Group(g));
            Ok(())
        };
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                text.push(c);
                continue;
            }
            let Some(e) = chars.next() else {
                return Err(ReplacementError::TrailingBackslash);
            };
            let octal = |c: Option<&char>| c.is_some_and(|c| ('0'..='7').contains(c));
            match e {
                'g' => {
                    if chars.next() != Some('<') {
                        return Err(ReplacementError::MissingOpen);
                    }
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('>') => break,
                            Some(c) => name.push(c),
                            None => return Err(ReplacementError::Unterminated),
                        }
                    }
                    let index = match name.parse::<usize>() {
                        Ok(i) if name.bytes().all(|b| b.is_ascii_digit()) => i,
                        _ => regex
                            .capture_names()
                            .position(|n| n == Some(name.as_str()))
                            .ok_or(ReplacementError::UnknownName(name))?,
                    };
                    group(&mut text, index)?;
                }
                '0' => {
                    let mut code = 0;
                    for _ in 0..2 {
                        match chars.next_if(|c| octal(Some(c))) {
                            Some(d) => code = code * 8 + d.to_digit(8).unwrap_or(0),
                            None => break,
                        }
                    }
                    text.extend(char::from_u32(code));
                }
                d if d.is_ascii_digit() => {
                    let mut digits = d.to_string();
                    if let Some(d2) = chars.next_if(char::is_ascii_digit) {
                        digits.push(d2);
                        if octal(Some(&d)) && octal(Some(&d2)) && octal(chars.peek()) {
                            digits.extend(chars.next());
                            let code = u32::from_str_radix(&digits, 8).unwrap_or(0);
                            if code > 0o377 {
                                return Err(ReplacementError::BadGroup(digits));
                            }
                            text.extend(char::from_u32(code));
                            continue;
                        }
                    }
                    group(&mut text, digits.parse().unwrap_or(usize::MAX))?;
                }
                'a' => text.push('\x07'),
                'b' => text.push('\x08'),
                'f' => text.push('\x0c'),
                'n' => text.push('\n'),
                'r' => text.push('\r'),
                't' => text.push('\t'),
                'v' => text.push('\x0b'),
                '\\' => text.push('\\'),
                e if e.is_ascii_alphabetic() => return Err(ReplacementError::BadEscape(e)),
                e => {
                    text.push('\\');
                    text.push(e);
                }
            }
        }
        pieces.push(Piece::Text(text));
        pieces.retain(|p| p != &Piece::Text(String::new()));
        Ok(Replacement { pieces })
    }

    /// The text for one match; a group that took no part is empty, as in
    /// Python 3.5 on.
    pub fn expand(&self, caps: &Captures) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.as_str(),
                Piece::Group(g) => caps.get(*g).map_or("", |m| m.as_str()),
            })
            .collect()
    }

    /// `re.sub(regex, self, text)`: every match replaced.
    pub fn replace_all(&self, regex: &Regex, text: &str) -> String {
        regex
            .replace_all(text, |caps: &Captures| self.expand(caps))
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(pattern: &str, template: &str, text: &str) -> String {
        let re = Regex::new(pattern).unwrap();
        Replacement::new(template, &re)
            .unwrap()
            .replace_all(&re, text)
    }

    fn error(pattern: &str, template: &str) -> ReplacementError {
        Replacement::new(template, &Regex::new(pattern).unwrap()).unwrap_err()
    }

    #[test]
    fn groups_escapes_and_dollars_read_as_python_reads_them() {
        let v = "OpenSSH_9.2p1 Debian";
        assert_eq!(sub(r"^OpenSSH_([0-9.]+).*$", r"\1", v), "9.2");
        assert_eq!(sub(r"^OpenSSH_([0-9.]+).*$", r"\g<1>", v), "9.2");
        assert_eq!(sub(r"^(?P<n>\w+)_.*$", r"[\g<n>]", v), "[OpenSSH]");
        assert_eq!(sub(r"_", r"$1 ${x} $$", "a_b"), "a$1 ${x} $$b");
        assert_eq!(sub(r"(a)", r"\1\n\t\\\.\101", "a"), "a\n\t\\\\.A");
        assert_eq!(sub(r"(a)|(b)", r"<\2>", "a"), "<>");
        assert_eq!(sub(r"(a)", r"\g<0>\0", "a"), "a\0");
        let ten = "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)";
        assert_eq!(sub(ten, r"\10\1", "abcdefghij"), "ja");
    }

    #[test]
    fn bad_templates_are_refused_with_pythons_reason() {
        assert_eq!(error("(a)", r"\2"), ReplacementError::BadGroup("2".into()));
        assert_eq!(error("a", r"\q"), ReplacementError::BadEscape('q'));
        assert_eq!(error("a", "x\\"), ReplacementError::TrailingBackslash);
        assert_eq!(error("a", r"\g1"), ReplacementError::MissingOpen);
        assert_eq!(error("a", r"\g<x"), ReplacementError::Unterminated);
        assert_eq!(
            error("(?P<a>x)", r"\g<b>"),
            ReplacementError::UnknownName("b".into())
        );
    }
}
