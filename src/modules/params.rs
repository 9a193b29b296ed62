//! Typed access to a task's rendered parameters, with errors that point at
//! the parameter in the playbook.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::load::diag::{Diagnostic, Span};
use crate::template::Templates;

/// Where a module looks for what a task refers to: templates, files, vars.
pub struct BuildCtx<'a> {
    pub templates: &'a Templates,
    pub vars: &'a Value,
    /// Folders searched for `src:` files, in order (see [`search_dirs`]).
    pub search_dirs: &'a [PathBuf],
    pub sources: &'a Sources,
}

/// `src:` files as read once per run: every host (and every rebuild of a
/// task while planning) shares one copy of the content.
#[derive(Default)]
pub struct Sources(Mutex<HashMap<PathBuf, Arc<str>>>);

impl Sources {
    pub fn read(&self, path: &Path) -> Result<Arc<str>, crate::load::input::ReadError> {
        if let Some(text) = self.0.lock().unwrap().get(path) {
            return Ok(text.clone());
        }
        // Read without the lock; of two threads racing, the first stored wins.
        let text: Arc<str> = crate::load::input::read_text(path)?.into();
        let mut cache = self.0.lock().unwrap();
        Ok(cache.entry(path.to_path_buf()).or_insert(text).clone())
    }
}

impl BuildCtx<'_> {
    /// Finds a controller-side file named by `src:`.
    pub fn find_file(&self, name: &str) -> Option<PathBuf> {
        find_file(self.search_dirs, name)
    }
}

/// The folders `src:` files are looked up in, for a playbook at `playbook`:
/// its `templates/` and `files/`, the project's `templates/` beside the
/// playbooks folder, then the playbook's own folder.
pub fn search_dirs(playbook: &Path) -> Vec<PathBuf> {
    let base = playbook.parent().unwrap_or(Path::new("."));
    vec![
        base.join("templates"),
        base.join("files"),
        base.join("../templates"),
        base.to_path_buf(),
    ]
}

/// The first `dirs/name` that exists; an absolute `name` as it is.
pub fn find_file(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        return path.exists().then(|| path.to_path_buf());
    }
    dirs.iter().map(|d| d.join(path)).find(|p| p.exists())
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub message: String,
    pub span: Span,
    pub hint: Option<String>,
}

impl ParamError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::new(&self.span, self.message.clone());
        match &self.hint {
            Some(h) => d.with_hint(h.clone()),
            None => d,
        }
    }
}

pub struct Params<'a> {
    pub module: &'static str,
    /// The module key in the task, for errors about the task as a whole.
    pub span: Span,
    entries: Vec<(String, Value, Span)>,
    pub ctx: &'a BuildCtx<'a>,
}

impl<'a> Params<'a> {
    pub fn new(
        module: &'static str,
        span: Span,
        entries: Vec<(String, Value, Span)>,
        ctx: &'a BuildCtx<'a>,
    ) -> Self {
        Params {
            module,
            span,
            entries,
            ctx,
        }
    }

    fn entry(&self, key: &str) -> Option<&(String, Value, Span)> {
        self.entries
            .iter()
            .find(|(k, v, _)| k == key && !v.is_null())
    }

    pub fn has(&self, key: &str) -> bool {
        self.entry(key).is_some()
    }

    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.entry(key).map(|(_, v, _)| v)
    }

    /// An error about one parameter, or about the task when it is absent.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ParamError {
        let span = self.entry(key).map_or(&self.span, |(_, _, s)| s).clone();
        ParamError {
            message: format!("{}: {}", self.module, message.into()),
            span,
            hint: None,
        }
    }

    fn type_error(&self, key: &str, expected: &str) -> ParamError {
        self.error(key, format!("parameter '{key}' must be {expected}"))
    }

    /// Scalars of any type read as text, as Ansible does for string params.
    pub fn str(&self, key: &str) -> Result<Option<String>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(_) => Err(self.type_error(key, "a string")),
        }
    }

    /// The first of several alias keys that is set (`path`, `dest`, `name`).
    pub fn first_str(&self, keys: &[&str]) -> Result<String, ParamError> {
        for key in keys {
            if let Some(v) = self.str(key)? {
                return Ok(v);
            }
        }
        Err(self.error(keys[0], format!("missing required parameter '{}'", keys[0])))
    }

    /// A path the module deletes or replaces. Empty, `/` and any other
    /// spelling of the root or of the working folder (`//`, `/tmp/..`,
    /// `.`) are refused here rather than left to GNU rm's own refusal; a
    /// templated path is checked again once rendered, as every build is.
    pub fn destructive_path(&self, key: &str, path: &str) -> Result<(), ParamError> {
        let mut depth = 0usize;
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => depth = depth.saturating_sub(1),
                _ => depth += 1,
            }
        }
        if depth > 0 {
            return Ok(());
        }
        let shown = if path.is_empty() {
            "an empty path"
        } else {
            path
        };
        Err(self.error(
            key,
            format!(
                "refusing to remove or replace '{shown}': it names the root or the working folder"
            ),
        ))
    }

    pub fn required_str(&self, key: &str) -> Result<String, ParamError> {
        self.str(key)?
            .ok_or_else(|| self.error(key, format!("missing required parameter '{key}'")))
    }

    /// Ansible's boolean spellings: yes/no, on/off, true/false, 1/0.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => parse_bool(&scalar_text(v))
                .map(Some)
                .ok_or_else(|| self.type_error(key, "a boolean (yes/no)")),
        }
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ParamError> {
        Ok(self.bool(key)?.unwrap_or(default))
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.type_error(key, "an integer")),
            Some(_) => Err(self.type_error(key, "an integer")),
        }
    }

    /// A string or a list of strings (Ansible accepts both for `name:` lists).
    pub fn str_list(&self, key: &str) -> Result<Vec<String>, ParamError> {
        match self.raw(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Array(_) | Value::Object(_) | Value::Null => {
                        Err(self.type_error(key, "a list of strings"))
                    }
                    v => Ok(scalar_text(v)),
                })
                .collect(),
            Some(Value::String(s)) if s.contains(',') => {
                Ok(s.split(',').map(|p| p.trim().to_string()).collect())
            }
            Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                Ok(vec![scalar_text(v)])
            }
            Some(_) => Err(self.type_error(key, "a string or a list of strings")),
        }
    }

    pub fn map(&self, key: &str) -> Result<Option<&serde_json::Map<String, Value>>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.type_error(key, "a mapping")),
        }
    }

    /// One of a fixed set of words.
    pub fn choice(&self, key: &str, choices: &[&str], default: &str) -> Result<String, ParamError> {
        let value = self.str(key)?.unwrap_or_else(|| default.to_string());
        if choices.contains(&value.as_str()) {
            return Ok(value);
        }
        let mut err = self.error(
            key,
            format!(
                "'{value}' is not a valid {key}; expected one of: {}",
                choices.join(", ")
            ),
        );
        err.hint = crate::load::diag::suggest(&value, choices.iter().copied())
            .map(|s| format!("did you mean '{s}'?"));
        Err(err)
    }

    /// A file mode: YAML's `0644` arrives as the number 420 (octal already
    /// applied by the loader), a string `"0644"`/`"644"` is octal text.
    pub fn mode(&self, key: &str) -> Result<Option<u32>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .filter(|m| *m <= 0o7777)
                .map(|m| Some(m as u32))
                .ok_or_else(|| self.type_error(key, "an octal mode like '0644'")),
            Some(Value::String(s)) => u32::from_str_radix(s.trim(), 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .map(Some)
                .ok_or_else(|| self.type_error(key, "an octal mode like '0644'")),
            Some(_) => Err(self.type_error(key, "an octal mode like '0644'")),
        }
    }
}

pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "on" | "true" | "1" | "y" => Some(true),
        "no" | "off" | "false" | "0" | "n" => Some(false),
        _ => None,
    }
}
