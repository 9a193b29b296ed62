//! `command`, `shell`, `raw` and `script`: run something; the result is
//! what it printed. nodeprov needs no Python on a host, so `raw`, which
//! Ansible keeps for hosts without one, is `shell` without its extras.
//! `script` runs a file of the controller: a private copy in the user's
//! `~/.ansible/tmp` (not `/tmp`, which may forbid running files), removed
//! when it ends.
//!
//! `command` and `shell` return `start`, `end` and `delta` as Ansible's
//! module does, by the host's clock and in its time zone, to the
//! microsecond where the host's shell is bash and to the hundredth of a
//! second otherwise (the kernel's uptime; no process is started to read a
//! clock). A read-only command answered from the probe batch
//! (`changed_when: false` with nothing changed before it) returns none.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the driver version the GPUs report
//!   command: nvidia-smi --query-gpu=driver_version --format=csv,noheader
//!   register: driver_version
//!   changed_when: false
//! - name: Build the CUDA samples once
//!   shell:
//!     cmd: make -j16 > build.log 2>&1
//!     chdir: /opt/cuda-samples
//!     creates: /opt/cuda-samples/bin/x86_64/linux/release/deviceQuery
//! - name: Turn on persistence mode on every GPU
//!   raw: nvidia-smi -pm 1
//!   become: true
//! - name: Run the vendor's firmware check, once
//!   script: check-firmware.sh --quiet
//!   args:
//!     creates: /var/lib/firmware-checked
//! ```

use crate::base::shell::{first_word, here_document, private_folder, quote, split};
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::module::{command_msg, AnsiblePlugin, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Effect, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const COMMAND: ModuleSpec = ModuleSpec {
    name: "command",
    source: file!(),
    aliases: &["ansible.builtin.command"],
    params: &CommandArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command,
    plugin: None,
    controller_file: None,
    build: build_command,
};

pub(crate) const SHELL: ModuleSpec = ModuleSpec {
    name: "shell",
    source: file!(),
    aliases: &["ansible.builtin.shell"],
    params: &ShellArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: false,
        lacks: &[],
    }),
    controller_file: None,
    build: build_shell,
};

pub(crate) const RAW: ModuleSpec = ModuleSpec {
    name: "raw",
    source: file!(),
    aliases: &["ansible.builtin.raw"],
    params: &RawArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command,
    plugin: None,
    controller_file: None,
    build: build_raw,
};

pub(crate) const SCRIPT: ModuleSpec = ModuleSpec {
    name: "script",
    source: file!(),
    aliases: &["ansible.builtin.script"],
    params: &ScriptArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command,
    plugin: None,
    controller_file: None,
    build: build_script,
};

module_params! {
    struct CommandArgs {
        /// the command line, split into words as sh would (or the free-form command)
        cmd: Option<String>,
        /// the words of the command, instead of `cmd`
        argv: Vec<String>,
        /// the folder to run it in
        chdir: Option<String>,
        /// skip the command when this path exists
        creates: Option<String>,
        /// skip the command unless this path exists
        removes: Option<String>,
        /// text fed to its standard input
        stdin: Option<String>,
        /// a line break fed after `stdin`
        stdin_add_newline: bool = true,
        /// strip the line breaks that end `stdout` and `stderr`
        strip_empty_ends: bool = true,
        /// not used: Ansible's `command` has ignored it since 2.4 (`shell` takes one)
        executable: Option<String>,
    }
}

module_params! {
    struct ShellArgs {
        /// the shell command (or the free-form command)
        cmd: String,
        /// the folder to run it in
        chdir: Option<String>,
        /// skip the command when this path exists
        creates: Option<String>,
        /// skip the command unless this path exists
        removes: Option<String>,
        /// text fed to its standard input
        stdin: Option<String>,
        /// a line break fed after `stdin`
        stdin_add_newline: bool = true,
        /// strip the line breaks that end `stdout` and `stderr`
        strip_empty_ends: bool = true,
        /// the shell that runs it, instead of /bin/sh
        executable: Option<String>,
    }
}

module_params! {
    struct RawArgs {
        /// the shell command (the free-form command)
        cmd: String,
        /// the shell that runs it, instead of /bin/sh
        executable: Option<String>,
    }
}

module_params! {
    struct ScriptArgs {
        /// the controller's script (found in files/ as `copy` finds `src`) and its arguments, as a shell reads them
        cmd: String,
        /// the folder to run it in (an absolute path)
        chdir: Option<String>,
        /// skip the script when this path exists
        creates: Option<String>,
        /// skip the script unless this path exists
        removes: Option<String>,
        /// the program that runs the script (`python3`...), instead of running it
        executable: Option<String>,
        /// decrypt a vaulted script on the controller
        decrypt: bool = true,
    }
}

/// How Python words a program `command` cannot find.
const NOT_FOUND: &str = "[Errno 2] No such file or directory: ";

/// How Ansible's `command` words a `chdir` it cannot enter.
const CHDIR_FAILED: &str = "Unable to change directory before execution";

/// What a command's standard input reads: `stdin`, with a line break
/// unless `stdin_add_newline: false`.
fn fed(stdin: Option<String>, newline: bool) -> Option<String> {
    stdin.map(|text| match newline {
        true => text + "\n",
        false => text,
    })
}

struct Command {
    /// What the report shows.
    display: String,
    /// What Ansible's module registers as `cmd`: `command`'s words, the
    /// line `shell` ran (null for the action plugins, which register none).
    cmd: serde_json::Value,
    /// The shell text that runs it.
    script: String,
    chdir: Option<String>,
    creates: Option<String>,
    removes: Option<String>,
    stdin: Option<String>,
    style: Style,
    /// `strip_empty_ends`: the outputs lose the line breaks they end with.
    strip: bool,
    /// The program `command` starts, as shell text: one it cannot find
    /// fails as Python's `OSError` does, with no output.
    program: Option<String>,
    /// What the report notes besides the run, as Ansible warns it.
    warning: Option<String>,
}

/// How Ansible registers it: a module's result, or an action plugin's
/// run of a shell line (`raw`, `script`).
#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// Output stripped of its last newlines; a skip reads as a run
    /// (`rc` 0, `stdout` saying why).
    Module,
    /// Output as printed; a skip is `skipped`.
    Action,
}

fn build_command(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = CommandArgs::read(p)?;
    // One string would be one word, a program named after the whole line.
    if p.raw("argv").is_some_and(|v| !v.is_array()) {
        return Err(p.error("argv", "parameter 'argv' must be a list of words"));
    }
    // Ansible's argument spec words, which content matches on.
    let argv = match (a.cmd, p.has("argv")) {
        (Some(cmd), false) => split(&cmd),
        (None, true) => a.argv,
        (None, false) => {
            return Err(p.error(
                "cmd",
                "one of the following is required: _raw_params, argv (the free-form command or 'cmd', or 'argv')",
            ))
        }
        (Some(_), true) => {
            return Err(p.error(
                "cmd",
                "parameters are mutually exclusive: _raw_params|argv (the free-form command or 'cmd', and 'argv')",
            ))
        }
    };
    if argv.is_empty() {
        return Err(p.error("cmd", "the command is empty"));
    }
    // `command` runs no shell: each word reaches the program as-is, but
    // for the variables and `~` Ansible expands in it.
    let script = argv
        .iter()
        .map(|w| expanded(w))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Box::new(Command {
        display: argv.join(" "),
        cmd: argv.clone().into(),
        program: Some(expanded(&argv[0])),
        script,
        chdir: a.chdir,
        creates: a.creates,
        removes: a.removes,
        stdin: fed(a.stdin, a.stdin_add_newline),
        style: Style::Module,
        strip: a.strip_empty_ends,
        warning: a.executable.map(|e| {
            format!("As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '{e}'.")
        }),
    }))
}

/// `word` as shell text that gives what Ansible's `run_command` makes of
/// it on the host: `os.path.expanduser(os.path.expandvars(word))`, where a
/// variable the environment lacks stays as written, and nothing else is
/// read by a shell.
fn expanded(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    // `~` or `~user` at the start, left unquoted for the shell to expand:
    // both keep an unknown user as written, as Python does.
    if let Some(tail) = word.strip_prefix('~') {
        let end = tail.find('/').unwrap_or(tail.len());
        let user = &tail[..end];
        if user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            out.push('~');
            out.push_str(user);
            rest = &tail[end..];
        }
    }
    let mut literal = String::new();
    while let Some(at) = rest.find('$') {
        literal.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, written) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], &rest[at..at + end + 3]),
                None => ("", "$"),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &rest[at..at + 1 + end])
            }
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            if !literal.is_empty() {
                out.push_str(&quote(&std::mem::take(&mut literal)));
            }
            // Set (even empty): its value; unset: the text as written.
            out.push_str(&format!(
                "\"${{{name}-}}$([ -n \"${{{name}+x}}\" ] || printf %s {})\"",
                quote(written)
            ));
        } else {
            literal.push_str(written);
        }
        rest = &rest[at + written.len()..];
    }
    literal.push_str(rest);
    if !literal.is_empty() || out.is_empty() {
        out.push_str(&quote(&literal));
    }
    out
}

fn build_shell(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ShellArgs::read(p)?;
    Ok(Box::new(Command {
        script: shell_script(a.executable.as_deref(), &a.cmd),
        cmd: a.cmd.clone().into(),
        display: a.cmd,
        chdir: a.chdir,
        creates: a.creates,
        removes: a.removes,
        stdin: fed(a.stdin, a.stdin_add_newline),
        style: Style::Module,
        strip: a.strip_empty_ends,
        program: None,
        warning: None,
    }))
}

fn build_raw(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = RawArgs::read(p)?;
    Ok(Box::new(Command {
        script: shell_script(a.executable.as_deref(), &a.cmd),
        cmd: serde_json::Value::Null,
        display: a.cmd,
        chdir: None,
        creates: None,
        removes: None,
        stdin: None,
        style: Style::Action,
        strip: true,
        program: None,
        warning: None,
    }))
}

fn build_script(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ScriptArgs::read(p)?;
    let raw = a.cmd.trim();
    let Some((name, args)) = first_word(raw) else {
        return Err(p.error("cmd", "the script is empty"));
    };
    if a.chdir.as_ref().is_some_and(|d| !d.starts_with('/')) {
        return Err(p.error(
            "chdir",
            "chdir must be an absolute path for a Unix-aware remote node",
        ));
    }
    let path = p.ctx.find_file("files", &name).ok_or_else(|| {
        p.error(
            "cmd",
            format!("could not find '{name}' (searched files/ and the role and playbook folders)"),
        )
    })?;
    let content = match a.decrypt {
        true => p.ctx.sources.read(&path).map(|t| t.to_string()),
        false => crate::base::input::read_text(&path),
    }
    .map_err(|e| p.error("cmd", e.to_string()))?;
    let run = match &a.executable {
        Some(program) => format!("{program} \"$np_s\"{args}"),
        None => format!("\"$np_s\"{args}"),
    };
    Ok(Box::new(Command {
        script: script_run(&content, &run),
        cmd: serde_json::Value::Null,
        display: raw.to_string(),
        chdir: a.chdir,
        creates: a.creates,
        removes: a.removes,
        stdin: None,
        style: Style::Action,
        strip: true,
        program: None,
        warning: None,
    }))
}

/// Writes `content` to a private file in the user's `~/.ansible/tmp` (the
/// user's own folder, no link), runs `run` (which names it `$np_s`), and
/// removes it, keeping the status.
fn script_run(content: &str, run: &str) -> String {
    format!(
        "{}np_s=$(umask 077; mktemp \"$np_d/nodeprov-script.XXXXXX\") || exit 1\n\
         {}chmod 700 \"$np_s\" && {run}\n\
         np_rc=$?; rm -f \"$np_s\"; (exit $np_rc)",
        private_folder("np_d", ".ansible/tmp"),
        here_document(
            "cat > \"$np_s\"",
            content.strip_suffix('\n').unwrap_or(content)
        )
    )
}

fn shell_script(executable: Option<&str>, cmd: &str) -> String {
    format!(
        "{} -c {}",
        quote(executable.unwrap_or("/bin/sh")),
        quote(cmd)
    )
}

/// Whether anything matches a `creates`/`removes` path with a wildcard
/// (`/opt/x/lib*.so`), as Python's `glob.glob` answers it for the module.
struct GlobFact;

impl Fact for GlobFact {
    type Query = str;
    type Value = bool;

    fn key(pattern: &str) -> String {
        format!("glob:{pattern}")
    }

    fn script(pattern: &str) -> String {
        format!(
            "set -- {}\nif [ -e \"$1\" ] || [ -L \"$1\" ]; then echo some; else echo none; fi",
            glob_word(pattern)
        )
    }

    fn parse(pattern: &str, r: &ProbeResult) -> Result<bool, ModuleError> {
        match r.stdout.trim() {
            "some" => Ok(true),
            "none" => Ok(false),
            _ => Err(crate::modules::kit::fact::bad(
                Self::key(pattern),
                format!("unexpected answer {:?}", r.stdout),
            )),
        }
    }

    fn render(v: &bool) -> ProbeResult {
        ProbeResult::ok(if *v { "some\n" } else { "none\n" })
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    rt.check::<GlobFact>("/opt/lib*.so", true);
    rt.check::<GlobFact>("/opt/lib*.so", false);
}

fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// A pattern as one shell word that expands its wildcards and nothing
/// else: the text between them quoted.
fn glob_word(pattern: &str) -> String {
    let mut word = String::new();
    let mut text = String::new();
    for c in pattern.chars() {
        match c {
            '*' | '?' | '[' | ']' => {
                if !text.is_empty() {
                    word.push_str(&quote(&std::mem::take(&mut text)));
                }
                word.push(c);
            }
            _ => text.push(c),
        }
    }
    if !text.is_empty() {
        word.push_str(&quote(&text));
    }
    word
}

impl Module for Command {
    fn probes(&self) -> Vec<Probe> {
        (self.creates.iter().chain(self.removes.iter()))
            .map(|p| match is_glob(p) {
                true => GlobFact::probe(p),
                false => FileFact::probe(p),
            })
            .collect()
    }

    /// A wildcard is answered on the host as it is when the task runs:
    /// after what the tasks before it changed.
    fn reads_everything(&self) -> bool {
        (self.creates.iter().chain(self.removes.iter())).any(|p| is_glob(p))
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let exists = |path: &str| -> Result<bool, ModuleError> {
            match is_glob(path) {
                true => GlobFact::read(facts, path),
                false => Ok(FileFact::read(facts, path)?.is_some()),
            }
        };
        if let Some(c) = &self.creates {
            if exists(c)? {
                return Ok(self.skipped(c, "exists"));
            }
        }
        if let Some(r) = &self.removes {
            if !exists(r)? {
                return Ok(self.skipped(r, "does not exist"));
            }
        }
        let mut plan = Plan::noop();
        plan.notes.extend(self.warning.clone());
        plan.changes
            .push(Change::new("command", None, Some(self.display.clone())));
        plan.steps.push(self.step());
        plan.unknown = Some("a command's outcome is only known by running it".into());
        plan.effects.push(Effect::InvalidateAll);
        // Ansible's command module says when it ran; raw and script do not.
        plan.timed = self.style == Style::Module;
        Ok(plan)
    }

    fn is_command(&self) -> bool {
        true
    }

    fn command_returns(&self, output: &ProbeResult) -> serde_json::Map<String, serde_json::Value> {
        let mut returns = serde_json::Map::new();
        if let Some(warning) = &self.warning {
            returns.insert("warnings".into(), vec![warning.clone()].into());
        }
        if !self.cmd.is_null() {
            returns.insert("cmd".into(), self.cmd.clone());
        }
        match (self.style, output.rc) {
            // The module's message when it cannot enter `chdir`.
            (Style::Module, 1) if output.stderr.starts_with(CHDIR_FAILED) => {
                returns.insert("msg".into(), output.stderr.trim_end().into());
            }
            // Or find the program: Python's error, and no output.
            (Style::Module, 2)
                if self.program.is_some() && output.stderr.starts_with(NOT_FOUND) =>
            {
                returns.insert("msg".into(), output.stderr.trim_end().into());
                returns.insert("stderr".into(), "".into());
                returns.insert("stderr_lines".into(), serde_json::json!([]));
            }
            (Style::Module, rc) => {
                returns.insert("msg".into(), command_msg(rc).into());
                if !self.strip {
                    returns.insert("stdout".into(), output.stdout.clone().into());
                    returns.insert("stderr".into(), output.stderr.clone().into());
                }
            }
            (Style::Action, rc) => {
                returns.insert("stdout".into(), output.stdout.clone().into());
                returns.insert("stderr".into(), output.stderr.clone().into());
                if rc != 0 {
                    returns.insert("msg".into(), "non-zero return code".into());
                }
            }
        }
        returns
    }

    fn query_probe(&self) -> Option<Probe> {
        let step = self.step();
        Some(Probe::new(format!("query:{step}"), step))
    }
}

impl Command {
    /// Not run: `path` exists (`creates`) or does not (`removes`).
    fn skipped(&self, path: &str, why: &str) -> Plan {
        let mut plan = Plan::noop();
        plan.notes.push(format!("skipped: {path} {why}"));
        let option = if self.creates.as_deref() == Some(path) {
            "creates"
        } else {
            "removes"
        };
        let returns = match self.style {
            Style::Module => serde_json::json!({
                "rc": 0,
                "cmd": self.cmd,
                "stdout": format!("skipped, since {path} {why}"),
                "stdout_lines": [format!("skipped, since {path} {why}")],
                "stderr": "",
                "stderr_lines": [],
                "msg": format!("Did not run command since '{path}' {why}"),
                "start": null,
                "end": null,
                "delta": null,
            }),
            Style::Action => serde_json::json!({
                "skipped": true,
                "msg": format!("{path} {why}, matching {option} option"),
            }),
        };
        if let serde_json::Value::Object(r) = returns {
            plan.returns.extend(r);
        }
        plan
    }

    fn step(&self) -> String {
        let mut s = String::new();
        if let Some(dir) = &self.chdir {
            let why = format!("{CHDIR_FAILED}: [Errno 2] No such file or directory: '{dir}'");
            // Physically, as the module's os.chdir: `$PWD` names no link.
            s.push_str(&format!(
                "cd -P {} 2>/dev/null || {{ printf '%s\\n' {} >&2; exit 1; }}\n",
                quote(dir),
                quote(&why)
            ));
        }
        if let Some(program) = &self.program {
            s.push_str(&format!(
                "command -v {program} >/dev/null 2>&1 || {{ printf '%s\\n' \"{NOT_FOUND}b'\"{program}\"'\" >&2; exit 2; }}\n"
            ));
        }
        match &self.stdin {
            Some(input) => s.push_str(&format!("printf '%s' {} | {}", quote(input), self.script)),
            None => s.push_str(&self.script),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::FileState;

    fn cmd(script: &str, creates: Option<&str>) -> Command {
        Command {
            cmd: serde_json::Value::Null,
            display: script.into(),
            script: script.into(),
            chdir: Some("/tmp/a b".into()),
            creates: creates.map(str::to_string),
            removes: None,
            stdin: None,
            style: Style::Module,
            strip: true,
            program: None,
            warning: None,
        }
    }

    #[test]
    fn runs_with_chdir_and_is_unknown_in_check_mode() {
        let plan = cmd("echo hi", None).plan(&Facts::default()).unwrap();
        let cd = r#"cd -P '/tmp/a b' 2>/dev/null || { printf '%s\n' 'Unable to change directory before execution: [Errno 2] No such file or directory: '\''/tmp/a b'\''' >&2; exit 1; }"#;
        assert_eq!(plan.steps, [format!("{cd}\necho hi")]);
        assert!(plan.unknown.is_some());
    }

    #[test]
    fn creates_with_a_wildcard_asks_whether_anything_matches() {
        use crate::modules::kit::testing::build_test;
        let m = build_test(
            &COMMAND,
            serde_json::json!({"cmd": "make", "creates": "/opt/a b/lib*.so"}),
        )
        .unwrap();
        let probes = m.probes();
        assert_eq!(probes[0].key, "glob:/opt/a b/lib*.so");
        assert!(probes[0].script.contains("set -- '/opt/a b/lib'*.so\n"));
        assert!(m.reads_everything());
        let mut facts = Facts::default();
        facts.insert(probes[0].key.clone(), GlobFact::render(&true));
        let plan = m.plan(&facts).unwrap();
        assert!(plan.steps.is_empty(), "a match skips the command");
        facts.insert(probes[0].key.clone(), GlobFact::render(&false));
        assert_eq!(m.plan(&facts).unwrap().steps.len(), 1);
    }

    #[test]
    fn a_program_command_cannot_find_fails_as_pythons_oserror_with_no_output() {
        use crate::modules::kit::testing::build_test;
        let m = build_test(&COMMAND, serde_json::json!({"cmd": "nope --x"})).unwrap();
        let step = m.plan(&Facts::default()).unwrap().steps.remove(0);
        assert!(
            step.starts_with("command -v nope >/dev/null 2>&1 ||"),
            "{step}"
        );
        let msg = "[Errno 2] No such file or directory: b'nope'";
        let out = ProbeResult {
            rc: 2,
            stdout: String::new(),
            stderr: format!("{msg}\n"),
        };
        let result = m.command_result(&out);
        assert_eq!(result["msg"], msg);
        assert_eq!(result["stderr"], "");
        let shell = build_test(&SHELL, serde_json::json!({"cmd": "nope"})).unwrap();
        let step = shell.plan(&Facts::default()).unwrap().steps.remove(0);
        assert!(!step.contains("command -v"), "a shell reports it itself");
    }

    #[test]
    fn stdin_ends_with_a_line_break_unless_told_not_to() {
        use crate::modules::kit::testing::build_test;
        let step = |args: serde_json::Value| {
            let m = build_test(&SHELL, args).unwrap();
            m.plan(&Facts::default()).unwrap().steps.remove(0)
        };
        let cat = serde_json::json!({"cmd": "cat", "stdin": "test"});
        assert_eq!(step(cat.clone()), "printf '%s' 'test\n' | /bin/sh -c cat");
        let mut bare = cat;
        bare["stdin_add_newline"] = false.into();
        assert_eq!(step(bare), "printf '%s' test | /bin/sh -c cat");
    }

    #[test]
    fn raw_runs_its_line_in_a_shell_as_written() {
        use crate::modules::kit::testing::build_test;
        let line = "test -e /usr/bin/python3 || (apt -y update && apt install -y python3)";
        let m = build_test(&RAW, serde_json::json!({ "cmd": line })).unwrap();
        let plan = m.plan(&Facts::default()).unwrap();
        assert_eq!(plan.steps, [format!("/bin/sh -c {}", quote(line))]);
        assert!(plan.unknown.is_some(), "check mode runs no command");
        let m = build_test(
            &RAW,
            serde_json::json!({"cmd": "echo $0", "executable": "/bin/bash"}),
        );
        let plan = m.unwrap().plan(&Facts::default()).unwrap();
        assert_eq!(plan.steps, ["/bin/bash -c 'echo $0'"]);
    }

    #[test]
    fn words_expand_as_ansibles_run_command_expands_them() {
        let words = [
            "$HOME/x",
            "${SET_EMPTY}y",
            "$UNSET_NP_VAR",
            "${UNSET_NP_VAR}z",
            "a$",
            "${bad name}",
            "~/d",
            "~nosuchuser_np/e",
            "'q' \"",
            "$SPACED",
        ];
        let line: Vec<String> = words.iter().map(|w| expanded(w)).collect();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf '%s|' {}", line.join(" ")))
            .env_clear()
            .env("HOME", "/home/np")
            .env("SET_EMPTY", "")
            .env("SPACED", "a  b*")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "/home/np/x|y|$UNSET_NP_VAR|${UNSET_NP_VAR}z|a$|${bad name}|/home/np/d|~nosuchuser_np/e|'q' \"|a  b*|"
        );
    }

    #[test]
    fn creates_skips_when_path_exists() {
        let mut f = Facts::default();
        let st = FileState::written("", 0o644, "root", "root");
        f.insert(FileFact::key("/done"), FileFact::render(&Some(st)));
        let plan = cmd("make", Some("/done")).plan(&f).unwrap();
        assert!(plan.steps.is_empty());
        assert_eq!(plan.notes, ["skipped: /done exists"]);
    }
}
