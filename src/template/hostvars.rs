//! Ansible's `hostvars`: every host's inventory variables, and the facts of
//! those whose facts were gathered so far in the run, looked up only when a
//! template reads them (a fleet's worth is never copied into each context).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, Value};
use serde_json::{Map, Value as Json};

type Vars = Map<String, Json>;

pub struct HostVars {
    hosts: BTreeSet<String>,
    inventory: Box<dyn Fn(&str) -> Vars + Send + Sync>,
    facts: Mutex<HashMap<String, Vars>>,
}

impl HostVars {
    /// `inventory` gives a host's merged inventory variables.
    pub fn new(
        hosts: impl IntoIterator<Item = String>,
        inventory: impl Fn(&str) -> Vars + Send + Sync + 'static,
    ) -> Self {
        HostVars {
            hosts: hosts.into_iter().collect(),
            inventory: Box::new(inventory),
            facts: Mutex::new(HashMap::new()),
        }
    }

    /// A host's facts, as gathered: later plays and other hosts see them.
    pub fn record_facts(&self, host: &str, facts: &Vars) {
        let mut known = self.facts.lock().expect("not poisoned");
        known.insert(host.to_string(), facts.clone());
    }

    /// One host's variables: inventory, then facts.
    pub fn of(&self, host: &str) -> Option<Vars> {
        if !self.hosts.contains(host) {
            return None;
        }
        let mut vars = (self.inventory)(host);
        if let Some(facts) = self.facts.lock().expect("not poisoned").get(host) {
            vars.extend(facts.clone());
        }
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
