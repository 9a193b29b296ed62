//! What a task needs to run Ansible's own module where nodeprov has no
//! native one: the payload the controller's ansible-core packed, and how
//! the task calls it, and how its run reads as a result. Shared by the
//! loader that finds it, the parameters that carry it, the module that runs
//! it and `async_status`, which reads a run left as a job.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::remote::probe::ProbeResult;

/// A module found and packed by the controller's ansible-core.
#[derive(Debug)]
pub struct Payload {
    /// The name Ansible resolved it to (`ansible.builtin.wait_for`).
    pub fqcn: String,
    /// The Python module the runner starts (`ansible.modules.wait_for`).
    pub import: String,
    /// The zip, base64-encoded as it travels.
    pub zip_base64: String,
    pub sha256: String,
    pub ansible_version: String,
    /// The parameters the module documents, aliases included, where its
    /// documentation could be read.
    pub options: Option<Vec<String>>,
    pub runner: Runner,
    /// A PowerShell module, for Windows hosts: nothing is packed, and a
    /// task that reaches it fails, as Ansible's does on a POSIX host.
    pub windows: bool,
}

impl Payload {
    /// Why this payload cannot run on the hosts nodeprov reaches, if so.
    pub fn unrunnable(&self) -> Option<String> {
        self.windows.then(|| {
            format!(
                "{} is a Windows module (PowerShell): it runs on Windows hosts, not over POSIX sh",
                self.fqcn
            )
        })
    }
}

/// How the host runs a payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Runner {
    /// An AnsiballZ zip, started by nodeprov's runner under Python. From
    /// ansible-core 2.19 on, `loader` is what the payload's own loader
    /// takes besides the arguments (its serialization profile and
    /// extensions), as JSON, handed to the runner as it is; `None` for the
    /// releases before, whose modules the runner starts itself.
    Zip { loader: Option<String> },
    /// A `WANT_JSON` or old-style script, or a binary module (the payload
    /// is the file), run as Ansible runs it: by the interpreter a script's
    /// `#!` line names (none: as it is), with the path of a file holding
    /// its arguments.
    File {
        interpreter: Vec<String>,
        args: ArgsFile,
    },
}

/// How a module run from its file reads its arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgsFile {
    /// `WANT_JSON` and binary modules: one JSON object.
    Json,
    /// Old-style modules: `key=value` words, each value Python's `str()`
    /// quoted as `shlex.quote` quotes it.
    Words,
}

/// A task that runs Ansible's module, and why it is not native.
#[derive(Clone, Debug)]
pub struct Fallback {
    pub payload: Arc<Payload>,
    /// "no native module", or the parameters the native one lacks.
    pub why: String,
}

/// How one task runs a payload.
#[derive(Clone, Debug)]
pub struct AnsibleCall {
    pub payload: Arc<Payload>,
    /// Why it runs instead of a native module, as the report notes it.
    pub why: String,
    /// The run is `check`: the module's real run is never planned.
    pub check: bool,
    pub diff: bool,
    pub no_log: bool,
}

/// What a module's run registers: its JSON result without Ansible's
/// internal keys, failed when it says so or its status is not 0; a run
/// that printed no result fails with why.
pub(crate) fn run_result(output: &ProbeResult) -> Map<String, Value> {
    match module_result(output) {
        Ok(result) => {
            let failed = output.rc != 0 || result["failed"] == json!(true);
            let changed = result["changed"] == json!(true);
            let mut r = returns(result);
            r.insert("changed".into(), json!(changed));
            r.insert("failed".into(), json!(failed));
            r
        }
        Err(why) => {
            let mut r = Map::new();
            r.insert("changed".into(), json!(false));
            r.insert("failed".into(), json!(true));
            r.insert("msg".into(), json!(why));
            r
        }
    }
}

/// The module's JSON result, found as Ansible finds it among other output
/// (a module or a login script may print before or after it).
pub(crate) fn module_result(output: &ProbeResult) -> Result<Value, String> {
    let text = &output.stdout;
    let start = text.lines().position(|l| l.trim_start().starts_with('{'));
    let parsed = start.and_then(|s| {
        let lines: Vec<&str> = text.lines().skip(s).collect();
        (1..=lines.len())
            .rev()
            .find_map(|n| serde_json::from_str::<Value>(&lines[..n].join("\n")).ok())
    });
    match parsed {
        Some(v @ Value::Object(_)) => Ok(as_the_controller_sees(v)),
        _ => Err(format!(
            "no JSON result (exit status {}): {}",
            output.rc,
            last_line(output)
        )),
    }
}

/// A module of ansible-core 2.19 or later that raised returns its error as
/// an `ErrorSummary`, with no `msg`: Ansible's controller words it
/// ("Task failed: Module failed: boom") and keeps the traceback's text.
fn as_the_controller_sees(mut result: Value) -> Value {
    let summary = &result["exception"];
    if result.get("msg").is_some() || summary["__ansible_type"] != "ErrorSummary" {
        return result;
    }
    let mut said = vec!["Task failed".to_string(), "Module failed".to_string()];
    let mut event = &summary["event"];
    while let Some(msg) = event["msg"].as_str() {
        said.push(msg.trim_end_matches('.').to_string());
        event = &event["chain"]["event"];
    }
    let traceback = summary["formatted_traceback"]
        .as_str()
        .unwrap_or("(traceback unavailable)")
        .to_string();
    result["msg"] = json!(said.join(": "));
    result["exception"] = json!(traceback);
    result
}

/// The last line of what a script said, stderr first.
pub(crate) fn last_line(r: &ProbeResult) -> String {
    let text = if r.stderr.trim().is_empty() {
        &r.stdout
    } else {
        &r.stderr
    };
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_string()
}

/// A module's result without Ansible's internal keys.
pub(crate) fn returns(result: Value) -> Map<String, Value> {
    let Value::Object(mut m) = result else {
        return Map::new();
    };
    m.remove("invocation");
    m.retain(|k, _| !k.starts_with("_ansible"));
    m
}
