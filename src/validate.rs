//! Static checks of a loaded playbook: every template and condition must
//! compile, every `src:` template must exist and compile. No host is touched.

use std::path::PathBuf;

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::modules::params::{find_file, search_dirs, BuildCtx};
use crate::modules::Params;
use crate::playbook::{Playbook, Task};
use crate::template::Templates;
use crate::yaml::Node;

pub fn templates(pb: &Playbook) -> Result<(), Vec<Diagnostic>> {
    let t = Templates::new();
    let dirs = search_dirs(&pb.path);
    let mut errors = Vec::new();
    for play in &pb.plays {
        for task in play
            .tasks
            .iter()
            .chain(&play.handlers)
            .chain(&play.validate)
        {
            check_task(&t, &dirs, task, &mut errors);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn check_task(t: &Templates, dirs: &[PathBuf], task: &Task, errors: &mut Vec<Diagnostic>) {
    for (_, node) in &task.params {
        check_strings(t, node, errors);
    }
    if let Some(items) = &task.loop_items {
        check_strings(t, items, errors);
    }
    for cond in [&task.when, &task.changed_when, &task.failed_when]
        .into_iter()
        .flatten()
    {
        check_condition(t, cond, errors);
    }
    if task.module.name == "template" {
        check_template_src(t, dirs, task, errors);
    } else {
        check_literal_params(t, dirs, task, errors);
    }
}

/// A task whose parameters hold no template can be built now, so a wrong
/// choice (`state: presnt`), mode or regular expression is reported before
/// any host is touched.
fn check_literal_params(
    t: &Templates,
    dirs: &[PathBuf],
    task: &Task,
    errors: &mut Vec<Diagnostic>,
) {
    let params: Vec<(String, Value, crate::diag::Span)> = task
        .params
        .iter()
        .map(|(k, n)| (k.clone(), n.to_json(), n.span.clone()))
        .collect();
    if params
        .iter()
        .any(|(_, v, _)| crate::exec::vars::has_template(v))
    {
        return;
    }
    let vars = Value::Object(serde_json::Map::new());
    let ctx = BuildCtx {
        templates: t,
        vars: &vars,
        search_dirs: dirs,
    };
    let p = Params::new(task.module.name, task.module_span.clone(), params, &ctx);
    if let Err(e) = (task.module.build)(&p) {
        errors.push(e.to_diagnostic());
    }
}

fn check_strings(t: &Templates, node: &Node, errors: &mut Vec<Diagnostic>) {
    match &node.value {
        crate::yaml::Value::Str(s) if crate::template::is_templated(s) => {
            if let Err(e) = t.check_template(s) {
                errors.push(node.error(format!("template error: {e}")));
            }
        }
        crate::yaml::Value::Seq(items) => items.iter().for_each(|i| check_strings(t, i, errors)),
        crate::yaml::Value::Map(entries) => entries
            .iter()
            .for_each(|(_, v)| check_strings(t, v, errors)),
        _ => {}
    }
}

fn check_condition(t: &Templates, node: &Node, errors: &mut Vec<Diagnostic>) {
    match &node.value {
        crate::yaml::Value::Str(s) => {
            let result = if s.contains("{{") {
                t.check_template(s)
            } else {
                t.check_expression(s)
            };
            if let Err(e) = result {
                errors.push(node.error(format!("invalid condition: {e}")));
            }
        }
        crate::yaml::Value::Seq(items) => items.iter().for_each(|i| check_condition(t, i, errors)),
        _ => {}
    }
}

fn check_template_src(t: &Templates, dirs: &[PathBuf], task: &Task, errors: &mut Vec<Diagnostic>) {
    let Some((_, node)) = task.params.iter().find(|(k, _)| k == "src") else {
        return;
    };
    let Value::String(src) = node.to_json() else {
        return;
    };
    if src.contains("{{") {
        return;
    }
    let Some(path) = find_file(dirs, &src) else {
        errors.push(node.error(format!(
            "template '{src}' not found in templates/, files/ or beside the playbook"
        )));
        return;
    };
    match crate::input::read_text(&path) {
        Ok(text) => {
            if let Err(e) = t.check_template(&text) {
                let line = e.line.map(|l| format!(":{l}")).unwrap_or_default();
                errors.push(node.error(format!("template {}{line}: {e}", path.display())));
            }
        }
        Err(e) => errors.push(e.diagnostic(&node.span)),
    }
}
