//! `lineinfile`: one line present or absent, the rest of the file untouched.
//!
//! # Example
//!
//! ```yaml
//! - name: Point slurmd at the cluster's configuration server
//!   lineinfile:
//!     path: /etc/sysconfig/slurmd
//!     regexp: '^SLURMD_OPTIONS='
//!     line: 'SLURMD_OPTIONS="--conf-server slurmctld01"'
//!     create: true
//!     mode: "0644"
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::files::{self, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::kit::text::{self, Anchor};
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::pyre::{MatchError, Regex, Replacement};
use crate::remote::probe::Probe;

pub(crate) const LINEINFILE: ModuleSpec = ModuleSpec {
    name: "lineinfile",
    source: file!(),
    aliases: &["ansible.builtin.lineinfile"],
    params: &LineArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct LineArgs {
        /// the file on the host
        #[aliases("dest", "name")]
        path: String,
        /// the line itself
        line: Option<String>,
        /// a regular expression selecting the line to replace or remove
        regexp: Option<String>,
        /// a literal text selecting the line, instead of `regexp`
        search_string: Option<String>,
        /// whether the line is there
        state: Presence = Presence::Present,
        /// a regular expression the new line goes after (or EOF)
        insertafter: Option<String>,
        /// a regular expression the new line goes before (or BOF)
        insertbefore: Option<String>,
        /// create a missing file
        create: bool = false,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// a command that must accept the new file, named `%s`, before it is installed
        validate: Option<String>,
        /// `line` uses the groups of `regexp`; no match leaves the file alone
        backrefs: bool = false,
        /// the file's mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
    }
}

enum Matcher {
    Regex(Regex),
    Literal(String),
}

impl Matcher {
    fn matches(&self, line: &str) -> Result<bool, MatchError> {
        match self {
            Matcher::Regex(r) => r.is_match(line),
            Matcher::Literal(s) => Ok(line.contains(s.as_str())),
        }
    }

    /// The last of `lines` that matches.
    fn last(&self, lines: &[String]) -> Result<Option<usize>, MatchError> {
        for (i, l) in lines.iter().enumerate().rev() {
            if self.matches(l)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

struct LineInFile {
    path: String,
    line: Option<String>,
    matcher: Option<Matcher>,
    present: bool,
    anchor: Anchor,
    create: bool,
    /// With `backrefs`: `line` as a template of the match's groups.
    backrefs: Option<Replacement>,
    opts: WriteOpts,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = LineArgs::read(p)?;
    let path = a.path;
    let present = a.state == Presence::Present;
    if a.backrefs && a.regexp.is_none() {
        return Err(p.error("backrefs", "backrefs: true needs 'regexp'"));
    }
    let regexp = a
        .regexp
        .map(|r| text::regex(p, "regexp", &r, false, false))
        .transpose()?;
    let matcher = match (regexp, a.search_string) {
        (Some(r), None) => Some(Matcher::Regex(r)),
        (None, Some(s)) => Some(Matcher::Literal(s)),
        (None, None) => None,
        _ => {
            return Err(p.error(
                "search_string",
                "give only one of 'regexp' and 'search_string'",
            ))
        }
    };
    let line = a.line;
    if present && line.is_none() {
        return Err(p.error("line", "state=present needs 'line'"));
    }
    if !present && line.is_none() && matcher.is_none() {
        return Err(p.error(
            "regexp",
            "state=absent needs 'regexp', 'search_string' or 'line'",
        ));
    }
    let backrefs = match (&matcher, &line) {
        (Some(Matcher::Regex(r)), Some(line)) if a.backrefs => {
            Some(Replacement::new(line, r).map_err(|e| p.error("line", e.to_string()))?)
        }
        _ => None,
    };
    let anchor = Anchor::read(p, a.insertafter.as_deref(), a.insertbefore.as_deref())?;
    Ok(Box::new(LineInFile {
        path,
        line,
        matcher,
        present,
        anchor,
        create: a.create,
        backrefs,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?
            .with_backup(a.backup)
            .with_validate(a.validate)
            .map_err(|m| p.error("validate", m))?,
    }))
}

impl Module for LineInFile {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let missing = match (self.present, self.create) {
            (false, _) => WhenMissing::Nothing,
            (true, true) => WhenMissing::Create,
            (true, false) => WhenMissing::NeedsCreate,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            let mut plan = Plan::noop();
            plan.returns.insert("msg".into(), "file not present".into());
            return Ok(plan);
        };
        let (new, edit) = self.edit(&text)?;
        let mut plan = files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)?;
        // Ansible's lineinfile returns `backup`, empty when it made none.
        let backup = plan
            .returns
            .remove("backup_file")
            .unwrap_or_else(|| "".into());
        plan.returns.insert("backup".into(), backup);
        let msg = match edit {
            Edit::Removed(n) => {
                plan.returns.insert("found".into(), n.into());
                if n > 0 {
                    format!("{n} line(s) removed")
                } else {
                    String::new()
                }
            }
            Edit::Added => "line added".into(),
            Edit::Replaced => "line replaced".into(),
            Edit::None => String::new(),
        };
        let msg = files::edit_msg(&self.path, current.as_ref(), &self.opts, &msg);
        plan.returns.insert("msg".into(), msg.into());
        Ok(plan)
    }
}

/// What an edit did to the lines, as the module's `msg` words it.
#[derive(Debug, PartialEq)]
enum Edit {
    Added,
    Replaced,
    Removed(usize),
    None,
}

impl LineInFile {
    /// The file's text after the edit, equal to `text` when nothing
    /// changes, and what the edit did.
    fn edit(&self, text: &str) -> Result<(String, Edit), MatchError> {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let edit = if self.present {
            self.ensure_present(&mut lines)?
        } else {
            let before = lines.len();
            let mut kept = Vec::with_capacity(lines.len());
            for l in lines {
                if !self.is_target(&l)? {
                    kept.push(l);
                }
            }
            lines = kept;
            Edit::Removed(before - lines.len())
        };
        if lines.iter().map(String::as_str).eq(text.lines()) {
            let edit = if matches!(edit, Edit::Removed(_)) {
                edit
            } else {
                Edit::None
            };
            return Ok((text.to_string(), edit));
        }
        Ok((lines.iter().map(|l| format!("{l}\n")).collect(), edit))
    }

    fn is_target(&self, l: &str) -> Result<bool, MatchError> {
        match &self.matcher {
            Some(m) => m.matches(l),
            None => Ok(Some(l) == self.line.as_deref()),
        }
    }

    fn ensure_present(&self, lines: &mut Vec<String>) -> Result<Edit, MatchError> {
        let line = self.line.clone().expect("present has line");
        if let Some(m) = &self.matcher {
            if let Some(i) = m.last(lines)? {
                let new = match (m, &self.backrefs) {
                    // As Python's `Match.expand`: the line is the template
                    // filled in, not the match replaced inside the line.
                    (Matcher::Regex(r), Some(template)) => r
                        .captures(&lines[i])?
                        .map_or(line, |caps| template.expand(&caps)),
                    _ => line,
                };
                if lines[i] == new {
                    return Ok(Edit::None);
                }
                lines[i] = new;
                return Ok(Edit::Replaced);
            }
            if self.backrefs.is_some() {
                return Ok(Edit::None);
            }
        }
        if lines.contains(&line) {
            return Ok(Edit::None);
        }
        let at = self.anchor.position(lines)?;
        lines.insert(at, line);
        Ok(Edit::Added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyre::Flags;

    fn re(r: &str) -> Regex {
        Regex::new(r, Flags::default()).unwrap()
    }

    fn lif(line: Option<&str>, regexp: Option<&str>, present: bool, anchor: Anchor) -> LineInFile {
        LineInFile {
            path: "/etc/f".into(),
            line: line.map(str::to_string),
            matcher: regexp.map(|r| Matcher::Regex(re(r))),
            present,
            anchor,
            create: false,
            backrefs: None,
            opts: WriteOpts::default(),
        }
    }

    #[test]
    fn a_bad_regular_expression_is_one_line_naming_the_problem() {
        let err = crate::modules::kit::testing::build_error(
            &LINEINFILE,
            serde_json::json!({"path": "/etc/x", "regexp": "^(a", "line": "a"}),
        );
        assert_eq!(
            err,
            "lineinfile: invalid regular expression '^(a': opening parenthesis without closing parenthesis (at position 3)"
        );
    }

    #[test]
    fn replaces_last_match_and_keeps_everything_else() {
        let m = lif(
            Some("vm.swappiness = 10"),
            Some(r"^vm\.swappiness"),
            true,
            Anchor::Eof,
        );
        let text = "# tuning\nvm.swappiness = 60\nfoo = 1\nvm.swappiness=30\n";
        assert_eq!(
            m.edit(text).unwrap().0,
            "# tuning\nvm.swappiness = 60\nfoo = 1\nvm.swappiness = 10\n"
        );
    }

    #[test]
    fn noop_when_line_present() {
        let m = lif(Some("a"), None, true, Anchor::Eof);
        assert_eq!(m.edit("x\na\ny\n").unwrap().0, "x\na\ny\n");
        assert_eq!(
            m.edit("x\na").unwrap().0,
            "x\na",
            "missing final newline is not drift"
        );
    }

    #[test]
    fn inserts_after_anchor_or_at_bof() {
        let m = lif(Some("new"), None, true, Anchor::After(re("^b")));
        assert_eq!(m.edit("a\nb\nc\n").unwrap().0, "a\nb\nnew\nc\n");
        let m = lif(Some("new"), None, true, Anchor::Bof);
        assert_eq!(m.edit("a\n").unwrap().0, "new\na\n");
    }

    #[test]
    fn python_patterns_with_look_around_and_backreferences_select_lines() {
        let m = lif(
            Some("PermitRootLogin no"),
            Some(r"^(?!#)\s*PermitRootLogin\b"),
            true,
            Anchor::Eof,
        );
        let text = "#PermitRootLogin yes\nPermitRootLogin yes\n";
        assert_eq!(
            m.edit(text).unwrap().0,
            "#PermitRootLogin yes\nPermitRootLogin no\n"
        );
        let m = lif(None, Some(r"^(\w+) \1$"), false, Anchor::Eof);
        assert_eq!(m.edit("a a\na b\n").unwrap().0, "a b\n");
    }

    #[test]
    fn absent_removes_all_matches() {
        let m = lif(None, Some("^swap"), false, Anchor::Eof);
        assert_eq!(m.edit("swap1\nkeep\nswap2\n").unwrap().0, "keep\n");
    }

    #[test]
    fn the_result_says_what_changed_in_ansibles_words() {
        use crate::modules::kit::testing::{build_test, file_facts, unchanged_saying};
        use serde_json::json;
        let facts = file_facts("/etc/f", Some("a=1\nb=2\n"), 0o644);
        let said = |params: serde_json::Value| {
            let mut p = json!({"path": "/etc/f"});
            p.as_object_mut()
                .unwrap()
                .extend(params.as_object().unwrap().clone());
            let plan = build_test(&LINEINFILE, p).unwrap().plan(&facts).unwrap();
            (
                plan.returns["msg"].clone(),
                plan.returns.get("found").cloned(),
                plan.returns["backup"].clone(),
            )
        };
        assert_eq!(
            said(json!({"line": "c=3"})),
            (json!("line added"), None, json!(""))
        );
        assert_eq!(
            said(json!({"regexp": "^a=", "line": "a=9"})).0,
            "line replaced"
        );
        assert_eq!(
            said(json!({"line": "a=1", "mode": "0600"})).0,
            "ownership, perms or SE linux context changed"
        );
        assert_eq!(
            said(json!({"line": "c=3", "mode": "0600"})).0,
            "line added and ownership, perms or SE linux context changed"
        );
        let removed = said(json!({"regexp": "=", "state": "absent"}));
        assert_eq!(
            (removed.0, removed.1),
            (json!("2 line(s) removed"), Some(json!(2)))
        );
        let backup = said(json!({"line": "c=3", "backup": true})).2;
        assert!(backup.as_str().unwrap().starts_with("/etc/f."), "{backup}");
        let missing = file_facts("/etc/f", None, 0o644);
        let m = build_test(
            &LINEINFILE,
            json!({"path": "/etc/f", "line": "x", "state": "absent"}),
        );
        assert_eq!(
            m.unwrap().plan(&missing).unwrap(),
            unchanged_saying("file not present")
        );
    }

    #[test]
    fn backrefs_use_python_syntax() {
        let mut m = lif(
            Some(r"\1=10"),
            Some(r"^(vm\.\w+)\s*=.*$"),
            true,
            Anchor::Eof,
        );
        let r = re(r"^(vm\.\w+)\s*=.*$");
        m.backrefs = Some(Replacement::new(r"\1=10", &r).unwrap());
        assert_eq!(
            m.edit("vm.swappiness = 60\n").unwrap().0,
            "vm.swappiness=10\n"
        );
        // The whole line becomes the filled-in template, a `$` stays.
        let r = re("swappiness");
        let mut m = lif(Some("x"), Some("swappiness"), true, Anchor::Eof);
        m.backrefs = Some(Replacement::new(r"\g<0>=$1", &r).unwrap());
        assert_eq!(m.edit("vm.swappiness = 60\n").unwrap().0, "swappiness=$1\n");
    }
}
