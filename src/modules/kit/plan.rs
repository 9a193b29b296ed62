//! What a module's planning returns and reads: changes, steps and predicted
//! effects, over the probe answers of one host.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use thiserror::Error;

use crate::modules::params::Params;
use crate::remote::probe::ProbeResult;

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
    pub(crate) fn new(
        subject: impl Into<String>,
        before: Option<String>,
        after: Option<String>,
    ) -> Self {
        Change {
            subject: subject.into(),
            before,
            after,
            diff: None,
            evidence: None,
        }
    }

    pub(crate) fn with_evidence(mut self, evidence: impl Into<String>) -> Self {
        self.evidence = Some(evidence.into());
        self
    }
}

/// What the host will look like after a plan's steps ran, so that later
/// tasks plan against predicted rather than stale facts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Effect {
    /// The probe with this key would now answer this.
    Predict(String, ProbeResult),
    /// The probe with this key can no longer be trusted; tasks that read it
    /// must be planned after the steps ran.
    Invalidate(String),
    /// Anything may have changed (a command ran).
    InvalidateAll,
}

/// A change a task makes to the run's inventory, which the plays after its
/// own see.
#[derive(Clone, Debug, PartialEq)]
pub enum InventoryChange {
    /// The host joins `group`, made under `parents` when the inventory has
    /// none of that name (`group_by`).
    Join { group: String, parents: Vec<String> },
    /// A host with its groups and variables, new or known (`add_host`).
    Host {
        name: String,
        groups: Vec<String>,
        vars: serde_json::Map<String, serde_json::Value>,
    },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Empty means the host already complies.
    pub changes: Vec<Change>,
    /// Shell steps run in order during apply; each must fail loudly.
    pub steps: Vec<String>,
    pub effects: Vec<Effect>,
    /// Set when the outcome cannot be known without running something.
    pub unknown: Option<String>,
    /// Findings that are not drift but that an operator must know about.
    pub notes: Vec<String>,
    /// Variables the task sets for the host's later tasks (`set_fact`,
    /// `include_vars`): decided on the controller, so they cost no step.
    pub sets: serde_json::Map<String, serde_json::Value>,
    /// Ansible's return values besides `changed`/`failed` (`stat`, `msg`),
    /// registered with the task's result.
    pub returns: serde_json::Map<String, serde_json::Value>,
    /// The `diff` Ansible's module would return for this change, which its
    /// modules return only in diff mode: registered only then.
    pub diff: Option<serde_json::Value>,
    /// What the task changes in the run's inventory (`group_by`, `add_host`).
    pub inventory: Vec<InventoryChange>,
    /// With no changes, the steps still run in apply mode and the task
    /// reports ok: upkeep Ansible reports unchanged (dnf's and yum's
    /// cache refresh). Check mode runs nothing.
    pub upkeep: bool,
    /// The result says when the steps ran (`start`, `end`, `delta`), as
    /// Ansible's command module's does.
    pub timed: bool,
}

impl Plan {
    pub(crate) fn noop() -> Self {
        Plan::default()
    }

    /// Adds the plan of a part (a file the module also writes) after this one's.
    pub(crate) fn absorb(&mut self, part: Plan) {
        self.changes.extend(part.changes);
        self.steps.extend(part.steps);
        self.effects.extend(part.effects);
        self.notes.extend(part.notes);
        self.sets.extend(part.sets);
        self.inventory.extend(part.inventory);
        self.returns.extend(part.returns);
        self.unknown = self.unknown.take().or(part.unknown);
        self.upkeep |= part.upkeep;
        self.timed |= part.timed;
    }

    /// Sets a fact as Ansible's fact modules do: a variable of its own and
    /// a key of `ansible_facts` (joining `known`, the host's facts when the
    /// task was built), returned under `ansible_facts` too.
    pub(crate) fn set_fact(&mut self, known: &Map<String, Value>, name: &str, value: Value) {
        let mut all = known.clone();
        all.insert(name.into(), value.clone());
        self.sets.insert(name.into(), value.clone());
        self.sets.insert("ansible_facts".into(), Value::Object(all));
        self.returns
            .insert("ansible_facts".into(), json!({ name: value }));
    }
}

/// The host's facts as a task sees them, for `Plan::set_fact`.
pub(crate) fn known_facts(p: &Params) -> Map<String, Value> {
    p.ctx
        .var("ansible_facts")
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[derive(Debug, Error, PartialEq)]
pub(crate) enum ModuleError {
    /// Something the task needs is not on the host: a toolkit, a unit, a
    /// file, a folder, a kernel key, a package manager, systemd.
    #[error("{0}")]
    Missing(String),
    /// Like `Missing`, for what an earlier task of the run may provide: a
    /// file or folder, a unit, a user, a toolkit, a kernel key, a program a
    /// package installs. Check mode, where that task did not run, says
    /// `unknown` rather than failing.
    #[error("{0}")]
    Absent(String),
    /// The host is in a state the module refuses to act on, because acting
    /// would lose data or the host: too little disk or memory, a link or a
    /// special file where a regular file belongs.
    #[error("{0}")]
    Refused(String),
    /// The host cannot do what is asked: a filesystem without swap files, a
    /// toolkit of another version than the pin, a static unit.
    #[error("{0}")]
    Unsupported(String),
    /// The playbook itself fails the host (`fail`, an `assert` that does
    /// not hold, or a condition that cannot be evaluated).
    #[error("{0}")]
    Asserted(String),
    /// The module failed and returns these values besides `msg`, as an
    /// Ansible module's `fail_json` does (`async_status` of a failed job).
    #[error("{msg}")]
    Returned {
        msg: String,
        returns: Map<String, Value>,
    },
    /// The GPU smoke test ran; these checks failed.
    #[error("GPU smoke test failed: {}", .0.join("; "))]
    SmokeFailed(Vec<String>),
    /// A pattern of the task gave up on the file's text.
    #[error(transparent)]
    Pattern(#[from] crate::pyre::MatchError),
    /// A probe answered something the module could not understand.
    #[error("unexpected probe output for {key}: {detail}")]
    Fact { key: String, detail: String },
}

impl ModuleError {
    /// The values a failure returns besides `msg`.
    pub(crate) fn returns(&self) -> Map<String, Value> {
        match self {
            ModuleError::Returned { returns, .. } => returns.clone(),
            _ => Map::new(),
        }
    }
}

/// A probe's key as `user` sees it: a task run as another user than its
/// play's scripts probes as that user, and those answers are kept apart
/// from root's.
pub(crate) fn key_as(user: &str, key: &str) -> String {
    format!("{key} (as {user})")
}

/// The key a view was taken of. A key that only looks like a view (a path
/// ending in " (as x)") drops more answers than needed, never fewer.
fn base_key(key: &str) -> &str {
    key.strip_suffix(')')
        .and_then(|k| k.rsplit_once(" (as "))
        .map_or(key, |(base, _)| base)
}

/// The probe answers a plan is computed from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    results: BTreeMap<String, ProbeResult>,
}

impl Facts {
    pub(crate) fn new(results: BTreeMap<String, ProbeResult>) -> Self {
        Facts { results }
    }

    pub(crate) fn get(&self, key: &str) -> Result<&ProbeResult, ModuleError> {
        self.results.get(key).ok_or_else(|| ModuleError::Fact {
            key: key.to_string(),
            detail: "not probed".into(),
        })
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.results.contains_key(key)
    }

    /// Records what a probe would now answer. Every other user's view of
    /// the same key goes: the change reaches what they see too.
    pub(crate) fn insert(&mut self, key: String, result: ProbeResult) {
        self.drop_views(base_key(&key));
        self.results.insert(key, result);
    }

    /// Forgets a probe's answer, as every user saw it.
    pub(crate) fn remove(&mut self, key: &str) {
        self.drop_views(base_key(key));
    }

    /// The answers `user` got, under the keys its module asked by.
    pub(crate) fn seen_by(&self, user: &str) -> Facts {
        let suffix = key_as(user, "");
        let results = self
            .results
            .iter()
            .filter_map(|(k, r)| Some((k.strip_suffix(&suffix)?.to_string(), r.clone())))
            .collect();
        Facts { results }
    }

    fn drop_views(&mut self, base: &str) {
        let prefix = key_as("", base);
        let prefix = prefix.trim_end_matches(')');
        let views: Vec<String> = self
            .results
            .range::<str, _>((std::ops::Bound::Excluded(base), std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(base))
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        self.results.remove(base);
        for k in views {
            self.results.remove(&k);
        }
    }

    pub(crate) fn extend(&mut self, other: BTreeMap<String, ProbeResult>) {
        self.results.extend(other);
    }

    /// Keeps only the answers whose keys `keep` accepts.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str, &ProbeResult) -> bool) {
        self.results.retain(|k, r| keep(k, r));
    }

    /// Whether the answer under `key` is kept for the rest of the run: a
    /// durable probe's, once it succeeded (a failure, such as no Python
    /// yet, may be mended by a later task).
    pub(crate) fn lasts(&self, key: &str) -> bool {
        crate::remote::probe::is_durable(key) && self.results.get(key).is_some_and(|r| r.rc == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_seen_by_one_user_drops_every_other_view_of_it() {
        let answer = |s: &str| ProbeResult::ok(s);
        let mut facts = Facts::default();
        facts.extend(BTreeMap::from([
            ("file:/a".to_string(), answer("root")),
            (key_as("ops", "file:/a"), answer("ops")),
            (key_as("app", "file:/a"), answer("app")),
            ("file:/ab".to_string(), answer("other path")),
        ]));
        assert_eq!(facts.seen_by("ops").get("file:/a").unwrap().stdout, "ops");
        assert!(!facts.seen_by("ops").contains("file:/ab"));

        facts.insert(key_as("ops", "file:/a"), answer("ops wrote"));
        assert!(!facts.contains("file:/a"));
        assert!(!facts.contains(&key_as("app", "file:/a")));
        assert_eq!(
            facts.seen_by("ops").get("file:/a").unwrap().stdout,
            "ops wrote"
        );
        assert!(facts.contains("file:/ab"));

        facts.insert("file:/a".into(), answer("root wrote"));
        assert!(facts.seen_by("ops").results.is_empty());
        facts.remove("file:/a");
        assert!(!facts.contains("file:/a"));
        assert!(facts.contains("file:/ab"));
    }
}
