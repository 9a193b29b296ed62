//! Retry, inside the schedule: a task with `until:` runs alone, attempt
//! after attempt, until its condition holds on its result or its attempts
//! are spent. Each attempt is one apply round trip (and one probe for a
//! module that reads the host), so such a task cuts the batch.
//!
//! Kept apart from the schedule so that `host.rs` reads as the order of
//! things, and this file as what retrying one task does.

use std::time::Duration;

use serde_json::json;

use super::{HostRun, Next};
use crate::exec::outcome::Retried;
use crate::exec::prepared::PreparedTask;

impl<'p> HostRun<'_, 'p> {
    /// Runs a task with `until:`; what is pending must have run first.
    pub(super) fn plan_retried(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        let retry = spec.task.retry.as_ref().expect("a task with until");
        let mut attempt = 1;
        loop {
            let mark = self.outcomes.len();
            let mut instances = match self.resolve_all(spec) {
                Ok(instances) => instances,
                Err(next) => return next,
            };
            // `until:` over a loop is refused at load: one instance.
            let Some((mut instance, module)) = instances.pop() else {
                return Next::Continue;
            };
            let Some(module) = module else {
                self.outcomes.skipped(&instance);
                self.register(spec, vec![json!({"changed": false, "skipped": true})]);
                return Next::Continue;
            };
            if instance.check && module.is_command() {
                let why = "a command retried with until: runs only in apply mode (or with check_mode: false)";
                self.outcomes.skipped_because(&instance, why.into());
                if let Some(reg) = &spec.task.register {
                    self.unknown_vars.insert(reg.clone(), spec.name.clone());
                }
                return Next::Continue;
            }
            let probes: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
            let query = module.query_probe().map(|p| p.key);
            let vars = instance.vars.clone();
            let ignore_errors = instance.ignore_errors;
            // An attempt's failure is judged by `until:`, not by the step.
            instance.ignore_errors = true;
            let (planned, _) = self.plan_instance(instance, module);
            let mut settled = self.flush();
            let mut result = settled.remove(&mark).unwrap_or(planned);
            if self.stopped || mark >= self.outcomes.len() {
                return Next::Continue;
            }
            result["attempts"] = json!(attempt);
            let register = spec.task.register.as_deref();
            let judged = Retried {
                until: spec.until.as_ref().expect("a task with until"),
                vars: &vars,
                register,
                attempt,
                last: attempt >= retry.attempts,
                ignore_errors,
            };
            match self
                .outcomes
                .retried(self.ctx.templates, mark, &judged, &mut result)
            {
                Some(stops) => {
                    if stops {
                        self.task_failed(spec, mark, result.clone());
                    }
                    self.register(spec, vec![result]);
                    return Next::Continue;
                }
                None => self.another_attempt(mark, &probes, query, retry.delay, spec),
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
        delay: u64,
        spec: &'p PreparedTask<'p>,
    ) {
        self.outcomes.forget_from(mark);
        self.to_verify.retain(|v| v.result < mark);
        for key in probes.iter().chain(&query) {
            self.facts.remove(key);
        }
        std::thread::sleep(Duration::from_secs(delay));
        self.probe_ahead(&[spec]);
    }
}
