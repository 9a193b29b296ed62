//! The variables a template sees, with two of Ansible's magic variables
//! that are views of them: `vars` (the same variables, for `vars['name_' ~
//! x]` and `vars[item]`) and `hostvars`, whose entry for the current host
//! is everything the host's templates see (play and task variables,
//! registered results), not only its inventory variables and facts; and
//! the values every host sees alike (`groups`, the play's host lists), one
//! value shared by every host's templates, which a host's own variable of
//! the same name hides.

use std::collections::BTreeMap;
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, Serde, Value};
use serde_json::Value as Json;

use super::HostVars;

/// Values by name that every host's templates see alike.
pub(super) type Shared = BTreeMap<&'static str, Value>;

pub(super) fn scope(vars: &Json, hostvars: Option<&Arc<HostVars>>, shared: &Arc<Shared>) -> Value {
    Value::from_object(Scope {
        vars: Value::from(Serde(vars)),
        hostvars: hostvars.cloned(),
        shared: shared.clone(),
    })
}

#[derive(Debug)]
struct Scope {
    vars: Value,
    hostvars: Option<Arc<HostVars>>,
    shared: Arc<Shared>,
}

impl Scope {
    /// The shared values the variables do not hide.
    fn unhidden(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.shared
            .iter()
            .map(|(k, v)| (*k, v))
            .filter(|(name, _)| !self.vars.get_attr(name).is_ok_and(|v| !v.is_undefined()))
    }

    /// `vars`: the variables, with the shared values they do not hide.
    fn all_vars(&self) -> Value {
        let mut shared = self.unhidden().peekable();
        if shared.peek().is_none() {
            return self.vars.clone();
        }
        let mut all: indexmap::IndexMap<Value, Value> = Default::default();
        if let Ok(keys) = self.vars.try_iter() {
            for key in keys {
                let value = self.vars.get_item(&key).unwrap_or_default();
                all.insert(key, value);
            }
        }
        for (name, value) in shared {
            all.insert(Value::from(name), value.clone());
        }
        Value::from_object(all)
    }
}

impl Object for Scope {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let own = self.vars.get_item(key).ok().filter(|v| !v.is_undefined());
        own.or_else(|| match key.as_str()? {
            "vars" => Some(self.all_vars()),
            "hostvars" => {
                let here = self.vars.get_attr("inventory_hostname").ok()?;
                Some(Value::from_object(HostVarsHere {
                    all: self.hostvars.clone()?,
                    host: here.as_str()?.to_string(),
                    here: self.vars.clone(),
                }))
            }
            name => self.shared.get(name).cloned(),
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<Value> = match self.vars.try_iter() {
            Ok(keys) => keys.collect(),
            Err(_) => return Enumerator::Empty,
        };
        keys.extend(self.unhidden().map(|(name, _)| Value::from(name)));
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
