//! Schedule: one host through one play. Probe everything in one batch,
//! plan locally, apply the changes as one guarded script, verify with one
//! more probe.
//!
//! The batch is cut short only when correctness needs it: a task reads the
//! output of a command that has not run yet, a command ran (anything may
//! have changed), or a task's parameters could only be rendered after facts
//! were gathered. Rendering is the resolver's, talking to the host the
//! wire's, and every status the outcome's; this file only decides what
//! happens when.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{json, Value};

use super::instance::{Resolution, Resolver, TaskInstance};
use super::outcome::{Outcomes, Planned};
use super::prepared::PreparedTask;
use super::result::{HostReport, Status};
use super::vars::VarLayers;
use super::wire::{Step, Wire};
use super::PlayCtx;
use crate::modules::{Effect, Facts, Module, Plan};
use crate::remote::host_facts;
use crate::remote::probe::{Probe, ProbeResult};
use crate::remote::Transport;

/// A planned instance whose steps wait in the current batch.
struct Pending<'p> {
    result: usize,
    body: String,
    may_fail: bool,
    is_command: bool,
    instance: TaskInstance<'p>,
}

/// A changed instance to re-check after apply.
struct ToVerify {
    result: usize,
    module: Box<dyn Module>,
}

enum Next {
    /// Planned; go on with the next task.
    Continue,
    /// Run what is pending first, then plan this task again.
    FlushBefore,
    /// Planned; run what is pending before planning anything else.
    FlushAfter,
}

/// What resolving every item of a task gave: the instances to plan (no
/// module: `when:` is false).
type Instances<'p> = Vec<(TaskInstance<'p>, Option<Box<dyn Module>>)>;

pub(crate) struct HostRun<'a, 'p> {
    ctx: &'a PlayCtx<'p>,
    host: String,
    wire: Wire<'a>,
    vars: VarLayers,
    facts: Facts,
    outcomes: Outcomes,
    pending: Vec<Pending<'p>>,
    /// Registered names whose command is in `pending`.
    pending_registers: BTreeSet<String>,
    /// Check mode: registered names whose command did not run, and the
    /// task that registers each.
    unknown_vars: BTreeMap<String, String>,
    notified: BTreeSet<String>,
    to_verify: Vec<ToVerify>,
    /// A batch of changes ran since facts were last probed.
    changed_since_probe: bool,
    unreachable: Option<String>,
    stopped: bool,
}

impl<'a, 'p> HostRun<'a, 'p> {
    pub fn new(
        ctx: &'a PlayCtx<'p>,
        host: &str,
        vars: VarLayers,
        transport: &'a mut dyn Transport,
    ) -> Self {
        HostRun {
            ctx,
            host: host.to_string(),
            wire: Wire::new(transport, ctx.play.become_user.clone()),
            vars,
            facts: Facts::default(),
            outcomes: Outcomes::new(ctx.opts.diff),
            pending: Vec::new(),
            pending_registers: BTreeSet::new(),
            unknown_vars: BTreeMap::new(),
            notified: BTreeSet::new(),
            to_verify: Vec::new(),
            changed_since_probe: false,
            unreachable: None,
            stopped: false,
        }
    }

    pub fn run(mut self) -> HostReport {
        let started = Instant::now();
        let prepared = self.ctx.prepared;
        self.run_list(&prepared.tasks.iter().collect::<Vec<_>>());
        self.run_handlers();
        self.flush();
        if !self.stopped && !self.ctx.opts.check {
            self.verify();
        }
        if !self.stopped {
            self.run_list(&prepared.validate.iter().collect::<Vec<_>>());
            self.flush();
        }
        let (round_trips, probes) = self.wire.finish();
        HostReport {
            host: self.host,
            play: self.ctx.play.name.clone(),
            unreachable: self.unreachable,
            tasks: self.outcomes.into_results(),
            round_trips,
            duration_ms: started.elapsed().as_millis() as u64,
            probes,
        }
    }

    /// Handlers join the last batch of task steps; a handler notified by a
    /// command that only just ran gets another pass.
    fn run_handlers(&mut self) {
        let mut done = BTreeSet::new();
        while !self.stopped {
            let due: Vec<(usize, &'p PreparedTask<'p>)> = self
                .ctx
                .prepared
                .handlers
                .iter()
                .enumerate()
                .filter(|(i, h)| !done.contains(i) && self.is_notified(h))
                .collect();
            if due.is_empty() {
                if self.pending.is_empty() {
                    break;
                }
                self.flush();
                continue;
            }
            done.extend(due.iter().map(|(i, _)| *i));
            self.run_list(&due.into_iter().map(|(_, h)| h).collect::<Vec<_>>());
        }
    }

    fn is_notified(&self, handler: &PreparedTask) -> bool {
        let h = handler.task;
        self.notified.contains(&h.name) || h.listen.iter().any(|l| self.notified.contains(l))
    }

    /// Plans the tasks in order, running the pending steps only where a
    /// task needs their results; what is still pending at the end waits for
    /// the caller's flush, so later lists can join the same batch.
    fn run_list(&mut self, tasks: &[&'p PreparedTask<'p>]) {
        let mut pos = 0;
        let mut stalled = false;
        while pos < tasks.len() && !self.stopped {
            self.probe_ahead(&tasks[pos..]);
            let start = pos;
            let mut must_flush = false;
            while pos < tasks.len() && !self.stopped {
                match self.plan_task(tasks[pos]) {
                    Next::Continue => pos += 1,
                    Next::FlushBefore => must_flush = true,
                    Next::FlushAfter => {
                        pos += 1;
                        must_flush = true;
                    }
                }
                if must_flush {
                    break;
                }
            }
            let progressed = pos > start || !self.pending.is_empty();
            if must_flush {
                self.flush();
            }
            if progressed {
                stalled = false;
            } else if stalled {
                let why = "its probes could not be gathered";
                self.fail(tasks[pos], None, why.into());
                pos += 1;
            } else {
                stalled = true;
            }
        }
    }

    fn resolver(&self) -> Resolver<'_> {
        Resolver {
            ctx: self.ctx,
            vars: &self.vars,
        }
    }

    /// Gathers, in one script, every probe the remaining tasks need that
    /// is not already known.
    fn probe_ahead(&mut self, tasks: &[&'p PreparedTask<'p>]) {
        let mut wanted: BTreeMap<String, Probe> = BTreeMap::new();
        if self.ctx.play.gather_facts && !self.facts.contains(host_facts::KEY) {
            let p = host_facts::probe();
            wanted.insert(p.key.clone(), p);
        }
        let mut ahead = tasks.to_vec();
        // The first probe also asks what handlers and validations will need:
        // when nothing changes (a compliant host), that was the only trip.
        if self.wire.round_trips() == 0 {
            let prepared = self.ctx.prepared;
            ahead.extend(prepared.handlers.iter().chain(&prepared.validate));
        }
        for spec in ahead.into_iter().filter(|s| s.selected) {
            self.probes_wanted(spec, &mut wanted);
        }
        if wanted.is_empty() {
            return;
        }
        self.changed_since_probe = false;
        match self.wire.probe(wanted.into_values().collect()) {
            Ok(results) => {
                if let Some(r) = results.get(host_facts::KEY) {
                    self.vars.facts = host_facts::parse(r);
                }
                self.facts.extend(results);
            }
            Err(e) => self.lost(e.to_string()),
        }
    }

    /// The probes a task is likely to need that are not known yet.
    fn probes_wanted(&self, spec: &PreparedTask, wanted: &mut BTreeMap<String, Probe>) {
        let resolver = self.resolver();
        for item in resolver.items(spec).unwrap_or_default() {
            let Some(module) = resolver.guess(spec, item.as_ref()) else {
                continue;
            };
            let query = module
                .query_probe()
                .filter(|_| spec.may_query(self.ctx.opts.check));
            for p in module.probes().into_iter().chain(query) {
                if !self.facts.contains(&p.key) {
                    wanted.insert(p.key.clone(), p);
                }
            }
        }
    }

    /// A failed task stops the host in apply mode, as in Ansible; check mode
    /// changes nothing, so it goes on and reports every task.
    fn task_failed(&mut self) {
        if !self.ctx.opts.check {
            self.stopped = true;
        }
    }

    fn fail(&mut self, spec: &PreparedTask, label: Option<String>, message: String) {
        if self.outcomes.fail(spec, label, message) {
            self.task_failed();
        }
    }

    fn lost(&mut self, why: String) {
        self.unreachable = Some(why);
        self.stopped = true;
    }

    fn plan_task(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        if !spec.selected {
            return Next::Continue;
        }
        if spec
            .referenced
            .iter()
            .any(|r| self.pending_registers.contains(r))
        {
            return Next::FlushBefore;
        }
        if self.reads_unknown(spec) {
            return Next::Continue;
        }
        let instances = match self.resolve_all(spec) {
            Ok(instances) => instances,
            Err(next) => return next,
        };
        let mut next = Next::Continue;
        let mut loop_results = Vec::new();
        for (instance, module) in instances {
            let (result, flush) = match module {
                None => {
                    self.outcomes.skipped(&instance);
                    (json!({"changed": false, "skipped": true}), false)
                }
                Some(m) => self.plan_instance(instance, m),
            };
            if flush {
                next = Next::FlushAfter;
            }
            loop_results.push(result);
            if self.stopped {
                return Next::Continue;
            }
        }
        self.register(spec, loop_results);
        next
    }

    /// Check mode: a task reading what a command that did not run
    /// registered cannot be known either, nor can what it registers.
    fn reads_unknown(&mut self, spec: &PreparedTask) -> bool {
        let Some(message) = spec.referenced.iter().find_map(|r| {
            let (name, origin) = self.unknown_vars.get_key_value(r)?;
            Some(format!(
                "depends on '{name}', registered by '{origin}', which check mode does not run"
            ))
        }) else {
            return false;
        };
        self.outcomes.unknown(spec, message);
        if let Some(reg) = &spec.task.register {
            self.unknown_vars.insert(reg.clone(), spec.name.clone());
        }
        true
    }

    /// Resolves every item of a task; stops at the first item that fails
    /// (the task is then done) or that needs the batch run first.
    fn resolve_all(&mut self, spec: &'p PreparedTask<'p>) -> Result<Instances<'p>, Next> {
        let items = match self.resolver().items(spec) {
            Ok(items) => items,
            Err(e) => {
                self.fail(spec, None, e.to_string());
                return Err(Next::Continue);
            }
        };
        let mut instances = Vec::new();
        for item in items {
            match self.resolver().resolve(spec, item) {
                Resolution::Failed { label, error } => {
                    self.fail(spec, label, error.to_string());
                    return Err(Next::Continue);
                }
                Resolution::Skip(instance) => instances.push((instance, None)),
                Resolution::Run(instance, module) => {
                    self.ready_to_plan(module.as_ref())?;
                    instances.push((instance, Some(module)));
                }
            }
        }
        Ok(instances)
    }

    /// A module plans from known facts only; one that reads everything
    /// plans only after what is pending has run and been probed again.
    fn ready_to_plan(&mut self, module: &dyn Module) -> Result<(), Next> {
        if module.reads_everything() && (!self.pending.is_empty() || self.changed_since_probe) {
            module
                .probes()
                .iter()
                .for_each(|p| self.facts.remove(&p.key));
            return Err(Next::FlushBefore);
        }
        if module.probes().iter().all(|p| self.facts.contains(&p.key)) {
            Ok(())
        } else {
            Err(Next::FlushBefore)
        }
    }

    /// Plans one instance; returns its registered result and whether the
    /// batch must be run before planning anything else.
    fn plan_instance(
        &mut self,
        instance: TaskInstance<'p>,
        module: Box<dyn Module>,
    ) -> (Value, bool) {
        let started = Instant::now();
        let spec = instance.spec;
        let plan = match module.plan(&self.facts) {
            Ok(plan) => plan,
            Err(e) => {
                self.fail(spec, instance.label, e.to_string());
                let result = json!({"changed": false, "failed": true, "msg": e.to_string()});
                return (result, false);
            }
        };
        if let Some(r) = self.query_answer(spec, module.as_ref(), &plan) {
            let i = self.outcomes.answered(&instance);
            return (self.settle(instance, i, true, &r), false);
        }
        // A command marked `check_mode: false` runs even in check mode, as in Ansible.
        let check = spec.task.check_mode.unwrap_or(self.ctx.opts.check);
        let runs = !check || (module.is_command() && spec.task.check_mode == Some(false));
        let Plan {
            changes,
            steps,
            effects,
            unknown,
            notes,
        } = plan;
        let planned = Planned {
            changes,
            notes,
            unknown,
            runs,
        };
        let i = self.outcomes.planned(&instance, planned);
        let mut flush = self.predict(spec, effects, runs);
        let keys: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
        let observed_at = self.wire.newest_observation(&keys);
        flush |= self.track_command(spec, module.is_command(), runs, self.outcomes.status(i));
        let result = self.finish(instance, i, steps, module);
        let ms = started.elapsed().as_millis() as u64;
        self.outcomes.observed(i, keys, observed_at, ms);
        (result, flush)
    }

    /// Applies a plan's predicted effects to the facts, so later tasks plan
    /// against the state this one leaves; true when the batch must run
    /// before anything else is planned.
    fn predict(&mut self, spec: &PreparedTask, effects: Vec<Effect>, runs: bool) -> bool {
        let mut flush = false;
        for effect in effects {
            match effect {
                Effect::Predict(key, r) => self.facts.insert(key, r),
                Effect::Invalidate(key) if runs => self.facts.remove(&key),
                // `changed_when: false` declares a command read-only: later facts stay valid.
                Effect::InvalidateAll if runs && !spec.read_only => flush = true,
                _ => {}
            }
        }
        flush
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
        let (Some(reg), true) = (&task.register, is_command) else {
            return is_command && runs && task.failed_when.is_some();
        };
        if runs {
            self.pending_registers.insert(reg.clone());
        } else if status != Status::Ok {
            self.unknown_vars.insert(reg.clone(), spec.name.clone());
        }
        runs && task.failed_when.is_some()
    }

    /// Evaluates a module's `changed_when`/`failed_when` on its predicted
    /// result, notifies handlers, and queues the steps to run.
    fn finish(
        &mut self,
        instance: TaskInstance<'p>,
        i: usize,
        steps: Vec<String>,
        module: Box<dyn Module>,
    ) -> Value {
        let spec = instance.spec;
        let planned = self.outcomes.status(i);
        let is_command = module.is_command();
        let changed = matches!(planned, Status::Changed | Status::Drift);
        let mut result = json!({"changed": changed, "failed": false});
        if !is_command {
            let t = self.ctx.templates;
            match self.outcomes.conditions(t, &instance, i, &mut result) {
                Status::Failed => {
                    if !spec.task.ignore_errors {
                        self.task_failed();
                    }
                    return result;
                }
                Status::Changed | Status::Drift => self.notify(spec),
                _ => {}
            }
        }
        if planned == Status::Changed {
            if !is_command && self.outcomes.status(i) == Status::Changed {
                self.to_verify.push(ToVerify { result: i, module });
            }
            self.pending.push(Pending {
                result: i,
                body: join_steps(steps),
                may_fail: spec.task.ignore_errors || spec.failed_when.is_some(),
                is_command,
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
        let quiet = self.pending.is_empty() && !self.changed_since_probe;
        if !(spec.may_query(self.ctx.opts.check) && quiet && !plan.steps.is_empty()) {
            return None;
        }
        self.facts.get(&probe.key).ok().cloned()
    }

    fn notify(&mut self, spec: &PreparedTask) {
        self.notified
            .extend(spec.task.notify.iter().map(|(n, _)| n.clone()));
    }

    fn register(&mut self, spec: &PreparedTask, mut results: Vec<Value>) {
        let Some(name) = &spec.task.register else {
            return;
        };
        if self.pending_registers.contains(name) || self.unknown_vars.contains_key(name) {
            return;
        }
        let value = if spec.loop_items.is_some() {
            let changed = results.iter().any(|r| r["changed"] == json!(true));
            json!({"results": results, "changed": changed})
        } else {
            results.pop().unwrap_or(Value::Null)
        };
        self.vars.registered.insert(name.clone(), value);
    }

    /// Runs the pending steps as one script that stops at the first failure.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        let ran_command = pending
            .iter()
            .any(|p| p.is_command && !p.instance.spec.read_only);
        let steps = pending
            .iter_mut()
            .map(|p| Step {
                result: p.result,
                body: std::mem::take(&mut p.body),
                may_fail: p.may_fail,
            })
            .collect();
        let applied = self.wire.apply(steps);
        self.changed_since_probe = true;
        for p in pending {
            let Some(r) = applied.reports.get(&p.result) else {
                self.outcomes
                    .unfinished(p.result, &applied.ended, self.stopped);
                self.stopped = true;
                break;
            };
            self.settle(p.instance, p.result, p.is_command, r);
        }
        if let Err(e) = applied.ended {
            self.lost(e.to_string());
        }
        self.pending_registers.clear();
        if ran_command {
            self.forget_facts();
        }
    }

    /// A command ran, so anything may have changed; the gathered facts
    /// are kept.
    fn forget_facts(&mut self) {
        let gathered = self.facts.get(host_facts::KEY).ok().cloned();
        self.facts = Facts::default();
        if let Some(g) = gathered {
            self.facts.insert(host_facts::KEY.into(), g);
        }
    }

    /// Records what a step really did; for a command, returns its result.
    fn settle(
        &mut self,
        instance: TaskInstance<'p>,
        i: usize,
        is_command: bool,
        r: &ProbeResult,
    ) -> Value {
        self.outcomes.step_reported(i, r);
        let spec = instance.spec;
        let mut registered = Value::Null;
        if is_command {
            let mut result = command_result(r);
            let t = self.ctx.templates;
            if self.outcomes.conditions(t, &instance, i, &mut result) == Status::Changed {
                self.notify(spec);
            }
            if let Some(reg) = &spec.task.register {
                self.vars.registered.insert(reg.clone(), result.clone());
            }
            registered = result;
        }
        if self.outcomes.tolerated(spec, i) {
            self.task_failed();
        }
        registered
    }

    /// Re-probes what changed and re-plans it: anything still to change
    /// means the module did not converge.
    fn verify(&mut self) {
        let applied = std::mem::take(&mut self.to_verify);
        let checks: Vec<&ToVerify> = applied
            .iter()
            .filter(|a| self.outcomes.status(a.result) == Status::Changed)
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
            // (a file templated, then edited by lineinfile).
            let later: BTreeSet<&str> = checks[n + 1..]
                .iter()
                .flat_map(|l| self.outcomes.changes(l.result))
                .map(|c| c.subject.as_str())
                .collect();
            let problem = still_to_change(a.module.as_ref(), &facts, &later);
            if !problem.is_empty() {
                self.outcomes.did_not_converge(a.result, problem);
            }
        }
    }
}

/// What a module would still change on re-probed facts, leaving out what
/// later tasks changed again; empty when it converged.
fn still_to_change(module: &dyn Module, facts: &Facts, later: &BTreeSet<&str>) -> String {
    match module.plan(facts) {
        Ok(plan) => plan
            .changes
            .iter()
            .filter(|c| !later.contains(c.subject.as_str()))
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => e.to_string(),
    }
}

/// A command's registered result, as Ansible shapes it.
fn command_result(r: &ProbeResult) -> Value {
    json!({
        "rc": r.rc,
        "stdout": r.stdout.trim_end_matches('\n'),
        "stderr": r.stderr.trim_end_matches('\n'),
        "stdout_lines": r.stdout.lines().collect::<Vec<_>>(),
        "stderr_lines": r.stderr.lines().collect::<Vec<_>>(),
        "changed": true,
        "failed": r.rc != 0,
    })
}

/// The steps of one task as one guarded block, built in one buffer: a
/// step may carry a whole file.
fn join_steps(steps: Vec<String>) -> String {
    let mut body = String::with_capacity(steps.iter().map(|s| s.len() + 8).sum());
    for (n, step) in steps.into_iter().enumerate() {
        if n > 0 {
            body.push_str(" &&\n");
        }
        body.push_str("{\n");
        body.push_str(&step);
        body.push_str("\n}");
    }
    body
}
