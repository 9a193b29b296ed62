//! `meta`: an instruction to the schedule (run the notified handlers now,
//! end the host's play, forget the facts), not a change on the host. The
//! module only checks the action; the schedule carries it out (see
//! docs/playbooks.md). `reset_connection` logs in again, so what a login
//! decides, a user's new groups, holds for the tasks after it.
//!
//! # Example
//!
//! ```yaml
//! - name: Let the operator use the GPU devices
//!   user:
//!     name: gpuops
//!     groups: [video, render]
//!     append: true
//! - name: Log in again, so the new groups hold for the tasks after this
//!   meta: reset_connection
//! ```

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, ParamError, Params};
use crate::remote::probe::Probe;

pub const META: ModuleSpec = ModuleSpec {
    name: "meta",
    source: file!(),
    aliases: &["ansible.builtin.meta"],
    params: &MetaArgs::SPEC,
    free_form: Some("action"),
    kind: ModuleKind::Control,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum Action {
        FlushHandlers = "flush_handlers",
        EndHost = "end_host",
        EndPlay = "end_play",
        Noop = "noop",
        ClearFacts = "clear_facts",
        ResetConnection = "reset_connection",
    }
}

module_params! {
    struct MetaArgs {
        /// flush_handlers, end_host, end_play, noop, clear_facts or reset_connection (free form)
        action: Action,
    }
}

struct Meta {
    action: Action,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = MetaArgs::read(p)?;
    Ok(Box::new(Meta { action: a.action }))
}

impl Module for Meta {
    fn probes(&self) -> Vec<Probe> {
        Vec::new()
    }

    /// Returns the action for the schedule to carry out.
    fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = Plan::default();
        let action = serde_json::Value::String(self.action.name().into());
        plan.returns.insert("action".into(), action);
        Ok(plan)
    }
}
