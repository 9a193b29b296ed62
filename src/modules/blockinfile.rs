//! `blockinfile`: a block of lines between two marker lines, added,
//! replaced or removed; the rest of the file untouched.
//!
//! **`blockinfile`** puts `block` between the `marker` lines (`{mark}` replaced
//! by `marker_begin` and `marker_end`), replacing what is between the last pair
//! of markers, or inserting after/before the last line `insertafter` or
//! `insertbefore` matches (at the end when none does). An empty `block` or
//! `state: absent` removes the block with its markers. Markers must differ and
//! be one line each.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep the Slurm controllers in every node's /etc/hosts
//!   blockinfile:
//!     path: /etc/hosts
//!     marker: "# {mark} SLURM CONTROLLERS"
//!     block: |
//!       10.0.0.10 slurmctld01
//!       10.0.0.11 slurmctld02
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::kit::text::Anchor;
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::pyre::MatchError;
use crate::remote::probe::Probe;

pub const BLOCKINFILE: ModuleSpec = ModuleSpec {
    name: "blockinfile",
    source: file!(),
    aliases: &["ansible.builtin.blockinfile"],
    params: &BlockArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct BlockArgs {
        /// the file on the host
        #[aliases("dest", "name")]
        path: String,
        /// the lines between the markers; empty removes the block
        #[aliases("content")]
        block: Option<String>,
        /// the marker line, `{mark}` standing for `marker_begin` or `marker_end` (default `# {mark} ANSIBLE MANAGED BLOCK`)
        marker: String = "# {mark} ANSIBLE MANAGED BLOCK".into(),
        /// what `{mark}` is in the first marker
        marker_begin: String = "BEGIN".into(),
        /// what `{mark}` is in the last marker
        marker_end: String = "END".into(),
        /// a regular expression a new block goes after (or EOF)
        insertafter: Option<String>,
        /// a regular expression a new block goes before (or BOF)
        insertbefore: Option<String>,
        /// whether the block is there
        state: Presence = Presence::Present,
        /// create a missing file
        create: bool = false,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// a command that must accept the new file, named `%s`, before it is installed
        validate: Option<String>,
        /// the file's mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
    }
}

/// Where a block without markers in the file goes.
struct BlockInFile {
    path: String,
    begin: String,
    end: String,
    /// The block's lines; `None` removes the block.
    lines: Option<Vec<String>>,
    anchor: Anchor,
    create: bool,
    opts: WriteOpts,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = BlockArgs::read(p)?;
    let (key, path) = ("path", a.path);
    p.destructive_path(key, &path)?;
    let begin = a.marker.replace("{mark}", &a.marker_begin);
    let end = a.marker.replace("{mark}", &a.marker_end);
    if begin.contains('\n') || end.contains('\n') {
        return Err(p.error("marker", "a marker is one line"));
    }
    if begin == end {
        return Err(p.error(
            "marker",
            "the begin and end markers are the same line (is '{mark}' missing?)",
        ));
    }
    let block = a.block.unwrap_or_default();
    let lines = (a.state == Presence::Present && !block.is_empty())
        .then(|| block.lines().map(str::to_string).collect());
    let anchor = Anchor::read(p, a.insertafter.as_deref(), a.insertbefore.as_deref())?;
    Ok(Box::new(BlockInFile {
        path,
        begin,
        end,
        lines,
        anchor,
        create: a.create,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?
            .with_backup(a.backup)
            .with_validate(a.validate)
            .map_err(|m| p.error("validate", m))?,
    }))
}

impl Module for BlockInFile {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let missing = match (&self.lines, self.create) {
            (None, _) => WhenMissing::Nothing,
            (Some(_), true) => WhenMissing::Create,
            (Some(_), false) => WhenMissing::NeedsCreate,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        let (new, markers) = self.edit(&text)?;
        let mut plan = files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)?;
        let after = match &self.lines {
            Some(lines) => format!("{} lines between the markers", lines.len()),
            None => "no block".to_string(),
        };
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.path) {
            c.subject = format!("{} block '{}'", self.path, self.begin);
            c.before = Some(match markers {
                Some((b, e)) => format!("block at lines {}-{}", b + 1, e + 1),
                None => "no block".to_string(),
            });
            c.after = Some(after.clone());
            if let Some((b, _)) = markers {
                c.evidence = Some(format!("{}:{}", self.path, b + 1));
            }
        }
        Ok(plan)
    }
}

impl BlockInFile {
    /// The 0-based lines of the last begin and end markers, in file order,
    /// when both are there.
    fn markers(&self, lines: &[&str]) -> Option<(usize, usize)> {
        let last = |m: &str| lines.iter().rposition(|l| *l == m);
        let (b, e) = (last(&self.begin)?, last(&self.end)?);
        Some((b.min(e), b.max(e)))
    }

    /// The file's text with the block in place (or gone), and where the
    /// markers were; `text` itself when nothing changes.
    fn edit(&self, text: &str) -> Result<(String, Option<(usize, usize)>), MatchError> {
        let mut lines: Vec<&str> = text.lines().collect();
        let markers = self.markers(&lines);
        let at = match markers {
            Some((b, e)) => {
                lines.drain(b..=e);
                b
            }
            None => self.anchor.position(&lines)?,
        };
        if let Some(block) = &self.lines {
            let framed = std::iter::once(self.begin.as_str())
                .chain(block.iter().map(String::as_str))
                .chain(std::iter::once(self.end.as_str()));
            lines.splice(at..at, framed);
        }
        if lines.iter().copied().eq(text.lines()) {
            return Ok((text.to_string(), markers));
        }
        Ok((lines.iter().map(|l| format!("{l}\n")).collect(), markers))
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

    const PATH: &str = "/etc/ssh/sshd_config";

    fn facts_with(content: Option<&str>) -> Facts {
        file_facts(PATH, content, 0o600)
    }

    fn content(facts: &Facts) -> String {
        file_content(facts, PATH)
    }

    fn block(extra: serde_json::Value) -> Box<dyn Module> {
        let mut p = json!({"path": PATH, "block": "Match User gpu\n  X11Forwarding no\n"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        build_test(&BLOCKINFILE, p).unwrap()
    }

    #[test]
    fn inserts_a_framed_block_then_replans_to_a_noop() {
        let facts = facts_with(Some("Port 22\nUsePAM yes\n"));
        let m = block(json!({}));
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes[0].before.as_deref(), Some("no block"));
        assert_eq!(
            plan.changes[0].after.as_deref(),
            Some("2 lines between the markers")
        );
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        assert_eq!(
            content(&after),
            "Port 22\nUsePAM yes\n# BEGIN ANSIBLE MANAGED BLOCK\nMatch User gpu\n  X11Forwarding no\n# END ANSIBLE MANAGED BLOCK\n"
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn a_backup_is_named_in_the_result_when_the_file_changes() {
        let m = block(json!({"backup": true}));
        let plan = m.plan(&facts_with(Some("Port 22\n"))).unwrap();
        let backup = plan.returns["backup_file"].as_str().unwrap();
        assert!(backup.starts_with(&format!("{PATH}.")) && backup.ends_with('~'));
        assert!(plan.steps[0].contains("cp -p --"), "{}", plan.steps[0]);
        // Nothing to back up: a new file, or one that stays as it is.
        let created = block(json!({"backup": true, "create": true}));
        assert!(created
            .plan(&facts_with(None))
            .unwrap()
            .returns
            .get("backup_file")
            .is_none());
        let after = settled(&facts_with(Some("Port 22\n")), &plan);
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn replaces_the_block_between_markers_in_place() {
        let text = "a\n# BEGIN ANSIBLE MANAGED BLOCK\nold\n# END ANSIBLE MANAGED BLOCK\nb\n";
        let facts = facts_with(Some(text));
        let plan = block(json!({})).plan(&facts).unwrap();
        assert_eq!(
            plan.changes[0].before.as_deref(),
            Some("block at lines 2-4")
        );
        assert_eq!(
            plan.changes[0].evidence.as_deref(),
            Some(&*format!("{PATH}:2"))
        );
        assert_eq!(
            content(&settled(&facts, &plan)),
            "a\n# BEGIN ANSIBLE MANAGED BLOCK\nMatch User gpu\n  X11Forwarding no\n# END ANSIBLE MANAGED BLOCK\nb\n"
        );
        let gone = block(json!({"state": "absent"})).plan(&facts).unwrap();
        assert_eq!(content(&settled(&facts, &gone)), "a\nb\n");
        let emptied = block(json!({"block": ""})).plan(&facts).unwrap();
        assert_eq!(content(&settled(&facts, &emptied)), "a\nb\n");
    }

    #[test]
    fn anchors_custom_markers_and_missing_files() {
        let text = "x\nMatch all\ny\n";
        let facts = facts_with(Some(text));
        let m = block(
            json!({"insertbefore": "^Match", "marker": "## {mark} gpu", "marker_begin": "start", "marker_end": "stop", "block": "k"}),
        );
        assert_eq!(
            content(&settled(&facts, &m.plan(&facts).unwrap())),
            "x\n## start gpu\nk\n## stop gpu\nMatch all\ny\n"
        );
        let m = block(json!({"insertafter": "^nothing", "block": "k"}));
        assert!(content(&settled(&facts, &m.plan(&facts).unwrap()))
            .ends_with("y\n# BEGIN ANSIBLE MANAGED BLOCK\nk\n# END ANSIBLE MANAGED BLOCK\n"));
        let m = block(json!({"insertbefore": "BOF", "block": "k"}));
        assert!(content(&settled(&facts, &m.plan(&facts).unwrap())).starts_with("# BEGIN"));

        let missing = facts_with(None);
        let err = block(json!({})).plan(&missing).unwrap_err();
        assert!(err.to_string().contains("create: true"), "{err}");
        assert_eq!(
            block(json!({"state": "absent"})).plan(&missing).unwrap(),
            Plan::noop()
        );
        let m = block(json!({"create": true, "mode": "0640"}));
        let after = settled(&missing, &m.plan(&missing).unwrap());
        assert_eq!(FileFact::read(&after, PATH).unwrap().unwrap().mode, 0o640);
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn hostile_input_is_encoded_or_refused() {
        let m = block(json!({"block": "$(reboot)\n`reboot`", "owner": "$(reboot)"}));
        let plan = m.plan(&facts_with(Some(""))).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        let step = plan.steps.join("\n");
        assert!(step.contains("chown -- '$(reboot)'"), "{step}");
        assert!(!unquoted_steps(&plan).contains("reboot"), "{step}");
        for bad in ["--reference=/etc/shadow", "a:b", "a\nb"] {
            let err = build_error(
                &BLOCKINFILE,
                json!({"path": PATH, "block": "x", "owner": bad}),
            );
            assert_eq!(
                err,
                format!("blockinfile: '{bad}' is not a user or group name")
            );
        }
        let m = block(json!({"block": "x", "owner": "jdoe@corp.example", "group": "domain users"}));
        let step = m.plan(&facts_with(Some(""))).unwrap().steps.join("\n");
        assert!(
            step.contains("chown -- 'jdoe@corp.example:domain users'"),
            "{step}"
        );
        let err = build_error(
            &BLOCKINFILE,
            json!({"path": PATH, "block": "x", "marker": "# fixed"}),
        );
        assert!(err.contains("{mark}"), "{err}");
        let err = build_error(
            &BLOCKINFILE,
            json!({"path": PATH, "block": "x", "marker_begin": "a\nb"}),
        );
        assert!(err.contains("one line"), "{err}");
        let err = build_error(&BLOCKINFILE, json!({"path": "/", "block": "x"}));
        assert!(err.contains("refusing"), "{err}");
    }
}
