//! Modules turn desired state into plans. A module never runs anything: it
//! declares [`Probe`]s, and [`Module::plan`] is a pure function of their
//! answers that returns the changes and the guarded shell steps that make them.

pub mod command;
pub mod copy;
pub mod cuda_env;
pub mod file;
pub mod gpu_smoke;
pub mod kit;
pub mod lineinfile;
pub mod mount;
pub mod package;
pub mod params;
pub mod service;
pub mod swapfile;
pub mod sysctl;

use std::collections::BTreeMap;

use thiserror::Error;

pub use params::{ParamError, Params};

use crate::remote::probe::{Probe, ProbeResult};

/// One difference between the host and the desired state.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Change {
    /// What differs: a path, a sysctl key, a unit name.
    pub subject: String,
    pub before: Option<String>,
    pub after: Option<String>,
    /// A unified diff for file contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Where the current value comes from (a file:line, a command), for auditors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// `subject: before → after`, the one-line form reports and errors use.
impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        write!(
            f,
            "{}: {} → {}",
            self.subject,
            show(&self.before),
            show(&self.after)
        )
    }
}

impl Change {
    pub fn new(subject: impl Into<String>, before: Option<String>, after: Option<String>) -> Self {
        Change {
            subject: subject.into(),
            before,
            after,
            diff: None,
            evidence: None,
        }
    }

    pub fn with_evidence(mut self, evidence: impl Into<String>) -> Self {
        self.evidence = Some(evidence.into());
        self
    }
}

/// What the host will look like after a plan's steps ran, so that later
/// tasks plan against predicted rather than stale facts.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// The probe with this key would now answer this.
    Predict(String, ProbeResult),
    /// The probe with this key can no longer be trusted; tasks that read it
    /// must be planned after the steps ran.
    Invalidate(String),
    /// Anything may have changed (a command ran).
    InvalidateAll,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Empty means the host already complies.
    pub changes: Vec<Change>,
    /// Shell steps run in order during apply; each must fail loudly.
    pub steps: Vec<String>,
    pub effects: Vec<Effect>,
    /// Set when the outcome cannot be known without running something.
    pub unknown: Option<String>,
    /// Findings that are not drift but that an operator must know about.
    pub notes: Vec<String>,
}

impl Plan {
    pub fn noop() -> Self {
        Plan::default()
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum ModuleError {
    /// The host cannot reach the desired state (unknown key, missing path).
    #[error("{0}")]
    Host(String),
    /// A probe answered something the module could not understand.
    #[error("unexpected probe output for {key}: {detail}")]
    Fact { key: String, detail: String },
}

/// The probe answers a plan is computed from.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    results: BTreeMap<String, ProbeResult>,
}

impl Facts {
    pub fn new(results: BTreeMap<String, ProbeResult>) -> Self {
        Facts { results }
    }

    pub fn get(&self, key: &str) -> Result<&ProbeResult, ModuleError> {
        self.results.get(key).ok_or_else(|| ModuleError::Fact {
            key: key.to_string(),
            detail: "not probed".into(),
        })
    }

    pub fn contains(&self, key: &str) -> bool {
        self.results.contains_key(key)
    }

    pub fn insert(&mut self, key: String, result: ProbeResult) {
        self.results.insert(key, result);
    }

    pub fn remove(&mut self, key: &str) {
        self.results.remove(key);
    }

    pub fn extend(&mut self, other: BTreeMap<String, ProbeResult>) {
        self.results.extend(other);
    }
}

pub trait Module: Send + Sync {
    fn probes(&self) -> Vec<Probe>;
    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError>;
    /// Commands whose effect is their output: not verified after apply,
    /// their result registered from the real run.
    fn is_command(&self) -> bool {
        false
    }
    /// The command itself as a probe, for tasks that declare it read-only.
    fn query_probe(&self) -> Option<Probe> {
        None
    }
    /// Validations whose probe must see every earlier change of the run.
    fn reads_everything(&self) -> bool {
        false
    }
}

pub type BuildFn = fn(&Params) -> Result<Box<dyn Module>, ParamError>;

/// A module as playbooks name it.
pub struct ModuleSpec {
    pub name: &'static str,
    /// Other keys that select this module (Ansible's FQCNs and old names).
    pub aliases: &'static [&'static str],
    pub params: &'static [&'static str],
    pub required: &'static [&'static str],
    /// Parameter name a free-form string (`command: echo hi`) is stored under.
    pub free_form: Option<&'static str>,
    pub build: BuildFn,
}

impl std::fmt::Debug for ModuleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModuleSpec({})", self.name)
    }
}

impl ModuleSpec {
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

pub fn registry() -> &'static [ModuleSpec] {
    static SPECS: &[ModuleSpec] = &[
        command::COMMAND,
        command::SHELL,
        copy::COPY,
        copy::TEMPLATE,
        file::FILE,
        gpu_smoke::GPU_SMOKE,
        lineinfile::LINEINFILE,
        sysctl::SYSCTL,
        swapfile::SWAPFILE,
        service::SERVICE,
        cuda_env::CUDA_ENV,
        package::PACKAGE,
        mount::MOUNT,
    ];
    SPECS
}

/// The spec selected by a task key, if any.
pub fn find(key: &str) -> Option<&'static ModuleSpec> {
    registry().iter().find(|s| s.names().any(|n| n == key))
}

/// Every key that selects a module, for "did you mean" hints.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    registry().iter().flat_map(ModuleSpec::names)
}

/// Builds a module from JSON parameters the way the executor does, for tests.
#[cfg(test)]
pub(crate) fn build_test(
    spec: &ModuleSpec,
    params: serde_json::Value,
) -> Result<Box<dyn Module>, ParamError> {
    let templates = crate::template::Templates::new();
    let vars = serde_json::json!({});
    let ctx = params::BuildCtx {
        templates: &templates,
        vars: &vars,
        search_dirs: &[],
        sources: &params::Sources::default(),
    };
    let span = crate::load::diag::Span::synthetic("test");
    let entries = params
        .as_object()
        .expect("params are a mapping")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), span.clone()))
        .collect();
    (spec.build)(&Params::new(spec.name, span, entries, &ctx))
}

/// The message of a parameter error, for tests.
#[cfg(test)]
pub(crate) fn build_error(spec: &ModuleSpec, params: serde_json::Value) -> String {
    match build_test(spec, params) {
        Ok(_) => panic!("expected a parameter error"),
        Err(e) => e.message,
    }
}

/// Asserts that every step and probe parses as POSIX sh (`sh -n`: nothing runs).
#[cfg(test)]
pub(crate) fn assert_sh_syntax(module: &dyn Module, plan: &Plan) {
    let probes = module.probes().into_iter().map(|p| p.script);
    for script in probes.chain(plan.steps.iter().cloned()) {
        let out = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Facts from `(key, stdout)` pairs, for tests.
#[cfg(test)]
pub(crate) fn facts_of(answers: &[(&str, &str)]) -> Facts {
    let mut f = Facts::default();
    for (k, v) in answers {
        f.insert(k.to_string(), ProbeResult::ok(*v));
    }
    f
}
