//! `find`: files under folders of the host chosen as Ansible's find
//! chooses them, registered as `files` (Ansible's stat dictionary of each,
//! with its path), `matched`, `examined`, `skipped_paths` and `msg`. One find(1) per task lists what is
//! there (`listing.rs`), in the first probe; the choice is made on the
//! controller (`select.rs`). Read after every earlier change of the run.
//!
//! **`find`** sends one find(1) per task in the probe, which lists every
//! entry within the depth (and one level below it, which Ansible's walk
//! counts in `examined`) with its stat fields as NUL-separated records, so
//! any name, newlines and quotes included, comes back whole. Which of them
//! the task returns is decided on the controller as Ansible's find decides:
//! patterns and excludes on the basename, names starting with a dot left out
//! without `hidden` (folders so named are still searched, as in Ansible),
//! `size` on regular files only, in the order Ansible's walk meets them (a
//! folder's files, then its folders). With `follow`, a link is still a link
//! (as Ansible's lstat sees it), but its other fields are its target's.
//! `contains` runs grep on the host inside the same find, so its pattern is
//! PCRE (Python's syntax for what roles use). Names that are not UTF-8 come
//! back with replacement characters.
//!
//! # Example
//!
//! ```yaml
//! - name: Find PyTorch core dumps older than a week in the scratch space
//!   find:
//!     paths: [/scratch, /var/crash]
//!     patterns: "core.*"
//!     age: 1w
//!     recurse: true
//!   register: old_cores
//! - name: List the CUDA toolkits installed side by side
//!   find:
//!     paths: /usr/local
//!     patterns: "cuda-*"
//!     file_type: directory
//!   register: toolkits
//! ```

mod listing;
mod select;

use crate::pyre::Regex;
use serde_json::{json, Map, Value};

use listing::{Contains, Found, Walk};
use select::{Choice, Kind, Stamp};

use crate::modules::kit::fact::Fact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::kit::text;
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const FIND: ModuleSpec = ModuleSpec {
    name: "find",
    source: file!(),
    aliases: &["ansible.builtin.find"],
    params: &FindArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct FindArgs {
        /// the folders to search, absolute (one, a list or a comma-separated string)
        #[aliases("path", "name")]
        paths: Vec<String> [required],
        /// shell globs, case-sensitive as Python's fnmatch (regular expressions with `use_regex`), a name must match; all names without
        #[aliases("pattern")]
        patterns: Vec<String>,
        /// globs or regular expressions that drop a name the patterns matched
        #[aliases("exclude")]
        excludes: Vec<String>,
        /// a regular expression a regular file's content must match, at the start of a line (with `file_type: file` only, as in Ansible)
        contains: Option<String>,
        /// search `contains` anywhere in the whole file instead
        read_whole_file: bool = false,
        /// which kind of entry to return
        file_type: Kind = Kind::File,
        /// search below the folders too
        recurse: bool = false,
        /// with `recurse`, how many levels to descend (0: all)
        depth: Option<i64>,
        /// return names starting with a dot too
        hidden: bool = false,
        /// descend into linked folders (every entry is then read through its link)
        follow: bool = false,
        /// `patterns` and `excludes` are Python regular expressions matched at a name's start
        use_regex: bool = false,
        /// at least this old (`2d`, `1w`; units s, m, h, d, w), at most when negative
        age: Option<String>,
        /// which time `age` measures
        age_stamp: Stamp = Stamp::Mtime,
        /// at least this big (`10m`; units b, k, m, g, t), at most when negative
        size: Option<String>,
        /// only false: no checksums are computed
        get_checksum: bool = false,
        /// at most this many files, the first found
        limit: Option<i64>,
    }
}

struct Find {
    walk: Walk,
    choice: Choice,
    /// At most this many files.
    limit: Option<usize>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FindArgs::read(p)?;
    if let Some(rel) = a.paths.iter().find(|d| !d.starts_with('/')) {
        return Err(p.unsupported(
            "paths",
            format!("a relative path ('{rel}') is not supported by nodeprov: give it from /"),
        ));
    }
    if a.get_checksum {
        return Err(p.unsupported("get_checksum", "get_checksum is not supported by nodeprov"));
    }
    let limit = match a.limit {
        Some(n) if n <= 0 => {
            let why = format!("limit cannot be {n} (use None for unlimited)");
            return Err(p.error("limit", why));
        }
        n => n.map(|n| n as usize),
    };
    // Ansible's walk stops after the top level without `recurse`; with
    // `depth` it still lists the level below the last (for `examined`).
    let depth = match (a.recurse, a.depth) {
        (false, _) => Some(1),
        (true, None | Some(0)) => None,
        (true, Some(d)) => {
            Some(u32::try_from(d).map_err(|_| p.error("depth", "depth must be 0 or more"))?)
        }
    };
    let choice = choice_of(p, &a, depth)?;
    // As Ansible: content is searched for regular files only.
    let contains = a.contains.filter(|_| a.file_type == Kind::File);
    let walk = Walk {
        paths: a.paths,
        depth: depth.map(|d| if a.recurse { d + 1 } else { d }),
        follow: a.follow,
        hidden: a.hidden,
        contains: contains.map(|pattern| Contains {
            pattern,
            whole_file: a.read_whole_file,
        }),
    };
    Ok(Box::new(Find {
        walk,
        choice,
        limit,
    }))
}

fn choice_of(p: &Params, a: &FindArgs, depth: Option<u32>) -> Result<Choice, ParamError> {
    let age = match &a.age {
        Some(t) => Some((
            select::seconds(t)
                .ok_or_else(|| p.error("age", format!("failed to process age '{t}'")))?,
            a.age_stamp,
        )),
        None => None,
    };
    let size = match &a.size {
        Some(t) => Some(
            select::bytes(t)
                .ok_or_else(|| p.error("size", format!("failed to process size '{t}'")))?,
        ),
        None => None,
    };
    // As Ansible: no patterns is every name, whatever `use_regex` says.
    let every = ["*".to_string()];
    let (patterns, regex) = match a.patterns.is_empty() {
        true => (&every[..], false),
        false => (&a.patterns[..], a.use_regex),
    };
    Ok(Choice {
        patterns: names(p, "patterns", patterns, regex)?,
        excludes: names(p, "excludes", &a.excludes, a.use_regex)?,
        file_type: a.file_type,
        hidden: a.hidden,
        depth,
        age,
        size,
    })
}

/// Globs as Python's fnmatch reads them, or regular expressions matched
/// at the start of a name as Python's `re.match`.
fn names(p: &Params, key: &str, list: &[String], regex: bool) -> Result<Vec<Regex>, ParamError> {
    list.iter()
        .map(|n| match regex {
            true => {
                text::regex(p, key, n, false, false)?;
                text::regex(p, key, &format!("^(?:{n})"), false, false)
            }
            false => {
                text::fnmatch_regex(n).map_err(|_| p.error(key, format!("invalid pattern '{n}'")))
            }
        })
        .collect()
}

impl Module for Find {
    fn probes(&self) -> Vec<Probe> {
        vec![Found::probe(&self.walk)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let listing = Found::read(facts, &self.walk)?;
        let mut files = Vec::new();
        for e in select::walk_order(&listing.entries) {
            if self.choice.takes(e, listing.now)? {
                files.push(select::stat_of(e));
            }
        }
        let mut msg = "All paths examined";
        if let Some(n) = self.limit.filter(|n| files.len() >= *n) {
            files.truncate(n);
            msg = "Limit of matches reached";
        }
        let skipped: Map<String, Value> = listing
            .skipped
            .iter()
            .map(|(path, why)| (path.clone(), json!(select::python_error(path, why))))
            .collect();
        let mut plan = Plan::noop();
        plan.notes.extend(
            listing
                .skipped
                .iter()
                .map(|(path, why)| format!("skipped {path}: {why}")),
        );
        if !skipped.is_empty() {
            msg = "Not all paths examined, check warnings for details";
        }
        for (k, v) in [
            ("matched", json!(files.len())),
            ("files", Value::Array(files)),
            ("examined", json!(listing.entries.len())),
            ("skipped_paths", Value::Object(skipped)),
            ("msg", json!(msg)),
        ] {
            plan.returns.insert(k.into(), v);
        }
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    listing::fact_samples(rt);
}

#[cfg(test)]
mod tests;
