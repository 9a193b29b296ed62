//! Items one by one, inside the schedule: a task with `until:` runs
//! attempt after attempt until its condition holds on its result or its
//! attempts are spent, and a loop with `loop_control`'s `pause` or
//! `break_when` runs each item once the one before it ran (waiting
//! between them, stopping where `break_when` holds). Each attempt or item
//! is one apply round trip (and one probe for a module that reads the
//! host), so such a task cuts the batch.
//!
//! Kept apart from the schedule so that `host.rs` reads as the order of
//! things, and this file as what running a task item by item does.

use std::time::Duration;

use serde_json::{json, Value};

use super::{HostRun, Next};
use crate::exec::outcome::Retried;
use crate::exec::prepared::PreparedTask;

impl<'p> HostRun<'_, 'p> {
    /// Runs a task item by item; what is pending must have run first. An
    /// item that fails (never meets `until:`, say) fails the task once the
    /// items after it have run, as in Ansible, unless `break_when` ended
    /// the loop at it.
    pub(super) fn plan_item_by_item(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        let mut results = Vec::new();
        let mut failed = None;
        let mut index = 0;
        loop {
            match self.item_attempts(spec, index) {
                Attempts::Done(mut item) => {
                    let ends = self.break_when(spec, &mut item);
                    let stops = self.state.outcomes.item_done(item.at, item.ignore_errors);
                    if stops && failed.is_none() {
                        failed = Some((item.at, item.result.clone()));
                    }
                    results.push(item.result);
                    if ends {
                        break;
                    }
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

    /// `break_when` on an item that ran, its result registered: true ends
    /// the loop. The item keeps what it said (`break_when_result`), and
    /// one it cannot judge fails and ends the loop, as in Ansible.
    fn break_when(&mut self, spec: &PreparedTask, item: &mut ItemDone) -> bool {
        let Some(conditions) = &spec.task.loop_pace.break_when else {
            return false;
        };
        let mut vars = item.vars.clone();
        if let (Some(reg), Value::Object(v)) = (&spec.task.register, &mut vars) {
            v.insert(reg.clone(), item.result.clone());
        }
        let judged = self
            .ctx
            .templates
            .eval_condition(&conditions.to_json(), &vars);
        match judged {
            Ok(ends) => {
                item.result["break_when_result"] = json!(ends);
                ends
            }
            Err(e) => {
                let why = e.to_string();
                // The item keeps its own message; a failure of its own is
                // kept beside.
                if item.result["failed"] == json!(true) {
                    let kept = item.result["msg"].clone();
                    item.result["break_when_suppressed_exception"] = kept;
                }
                item.result["failed"] = json!(true);
                item.result["break_when_result"] = json!(why);
                let message = format!("break_when: {why}");
                self.state.outcomes.break_when_failed(item.at, message);
                true
            }
        }
    }

    /// Item `index`'s attempts (one without `until:`), resolved afresh for
    /// each one, since an attempt or the item before changes what the
    /// item's module reads.
    fn item_attempts(&mut self, spec: &'p PreparedTask<'p>, index: usize) -> Attempts {
        // Between two items, not after the last, and before the item
        // renders (it may read the time).
        if let (Some(pause), true) = (spec.task.loop_pace.pause, index > 0) {
            let items = self.resolver().items(spec).map(|i| i.list.len());
            if items.is_ok_and(|n| index < n) {
                std::thread::sleep(pause);
            }
        }
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
            let vars = instance.vars.clone();
            let ignore_errors = instance.ignore_errors;
            let done = |result| {
                Attempts::Done(ItemDone {
                    result: with_item(result),
                    at: mark,
                    vars: vars.clone(),
                    ignore_errors,
                })
            };
            let Some(module) = module else {
                self.state.outcomes.skipped(&instance);
                return done(super::plan::skipped_by_when(self.ctx.templates, &instance));
            };
            let retrying = instance.retry.as_mut();
            if retrying.is_some() && instance.check && module.is_command() {
                let why = "a command retried with until: runs only in apply mode (or with check_mode: false)";
                self.state.outcomes.skipped_because(&instance, why.into());
                if let Some(reg) = &spec.task.register {
                    self.state
                        .unknown_vars
                        .insert(reg.clone(), spec.name.clone());
                }
                return Attempts::Stop(Next::Continue);
            }
            let (attempts, delay) = match retrying {
                Some(r) => {
                    r.attempt = attempt;
                    (r.attempts, r.delay)
                }
                None => (1, Duration::ZERO),
            };
            let probes: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
            let query = module.query_probe().map(|p| p.key);
            // An attempt's failure is judged once it is over (by `until:`,
            // `break_when`), not by the step.
            instance.ignore_errors = true;
            let (planned, _) = self.plan_item(instance, module);
            let mut settled = self.flush();
            let mut result = settled.remove(&mark).unwrap_or(planned);
            if self.state.stopped || mark >= self.state.outcomes.len() {
                return Attempts::Stop(Next::Continue);
            }
            let Some(until) = &spec.conditions.until else {
                return done(result);
            };
            result["attempts"] = json!(attempt);
            let judged = Retried {
                until,
                vars: &vars,
                register: spec.task.register.as_deref(),
                attempt,
                last: attempt >= attempts,
            };
            if self
                .state
                .outcomes
                .retried(self.ctx.templates, mark, &judged, &mut result)
            {
                return done(result);
            }
            self.another_attempt(mark, &probes, query, delay, spec);
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

/// An item's last result, where it is among the host's results, and what
/// judging it further reads.
struct ItemDone {
    result: Value,
    at: usize,
    /// The item's variables, which `break_when` reads besides its result.
    vars: Value,
    /// The task's own `ignore_errors` (each attempt ran with failures
    /// tolerated).
    ignore_errors: bool,
}

/// How one item's attempts ended.
enum Attempts {
    Done(ItemDone),
    /// The loop has no item at this index.
    NoMoreItems,
    /// The task is over on this host (failed to resolve, lost, skipped in
    /// check mode), or the schedule must run the batch first.
    Stop(Next),
}
