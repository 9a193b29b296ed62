//! `delegate_to` inside the schedule: the task is planned with this host's
//! variables, but probed, applied and verified on the delegate, through a
//! wire of its own that stays open for the play's later delegations.
//!
//! The delegate's facts are probed afresh for each task: other hosts of
//! the batch may delegate to it and change it at the same time.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::probe_ahead::Wanted;
use super::state::Batch;
use super::{HostRun, Next};
use crate::exec::instance::TaskInstance;
use crate::exec::prepared::PreparedTask;
use crate::exec::wire::Wire;
use crate::modules::{Facts, Module};
use crate::remote::local::LocalTransport;
use crate::remote::TransportError;

/// The hosts tasks are delegated to, as this host's run sees them.
#[derive(Default)]
pub(super) struct Delegation<'a> {
    /// Wires to the hosts tasks were delegated to (the controller among
    /// them), kept for the next.
    pub wires: BTreeMap<String, Wire<'a>>,
    /// The delegate the task being planned runs on.
    pub current: Option<String>,
    /// The delegate whose variables the task being planned sets
    /// (`delegate_facts`), instead of this host's.
    pub facts_to: Option<String>,
}

/// This host's state while a task runs on its delegate.
struct Parked<'a, 'p> {
    wire: Wire<'a>,
    facts: Facts,
    batch: Batch<'p>,
}

impl<'a, 'p> HostRun<'a, 'p> {
    /// Runs a delegated task alone (nothing of this host is pending).
    pub(super) fn plan_delegated(
        &mut self,
        spec: &'p PreparedTask<'p>,
        (target, controller): (String, bool),
    ) -> Next {
        if target == self.host && !controller {
            self.delegation.current = Some(target);
            let next = self.plan_resolved(spec);
            self.delegation.current = None;
            return next;
        }
        let delegate_facts = spec.task.delegate_to.as_ref().is_some_and(|d| d.facts);
        self.delegation.facts_to = delegate_facts.then(|| target.clone());
        let open = || (self.ctx.open_delegate)(&target, controller);
        let opened = self.on_wire(
            format!("{target} {controller}"),
            self.ctx.play.script_user(),
            open,
            |run| run.run_on_delegate(spec, &target),
        );
        self.delegation.facts_to = None;
        if let Err(e) = opened {
            self.fail(spec, None, format!("delegate_to '{target}': {e}"));
        }
        Next::Continue
    }

    /// A module that writes on the controller what it read on the host
    /// (fetch): planned, applied and verified there, as the controller
    /// user, while this host's queued steps wait.
    pub(super) fn plan_on_controller(
        &mut self,
        instance: TaskInstance<'p>,
        local: Box<dyn Module>,
    ) -> (Value, bool) {
        let spec = instance.spec;
        let check = instance.check;
        let mut planned = (json!({"changed": false}), false);
        let open = || Ok(Box::new(LocalTransport) as Box<dyn crate::remote::Transport>);
        let opened = self.on_wire("the controller".into(), None, open, |run| {
            let probes = local.probes();
            match run.wire.probe(probes) {
                Ok(answers) => run.state.facts.extend(answers),
                Err(e) => return run.fail(spec, None, format!("on the controller: {e}")),
            }
            planned = run.plan_instance(instance, local);
            run.flush();
            if !check {
                run.verify();
            }
        });
        if let Err(e) = opened {
            self.fail(spec, None, format!("on the controller: {e}"));
        }
        (planned.0, false)
    }

    /// Runs `f` with this host's wire, facts and queued steps set aside for
    /// those of another host (`key`), whose wire is opened once and kept
    /// for the play's next use.
    fn on_wire(
        &mut self,
        key: String,
        become_user: Option<String>,
        open: impl FnOnce() -> Result<Box<dyn crate::remote::Transport>, TransportError>,
        f: impl FnOnce(&mut Self),
    ) -> Result<(), TransportError> {
        let wire = match self.delegation.wires.remove(&key) {
            Some(wire) => wire,
            None => Wire::holding(open()?, become_user)
                .with_become_flags(self.ctx.play.become_flags.clone()),
        };
        let parked = Parked {
            wire: std::mem::replace(&mut self.wire, wire),
            facts: std::mem::take(&mut self.state.facts),
            batch: std::mem::take(&mut self.batch),
        };
        self.delegation.current = Some(key.clone());
        f(self);
        self.delegation.current = None;
        let wire = std::mem::replace(&mut self.wire, parked.wire);
        self.delegation.wires.insert(key, wire);
        self.state.facts = parked.facts;
        self.batch = parked.batch;
        Ok(())
    }

    /// Probe, plan, apply and verify the one task on the wire now in place.
    fn run_on_delegate(&mut self, spec: &'p PreparedTask<'p>, target: &str) {
        // A module whose probes depend on another's answers may need a
        // second batch; more than that is a task that cannot be planned.
        for _ in 0..2 {
            let mut wanted = Wanted::default();
            let check = self.ctx.opts.check;
            wanted.add_task(&self.resolver(), &self.state.facts, check, spec);
            self.state.outcomes.secret_probes(wanted.secret);
            if !wanted.probes.is_empty() {
                match self.wire.probe(wanted.probes.into_values().collect()) {
                    Ok(answers) => self.state.facts.extend(answers),
                    Err(e) => {
                        self.fail(spec, None, format!("delegate_to '{target}': {e}"));
                        return;
                    }
                }
            }
            match self.plan_resolved(spec) {
                Next::FlushBefore if self.batch.pending.is_empty() => continue,
                _ => {
                    self.flush();
                    if !self.ctx.opts.check {
                        self.verify();
                    }
                    return;
                }
            }
        }
        let why = format!("its probes on '{target}' could not be gathered");
        self.fail(spec, None, why);
    }

    /// The round trips and probes of every delegate's wire, for the report.
    pub(super) fn finish_delegates(&mut self) -> (usize, Vec<crate::exec::result::Observation>) {
        let mut trips = 0;
        let mut observed = Vec::new();
        for (_, wire) in std::mem::take(&mut self.delegation.wires) {
            let (t, o) = wire.finish();
            trips += t;
            observed.extend(o);
        }
        (trips, observed)
    }
}
