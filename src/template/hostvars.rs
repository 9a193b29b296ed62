//! Ansible's `hostvars`: every host's inventory variables, and what the
//! run has kept of each host so far (its gathered facts, what its tasks
//! set), looked up only when a template reads them (a fleet's worth is
//! never copied into each context).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, Value};
use serde_json::{Map, Value as Json};

type Vars = Map<String, Json>;

/// What the run keeps of each host from one play to the next, as Ansible
/// keeps it for the whole run: its gathered facts, and the variables its
/// tasks set (`set_fact`, `register`, `include_vars`), or that a task
/// delegated to it with `delegate_facts` set. One store per run, shared by
/// every `hostvars` the run makes.
#[derive(Default)]
pub struct Kept(Mutex<HashMap<String, KeptVars>>);

#[derive(Clone, Debug, Default)]
pub struct KeptVars {
    pub facts: Vars,
    pub set: Vars,
}

impl Kept {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, KeptVars>) -> T) -> T {
        f(&mut self.0.lock().expect("not poisoned"))
    }

    /// A host's gathered facts, in place of those it had.
    pub fn facts(&self, host: &str, facts: &Vars) {
        self.with(|k| k.entry(host.into()).or_default().facts = facts.clone());
    }

    /// Variables set on a host, over what it has: by its own play when it
    /// ends (which began from what it had, so nothing is lost), or by
    /// another host's task delegated to it (`delegate_facts`).
    pub fn add(&self, host: &str, vars: &Vars) {
        self.with(|k| k.entry(host.into()).or_default().set.extend(vars.clone()));
    }

    pub fn of(&self, host: &str) -> KeptVars {
        self.with(|k| k.get(host).cloned().unwrap_or_default())
    }

    fn has(&self, host: &str) -> bool {
        self.with(|k| k.contains_key(host))
    }
}

type Lookup<T> = Box<dyn Fn(&str) -> T + Send + Sync>;

pub struct HostVars {
    hosts: BTreeSet<String>,
    inventory: Lookup<Vars>,
    /// The variables of a host the run added after these were made
    /// (`add_host`), if it did.
    added: Option<Lookup<Option<Vars>>>,
    kept: Arc<Kept>,
}

impl HostVars {
    /// `inventory` gives a host's merged inventory variables.
    pub fn new(
        hosts: impl IntoIterator<Item = String>,
        inventory: impl Fn(&str) -> Vars + Send + Sync + 'static,
        kept: Arc<Kept>,
    ) -> Self {
        HostVars {
            hosts: hosts.into_iter().collect(),
            inventory: Box::new(inventory),
            added: None,
            kept,
        }
    }

    /// Answers for hosts the run adds later (`add_host` in this play) too.
    pub fn with_added(
        mut self,
        added: impl Fn(&str) -> Option<Vars> + Send + Sync + 'static,
    ) -> Self {
        self.added = Some(Box::new(added));
        self
    }

    /// What the run keeps of each host.
    pub fn kept(&self) -> &Kept {
        &self.kept
    }

    /// One host's variables: inventory, then facts, then what its tasks
    /// set. A host outside the inventory (the implicit `localhost`) has
    /// them once a task set something on it, or the run added it.
    pub fn of(&self, host: &str) -> Option<Vars> {
        let known = self.hosts.contains(host);
        let added = match known {
            true => None,
            false => self.added.as_ref().and_then(|added| added(host)),
        };
        if !known && added.is_none() && !self.kept.has(host) {
            return None;
        }
        let mut vars = added.unwrap_or_else(|| (self.inventory)(host));
        let kept = self.kept.of(host);
        vars.extend(kept.facts);
        vars.extend(kept.set);
        Some(vars)
    }
}

impl std::fmt::Debug for HostVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hostvars of {} hosts", self.hosts.len())
    }
}

impl Object for HostVars {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.of(key.as_str()?)
            .map(|v| Value::from(minijinja::value::Serde(&v)))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.hosts.iter().map(|h| Value::from(h.as_str())).collect())
    }
}
