//! `kernel_blacklist`: a `blacklist <module>` line in a modprobe.d file, so
//! udev never loads the module (nouveau on NVIDIA nodes).
//!
//! **`kernel_blacklist`** keeps a `blacklist NAME` line (however it is spaced)
//! in `blacklist_file`, creating the file; `state: absent` removes every such
//! line.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep nouveau off the NVIDIA nodes
//!   kernel_blacklist:
//!     name: nouveau
//!     blacklist_file: /etc/modprobe.d/blacklist-nouveau.conf
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::Probe;

pub const KERNEL_BLACKLIST: ModuleSpec = ModuleSpec {
    name: "kernel_blacklist",
    source: file!(),
    aliases: &["community.general.kernel_blacklist"],
    params: &BlacklistArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct BlacklistArgs {
        /// the kernel module to blacklist
        name: String,
        /// whether the blacklist line is there
        state: Presence = Presence::Present,
        /// the modprobe.d file holding the line (default /etc/modprobe.d/blacklist-ansible.conf)
        blacklist_file: String = "/etc/modprobe.d/blacklist-ansible.conf".into(),
    }
}

struct Blacklist {
    name: String,
    present: bool,
    file: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = BlacklistArgs::read(p)?;
    if a.name.is_empty() || a.name.contains(char::is_whitespace) {
        return Err(p.error("name", format!("'{}' is not a kernel module name", a.name)));
    }
    p.destructive_path("blacklist_file", &a.blacklist_file)?;
    Ok(Box::new(Blacklist {
        name: a.name,
        present: a.state == Presence::Present,
        file: a.blacklist_file,
    }))
}

impl Module for Blacklist {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.file)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.file)?;
        let missing = match self.present {
            true => WhenMissing::Create,
            false => WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(&self.file, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        let new = self.edit(&text);
        if new == text {
            return Ok(Plan::noop());
        }
        let mut plan = files::plan_content(
            &self.file,
            current.as_ref(),
            &new,
            &WriteOpts::default(),
            true,
        )?;
        let line = format!("blacklist {}", self.name);
        let (before, after) = match self.present {
            true => ("no line".to_string(), line),
            false => (line, "no line".to_string()),
        };
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.file) {
            c.before = Some(before.clone());
            c.after = Some(after.clone());
            if let Some(n) = text.lines().position(|l| self.is_target(l)) {
                c.evidence = Some(format!("{}:{}", self.file, n + 1));
            }
        }
        Ok(plan)
    }
}

impl Blacklist {
    /// `blacklist name`, however it is spaced.
    fn is_target(&self, line: &str) -> bool {
        let words: Vec<&str> = line.split_whitespace().collect();
        words == ["blacklist", self.name.as_str()]
    }

    /// The file's text with the line added or removed; `text` itself when
    /// it already complies.
    fn edit(&self, text: &str) -> String {
        let has = text.lines().any(|l| self.is_target(l));
        match (self.present, has) {
            (true, false) => {
                let sep = if text.is_empty() || text.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                format!("{text}{sep}blacklist {}\n", self.name)
            }
            (false, true) => text
                .lines()
                .filter(|l| !self.is_target(l))
                .map(|l| format!("{l}\n"))
                .collect(),
            _ => text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, settled, unquoted_steps,
    };
    use crate::remote::probe::ProbeResult;
    use serde_json::json;

    const FILE: &str = "/etc/modprobe.d/blacklist-ansible.conf";

    fn file_answer(content: &str) -> String {
        FileFact::render(&Some(files::FileState::written(
            content, 0o644, "root", "root",
        )))
        .stdout
    }

    #[test]
    fn adds_the_line_keeps_the_rest_and_replans_to_a_noop() {
        let m = build_test(&KERNEL_BLACKLIST, json!({"name": "nouveau"})).unwrap();
        let answer = file_answer("# keep\nblacklist lbm-nouveau\n");
        let facts = facts_of(&[(&format!("file:{FILE}"), &answer)]);
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].before.as_deref(), Some("no line"));
        assert_eq!(plan.changes[0].after.as_deref(), Some("blacklist nouveau"));
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        let written = FileFact::read(&after, FILE).unwrap().unwrap();
        assert_eq!(
            written.content.as_deref(),
            Some("# keep\nblacklist lbm-nouveau\nblacklist nouveau\n")
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn a_spaced_line_complies_and_absent_removes_it_with_its_place() {
        let answer = file_answer("a\nblacklist   nouveau\nb\n");
        let facts = facts_of(&[(&format!("file:{FILE}"), &answer)]);
        let present = build_test(&KERNEL_BLACKLIST, json!({"name": "nouveau"})).unwrap();
        assert_eq!(present.plan(&facts).unwrap(), Plan::noop());
        let absent = build_test(
            &KERNEL_BLACKLIST,
            json!({"name": "nouveau", "state": "absent"}),
        )
        .unwrap();
        let plan = absent.plan(&facts).unwrap();
        assert_eq!(
            plan.changes[0].evidence.as_deref(),
            Some(&*format!("{FILE}:2"))
        );
        let after = settled(&facts, &plan);
        let left = FileFact::read(&after, FILE).unwrap().unwrap();
        assert_eq!(left.content.as_deref(), Some("a\nb\n"));
        assert_eq!(absent.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn a_missing_file_is_created_or_left_alone() {
        let facts = facts_of(&[(&format!("file:{FILE}"), "absent\n")]);
        let absent = build_test(
            &KERNEL_BLACKLIST,
            json!({"name": "nouveau", "state": "absent"}),
        )
        .unwrap();
        assert_eq!(absent.plan(&facts).unwrap(), Plan::noop());
        let present = build_test(&KERNEL_BLACKLIST, json!({"name": "nouveau"})).unwrap();
        let plan = present.plan(&facts).unwrap();
        assert_eq!(plan.steps.len(), 1);
        assert_eq!(present.plan(&settled(&facts, &plan)).unwrap(), Plan::noop());
    }

    #[test]
    fn hostile_names_never_reach_a_shell() {
        let m = build_test(&KERNEL_BLACKLIST, json!({"name": "$(reboot)"})).unwrap();
        let facts = facts_of(&[(&format!("file:{FILE}"), "absent\n")]);
        let plan = m.plan(&facts).unwrap();
        // The line travels as a quoted word; no step runs it.
        assert!(!unquoted_steps(&plan).contains("reboot"), "{plan:?}");
        assert_sh_syntax(m.as_ref(), &plan);
        let err = build_error(&KERNEL_BLACKLIST, json!({"name": "a\nblacklist b"}));
        assert!(err.contains("not a kernel module name"), "{err}");
        let err = build_error(
            &KERNEL_BLACKLIST,
            json!({"name": "x", "blacklist_file": "/"}),
        );
        assert!(err.contains("refusing"), "{err}");
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let mut facts = Facts::default();
        facts.insert(
            format!("file:{FILE}"),
            ProbeResult {
                rc: 1,
                stdout: String::new(),
                stderr: "Permission denied".into(),
            },
        );
        let m = build_test(&KERNEL_BLACKLIST, json!({"name": "nouveau"})).unwrap();
        assert!(m.plan(&facts).is_err());
    }
}
