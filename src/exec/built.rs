//! The modules built for one host's task items, kept for the play: the
//! probe that goes out ahead of each batch and the planning that follows
//! share them, so an item's parameters are rendered and its module built
//! once, and again only when a variable it reads has changed.
//!
//! A module is a pure function of its rendered parameters (it plans from
//! facts it is handed), so one built from the same values is the same
//! module; the key is those values. A task reading what no variable holds
//! (a lookup, `hostvars`, `now()`) may render differently each time and
//! is never kept.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::modules::kit::files::sha256_hex;
use crate::modules::params::VarsRead;
use crate::modules::{ConnectionAction, Facts, Module, ModuleError, Plan};
use crate::remote::probe::{Probe, ProbeResult};

/// What an item's module is built from: its task, and a digest of the
/// user and mode it runs as and the values of every variable its
/// parameters read (the loop item among them when they read it: items
/// that render the same parameters share one module).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BuildKey {
    task: usize,
    digest: String,
}

impl BuildKey {
    /// `None` when a name the task reads is no variable here.
    pub fn new(
        task: usize,
        reads: &BTreeSet<String>,
        vars: &Value,
        user: &Option<String>,
        check: bool,
    ) -> Option<Self> {
        let mut values = Vec::with_capacity(reads.len() + 2);
        values.push(serde_json::json!([user, check]));
        for name in reads {
            values.push(vars.get(name)?.clone());
        }
        let text = serde_json::to_string(&values).ok()?;
        Some(BuildKey {
            task,
            digest: sha256_hex(text.as_bytes()),
        })
    }
}

/// The modules built so far, by what they were built from.
#[derive(Default)]
pub(crate) struct Built {
    modules: RefCell<HashMap<BuildKey, Kept>>,
}

/// The task of every build in this test binary, for the tests that hold
/// an item to one (their tasks have names of their own).
#[cfg(test)]
pub(crate) static BUILDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct Kept {
    module: Arc<dyn Module>,
    /// What its build read beyond its parameters, as it was then.
    read: Read,
}

enum Read {
    Values(Vec<(String, Value)>),
    /// Digest of all the variables.
    All(String),
}

impl Read {
    fn of(read: VarsRead, vars: &Value) -> Self {
        match read {
            VarsRead::Names(names) => Read::Values(
                names
                    .into_iter()
                    .map(|n| {
                        let v = vars.get(&n).cloned().unwrap_or(Value::Null);
                        (n, v)
                    })
                    .collect(),
            ),
            VarsRead::All => Read::All(digest(vars)),
        }
    }

    fn holds(&self, vars: &Value) -> bool {
        match self {
            Read::Values(values) => values
                .iter()
                .all(|(n, v)| vars.get(n).unwrap_or(&Value::Null) == v),
            Read::All(d) => *d == digest(vars),
        }
    }
}

fn digest(v: &Value) -> String {
    sha256_hex(serde_json::to_string(v).unwrap_or_default().as_bytes())
}

impl Built {
    /// The module built for `key` in these variables, building it with
    /// `build` the first time or when what it read has changed since.
    pub fn get_or_build<E>(
        &self,
        key: Option<BuildKey>,
        vars: &Value,
        build: impl FnOnce() -> Result<(Box<dyn Module>, VarsRead), E>,
    ) -> Result<Box<dyn Module>, E> {
        if let Some(key) = &key {
            if let Some(kept) = self.modules.borrow().get(key) {
                if kept.read.holds(vars) {
                    return Ok(Box::new(kept.module.clone()));
                }
            }
        }
        let (module, read) = build()?;
        let module: Arc<dyn Module> = Arc::from(module);
        if let Some(key) = key {
            let read = Read::of(read, vars);
            let kept = Kept {
                module: module.clone(),
                read,
            };
            self.modules.borrow_mut().insert(key, kept);
        }
        Ok(Box::new(module))
    }
}

/// A kept module handed out again: it answers as the one built.
impl Module for Arc<dyn Module> {
    fn probes(&self) -> Vec<Probe> {
        (**self).probes()
    }
    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        (**self).plan(facts)
    }
    fn is_command(&self) -> bool {
        (**self).is_command()
    }
    fn command_returns(&self, output: &ProbeResult) -> serde_json::Map<String, Value> {
        (**self).command_returns(output)
    }
    fn command_result(&self, r: &ProbeResult) -> Value {
        (**self).command_result(r)
    }
    fn output_is_json(&self) -> bool {
        (**self).output_is_json()
    }
    fn query_probe(&self) -> Option<Probe> {
        (**self).query_probe()
    }
    fn reads_everything(&self) -> bool {
        (**self).reads_everything()
    }
    fn connection_action(&self) -> Option<ConnectionAction> {
        (**self).connection_action()
    }
    fn on_controller(&self, facts: &Facts) -> Option<Box<dyn Module>> {
        (**self).on_controller(facts)
    }
}
