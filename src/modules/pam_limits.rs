//! `pam_limits`: one `domain type item value` line of limits.conf added or
//! replaced, comments and other lines untouched (`* - memlock unlimited`
//! for RDMA and GPU peer memory).
//!
//! **`pam_limits`** keeps one `domain type item value` line in `dest` (GPU and
//! RDMA nodes need `* - memlock unlimited`): the first line for that domain,
//! type and item is rewritten only when its value differs (spacing and a
//! trailing comment of a line with the right value are kept), later duplicates
//! go, and a missing line is appended tab-separated with `comment` after a `#`.
//! `use_max`/`use_min` keep a larger or smaller existing value (`unlimited`,
//! `infinity` and `-1` count as the largest). A `value` that is not a number,
//! `unlimited` or `infinity`, and a `domain` with spaces or `#`, are refused.
//!
//! # Example
//!
//! ```yaml
//! - name: Let every job lock unlimited memory, for RDMA and GPU peer memory
//!   pam_limits:
//!     domain: "*"
//!     limit_type: "-"
//!     limit_item: memlock
//!     value: unlimited
//!     comment: GPUDirect RDMA
//! - name: Raise the open files limit of the slurm account
//!   pam_limits:
//!     domain: slurm
//!     limit_type: soft
//!     limit_item: nofile
//!     value: "131072"
//!     use_max: true
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, ParamError, Params};
use crate::remote::probe::Probe;

pub const PAM_LIMITS: ModuleSpec = ModuleSpec {
    name: "pam_limits",
    source: file!(),
    aliases: &["community.general.pam_limits"],
    params: &LimitsArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum LimitType {
        Hard = "hard",
        Soft = "soft",
        Both = "-",
    }
}

choices! {
    enum LimitItem {
        Core = "core",
        Data = "data",
        Fsize = "fsize",
        Memlock = "memlock",
        Nofile = "nofile",
        Rss = "rss",
        Stack = "stack",
        Cpu = "cpu",
        Nproc = "nproc",
        As = "as",
        Maxlogins = "maxlogins",
        Maxsyslogins = "maxsyslogins",
        Priority = "priority",
        Locks = "locks",
        Sigpending = "sigpending",
        Msgqueue = "msgqueue",
        Nice = "nice",
        Rtprio = "rtprio",
        Chroot = "chroot",
    }
}

module_params! {
    struct LimitsArgs {
        /// who the limit is for: a user, `@group`, `*`
        domain: String,
        /// hard, soft or both (`-`)
        limit_type: LimitType,
        /// the resource limited
        limit_item: LimitItem,
        /// a number, `unlimited` or `infinity`
        value: String,
        /// the limits file (default /etc/security/limits.conf)
        dest: String = "/etc/security/limits.conf".into(),
        /// keep a larger existing value
        use_max: bool = false,
        /// keep a smaller existing value
        use_min: bool = false,
        /// a comment written after the value
        comment: Option<String>,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// create a missing file
        create: bool = true,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Keep {
    Given,
    Max,
    Min,
}

struct PamLimits {
    domain: String,
    kind: &'static str,
    item: &'static str,
    value: String,
    dest: String,
    keep: Keep,
    comment: Option<String>,
    create: bool,
    /// With `backup`.
    opts: WriteOpts,
}

fn unlimited(v: &str) -> bool {
    matches!(v, "unlimited" | "infinity" | "-1")
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = LimitsArgs::read(p)?;
    let one_word = |s: &str| !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '#');
    if !one_word(&a.domain) {
        return Err(p.error(
            "domain",
            format!(
                "'{}' is not a limits.conf domain (one word, no '#')",
                a.domain
            ),
        ));
    }
    let numeric = a.value.strip_prefix('-').unwrap_or(&a.value);
    if !unlimited(&a.value) && (numeric.is_empty() || !numeric.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(p.error(
            "value",
            format!("'{}' is not a number, 'unlimited' or 'infinity'", a.value),
        ));
    }
    if let Some(comment) = &a.comment {
        p.one_line("comment", comment)?;
    }
    let keep = match (a.use_max, a.use_min) {
        (true, true) => return Err(p.error("use_min", "give only one of 'use_max' and 'use_min'")),
        (true, false) => Keep::Max,
        (false, true) => Keep::Min,
        (false, false) => Keep::Given,
    };
    p.destructive_path("dest", &a.dest)?;
    Ok(Box::new(PamLimits {
        domain: a.domain,
        kind: a.limit_type.name(),
        item: a.limit_item.name(),
        value: a.value,
        dest: a.dest,
        keep,
        comment: a.comment,
        create: a.create,
        opts: WriteOpts::default().with_backup(a.backup),
    }))
}

impl Module for PamLimits {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.dest)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.dest)?;
        let missing = match self.create {
            true => WhenMissing::Create,
            false => WhenMissing::NeedsCreate,
        };
        let Some(text) = files::text_to_edit(&self.dest, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        let (new, found) = self.edit(&text);
        if new == text {
            return Ok(Plan::noop());
        }
        let mut plan = files::plan_content(&self.dest, current.as_ref(), &new, &self.opts, true)?;
        let subject = format!("{} {} {}", self.domain, self.kind, self.item);
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.dest) {
            c.subject = format!("{}: {subject}", self.dest);
            c.before = Some(found.map_or("no line".into(), |(_, v)| v.to_string()));
            c.after = Some(self.wanted(found.map(|(_, v)| v)));
            if let Some((n, _)) = found {
                c.evidence = Some(format!("{}:{n}", self.dest));
            }
        }
        Ok(plan)
    }
}

impl PamLimits {
    /// The value of a limits.conf line for this domain, type and item.
    fn value_of<'t>(&self, line: &'t str) -> Option<&'t str> {
        let code = line.split('#').next().unwrap_or_default();
        match code.split_whitespace().collect::<Vec<_>>()[..] {
            [d, t, i, v] if d == self.domain && t == self.kind && i == self.item => Some(v),
            _ => None,
        }
    }

    /// The value to hold, given the one there (`use_max`/`use_min` keep a
    /// larger or smaller one, unlimited counting as the largest).
    fn wanted(&self, have: Option<&str>) -> String {
        let Some(have) = have else {
            return self.value.clone();
        };
        let num = |v: &str| v.parse::<u64>().ok();
        match (self.keep, num(have), num(&self.value)) {
            (Keep::Max, Some(h), Some(w)) => h.max(w).to_string(),
            (Keep::Min, Some(h), Some(w)) => h.min(w).to_string(),
            (Keep::Max, _, _) if unlimited(have) => have.to_string(),
            (Keep::Min, _, _) if unlimited(&self.value) => have.to_string(),
            _ => self.value.clone(),
        }
    }

    fn line(&self, value: &str) -> String {
        let comment = self
            .comment
            .as_ref()
            .map_or(String::new(), |c| format!("\t#{c}"));
        format!(
            "{}\t{}\t{}\t{value}{comment}",
            self.domain, self.kind, self.item
        )
    }

    /// The file's text with exactly one line for the limit (the first one
    /// found, rewritten only when its value differs; later duplicates go),
    /// and the 1-based line number and value found; `text` itself when it
    /// already complies.
    fn edit<'t>(&self, text: &'t str) -> (String, Option<(usize, &'t str)>) {
        let found = text
            .lines()
            .enumerate()
            .find_map(|(i, l)| self.value_of(l).map(|v| (i + 1, v)));
        let want = self.wanted(found.map(|(_, v)| v));
        let mut out: Vec<String> = Vec::new();
        let mut placed = false;
        for line in text.lines() {
            match self.value_of(line) {
                None => out.push(line.to_string()),
                Some(_) if placed => {}
                Some(v) => {
                    placed = true;
                    out.push(if v == want {
                        line.to_string()
                    } else {
                        self.line(&want)
                    });
                }
            }
        }
        if !placed {
            out.push(self.line(&want));
        }
        if out.iter().map(String::as_str).eq(text.lines()) {
            return (text.to_string(), found);
        }
        (out.iter().map(|l| format!("{l}\n")).collect(), found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
        unquoted_steps,
    };
    use serde_json::json;

    const DEST: &str = "/etc/security/limits.conf";

    fn facts_with(content: Option<&str>) -> Facts {
        file_facts(DEST, content, 0o644)
    }

    fn content(facts: &Facts) -> String {
        file_content(facts, DEST)
    }

    fn memlock(extra: serde_json::Value) -> Box<dyn Module> {
        let mut p = json!({"domain": "*", "limit_type": "-", "limit_item": "memlock", "value": "unlimited"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        build_test(&PAM_LIMITS, p).unwrap()
    }

    #[test]
    fn replaces_the_value_in_place_keeping_comments_and_other_lines() {
        let text = "# /etc/security/limits.conf\n*  -  memlock  65536  # old\n@gpu hard nofile 1024\n*\t-\tmemlock\t1\n";
        let facts = facts_with(Some(text));
        let m = memlock(json!({}));
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes.len(), 1, "{plan:?}");
        let c = &plan.changes[0];
        assert_eq!(c.subject, format!("{DEST}: * - memlock"));
        assert_eq!(c.before.as_deref(), Some("65536"));
        assert_eq!(c.after.as_deref(), Some("unlimited"));
        assert_eq!(c.evidence.as_deref(), Some(&*format!("{DEST}:2")));
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        assert_eq!(
            content(&after),
            "# /etc/security/limits.conf\n*\t-\tmemlock\tunlimited\n@gpu hard nofile 1024\n"
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn an_equal_line_as_written_is_no_drift() {
        let facts = facts_with(Some("* - memlock unlimited # rdma\n"));
        assert_eq!(memlock(json!({})).plan(&facts).unwrap(), Plan::noop());
        let other_type = facts_with(Some("* hard memlock unlimited\n"));
        let plan = memlock(json!({})).plan(&other_type).unwrap();
        assert_eq!(
            content(&settled(&other_type, &plan)),
            "* hard memlock unlimited\n*\t-\tmemlock\tunlimited\n"
        );
    }

    #[test]
    fn use_max_and_use_min_keep_the_stronger_value() {
        let nofile = |extra: serde_json::Value| {
            let mut p = json!({"domain": "@gpu", "limit_type": "soft", "limit_item": "nofile", "value": "65536"});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            build_test(&PAM_LIMITS, p).unwrap()
        };
        let big = facts_with(Some("@gpu soft nofile 1048576\n"));
        assert_eq!(
            nofile(json!({"use_max": true})).plan(&big).unwrap(),
            Plan::noop()
        );
        let plan = nofile(json!({"use_min": true})).plan(&big).unwrap();
        assert_eq!(plan.changes[0].after.as_deref(), Some("65536"));
        let inf = facts_with(Some("@gpu soft nofile unlimited\n"));
        assert_eq!(
            nofile(json!({"use_max": true})).plan(&inf).unwrap(),
            Plan::noop()
        );
        let err = build_error(
            &PAM_LIMITS,
            json!({"domain": "*", "limit_type": "-", "limit_item": "nofile", "value": "1", "use_max": true, "use_min": true}),
        );
        assert!(err.contains("only one"), "{err}");
    }

    #[test]
    fn a_missing_file_is_created_with_the_comment_unless_create_is_off() {
        let facts = facts_with(None);
        let m = memlock(json!({"comment": "GPUDirect RDMA"}));
        let plan = m.plan(&facts).unwrap();
        let after = settled(&facts, &plan);
        assert_eq!(
            content(&after),
            "*\t-\tmemlock\tunlimited\t#GPUDirect RDMA\n"
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
        let err = memlock(json!({"create": false})).plan(&facts).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn hostile_values_are_refused_and_files_travel_encoded() {
        let base = json!({"domain": "*", "limit_type": "-", "limit_item": "nofile"});
        let with = |k: &str, v: &str| {
            let mut p = base.clone();
            p[k] = json!(v);
            if k != "value" {
                p["value"] = json!("1");
            }
            p
        };
        for (k, v) in [
            ("value", "$(reboot)"),
            ("value", "1 # x"),
            ("domain", "* - nofile 1\nroot"),
            ("domain", ""),
            ("comment", "a\nroot - nofile 0"),
        ] {
            let err = build_error(&PAM_LIMITS, with(k, v));
            assert!(err.starts_with("pam_limits: "), "{k}={v:?}: {err}");
        }
        let err = build_error(&PAM_LIMITS, with("limit_item", "nofiles"));
        assert!(err.contains("not a valid limit_item"), "{err}");
        let m = memlock(json!({"comment": "$(reboot)"}));
        let plan = m.plan(&facts_with(None)).unwrap();
        assert!(!unquoted_steps(&plan).contains("reboot"));
        assert_sh_syntax(m.as_ref(), &plan);
    }

    #[test]
    fn duplicates_of_the_limit_go() {
        let facts = facts_with(Some("* - memlock unlimited\nx\n* - memlock 64\n"));
        let plan = memlock(json!({})).plan(&facts).unwrap();
        assert_eq!(
            content(&settled(&facts, &plan)),
            "* - memlock unlimited\nx\n"
        );
    }
}
