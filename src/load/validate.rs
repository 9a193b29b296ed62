//! Static checks of a loaded playbook: every template and condition must
//! compile, every `src:` template must exist and compile, every `notify`
//! must reach a handler. No host is touched.
//!
//! Each finding is sorted by the moment Ansible makes it. What Ansible
//! refuses as it loads the playbook refuses the run here. What it finds
//! only when a task runs stays with the task, which fails on it where it is
//! reached; a variable that cannot be rendered fails only what reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::base::diag::{suggest, Diagnostic};
use crate::exec::vars;
use crate::load::playbook::{Play, Playbook, Task};
use crate::load::yaml::Node;
use crate::modules::copy;
use crate::modules::kit::module::BuildFn;
use crate::modules::params::{find_file, playbook_folder, BuildCtx, Sources};
use crate::modules::{ControllerFile, Params};
use crate::template::{is_templated, Templates};

/// Refuses what Ansible refuses at load; keeps the rest with the tasks
/// and variables it belongs to (`Playbook::run_time_errors`).
pub fn templates(pb: &mut Playbook) -> Result<(), Vec<Diagnostic>> {
    let t = Templates::new();
    let dirs = playbook_folder(&pb.path);
    let mut errors = Vec::new();
    let mut variables = Vec::new();
    let mut warnings = Vec::new();
    for play in &mut pb.plays {
        play.vars_files
            .iter()
            .for_each(|n| check_strings(&t, n, &mut errors));
        play.vars_node
            .iter()
            .for_each(|n| check_strings(&t, n, &mut variables));
        if let Err(e) = t.check_template(&play.hosts) {
            errors.push(Diagnostic::new(&play.span, format!("hosts: {e}")));
        }
        check_var_cycles(&t, play, &mut variables);
        check_role_defaults(&t, play, &mut variables);
        check_handlers(play, &mut errors);
        check_vars_files(play, &mut errors, &mut warnings);
        let play_ref: &Play = play;
        for task in play_ref
            .tasks
            .iter()
            .chain(&play_ref.handlers)
            .chain(&play_ref.validate)
        {
            check_notify(play_ref, task, &mut errors);
            task.vars_node
                .iter()
                .for_each(|n| check_strings(&t, n, &mut variables));
        }
        for task in play
            .tasks
            .iter_mut()
            .chain(&mut play.handlers)
            .chain(&mut play.validate)
        {
            let mut found = Found {
                load: &mut errors,
                run: Vec::new(),
            };
            check_task(&t, &task.search_path(&dirs), task, &mut found);
            task.run_errors.extend(found.run);
        }
    }
    pb.variable_errors = variables;
    pb.warnings.extend(warnings);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A task's findings, by the moment Ansible makes them.
struct Found<'e> {
    load: &'e mut Vec<Diagnostic>,
    run: Vec<Diagnostic>,
}

fn check_task(t: &Templates, dirs: &[PathBuf], task: &Task, found: &mut Found) {
    let errors = &mut found.run;
    let params = task.params.iter().map(|(_, node)| node);
    let nodes = params
        .chain(&task.loop_items)
        .chain(&task.loop_label)
        .chain(&task.environment);
    for node in nodes {
        check_strings(t, node, errors);
    }
    // Parameters declared as conditions (`assert`'s `that`) compile as `when:` does.
    let docs = task.module.params.docs;
    let that = task
        .params
        .iter()
        .filter(|(name, _)| docs.iter().any(|d| d.conditions && d.name == name))
        .map(|(_, node)| node);
    for cond in [
        &task.when,
        &task.changed_when,
        &task.failed_when,
        &task.ignore_errors_if,
        &task.become_if,
    ]
    .into_iter()
    .flatten()
    .chain(task.retry.as_ref().map(|r| &r.until))
    .chain(that)
    {
        check_condition(t, cond, errors);
    }
    // A file the run's vault passwords cannot open fails on every host
    // alike: refused before any (a missing file is the task's, as Ansible's).
    let file = task.module.controller_file;
    if let Some(file) = file.filter(|f| !f.template) {
        check_vault_file(dirs, task, file, found.load);
    }
    if let Some(file) = file.filter(|f| f.template) {
        check_template_src(t, dirs, task, file, found);
        // Rendering needs a host's variables; how the file is written
        // (dest, owner, mode, validate) is copy's, checked as copy builds it.
        let as_copy: Vec<(String, Node)> = task
            .params
            .iter()
            .map(|(k, n)| match k.as_str() {
                k if k == file.param => {
                    let empty = crate::load::yaml::Value::Str(String::new());
                    ("content".to_string(), Node::new(empty, n.span.clone()))
                }
                _ => (k.clone(), n.clone()),
            })
            .collect();
        check_literal_params(t, dirs, task, &as_copy, copy::COPY.build, found);
    } else if task.ansible.is_none() {
        // Ansible's own module checks its arguments itself, on the host.
        check_literal_params(t, dirs, task, &task.params, task.module.build, found);
    }
}

/// Each role's `defaults/` once, however many tasks the role has.
fn check_role_defaults(t: &Templates, play: &Play, errors: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::BTreeSet::new();
    let roles = play
        .tasks
        .iter()
        .chain(&play.handlers)
        .filter_map(|t| t.role.as_ref());
    for role in roles {
        if seen.insert(role.path.clone()) {
            role.defaults_node
                .iter()
                .for_each(|n| check_strings(t, n, errors));
        }
    }
}

/// A `vars_files` entry without templates names one file (or, as a list,
/// alternatives): the one read must hold a mapping, or apply would stop at
/// the play. One that is nowhere is skipped, as Ansible skips it, and
/// said as a warning.
fn check_vars_files(play: &Play, errors: &mut Vec<Diagnostic>, warnings: &mut Vec<Diagnostic>) {
    let base = play.dir();
    for entry in &play.vars_files {
        if vars::entry_names(entry)
            .iter()
            .any(|n| is_templated(n.as_str().unwrap_or_default()))
        {
            continue;
        }
        warnings.extend(vars::unfound(entry, base));
        let result = vars::read_literal(entry, base);
        if let Err(d) = result {
            errors.push(d);
        }
    }
}

/// A variable that refers to itself, directly or through others, can never
/// be rendered: reported at its position here rather than when a task
/// first reads it.
fn check_var_cycles(t: &Templates, play: &Play, errors: &mut Vec<Diagnostic>) {
    let entries = |node: &Option<Node>| -> Vec<(Node, Node)> {
        node.as_ref()
            .and_then(Node::as_map)
            .unwrap_or_default()
            .to_vec()
    };
    let play_vars = entries(&play.vars_node);
    report_cycles(t, &play_vars, &play_vars, errors);
    for task in play
        .tasks
        .iter()
        .chain(&play.handlers)
        .chain(&play.validate)
    {
        let own = entries(&task.vars_node);
        let mut all = play_vars.clone();
        all.retain(|(k, _)| !own.iter().any(|(o, _)| o.value == k.value));
        all.extend(own.iter().cloned());
        report_cycles(t, &all, &own, errors);
    }
}

/// Reports, at their keys in `report`, the variables of `all` that cannot
/// be resolved.
fn report_cycles(
    t: &Templates,
    all: &[(Node, Node)],
    report: &[(Node, Node)],
    errors: &mut Vec<Diagnostic>,
) {
    let deps: BTreeMap<String, BTreeSet<String>> = all
        .iter()
        .map(|(k, n)| (k.scalar_text().unwrap_or_default(), n.to_json()))
        .filter(|(_, v)| vars::has_template(v))
        .map(|(k, v)| {
            let mut names = BTreeSet::new();
            vars::template_vars(t, &v, &mut names);
            (k, names)
        })
        .collect();
    for (name, depth) in vars::depths(&deps) {
        let key = report
            .iter()
            .map(|(k, _)| k)
            .find(|k| k.scalar_text().as_deref() == Some(name.as_str()));
        if let (Err(why), Some(key)) = (depth, key) {
            errors.push(key.error(format!("variable '{name}' cannot be rendered: {why}")));
        }
    }
}

/// A handler nothing can notify would silently never run.
fn check_handlers(play: &Play, errors: &mut Vec<Diagnostic>) {
    for h in &play.handlers {
        if h.name.is_empty() && h.listen.is_empty() {
            errors.push(
                Diagnostic::new(
                    &h.span,
                    "this handler has no 'name' or 'listen', so nothing can notify it",
                )
                .with_hint("give it a name and notify that name from a task"),
            );
        }
    }
}

/// Ansible fails a run whose `notify` reaches no handler; a typo here would
/// otherwise leave a service running with its old configuration.
fn check_notify(play: &Play, task: &Task, errors: &mut Vec<Diagnostic>) {
    let names = || {
        play.handlers
            .iter()
            .flat_map(|h| std::iter::once(&h.name).chain(&h.listen))
    };
    for (name, span) in &task.notify {
        // A templated name is rendered, and looked for, when the task runs.
        if names().any(|n| n == name) || is_templated(name) {
            continue;
        }
        let d = Diagnostic::new(
            span,
            format!("notify: no handler named '{name}' in this play"),
        );
        errors.push(match suggest(name, names().map(String::as_str)) {
            Some(s) => d.with_hint(format!("did you mean '{s}'?")),
            None => d.with_hint("a handler is found by its 'name' or a 'listen' topic"),
        });
    }
}

/// A task whose parameters hold no template can be built now, so a wrong
/// choice (`state: presnt`), mode or regular expression is reported before
/// any host is touched.
fn check_literal_params(
    t: &Templates,
    dirs: &[PathBuf],
    task: &Task,
    params: &[(String, Node)],
    build: BuildFn,
    found: &mut Found,
) {
    let params: Vec<(String, Value, crate::base::diag::Span)> = params
        .iter()
        .map(|(k, n)| (k.clone(), n.to_json(), n.span.clone()))
        .collect();
    // A templated value, or name (`set_fact: "{{ item }}=moo"`), is
    // known only on a host.
    if params
        .iter()
        .any(|(k, v, _)| crate::exec::vars::has_template(v) || is_templated(k))
    {
        return;
    }
    let vars = Value::Object(serde_json::Map::new());
    let sources = Sources::default();
    let ctx = BuildCtx::new(t, &vars, dirs, &sources, None);
    let p = Params::new(task.module.name, task.module_span.clone(), params, &ctx);
    match build(&p) {
        Err(e) if e.unsupported => found.load.push(e.to_diagnostic()),
        Err(e) => found.run.push(e.to_diagnostic()),
        Ok(_) => {}
    }
}

fn check_strings(t: &Templates, node: &Node, errors: &mut Vec<Diagnostic>) {
    match &node.value {
        crate::load::yaml::Value::Str(s) if crate::load::vault::deferred(s).is_some() => {
            let (why, hint) = crate::load::vault::deferred(s).expect("deferred");
            let d = node.error(why);
            errors.push(match hint {
                Some(hint) => d.with_hint(hint),
                None => d,
            });
        }
        crate::load::yaml::Value::Str(s) if is_templated(s) => {
            if let Err(e) = t.check_template(s) {
                errors.push(node.error(format!("template error: {e}")));
            }
        }
        crate::load::yaml::Value::Seq(items) => {
            items.iter().for_each(|i| check_strings(t, i, errors))
        }
        crate::load::yaml::Value::Map(entries) => entries
            .iter()
            .for_each(|(_, v)| check_strings(t, v, errors)),
        _ => {}
    }
}

fn check_condition(t: &Templates, node: &Node, errors: &mut Vec<Diagnostic>) {
    match &node.value {
        crate::load::yaml::Value::Str(s) => {
            let result = if s.contains("{{") {
                t.check_template(s)
            } else {
                t.check_expression(s)
            };
            if let Err(e) = result {
                errors.push(node.error(format!("invalid condition: {e}")));
            }
        }
        crate::load::yaml::Value::Seq(items) => {
            items.iter().for_each(|i| check_condition(t, i, errors))
        }
        _ => {}
    }
}

/// A `copy` source or an `include_vars` file encrypted with Ansible Vault
/// must open with the run's passwords here, before any host, rather than
/// fail on every host as it plans. Other read errors are the module's to
/// report as it builds.
fn check_vault_file(
    dirs: &[PathBuf],
    task: &Task,
    file: ControllerFile,
    errors: &mut Vec<Diagnostic>,
) {
    let Some((_, node)) = task.params.iter().find(|(k, _)| k == file.param) else {
        return;
    };
    let Some(name) = node.as_str().filter(|n| !is_templated(n)) else {
        return;
    };
    let Some(path) = find_file(dirs, file.subdir, name) else {
        return;
    };
    let vaulted =
        crate::base::input::read_text(&path).is_ok_and(|t| crate::load::vault::is_vault(&t));
    if let (true, Err(e)) = (vaulted, crate::load::vault::read_source(&path)) {
        errors.push(e.diagnostic(&node.span));
    }
}

fn check_template_src(
    t: &Templates,
    dirs: &[PathBuf],
    task: &Task,
    file: ControllerFile,
    found: &mut Found,
) {
    let errors = &mut found.run;
    let Some((_, node)) = task.params.iter().find(|(k, _)| k == file.param) else {
        return;
    };
    let Value::String(src) = node.to_json() else {
        return;
    };
    if src.contains("{{") {
        return;
    }
    let Some(path) = find_file(dirs, file.subdir, &src) else {
        errors.push(node.error(format!(
            "template '{src}' not found in templates/ or the role and playbook folders"
        )));
        return;
    };
    match crate::load::vault::read_source(&path) {
        Ok(text) => {
            if let Err(e) = t.check_template(&text) {
                let line = e.line.map(|l| format!(":{l}")).unwrap_or_default();
                errors.push(node.error(format!("template {}{line}: {e}", path.display())));
            }
        }
        Err(e) => found.load.push(e.diagnostic(&node.span)),
    }
}
