//! The variables a template sees, with two of Ansible's magic variables
//! that are views of them: `vars` (the same variables, for `vars['name_' ~
//! x]` and `vars[item]`) and `hostvars`, whose entry for the current host
//! is everything the host's templates see (play and task variables,
//! registered results), not only its inventory variables and facts; and
//! the run's `groups`, one value shared by every host's templates.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, Serde, Value};
use serde_json::Value as Json;

use super::HostVars;

pub(super) fn scope(
    vars: &Json,
    hostvars: Option<&Arc<HostVars>>,
    groups: Option<&Value>,
) -> Value {
    Value::from_object(Scope {
        vars: Value::from(Serde(vars)),
        hostvars: hostvars.cloned(),
        groups: groups.cloned(),
    })
}

#[derive(Debug)]
struct Scope {
    vars: Value,
    hostvars: Option<Arc<HostVars>>,
    groups: Option<Value>,
}

impl Scope {
    /// The run's `groups`, where the variables lack one of their own.
    fn run_groups(&self) -> Option<&Value> {
        let own = self
            .vars
            .get_attr("groups")
            .is_ok_and(|v| !v.is_undefined());
        self.groups.as_ref().filter(|_| !own)
    }

    /// `vars`: the variables, with the run's `groups` where they lack one.
    fn all_vars(&self) -> Value {
        match self.run_groups() {
            Some(groups) => {
                let mut all: indexmap::IndexMap<Value, Value> = Default::default();
                if let Ok(keys) = self.vars.try_iter() {
                    for key in keys {
                        let value = self.vars.get_item(&key).unwrap_or_default();
                        all.insert(key, value);
                    }
                }
                all.insert(Value::from("groups"), groups.clone());
                Value::from_object(all)
            }
            _ => self.vars.clone(),
        }
    }
}

impl Object for Scope {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let own = self.vars.get_item(key).ok().filter(|v| !v.is_undefined());
        own.or_else(|| match key.as_str()? {
            "vars" => Some(self.all_vars()),
            "groups" => self.groups.clone(),
            "hostvars" => {
                let here = self.vars.get_attr("inventory_hostname").ok()?;
                Some(Value::from_object(HostVarsHere {
                    all: self.hostvars.clone()?,
                    host: here.as_str()?.to_string(),
                    here: self.vars.clone(),
                }))
            }
            _ => None,
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<Value> = match self.vars.try_iter() {
            Ok(keys) => keys.collect(),
            Err(_) => return Enumerator::Empty,
        };
        if self.run_groups().is_some() {
            keys.push(Value::from("groups"));
        }
        Enumerator::Values(keys)
    }
}

/// `hostvars` as the current host's templates see it.
#[derive(Debug)]
struct HostVarsHere {
    all: Arc<HostVars>,
    host: String,
    here: Value,
}

impl Object for HostVarsHere {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        if key.as_str() == Some(self.host.as_str()) {
            return Some(self.here.clone());
        }
        self.all.get_value(key)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.all.enumerate()
    }
}
