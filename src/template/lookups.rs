//! Lookup plugins: `lookup(name, …)` returns the result as text, `query`
//! (or `q`) as a list, as in Ansible. `env`, `first_found`, `fileglob`,
//! `vars` and `varnames` are native; every other lookup ansible-core has
//! runs through it, on the controller, with the task's variables.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use crate::load::ansible_core::PluginKind;
use crate::pyre::{Flags, Regex};

/// The lookups nodeprov runs itself.
const NATIVE: [&str; 7] = [
    "dict",
    "env",
    "first_found",
    "fileglob",
    "list",
    "vars",
    "varnames",
];

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
    env.add_function("_with_lookup", with_lookup);
}

/// What a `with_<lookup>:` loop iterates over: the lookup run on the
/// loop's value as its terms, a list being the terms themselves and
/// anything else one term, as Ansible's task executor calls it.
fn with_lookup(state: &State, plugin: &str, terms: Value) -> Result<Value, Error> {
    let terms: Vec<Value> = match terms.kind() {
        ValueKind::Seq => terms.try_iter()?.collect(),
        _ => vec![terms],
    };
    let none = Kwargs::from_iter(std::iter::empty::<(&str, Value)>());
    Ok(Value::from(run(state, plugin, &terms, &none)?))
}

/// Whether a lookup of this name runs: natively, or through ansible-core.
pub(super) fn known(name: &str) -> bool {
    NATIVE.contains(&native_name(name)) || super::plugins::resolve(PluginKind::Lookup, name)
}

fn native_name(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.").unwrap_or(name)
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// A lookup's value as Ansible's `lookup` gives it: its texts joined with
/// commas, or a value that is no text as it is (`lookup('vars', 'a_map')`),
/// or the list; `wantlist=True` makes it `query`, and no value at all is
/// an empty list, as both of Ansible's templating engines give it.
fn lookup(state: &State, plugin: &str, terms: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let wantlist = kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let mut values = run(state, plugin, &terms, &kwargs)?;
    if wantlist || values.is_empty() {
        return Ok(Value::from(values));
    }
    if values.iter().all(|v| v.as_str().is_some()) {
        let texts: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        return Ok(Value::from(texts.join(",")));
    }
    Ok(match values.len() {
        1 => values.remove(0),
        _ => Value::from(values),
    })
}

fn query(state: &State, plugin: &str, terms: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let _ = kwargs.get::<Option<bool>>("wantlist")?;
    Ok(Value::from(run(state, plugin, &terms, &kwargs)?))
}

fn run(state: &State, plugin: &str, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let texts = |v: Vec<String>| v.into_iter().map(Value::from).collect();
    let values = match native_name(plugin) {
        "env" => texts(
            terms
                .iter()
                .map(|name| std::env::var(name.to_string()).unwrap_or_default())
                .collect(),
        ),
        "dict" => dict(terms)?,
        "list" => terms.to_vec(),
        "first_found" => texts(first_found(state, terms, kwargs)?),
        "fileglob" => texts(fileglob(state, terms)?),
        "varnames" => texts(varnames(state, terms)?),
        "vars" => vars(state, terms, kwargs)?,
        _ if super::plugins::resolve(PluginKind::Lookup, plugin) => {
            return through_ansible_core(state, plugin, terms, kwargs)
        }
        _ => {
            return Err(invalid(format!(
                "unknown lookup plugin '{plugin}' (nodeprov has {}, and ansible-core has no such plugin)",
                NATIVE.join(", ")
            )))
        }
    };
    // Ansible's plugins take their options through `set_options`, which
    // passes over a keyword no option of theirs has (`name='x'`).
    for key in kwargs.args() {
        let _: Value = kwargs.get(key)?;
    }
    Ok(values)
}

/// A lookup of ansible-core's, run on the controller as Ansible runs it:
/// with the task's variables (which the `vars` and `template` lookups
/// read; `hostvars` stays behind) and its search path for relative files.
fn through_ansible_core(
    state: &State,
    plugin: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let json =
        |v: &Value| serde_json::to_value(v).map_err(|e| invalid(format!("lookup '{plugin}': {e}")));
    let terms = terms.iter().map(json).collect::<Result<Vec<_>, _>>()?;
    let mut named = serde_json::Map::new();
    for key in kwargs.args() {
        // What Ansible's templar reads itself, not the plugin.
        if key != "wantlist" {
            let v: Value = kwargs.get(key)?;
            named.insert(key.to_string(), json(&v)?);
        }
    }
    kwargs.assert_all_used()?;
    let mut variables = serde_json::Map::new();
    // The configured `ansible_managed` is left for ansible-core's template
    // lookup to fill in from the same ansible.cfg, as it does when no
    // variable of that name is set.
    let configured = |name: &str, value: &Value| {
        name == "ansible_managed"
            && state
                .env()
                .globals()
                .any(|(global, v)| global == name && v == *value)
    };
    for name in state.known_variables() {
        let Some(value) =
            variable(state, &name).filter(|v| name != "hostvars" && !configured(&name, v))
        else {
            continue;
        };
        if let Ok(v) = serde_json::to_value(&value) {
            variables.insert(name.to_string(), v);
        }
    }
    let roots: Vec<String> = search_roots(state)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    variables.insert("ansible_search_path".into(), roots.clone().into());
    let basedir = roots.last().cloned();
    crate::load::ansible_core::lookup(
        plugin,
        terms,
        named.into(),
        variables.into(),
        basedir.as_deref(),
    )
    .map(|values| {
        values
            .iter()
            .map(|v| Value::from(minijinja::value::Serde(v)))
            .collect()
    })
    .map_err(|e| invalid(format!("lookup '{plugin}': {e}")))
}

/// A variable in scope by its name; the template functions (`lookup`,
/// `range`, …) in the same namespace are no variables.
fn variable(state: &State, name: &str) -> Option<Value> {
    state
        .lookup(name)
        .filter(|v| !matches!(v.kind(), ValueKind::Plain | ValueKind::Undefined))
}

/// Each mapping's `{key, value}` pairs, in order, as Ansible's `dict`
/// lookup (`with_dict`) lists them; a term that is no mapping fails it in
/// the newest ansible-core's words.
fn dict(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut pairs = Vec::new();
    for term in terms {
        if term.kind() != ValueKind::Map {
            let json = serde_json::to_value(term).unwrap_or_default();
            return Err(invalid(format!(
                "the 'dict' lookup plugin expects a dictionary, got '{}' of type {})",
                crate::base::python::str_of(&json),
                crate::base::python::class(&json)
            )));
        }
        for key in term.try_iter()? {
            let value = term.get_item(&key)?;
            let pair = std::collections::BTreeMap::from([("key", key), ("value", value)]);
            pairs.push(Value::from(pair));
        }
    }
    Ok(pairs)
}

/// Each term's variable, as Ansible's `vars` lookup reads it: by its name,
/// `default` standing in for one that is not defined. The messages are the
/// newest ansible-core's.
fn vars(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let default: Option<Value> = kwargs.get("default")?;
    let one = |term: &Value| {
        let Some(name) = term.as_str() else {
            return Err(invalid(format!(
                "Variable name must be 'str' not '{}'.",
                super::missing::python_type(term)
            )));
        };
        variable(state, name)
            .or_else(|| default.clone().filter(|d| !d.is_none()))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::UndefinedError,
                    format!("No variable named '{name}' was found."),
                )
            })
    };
    terms.iter().map(one).collect()
}

/// The names of the variables in scope that a term, a Python regular
/// expression, matches anywhere (`re.search`), each name once, as
/// Ansible's `varnames`. The template functions (`lookup`, `range`, …) are
/// no variables.
fn varnames(state: &State, terms: &[Value]) -> Result<Vec<String>, Error> {
    let names = state.known_variables();
    let is_variable = |name: &str| variable(state, name).is_some();
    let mut found: Vec<String> = Vec::new();
    for term in terms {
        // Ansible's messages, which content matches on.
        let pattern = term.as_str().ok_or_else(|| {
            invalid(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a <class '{}'>",
                super::filters::text(term).unwrap_or_default(),
                super::missing::python_type(term)
            ))
        })?;
        let re = Regex::new(pattern, Flags::default()).map_err(|e| {
            invalid(format!(
                "Unable to use \"{pattern}\" as a search parameter: {e}"
            ))
        })?;
        for name in &names {
            let hit = re.is_match(name).map_err(|e| invalid(e.to_string()))?;
            if hit && is_variable(name) && !found.iter().any(|f| f == name) {
                found.push(name.to_string());
            }
        }
    }
    Ok(found)
}

/// What `first_found` searches: file names, each under each of the
/// current `paths`, and whether finding none is fine.
#[derive(Default)]
struct Search {
    candidates: Vec<String>,
    /// Set by the keyword arguments, then by each `{files, paths, skip}`
    /// term for the terms after it, as Ansible's options are.
    paths: Vec<String>,
    skip: bool,
}

/// The first file that exists among the terms (plain names, lists of
/// them, or `{files, paths, skip}`), an absolute path as it is and a
/// relative one searched as Ansible does: in the task's role (its
/// `<subdir>/`, then itself), then the playbook's folder (the same way).
fn first_found(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<String>, Error> {
    let subdir: String = kwargs
        .get::<Option<String>>("subdir")?
        .unwrap_or("files".into());
    let mut search = Search {
        skip: kwargs.get::<Option<bool>>("skip")?.unwrap_or(false),
        paths: words(kwargs.get("paths")?, &[',', ':', ';']),
        ..Search::default()
    };
    let files = words(kwargs.get("files")?, &[',', ';']);
    search.add(&files);
    for term in terms {
        add_terms(term, &mut search)?;
    }
    let roots = search_roots(state);
    let found = search
        .candidates
        .iter()
        .find_map(|name| locate(&roots, &subdir, name));
    match found {
        Some(path) => Ok(vec![path.display().to_string()]),
        None if search.skip => Ok(Vec::new()),
        None => Err(invalid(format!(
            "first_found: none of {} was found",
            search.candidates.join(", ")
        ))),
    }
}

/// Where a relative name is looked for: the task's `ansible_search_path`
/// (its role, then its file's folder), else its role; then the
/// playbook's folder.
fn search_roots(state: &State) -> Vec<PathBuf> {
    let set = |v: &Value| !v.is_undefined() && !v.is_none();
    let task = match state.lookup("ansible_search_path").filter(set) {
        Some(list) => list.try_iter().map(|i| i.collect()).unwrap_or_default(),
        None => state.lookup("role_path").into_iter().collect::<Vec<_>>(),
    };
    let mut roots: Vec<PathBuf> = task
        .into_iter()
        .chain(state.lookup("playbook_dir"))
        .filter(set)
        .map(|v| PathBuf::from(v.to_string()))
        .collect();
    roots.dedup();
    roots
}

/// The files (not folders) matching each term's last component, in the
/// first folder found for the rest as `first_found` finds a file (under
/// `files/` first), sorted; none is an empty list, as in Ansible.
fn fileglob(state: &State, terms: &[Value]) -> Result<Vec<String>, Error> {
    let roots = search_roots(state);
    let only_visible = glob::MatchOptions {
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let mut found = Vec::new();
    for term in terms.iter().flat_map(|t| words(Some(t.clone()), &[','])) {
        let path = Path::new(&term);
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(d), Some(n)) => (d, n.to_string_lossy()),
            _ => continue,
        };
        let pattern =
            glob::Pattern::new(&name).map_err(|e| invalid(format!("fileglob: '{term}': {e}")))?;
        let Some(dir) = locate_with(&roots, "files", &dir.to_string_lossy(), Path::is_dir) else {
            continue;
        };
        let mut matched: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| pattern.matches_with(&e.file_name().to_string_lossy(), only_visible))
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        matched.sort();
        found.extend(matched);
    }
    Ok(found)
}

impl Search {
    /// Each file under each current path, or the files alone.
    fn add(&mut self, files: &[String]) {
        if self.paths.is_empty() {
            self.candidates.extend(files.iter().cloned());
            return;
        }
        for path in &self.paths {
            let under = files.iter().map(|f| format!("{path}/{f}"));
            self.candidates.extend(under);
        }
    }
}

fn add_terms(term: &Value, search: &mut Search) -> Result<(), Error> {
    if let Some(s) = term.as_str() {
        search.add(&split(s, &[',', ';']));
        return Ok(());
    }
    if term.kind() == minijinja::value::ValueKind::Map {
        let get = |k: &str| {
            term.get_attr(k)
                .ok()
                .filter(|v| !v.is_undefined() && !v.is_none())
        };
        search.skip = get("skip").is_some_and(|v| v.is_true());
        search.paths = words(get("paths"), &[',', ':', ';']);
        search.add(&words(get("files"), &[',', ';']));
        return Ok(());
    }
    for item in term.try_iter()? {
        add_terms(&item, search)?;
    }
    Ok(())
}

/// A string split on `seps`, or a list of strings as they are.
fn words(v: Option<Value>, seps: &[char]) -> Vec<String> {
    let Some(v) = v else { return Vec::new() };
    match v.as_str() {
        Some(s) => split(s, seps),
        None => v
            .try_iter()
            .into_iter()
            .flatten()
            .map(|x| x.to_string())
            .collect(),
    }
}

fn split(s: &str, seps: &[char]) -> Vec<String> {
    s.split(seps)
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

fn locate(roots: &[PathBuf], subdir: &str, name: &str) -> Option<PathBuf> {
    locate_with(roots, subdir, name, Path::is_file)
}

/// `name` as it is when absolute, else the first of `root/subdir/name` and
/// `root/name` that is what `is` wants.
fn locate_with(
    roots: &[PathBuf],
    subdir: &str,
    name: &str,
    is: fn(&Path) -> bool,
) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        return is(path).then(|| path.to_path_buf());
    }
    roots
        .iter()
        .flat_map(|root| [root.join(subdir).join(name), root.join(name)])
        .find(|p| is(p))
}
