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
use crate::modules::kit::text::{splitlines, Anchor};
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
        /// put a blank line before the block when the line before is not one
        prepend_newline: bool = false,
        /// put a blank line after the block when the line after is not one
        append_newline: bool = false,
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
    /// The block's text, ending in a newline; `None` removes the block.
    block: Option<String>,
    /// Whether the block is there (`state`): Ansible's blank lines
    /// around it are asked of an empty block too.
    present: bool,
    prepend_newline: bool,
    append_newline: bool,
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
    let present = a.state == Presence::Present;
    let block = (present && !block.is_empty()).then(|| match block.ends_with('\n') {
        true => block,
        false => block + "\n",
    });
    let anchor = Anchor::read(p, a.insertafter.as_deref(), a.insertbefore.as_deref())?;
    Ok(Box::new(BlockInFile {
        path,
        begin: begin + "\n",
        end: end + "\n",
        block,
        present,
        prepend_newline: a.prepend_newline,
        append_newline: a.append_newline,
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
        // As Ansible's module: a missing file fails unless `create` is set,
        // whether the block is to be there or not.
        let missing = match (self.create, self.present) {
            (false, _) => WhenMissing::Missing,
            (true, true) => WhenMissing::Create,
            (true, false) => WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            let mut plan = Plan::noop();
            let msg = format!("File {} not present", self.path);
            plan.returns.insert("msg".into(), msg.into());
            return Ok(plan);
        };
        let (new, markers) = self.edit(&text)?;
        let mut plan = files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)?;
        // As Ansible's module words what the edit did.
        let edit = match (&current, &self.block) {
            _ if new == text && current.is_some() => "",
            (None, _) => "File created",
            (_, None) => "Block removed",
            (_, Some(_)) => "Block inserted",
        };
        let msg = files::edit_msg(&self.path, current.as_ref(), &self.opts, edit);
        plan.returns.insert("msg".into(), msg.into());
        let after = match &self.block {
            Some(block) => format!("{} lines between the markers", splitlines(block).len()),
            None => "no block".to_string(),
        };
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.path) {
            c.subject = format!("{} block '{}'", self.path, self.begin.trim_end());
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
    /// The file's text with the block in place (or gone), and the 0-based
    /// lines where the markers were; `text` itself when nothing changes.
    /// Ansible's algorithm: lines keep their own endings (a CRLF file stays
    /// one), a marker is the last line that is exactly it, and a line
    /// left without a newline before the block gets one.
    fn edit(&self, text: &str) -> Result<(String, Option<(usize, usize)>), MatchError> {
        let mut lines: Vec<String> = splitlines(text).into_iter().map(str::to_string).collect();
        let last = |m: &str| lines.iter().rposition(|l| l == m);
        let markers = last(&self.begin)
            .zip(last(&self.end))
            .map(|(b, e)| (b.min(e), b.max(e)));
        let mut at = match markers {
            Some((b, e)) => {
                lines.drain(b..=e);
                b
            }
            None => match self.anchor.search_text(text)? {
                Some(at) => at.min(lines.len()),
                None => self.anchor.position(&lines)?,
            },
        };
        if at > 0 && !lines[at - 1].ends_with('\n') {
            lines[at - 1].push('\n');
        }
        if self.prepend_newline && self.present && at != 0 && lines[at - 1] != "\n" {
            lines.insert(at, "\n".into());
            at += 1;
        }
        let framed: Vec<String> = match &self.block {
            Some(block) => std::iter::once(self.begin.as_str())
                .chain(splitlines(block))
                .chain(std::iter::once(self.end.as_str()))
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        let after = at + framed.len();
        lines.splice(at..at, framed);
        if self.append_newline && self.present && after < lines.len() && lines[after] != "\n" {
            lines.insert(after, "\n".into());
        }
        Ok((lines.concat(), markers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
        unchanged_saying, unquoted_steps,
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
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
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
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
    }

    /// Each line keeps its own ending, as Ansible's module keeps it.
    #[test]
    fn a_crlf_file_keeps_its_line_endings() {
        let text =
            "unix\ndos\r\n# BEGIN ANSIBLE MANAGED BLOCK\ndos\r\n# END ANSIBLE MANAGED BLOCK\nlast";
        let facts = facts_with(Some(text));
        let plan = block(json!({"block": "dos\r\ndos\r\n"}))
            .plan(&facts)
            .unwrap();
        assert_eq!(
            content(&settled(&facts, &plan)),
            "unix\ndos\r\n# BEGIN ANSIBLE MANAGED BLOCK\ndos\r\ndos\r\n# END ANSIBLE MANAGED BLOCK\nlast"
        );
        // A marker is the exact line: one ending in CRLF is not it.
        let crlf = "# BEGIN ANSIBLE MANAGED BLOCK\r\nx\r\n# END ANSIBLE MANAGED BLOCK\r\n";
        let facts = facts_with(Some(crlf));
        let plan = block(json!({"block": "y"})).plan(&facts).unwrap();
        assert!(content(&settled(&facts, &plan)).starts_with(crlf));
        // A last line without a newline gets one before the block.
        let facts = facts_with(Some("a"));
        let plan = block(json!({"block": "k"})).plan(&facts).unwrap();
        assert_eq!(
            content(&settled(&facts, &plan)),
            "a\n# BEGIN ANSIBLE MANAGED BLOCK\nk\n# END ANSIBLE MANAGED BLOCK\n"
        );
    }

    /// A MULTILINE `insertafter` is searched across lines, as Ansible's
    /// module searches it; without the flag it is matched line by line.
    #[test]
    fn a_multiline_anchor_is_searched_in_the_whole_text() {
        let facts = facts_with(Some("a\nb =\n  (x\nc\n"));
        let m = block(json!({"block": "k", "insertafter": "(?m)b =\\n.*\\(x"}));
        assert_eq!(
            content(&settled(&facts, &m.plan(&facts).unwrap())),
            "a\nb =\n  (x\n# BEGIN ANSIBLE MANAGED BLOCK\nk\n# END ANSIBLE MANAGED BLOCK\nc\n"
        );
        let m = block(json!({"block": "k", "insertafter": "b =\\n.*\\(x"}));
        assert!(content(&settled(&facts, &m.plan(&facts).unwrap()))
            .starts_with("a\nb =\n  (x\nc\n# BEGIN"));
        let m = block(json!({"block": "k", "insertbefore": "(?m)^c$"}));
        assert!(content(&settled(&facts, &m.plan(&facts).unwrap()))
            .ends_with("# END ANSIBLE MANAGED BLOCK\nc\n"));
    }

    #[test]
    fn blank_lines_around_the_block_when_asked() {
        let facts = facts_with(Some("line1\nline2\n"));
        let m = block(
            json!({"block": "k", "insertafter": "line1$", "prepend_newline": true, "append_newline": true}),
        );
        let after = settled(&facts, &m.plan(&facts).unwrap());
        assert_eq!(
            content(&after),
            "line1\n\n# BEGIN ANSIBLE MANAGED BLOCK\nk\n# END ANSIBLE MANAGED BLOCK\n\nline2\n"
        );
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
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
        assert_eq!(plan.returns["msg"], "Block inserted");
        let gone = block(json!({"state": "absent"})).plan(&facts).unwrap();
        assert_eq!(gone.returns["msg"], "Block removed");
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
        assert_eq!(err.to_string(), format!("Path {PATH} does not exist !"));
        // As Ansible's module: without `create`, a missing file fails
        // whatever the state.
        let err = block(json!({"state": "absent"}))
            .plan(&missing)
            .unwrap_err();
        assert_eq!(err.to_string(), format!("Path {PATH} does not exist !"));
        assert_eq!(
            block(json!({"state": "absent", "create": true}))
                .plan(&missing)
                .unwrap(),
            unchanged_saying(&format!("File {PATH} not present"))
        );
        let m = block(json!({"create": true, "mode": "0640"}));
        let plan = m.plan(&missing).unwrap();
        assert_eq!(
            plan.returns["msg"],
            "File created and ownership, perms or SE linux context changed"
        );
        let after = settled(&missing, &plan);
        assert_eq!(FileFact::read(&after, PATH).unwrap().unwrap().mode, 0o640);
        assert_eq!(m.plan(&after).unwrap(), unchanged_saying(""));
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
