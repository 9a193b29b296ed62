//! What one host's run knows and holds, as plain data: the schedule and
//! its flows read and change it, and it decides nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::base::diag::Diagnostic;
use crate::exec::instance::TaskInstance;
use crate::exec::outcome::Outcomes;
use crate::exec::vars::VarLayers;
use crate::exec::wire::Step;
use crate::modules::{Facts, Module};

/// The host as the run knows it.
pub(in crate::exec) struct HostState {
    /// The probes' answers, with the effects of what was planned since.
    pub facts: Facts,
    pub vars: VarLayers,
    pub outcomes: Outcomes,
    /// Handlers (and topics) notified and not yet run.
    pub notified: BTreeSet<String>,
    /// Check mode: registered names whose command did not run, and the
    /// task that registers each.
    pub unknown_vars: BTreeMap<String, String>,
    /// No task runs here any more: one failed, the host was lost, or the
    /// play ended for it.
    pub stopped: bool,
    /// `meta: end_host` or `end_play` ended the play here (not a failure).
    pub ended: bool,
    pub unreachable: Option<String>,
    /// Why the play's `vars_files` could not be read for this host: every
    /// task fails with it, as no task can know its variables.
    pub vars_error: Option<Diagnostic>,
}

impl HostState {
    pub fn new(vars: VarLayers, diff: bool) -> Self {
        HostState {
            facts: Facts::default(),
            vars,
            outcomes: Outcomes::new(diff),
            notified: BTreeSet::new(),
            unknown_vars: BTreeMap::new(),
            stopped: false,
            ended: false,
            unreachable: None,
            vars_error: None,
        }
    }
}

/// What waits in the batch being gathered: steps not yet run, and what
/// is known only once they have.
#[derive(Default)]
pub(in crate::exec) struct Batch<'p> {
    pub pending: Vec<Pending<'p>>,
    /// Registered names whose command is in `pending`.
    pub registers: BTreeSet<String>,
    /// Loops whose `register` is complete only once `pending` ran.
    pub loops: Vec<PendingLoop>,
    pub to_verify: Vec<ToVerify>,
    /// A batch of changes ran since facts were last probed.
    pub changed_since_probe: bool,
}

/// A planned instance whose steps wait in the current batch.
pub(in crate::exec) struct Pending<'p> {
    pub step: Step,
    /// A command's module, which reads its registered result from the
    /// step's output.
    pub command: Option<Box<dyn Module>>,
    pub instance: TaskInstance<'p>,
}

/// A changed instance to re-check after apply.
pub(in crate::exec) struct ToVerify {
    pub result: usize,
    pub module: Box<dyn Module>,
}

/// A looped task's registered name, and each item's result index (none:
/// it queued no step) and planned result.
pub(in crate::exec) type PendingLoop = (String, Vec<(Option<usize>, Value)>);
