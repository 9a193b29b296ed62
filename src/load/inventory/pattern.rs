//! Ansible host patterns: `gpu:&rack1:!gpu-03`, globs, `~regex`, ranges,
//! subscripts and `@retry-file`s.
//!
//! Differences from Ansible, each to catch mistakes early: a plain name that
//! matches nothing is an error (Ansible warns), and results are always in
//! inventory order. `gpu-0[1:4]` is a host range here; Ansible reads it as a
//! subscript of `gpu-0`, which this module falls back to only when the range
//! matches no host (so `gpu[0:2]` still takes the first three hosts of `gpu`).

use std::collections::BTreeSet;
use std::path::Path;

use regex::Regex;

use super::{range, Inventory};
use crate::base::diag::suggest;

/// Stands for the implicit `localhost` that Ansible adds when the inventory
/// lacks one; it sorts after every real host.
const IMPLICIT_LOCALHOST: usize = usize::MAX;

type HostSet = BTreeSet<usize>;

#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("empty host pattern")]
    Empty,
    #[error("no host or group matches '{name}'{}", did_you_mean(.suggestion))]
    NoMatch {
        name: String,
        suggestion: Option<String>,
    },
    #[error("invalid regular expression in host pattern '~{pattern}': {reason}")]
    BadRegex { pattern: String, reason: String },
    #[error("invalid host range in pattern '{pattern}': {reason}")]
    BadRange { pattern: String, reason: String },
    #[error("subscript [{index}] is out of range: '{pattern}' matches {count} hosts")]
    OutOfRange {
        pattern: String,
        index: i64,
        count: usize,
    },
    #[error("host list file: {0}")]
    File(#[from] crate::base::input::ReadError),
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!("; did you mean '{s}'?"))
        .unwrap_or_default()
}

/// `[3]` or `[1:]`/`[1:3]` at the end of a pattern: Ansible's subscripts.
#[derive(Clone, Copy)]
enum Subscript {
    Index(i64),
    Slice(usize, Option<usize>),
}

impl Inventory {
    /// Hosts matching an Ansible pattern, in inventory order, deduplicated.
    /// As in Ansible, intersections (`&x`) and exclusions (`!x`) apply after
    /// every plain term, and a pattern of only those starts from `all`.
    pub fn select(&self, pattern: &str) -> Result<Vec<String>, PatternError> {
        let terms = split_terms(pattern);
        if terms.is_empty() {
            return Err(PatternError::Empty);
        }
        let plain: Vec<&str> = terms
            .iter()
            .copied()
            .filter(|t| !t.starts_with(['&', '!']))
            .collect();
        let mut hosts = HostSet::new();
        if plain.is_empty() {
            hosts.extend(0..self.hosts.len());
        }
        for term in plain {
            hosts.extend(self.match_term(term)?);
        }
        for term in &terms {
            if let Some(term) = term.strip_prefix('&') {
                let other = self.match_term(term)?;
                hosts.retain(|h| other.contains(h));
            } else if let Some(term) = term.strip_prefix('!') {
                let other = self.match_term(term)?;
                hosts.retain(|h| !other.contains(h));
            }
        }
        Ok(hosts.into_iter().map(|h| self.host_name(h)).collect())
    }

    fn host_name(&self, h: usize) -> String {
        match h {
            IMPLICIT_LOCALHOST => "localhost".to_string(),
            _ => self.hosts[h].name.clone(),
        }
    }

    fn match_term(&self, term: &str) -> Result<HostSet, PatternError> {
        if let Some(path) = term.strip_prefix('@') {
            return self.match_file(path);
        }
        if let Some(re) = term.strip_prefix('~') {
            return self.match_regex(re);
        }
        let subscript = split_subscript(term);
        if let Some((base, sub @ (Subscript::Index(_) | Subscript::Slice(_, None)))) = subscript {
            return self.subscript(base, sub, term);
        }
        if range::has_range(term) {
            return match (self.match_range(term)?, subscript) {
                (Some(found), _) => Ok(found),
                (None, Some((base, sub))) if self.match_term(base).is_ok() => {
                    self.subscript(base, sub, term)
                }
                (None, _) => Err(self.no_match(term)),
            };
        }
        match self.match_name(term)? {
            Some(found) => Ok(found),
            None if term == "localhost" => Ok(HostSet::from([IMPLICIT_LOCALHOST])),
            None => Err(self.no_match(term)),
        }
    }

    /// A group's hosts, or hosts by name; globs match both groups and hosts,
    /// a plain name prefers the group of that name, as in Ansible. `None`
    /// when a plain name names nothing (an empty group is still something).
    fn match_name(&self, name: &str) -> Result<Option<HostSet>, PatternError> {
        if !is_glob(name) {
            if let Some(&g) = self.group_index.get(name) {
                return Ok(Some(self.members(g)));
            }
            return Ok(self.host_index.get(name).map(|&h| HostSet::from([h])));
        }
        let re = glob_regex(name).map_err(|reason| PatternError::BadRegex {
            pattern: name.to_string(),
            reason,
        })?;
        Ok(Some(self.matching(&re)))
    }

    fn matching(&self, re: &Regex) -> HostSet {
        let mut found = HostSet::new();
        for (g, group) in self.groups.iter().enumerate() {
            if re.is_match(&group.name) {
                found.extend(self.members(g));
            }
        }
        for (h, host) in self.hosts.iter().enumerate() {
            if re.is_match(&host.name) {
                found.insert(h);
            }
        }
        found
    }

    /// Python's `re.match` semantics, which Ansible uses: anchored at the start only.
    fn match_regex(&self, re: &str) -> Result<HostSet, PatternError> {
        let compiled = Regex::new(&format!("^(?:{re})")).map_err(|e| PatternError::BadRegex {
            pattern: re.to_string(),
            reason: e.to_string(),
        })?;
        Ok(self.matching(&compiled))
    }

    /// The hosts the expanded names stand for; `None` when no name is known.
    fn match_range(&self, term: &str) -> Result<Option<HostSet>, PatternError> {
        let names = range::expand(term).map_err(|reason| PatternError::BadRange {
            pattern: term.to_string(),
            reason,
        })?;
        let mut found = None;
        for name in names {
            if let Some(hosts) = self.match_name(&name)? {
                found.get_or_insert_with(HostSet::new).extend(hosts);
            }
        }
        Ok(found)
    }

    /// A retry file: one pattern per line, all of them together.
    fn match_file(&self, path: &str) -> Result<HostSet, PatternError> {
        let text = crate::base::input::read_text(Path::new(path))?;
        let mut found = HostSet::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            found.extend(self.match_term(line)?);
        }
        Ok(found)
    }

    fn subscript(&self, base: &str, sub: Subscript, term: &str) -> Result<HostSet, PatternError> {
        let hosts: Vec<usize> = self.match_term(base)?.into_iter().collect();
        // As Ansible: a subscript of an empty group is empty, and only one
        // past the end of a group that has hosts is an error.
        if hosts.is_empty() {
            return Ok(HostSet::new());
        }
        let count = hosts.len();
        let out_of_range = |index: i64| PatternError::OutOfRange {
            pattern: term.to_string(),
            index,
            count,
        };
        match sub {
            Subscript::Index(i) => {
                let at = if i < 0 { count as i64 + i } else { i };
                let host = usize::try_from(at).ok().and_then(|at| hosts.get(at));
                host.map(|&h| HostSet::from([h]))
                    .ok_or_else(|| out_of_range(i))
            }
            Subscript::Slice(start, end) => {
                if start >= count {
                    return Err(out_of_range(start as i64));
                }
                let end = end.map_or(count, |e| (e + 1).min(count));
                Ok(hosts[start..end.max(start)].iter().copied().collect())
            }
        }
    }

    fn no_match(&self, name: &str) -> PatternError {
        let groups = self.groups.iter().map(|g| g.name.as_str());
        let hosts = self.hosts.iter().map(|h| h.name.as_str());
        PatternError::NoMatch {
            name: name.to_string(),
            suggestion: suggest(name, groups.chain(hosts)).map(str::to_string),
        }
    }
}

/// Splits on commas if there are any, else on colons outside `[...]`,
/// as Ansible's `split_host_pattern` does.
fn split_terms(pattern: &str) -> Vec<&str> {
    let terms: Vec<&str> = if pattern.contains(',') {
        pattern.split(',').collect()
    } else {
        let mut depth = 0usize;
        pattern
            .split(|c| {
                match c {
                    '[' => depth += 1,
                    ']' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                c == ':' && depth == 0
            })
            .collect()
    };
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn split_subscript(term: &str) -> Option<(&str, Subscript)> {
    let body = term.strip_suffix(']')?;
    let open = body.rfind('[')?;
    let (base, inner) = (&body[..open], &body[open + 1..]);
    if base.is_empty() {
        return None;
    }
    let sub = match inner.split_once(':') {
        None => Subscript::Index(inner.parse().ok()?),
        Some((start, "")) => Subscript::Slice(start.parse().ok()?, None),
        Some((start, end)) => Subscript::Slice(start.parse().ok()?, Some(end.parse().ok()?)),
    };
    Some((base, sub))
}

fn is_glob(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// Python's `fnmatch.translate`: `*`, `?`, `[seq]` and `[!seq]`.
fn glob_regex(glob: &str) -> Result<Regex, String> {
    let mut re = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let class: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let class = match class.strip_prefix('!') {
                    Some(rest) => format!("^{rest}"),
                    None => class,
                };
                re.push('[');
                re.push_str(&class.replace('\\', "\\\\"));
                re.push(']');
            }
            _ => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).map_err(|e| e.to_string())
}
