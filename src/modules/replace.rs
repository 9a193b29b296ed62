//! `replace`: every match of a regular expression in a file (or in the
//! part of it between `after` and `before`) replaced.
//!
//! **`replace`** replaces every match of `regexp` (Python-style backreferences
//! `\1`, `\g<1>`, `\g<name>` and `\n` translated for the regex crate; `^` and
//! `$` match at each line) in the file, or only in the text between the first
//! match of `after` and the next of `before`; when those do not match, nothing
//! changes and the task says so. A missing file is an error.
//!
//! # Example
//!
//! ```yaml
//! - name: Let slurm.conf schedule GPUs as generic resources
//!   replace:
//!     path: /etc/slurm/slurm.conf
//!     regexp: '^#?GresTypes=.*$'
//!     replace: GresTypes=gpu
//!     backup: true
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::kit::text;
use crate::modules::params::{module_params, Mode, ParamError, Params};
use crate::pyre::{MatchError, Regex, Replacement};
use crate::remote::probe::Probe;

pub const REPLACE: ModuleSpec = ModuleSpec {
    name: "replace",
    source: file!(),
    aliases: &["ansible.builtin.replace"],
    params: &ReplaceArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct ReplaceArgs {
        /// the file on the host
        #[aliases("dest", "name")]
        path: String,
        /// the regular expression (Python syntax, multi-line: `^` and `$` match at each line)
        regexp: String,
        /// what each match becomes; `\1` and `\g<name>` name groups
        replace: String = String::new(),
        /// only the text after the first match of this regular expression
        after: Option<String>,
        /// only the text before the first match of this regular expression
        before: Option<String>,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// the file's mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
    }
}

struct Replace {
    path: String,
    regexp: Regex,
    replace: Replacement,
    /// Selects the part of the file to work on as its `section` group.
    section: Option<Regex>,
    opts: WriteOpts,
}

/// `r` compiled as Python's `re` does with `re.MULTILINE` (`^` and `$` at
/// each line) or `re.DOTALL` (`.` across lines).
fn regex(p: &Params, key: &str, r: &str, multi_line: bool) -> Result<Regex, ParamError> {
    text::regex(p, key, r, multi_line, !multi_line)
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ReplaceArgs::read(p)?;
    let (key, path) = ("path", a.path);
    p.destructive_path(key, &path)?;
    // Checked alone first, so an error quotes what the task wrote.
    for (key, r) in [("after", &a.after), ("before", &a.before)] {
        if let Some(r) = r {
            regex(p, key, r, false)?;
        }
    }
    // As Ansible does: the section is the shortest text between the two,
    // across lines.
    let section = match (&a.after, &a.before) {
        (Some(af), Some(bf)) => Some(format!("(?:{af})(?P<section>.*?)(?:{bf})")),
        (Some(af), None) => Some(format!("(?:{af})(?P<section>.*)")),
        (None, Some(bf)) => Some(format!("(?P<section>.*?)(?:{bf})")),
        (None, None) => None,
    };
    let section = section.map(|s| regex(p, "after", &s, false)).transpose()?;
    let regexp = regex(p, "regexp", &a.regexp, true)?;
    Ok(Box::new(Replace {
        path,
        // Ansible's module words a template Python's `re` refuses so.
        replace: Replacement::new(&a.replace, &regexp).map_err(|e| {
            p.error(
                "replace",
                format!("Unable to process replace due to error: {e}"),
            )
        })?,
        regexp,
        section,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?.with_backup(a.backup),
    }))
}

impl Module for Replace {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), WhenMissing::Missing)?
        else {
            return Ok(Plan::noop());
        };
        let Some((start, end)) = self.section(&text)? else {
            let mut plan = Plan::noop();
            plan.notes.push(format!(
                "{}: the 'after'/'before' patterns do not match; nothing replaced",
                self.path
            ));
            // Registered as Ansible's module words it.
            let pattern = self.section.as_ref().map_or("", |r| r.as_str());
            plan.returns.insert(
                "msg".into(),
                format!("Pattern for before/after params did not match the given file: {pattern}")
                    .into(),
            );
            return Ok(plan);
        };
        let part = &text[start..end];
        let matches = self.regexp.captures_all(part)?;
        let count = matches.len();
        let first = matches.first().and_then(|m| m.get(0)).map(|m| m.start());
        let replaced = self.replace.replace_all(&self.regexp, part)?;
        let new = format!("{}{replaced}{}", &text[..start], &text[end..]);
        let mut plan = files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)?;
        let edit = match count > 0 && replaced != part {
            true => format!("{count} replacements made"),
            false => String::new(),
        };
        let msg = files::edit_msg(&self.path, current.as_ref(), &self.opts, &edit);
        plan.returns.insert("msg".into(), msg.into());
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.path) {
            c.before = Some(format!("{count} match(es) of '{}'", self.regexp.as_str()));
            c.after = Some("replaced".into());
            if let Some(at) = first {
                let line = text[..start + at].matches('\n').count() + 1;
                c.evidence = Some(format!("{}:{line}", self.path));
            }
        }
        Ok(plan)
    }
}

impl Replace {
    /// The byte range to work on: all of `text`, or the section between
    /// `after` and `before`; `None` when those do not match.
    fn section(&self, text: &str) -> Result<Option<(usize, usize)>, MatchError> {
        Ok(match &self.section {
            None => Some((0, text.len())),
            Some(re) => re
                .captures(text)?
                .and_then(|c| c.name("section"))
                .map(|m| (m.start(), m.end())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
        unchanged_saying,
    };
    use serde_json::json;

    const PATH: &str = "/etc/default/grub";

    fn facts_with(content: Option<&str>) -> Facts {
        file_facts(PATH, content, 0o644)
    }

    fn content(facts: &Facts) -> String {
        file_content(facts, PATH)
    }

    fn replace(params: serde_json::Value) -> Box<dyn Module> {
        let mut p = json!({"path": PATH});
        p.as_object_mut()
            .unwrap()
            .extend(params.as_object().unwrap().clone());
        build_test(&REPLACE, p).unwrap()
    }

    #[test]
    fn replaces_every_match_with_python_backreferences_then_replans_to_a_noop() {
        let text = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet\"\n";
        let facts = facts_with(Some(text));
        let m = replace(json!({
            "regexp": r#"^(GRUB_CMDLINE_LINUX)="quiet"$"#,
            "replace": r#"\1="quiet iommu=pt""#,
        }));
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.returns["msg"], "1 replacements made");
        assert_eq!(
            plan.changes[0].evidence.as_deref(),
            Some(&*format!("{PATH}:2"))
        );
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        assert_eq!(
            content(&after),
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet iommu=pt\"\n"
        );
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
    }

    #[test]
    fn no_match_is_a_noop() {
        let facts = facts_with(Some("a\n"));
        let m = replace(json!({"regexp": "^b$", "replace": "c"}));
        assert_eq!(m.plan(&facts).unwrap(), unchanged_saying(""));
    }

    #[test]
    fn after_and_before_bound_the_section() {
        let text = "x=1\n[gpu]\nx=1\n[end]\nx=1\n";
        let facts = facts_with(Some(text));
        let m = replace(
            json!({"regexp": "^x=1$", "replace": "x=2", "after": r"\[gpu\]", "before": r"\[end\]"}),
        );
        let after = settled(&facts, &m.plan(&facts).unwrap());
        assert_eq!(content(&after), "x=1\n[gpu]\nx=2\n[end]\nx=1\n");
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
        let m = replace(json!({"regexp": "^x=1$", "replace": "x=2", "after": r"\[gpu\]"}));
        assert_eq!(
            content(&settled(&facts, &m.plan(&facts).unwrap())),
            "x=1\n[gpu]\nx=2\n[end]\nx=2\n"
        );
        let m = replace(json!({"regexp": "^x=1$", "replace": "x=2", "after": "nowhere"}));
        let plan = m.plan(&facts).unwrap();
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        assert!(plan.notes[0].contains("do not match"), "{plan:?}");
    }

    #[test]
    fn the_replacement_is_pythons_named_groups_and_literal_dollars() {
        let facts = facts_with(Some("PATH=/usr/bin\n"));
        let m = replace(json!({"regexp": "^(?P<k>PATH)=(.*)$", "replace": r"\g<k>=$HOME/bin:\2"}));
        let after = settled(&facts, &m.plan(&facts).unwrap());
        assert_eq!(content(&after), "PATH=$HOME/bin:/usr/bin\n");
        let err = build_error(
            &REPLACE,
            json!({"path": PATH, "regexp": "(a)", "replace": r"\2"}),
        );
        assert_eq!(
            err,
            "replace: Unable to process replace due to error: invalid group reference 2 in the replacement"
        );
    }

    #[test]
    fn hostile_and_broken_input() {
        let facts = facts_with(Some("user=x\n"));
        let m = replace(json!({"regexp": "x", "replace": "$(reboot)", "group": "`reboot`"}));
        let plan = m.plan(&facts).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        assert!(plan.steps.join("\n").contains("chown -- ':`reboot`'"));
        let err = build_error(
            &REPLACE,
            json!({"path": PATH, "regexp": "x", "group": "-R"}),
        );
        assert_eq!(err, "replace: '-R' is not a user or group name");
        assert_eq!(content(&settled(&facts, &plan)), "user=$(reboot)\n");
        let err = build_error(&REPLACE, json!({"path": PATH, "regexp": "(a"}));
        assert_eq!(
            err,
            "replace: invalid regular expression '(a': opening parenthesis without closing parenthesis (at position 2)"
        );
        let err = build_error(
            &REPLACE,
            json!({"path": PATH, "regexp": "a", "before": "(b"}),
        );
        assert!(err.contains("'(b'"), "{err}");
        let err = replace(json!({"regexp": "a"}))
            .plan(&facts_with(None))
            .unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
}
