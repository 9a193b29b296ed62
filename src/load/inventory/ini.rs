//! Ansible's INI inventory format, parsed as `plugins/inventory/ini.py` does.
//!
//! Two deliberate differences, both about what a user means: a host variable
//! written in quotes (`v="1.10"`) stays a string, where Ansible's shlex pass
//! drops the quotes before typing the value; and a `# comment` after a
//! `[group:vars]` value is dropped instead of becoming part of the value.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use super::{check_var, port_vars, pylit, range, Inventory};
use crate::base::diag::{clip, suggest, Diagnostic, Source, Span};

/// Variable assignments one INI source may hold, as a YAML document holds
/// at most [`crate::load::yaml::MAX_NODES`] values: a 64 MiB file of `a=1` lines
/// would otherwise take gigabytes.
pub const MAX_ASSIGNMENTS: usize = 1_000_000;

pub(super) fn parse(inv: &mut Inventory, source: Arc<Source>) -> Result<(), Diagnostic> {
    parse_within(inv, source, MAX_ASSIGNMENTS)
}

/// [`parse`] with the assignment limit as a parameter, so that tests can
/// reach it without a million-line file.
fn parse_within(
    inv: &mut Inventory,
    source: Arc<Source>,
    max_assignments: usize,
) -> Result<(), Diagnostic> {
    let mut parser = Parser {
        inv,
        source: source.clone(),
        section: Section::Hosts,
        group: super::UNGROUPED,
        pending: HashMap::new(),
        assignments: 0,
        max_assignments,
        header: Regex::new(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:[#;].*)?$").expect("valid regex"),
        group_name: Regex::new(r"^([^:\]\s]+)\s*(?:#.*)?$").expect("valid regex"),
    };
    for (i, raw) in source.text.lines().enumerate() {
        parser.line(i + 1, raw)?;
    }
    parser.check_pending()
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Hosts,
    Vars,
    Children,
}

/// A group named before any `[group]` or `[group:children]` section declared it.
struct Pending {
    line: usize,
    col: usize,
    message: String,
}

struct Parser<'a> {
    inv: &'a mut Inventory,
    source: Arc<Source>,
    section: Section,
    group: usize,
    pending: HashMap<String, Pending>,
    /// Variable assignments so far, against `max_assignments`.
    assignments: usize,
    max_assignments: usize,
    header: Regex,
    group_name: Regex,
}

impl Parser<'_> {
    fn error(&self, line: usize, col: usize, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(&Span::new(self.source.clone(), line, col), message)
    }

    /// Counts `n` more assignments on `line`; an error past the limit.
    fn count(&mut self, n: usize, line: usize, col: usize) -> Result<(), Diagnostic> {
        self.assignments += n;
        if self.assignments <= self.max_assignments {
            return Ok(());
        }
        let message = format!(
            "the inventory has more than {} variable assignments",
            self.max_assignments
        );
        Err(self.error(line, col, message))
    }

    fn line(&mut self, line: usize, raw: &str) -> Result<(), Diagnostic> {
        let text = raw.trim();
        if text.is_empty() || text.starts_with(['#', ';']) {
            return Ok(());
        }
        let col = column(raw, raw.len() - raw.trim_start().len());
        if let Some(caps) = self.header.captures(text) {
            let kind = caps
                .get(2)
                .map(|m| (m.as_str(), col + text[..m.start()].chars().count()));
            return self.section_header(line, col, &caps[1], kind);
        }
        if text.starts_with('[') && !text.contains(']') {
            return Err(self
                .error(
                    line,
                    col,
                    format!("unclosed section header '{}'", clip(text)),
                )
                .with_hint("close it with ']': [group], [group:vars] or [group:children]"));
        }
        if text.starts_with('[') && text.ends_with(']') {
            return Err(self
                .error(
                    line,
                    col,
                    format!("invalid section header '{}'", clip(text)),
                )
                .with_hint(
                    "section names contain no spaces: [group], [group:vars] or [group:children]",
                ));
        }
        match self.section {
            Section::Hosts => self.host_line(line, raw),
            Section::Vars => self.vars_line(line, col, text),
            Section::Children => self.child_line(line, col, text),
        }
    }

    fn section_header(
        &mut self,
        line: usize,
        col: usize,
        name: &str,
        kind: Option<(&str, usize)>,
    ) -> Result<(), Diagnostic> {
        self.section = match kind {
            None | Some(("hosts", _)) => Section::Hosts,
            Some(("vars", _)) => Section::Vars,
            Some(("children", _)) => Section::Children,
            Some((other, kind_col)) => {
                let hint = match suggest(other, ["vars", "children", "hosts"]) {
                    Some(s) => format!("did you mean [{name}:{s}]?"),
                    None => format!("use [{name}], [{name}:vars] or [{name}:children]"),
                };
                let message = format!("section [{name}:{other}] has unknown type '{other}'");
                return Err(self.error(line, kind_col, message).with_hint(hint));
            }
        };
        let declared = self.inv.group_index.contains_key(name);
        if self.section == Section::Vars {
            // Ansible allows `[g:vars]` before `[g]`, but not without it.
            if !declared {
                let message = format!("section [{name}:vars] is for a group that is never defined");
                self.pending
                    .entry(name.to_string())
                    .or_insert(Pending { line, col, message });
            }
        } else {
            self.pending.remove(name);
        }
        self.group = self.inv.group(name);
        Ok(())
    }

    fn host_line(&mut self, line: usize, raw: &str) -> Result<(), Diagnostic> {
        let tokens = split_words(raw).map_err(|(col, msg)| self.error(line, col, msg))?;
        let Some((spec, assignments)) = tokens.split_first() else {
            return Ok(());
        };
        let (names, port) = range::parse_host_spec(&spec.text)
            .and_then(|(names, port)| self.inv.room_for(&names).map(|()| (names, port)))
            .map_err(|msg| self.error(line, spec.col, msg))?;
        self.count(assignments.len(), line, spec.col)?;
        let mut vars = port_vars(port);
        for word in assignments {
            let Some(eq) = word.text.find('=') else {
                return Err(self
                    .error(
                        line,
                        word.col,
                        format!(
                            "expected key=value host variable, got '{}'",
                            clip(&word.text)
                        ),
                    )
                    .with_hint("quote values that contain spaces: key=\"two words\""));
            };
            let (key, value) = (&word.text[..eq], &word.text[eq + 1..]);
            let quoted = word.quoted_from.is_some_and(|q| q > eq);
            let value = typed(value, quoted);
            check_var(key, &value).map_err(|msg| self.error(line, word.col, msg))?;
            vars.insert(key.to_string(), value);
        }
        for name in names {
            self.inv.add_host_to(self.group, &name, vars.clone());
        }
        Ok(())
    }

    fn vars_line(&mut self, line: usize, col: usize, text: &str) -> Result<(), Diagnostic> {
        let assignment = text
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty());
        let Some((key, value)) = assignment else {
            return Err(self
                .error(
                    line,
                    col,
                    format!("expected key=value, got '{}'", clip(text)),
                )
                .with_hint("a [group:vars] section holds one key=value per line"));
        };
        self.count(1, line, col)?;
        let value = strip_comment(value.trim());
        let value = pylit::parse(value).unwrap_or_else(|| value.into());
        check_var(key.trim(), &value).map_err(|msg| self.error(line, col, msg))?;
        self.inv.groups[self.group]
            .vars
            .insert(key.trim().to_string(), value);
        Ok(())
    }

    fn child_line(&mut self, line: usize, col: usize, text: &str) -> Result<(), Diagnostic> {
        let Some(caps) = self.group_name.captures(text) else {
            return Err(self
                .error(line, col, format!("invalid group name '{}'", clip(text)))
                .with_hint("a [group:children] section lists one group name per line"));
        };
        let child = &caps[1];
        if !self.inv.group_index.contains_key(child) {
            let parent = &self.inv.groups[self.group].name;
            let message = format!("[{parent}:children] includes undefined group '{child}'");
            self.pending
                .insert(child.to_string(), Pending { line, col, message });
        }
        let child = self.inv.group(child);
        self.inv
            .add_child(self.group, child)
            .map_err(|msg| self.error(line, col, msg))
    }

    /// Reports the first group that was named but never declared.
    fn check_pending(&self) -> Result<(), Diagnostic> {
        let Some((name, first)) = self.pending.iter().min_by_key(|(_, p)| p.line) else {
            return Ok(());
        };
        let declared = self
            .inv
            .groups
            .iter()
            .map(|g| g.name.as_str())
            .filter(|g| !self.pending.contains_key(*g));
        let hint = match suggest(name, declared) {
            Some(s) => format!("did you mean '{s}'?"),
            None => format!("define it with a [{name}] section"),
        };
        Err(self
            .error(first.line, first.col, &first.message)
            .with_hint(hint))
    }
}

/// A host-line value typed as Ansible's `_parse_value` does, unless quoted.
fn typed(value: &str, quoted: bool) -> Value {
    if quoted {
        return value.into();
    }
    pylit::parse(value).unwrap_or_else(|| value.into())
}

/// Cuts a `#` comment that follows whitespace and sits outside quotes.
fn strip_comment(value: &str) -> &str {
    let mut quote = None;
    let mut prev_space = false;
    for (i, c) in value.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev_space => return value[..i].trim_end(),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    value
}

/// A word of a host line, with its 1-based column and where quoting began.
#[derive(Debug)]
struct Word {
    text: String,
    col: usize,
    quoted_from: Option<usize>,
}

/// Splits a host line as Python's `shlex.split(line, comments=True)` does;
/// an error carries the column of the quote left open.
fn split_words(line: &str) -> Result<Vec<Word>, (usize, String)> {
    let mut words = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            words.extend(current.take());
            continue;
        }
        if c == '#' {
            break;
        }
        let word = current.get_or_insert_with(|| Word {
            text: String::new(),
            col: column(line, i),
            quoted_from: None,
        });
        match c {
            '\'' | '"' => {
                word.quoted_from.get_or_insert(word.text.len());
                loop {
                    match chars.next() {
                        None => return Err((column(line, i), "unterminated quote".into())),
                        Some((_, q)) if q == c => break,
                        Some((_, '\\')) if c == '"' => {
                            match chars.next_if(|&(_, n)| n == '"' || n == '\\') {
                                Some((_, n)) => word.text.push(n),
                                None => word.text.push('\\'),
                            }
                        }
                        Some((_, other)) => word.text.push(other),
                    }
                }
            }
            '\\' => word.text.extend(chars.next().map(|(_, n)| n)),
            _ => word.text.push(c),
        }
    }
    words.extend(current);
    Ok(words)
}

/// The 1-based character column of byte offset `byte` in `line`.
fn column(line: &str, byte: usize) -> usize {
    line[..byte].chars().count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_shlex() {
        let words = split_words(r#"gpu-01 a=1 b="two words" c='x y'z d=e\ f # note"#).unwrap();
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["gpu-01", "a=1", "b=two words", "c=x yz", "d=e f"]);
        let cols: Vec<usize> = words.iter().map(|w| w.col).collect();
        assert_eq!(cols, [1, 8, 12, 26, 35]);
        assert_eq!(words[1].quoted_from, None);
        assert_eq!(words[2].quoted_from, Some(2));
    }

    #[test]
    fn open_quote_is_reported_at_the_quote() {
        let err = split_words("h a='x").unwrap_err();
        assert_eq!(err, (5, "unterminated quote".to_string()));
    }

    #[test]
    fn comments_after_vars_values_are_dropped_outside_quotes() {
        assert_eq!(strip_comment("deploy  # user"), "deploy");
        assert_eq!(strip_comment("'a # b'"), "'a # b'");
        assert_eq!(strip_comment("#fff"), "#fff");
    }

    #[test]
    fn quoted_host_values_stay_strings() {
        assert_eq!(typed("22", false), Value::from(22));
        assert_eq!(typed("22", true), Value::from("22"));
        assert_eq!(typed("True", false), Value::from(true));
        assert_eq!(typed("10.0.0.1", false), Value::from("10.0.0.1"));
    }

    #[test]
    fn assignments_past_the_limit_are_an_error_at_their_line() {
        let text = "[all:vars]\na=1\nb=2\n[g]\nh1 c=3 d=4\n";
        let source = |t: &str| {
            Arc::new(Source {
                name: "v.ini".into(),
                text: t.into(),
            })
        };
        let mut inv = Inventory::empty();
        assert!(parse_within(&mut inv, source(text), 4).is_ok());
        let mut inv = Inventory::empty();
        let err = parse_within(&mut inv, source(text), 3).unwrap_err();
        assert_eq!(
            err.message,
            "the inventory has more than 3 variable assignments"
        );
        assert_eq!(err.span.location(), "v.ini:5:1");
        let mut inv = Inventory::empty();
        let err = parse_within(&mut inv, source(text), 1).unwrap_err();
        assert_eq!(err.span.location(), "v.ini:3:1");
    }
}
