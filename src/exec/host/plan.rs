//! Plan, inside the schedule: one resolved instance planned from the
//! known facts, its predicted effects applied to them, its conditions
//! judged, and its steps queued for the next apply batch.
//!
//! Kept apart from the schedule so that `host.rs` reads as the order of
//! things, and this file as what planning one instance does.

use std::time::Instant;

use serde_json::{json, Value};

use super::{HostRun, Instances, Next, Pending, ToVerify};
use crate::exec::instance::TaskInstance;
use crate::exec::outcome::Planned;
use crate::exec::prepared::PreparedTask;
use crate::exec::result::Status;
use crate::exec::wire::Step;
use crate::modules::kit::file_meta;
use crate::modules::{Effect, InventoryChange, Module, ModuleError, Plan};
use crate::remote::async_job::{self, How};
use crate::remote::probe::ProbeResult;
use crate::template::Templates;

impl<'p> HostRun<'_, 'p> {
    /// The variables a task reads that a task decided on the controller
    /// set (`set_fact`), as they are now.
    pub(super) fn own_reads(&self, spec: &PreparedTask) -> Vec<(String, Value)> {
        let registered = &self.state.vars.registered;
        (spec.referenced.iter())
            .filter_map(|r| Some((r.clone(), registered.get(r)?.clone())))
            .collect()
    }

    /// A loop's items after the first `done`, resolved again once an item
    /// set a variable the task reads: as in Ansible, the next item sees
    /// what the one before set (`set_fact` adding to a list item by item).
    /// None: they could not be resolved yet, and keep what they were.
    pub(super) fn items_after(
        &mut self,
        spec: &'p PreparedTask<'p>,
        done: usize,
    ) -> Result<Option<Instances<'p>>, Next> {
        match self.resolve_all(spec) {
            Ok(mut again) if again.len() > done => Ok(Some(again.split_off(done))),
            Ok(_) => Ok(Some(Vec::new())),
            // The task failed there, with why.
            Err(Next::Continue) => Err(Next::Continue),
            Err(_) => Ok(None),
        }
    }

    /// Plans one instance where its module runs: on the controller for a
    /// module that writes there, otherwise on the host.
    pub(super) fn plan_item(
        &mut self,
        instance: TaskInstance<'p>,
        module: Box<dyn Module>,
    ) -> (Value, bool) {
        match module.on_controller(&self.state.facts) {
            Some(local) => self.plan_on_controller(instance, local),
            None => self.plan_instance(instance, module),
        }
    }

    /// Plans one instance; returns its registered result and whether the
    /// batch must be run before planning anything else.
    pub(super) fn plan_instance(
        &mut self,
        instance: TaskInstance<'p>,
        module: Box<dyn Module>,
    ) -> (Value, bool) {
        let started = Instant::now();
        let spec = instance.spec;
        if spec.task.no_log {
            let asked = module.probes().into_iter().chain(module.query_probe());
            self.state.outcomes.secret_probes(asked.map(|p| p.key));
        }
        let planned = module.plan(&self.state.facts).and_then(|mut plan| {
            let changes = std::mem::take(&mut plan.inventory);
            let changed = (self.ctx.inventory)
                .change(&self.host, &changes)
                .map_err(ModuleError::Asserted)?;
            let joined = changes
                .iter()
                .any(|c| matches!(c, InventoryChange::Join { .. }));
            Ok((plan, changed, changed && joined))
        });
        let (mut plan, inventory_changed, joined) = match planned {
            Ok(planned) => planned,
            Err(e) if self.absent_after_drift(instance.check, &e) => {
                let message = format!(
                    "{e}; an earlier task would change the host first, which check mode does not do"
                );
                self.unknown(spec, message.clone());
                return (json!({"changed": false, "msg": message}), false);
            }
            Err(e) => {
                let t = self.ctx.templates;
                let failure = (e.to_string(), e.returns());
                let (i, result) = self.state.outcomes.plan_failed(t, &instance, failure);
                if self.state.outcomes.tolerated(instance.ignore_errors, i) {
                    self.task_failed(spec, i, result.clone());
                }
                return (result, false);
            }
        };
        // The host's own groups and their variables are the new ones from
        // its next task on (`group_names`, `group_vars/`), as in Ansible.
        if joined {
            let (_, fresh) = self.ctx.inventory.run_vars(&self.host);
            self.state.vars.inventory.extend(fresh);
        }
        if let Some(r) = self.query_answer(spec, module.as_ref(), &plan) {
            let i = self.state.outcomes.answered(&instance);
            return (
                self.settle(instance, i, Some(module.as_ref()), &r, None),
                false,
            );
        }
        // A task marked `check_mode: false` runs even in check mode, as in Ansible.
        let runs = !instance.check;
        let upkeep = plan.upkeep && runs && plan.changes.is_empty() && !plan.steps.is_empty();
        // A job left running registers its start, as a command its output;
        // in check mode none starts, so there is nothing to register.
        let job = spec.task.detach.then(|| match module.is_command() {
            true if module.output_is_json() => How::Json,
            true => How::Output,
            false => How::Planned(String::new()),
        });
        if let (Some(reg), Some(_), false) = (&spec.task.register, &job, runs) {
            self.state
                .unknown_vars
                .insert(reg.clone(), spec.name.clone());
        }
        let job = job.filter(|_| runs);
        if job.is_some() {
            plan.effects = plan.effects.into_iter().map(unverified).collect();
        }
        // Upkeep registers its planned result: it is not a command's output.
        let is_command = (module.is_command() && !upkeep) || job.is_some();
        // Variables a task sets (set_fact) are there for the next task, or
        // the delegate's (delegate_facts).
        let sets = std::mem::take(&mut plan.sets);
        match (&self.delegation.facts_to, self.ctx.templates.kept()) {
            (Some(delegate), Some(kept)) => kept.add(delegate, &sets),
            _ => self.state.vars.registered.extend(sets),
        }
        let mut returns = std::mem::take(&mut plan.returns);
        if let (Some(diff), true) = (
            plan.diff.take(),
            spec.task.diff.unwrap_or(self.ctx.opts.diff),
        ) {
            returns.insert("diff".into(), diff);
        }
        let timed = plan.timed && job.is_none();
        let (planned, steps, effects) = Planned::split(plan, &returns, runs);
        let i = self.state.outcomes.planned(&instance, planned);
        let mut flush = self.predict(spec, effects, runs);
        let keys: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
        let observed_at = self.wire.newest_observation(&keys);
        flush |= self.track_command(spec, is_command, runs, self.state.outcomes.status(i));
        let queued = Queued {
            steps,
            is_command,
            upkeep,
            returns,
            job,
            timed,
            inventory_changed,
        };
        let result = self.finish(instance, i, queued, module);
        let ms = started.elapsed().as_millis() as u64;
        self.state.outcomes.observed(i, keys, observed_at, ms);
        (result, flush)
    }

    /// Check mode: something an earlier task may provide is absent, after
    /// an earlier task of this host would have changed it; that change may
    /// be what makes it (a folder, a package's files), so this is no
    /// failure and no verdict either.
    fn absent_after_drift(&self, check: bool, e: &ModuleError) -> bool {
        check && matches!(e, ModuleError::Absent(_)) && self.state.outcomes.drifted()
    }

    /// Applies a plan's predicted effects to the facts, so later tasks plan
    /// against the state this one leaves; true when the batch must run
    /// before anything else is planned.
    fn predict(&mut self, spec: &PreparedTask, effects: Vec<Effect>, runs: bool) -> bool {
        let mut flush = false;
        for effect in effects {
            match effect {
                Effect::Predict(key, r) => {
                    if runs {
                        self.forget_stale(&key);
                    }
                    self.state.facts.insert(key, r)
                }
                Effect::Invalidate(key) if runs => {
                    self.forget_stale(&key);
                    self.state.facts.remove(&key)
                }
                // `changed_when: false` declares a command read-only: later facts stay valid.
                Effect::InvalidateAll if runs && !spec.read_only => flush = true,
                _ => {}
            }
        }
        flush
    }

    /// For a task whose steps run: forgets what they change of `key`'s
    /// subject that no prediction knows (a written file's times and inode),
    /// so a task reading it probes it again once they ran.
    fn forget_stale(&mut self, key: &str) {
        if let Some(stale) = file_meta::stale_after(key) {
            self.state.facts.remove(&stale);
        }
    }

    /// Where a command's result will come from; true when the batch must
    /// run right after it (its `failed_when` decides whether to go on).
    fn track_command(
        &mut self,
        spec: &PreparedTask,
        is_command: bool,
        runs: bool,
        status: Status,
    ) -> bool {
        let task = spec.task;
        // A module whose outcome check mode cannot know (Ansible's, without
        // check mode) registers no values later tasks could trust.
        if let (Some(reg), false, false, Status::Unknown) =
            (&task.register, is_command, runs, status)
        {
            self.state
                .unknown_vars
                .insert(reg.clone(), spec.name.clone());
        }
        let (Some(reg), true) = (&task.register, is_command) else {
            return is_command && runs && task.failed_when.is_some();
        };
        // A command skipped by `creates`/`removes` has no step to wait for:
        // its planned result is registered as it is.
        if runs && status == Status::Changed {
            self.batch.registers.insert(reg.clone());
        } else if !runs && status != Status::Ok {
            self.state
                .unknown_vars
                .insert(reg.clone(), spec.name.clone());
        }
        runs && task.failed_when.is_some()
    }

    /// Evaluates a module's `changed_when`/`failed_when` on its predicted
    /// result, notifies handlers, and queues the steps to run.
    fn finish(
        &mut self,
        instance: TaskInstance<'p>,
        i: usize,
        queued: Queued,
        module: Box<dyn Module>,
    ) -> Value {
        let spec = instance.spec;
        let planned = self.state.outcomes.status(i);
        let Queued {
            steps,
            is_command,
            upkeep,
            returns,
            job,
            timed,
            inventory_changed,
        } = queued;
        // What the inventory took is a change, in check mode too, as in
        // Ansible; no step runs for it.
        if inventory_changed {
            self.state.outcomes.changed_without_steps(i);
        }
        let changed = matches!(planned, Status::Changed | Status::Drift) || inventory_changed;
        // Conditions read what the module returns (`stat`, the check-mode
        // run of Ansible's module) beside `changed` and `failed`.
        let mut result = Value::Object(returns);
        result["changed"] = json!(changed);
        result["failed"] = json!(false);
        if !is_command {
            let t = self.ctx.templates;
            match self.state.outcomes.conditions(t, &instance, i, &mut result) {
                Status::Failed => {
                    if !instance.ignore_errors {
                        self.task_failed(spec, i, result.clone());
                    }
                    return result;
                }
                Status::Changed | Status::Drift => self.notify(&instance),
                _ => {}
            }
        }
        if planned == Status::Changed || upkeep || job.is_some() {
            let command = match is_command {
                true => Some(module),
                false => {
                    if self.state.outcomes.status(i) == Status::Changed {
                        self.batch.to_verify.push(ToVerify { result: i, module });
                    }
                    None
                }
            };
            let may_fail = instance.ignore_errors || spec.conditions.failed.is_some();
            let steps = with_environment(&instance.environment, steps);
            let dropped = crate::exec::task_user::dropped_user(self.ctx.play, &instance.user);
            // A job's record goes to its own user's home, as Ansible's does.
            let steps = match job {
                Some(How::Planned(_)) => {
                    let how = How::Planned(result.to_string());
                    as_user(dropped, detached(instance.timeout, steps, &how))
                }
                Some(how) => as_user(dropped, detached(instance.timeout, steps, &how)),
                None => with_timeout(instance.timeout, as_user(dropped, steps)),
            };
            let step = Step {
                timed,
                ..Step::new(i, steps, may_fail)
            };
            self.batch.pending.push(Pending {
                step,
                command,
                instance,
            });
        }
        result
    }

    /// A declared query (a command with `changed_when: false`; in check
    /// mode also `check_mode: false`) rides in the probe batch; its early
    /// answer stands when nothing changed on the host since that probe.
    fn query_answer(
        &self,
        spec: &PreparedTask,
        module: &dyn Module,
        plan: &Plan,
    ) -> Option<ProbeResult> {
        let probe = module.query_probe()?;
        let quiet = self.batch.pending.is_empty() && !self.batch.changed_since_probe;
        if !(spec.may_query(self.ctx.opts.check) && quiet && !plan.steps.is_empty()) {
            return None;
        }
        self.state.facts.get(&probe.key).ok().cloned()
    }

    pub(super) fn register(&mut self, spec: &PreparedTask, mut results: Vec<Value>) {
        let Some(name) = &spec.task.register else {
            return;
        };
        if self.batch.registers.contains(name) || self.state.unknown_vars.contains_key(name) {
            return;
        }
        let value = if spec.looping.items.is_some() {
            loop_value(results)
        } else {
            results.pop().unwrap_or(Value::Null)
        };
        self.state.vars.registered.insert(name.clone(), value);
    }
}

/// What a task or item `when:` skipped registers, in Ansible's words,
/// with the condition that was false.
pub(super) fn skipped_by_when(templates: &Templates, instance: &TaskInstance) -> Value {
    let mut skipped =
        json!({"changed": false, "skipped": true, "skip_reason": "Conditional result was False"});
    let when = instance.spec.conditions.when.as_ref();
    if let Some(text) = when.and_then(|(cond, _)| templates.false_condition(cond, &instance.vars)) {
        skipped["false_condition"] = text.into();
    }
    skipped
}

/// What a loop registers: every item's result under `results`.
pub(super) fn loop_value(results: Vec<Value>) -> Value {
    if results.is_empty() {
        // As Ansible registers a loop over nothing: skipped.
        let why = "No items in the list";
        return json!({"changed": false, "skipped": true, "skip_reason": why,
            "skipped_reason": why, "results": []});
    }
    let changed = results.iter().any(|r| r["changed"] == json!(true));
    let failed = results.iter().any(|r| r["failed"] == json!(true));
    let mut value = json!({"results": [], "changed": changed});
    // As Ansible sums a loop's items up.
    if results.iter().all(|r| r["skipped"] == json!(true)) {
        value["skipped"] = json!(true);
        value["msg"] = json!("All items skipped");
    } else if failed {
        value["failed"] = json!(true);
        value["msg"] = json!("One or more items failed");
    } else {
        value["msg"] = json!("All items completed");
    }
    value["results"] = Value::Array(results);
    value
}

/// The steps a plan leaves to queue, and how their run is judged.
struct Queued {
    steps: Vec<String>,
    /// The result comes from the run (a command), not from the plan.
    is_command: bool,
    /// They run although the plan changes nothing (`Plan::upkeep`).
    upkeep: bool,
    /// The module's return values besides `changed` and `failed`.
    returns: serde_json::Map<String, Value>,
    /// They run as a job left running, whose result reads as this says.
    job: Option<How>,
    /// Their result says when they ran (`Plan::timed`).
    timed: bool,
    /// The run's inventory took a change of it (`group_by`, `add_host`).
    inventory_changed: bool,
}

/// Each step with the task's environment exported first: a step runs in
/// its own subshell, so the variables reach only this task's commands.
fn with_environment(env: &[(String, String)], steps: Vec<String>) -> Vec<String> {
    if env.is_empty() {
        return steps;
    }
    let exports: String = env
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", crate::base::shell::quote(v)))
        .collect();
    steps.into_iter().map(|s| format!("{exports}{s}")).collect()
}

/// Each step run as its task's user when the play's scripts run as
/// another (root, because some task of the play becomes someone else).
fn as_user(dropped: Option<(String, String)>, steps: Vec<String>) -> Vec<String> {
    let Some((_, who)) = dropped else {
        return steps;
    };
    steps
        .into_iter()
        .map(|s| crate::base::shell::as_user(&who, &s))
        .collect()
}

/// A task's steps bounded by its `timeout:` as a whole. They go through a
/// file rather than `sh -c`, as a step may carry a file larger than one
/// argument may be; `timeout` kills the steps' process group.
fn with_timeout(seconds: Option<u64>, steps: Vec<String>) -> Vec<String> {
    let Some(n) = seconds else {
        return steps;
    };
    let body = crate::exec::wire::chained(steps);
    vec![format!(
        "np_t=$(mktemp) && {}\
         timeout -k 5 {n} /bin/sh \"$np_t\" </dev/null\n\
         np_rc=$?; rm -f \"$np_t\"; (exit $np_rc)",
        crate::base::shell::here_document("cat > \"$np_t\"", &body)
    )]
}

/// Fire-and-forget: the steps start as a job of their own, with a record
/// `async_status` reads, ended after `seconds`. A module with nothing to
/// change still starts one, whose result is its plan's.
fn detached(seconds: Option<u64>, steps: Vec<String>, how: &How) -> Vec<String> {
    let body = match steps.is_empty() {
        true => ":".to_string(),
        false => crate::exec::wire::chained(steps),
    };
    let jid = async_job::new_jid();
    vec![async_job::launch(&jid, seconds.unwrap_or(1), &body, how)]
}

/// What a job's plan predicts is no longer known when later tasks plan:
/// the job may not have got there yet, so they read the host afresh.
fn unverified(effect: Effect) -> Effect {
    match effect {
        Effect::Predict(key, _) => Effect::Invalidate(key),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::{as_user, detached, with_environment, with_timeout, How};

    #[test]
    fn a_detached_task_runs_as_a_job_bounded_by_async() {
        let steps = detached(Some(9), vec!["sleep 2 && reboot".into()], &How::Output);
        assert_eq!(steps.len(), 1);
        assert!(steps[0].contains("sleep 2 && reboot"), "{}", steps[0]);
        assert!(steps[0].contains("timeout -k 5 9 /bin/sh"), "{}", steps[0]);
        assert!(steps[0].contains("/.ansible_async"), "{}", steps[0]);
    }

    #[test]
    fn a_timeout_bounds_all_of_a_tasks_steps_at_once() {
        let steps = with_timeout(Some(7), vec!["a".into(), "b".into()]);
        assert_eq!(steps.len(), 1);
        assert!(steps[0].contains("{\na\n} &&\n{\nb\n}"), "{}", steps[0]);
        assert!(steps[0].contains("timeout -k 5 7 /bin/sh"), "{}", steps[0]);
        assert_eq!(with_timeout(None, vec!["a".into()]), ["a"]);
    }

    #[test]
    fn steps_drop_to_their_task_user_when_the_script_runs_as_root() {
        let steps = vec!["echo a".to_string()];
        assert_eq!(as_user(None, steps.clone()), steps);
        let login = Some((
            "the login user".into(),
            "\"${SUDO_USER:-$(id -un)}\"".into(),
        ));
        let login = as_user(login, steps);
        assert!(
            login[0].starts_with("np_as=\"${SUDO_USER:-$(id -un)}\";"),
            "{}",
            login[0]
        );
        // The step is the dropped shell's input, never its argument.
        assert!(login[0].contains("/bin/sh -s"), "{}", login[0]);
        assert!(
            login[0].contains("\n{\necho a\n} </dev/null\n"),
            "{}",
            login[0]
        );
    }

    #[test]
    fn environment_is_exported_quoted_before_each_step() {
        let env = vec![(
            "HTTP_PROXY".to_string(),
            "http://p:3128 $(reboot)".to_string(),
        )];
        let steps = with_environment(&env, vec!["a".into(), "b".into()]);
        assert_eq!(steps[0], "export HTTP_PROXY='http://p:3128 $(reboot)'\na");
        assert_eq!(steps[1], "export HTTP_PROXY='http://p:3128 $(reboot)'\nb");
        assert_eq!(with_environment(&[], vec!["a".into()]), ["a"]);
    }
}
