//! `delegate_to` inside the schedule: the task is planned with this host's
//! variables, but probed, applied and verified on the delegate, through a
//! wire of its own that stays open for the play's later delegations.
//!
//! The delegate's facts are probed afresh for each task: other hosts of
//! the batch may delegate to it and change it at the same time.

use std::collections::BTreeMap;

use super::{HostRun, Next};
use crate::exec::prepared::PreparedTask;
use crate::exec::wire::Wire;
use crate::modules::Facts;

/// This host's state while a task runs on its delegate.
struct Parked<'a> {
    wire: Wire<'a>,
    facts: Facts,
    to_verify: Vec<super::ToVerify>,
    changed_since_probe: bool,
}

impl<'a, 'p> HostRun<'a, 'p> {
    /// Runs a delegated task alone (nothing of this host is pending).
    pub(super) fn plan_delegated(
        &mut self,
        spec: &'p PreparedTask<'p>,
        (target, controller): (String, bool),
    ) -> Next {
        if target == self.host && !controller {
            self.delegated = Some(target);
            let next = self.plan_resolved(spec);
            self.delegated = None;
            return next;
        }
        let key = (target.clone(), controller);
        let wire = match self.delegates.remove(&key) {
            Some(wire) => wire,
            None => match (self.ctx.open_delegate)(&target, controller) {
                Ok(t) => Wire::holding(t, self.ctx.play.script_user()),
                Err(e) => {
                    self.fail(spec, None, format!("delegate_to '{target}': {e}"));
                    return Next::Continue;
                }
            },
        };
        let parked = Parked {
            wire: std::mem::replace(&mut self.wire, wire),
            facts: std::mem::take(&mut self.facts),
            to_verify: std::mem::take(&mut self.to_verify),
            changed_since_probe: std::mem::replace(&mut self.changed_since_probe, false),
        };
        self.delegated = Some(target.clone());
        self.run_on_delegate(spec, &target);
        self.delegated = None;
        let wire = std::mem::replace(&mut self.wire, parked.wire);
        self.delegates.insert(key, wire);
        self.facts = parked.facts;
        self.to_verify = parked.to_verify;
        self.changed_since_probe = parked.changed_since_probe;
        Next::Continue
    }

    /// Probe, plan, apply and verify the one task on the wire now in place.
    fn run_on_delegate(&mut self, spec: &'p PreparedTask<'p>, target: &str) {
        // A module whose probes depend on another's answers may need a
        // second batch; more than that is a task that cannot be planned.
        for _ in 0..2 {
            let mut wanted = BTreeMap::new();
            let mut asked = Vec::new();
            self.probes_wanted(spec, &mut wanted, &mut asked);
            if spec.task.no_log {
                self.outcomes.secret_probes(asked);
            }
            if !wanted.is_empty() {
                match self.wire.probe(wanted.into_values().collect()) {
                    Ok(answers) => self.facts.extend(answers),
                    Err(e) => {
                        self.fail(spec, None, format!("delegate_to '{target}': {e}"));
                        return;
                    }
                }
            }
            match self.plan_resolved(spec) {
                Next::FlushBefore if self.pending.is_empty() => continue,
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
        for (_, wire) in std::mem::take(&mut self.delegates) {
            let (t, o) = wire.finish();
            trips += t;
            observed.extend(o);
        }
        (trips, observed)
    }
}
