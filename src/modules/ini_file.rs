//! `ini_file` (community.general): one option of an INI file's section set
//! or removed, or a whole section removed, as Ansible's module edits it:
//! an option's line is replaced where it is, a new one goes after the
//! section's last line, a new section at the end of the file.
//!
//! # Example
//!
//! ```yaml
//! - name: Let pip find the CUDA 12.4 builds of PyTorch
//!   ini_file:
//!     path: /etc/pip.conf
//!     section: global
//!     option: extra-index-url
//!     value: https://download.pytorch.org/whl/cu124
//!     mode: "0644"
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::remote::probe::Probe;

pub(crate) const INI_FILE: ModuleSpec = ModuleSpec {
    name: "ini_file",
    source: file!(),
    aliases: &["community.general.ini_file"],
    params: &IniArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct IniArgs {
        /// the file on the host
        path: Option<String>,
        /// Ansible's older name for `path`
        dest: Option<String>,
        /// the section; none for options before the first section
        section: Option<String>,
        /// the option; none with state absent removes the whole section
        option: Option<String>,
        /// its value
        value: Option<String>,
        /// present or absent
        state: Presence = Presence::Present,
        /// write `option=value` rather than `option = value`
        no_extra_spaces: bool = false,
        /// an option without a value is written bare
        allow_no_value: bool = false,
        /// create a missing file
        create: bool = true,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// its mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
    }
}

enum Action {
    /// The option's whole line, replacing the option's or added.
    Set {
        option: String,
        line: String,
    },
    RemoveOption(String),
    RemoveSection,
}

struct IniFile {
    path: String,
    section: Option<String>,
    action: Action,
    create: bool,
    opts: WriteOpts,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = IniArgs::read(p)?;
    let path = a
        .path
        .or(a.dest)
        .ok_or_else(|| p.error("path", "missing required parameter 'path'"))?;
    p.destructive_path("path", &path)?;
    for (key, text) in [
        ("section", &a.section),
        ("option", &a.option),
        ("value", &a.value),
    ] {
        if let Some(text) = text {
            p.one_line(key, text)?;
        }
    }
    let present = a.state == Presence::Present;
    let action = match (a.option, a.value, present) {
        (Some(o), _, false) => Action::RemoveOption(o),
        (None, _, false) if a.section.is_some() => Action::RemoveSection,
        (None, _, false) => {
            return Err(p.error(
                "section",
                "state absent without option removes a section: name it",
            ))
        }
        (None, _, true) => return Err(p.error("option", "state present needs an option")),
        (Some(o), Some(v), true) => Action::Set {
            line: if a.no_extra_spaces {
                format!("{o}={v}")
            } else {
                format!("{o} = {v}")
            },
            option: o,
        },
        (Some(o), None, true) if a.allow_no_value => Action::Set {
            line: o.clone(),
            option: o,
        },
        (Some(_), None, true) => {
            return Err(p.error(
                "value",
                "give a value (or allow_no_value: true for a bare option)",
            ))
        }
    };
    Ok(Box::new(IniFile {
        path,
        section: a.section,
        action,
        create: a.create,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?.with_backup(a.backup),
    }))
}

fn header(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix('[')?
        .strip_suffix(']')
        .map(str::trim)
}

/// Whether `line` sets `option` (`option = x`, `option=x`, `option: x`, or bare).
fn sets(line: &str, option: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix(option) else {
        return false;
    };
    let rest = rest.trim_start();
    rest.is_empty() || rest.starts_with('=') || rest.starts_with(':')
}

impl IniFile {
    /// The lines of the wanted section: `start..end`, `start` being the
    /// header's index (or 0 for the options before any section).
    fn span(&self, lines: &[String]) -> Option<(usize, usize)> {
        let start = match &self.section {
            None => 0,
            Some(s) => lines.iter().position(|l| header(l) == Some(s.as_str()))?,
        };
        let body = if self.section.is_some() { start + 1 } else { 0 };
        let end = lines[body..]
            .iter()
            .position(|l| header(l).is_some())
            .map_or(lines.len(), |i| body + i);
        Some((start, end))
    }

    fn edit(&self, text: &str) -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let span = self.span(&lines);
        match (&self.action, span) {
            (Action::RemoveSection, Some((start, end))) => {
                lines.drain(start..end);
            }
            (Action::RemoveSection | Action::RemoveOption(_), None) => {}
            (Action::RemoveOption(o), Some((start, end))) => {
                let first = if self.section.is_some() {
                    start + 1
                } else {
                    start
                };
                let mut i = first;
                let mut stop = end;
                while i < stop {
                    if sets(&lines[i], o) {
                        lines.remove(i);
                        stop -= 1;
                    } else {
                        i += 1;
                    }
                }
            }
            (Action::Set { option: o, line }, Some((start, end))) => {
                let first = if self.section.is_some() {
                    start + 1
                } else {
                    start
                };
                match (first..end).find(|&i| sets(&lines[i], o)) {
                    Some(i) => lines[i] = line.clone(),
                    None => {
                        // After the section's last non-blank line.
                        let at = (first..end)
                            .rev()
                            .find(|&i| !lines[i].trim().is_empty())
                            .map_or(first, |i| i + 1);
                        lines.insert(at, line.clone());
                    }
                }
            }
            (Action::Set { line, .. }, None) => {
                // Only a named section can be missing.
                lines.push(format!("[{}]", self.section.as_deref().unwrap_or_default()));
                lines.push(line.clone());
            }
        }
        if lines.is_empty() {
            String::new()
        } else {
            lines.join("\n") + "\n"
        }
    }
}

impl Module for IniFile {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let missing = match (&self.action, self.create) {
            (Action::Set { .. }, true) => WhenMissing::Create,
            (Action::Set { .. }, false) => WhenMissing::NeedsCreate,
            _ => WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        files::plan_content(
            &self.path,
            current.as_ref(),
            &self.edit(&text),
            &self.opts,
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        build_error, build_test, file_content, file_facts, settled,
    };
    use serde_json::json;

    const TUNED: &str = "[main]\nsummary=HPC\ninclude=latency-performance\n\n[vm]\ntransparent_hugepages=always\n\n[sysctl]\nkernel.sched_min_granularity_ns = 10000000\n";

    fn edited(params: serde_json::Value, text: Option<&str>) -> String {
        let m = build_test(&INI_FILE, params).unwrap();
        let facts = file_facts("/etc/x.ini", text, 0o644);
        let plan = m.plan(&facts).unwrap();
        let after = settled(&facts, &plan);
        assert_eq!(m.plan(&after).unwrap().changes, vec![], "converges");
        file_content(&after, "/etc/x.ini")
    }

    #[test]
    fn an_option_is_added_after_its_sections_last_line_or_replaced_in_place() {
        let added = edited(
            json!({"path": "/etc/x.ini", "section": "vm", "option": "min_free", "value": ">135168"}),
            Some(TUNED),
        );
        assert!(
            added.contains("[vm]\ntransparent_hugepages=always\nmin_free = >135168\n\n[sysctl]"),
            "{added}"
        );
        let replaced = edited(
            json!({"path": "/etc/x.ini", "section": "main", "option": "summary", "value": "GPU",
                   "no_extra_spaces": true}),
            Some(TUNED),
        );
        assert!(
            replaced.starts_with("[main]\nsummary=GPU\ninclude="),
            "{replaced}"
        );
        let appended = edited(
            json!({"path": "/etc/x.ini", "section": "new", "option": "a", "value": "1"}),
            Some(TUNED),
        );
        assert!(appended.ends_with("10000000\n[new]\na = 1\n"), "{appended}");
        let created = edited(
            json!({"path": "/etc/x.ini", "section": "s", "option": "a", "value": "1"}),
            None,
        );
        assert_eq!(created, "[s]\na = 1\n");
    }

    #[test]
    fn options_and_sections_are_removed() {
        let gone = edited(
            json!({"path": "/etc/x.ini", "section": "sysctl", "option": "kernel.sched_min_granularity_ns",
                   "state": "absent"}),
            Some(TUNED),
        );
        assert!(gone.ends_with("[sysctl]\n"), "{gone}");
        let gone = edited(
            json!({"path": "/etc/x.ini", "section": "vm", "state": "absent"}),
            Some(TUNED),
        );
        assert!(
            !gone.contains("[vm]") && gone.contains("[sysctl]"),
            "{gone}"
        );
        let m = build_test(
            &INI_FILE,
            json!({"path": "/etc/x.ini", "section": "vm", "state": "absent"}),
        )
        .unwrap();
        assert_eq!(
            m.plan(&file_facts("/etc/x.ini", None, 0o644)).unwrap(),
            Plan::noop()
        );
    }

    #[test]
    fn parameters_are_checked() {
        assert!(build_error(
            &INI_FILE,
            json!({"path": "/x", "section": "s", "option": "o"})
        )
        .contains("give a value"));
        assert!(
            build_error(&INI_FILE, json!({"path": "/x", "state": "absent"})).contains("name it")
        );
        assert!(build_error(
            &INI_FILE,
            json!({"section": "s", "option": "o", "value": 1})
        )
        .contains("'path'"));
        let m = build_test(
            &INI_FILE,
            json!({"path": "/etc/x.ini", "section": "s", "option": "o", "value": 1, "create": false}),
        )
        .unwrap();
        assert!(matches!(
            m.plan(&file_facts("/etc/x.ini", None, 0o644)),
            Err(ModuleError::Absent(_))
        ));
    }
}
