//! Ansible's own module, for a task whose module nodeprov has no native
//! version of: a builtin (`tempfile`, `wait_for`), a collection's, or one
//! in a role's or playbook's `library/`. The payload (the module and its
//! `module_utils`, zipped by the controller's ansible-core) is kept on the
//! host under its SHA-256, so one module used by many tasks travels once;
//! the arguments travel on the runner's standard input, never on a
//! command line.
//!
//! In check mode the module's own check-mode run is the task's probe, as
//! Ansible runs it under `--check`: its `changed` is the plan, its return
//! values the registered result. In apply it runs for real as the task's
//! step, as in Ansible.
//!
//! On the host, each run goes to the host's module runner for the run
//! (`runner.py`): one Python per host, user and run that imported
//! module_utils once and forks a child per task, so a task costs a fork,
//! not a Python start and its imports. The check-mode runs of one probe
//! batch share one client.

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
use crate::remote::probe::{Joint, Probe, ProbeResult, DURABLE};

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

/// The user's cache of payloads, under their home, where the runner's
/// socket lives too.
const CACHE: &str = ".ansible/nodeprov";

/// Sets `np_h` and `np_c`, the user's home and their cache.
fn user_cache() -> String {
    format!("{USER_HOME}np_c=\"$np_h\"/{}\n", quote(CACHE))
}

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
            folder = private_folder("np_c", CACHE),
            python = self.find_python_for_zip(),
            sha = p.sha256,
            // On stdin like a secret, so reports show no copy of it.
            decode = secret_stdin("base64 -d >\"$np_n\"", body.trim_end()),
        );
        Probe::new(self.payload_key(), script)
    }

    /// A zip's check-mode runs of one batch share one client, which hands
    /// each to the host's runner in turn.
    fn check_probe(&self) -> Probe {
        let probe = Probe::new(self.check_key(), self.run_script(true));
        let p = &self.call.payload;
        let Runner::Zip { loader } = &p.runner else {
            return probe;
        };
        let query = json!({
            "socket": self.runner_socket,
            "python": self.interpreter,
            "sha": p.sha256,
            "import": p.import,
            "loader": loader.as_deref().unwrap_or(""),
            "args": self.module_args(true),
        });
        probe.with_joint(Joint {
            group: format!("Ansible's modules through {}", self.runner_socket),
            query: query.to_string(),
            script: batch_script,
            split: batch_split,
        })
    }

    /// For a zip, the search for its Python; a script names its own
    /// interpreter.
    fn find_python_for_zip(&self) -> String {
        match self.call.payload.runner {
            Runner::Zip { .. } => find_python(self.interpreter.as_deref()),
            Runner::File { .. } => String::new(),
        }
    }

    /// The arguments the module is given, with Ansible's internal ones.
    fn module_args(&self, check: bool) -> Value {
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
        json!({ "ANSIBLE_MODULE_ARGS": args })
    }

    /// The module run once: in check mode as the probe, for real as the
    /// step. The run may come long after the probe that put the payload in
    /// place, so what runs is a private copy of it, checked against its
    /// digest first: whoever could swap the cached file in between runs
    /// nothing.
    fn run_script(&self, check: bool) -> String {
        let p = &self.call.payload;
        let args = self.module_args(check);
        let run = match &p.runner {
            // The runner starts unless it listens already; the module then
            // runs in a fork of it, and here if it cannot be reached.
            Runner::Zip { loader } => format!(
                "{}{}",
                runner_start(&self.runner_socket, self.interpreter.as_deref()),
                secret_stdin(
                    &format!(
                        "HOME=\"$np_h\" \"$np_py\" -S -c \"$np_rt\" --via \"$np_c/$np_s\" --sha {} \"$np_z\" {}{}",
                        p.sha256,
                        quote(&p.import),
                        loader
                            .as_deref()
                            .map(|l| format!(" {}", quote(l)))
                            .unwrap_or_default()
                    ),
                    &args.to_string(),
                ),
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
                    "np_r=$(umask 077; mktemp \"$np_c/.run.XXXXXX\") || exit 1\n\
                     if ! cat -- \"$np_z\" >\"$np_r\" || ! printf '%s  %s\\n' {sha} \"$np_r\" | sha256sum -c --status 2>/dev/null; then \
                     rm -f \"$np_r\"; echo \"the payload at $np_z changed since it was checked\" >&2; exit {NO_PAYLOAD}; fi\n\
                     np_a=$(umask 077; mktemp) || {{ rm -f \"$np_r\"; exit 1; }}\n\
                     {}HOME=\"$np_h\" {command} \"$np_a\"\n\
                     np_rc=$?; rm -f \"$np_a\" \"$np_r\"; (exit $np_rc)\n",
                    secret_stdin("cat >\"$np_a\"", &args_file(*form, args["ANSIBLE_MODULE_ARGS"].clone())),
                    sha = p.sha256,
                )
            }
        };
        format!(
            "{cache}np_z=\"$np_c/{sha}.zip\"\n\
             if [ ! -f \"$np_z\" ] || [ -L \"$np_z\" ]; then echo \"the payload is not at $np_z\" >&2; exit {NO_PAYLOAD}; fi\n\
             {run}",
            cache = user_cache(),
            sha = p.sha256,
        )
    }
}

/// Sets `np_py` to the interpreter Ansible's discovery would pick, or
/// ends the script saying there is none.
fn find_python(interpreter: Option<&str>) -> String {
    let (candidates, looked) = match interpreter {
        Some(python) => (quote(python), python.to_string()),
        None => (
            INTERPRETERS
                .iter()
                .map(|c| quote(c))
                .collect::<Vec<_>>()
                .join(" "),
            INTERPRETERS.join(", "),
        ),
    };
    let why = match interpreter {
        // Ansible's words for an interpreter the inventory names.
        Some(python) => format!("The module interpreter '{python}' was not found."),
        None => format!(
            "no Python 3.7 or later on the host (looked for {looked}); set ansible_python_interpreter"
        ),
    };
    format!(
        "np_py=\nfor np_i in {candidates}; do command -v \"$np_i\" >/dev/null 2>&1 && \
         \"$np_i\" -S -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null && {{ np_py=$np_i; break; }}; done\n\
         if [ -z \"$np_py\" ]; then echo {} >&2; exit {NO_PYTHON}; fi\n",
        quote(&why)
    )
}

/// Sets `np_s`, `np_rt` and `np_py` for the host's runner named `socket`
/// in the user's cache `$np_c`, and starts it unless it listens already:
/// the interpreter it runs on is kept beside its socket, so that only its
/// first task pays for the search.
fn runner_start(socket: &str, interpreter: Option<&str>) -> String {
    format!(
        "np_s={socket}; np_rt={runner}\n\
         if ! {{ [ -S \"$np_c/$np_s\" ] && read -r np_py <\"$np_c/$np_s.python\"; }} 2>/dev/null; then\n\
         {python}printf '%s\\n' \"$np_py\" >\"$np_c/$np_s.python\"\n\
         (cd \"$np_c\" && exec env -i PATH=\"$PATH\" HOME=\"$np_h\" \"$np_py\" -c \"$np_rt\" --serve \"$np_s\" {RUNNER_IDLE_SECS}) </dev/null >/dev/null 2>&1\n\
         fi\n",
        socket = quote(socket),
        runner = quote(RUNNER),
        python = find_python(interpreter),
    )
}

/// The script that runs several check-mode runs of one batch (the queries
/// of [`AnsibleModule::check_probe`]) through one client.
fn batch_script(queries: &[&str]) -> String {
    let tasks: Vec<Value> = queries
        .iter()
        .map(|q| serde_json::from_str(q).unwrap_or_default())
        .collect();
    let first = &tasks[0];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let body: String = tasks
        .iter()
        .map(|t| {
            format!(
                "{}\n{}\n{}\n{}\n",
                text(&t["sha"]),
                text(&t["import"]),
                text(&t["loader"]),
                t["args"]
            )
        })
        .collect();
    format!(
        "{}{}{}",
        user_cache(),
        runner_start(&text(&first["socket"]), first["python"].as_str()),
        secret_stdin(
            "HOME=\"$np_h\" \"$np_py\" -S -c \"$np_rt\" --batch \"$np_c/$np_s\" \"$np_c\"",
            body.trim_end()
        )
    )
}

/// Each run's answer from [`batch_script`]'s: a line per run of its exit
/// status, stdout and stderr (base64). A batch that did not get as far
/// (no Python) gives every run its answer.
fn batch_split(queries: &[&str], r: &ProbeResult) -> Vec<ProbeResult> {
    use base64::Engine;
    let decode = |b: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(b)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let answers: Option<Vec<ProbeResult>> = r
        .stdout
        .lines()
        .map(|line| {
            let mut fields = line.split(' ');
            Some(ProbeResult {
                rc: fields.next()?.parse().ok()?,
                stdout: decode(fields.next()?).ok()?,
                stderr: decode(fields.next().unwrap_or_default()).ok()?,
            })
        })
        .collect();
    match answers {
        Some(answers) if r.rc == 0 && answers.len() == queries.len() => answers,
        _ => vec![r.clone(); queries.len()],
    }
}

/// The text of a module's arguments file, as Ansible writes it.
fn args_file(form: ArgsFile, args: Value) -> String {
    match form {
        ArgsFile::Json => args.to_string(),
        ArgsFile::Words => args
            .as_object()
            .into_iter()
            .flatten()
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
