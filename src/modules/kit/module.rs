//! The contract every module fulfils, and how playbooks name one.

use super::connection::ConnectionAction;
use super::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{ParamError, ParamSpec, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) trait Module: Send + Sync {
    fn probes(&self) -> Vec<Probe>;
    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError>;
    /// Commands whose effect is their output: not verified after apply,
    /// their result registered from the real run.
    fn is_command(&self) -> bool {
        false
    }
    /// Return values a command reads from its step's output, registered
    /// besides `rc`, `stdout` and `stderr`.
    fn command_returns(&self, _output: &ProbeResult) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    /// A command's registered result, as Ansible shapes a command's:
    /// `rc`, `stdout` and `stderr` with their lines, and its own returns.
    fn command_result(&self, r: &ProbeResult) -> serde_json::Value {
        let mut result = command_output(r);
        result.extend(self.command_returns(r));
        serde_json::Value::Object(result)
    }
    /// A command whose output is a module's JSON result (Ansible's
    /// module), which a job left running keeps for `async_status`.
    fn output_is_json(&self) -> bool {
        false
    }
    /// The command itself as a probe, for tasks that declare it read-only.
    fn query_probe(&self) -> Option<Probe> {
        None
    }
    /// Validations whose probe must see every earlier change of the run.
    fn reads_everything(&self) -> bool {
        false
    }
    /// Asks the schedule to reboot the host or wait for it, instead of
    /// planning steps.
    fn connection_action(&self) -> Option<ConnectionAction> {
        None
    }
    /// A module that reads the host and writes on the controller (fetch):
    /// what it writes there, from the host's answers, planned and applied
    /// on the controller's own connection. `None`: it is planned on the
    /// host as any other, and its plan says why nothing is written.
    fn on_controller(&self, _facts: &Facts) -> Option<Box<dyn Module>> {
        None
    }
}

/// A command's output as Ansible returns it: `rc`, `stdout` and `stderr`
/// with their lines, changed, and failed on a non-zero status.
pub(crate) fn command_output(r: &ProbeResult) -> serde_json::Map<String, serde_json::Value> {
    // The module's `rstrip(b"\r\n")`; the lines are those of what it returns.
    let stdout = r.stdout.trim_end_matches(['\r', '\n']);
    let stderr = r.stderr.trim_end_matches(['\r', '\n']);
    let result = serde_json::json!({
        "rc": r.rc,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_lines": stdout.lines().collect::<Vec<_>>(),
        "stderr_lines": stderr.lines().collect::<Vec<_>>(),
        "changed": true,
        "failed": r.rc != 0,
    });
    match result {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("a mapping"),
    }
}

/// The `msg` Ansible's `command` and `shell` modules return with a status.
pub(crate) fn command_msg(rc: i32) -> &'static str {
    match rc {
        0 => "",
        _ => "The command exited with a non-zero return code.",
    }
}

pub(crate) type BuildFn = fn(&Params) -> Result<Box<dyn Module>, ParamError>;

/// A module decided whole when it is built, on the controller: it probes
/// nothing, and its plan is known (`group_by`, `add_host`).
pub(crate) struct Decided(pub Plan);

impl Module for Decided {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        Ok(self.0.clone())
    }
}

/// A module as playbooks name it.
pub struct ModuleSpec {
    pub name: &'static str,
    /// The file that declares it (`file!()`), whose `//!` text documents it.
    pub source: &'static str,
    /// Other keys that select this module (Ansible's FQCNs and old names).
    pub aliases: &'static [&'static str],
    /// Its parameters, from the module's one declaration of them.
    pub params: &'static ParamSpec,
    /// Parameter name a free-form string (`command: echo hi`) is stored under.
    pub free_form: Option<&'static str>,
    pub kind: ModuleKind,
    /// A parameter naming a file on the controller, opened by `validate`.
    pub controller_file: Option<ControllerFile>,
    /// Ansible runs its namesake through a controller-side action plugin.
    pub plugin: Option<AnsiblePlugin>,
    pub(crate) build: BuildFn,
}

/// What Ansible's action plugin of a module's namesake does with a task
/// that uses a parameter nodeprov lacks. For a module without one, such a
/// task runs Ansible's own module on the host.
#[derive(Clone, Copy, Debug)]
pub struct AnsiblePlugin {
    /// The plugin hands the task to its module on the host unchanged when
    /// one of these holds: the parameter is true (`remote_src` of `copy`),
    /// or, with `false`, absent (`src` of `uri`). Then nodeprov runs that
    /// module, as it does for any parameter the native module lacks.
    pub hands_over: &'static [(&'static str, bool)],
    /// Its parameters nodeprov takes neither natively nor through
    /// Ansible's module, each with why.
    pub lacks: &'static [(&'static str, &'static str)],
    /// It writes files as Ansible's file-writing plugins do, whose
    /// [`FILE_EXTRAS`] nodeprov lacks too.
    pub writes_files: bool,
}

impl AnsiblePlugin {
    /// Every parameter it lacks, with why.
    pub fn lacked(self) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
        let extras: &'static [_] = if self.writes_files { &FILE_EXTRAS } else { &[] };
        extras.iter().chain(self.lacks)
    }
}

/// Why nodeprov does not set what Ansible's file-writing plugins set too.
const FILE_EXTRAS: [(&str, &str); 7] = [
    ("attributes", ATTRIBUTES),
    ("attr", ATTRIBUTES),
    ("selevel", SELINUX_CONTEXT),
    ("serole", SELINUX_CONTEXT),
    ("setype", SELINUX_CONTEXT),
    ("seuser", SELINUX_CONTEXT),
    (
        "unsafe_writes",
        "nodeprov writes files only atomically (a temporary file, then a rename)",
    ),
];

const ATTRIBUTES: &str = "file attributes (chattr) are not set natively";

const SELINUX_CONTEXT: &str =
    "SELinux contexts are not set natively: a written file gets its folder's default";

/// What a module's tasks are to the loader and the schedule, decided by
/// its declaration so that nothing outside the modules asks for its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleKind {
    /// Converges the host to a state: probed, planned, applied, verified.
    State,
    /// Runs a command whose result is what it printed.
    Command,
    /// Acts through the host's own manager of its kind, and so takes the
    /// `module_defaults` of that manager's module (`package`).
    Frontend,
    /// Steers the host's run rather than the host (`meta`).
    Control,
    /// Reboots the host and logs in again.
    Reboot,
    /// Waits until the host takes a new login.
    AwaitLogin,
    /// Holds the host's run for a while.
    Pause,
    /// Puts the host in groups of the run's inventory, for later plays
    /// (`group_by`).
    Grouping,
    /// Adds hosts to the run's inventory, for later plays (`add_host`):
    /// once for all the hosts of a batch, as Ansible's plugin bypasses the
    /// host loop.
    NewHosts,
}

impl ModuleKind {
    /// Acts on the schedule or the session once per host: no loop over it.
    pub fn once_per_host(self) -> bool {
        matches!(
            self,
            Self::Control | Self::Reboot | Self::AwaitLogin | Self::Pause
        )
    }

    /// Changes the run's inventory for the plays after its own.
    pub fn changes_inventory(self) -> bool {
        matches!(self, Self::Grouping | Self::NewHosts)
    }

    /// What was probed before it may not hold after it.
    pub fn replaces_session(self) -> bool {
        matches!(self, Self::Reboot | Self::AwaitLogin)
    }
}

/// A file on the controller that a parameter names, found beside the
/// playbook or in the role.
#[derive(Clone, Copy, Debug)]
pub struct ControllerFile {
    pub param: &'static str,
    /// The folder it is looked for in first, at each place of the task's
    /// search path (`files`, `templates`, `vars`), as Ansible's plugin does.
    pub subdir: &'static str,
    /// A template, rendered per host and written as `copy` writes content.
    pub template: bool,
}

impl std::fmt::Debug for ModuleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModuleSpec({})", self.name)
    }
}

impl ModuleSpec {
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }

    /// Its documentation for people: the `//!` text of its file.
    pub fn about(&self) -> &'static str {
        generated::MODULE_DOCS
            .iter()
            .find(|(path, _)| *path == self.source)
            .map_or("", |(_, doc)| doc)
    }
}

/// Gathered by build.rs from the `//!` lines of src/modules.
mod generated {
    include!(concat!(env!("OUT_DIR"), "/module_docs.rs"));
}
