//! What a task needs to run Ansible's own module where nodeprov has no
//! native one: the payload the controller's ansible-core packed, and how
//! the task calls it. Shared by the loader that finds it, the parameters
//! that carry it and the module that runs it.

use std::sync::Arc;

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
    /// The run is `check`: the module's real run is never planned.
    pub check: bool,
    pub diff: bool,
    pub no_log: bool,
}
