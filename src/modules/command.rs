//! `command`, `shell` and `raw`: run something; the result is what it
//! printed. nodeprov needs no Python on a host, so `raw`, which Ansible
//! keeps for hosts without one, is `shell` without its extras.
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
//! ```

use crate::base::shell::{quote, split};
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Effect, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const COMMAND: ModuleSpec = ModuleSpec {
    name: "command",
    source: file!(),
    aliases: &["ansible.builtin.command"],
    params: &CommandArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command { detachable: true },
    controller_file: None,
    build: build_command,
};

pub(crate) const SHELL: ModuleSpec = ModuleSpec {
    name: "shell",
    source: file!(),
    aliases: &["ansible.builtin.shell"],
    params: &ShellArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command { detachable: true },
    controller_file: None,
    build: build_shell,
};

pub(crate) const RAW: ModuleSpec = ModuleSpec {
    name: "raw",
    source: file!(),
    aliases: &["ansible.builtin.raw"],
    params: &RawArgs::SPEC,
    free_form: Some("cmd"),
    kind: ModuleKind::Command { detachable: false },
    controller_file: None,
    build: build_raw,
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

struct Command {
    /// What the report shows.
    display: String,
    /// The shell text that runs it.
    script: String,
    chdir: Option<String>,
    creates: Option<String>,
    removes: Option<String>,
    stdin: Option<String>,
}

fn build_command(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = CommandArgs::read(p)?;
    // One string would be one word, a program named after the whole line.
    if p.raw("argv").is_some_and(|v| !v.is_array()) {
        return Err(p.error("argv", "parameter 'argv' must be a list of words"));
    }
    let argv = match (a.cmd, p.has("argv")) {
        (Some(cmd), false) => split(&cmd),
        (None, true) => a.argv,
        _ => {
            return Err(p.error(
                "cmd",
                "give exactly one of 'cmd' (or the free-form command) and 'argv'",
            ))
        }
    };
    if argv.is_empty() {
        return Err(p.error("cmd", "the command is empty"));
    }
    // `command` runs no shell: each word reaches the program as-is.
    let script = argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
    Ok(Box::new(Command {
        display: argv.join(" "),
        script,
        chdir: a.chdir,
        creates: a.creates,
        removes: a.removes,
        stdin: a.stdin,
    }))
}

fn build_shell(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ShellArgs::read(p)?;
    Ok(Box::new(Command {
        script: shell_script(a.executable.as_deref(), &a.cmd),
        display: a.cmd,
        chdir: a.chdir,
        creates: a.creates,
        removes: a.removes,
        stdin: a.stdin,
    }))
}

fn build_raw(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = RawArgs::read(p)?;
    Ok(Box::new(Command {
        script: shell_script(a.executable.as_deref(), &a.cmd),
        display: a.cmd,
        chdir: None,
        creates: None,
        removes: None,
        stdin: None,
    }))
}

fn shell_script(executable: Option<&str>, cmd: &str) -> String {
    format!(
        "{} -c {}",
        quote(executable.unwrap_or("/bin/sh")),
        quote(cmd)
    )
}

impl Module for Command {
    fn probes(&self) -> Vec<Probe> {
        self.creates
            .iter()
            .chain(self.removes.iter())
            .map(|p| FileFact::probe(p))
            .collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let exists = |path: &str| -> Result<bool, ModuleError> {
            Ok(FileFact::read(facts, path)?.is_some())
        };
        let mut plan = Plan::noop();
        if let Some(c) = &self.creates {
            if exists(c)? {
                plan.notes.push(format!("skipped: {c} exists"));
                return Ok(plan);
            }
        }
        if let Some(r) = &self.removes {
            if !exists(r)? {
                plan.notes.push(format!("skipped: {r} does not exist"));
                return Ok(plan);
            }
        }
        plan.changes
            .push(Change::new("command", None, Some(self.display.clone())));
        plan.steps.push(self.step());
        plan.unknown = Some("a command's outcome is only known by running it".into());
        plan.effects.push(Effect::InvalidateAll);
        Ok(plan)
    }

    fn is_command(&self) -> bool {
        true
    }

    fn query_probe(&self) -> Option<Probe> {
        let step = self.step();
        Some(Probe::new(format!("query:{step}"), step))
    }
}

impl Command {
    fn step(&self) -> String {
        let mut s = String::new();
        if let Some(dir) = &self.chdir {
            s.push_str(&format!("cd {} || exit 1\n", quote(dir)));
        }
        match &self.stdin {
            Some(input) => s.push_str(&format!(
                "printf '%s\\n' {} | {}",
                quote(input),
                self.script
            )),
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
            display: script.into(),
            script: script.into(),
            chdir: Some("/tmp/a b".into()),
            creates: creates.map(str::to_string),
            removes: None,
            stdin: None,
        }
    }

    #[test]
    fn runs_with_chdir_and_is_unknown_in_check_mode() {
        let plan = cmd("echo hi", None).plan(&Facts::default()).unwrap();
        assert_eq!(plan.steps, ["cd '/tmp/a b' || exit 1\necho hi"]);
        assert!(plan.unknown.is_some());
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
    fn creates_skips_when_path_exists() {
        let mut f = Facts::default();
        let st = FileState::written("", 0o644, "root", "root");
        f.insert(FileFact::key("/done"), FileFact::render(&Some(st)));
        let plan = cmd("make", Some("/done")).plan(&f).unwrap();
        assert!(plan.steps.is_empty());
        assert_eq!(plan.notes, ["skipped: /done exists"]);
    }
}
