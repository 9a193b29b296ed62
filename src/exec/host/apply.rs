//! Apply and verify, inside the schedule: the queued steps go out as one
//! script, each step's report settles its instance (a command's result is
//! registered, handlers notified), and what changed is probed once more.
//!
//! Kept apart from the schedule so that `host.rs` reads as the order of
//! things, and this file as what running a batch does to the host's state.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::{HostRun, ToVerify};
use crate::exec::instance::TaskInstance;
use crate::exec::outcome;
use crate::exec::result::Status;
use crate::exec::wire::Step;
use crate::modules::{Facts, Module};
use crate::remote::async_job;
use crate::remote::host_facts;
use crate::remote::probe::{Probe, ProbeResult, RunTimes};

impl<'p> HostRun<'_, 'p> {
    /// Runs the pending steps as one script that stops at the first failure;
    /// returns the commands' results by result index.
    pub(super) fn flush(&mut self) -> BTreeMap<usize, Value> {
        let mut results = BTreeMap::new();
        if self.batch.pending.is_empty() {
            return results;
        }
        let pending = std::mem::take(&mut self.batch.pending);
        let (steps, waiting): (Vec<Step>, Vec<_>) = pending
            .into_iter()
            .map(|p| {
                let i = p.step.result;
                (p.step, (i, p.command, p.instance))
            })
            .unzip();
        // A throttled task's steps are the batch (see `plan_task`): they
        // run once the task has a place for this host.
        let throttle = waiting
            .first()
            .and_then(|(_, _, i)| i.spec.throttle.as_ref());
        let applied = {
            let _place = throttle.map(|t| t.enter());
            self.wire.apply(steps)
        };
        self.batch.changed_since_probe = true;
        // A step failed for good: the script stopped there.
        let mut step_failed = false;
        // A command that did not report itself unchanged may have changed
        // anything the facts say.
        let mut ran_command = false;
        for (i, command, instance) in waiting {
            let may_change = command.is_some() && !instance.spec.read_only;
            let spec = instance.spec;
            let Some(r) = applied.reports.get(&i) else {
                ran_command |= may_change;
                let stopped = self.state.stopped || step_failed;
                self.state.outcomes.unfinished(i, &applied.ended, stopped);
                self.state.stopped |= !step_failed;
                break;
            };
            let result = self.settle(instance, i, command.as_deref(), r, applied.ran.get(&i));
            // Only the module's own result says "unchanged" without a
            // `changed_when` of the task's.
            let unchanged =
                self.state.outcomes.status(i) == Status::Ok && spec.conditions.changed.is_none();
            ran_command |= may_change && !unchanged;
            step_failed |= self.state.outcomes.failed_for_good(i);
            if command.is_some() {
                results.insert(i, result);
            }
        }
        // A delegate failing a step does not lose this host.
        match applied.ended {
            Err(e) if self.delegation.current.is_none() => self.lost(e.to_string()),
            _ => {}
        }
        self.batch.registers.clear();
        for (name, items) in std::mem::take(&mut self.batch.loops) {
            let results = items
                .into_iter()
                .map(|(at, planned)| match at.and_then(|i| results.get(&i)) {
                    Some(ran) => with_item_keys(ran.clone(), &planned),
                    None => planned,
                })
                .collect();
            self.state
                .vars
                .registered
                .insert(name, super::plan::loop_value(results));
        }
        if ran_command {
            self.forget_facts();
        }
        results
    }

    /// A command ran, so anything may have changed; the gathered facts
    /// and durable answers are kept.
    pub(super) fn forget_facts(&mut self) {
        self.state.facts.retain(|key, r| {
            key == host_facts::KEY || (crate::remote::probe::is_durable(key) && r.rc == 0)
        });
    }

    /// Records what a step really did; for a command, returns its result,
    /// with when it ran for a timed step.
    pub(super) fn settle(
        &mut self,
        instance: TaskInstance<'p>,
        i: usize,
        command: Option<&dyn Module>,
        r: &ProbeResult,
        ran: Option<&RunTimes>,
    ) -> Value {
        self.state.outcomes.step_reported(i, r, instance.timeout);
        let spec = instance.spec;
        let mut registered = Value::Null;
        if let Some(module) = command {
            let mut result = match async_job::launched(r).filter(|_| spec.task.detach) {
                Some(record) => started_job(record, self.state.outcomes.status(i)),
                None => module.command_result(r),
            };
            if let Some(ran) = ran {
                result["start"] = json!(ran.start);
                result["end"] = json!(ran.end);
                result["delta"] = json!(ran.delta);
            }
            // Registered as Ansible registers a task it stopped.
            if let Some(period) = outcome::timed_out(r, instance.timeout) {
                result["timedout"] = json!({"period": period});
                result["msg"] = json!(outcome::timeout_message(period));
            }
            let t = self.ctx.templates;
            if self.state.outcomes.conditions(t, &instance, i, &mut result) == Status::Changed {
                self.notify(&instance);
            }
            if let Some(reg) = &spec.task.register {
                self.state
                    .vars
                    .registered
                    .insert(reg.clone(), result.clone());
            }
            registered = result;
        } else {
            self.state
                .outcomes
                .step_failed(self.ctx.templates, &instance, i);
        }
        if self.state.outcomes.tolerated(instance.ignore_errors, i) {
            let value = match &registered {
                Value::Null => json!({"failed": true, "msg": self.state.outcomes.message(i)}),
                v => v.clone(),
            };
            self.task_failed(spec, i, value);
        }
        registered
    }

    /// Re-probes what changed and re-plans it: anything still to change
    /// means the module did not converge.
    pub(super) fn verify(&mut self) {
        let applied = std::mem::take(&mut self.batch.to_verify);
        let checks: Vec<&ToVerify> = applied
            .iter()
            .filter(|a| self.state.outcomes.status(a.result) == Status::Changed)
            .collect();
        if checks.is_empty() {
            return;
        }
        let probes: BTreeMap<String, Probe> = checks
            .iter()
            .flat_map(|a| a.module.probes())
            .map(|p| (p.key.clone(), p))
            .collect();
        let facts = match self.wire.probe(probes.into_values().collect()) {
            Ok(results) => Facts::new(results),
            Err(e) => return self.lost(e.to_string()),
        };
        for (n, a) in checks.iter().enumerate() {
            // What a later task changed again is judged by that task alone
            // (a file templated, then edited by lineinfile), and so is
            // what lies in a folder a later task changed (removed by a
            // handler of the same batch).
            let later: BTreeSet<&str> = checks[n + 1..]
                .iter()
                .flat_map(|l| self.state.outcomes.changes(l.result))
                .map(|c| c.subject.as_str())
                .collect();
            let own: Vec<&str> = (self.state.outcomes.changes(a.result).iter())
                .map(|c| c.subject.as_str())
                .collect();
            let problem = still_to_change(a.module.as_ref(), &facts, &own, &later);
            if !problem.is_empty() {
                self.state.outcomes.did_not_converge(a.result, problem);
            }
        }
    }
}

/// What a module would still change on re-probed facts, leaving out what
/// later tasks changed again, in itself or in a folder above it; empty
/// when it converged. A module that cannot plan any more (its file gone)
/// converged when all it changed (`own`) was changed again later.
fn still_to_change(
    module: &dyn Module,
    facts: &Facts,
    own: &[&str],
    later: &BTreeSet<&str>,
) -> String {
    // A subject is a path, or a path and what of it ("/etc/f mode").
    let changed_later = |subject: &str| {
        later.iter().any(|l| {
            let of_it = subject
                .strip_prefix(l)
                .is_some_and(|r| r.is_empty() || r.starts_with(' '));
            of_it || (l.starts_with('/') && std::path::Path::new(subject).starts_with(l))
        })
    };
    match module.plan(facts) {
        Ok(plan) => plan
            .changes
            .iter()
            .filter(|c| !changed_later(&c.subject))
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        Err(_) if !own.is_empty() && own.iter().all(|s| changed_later(s)) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// What Ansible registers for a job it left running; changed as its plan
/// said (a module with nothing to change starts a job that changes nothing).
fn started_job(record: &str, planned: Status) -> Value {
    let jid = record.rsplit('/').next().unwrap_or(record);
    json!({
        "ansible_job_id": jid,
        "results_file": record,
        "started": true,
        "finished": false,
        "changed": planned == Status::Changed,
        "failed": false,
    })
}

/// A looped command's result with the loop keys its planned result
/// carries (see `loop_item`).
fn with_item_keys(mut ran: Value, planned: &Value) -> Value {
    let (Value::Object(r), Value::Object(p)) = (&mut ran, planned) else {
        return ran;
    };
    let named = ["ansible_loop_var", "ansible_index_var"].map(|k| p.get(k).and_then(Value::as_str));
    let keys = ["ansible_loop_var", "ansible_index_var", "ansible_loop"];
    for key in named.into_iter().flatten().chain(keys) {
        if let Some(v) = p.get(key) {
            r.insert(key.to_string(), v.clone());
        }
    }
    ran
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_test, file_facts};
    use crate::modules::registry::find;

    /// A block put in a file that a later task of the batch removed:
    /// re-planned, the module fails (the file is gone), and that is no
    /// failure to converge; a file no later task touched is.
    #[test]
    fn what_a_later_task_removed_again_is_not_judged_by_the_earlier_one() {
        let spec = find("blockinfile").unwrap();
        let m = build_test(spec, serde_json::json!({"path": "empty.txt", "block": "x"})).unwrap();
        let gone = file_facts("empty.txt", None, 0o644);
        let own = ["empty.txt block '# BEGIN ANSIBLE MANAGED BLOCK'"];
        let later = BTreeSet::from(["empty.txt"]);
        assert_eq!(still_to_change(m.as_ref(), &gone, &own, &later), "");
        let folder = BTreeSet::from(["/srv"]);
        let m = build_test(spec, serde_json::json!({"path": "/srv/f", "block": "x"})).unwrap();
        let gone = file_facts("/srv/f", None, 0o644);
        assert_eq!(
            still_to_change(m.as_ref(), &gone, &["/srv/f block 'x'"], &folder),
            ""
        );
        let unrelated = BTreeSet::from(["/srv/f2"]);
        let left = still_to_change(m.as_ref(), &gone, &["/srv/f block 'x'"], &unrelated);
        assert_eq!(left, "Path /srv/f does not exist !");
    }
}
