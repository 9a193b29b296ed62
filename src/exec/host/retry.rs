//! Retry, inside the schedule: a task with `until:` runs alone, attempt
//! after attempt (item by item in a loop), until its condition holds on
//! its result or its attempts are spent. Each attempt is one apply round trip (and one probe for a
//! module that reads the host), so such a task cuts the batch.
//!
//! Kept apart from the schedule so that `host.rs` reads as the order of
//! things, and this file as what retrying one task does.

use std::time::Duration;

use serde_json::{json, Value};

use super::{HostRun, Next};
use crate::exec::outcome::Retried;
use crate::exec::prepared::PreparedTask;

impl<'p> HostRun<'_, 'p> {
    /// Runs a task with `until:`; what is pending must have run first. In
    /// a loop each item is retried on its own result, one after the other,
    /// and an item that never meets `until:` fails the task once the items
    /// after it have run, as in Ansible.
    pub(super) fn plan_retried(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        let mut results = Vec::new();
        let mut failed = None;
        let mut index = 0;
        loop {
            match self.retry_item(spec, index) {
                Attempts::Done(result, stops) => {
                    if stops && failed.is_none() {
                        failed = Some((self.state.outcomes.len() - 1, result.clone()));
                    }
                    results.push(result);
                }
                Attempts::NoMoreItems => break,
                Attempts::Stop(next) => return next,
            }
            index += 1;
        }
        if let Some((mark, result)) = failed {
            self.task_failed(spec, mark, result);
        }
        self.register(spec, results);
        Next::Continue
    }

    /// Item `index`'s attempts, resolved afresh for each one, since an
    /// attempt changes what the item's module reads.
    fn retry_item(&mut self, spec: &'p PreparedTask<'p>, index: usize) -> Attempts {
        let mut attempt = 1;
        let mut reprobed = false;
        loop {
            let mark = self.state.outcomes.len();
            let mut instances = match self.resolve_all(spec) {
                Ok(instances) => instances,
                // Probed afresh here once, since earlier items have run.
                Err(Next::FlushBefore) if !reprobed => {
                    self.flush();
                    self.probe_ahead(&[spec]);
                    reprobed = true;
                    continue;
                }
                Err(next) => return Attempts::Stop(next),
            };
            reprobed = false;
            if index >= instances.len() {
                return Attempts::NoMoreItems;
            }
            let (mut instance, module) = instances.swap_remove(index);
            let item = self.loop_item(&instance);
            let with_item = |mut result: Value| {
                if let (Some(keys), Value::Object(r)) = (&item, &mut result) {
                    r.extend(keys.clone());
                }
                result
            };
            let Some(module) = module else {
                self.state.outcomes.skipped(&instance);
                return Attempts::Done(
                    with_item(json!({"changed": false, "skipped": true})),
                    false,
                );
            };
            if instance.check && module.is_command() {
                let why = "a command retried with until: runs only in apply mode (or with check_mode: false)";
                self.state.outcomes.skipped_because(&instance, why.into());
                if let Some(reg) = &spec.task.register {
                    self.state
                        .unknown_vars
                        .insert(reg.clone(), spec.name.clone());
                }
                return Attempts::Stop(Next::Continue);
            }
            let retrying = instance.retry.as_mut().expect("a task with until");
            retrying.attempt = attempt;
            let (attempts, delay) = (retrying.attempts, retrying.delay);
            let probes: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
            let query = module.query_probe().map(|p| p.key);
            let vars = instance.vars.clone();
            let ignore_errors = instance.ignore_errors;
            // An attempt's failure is judged by `until:`, not by the step.
            instance.ignore_errors = true;
            let (planned, _) = self.plan_instance(instance, module);
            let mut settled = self.flush();
            let mut result = settled.remove(&mark).unwrap_or(planned);
            if self.state.stopped || mark >= self.state.outcomes.len() {
                return Attempts::Stop(Next::Continue);
            }
            result["attempts"] = json!(attempt);
            let judged = Retried {
                until: spec.conditions.until.as_ref().expect("a task with until"),
                vars: &vars,
                register: spec.task.register.as_deref(),
                attempt,
                last: attempt >= attempts,
                ignore_errors,
            };
            match self
                .state
                .outcomes
                .retried(self.ctx.templates, mark, &judged, &mut result)
            {
                Some(stops) => return Attempts::Done(with_item(result), stops),
                None => self.another_attempt(mark, &probes, query, delay, spec),
            }
            attempt += 1;
        }
    }

    /// Forgets an attempt that did not meet `until:` (its result, what it
    /// would have verified, what it read), waits, and probes afresh.
    fn another_attempt(
        &mut self,
        mark: usize,
        probes: &[String],
        query: Option<String>,
        delay: Duration,
        spec: &'p PreparedTask<'p>,
    ) {
        self.state.outcomes.forget_from(mark);
        self.batch.to_verify.retain(|v| v.result < mark);
        for key in probes.iter().chain(&query) {
            self.state.facts.remove(key);
        }
        std::thread::sleep(delay);
        self.probe_ahead(&[spec]);
    }
}

/// How one item's attempts ended.
enum Attempts {
    /// Its last result, and whether it stops the host.
    Done(Value, bool),
    /// The loop has no item at this index.
    NoMoreItems,
    /// The task is over on this host (failed to resolve, lost, skipped in
    /// check mode), or the schedule must run the batch first.
    Stop(Next),
}
