//! The controller's ansible-core, for the modules nodeprov has no native
//! version of. One long-lived Python process per run (started the first
//! time a task needs it, never for a playbook of native modules) finds a
//! module as Ansible finds it and packs it with ansible-core's own code;
//! each module is asked for once per run.
//!
//! ansible-core is found as an Ansible user expects: the Python named by
//! `NODEPROV_ANSIBLE_PYTHON`, else the interpreter of the `ansible-playbook`
//! on `PATH`, else `python3` on `PATH` when it can import `ansible`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::modules::kit::ansible::{ArgsFile, Payload, Runner};

/// What the bridge runs: ansible-core's plugin loader and AnsiballZ
/// packer, answering one JSON line per request.
const BRIDGE: &str = include_str!("ansible_core.py");

/// The environment variable that names the controller's Python with
/// ansible-core, ahead of what `PATH` holds.
pub const PYTHON_VAR: &str = "NODEPROV_ANSIBLE_PYTHON";

/// Why Ansible's own module cannot stand in for a missing native one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnsibleCoreError {
    #[error(
        "no ansible-core on this controller ({0}); install it (pip install ansible-core) \
         or name its Python in {PYTHON_VAR}"
    )]
    NotFound(String),
    #[error(
        "{python} has ansible-core {version}, older than {}.{}, the oldest nodeprov drives; \
         install a newer one (pip install ansible-core) or name its Python in {PYTHON_VAR}",
        OLDEST.0, OLDEST.1
    )]
    TooOld { python: String, version: String },
    /// ansible-core answered, and cannot run this module for nodeprov.
    #[error("{0}")]
    Refused(String),
    #[error("the controller's ansible-core stopped answering: {0}")]
    Bridge(String),
}

/// A module as a task names it, and where Ansible would look for it.
pub struct Query<'a> {
    pub module: &'a str,
    /// The task's arguments make Ansible's action plugin hand it to the
    /// module as it is (`remote_src: true`), so a module with a
    /// controller-side plugin may run.
    pub module_only: bool,
    pub library: &'a [PathBuf],
    pub collections: &'a [String],
    pub collection_paths: &'a [PathBuf],
}

/// Where a native task's namesake would be found, kept for the moment a
/// host's values ask for what the native module cannot do.
#[derive(Clone, Debug)]
pub struct ModuleSource {
    pub module: String,
    pub library: Vec<PathBuf>,
    pub collections: Vec<String>,
    pub collection_paths: Vec<PathBuf>,
}

impl ModuleSource {
    pub fn payload(&self) -> Result<Arc<Payload>, AnsibleCoreError> {
        module(&Query {
            module: &self.module,
            module_only: false,
            library: &self.library,
            collections: &self.collections,
            collection_paths: &self.collection_paths,
        })
    }
}

/// The payload of a module, packed once per run.
pub fn module(q: &Query) -> Result<Arc<Payload>, AnsibleCoreError> {
    let request = json!({
        "module": q.module,
        "library": q.library,
        "collections": q.collections,
        "collections_paths": q.collection_paths,
        "module_only": q.module_only,
    });
    let key = request.to_string();
    with_bridge(|state| {
        if let Some(done) = state.packed.get(&key) {
            return done.clone();
        }
        let answer = match &mut state.bridge {
            Ok(bridge) => bridge.ask(&key).and_then(payload),
            Err(e) => Err(e.clone()),
        };
        state.packed.insert(key, answer.clone());
        answer
    })
}

/// Folders of filter, test and lookup plugin files (`filter_plugins/`,
/// `test_plugins/`, `lookup_plugins/`), loaded by ansible-core.
#[derive(Clone, Debug, Default)]
pub struct PluginDirs {
    pub filters: Vec<PathBuf>,
    pub tests: Vec<PathBuf>,
    pub lookups: Vec<PathBuf>,
}

/// Filter, test and lookup names.
#[derive(Clone, Debug, Default)]
pub struct PluginNames {
    pub filters: Vec<String>,
    pub tests: Vec<String>,
    pub lookups: Vec<String>,
}

/// The kinds of plugin a template calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PluginKind {
    Filter,
    Test,
    Lookup,
}

impl PluginKind {
    pub const ALL: [PluginKind; 3] = [PluginKind::Filter, PluginKind::Test, PluginKind::Lookup];

    pub fn name(self) -> &'static str {
        match self {
            PluginKind::Filter => "filter",
            PluginKind::Test => "test",
            PluginKind::Lookup => "lookup",
        }
    }
}

impl PluginNames {
    pub fn of(&self, kind: PluginKind) -> &Vec<String> {
        match kind {
            PluginKind::Filter => &self.filters,
            PluginKind::Test => &self.tests,
            PluginKind::Lookup => &self.lookups,
        }
    }

    pub fn of_mut(&mut self, kind: PluginKind) -> &mut Vec<String> {
        match kind {
            PluginKind::Filter => &mut self.filters,
            PluginKind::Test => &mut self.tests,
            PluginKind::Lookup => &mut self.lookups,
        }
    }
}

/// Loads the plugins in `dirs` and the collection plugins `named` by their
/// full names; answers the names found.
pub fn plugins(dirs: &PluginDirs, named: &PluginNames) -> Result<PluginNames, AnsibleCoreError> {
    let request = json!({
        "plugins": {"filter": dirs.filters, "test": dirs.tests, "lookup": dirs.lookups},
        "named": {"filter": named.filters, "test": named.tests},
    });
    let answer = ask(&request)?;
    let names = |k: &str| -> Vec<String> {
        answer[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(PluginNames {
        filters: names("filter"),
        tests: names("test"),
        lookups: Vec::new(),
    })
}

/// Whether ansible-core has a lookup plugin of this name.
pub fn has_lookup(name: &str) -> Result<bool, AnsibleCoreError> {
    let answer = ask(&json!({ "lookups": [name] }))?;
    Ok(answer["lookup"]
        .as_array()
        .is_some_and(|names| names.iter().any(|n| n == name)))
}

/// Runs a lookup plugin on the controller, as Ansible runs it for a task:
/// with the task's variables, relative files found from `basedir`.
pub fn lookup(
    name: &str,
    terms: Vec<Value>,
    kwargs: Value,
    variables: Value,
    basedir: Option<&str>,
) -> Result<Vec<Value>, AnsibleCoreError> {
    let request = json!({
        "lookup": name, "terms": terms, "kwargs": kwargs,
        "variables": variables, "basedir": basedir,
    });
    match ask(&request)?["value"].take() {
        Value::Array(values) => Ok(values),
        other => Err(AnsibleCoreError::Bridge(format!(
            "lookup '{name}' answered {other} instead of a list"
        ))),
    }
}

/// Calls a loaded filter or test plugin (`kind`) with JSON values.
pub fn call(
    kind: &str,
    name: &str,
    args: Vec<Value>,
    kwargs: Value,
) -> Result<Value, AnsibleCoreError> {
    let request = json!({"call": kind, "name": name, "args": args, "kwargs": kwargs});
    Ok(ask(&request)?["value"].take())
}

/// One request and its answer, which must say `ok`.
fn ask(request: &Value) -> Result<Value, AnsibleCoreError> {
    let answer = with_bridge(|state| match &mut state.bridge {
        Ok(bridge) => bridge.ask(&request.to_string()),
        Err(e) => Err(e.clone()),
    })?;
    match answer["ok"] == json!(true) {
        true => Ok(answer),
        false => Err(AnsibleCoreError::Refused(
            answer["why"]
                .as_str()
                .unwrap_or("ansible-core refused it")
                .to_string(),
        )),
    }
}

/// The run's one bridge, started the first time it is needed.
fn with_bridge<T>(f: impl FnOnce(&mut State) -> T) -> T {
    static STATE: Mutex<Option<State>> = Mutex::new(None);
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(state.get_or_insert_with(|| State {
        bridge: Bridge::start(),
        packed: HashMap::new(),
    }))
}

struct State {
    bridge: Result<Bridge, AnsibleCoreError>,
    packed: HashMap<String, Result<Arc<Payload>, AnsibleCoreError>>,
}

struct Bridge {
    // Held so the process lives as long as the run; it ends at our exit,
    // when its input closes.
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The ansible-core release it imported.
    version: String,
}

/// The oldest ansible-core release whose packing and plugin APIs the
/// bridge drives (`tests/ansible_versions.rs` runs it).
const OLDEST: (u64, u64) = (2, 15);

/// The release of the ansible-core the run's bridge imported, when it runs.
pub fn version() -> Option<String> {
    with_bridge(|state| state.bridge.as_ref().ok().map(|b| b.version.clone()))
}

impl Bridge {
    fn start() -> Result<Bridge, AnsibleCoreError> {
        let python = controller_python()?;
        let mut cmd = Command::new(&python);
        cmd.args(["-I", "-c", BRIDGE])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        crate::base::child_env::without_own_settings(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| AnsibleCoreError::NotFound(format!("{}: {e}", python.display())))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(AnsibleCoreError::Bridge("no pipes to the bridge".into()));
        };
        let mut bridge = Bridge {
            _child: child,
            input,
            output: BufReader::new(output),
            version: String::new(),
        };
        let ready = bridge.read().map_err(|e| match e {
            AnsibleCoreError::Bridge(why) => {
                AnsibleCoreError::NotFound(format!("{} did not start: {why}", python.display()))
            }
            other => other,
        })?;
        if ready["ready"] != json!(true) {
            let why = ready["why"].as_str().unwrap_or("it cannot import ansible");
            return Err(AnsibleCoreError::NotFound(format!(
                "{}: {why}",
                python.display()
            )));
        }
        bridge.version = ready["ansible_version"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut parts = bridge
            .version
            .split('.')
            .map(|p| p.parse::<u64>().unwrap_or(0));
        let release = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if release < OLDEST {
            return Err(AnsibleCoreError::TooOld {
                python: python.display().to_string(),
                version: bridge.version,
            });
        }
        Ok(bridge)
    }

    fn ask(&mut self, request: &str) -> Result<Value, AnsibleCoreError> {
        writeln!(self.input, "{request}")
            .and_then(|()| self.input.flush())
            .map_err(|e| AnsibleCoreError::Bridge(e.to_string()))?;
        self.read()
    }

    fn read(&mut self) -> Result<Value, AnsibleCoreError> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Err(AnsibleCoreError::Bridge("it exited".into())),
            Ok(_) => serde_json::from_str(&line)
                .map_err(|e| AnsibleCoreError::Bridge(format!("unreadable answer: {e}"))),
            Err(e) => Err(AnsibleCoreError::Bridge(e.to_string())),
        }
    }
}

fn payload(answer: Value) -> Result<Arc<Payload>, AnsibleCoreError> {
    let text = |k: &str| answer[k].as_str().map(str::to_string);
    if answer["ok"] != json!(true) {
        let why = text("why").unwrap_or_else(|| "ansible-core refused it".into());
        return Err(AnsibleCoreError::Refused(why));
    }
    let field = |k: &str| {
        text(k).ok_or_else(|| AnsibleCoreError::Bridge(format!("the answer has no '{k}'")))
    };
    Ok(Arc::new(Payload {
        fqcn: field("fqcn")?,
        import: field("import")?,
        zip_base64: field("zip")?,
        sha256: field("sha256")?,
        ansible_version: field("ansible_version")?,
        options: answer["options"].as_array().map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        }),
        runner: match answer["loader"]["script"].as_array() {
            Some(words) => Runner::File {
                interpreter: words
                    .iter()
                    .filter_map(|w| w.as_str().map(str::to_string))
                    .collect(),
                args: match answer["loader"]["args"].as_str() {
                    Some("words") => ArgsFile::Words,
                    _ => ArgsFile::Json,
                },
            },
            None => Runner::Zip {
                loader: answer["loader"]
                    .is_object()
                    .then(|| answer["loader"].to_string()),
            },
        },
        windows: answer["windows"] == json!(true),
    }))
}

/// The controller's Python that has ansible-core, by the order above.
fn controller_python() -> Result<PathBuf, AnsibleCoreError> {
    if let Some(named) = std::env::var_os(PYTHON_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(named));
    }
    if let Some(python) = on_path("ansible-playbook").and_then(|p| interpreter_of(&p)) {
        return Ok(python);
    }
    on_path("python3").ok_or_else(|| {
        AnsibleCoreError::NotFound("neither ansible-playbook nor python3 is on PATH".into())
    })
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The Python a script's `#!` line names (`/usr/bin/env python3` looked up
/// on `PATH`).
fn interpreter_of(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.lines().next()?.strip_prefix("#!")?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    match first.ends_with("/env") {
        true => on_path(words.find(|w| !w.starts_with('-'))?),
        false => Some(PathBuf::from(first)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interpreter_of_a_script_is_its_shebang_or_env_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let direct = dir.path().join("direct");
        std::fs::write(&direct, "#!/opt/py/bin/python3.12\nimport x\n").unwrap();
        assert_eq!(
            interpreter_of(&direct),
            Some(PathBuf::from("/opt/py/bin/python3.12"))
        );
        let none = dir.path().join("none");
        std::fs::write(&none, "import x\n").unwrap();
        assert_eq!(interpreter_of(&none), None);
    }

    #[test]
    fn an_answer_without_ok_is_a_refusal_with_its_reason() {
        let refused = payload(json!({"ok": false, "why": "no module named 'x'"}));
        assert_eq!(
            refused.unwrap_err(),
            AnsibleCoreError::Refused("no module named 'x'".into())
        );
        let partial = payload(json!({"ok": true, "fqcn": "a.b.c"}));
        assert!(matches!(partial, Err(AnsibleCoreError::Bridge(_))));
    }
}
