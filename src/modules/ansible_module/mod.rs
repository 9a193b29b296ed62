//! Ansible's own module, for a task whose module nodeprov has no native
//! version of: a builtin (`tempfile`, `wait_for`), a collection's, or one
//! in a role's or playbook's `library/`. The payload (the module and its
//! `module_utils`, zipped by the controller's ansible-core) is kept on the
//! host under its SHA-256, so one module used by many tasks travels once;
//! the arguments travel on the runner's standard input, never on a
//! command line.
//!
//! Planning runs the module in check mode as the task's probe, as Ansible
//! does for a whole run under `--check`: its `changed` is the plan, its
//! return values the registered result. Apply then runs it for real only
//! when that said it would change something, failed, or could not say (a
//! module without check mode), so a compliant host costs no extra trip.

use serde_json::{json, Map, Value};

use crate::base::python;
use crate::base::shell::{
    keyed_digest, private_folder, quote, secret_stdin, shlex_quote, USER_HOME,
};
use crate::modules::kit::ansible::{
    last_line, module_result, returns, run_result, AnsibleCall, ArgsFile, Runner,
};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Effect, Facts, ModuleError, Plan};
use crate::modules::params::{ParamError, ParamSpec, Params};
use crate::remote::probe::{Probe, ProbeResult, DURABLE};

/// Not in the registry: the loader selects it for a module key only the
/// controller's ansible-core knows, and says so at `validate`.
pub(crate) const ANSIBLE_MODULE: ModuleSpec = ModuleSpec {
    name: "ansible_module",
    source: file!(),
    aliases: &[],
    params: &ANY_PARAMETER,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

/// The module's own argument spec checks its parameters, on the host.
static ANY_PARAMETER: ParamSpec = ParamSpec {
    names: &[],
    required: &[],
    docs: &[],
    any_variable: true,
    aliases: &[],
};

/// The host-side half of Ansible's AnsiballZ wrapper.
const RUNNER: &str = include_str!("runner.py");

/// How long the host's module runner waits for the next task before it
/// ends: long enough to outlast the native steps between two tasks, short
/// enough that none lingers long after the run.
const RUNNER_IDLE_SECS: u32 = 15;

/// Exit statuses of the wrapper script itself, apart from the module's.
const NO_PYTHON: i32 = 97;
const NO_PAYLOAD: i32 = 98;

/// Where Ansible's interpreter discovery looks, the distribution's own
/// Python first so that a user's shims (pyenv) are not taken for it. The
/// first that is Python 3.7 or later runs the module: ansible-core's
/// modules run on nothing older (EL 8's platform Python is 3.6).
const INTERPRETERS: &[&str] = &[
    "/usr/bin/python3",
    "python3.12",
    "python3.11",
    "python3.10",
    "python3.9",
    "python3.8",
    "python3.7",
    "/usr/libexec/platform-python",
    "python3",
];

struct AnsibleModule {
    call: AnsibleCall,
    /// The task's parameters, sent as the module's arguments.
    args: Map<String, Value>,
    interpreter: Option<String>,
    /// The socket of the host's module runner for this run, in the user's
    /// cache folder: unpredictable, and one per host, interpreter and
    /// ansible-core.
    runner_socket: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let Some(call) = p.ctx.ansible.clone() else {
        return Err(p.error(
            "",
            "no payload of Ansible's module was prepared for this task",
        ));
    };
    if let Some(why) = call.payload.unrunnable() {
        return Err(p.error("", why));
    }
    let args = p
        .entries()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let interpreter = match &p.ctx.var("ansible_python_interpreter") {
        Value::String(s) if !s.is_empty() && !s.starts_with("auto") => Some(s.clone()),
        _ => None,
    };
    let runner_socket = format!(
        "run-{}",
        keyed_digest(&format!(
            "module runner\n{}\n{}\n{}",
            python::str_of(p.ctx.var("inventory_hostname")),
            interpreter.as_deref().unwrap_or(""),
            call.payload.ansible_version
        ))
    );
    Ok(Box::new(AnsibleModule {
        call,
        args,
        interpreter,
        runner_socket,
    }))
}

impl Module for AnsibleModule {
    fn probes(&self) -> Vec<Probe> {
        match self.call.check {
            true => vec![self.payload_probe(), self.check_probe()],
            false => vec![self.payload_probe()],
        }
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let ready = facts.get(&self.payload_key())?;
        if ready.rc != 0 {
            return Err(self.unready(ready));
        }
        let mut plan = Plan::noop();
        plan.notes.push(format!(
            "Ansible's module {} (ansible-core {}): {}",
            self.call.payload.fqcn, self.call.payload.ansible_version, self.call.why
        ));
        if !self.call.check {
            // Its result, changed or not, and the values it returns are
            // the real run's, as in Ansible.
            let run = Change::new(self.call.payload.fqcn.clone(), None, Some("run".into()));
            plan.changes.push(run);
            plan.steps.push(self.run_script(false));
            plan.effects.push(Effect::InvalidateAll);
            return Ok(plan);
        }
        let answer = facts.get(&self.check_key())?;
        let result = match answer.rc {
            NO_PYTHON | NO_PAYLOAD => return Err(self.unready(answer)),
            _ => module_result(answer).map_err(|why| self.failure(why))?,
        };
        if result["skipped"] == json!(true) {
            let why = message(&result).unwrap_or("the module skipped its check-mode run");
            let run = Change::new(self.call.payload.fqcn.clone(), None, Some("run".into()));
            plan.changes.push(run);
            plan.unknown = Some(format!("{}: {why}", self.name()));
            return Ok(plan);
        }
        if result["failed"] == json!(true) {
            let why = message(&result).unwrap_or("failed without a message");
            // What an earlier task of the run would provide may be what
            // it lacks; after such drift this is no verdict.
            return Err(ModuleError::Absent(format!("{}: {why}", self.name())));
        }
        if result["changed"] == json!(true) {
            let mut change =
                Change::new(self.call.payload.fqcn.clone(), None, Some(summary(&result)));
            change.diff = diff_text(&result);
            plan.changes.push(change);
        }
        plan.returns = returns(result);
        Ok(plan)
    }

    /// In apply its result is the real run's; in check mode it is
    /// planned, and its check-mode run's values are what conditions and
    /// `register` read.
    fn is_command(&self) -> bool {
        !self.call.check
    }

    fn command_result(&self, output: &ProbeResult) -> Value {
        Value::Object(run_result(output))
    }

    fn output_is_json(&self) -> bool {
        true
    }

    /// Its check-mode run must see what earlier tasks changed.
    fn reads_everything(&self) -> bool {
        self.call.check
    }
}

impl AnsibleModule {
    fn name(&self) -> String {
        format!("Ansible's module {}", self.call.payload.fqcn)
    }

    /// The host cannot run the module: no Python, or no payload. An
    /// interpreter the inventory names and the host lacks fails as
    /// Ansible words it, with nothing around its message.
    fn unready(&self, answer: &ProbeResult) -> ModuleError {
        match (answer.rc, &self.interpreter) {
            (NO_PYTHON, Some(_)) => ModuleError::Returned {
                msg: last_line(answer).to_string(),
                returns: Default::default(),
            },
            _ => ModuleError::Missing(format!("{}: {}", self.name(), last_line(answer))),
        }
    }

    fn failure(&self, why: String) -> ModuleError {
        ModuleError::Unsupported(format!("{}: {why}", self.name()))
    }

    /// One per payload and interpreter: the answer also says whether the
    /// host has the Python to run it.
    fn payload_key(&self) -> String {
        let python = self.interpreter.as_deref().unwrap_or("discovered");
        format!(
            "{DURABLE}ansible payload {} for {python}",
            self.call.payload.sha256
        )
    }

    /// Keyed per run: the arguments may hold secrets.
    fn check_key(&self) -> String {
        let args = Value::Object(self.args.clone()).to_string();
        let python = self.interpreter.as_deref().unwrap_or("");
        let what = format!("{}\n{python}\n{args}", self.call.payload.sha256);
        // After the payload's key, so that the payload is in place first.
        format!(
            "the check-mode run of {} {}",
            self.call.payload.fqcn,
            keyed_digest(&what)
        )
    }

    /// Finds the Python (for a zip), then puts the payload in the user's
    /// `~/.ansible/nodeprov` unless it is there already: both folders the
    /// user's own and no link, the cache closed to others, the file
    /// checked against its digest, written under a random name and renamed.
    fn payload_probe(&self) -> Probe {
        let p = &self.call.payload;
        let body: String = p
            .zip_base64
            .as_bytes()
            .chunks(76)
            .map(|c| String::from_utf8_lossy(c).into_owned() + "\n")
            .collect();
        let script = format!(
            "{folder}{python}np_z=\"$np_c/{sha}.zip\"; umask 077\n\
             if [ -f \"$np_z\" ] && [ ! -L \"$np_z\" ] && printf '%s  %s\\n' {sha} \"$np_z\" | sha256sum -c --status 2>/dev/null; then echo kept; exit 0; fi\n\
             np_n=$(mktemp \"$np_c/.payload.XXXXXX\") || exit 1\n\
             {decode}\
             if ! printf '%s  %s\\n' {sha} \"$np_n\" | sha256sum -c --status; then rm -f \"$np_n\"; echo 'the payload arrived damaged' >&2; exit 1; fi\n\
             mv -f \"$np_n\" \"$np_z\" && echo sent",
            folder = private_folder("np_c", ".ansible/nodeprov"),
            python = self.find_python_for_zip(),
            sha = p.sha256,
            // On stdin like a secret, so reports show no copy of it.
            decode = secret_stdin("base64 -d >\"$np_n\"", body.trim_end()),
        );
        Probe::new(self.payload_key(), script)
    }

    fn check_probe(&self) -> Probe {
        Probe::new(self.check_key(), self.run_script(true))
    }

    /// For a zip, the search for its Python; a script names its own
    /// interpreter.
    fn find_python_for_zip(&self) -> String {
        match self.call.payload.runner {
            Runner::Zip { .. } => self.find_python(),
            Runner::File { .. } => String::new(),
        }
    }

    /// Sets `np_py` to the interpreter Ansible's discovery would pick, or
    /// ends the script saying there is none.
    fn find_python(&self) -> String {
        let (candidates, looked) = match &self.interpreter {
            Some(python) => (quote(python), python.clone()),
            None => (
                INTERPRETERS
                    .iter()
                    .map(|c| quote(c))
                    .collect::<Vec<_>>()
                    .join(" "),
                INTERPRETERS.join(", "),
            ),
        };
        let why = match &self.interpreter {
            // Ansible's words for an interpreter the inventory names.
            Some(python) => format!("The module interpreter '{python}' was not found."),
            None => format!(
                "no Python 3.7 or later on the host (looked for {looked}); set ansible_python_interpreter"
            ),
        };
        format!(
            "np_py=\nfor np_i in {candidates}; do command -v \"$np_i\" >/dev/null 2>&1 && \
             \"$np_i\" -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null && {{ np_py=$np_i; break; }}; done\n\
             if [ -z \"$np_py\" ]; then echo {} >&2; exit {NO_PYTHON}; fi\n",
            quote(&why)
        )
    }

    /// The module run once: in check mode as the probe, for real as the
    /// step. The run may come long after the probe that put the payload in
    /// place, so what runs is a private copy of it, checked against its
    /// digest first: whoever could swap the cached file in between runs
    /// nothing.
    fn run_script(&self, check: bool) -> String {
        let p = &self.call.payload;
        let mut args = self.args.clone();
        let short = p.fqcn.rsplit('.').next().unwrap_or(&p.fqcn);
        for (k, v) in [
            ("_ansible_check_mode", json!(check)),
            ("_ansible_no_log", json!(self.call.no_log)),
            ("_ansible_diff", json!(self.call.diff)),
            ("_ansible_debug", json!(false)),
            ("_ansible_verbosity", json!(0)),
            ("_ansible_version", json!(p.ansible_version)),
            ("_ansible_module_name", json!(short)),
            ("_ansible_keep_remote_files", json!(false)),
            ("_ansible_shell_executable", json!("/bin/sh")),
            ("_ansible_string_conversion_action", json!("warn")),
            ("_ansible_syslog_facility", json!("LOG_USER")),
        ] {
            args.insert(k.into(), v);
        }
        let run = match &p.runner {
            // The runner starts unless it listens already; the module then
            // runs in a fork of it, and here if it cannot be reached.
            Runner::Zip { loader } => format!(
                "np_s={socket}; np_rt={runner}\n\
                 if [ ! -S \"$np_c/$np_s\" ]; then (cd \"$np_c\" && exec env -i PATH=\"$PATH\" HOME=\"$np_h\" \"$np_py\" -c \"$np_rt\" --serve \"$np_s\" {RUNNER_IDLE_SECS}) </dev/null >/dev/null 2>&1; fi\n\
                 {}",
                secret_stdin(
                    &format!(
                        "HOME=\"$np_h\" \"$np_py\" -c \"$np_rt\" --via \"$np_c/$np_s\" \"$np_r\" {}{}",
                        quote(&p.import),
                        loader
                            .as_deref()
                            .map(|l| format!(" {}", quote(l)))
                            .unwrap_or_default()
                    ),
                    &json!({ "ANSIBLE_MODULE_ARGS": args }).to_string(),
                ),
                socket = quote(&self.runner_socket),
                runner = quote(RUNNER),
            ),
            // As Ansible runs one: its arguments, as they are, in a file
            // of their own (private, as the copy is), named after it. A
            // binary runs as it is: its private copy is made runnable (in
            // the user's cache folder, as /tmp may forbid running files).
            Runner::File {
                interpreter,
                args: form,
            } => {
                let command = match interpreter.is_empty() {
                    true => "chmod 700 \"$np_r\" && \"$np_r\"".to_string(),
                    false => {
                        interpreter
                            .iter()
                            .map(|w| quote(w))
                            .collect::<Vec<_>>()
                            .join(" ")
                            + " \"$np_r\""
                    }
                };
                format!(
                    "np_a=$(umask 077; mktemp) || {{ rm -f \"$np_r\"; exit 1; }}\n\
                     {}HOME=\"$np_h\" {command} \"$np_a\"\n\
                     np_rc=$?; rm -f \"$np_a\"; (exit $np_rc)\n",
                    secret_stdin("cat >\"$np_a\"", &args_file(*form, args)),
                )
            }
        };
        format!(
            "{USER_HOME}{python}np_c=\"$np_h/.ansible/nodeprov\"; np_z=\"$np_c/{sha}.zip\"\n\
             if [ ! -f \"$np_z\" ] || [ -L \"$np_z\" ]; then echo \"the payload is not at $np_z\" >&2; exit {NO_PAYLOAD}; fi\n\
             np_r=$(umask 077; mktemp \"$np_c/.run.XXXXXX\") || exit 1\n\
             if ! cat -- \"$np_z\" >\"$np_r\" || ! printf '%s  %s\\n' {sha} \"$np_r\" | sha256sum -c --status 2>/dev/null; then \
             rm -f \"$np_r\"; echo \"the payload at $np_z changed since it was checked\" >&2; exit {NO_PAYLOAD}; fi\n\
             {run}np_rc=$?; rm -f \"$np_r\"; (exit $np_rc)",
            python = self.find_python_for_zip(),
            sha = p.sha256,
        )
    }
}

/// The text of a module's arguments file, as Ansible writes it.
fn args_file(form: ArgsFile, args: Map<String, Value>) -> String {
    match form {
        ArgsFile::Json => Value::Object(args).to_string(),
        ArgsFile::Words => args
            .iter()
            .map(|(k, v)| format!("{k}={} ", shlex_quote(&python::str_of(v))))
            .collect(),
    }
}

fn message(result: &Value) -> Option<&str> {
    result["msg"].as_str().filter(|m| !m.is_empty())
}

/// The change as reports show it: the module's message, else its state.
fn summary(result: &Value) -> String {
    message(result)
        .map(str::to_string)
        .or_else(|| result["state"].as_str().map(|s| format!("state {s}")))
        .unwrap_or_else(|| "changed".into())
}

/// A diff the module returned, as one unified text.
fn diff_text(result: &Value) -> Option<String> {
    let diffs = match &result["diff"] {
        Value::Array(items) => items.clone(),
        d @ Value::Object(_) => vec![d.clone()],
        _ => return None,
    };
    let text: String = diffs
        .iter()
        .filter_map(|d| match (&d["prepared"], &d["before"], &d["after"]) {
            (Value::String(p), _, _) => Some(p.clone()),
            (_, Value::String(b), Value::String(a)) if b != a => Some(format!("- {b}\n+ {a}\n")),
            _ => None,
        })
        .collect();
    (!text.is_empty()).then_some(text)
}

/// What the task registers: the module's return values, without the
/// arguments it echoes (`invocation`), which may hold secrets.
#[cfg(test)]
mod tests;
