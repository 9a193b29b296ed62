//! Python's `re` as Ansible content writes it, in one place so every
//! module, filter and test agrees: patterns with look-around and
//! backreferences (through fancy-regex, which hands what the regex crate
//! can do to it), and the replacement templates of `re.sub` and
//! `Match.expand` (`\1`, `\g<name>`, a literal `$`).

use fancy_regex::{Captures as FancyCaptures, RegexBuilder};

/// The groups of one match.
pub type Captures<'t> = FancyCaptures<'t, str>;

/// A pattern that does not compile; the text is fancy-regex's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(String);

impl From<fancy_regex::Error> for PatternError {
    fn from(e: fancy_regex::Error) -> Self {
        let why = |e: &dyn std::fmt::Display| {
            let text = e.to_string();
            let mut chars = text.chars();
            chars
                .next()
                .map(|c| c.to_lowercase().chain(chars).collect())
                .unwrap_or(text)
        };
        PatternError(match &e {
            // Python's wording, which content matches on.
            fancy_regex::Error::ParseError(at, fancy_regex::ParseError::TargetNotRepeatable) => {
                format!("nothing to repeat at position {at}")
            }
            fancy_regex::Error::ParseError(at, kind) => format!("{} (at position {at})", why(kind)),
            other => why(other),
        })
    }
}

/// A pattern that gave up on a text: its backtracking went past the
/// limit, where Python would run for as long as it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the regular expression '{pattern}' cannot finish matching: {why}")]
pub struct MatchError {
    pattern: String,
    why: String,
}

/// Python's `re.IGNORECASE`, `re.MULTILINE` and `re.DOTALL`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub ignore_case: bool,
    pub multi_line: bool,
    pub dot_all: bool,
}

/// A compiled Python pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    re: fancy_regex::Regex,
    /// `re.MULTILINE`, given or inline.
    multi_line: bool,
    /// What the content wrote, for messages.
    source: String,
}

impl Regex {
    pub fn new(pattern: &str, flags: Flags) -> Result<Regex, PatternError> {
        let multi_line = flags.multi_line || leading_flags(pattern).contains('m');
        let re = RegexBuilder::new(&python_escapes(pattern, multi_line))
            .case_insensitive(flags.ignore_case)
            .multi_line(flags.multi_line)
            .dot_matches_new_line(flags.dot_all)
            .build()
            .map_err(PatternError::from)?;
        Ok(Regex {
            re,
            multi_line,
            source: pattern.to_string(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `re.MULTILINE` is set, by the caller or in the pattern.
    pub fn multi_line(&self) -> bool {
        self.multi_line
    }

    /// Where the first match starts and ends.
    pub fn find_at(&self, text: &str) -> Result<Option<(usize, usize)>, MatchError> {
        let found = self.re.find(text).map_err(|e| self.failed(e))?;
        Ok(found.map(|m| (m.start(), m.end())))
    }

    fn failed(&self, e: fancy_regex::Error) -> MatchError {
        MatchError {
            pattern: self.source.clone(),
            why: e.to_string(),
        }
    }

    /// `re.search`: whether it matches anywhere.
    pub fn is_match(&self, text: &str) -> Result<bool, MatchError> {
        self.re.is_match(text).map_err(|e| self.failed(e))
    }

    /// The first match's groups.
    pub fn captures<'t>(&self, text: &'t str) -> Result<Option<Captures<'t>>, MatchError> {
        self.re.captures(text).map_err(|e| self.failed(e))
    }

    /// Every match's groups, left to right.
    pub fn captures_all<'t>(&self, text: &'t str) -> Result<Vec<Captures<'t>>, MatchError> {
        self.re
            .captures_iter(text)
            .collect::<Result<_, _>>()
            .map_err(|e| self.failed(e))
    }

    fn captures_len(&self) -> usize {
        self.re.captures_len()
    }

    fn group_index(&self, name: &str) -> Option<usize> {
        self.re.capture_names().position(|n| n == Some(name))
    }
}

/// What Python reads differently from fancy-regex: `\Z` is the very end
/// (fancy-regex would allow trailing newlines), `\<` and `\>` are the
/// characters themselves (word boundaries there), and outside `MULTILINE`
/// a `$` also matches before a newline that ends the text.
fn python_escapes(pattern: &str, multi_line: bool) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            match c {
                '[' if !in_class => {
                    in_class = true;
                    out.push(c);
                    // A `]` first in a set (after any `^`) is itself.
                    if chars.peek() == Some(&'^') {
                        out.push(chars.next().unwrap_or('^'));
                    }
                    if chars.peek() == Some(&']') {
                        out.push_str("\\]");
                        chars.next();
                    }
                }
                ']' if in_class => {
                    in_class = false;
                    out.push(c);
                }
                '$' if !in_class && !multi_line => out.push_str("(?=\n?\\z)"),
                _ => out.push(c),
            }
            continue;
        }
        match chars.next() {
            Some('Z') => out.push_str("\\z"),
            Some(c @ ('<' | '>')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The flags of a pattern's leading `(?aiLmsux)` group, which Python
/// applies to the whole pattern.
fn leading_flags(pattern: &str) -> &str {
    let Some(rest) = pattern.strip_prefix("(?") else {
        return "";
    };
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    match rest[end..].starts_with(')') {
        true => &rest[..end],
        false => "",
    }
}

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
                            .group_index(&name)
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
    pub fn replace_all(&self, regex: &Regex, text: &str) -> Result<String, MatchError> {
        self.replace_n(regex, text, 0).map(|(out, _)| out)
    }

    /// `re.subn(regex, self, text, count)`: the first `count` matches
    /// replaced (every one for 0), and how many were.
    pub fn replace_n(
        &self,
        regex: &Regex,
        text: &str,
        count: usize,
    ) -> Result<(String, usize), MatchError> {
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut done = 0;
        for caps in regex.captures_all(text)? {
            if count > 0 && done == count {
                break;
            }
            let whole = caps.get(0).expect("group 0 is the match");
            out.push_str(&text[copied..whole.start()]);
            out.push_str(&self.expand(&caps));
            copied = whole.end();
            done += 1;
        }
        out.push_str(&text[copied..]);
        Ok((out, done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `$` as Python reads it: the end, or before a newline that ends
    /// the text; before every newline under MULTILINE; itself in a set.
    #[test]
    fn dollar_matches_before_a_final_newline_as_in_python() {
        assert!(re("line1$").is_match("line1\n").unwrap());
        assert!(!re("line1$").is_match("line1\n\n").unwrap());
        assert!(re("(?m)^a$").is_match("a\nb").unwrap());
        assert!(!re("^a$").is_match("a\nb").unwrap());
        assert!(re("[$]").is_match("$").unwrap() && re("[]$]").is_match("]").unwrap());
        assert!(re(r"\$").is_match("$").unwrap() && !re(r"a\Z").is_match("a\n").unwrap());
        let multi = Flags {
            multi_line: true,
            ..Flags::default()
        };
        assert!(Regex::new("^a$", multi).unwrap().is_match("a\nb").unwrap());
        assert_eq!(sub("o$", "0", "foo\n"), "fo0\n");
    }

    fn re(pattern: &str) -> Regex {
        Regex::new(pattern, Flags::default()).unwrap()
    }

    fn sub(pattern: &str, template: &str, text: &str) -> String {
        let re = re(pattern);
        Replacement::new(template, &re)
            .unwrap()
            .replace_all(&re, text)
            .unwrap()
    }

    fn error(pattern: &str, template: &str) -> ReplacementError {
        Replacement::new(template, &re(pattern)).unwrap_err()
    }

    #[test]
    fn look_around_backreferences_and_named_groups_compile() {
        assert_eq!(sub(r"(?<=v)\d+", "N", "v12 w3"), "vN w3");
        assert_eq!(sub(r"\b(?!eth)\w+\d\b", "X", "eth0 ib0"), "eth0 X");
        assert_eq!(sub(r"(\w)\1", "<\\1>", "aab"), "<a>b");
        assert_eq!(sub(r"(?P<c>\w)(?P=c)", "=", "xxy"), "=y");
        assert_eq!(sub(r"a\Z", "!", "a\na"), "a\n!");
        assert!(!re(r"a\Z").is_match("a\n").unwrap());
        assert_eq!(sub(r"\<b\>", "i", "<b>"), "i");
        let flags = Flags {
            ignore_case: true,
            multi_line: true,
            dot_all: false,
        };
        let re = Regex::new("^x$", flags).unwrap();
        assert_eq!(re.captures_all("X\nx").unwrap().len(), 2);
        let err = Regex::new("^(a", Flags::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "opening parenthesis without closing parenthesis (at position 3)"
        );
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
