//! `run_once` inside the schedule: this host either runs the task (all
//! of its loop, as Ansible does) for the whole batch, alone in its apply
//! batch so its result is known at once, or takes the result of the host
//! that did.

use serde_json::Value;

use super::{HostRun, Next};
use crate::exec::once::{Ran, Turn};
use crate::exec::prepared::PreparedTask;
use crate::exec::result::Status;

impl<'p> HostRun<'_, 'p> {
    pub(super) fn plan_once(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        let key = std::ptr::from_ref(spec) as usize;
        match self.once.turn(key, &self.host) {
            Turn::Run => {
                let mark = self.state.outcomes.len();
                let before = self.state.vars.registered.clone();
                if let Next::FlushBefore = self.plan_resolved(spec) {
                    return Next::FlushBefore;
                }
                self.flush();
                let reg = spec.task.register.as_ref();
                let sets = self
                    .state
                    .vars
                    .registered
                    .iter()
                    .filter(|(k, v)| Some(*k) != reg && before.get(*k) != Some(*v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let registered = spec
                    .task
                    .register
                    .as_ref()
                    .and_then(|r| self.state.vars.registered.get(r).cloned())
                    .unwrap_or(Value::Null);
                let failed = (mark..self.state.outcomes.len())
                    .find(|&i| self.state.outcomes.failed_for_good(i))
                    .map(|i| {
                        self.state
                            .outcomes
                            .message(i)
                            .unwrap_or("failed")
                            .to_string()
                    });
                let ran = Ran {
                    host: self.host.clone(),
                    registered,
                    sets,
                    failed,
                    // A loop is skipped when every item was.
                    skipped: self.state.outcomes.len() > mark
                        && (mark..self.state.outcomes.len())
                            .all(|i| self.state.outcomes.status(i) == Status::Skipped),
                    unknown: reg.is_some_and(|r| self.state.unknown_vars.contains_key(r)),
                };
                self.once.ran(key, ran);
            }
            Turn::Take(ran) => {
                self.state.vars.registered.extend(ran.sets);
                if let Some(reg) = &spec.task.register {
                    if ran.unknown {
                        self.state
                            .unknown_vars
                            .insert(reg.clone(), spec.name.clone());
                    } else {
                        self.state
                            .vars
                            .registered
                            .insert(reg.clone(), ran.registered);
                    }
                }
                let note = format!("ran once, on {}", ran.host);
                match ran.failed {
                    Some(why) => {
                        let message = format!("failed on {} (run_once): {why}", ran.host);
                        self.fail(spec, None, message);
                    }
                    None if ran.skipped => self.state.outcomes.noted(spec, Status::Skipped, note),
                    None => self.state.outcomes.noted(spec, Status::Ok, note),
                }
            }
        }
        Next::Continue
    }
}
