//! Typed access to a task's rendered parameters, with errors that point at
//! the parameter in the playbook.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::base::diag::{Diagnostic, Span};
use crate::template::Templates;

/// Where a module looks for what a task refers to: templates, files, vars.
pub(crate) struct BuildCtx<'a> {
    pub templates: &'a Templates,
    /// Read through [`BuildCtx::var`] and [`BuildCtx::all_vars`], which
    /// note what a build read beyond its rendered parameters.
    vars: &'a Value,
    /// Ansible's search path for the task's files: its role, the folder of
    /// its task file, then the playbook's folder, last (see [`find_file`]).
    pub search_path: &'a [PathBuf],
    pub sources: &'a Sources,
    /// How the task runs Ansible's own module, when nodeprov has none.
    pub ansible: Option<crate::modules::kit::ansible::AnsibleCall>,
    read: std::cell::RefCell<VarsRead>,
}

/// The variables a module's build read besides its parameters, so that a
/// module kept for later is built again when one of them changes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum VarsRead {
    Names(std::collections::BTreeSet<String>),
    /// All of them (a template rendered in the task's variables).
    All,
}

impl Default for VarsRead {
    fn default() -> Self {
        VarsRead::Names(Default::default())
    }
}

impl<'a> BuildCtx<'a> {
    pub(crate) fn new(
        templates: &'a Templates,
        vars: &'a Value,
        search_path: &'a [PathBuf],
        sources: &'a Sources,
        ansible: Option<crate::modules::kit::ansible::AnsibleCall>,
    ) -> Self {
        BuildCtx {
            templates,
            vars,
            search_path,
            sources,
            ansible,
            read: Default::default(),
        }
    }

    /// One of the task's variables (`Null` when it has none of that name).
    pub(crate) fn var(&self, name: &str) -> &'a Value {
        if let VarsRead::Names(names) = &mut *self.read.borrow_mut() {
            names.insert(name.to_string());
        }
        self.vars.get(name).unwrap_or(&Value::Null)
    }

    /// Every variable of the task, for what renders in all of them.
    pub(crate) fn all_vars(&self) -> &'a Value {
        *self.read.borrow_mut() = VarsRead::All;
        self.vars
    }

    /// What the build read through [`var`](Self::var) and
    /// [`all_vars`](Self::all_vars).
    pub(crate) fn vars_read(&self) -> VarsRead {
        self.read.borrow().clone()
    }
}

/// `src:` files as read once per run: every host (and every rebuild of a
/// task while planning) shares one copy of the content, decrypted on the
/// controller when it is a vault, as Ansible does.
#[derive(Default)]
pub struct Sources(Mutex<HashMap<PathBuf, Arc<str>>>);

impl Sources {
    pub(crate) fn read(&self, path: &Path) -> Result<Arc<str>, crate::base::input::ReadError> {
        if let Some(text) = self.0.lock().unwrap().get(path) {
            return Ok(text.clone());
        }
        // Read without the lock; of two threads racing, the first stored wins.
        let text: Arc<str> = crate::load::vault::read_source(path)?.into();
        let mut cache = self.0.lock().unwrap();
        Ok(cache.entry(path.to_path_buf()).or_insert(text).clone())
    }
}

impl BuildCtx<'_> {
    /// Finds a controller-side file named by `src:`.
    /// A file the task names, found in the folder `subdir` (`files`,
    /// `templates`, `vars`) of the search path as Ansible finds it.
    pub(crate) fn find_file(&self, subdir: &str, name: &str) -> Option<PathBuf> {
        find_file(self.search_path, subdir, name)
    }
}

/// The search path of a task outside any role, in a playbook at
/// `playbook`: the playbook's folder.
pub(crate) fn playbook_folder(playbook: &Path) -> Vec<PathBuf> {
    vec![playbook.parent().unwrap_or(Path::new(".")).to_path_buf()]
}

/// `name` as Ansible's loader finds it for a task (`path_dwim_relative_stack`):
/// as it is when absolute, else in each folder of `search_path` in turn,
/// under `subdir/` first (unless `name` starts with it), then directly. A
/// template is also looked for in a `templates/` folder beside the
/// playbook's, where a project keeps its playbooks in a folder of their own.
pub(crate) fn find_file(search_path: &[PathBuf], subdir: &str, name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        return path.exists().then(|| path.to_path_buf());
    }
    let under = name.split('/').next() != Some(subdir);
    let beside = search_path
        .last()
        .filter(|_| subdir == "templates")
        .map(|base| base.join("../templates").join(path));
    search_path
        .iter()
        .flat_map(|dir| {
            [
                under.then(|| dir.join(subdir).join(path)),
                Some(dir.join(path)),
            ]
        })
        .flatten()
        .chain(beside)
        .find(|p| p.exists())
}

/// A module's own words in a message [`Params::error`] made, without the
/// module's name in front: what a task failing so registers as `msg`.
pub(crate) fn module_words<'m>(module: &str, message: &'m str) -> &'m str {
    message
        .strip_prefix(module)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(message)
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParamError {
    pub message: String,
    pub span: Span,
    pub hint: Option<String>,
    /// What Ansible accepts but nodeprov cannot do, refused at load, as
    /// against a mistake Ansible's module finds only when it runs.
    pub unsupported: bool,
}

impl ParamError {
    /// Why Ansible's module of `module`'s name runs instead, for an
    /// `unsupported` error: its message without the module's prefix.
    pub(crate) fn native_cannot(&self, module: &str) -> String {
        format!(
            "the native one cannot: {}",
            module_words(module, &self.message)
        )
    }

    pub(crate) fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::new(&self.span, self.message.clone());
        match &self.hint {
            Some(h) => d.with_hint(h.clone()),
            None => d,
        }
    }
}

pub(crate) struct Params<'a> {
    pub module: &'static str,
    /// The module key in the task, for errors about the task as a whole.
    pub span: Span,
    entries: Vec<(String, Value, Span)>,
    pub ctx: &'a BuildCtx<'a>,
}

impl<'a> Params<'a> {
    pub(crate) fn new(
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

    /// The same parameters, built in another context.
    pub(crate) fn with_ctx<'b>(&self, ctx: &'b BuildCtx<'b>) -> Params<'b> {
        Params {
            module: self.module,
            span: self.span.clone(),
            entries: self.entries.clone(),
            ctx,
        }
    }

    fn entry(&self, key: &str) -> Option<&(String, Value, Span)> {
        self.entries
            .iter()
            .find(|(k, v, _)| k == key && !v.is_null())
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.entry(key).is_some()
    }

    /// Every parameter as given, in order: for modules whose parameter
    /// names are the user's (`set_fact`).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v, _)| (k.as_str(), v))
    }

    pub(crate) fn raw(&self, key: &str) -> Option<&Value> {
        self.entry(key).map(|(_, v, _)| v)
    }

    /// An error about one parameter, or about the task when it is absent.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ParamError {
        let span = self.entry(key).map_or(&self.span, |(_, _, s)| s).clone();
        ParamError {
            message: format!("{}: {}", self.module, message.into()),
            span,
            hint: None,
            unsupported: false,
        }
    }

    /// What Ansible's module accepts and nodeprov cannot do.
    pub(crate) fn unsupported(&self, key: &str, message: impl Into<String>) -> ParamError {
        ParamError {
            unsupported: true,
            ..self.error(key, message)
        }
    }

    fn type_error(&self, key: &str, expected: &str) -> ParamError {
        self.error(key, format!("parameter '{key}' must be {expected}"))
    }

    /// Scalars of any type read as text, as Ansible does for string params.
    pub(crate) fn str(&self, key: &str) -> Result<Option<String>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(_) => Err(self.type_error(key, "a string")),
        }
    }

    /// A path the module deletes or replaces. Empty, `/` and any other
    /// spelling of the root or of the working folder (`//`, `/tmp/..`,
    /// `.`) are refused here rather than left to GNU rm's own refusal; a
    /// templated path is checked again once rendered, as every build is.
    pub(crate) fn destructive_path(&self, key: &str, path: &str) -> Result<(), ParamError> {
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

    /// A value the module writes as one line of a file: a line break in it
    /// would start a line of its own (a section, an entry) that no task
    /// manages. A templated value is checked again once rendered, as every
    /// build is.
    pub(crate) fn one_line(&self, key: &str, value: &str) -> Result<(), ParamError> {
        if !value.contains(['\n', '\r']) {
            return Ok(());
        }
        Err(self.error(
            key,
            format!("'{key}' must be one line, but {value:?} holds a line break"),
        ))
    }

    pub(crate) fn required_str(&self, key: &str) -> Result<String, ParamError> {
        self.str(key)?
            .ok_or_else(|| self.error(key, format!("missing required parameter '{key}'")))
    }

    /// Ansible's boolean spellings: yes/no, on/off, true/false, 1/0.
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => parse_bool(&scalar_text(v))
                .map(Some)
                .ok_or_else(|| self.type_error(key, "a boolean (yes/no)")),
        }
    }

    pub(crate) fn bool_or(&self, key: &str, default: bool) -> Result<bool, ParamError> {
        Ok(self.bool(key)?.unwrap_or(default))
    }

    pub(crate) fn int(&self, key: &str) -> Result<Option<i64>, ParamError> {
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
    pub(crate) fn str_list(&self, key: &str) -> Result<Vec<String>, ParamError> {
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

    pub(crate) fn map(
        &self,
        key: &str,
    ) -> Result<Option<&serde_json::Map<String, Value>>, ParamError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.type_error(key, "a mapping")),
        }
    }

    /// One of a fixed set of words.
    pub(crate) fn choice(
        &self,
        key: &str,
        choices: &[&str],
        default: &str,
    ) -> Result<String, ParamError> {
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
        err.hint = crate::base::diag::suggest(&value, choices.iter().copied())
            .map(|s| format!("did you mean '{s}'?"));
        Err(err)
    }

    /// A file mode: YAML's `0644` arrives as the number 420 (octal already
    /// applied by the loader), a string `"0644"`/`"644"` is octal text.
    pub(crate) fn mode(&self, key: &str) -> Result<Option<Mode>, ParamError> {
        let expected = "an octal mode like '0644' or a symbolic one like 'u=rw,go=r'";
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .filter(|m| *m <= 0o7777)
                .map(|m| Some(Mode::Octal(m as u32)))
                .ok_or_else(|| self.type_error(key, expected)),
            Some(Value::String(s)) => match u32::from_str_radix(s.trim(), 8) {
                Ok(m) if m <= 0o7777 => Ok(Some(Mode::Octal(m))),
                Ok(_) => Err(self.type_error(key, expected)),
                Err(_) if symbolic_mode(s.trim()) => Ok(Some(Mode::Symbolic(s.trim().into()))),
                Err(_) => Err(self.type_error(key, expected)),
            },
            Some(_) => Err(self.type_error(key, expected)),
        }
    }
}

pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "on" | "true" | "1" | "y" => Some(true),
        "no" | "off" | "false" | "0" | "n" => Some(false),
        _ => None,
    }
}

/// One parameter as its module declares it: what the loader accepts, what
/// the README must list, and what the module's build reads.
#[derive(Clone, Copy, Debug)]
pub struct ParamDoc {
    pub name: &'static str,
    /// One line for people.
    pub doc: &'static str,
    pub required: bool,
    /// The words a choice takes (first spelling of each); empty otherwise.
    pub choices: &'static [&'static str],
    /// Its values are conditions, as in `when:` (`validate` compiles them).
    pub conditions: bool,
}

/// A type a parameter is read as, with the error that points at it.
pub(crate) trait ParamValue: Sized {
    /// Whether a task must set it (unless the declaration gives a default).
    const REQUIRED: bool = false;
    const CHOICES: &'static [&'static str] = &[];
    const CONDITIONS: bool = false;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError>;
    /// Read with a declared default for when the task does not set it.
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError>;
}

impl ParamValue for String {
    const REQUIRED: bool = true;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.required_str(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.str(key)?.unwrap_or(default))
    }
}

impl ParamValue for Option<String> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.str(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.str(key)?.or(default))
    }
}

impl ParamValue for bool {
    const REQUIRED: bool = true;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.bool(key)?
            .ok_or_else(|| p.error(key, format!("missing required parameter '{key}'")))
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        p.bool_or(key, default)
    }
}

impl ParamValue for Option<bool> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.bool(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.bool(key)?.or(default))
    }
}

impl ParamValue for Option<i64> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.int(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.int(key)?.or(default))
    }
}

/// A string or a list of strings; absent is empty.
impl ParamValue for Vec<String> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.str_list(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        let v = p.str_list(key)?;
        Ok(if v.is_empty() { default } else { v })
    }
}

/// One expression, as debug's `var` takes it: read without braces.
#[derive(Debug, Default)]
pub(crate) struct Expression(pub String);

impl ParamValue for Option<Expression> {
    const CONDITIONS: bool = true;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        Ok(p.str(key)?.map(Expression))
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.str(key)?.map(Expression).or(default))
    }
}

/// Conditions, as `when:` takes them: one expression or a list.
#[derive(Debug, Default)]
pub(crate) struct Conditions(pub Vec<String>);

impl ParamValue for Conditions {
    const CONDITIONS: bool = true;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        Vec::<String>::read(p, key).map(Conditions)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Vec::<String>::read_or(p, key, default.0).map(Conditions)
    }
}

/// Any YAML value, judged by the module.
impl ParamValue for Option<Value> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        Ok(p.raw(key).cloned())
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.raw(key).cloned().or(default))
    }
}

/// A mapping.
impl ParamValue for Option<serde_json::Map<String, Value>> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        Ok(p.map(key)?.cloned())
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.map(key)?.cloned().or(default))
    }
}

/// A file mode (see [`Params::mode`]): octal, or symbolic as chmod takes
/// it (`u=rw,go=r`, `og-rwx`, `a+x`, `u+X`), which says what to do to the
/// mode a path has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Octal(u32),
    Symbolic(String),
}

impl Mode {
    /// The mode a path whose mode is `current` gets. A symbolic mode
    /// without `u`, `g`, `o` or `a` acts on all three, as Ansible's does
    /// (chmod would leave out what the umask masks).
    pub(crate) fn applied(&self, current: u32, is_dir: bool) -> u32 {
        let text = match self {
            Mode::Octal(m) => return *m,
            Mode::Symbolic(text) => text,
        };
        let mut mode = current & 0o7777;
        for clause in text.split(',') {
            let who_end = clause.find(['+', '-', '=']).unwrap_or(clause.len());
            let who = match &clause[..who_end] {
                "" => "a",
                w => w,
            };
            let mask = who.chars().fold(0, |m, c| {
                m | match c {
                    'u' => 0o4700,
                    'g' => 0o2070,
                    'o' => 0o1007,
                    _ => 0o7777,
                }
            });
            let mut rest = &clause[who_end..];
            while let Some(op) = rest.chars().next() {
                let perms_end = rest[1..]
                    .find(['+', '-', '='])
                    .map_or(rest.len(), |i| i + 1);
                let bits = rest[1..perms_end].chars().fold(0, |b, c| {
                    b | match c {
                        'r' => 0o444,
                        'w' => 0o222,
                        'x' => 0o111,
                        // As chmod: judged on the mode as earlier clauses left it.
                        'X' if is_dir || mode & 0o111 != 0 => 0o111,
                        's' => 0o6000,
                        't' => 0o1000,
                        _ => 0,
                    }
                }) & mask;
                match op {
                    '+' => mode |= bits,
                    '-' => mode &= !bits,
                    _ => mode = (mode & !mask) | bits,
                }
                rest = &rest[perms_end..];
            }
        }
        mode
    }
}

/// Whether `text` is a symbolic mode [`Mode::applied`] understands:
/// clauses of `[ugoa]*` then one or more `[+-=][rwxXst]*`.
fn symbolic_mode(text: &str) -> bool {
    text.split(',').all(|clause| {
        let who_end = clause.find(['+', '-', '=']).unwrap_or(clause.len());
        let (who, ops) = clause.split_at(who_end);
        who.chars().all(|c| "ugoa".contains(c))
            && !ops.is_empty()
            && ops.chars().all(|c| "+-=rwxXst".contains(c))
    })
}

impl ParamValue for Option<Mode> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.mode(key)
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(p.mode(key)?.or(default))
    }
}

/// A choice declared with [`choices!`]: one of a fixed set of words.
pub(crate) trait Choice: Copy {
    /// Every spelling accepted, in the order errors list them.
    const SPELLINGS: &'static [&'static str];
    /// The first spelling of each choice, as the README lists them.
    const NAMES: &'static [&'static str];
    fn name(self) -> &'static str;
    fn from_word(word: &str) -> Option<Self>;
}

/// A declared choice; `default` when the task does not set it (`""`: none).
pub(crate) fn read_choice<T: Choice>(
    p: &Params,
    key: &str,
    default: &str,
) -> Result<T, ParamError> {
    let word = p.choice(key, T::SPELLINGS, default)?;
    Ok(T::from_word(&word).expect("a spelling of a declared choice"))
}

impl<T: Choice> ParamValue for Option<T> {
    const CHOICES: &'static [&'static str] = T::NAMES;
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        match p.has(key) {
            true => read_choice(p, key, "").map(Some),
            false => Ok(None),
        }
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        match default {
            Some(d) => read_choice(p, key, d.name()).map(Some),
            None => Self::read(p, key),
        }
    }
}

/// A choice parameter's words, declared once:
/// `enum State { Present = "present" | "installed", Absent = "absent" }`.
macro_rules! choices {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $variant:ident = $first:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name { $($variant),+ }

        impl $crate::modules::params::Choice for $name {
            const SPELLINGS: &'static [&'static str] = &[$($first $(, $alias)*),+];
            const NAMES: &'static [&'static str] = &[$($first),+];
            fn name(self) -> &'static str {
                match self { $($name::$variant => $first),+ }
            }
            fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($first $(| $alias)* => Some($name::$variant),)+
                    _ => None,
                }
            }
        }
        /// Required unless the declaration gives a default.
        impl $crate::modules::params::ParamValue for $name {
            const REQUIRED: bool = true;
            const CHOICES: &'static [&'static str] =
                <$name as $crate::modules::params::Choice>::NAMES;
            fn read(
                p: &$crate::modules::params::Params,
                key: &str,
            ) -> Result<Self, $crate::modules::params::ParamError> {
                $crate::modules::params::read_choice(p, key, "")
            }
            fn read_or(
                p: &$crate::modules::params::Params,
                key: &str,
                default: Self,
            ) -> Result<Self, $crate::modules::params::ParamError> {
                use $crate::modules::params::Choice;
                $crate::modules::params::read_choice(p, key, default.name())
            }
        }
    };
}
pub(crate) use choices;

choices! {
    /// Whether a thing is there, for the modules that ask only that.
    pub(crate) enum Presence {
        Present = "present",
        Absent = "absent",
    }
}

/// How many of `docs` are required, for [`required_names`].
pub(crate) const fn required_count(docs: &[ParamDoc]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < docs.len() {
        if docs[i].required {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of the required parameters among `docs`, at compile time.
pub(crate) const fn required_names<const N: usize>(docs: &[ParamDoc]) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut j) = (0, 0);
    while i < docs.len() {
        if docs[i].required {
            out[j] = docs[i].name;
            j += 1;
        }
        i += 1;
    }
    out
}

/// `own` then `shared`, at compile time (`fill` stands for no value yet).
pub(crate) const fn concat<T: Copy, const N: usize>(own: &[T], shared: &[T], fill: T) -> [T; N] {
    let mut out = [fill; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < own.len() {
            own[i]
        } else {
            shared[i - own.len()]
        };
        i += 1;
    }
    out
}

/// The names of `docs`, at compile time.
pub(crate) const fn param_names<const N: usize>(docs: &[ParamDoc]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = docs[i].name;
        i += 1;
    }
    out
}

/// A module's parameters, declared once: a struct with one field per
/// parameter, each with a line of doc, `#[aliases("a", "b")]` for the other
/// names Ansible takes for it (the loader reads them as the field's name),
/// its type (how it is read and checked), `[required]` when a task must set
/// it although its type has an empty value, and `= default` when it has one;
/// every field ends with a comma. A last `..field: Other` takes in the parameters another
/// declaration shares (`copy` and `template`). It gives the struct
/// `read(&Params)` and `SPEC`, the names the loader accepts and the README
/// lists.
macro_rules! module_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $(#[aliases($($alias:literal),+)])?
                $field:ident : $ty:ty $([$req:ident])? $(= $default:expr)?,
            )+
            $(..$shared:ident : $shared_ty:ident)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])+ pub(crate) $field: $ty, )+
            $( pub(crate) $shared: $shared_ty, )?
        }

        impl $name {
            /// Its own parameters, before any it shares.
            const OWN: &'static [$crate::modules::params::ParamDoc] = &[$(
                $crate::modules::params::ParamDoc {
                    name: stringify!($field),
                    doc: concat!($($doc, "\n"),+),
                    required: $crate::modules::params::module_params!(@required $ty; $($req)?; $($default)?),
                    choices: <$ty as $crate::modules::params::ParamValue>::CHOICES,
                    conditions: <$ty as $crate::modules::params::ParamValue>::CONDITIONS,
                },
            )+];
            /// The other names of its own parameters, each with the one it stands for.
            const OWN_ALIASES: &'static [(&'static str, &'static str)] =
                &[$($($(($alias, stringify!($field)),)+)?)+];
            pub(crate) const DOCS: &'static [$crate::modules::params::ParamDoc] =
                $crate::modules::params::module_params!(@docs $name $(, $shared_ty)?);
            // A group shared through `..` is no module's spec of its own.
            #[allow(dead_code)]
            pub(crate) const SPEC: $crate::modules::params::ParamSpec =
                $crate::modules::params::ParamSpec {
                    names: &$crate::modules::params::param_names::<{ $name::DOCS.len() }>($name::DOCS),
                    required: &$crate::modules::params::required_names::<
                        { $crate::modules::params::required_count($name::DOCS) },
                    >($name::DOCS),
                    docs: $name::DOCS,
                    any_variable: false,
                    aliases: $crate::modules::params::module_params!(@aliases $name $(, $shared_ty)?),
                };

            /// Reads every parameter, in the order declared.
            pub(crate) fn read(
                p: &$crate::modules::params::Params,
            ) -> Result<Self, $crate::modules::params::ParamError> {
                use $crate::modules::params::ParamValue;
                Ok($name {
                    $(
                        $field: $crate::modules::params::module_params!(
                            @read p, stringify!($field), $ty; $($default)?
                        ),
                    )+
                    $( $shared: $shared_ty::read(p)?, )?
                })
            }
        }
    };
    (@docs $name:ident) => { $name::OWN };
    (@docs $name:ident, $shared:ident) => {
        &$crate::modules::params::concat::<_, { $name::OWN.len() + $shared::DOCS.len() }>(
            $name::OWN,
            $shared::DOCS,
            $crate::modules::params::ParamDoc {
                name: "",
                doc: "",
                required: false,
                choices: &[],
                conditions: false,
            },
        )
    };
    (@aliases $name:ident) => { $name::OWN_ALIASES };
    (@aliases $name:ident, $shared:ident) => {
        &$crate::modules::params::concat::<
            _,
            { $name::OWN_ALIASES.len() + $shared::SPEC.aliases.len() },
        >($name::OWN_ALIASES, $shared::SPEC.aliases, ("", ""))
    };
    (@required $ty:ty; required; $($default:expr)?) => { true };
    (@required $ty:ty; ; $default:expr) => { false };
    (@required $ty:ty; ;) => { <$ty as $crate::modules::params::ParamValue>::REQUIRED };
    (@read $p:ident, $key:expr, $ty:ty; $default:expr) => {
        <$ty as ParamValue>::read_or($p, $key, $default)?
    };
    (@read $p:ident, $key:expr, $ty:ty;) => { <$ty as ParamValue>::read($p, $key)? };
}
pub(crate) use module_params;

/// What a module's parameter declaration gives its [`ModuleSpec`](crate::modules::ModuleSpec).
#[derive(Debug)]
pub struct ParamSpec {
    /// Every parameter the loader accepts.
    pub names: &'static [&'static str],
    /// Those a task must set.
    pub required: &'static [&'static str],
    pub docs: &'static [ParamDoc],
    /// Any variable name is a parameter too (`set_fact`).
    pub any_variable: bool,
    /// Other spellings Ansible takes for a parameter, and the name each
    /// stands for (`daemon-reload` for `daemon_reload`).
    pub aliases: &'static [(&'static str, &'static str)],
}

impl ParamSpec {
    /// The declared name an alias stands for.
    pub fn canonical(&self, name: &str) -> Option<&'static str> {
        self.aliases
            .iter()
            .find(|(a, _)| *a == name)
            .map(|(_, c)| *c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes_apply_as_chmod_applies_them() {
        let m = |s: &str| Mode::Symbolic(s.into());
        assert_eq!(m("u=rw,go=r").applied(0o777, false), 0o644);
        assert_eq!(m("og-rwx").applied(0o755, false), 0o700);
        assert_eq!(m("a+x").applied(0o644, false), 0o755);
        assert_eq!(m("+x").applied(0o600, false), 0o711);
        assert_eq!(m("u+X").applied(0o644, false), 0o644, "X: no x bit yet");
        assert_eq!(m("u+X").applied(0o644, true), 0o744, "X: a folder");
        assert_eq!(m("go+X").applied(0o744, false), 0o755, "X: some x bit");
        assert_eq!(m("u+rw-x").applied(0o100, false), 0o600);
        assert_eq!(m("u=rwx,go=rX").applied(0o600, false), 0o755);
        assert_eq!(m("g+s,o+t").applied(0o755, true), 0o3755);
        assert_eq!(Mode::Octal(0o600).applied(0o777, false), 0o600);
        for good in ["u=rw,go=r", "a+x", "u+X", "ug+rw-x", "=r"] {
            assert!(symbolic_mode(good), "{good}");
        }
        for bad in ["u", "u=rw,", "z+x", "u+q", "0o644", "rw-r--r--"] {
            assert!(!symbolic_mode(bad), "{bad}");
        }
    }
}
