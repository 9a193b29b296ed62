//! PLACEHOLDER until the inventory branch merges.
use serde_json::{Map, Value};

pub struct Inventory {
    hosts: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("no hosts match '{0}'")]
    NoMatch(String),
}

impl Inventory {
    pub fn load(_path: &std::path::Path) -> Result<Inventory, crate::diag::Diagnostic> {
        Ok(Self::localhost())
    }
    pub fn from_host_list(l: &str) -> Inventory {
        Inventory {
            hosts: l
                .split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        }
    }
    pub fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }
    pub fn graph(&self) -> String {
        String::new()
    }
    pub fn list_json(&self) -> Value {
        Value::Null
    }
    pub fn localhost() -> Inventory {
        Inventory {
            hosts: vec!["localhost".into()],
        }
    }
    pub fn select(&self, pattern: &str) -> Result<Vec<String>, PatternError> {
        if pattern == "all" || pattern == "localhost" {
            Ok(self.hosts.clone())
        } else {
            Err(PatternError::NoMatch(pattern.into()))
        }
    }
    pub fn host_vars(&self, host: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("inventory_hostname".into(), host.into());
        m.insert("ansible_connection".into(), "local".into());
        m
    }
}
