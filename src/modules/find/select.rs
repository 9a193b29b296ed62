//! Ansible's choice among what find(1) listed: the basename against
//! `patterns` and `excludes`, the depth, the type, `age` and `size`, the
//! order of Ansible's walk, and the result dictionary of each file chosen.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::listing::Entry;
use crate::modules::params::choices;
use crate::pyre::{MatchError, Regex};

/// Which entries a task chooses.
pub(super) struct Choice {
    pub patterns: Vec<Regex>,
    pub excludes: Vec<Regex>,
    pub file_type: Kind,
    pub hidden: bool,
    /// Levels below each path; `None` is unlimited.
    pub depth: Option<u32>,
    /// Seconds: at least this old, or at most this old when negative.
    pub age: Option<(i64, Stamp)>,
    /// Bytes: at least this big, or at most this big when negative.
    pub size: Option<i64>,
}

choices! {
    /// The time `age` is measured from.
    pub(super) enum Stamp { Mtime = "mtime", Atime = "atime", Ctime = "ctime" }
}

choices! {
    /// What `file_type` selects.
    pub(super) enum Kind { File = "file", Directory = "directory", Link = "link", Any = "any" }
}

impl Choice {
    /// Whether Ansible's find returns `e`, listed at `now`.
    pub(super) fn takes(&self, e: &Entry, now: f64) -> Result<bool, MatchError> {
        let name = e.rel.rsplit('/').next().unwrap_or(&e.rel);
        let level = e.rel.matches('/').count() + 1;
        if self.depth.is_some_and(|d| level > d as usize) || (!self.hidden && name.starts_with('.'))
        {
            return Ok(false);
        }
        let base = self.named(name)? && self.aged(e, now);
        Ok(match (self.file_type, e.kind) {
            (Kind::Any, 'f') | (Kind::File, 'f') => {
                base && self.sized(e) && e.content != Some(false)
            }
            (Kind::Any, _) => base,
            (Kind::Directory, 'd') | (Kind::Link, 'l') => base,
            _ => false,
        })
    }

    /// Ansible's `pfilter`: a pattern matches and no exclude does.
    fn named(&self, name: &str) -> Result<bool, MatchError> {
        let any = |set: &[Regex]| -> Result<bool, MatchError> {
            for r in set {
                if r.is_match(name)? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        Ok(any(&self.patterns)? && !any(&self.excludes)?)
    }

    fn aged(&self, e: &Entry, now: f64) -> bool {
        let Some((age, stamp)) = self.age else {
            return true;
        };
        let at = match stamp {
            Stamp::Atime => e.atime,
            Stamp::Mtime => e.mtime,
            Stamp::Ctime => e.ctime,
        };
        let elapsed = now - at;
        let limit = age.unsigned_abs() as f64;
        if age >= 0 {
            elapsed >= limit
        } else {
            elapsed <= limit
        }
    }

    fn sized(&self, e: &Entry) -> bool {
        match self.size {
            None => true,
            Some(s) if s >= 0 => e.size >= s.unsigned_abs(),
            Some(s) => e.size <= s.unsigned_abs(),
        }
    }
}

/// Ansible's `age`: a count with an optional unit (s, m, h, d, w), in seconds.
pub(super) fn seconds(text: &str) -> Option<i64> {
    scaled(
        text,
        &[
            ('s', 1),
            ('m', 60),
            ('h', 3600),
            ('d', 86_400),
            ('w', 604_800),
        ],
    )
}

/// Ansible's `size`: a count with an optional unit (b, k, m, g, t), in bytes.
pub(super) fn bytes(text: &str) -> Option<i64> {
    let units = [
        ('b', 1),
        ('k', 1 << 10),
        ('m', 1 << 20),
        ('g', 1 << 30),
        ('t', 1 << 40),
    ];
    scaled(text, &units)
}

fn scaled(text: &str, units: &[(char, i64)]) -> Option<i64> {
    let text = text.trim().to_ascii_lowercase();
    let (count, factor) = match units.iter().find(|(u, _)| text.ends_with(*u)) {
        Some((_, f)) => (&text[..text.len() - 1], *f),
        None => (text.as_str(), 1),
    };
    let digits = count.strip_prefix('-').unwrap_or(count);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    count.parse::<i64>().ok()?.checked_mul(factor)
}

/// The path as Ansible builds it: `os.path.normpath` of the path walked
/// joined with the name below it.
pub(super) fn path_of(e: &Entry) -> String {
    let joined = format!("{}/{}", e.start, e.rel);
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if joined.starts_with('/') => {}
            p => parts.push(p),
        }
    }
    let rooted = if joined.starts_with('/') { "/" } else { "" };
    format!("{rooted}{}", parts.join("/"))
}

/// Ansible's `statinfo` of one file, with its path.
pub(super) fn stat_of(e: &Entry) -> Value {
    let bit = |b: u32| e.mode & b != 0;
    let name_of = |name: &str, id: u64| match name == id.to_string() {
        true => String::new(),
        false => name.to_string(),
    };
    json!({
        "path": path_of(e),
        "mode": format!("{:04o}", e.mode & 0o7777),
        "isdir": e.kind == 'd',
        "ischr": e.kind == 'c',
        "isblk": e.kind == 'b',
        "isreg": e.kind == 'f',
        "isfifo": e.kind == 'p',
        "islnk": e.kind == 'l',
        "issock": e.kind == 's',
        "uid": e.uid,
        "gid": e.gid,
        "size": e.size,
        "inode": e.inode,
        "dev": e.dev,
        "nlink": e.nlink,
        "atime": e.atime,
        "mtime": e.mtime,
        "ctime": e.ctime,
        "pw_name": name_of(&e.user, e.uid),
        "gr_name": name_of(&e.group, e.gid),
        "rusr": bit(0o400),
        "wusr": bit(0o200),
        "xusr": bit(0o100),
        "rgrp": bit(0o040),
        "wgrp": bit(0o020),
        "xgrp": bit(0o010),
        "roth": bit(0o004),
        "woth": bit(0o002),
        "xoth": bit(0o001),
        "isuid": bit(0o4000),
        "isgid": bit(0o2000),
    })
}

/// The entries in the order Ansible's `os.walk` meets them: each folder's
/// files, then its folders, then what each of those holds, in turn.
/// find(1) lists a folder's content right after the folder instead.
pub(super) fn walk_order(entries: &[Entry]) -> Vec<&Entry> {
    let mut held: HashMap<(&str, &str), Vec<&Entry>> = HashMap::new();
    let mut starts: Vec<&str> = Vec::new();
    for e in entries {
        let folder = e.rel.rsplit_once('/').map_or("", |(f, _)| f);
        held.entry((&e.start, folder)).or_default().push(e);
        if !starts.contains(&e.start.as_str()) {
            starts.push(&e.start);
        }
    }
    let mut out = Vec::with_capacity(entries.len());
    for start in starts {
        visit(&held, start, "", &mut out);
    }
    out
}

fn visit<'a>(
    held: &HashMap<(&str, &str), Vec<&'a Entry>>,
    start: &str,
    folder: &str,
    out: &mut Vec<&'a Entry>,
) {
    let Some(inside) = held.get(&(start, folder)) else {
        return;
    };
    // A link followed to a folder holds entries too, and os.walk counts it
    // among the folders.
    let (folders, files): (Vec<&Entry>, Vec<&Entry>) = inside
        .iter()
        .partition(|e| e.kind == 'd' || held.contains_key(&(start, e.rel.as_str())));
    out.extend(&files);
    out.extend(&folders);
    for f in folders {
        visit(held, start, &f.rel, out);
    }
}

/// A walk error as Python words it (`[Errno 13] Permission denied:
/// '/x'`), for the errors Ansible records; others as find said them.
pub(super) fn python_error(path: &str, why: &str) -> String {
    let errno = match why {
        "Permission denied" => 13,
        "No such file or directory" => 2,
        "Operation not permitted" => 1,
        _ => return why.to_string(),
    };
    format!("[Errno {errno}] {why}: '{path}'")
}
