//! Resolve, first half: what each task of a play says, read once per play.
//!
//! A task's parameters, loop and conditions are YAML nodes; every host and
//! every loop item needs them as JSON, along with the names they read and
//! whether the task is selected by tags. Converting them here, once, keeps
//! the per-host phases free of YAML and of repeated conversions. What else
//! a play shares among its hosts (the run's options, templates, where
//! files are found) travels with it in [`PlayCtx`].

use std::collections::BTreeSet;

use serde_json::Value;

use super::vars::template_vars;
use crate::base::diag::Span;
use crate::load::playbook::{Play, Task};
use crate::load::yaml::{self, Node};
use crate::modules::params::Sources;
use crate::modules::ModuleKind;
use crate::template::Templates;

/// How the run was asked for on the command line.
#[derive(Clone)]
pub struct RunOptions {
    pub check: bool,
    /// Keep file diffs in the reports; without it they are dropped as soon
    /// as planned, since a fleet's worth of them would stay in memory.
    pub diff: bool,
    pub tags: Vec<String>,
    pub skip_tags: Vec<String>,
    /// ansible.cfg's `ansible_managed`; Ansible's default when unset.
    pub ansible_managed: Option<String>,
}

/// What a play needs that is the same for every host.
pub(crate) struct PlayCtx<'a> {
    pub play: &'a Play,
    pub prepared: &'a PreparedPlay<'a>,
    pub templates: &'a Templates,
    /// Renders undefined values as empty, to guess probes early.
    pub lenient: &'a Templates,
    pub playbook_folder: &'a [std::path::PathBuf],
    pub sources: &'a Sources,
    pub opts: &'a RunOptions,
    /// Opens the transport to a host tasks are delegated to.
    pub open_delegate: &'a super::Opener<'a>,
    /// The run's inventory, which `group_by` and `add_host` change.
    pub inventory: &'a super::run_inventory::RunInventory,
}

/// A package manager module's name and its `module_defaults` parameters.
pub(crate) type BackendDefaults = (String, Vec<(String, Value, Span)>);

/// The fact that names the host's package manager module.
pub(crate) const PKG_MGR: &str = "ansible_pkg_mgr";

/// One task of a play, its YAML read into what the per-host phases use.
pub(crate) struct PreparedTask<'p> {
    pub task: &'p Task,
    /// What reports call it: its name, or its module's.
    pub name: String,
    /// The task's own tags and its play's.
    pub tags: Vec<String>,
    /// Chosen by `--tags` / `--skip-tags`.
    pub selected: bool,
    pub args: Arguments,
    pub looping: Looping,
    pub conditions: Conditions,
    /// Top-level names the task's templates and conditions read.
    pub referenced: BTreeSet<String>,
    /// `changed_when: false`: the task declares itself read-only.
    pub read_only: bool,
    /// `throttle`, shared by every host of the play.
    pub throttle: Option<super::throttle::Throttle>,
}

/// What a task's module is built from.
pub(crate) struct Arguments {
    /// Parameters as written, as JSON, with where each was written.
    pub params: Vec<(String, Value, Span)>,
    /// A `package` task's defaults per package manager module, the same way.
    pub backend_defaults: Vec<BackendDefaults>,
    /// The top-level names those read, templates and expressions alike.
    pub reads: BTreeSet<String>,
}

impl Arguments {
    fn new(task: &Task, templates: &Templates) -> Self {
        let json = |params: &[(String, Node)]| -> Vec<(String, Value, Span)> {
            (params.iter())
                .map(|(name, node)| (name.clone(), node.to_json(), node.span.clone()))
                .collect()
        };
        let params = json(&task.params);
        let backend_defaults: Vec<BackendDefaults> = (task.backend_defaults.iter())
            .map(|(module, params)| (module.clone(), json(params)))
            .collect();
        let mut reads = BTreeSet::new();
        let defaults = backend_defaults
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(_, v, _)| v));
        for v in params.iter().map(|(_, v, _)| v).chain(defaults) {
            template_vars(templates, v, &mut reads);
        }
        // set_fact renders the names it sets too (`"{{ item }}=moo"`).
        for (name, _, _) in &params {
            template_vars(templates, &Value::String(name.clone()), &mut reads);
        }
        if !backend_defaults.is_empty() {
            reads.insert(PKG_MGR.to_string());
        }
        // Parameters that are expressions (assert's `that`, debug's `var`)
        // read variables without braces, as conditions do.
        let docs = task.module.params.docs;
        let expressions = params
            .iter()
            .filter(|(name, _, _)| docs.iter().any(|d| d.name == name && d.conditions))
            .map(|(_, v, _)| v);
        for cond in expressions {
            condition_vars(templates, cond, &mut reads);
        }
        Arguments {
            params,
            backend_defaults,
            reads,
        }
    }
}

/// A task's loop, as written: its items (none: no loop) and label.
pub(crate) struct Looping {
    pub items: Option<Value>,
    pub label: Option<String>,
}

/// A task's conditions as JSON, for the templates to judge.
pub(crate) struct Conditions {
    /// `when:` and its file:line:column.
    pub when: Option<(Value, String)>,
    /// A templated include's conditions for naming the task's file.
    pub included: Option<Value>,
    pub changed: Option<Value>,
    pub failed: Option<Value>,
    pub until: Option<Value>,
}

/// The tasks, handlers and validations of one play.
pub(crate) struct PreparedPlay<'p> {
    pub tasks: Vec<PreparedTask<'p>>,
    pub handlers: Vec<PreparedTask<'p>>,
    pub validate: Vec<PreparedTask<'p>>,
}

impl<'p> PreparedPlay<'p> {
    pub fn new(play: &'p Play, templates: &Templates, opts: &RunOptions) -> Self {
        let prepare = |tasks: &'p [Task]| -> Vec<PreparedTask<'p>> {
            tasks
                .iter()
                .map(|t| PreparedTask::new(t, play, templates, opts))
                .collect()
        };
        // As in Ansible, the last handler loaded under a name is the one
        // that name (or a topic it listens to) notifies: the earlier ones
        // can never run.
        let named_again = |i: usize, h: &Task| {
            !h.name.is_empty() && play.handlers[i + 1..].iter().any(|o| o.name == h.name)
        };
        let handlers = play
            .handlers
            .iter()
            .enumerate()
            .filter(|&(i, h)| !named_again(i, h))
            .map(|(_, h)| PreparedTask::new(h, play, templates, opts))
            .collect();
        PreparedPlay {
            tasks: prepare(&play.tasks),
            handlers,
            validate: prepare(&play.validate),
        }
    }
}

impl<'p> PreparedPlay<'p> {
    /// The play starts by waiting for its hosts (`wait_for_connection`
    /// first, no facts to gather): a host that does not answer yet is not
    /// lost before that task had its chance.
    pub fn waits_first(&self, play: &Play) -> bool {
        let first = self.tasks.iter().find(|t| t.selected);
        !play.gather_facts && first.is_some_and(|t| t.task.module.kind == ModuleKind::AwaitLogin)
    }
}

impl<'p> PreparedTask<'p> {
    /// Reboots the host or waits for it: what is probed before it may not
    /// hold after it.
    pub fn replaces_session(&self) -> bool {
        self.task.module.kind.replaces_session()
    }

    fn new(task: &'p Task, play: &Play, templates: &Templates, opts: &RunOptions) -> Self {
        let tags: Vec<String> = task.tags.iter().chain(&play.tags).cloned().collect();
        let loop_items = task.loop_items.as_ref().map(Node::to_json);
        let json = |n: &Option<Node>| n.as_ref().map(Node::to_json);
        let (changed_when, failed_when) = (json(&task.changed_when), json(&task.failed_when));
        let when = task.when.as_ref().map(|n| (n.to_json(), n.span.location()));
        let included = json(&task.included);
        let args = Arguments::new(task, templates);
        let mut referenced = args.reads.clone();
        if let Some(items) = &loop_items {
            template_vars(templates, items, &mut referenced);
        }
        for cond in [when.as_ref().map(|(v, _)| v), changed_when.as_ref()]
            .into_iter()
            .chain([failed_when.as_ref(), included.as_ref()])
            .flatten()
        {
            condition_vars(templates, cond, &mut referenced);
        }
        PreparedTask {
            task,
            name: display_name(task),
            selected: selected(&tags, opts),
            tags,
            args,
            looping: Looping {
                items: loop_items,
                label: task
                    .loop_label
                    .as_ref()
                    .map(|l| l.scalar_text().unwrap_or_default()),
            },
            conditions: Conditions {
                when,
                included,
                changed: changed_when,
                failed: failed_when,
                until: task.retry.as_ref().map(|r| r.until.to_json()),
            },
            referenced,
            read_only: task
                .changed_when
                .as_ref()
                .is_some_and(|c| c.value == yaml::Value::Bool(false)),
            throttle: task.throttle.and_then(super::throttle::Throttle::new),
        }
    }

    /// Each item (or attempt) runs once the one before it ran: `until:`,
    /// or a loop's `pause` or `break_when`.
    pub fn item_by_item(&self) -> bool {
        self.conditions.until.is_some()
            || (self.looping.items.is_some() && self.task.loop_pace.paced())
    }

    /// A declared query (`changed_when: false`; in check mode also
    /// `check_mode: false`) may ride in a probe batch, unless it has a
    /// `timeout:`, which only its own step honours, runs on the controller,
    /// or runs item by item.
    pub fn may_query(&self, check: bool) -> bool {
        let allowed = !check || self.task.check_mode == Some(false);
        let bounded = self.task.timeout.is_some() || self.task.async_if.is_some();
        // Each attempt or item run on its own is a run of its own: none
        // may ride ahead in a probe batch.
        let own_step = bounded || self.task.delegate_to.is_some() || self.item_by_item();
        self.read_only && allowed && !own_step
    }
}

fn selected(tags: &[String], opts: &RunOptions) -> bool {
    let tags: BTreeSet<&str> = tags.iter().map(String::as_str).collect();
    if opts.skip_tags.iter().any(|t| tags.contains(t.as_str())) {
        return false;
    }
    if opts.tags.is_empty() || opts.tags.iter().any(|t| t == "all") {
        return !tags.contains("never");
    }
    tags.contains("always") || opts.tags.iter().any(|t| tags.contains(t.as_str()))
}

fn condition_vars(t: &Templates, v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => out.extend(t.expression_vars(s)),
        Value::Array(a) => a.iter().for_each(|x| condition_vars(t, x, out)),
        _ => {}
    }
}

fn display_name(task: &Task) -> String {
    if task.name.is_empty() {
        match &task.ansible {
            Some(f) => f.payload.fqcn.clone(),
            None => task.module.name.to_string(),
        }
    } else {
        task.name.clone()
    }
}

/// Plays for the tests of the phases.
#[cfg(test)]
pub(crate) mod testing {
    use crate::load::playbook::Playbook;

    /// Loads a playbook written as `text`; the folder holds it while the
    /// test needs it.
    pub fn load(text: &str) -> (tempfile::TempDir, Playbook) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yml");
        std::fs::write(&path, text).unwrap();
        let pb = crate::load::playbook::load(&path).unwrap();
        (dir, pb)
    }

    /// A play on all hosts, without fact gathering, of these tasks (one
    /// flow mapping each).
    pub fn tasks(tasks: &[&str]) -> (tempfile::TempDir, Playbook) {
        let mut text = String::from("- hosts: all\n  gather_facts: false\n  tasks:\n");
        for t in tasks {
            text.push_str(&format!("    - {t}\n"));
        }
        load(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selected_names(tags: &[&str], skip_tags: &[&str]) -> Vec<String> {
        let (_dir, pb) = testing::tasks(&[
            "{name: plain, command: 'true'}",
            "{name: never, command: 'true', tags: [never]}",
            "{name: always, command: 'true', tags: [always]}",
            "{name: gpu, command: 'true', tags: [gpu]}",
        ]);
        let opts = RunOptions {
            check: false,
            diff: false,
            tags: tags.iter().map(ToString::to_string).collect(),
            skip_tags: skip_tags.iter().map(ToString::to_string).collect(),
            ansible_managed: None,
        };
        let prepared = PreparedPlay::new(&pb.plays[0], &Templates::new(), &opts);
        let names = prepared.tasks.iter().filter(|t| t.selected);
        names.map(|t| t.name.clone()).collect()
    }

    #[test]
    fn tags_select_as_in_ansible() {
        assert_eq!(selected_names(&[], &[]), ["plain", "always", "gpu"]);
        assert_eq!(selected_names(&["gpu"], &[]), ["always", "gpu"]);
        assert_eq!(selected_names(&["never"], &[]), ["never", "always"]);
        assert_eq!(selected_names(&[], &["always"]), ["plain", "gpu"]);
    }

    #[test]
    fn a_task_is_read_once_into_json_with_the_names_it_reads() {
        let (_dir, pb) = testing::tasks(&[
            "{command: 'echo {{ a }}', when: 'b', failed_when: [c], changed_when: false, loop: '{{ d }}'}",
        ]);
        let opts = RunOptions {
            check: false,
            diff: false,
            tags: Vec::new(),
            skip_tags: Vec::new(),
            ansible_managed: None,
        };
        let prepared = PreparedPlay::new(&pb.plays[0], &Templates::new(), &opts);
        let t = &prepared.tasks[0];
        assert_eq!(t.name, "command");
        let names: Vec<&str> = t.referenced.iter().map(String::as_str).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert!(t.read_only && t.may_query(false) && !t.may_query(true));
        assert_eq!(t.looping.items, Some(Value::String("{{ d }}".into())));
    }
}
