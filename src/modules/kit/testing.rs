//! Helpers for module unit tests: build a module from JSON parameters as the
//! executor does, and feed it recorded probe answers.

use super::module::{Module, ModuleSpec};
use super::plan::{Facts, Plan};
use crate::modules::params::{self, ParamError, Params};
use crate::remote::probe::ProbeResult;

/// Builds a module from JSON parameters the way the executor does, for tests.
pub(crate) fn build_test(
    spec: &ModuleSpec,
    params: serde_json::Value,
) -> Result<Box<dyn Module>, ParamError> {
    with_params(spec, params, spec.build)
}

/// Builds a module whose build reads the task's variables or files beside
/// the playbook (`debug: var`, `assert`, `include_vars`).
pub fn build_test_with(
    spec: &ModuleSpec,
    params: serde_json::Value,
    vars: serde_json::Value,
    search_dirs: &[std::path::PathBuf],
) -> Result<Box<dyn Module>, ParamError> {
    with_ctx(spec, params, &vars, search_dirs, spec.build)
}

/// Calls `f` with JSON parameters as the executor hands them to `spec`.
pub(crate) fn with_params<T>(
    spec: &ModuleSpec,
    params: serde_json::Value,
    f: impl FnOnce(&Params) -> T,
) -> T {
    with_ctx(spec, params, &serde_json::json!({}), &[], f)
}

fn with_ctx<T>(
    spec: &ModuleSpec,
    params: serde_json::Value,
    vars: &serde_json::Value,
    search_dirs: &[std::path::PathBuf],
    f: impl FnOnce(&Params) -> T,
) -> T {
    let templates = crate::template::Templates::new();
    let sources = params::Sources::default();
    let ctx = params::BuildCtx::new(&templates, vars, search_dirs, &sources, None);
    let span = crate::base::diag::Span::synthetic("test");
    let entries = params
        .as_object()
        .expect("params are a mapping")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), span.clone()))
        .collect();
    f(&Params::new(spec.name, span, entries, &ctx))
}

/// The message of a parameter error, for tests.
pub(crate) fn build_error(spec: &ModuleSpec, params: serde_json::Value) -> String {
    match build_test(spec, params) {
        Ok(_) => panic!("expected a parameter error"),
        Err(e) => e.message,
    }
}

/// Asserts that every step and probe parses as POSIX sh (`sh -n`: nothing runs).
pub(crate) fn assert_sh_syntax(module: &dyn Module, plan: &Plan) {
    let probes = module.probes().into_iter().map(|p| p.script);
    for script in probes.chain(plan.steps.iter().cloned()) {
        assert_sh_parses(&script);
    }
}

/// Asserts that one script parses as POSIX sh (`sh -n`: nothing runs).
pub(crate) fn assert_sh_parses(script: &str) {
    let out = std::process::Command::new("sh")
        .args(["-n", "-c", script])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Facts from `(key, stdout)` pairs, for tests.
pub(crate) fn facts_of(answers: &[(&str, &str)]) -> Facts {
    let mut f = Facts::default();
    for (k, v) in answers {
        f.insert(k.to_string(), ProbeResult::ok(*v));
    }
    f
}

/// The facts after a plan's steps ran: its predicted answers in place.
pub(crate) fn settled(facts: &Facts, plan: &Plan) -> Facts {
    let mut f = facts.clone();
    for e in &plan.effects {
        if let super::plan::Effect::Predict(k, r) = e {
            f.insert(k.clone(), r.clone());
        }
    }
    f
}

/// A plan that changes nothing and returns `msg`, as Ansible's text
/// editors do.
pub(crate) fn unchanged_saying(msg: &str) -> Plan {
    let mut plan = Plan::noop();
    plan.returns.insert("msg".into(), msg.into());
    plan
}

/// Facts holding one root-owned file at `path` with `content` (or none).
pub(crate) fn file_facts(path: &str, content: Option<&str>, mode: u32) -> Facts {
    use super::fact::Fact;
    let state = content.map(|c| super::files::FileState::written(c, mode, "root", "root"));
    let answer = super::files::FileFact::render(&state).stdout;
    facts_of(&[(&super::files::FileFact::key(path), &answer)])
}

/// The content of the file at `path` among `facts`.
pub(crate) fn file_content(facts: &Facts, path: &str) -> String {
    use super::fact::Fact;
    super::files::FileFact::read(facts, path)
        .unwrap()
        .unwrap()
        .content
        .unwrap()
}

/// What of a step the shell reads as code: its single-quoted words (a
/// file's content, a hostile value) left out, so a test can say that a
/// value only ever travels quoted.
pub(crate) fn unquoted(step: &str) -> String {
    let (mut out, mut chars) = (String::new(), step.chars());
    let mut double = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                out.extend(chars.next());
            }
            '"' => {
                double = !double;
                out.push(c);
            }
            '\'' if !double => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every step of a plan as [`unquoted`] reads it.
pub(crate) fn unquoted_steps(plan: &Plan) -> String {
    plan.steps
        .iter()
        .map(|s| unquoted(s))
        .collect::<Vec<_>>()
        .join("\n")
}
