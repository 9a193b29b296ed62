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

use std::collections::BTreeSet;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::instance::{Items, Resolution, Resolver, TaskInstance};
use super::prepared::{PlayCtx, PreparedTask};
use super::result::HostReport;
use super::vars::{Known, VarLayers};
use super::wire::Wire;
use crate::modules::{Module, ModuleError, ModuleKind};
use crate::remote::host_facts;
use crate::remote::Transport;

mod apply;
mod blocks;
mod delegated;
mod item_by_item;
mod meta;
mod plan;
mod probe_ahead;
mod reconnect;
mod run_once;
mod state;

use state::{Batch, HostState, Pending, ToVerify};

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
    once: &'a super::once::Once,
    host: String,
    wire: Wire<'a>,
    state: HostState,
    batch: Batch<'p>,
    blocks: blocks::Blocks,
    delegation: delegated::Delegation<'a>,
    built: super::built::Built,
}

impl<'a, 'p> HostRun<'a, 'p> {
    pub fn new(
        ctx: &'a PlayCtx<'p>,
        host: &str,
        vars: VarLayers,
        transport: &'a mut dyn Transport,
        once: &'a super::once::Once,
    ) -> Self {
        HostRun {
            ctx,
            once,
            host: host.to_string(),
            wire: Wire::new(transport, ctx.play.script_user())
                .with_become_flags(ctx.play.become_flags.clone()),
            state: HostState::new(vars, ctx.opts.diff),
            batch: Batch::default(),
            blocks: blocks::Blocks::default(),
            delegation: delegated::Delegation::default(),
            built: Default::default(),
        }
    }

    pub fn run(mut self) -> HostReport {
        let started = Instant::now();
        let prepared = self.ctx.prepared;
        if !self.ctx.play.gather_facts {
            self.read_host_files(Known::All);
        }
        self.run_list(&prepared.tasks.iter().collect::<Vec<_>>());
        self.run_handlers();
        self.flush();
        if (!self.state.stopped || self.state.ended) && !self.ctx.opts.check {
            self.verify();
        }
        if !self.state.stopped {
            self.run_list(&prepared.validate.iter().collect::<Vec<_>>());
            self.flush();
        }
        self.read_files_left_unread();
        // Ansible keeps what a host's tasks set for the rest of the run.
        if let Some(kept) = self.ctx.templates.kept() {
            kept.add(&self.host, &self.state.vars.registered);
        }
        let (delegated_trips, delegated_probes) = self.finish_delegates();
        let (round_trips, mut probes) = self.wire.finish();
        probes.extend(delegated_probes);
        let round_trips = round_trips + delegated_trips;
        let tasks = self.state.outcomes.into_results(&mut probes);
        HostReport {
            host: self.host,
            play: self.ctx.play.name.clone(),
            unreachable: self.state.unreachable,
            tasks,
            round_trips,
            duration_ms: started.elapsed().as_millis() as u64,
            probes,
        }
    }

    /// Handlers join the last batch of task steps; a handler notified by a
    /// command that only just ran gets another pass.
    fn run_handlers(&mut self) {
        let mut done = BTreeSet::new();
        while !self.state.stopped {
            let due: Vec<(usize, &'p PreparedTask<'p>)> = self
                .ctx
                .prepared
                .handlers
                .iter()
                .enumerate()
                .filter(|(i, h)| !done.contains(i) && self.is_notified(h))
                .collect();
            if due.is_empty() {
                if self.batch.pending.is_empty() {
                    break;
                }
                self.flush();
                continue;
            }
            done.extend(due.iter().map(|(i, _)| *i));
            self.run_list(&due.into_iter().map(|(_, h)| h).collect::<Vec<_>>());
        }
        // Run once per notification: `meta: flush_handlers` leaves nothing
        // for the end of the play.
        self.state.notified.clear();
    }

    fn is_notified(&self, handler: &PreparedTask) -> bool {
        let h = handler.task;
        self.state.notified.contains(&h.name)
            || h.listen.iter().any(|l| self.state.notified.contains(l))
    }

    /// Plans the tasks in order, running the pending steps only where a
    /// task needs their results; what is still pending at the end waits for
    /// the caller's flush, so later lists can join the same batch.
    fn run_list(&mut self, tasks: &[&'p PreparedTask<'p>]) {
        let mut pos = 0;
        let mut stalled = false;
        while pos < tasks.len() && !self.state.stopped {
            self.probe_ahead(&tasks[pos..]);
            let start = pos;
            let mut must_flush = false;
            while pos < tasks.len() && !self.state.stopped {
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
            let progressed = pos > start || !self.batch.pending.is_empty();
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
        // A failure still pending in a block is known only once it ran.
        if self.blocks.section.is_some() && !self.state.stopped {
            self.flush();
        }
        self.leave_blocks(None);
        self.blocks.section = None;
    }

    fn resolver(&self) -> Resolver<'_> {
        Resolver {
            ctx: self.ctx,
            vars: &self.state.vars,
            built: &self.built,
        }
    }

    /// Gathers, in one script, every probe the remaining tasks need that
    /// is not already known.
    fn probe_ahead(&mut self, tasks: &[&'p PreparedTask<'p>]) {
        let state = &mut self.state;
        let wanted =
            probe_ahead::wanted(self.ctx, &mut state.vars, &state.facts, &self.built, tasks);
        state.outcomes.secret_probes(wanted.secret);
        if wanted.probes.is_empty() {
            return;
        }
        self.batch.changed_since_probe = false;
        match self.wire.probe(wanted.probes.into_values().collect()) {
            Ok(results) => {
                if let Some(r) = results.get(host_facts::KEY) {
                    self.state.vars.facts = host_facts::parse(r);
                    if let Some(kept) = self.ctx.templates.kept() {
                        kept.facts(&self.host, &self.state.vars.facts);
                    }
                    self.read_host_files(Known::All);
                }
                self.state.facts.extend(results);
            }
            Err(e) => self.lost(e.to_string()),
        }
    }

    /// A play's `vars_files` are read even when no task needed them (no
    /// task, or none that gathered the facts they are named after): one that
    /// cannot be read fails the host rather than going unnoticed.
    fn read_files_left_unread(&mut self) {
        if self.state.vars.play_files.is_some() && !self.state.stopped {
            self.probe_ahead(&[]);
        }
        if self.state.outcomes.len() > 0 {
            return; // every task that ran failed with it already
        }
        if let Some(d) = self.state.vars_error.take() {
            self.state
                .outcomes
                .vars_files_failed(d.span.location(), d.message);
        }
    }

    fn read_host_files(&mut self, known: Known) {
        if let Err(d) = self.state.vars.read_host_files(self.ctx.templates, known) {
            self.state.vars_error = Some(d);
        }
    }

    /// A failed task stops the host in apply mode, as in Ansible, unless a
    /// block around it handles the failure; check mode changes nothing, so
    /// it goes on and reports every task.
    fn task_failed(&mut self, spec: &PreparedTask, result: usize, value: serde_json::Value) {
        if !self.caught(spec, result, value) && !self.ctx.opts.check {
            self.state.stopped = true;
        }
    }

    /// The task failed before its module ran (a template, a condition, a
    /// target that would not render): Ansible registers that failure too,
    /// so `ignore_errors` and a later `is failed` see it.
    fn fail(&mut self, spec: &PreparedTask, label: Option<String>, message: String) {
        self.fail_as(spec, label, message.clone(), message);
    }

    /// Fails the task with `message` in the report and `msg` registered.
    fn fail_as(
        &mut self,
        spec: &PreparedTask,
        label: Option<String>,
        message: String,
        msg: String,
    ) {
        let value = json!({"changed": false, "failed": true, "msg": msg});
        // Only an item has a label: a loop that does not render fails the
        // task itself, with no results.
        let registered = match (&spec.looping.items, &label) {
            (Some(_), Some(_)) => plan::loop_value(vec![value.clone()]),
            _ => value.clone(),
        };
        if let Some(name) = &spec.task.register {
            self.state.vars.registered.insert(name.clone(), registered);
        }
        if self.state.outcomes.fail(spec, label, message) {
            self.task_failed(spec, self.state.outcomes.len() - 1, value);
        }
    }

    fn lost(&mut self, why: String) {
        self.state.unreachable = Some(why);
        self.state.stopped = true;
    }

    fn plan_task(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        let frame = spec.task.frame.as_ref();
        if !blocks::same_section(frame, self.blocks.section.as_ref()) {
            // A failure must be known before the next section is chosen.
            if !self.batch.pending.is_empty() {
                return Next::FlushBefore;
            }
            self.leave_blocks(frame);
            self.blocks.section = frame.cloned();
        }
        if self.state.stopped || !spec.selected || !self.in_running_section(spec) {
            return Next::Continue;
        }
        if let Some(d) = &self.state.vars_error {
            let why = format!("{}: {}", d.span.location(), d.message);
            self.fail(spec, None, why);
            return Next::Continue;
        }
        if spec
            .referenced
            .iter()
            .any(|r| self.batch.registers.contains(r))
        {
            return Next::FlushBefore;
        }
        if self.reads_unknown(spec) {
            return Next::Continue;
        }
        match self.resolver().included(spec) {
            Ok(true) => {}
            Ok(false) => return Next::Continue,
            Err(e) => {
                self.fail(spec, None, e.to_string());
                return Next::Continue;
            }
        }
        // A retried, delegated, run-once or throttled task's steps go out
        // alone.
        let task = spec.task;
        let alone = spec.item_by_item()
            || task.delegate_to.is_some()
            || task.run_once
            || spec.throttle.is_some();
        if alone && !self.batch.pending.is_empty() {
            return Next::FlushBefore;
        }
        let next = match task.run_once {
            true => self.plan_once(spec),
            false => self.plan_resolved(spec),
        };
        match next {
            Next::Continue if spec.throttle.is_some() => Next::FlushAfter,
            next => next,
        }
    }

    /// Plans a task on this host once it is known to run here.
    fn plan_resolved(&mut self, spec: &'p PreparedTask<'p>) -> Next {
        if self.delegation.current.is_none() {
            match self.resolver().delegate_target(spec) {
                Ok(Some(target)) => return self.plan_delegated(spec, target),
                Ok(None) => {}
                Err(e) => {
                    self.fail(spec, None, e.to_string());
                    return Next::Continue;
                }
            }
        }
        if spec.item_by_item() {
            return self.plan_item_by_item(spec);
        }
        let mut instances = match self.resolve_all(spec) {
            Ok(instances) => instances,
            Err(next) => return next,
        };
        if spec.task.module.kind == ModuleKind::Control {
            return self.meta(instances);
        }
        if self.provided_by_pending(&instances) {
            return Next::FlushBefore;
        }
        // Loops over these are refused at load: one instance.
        if let [(_, Some(module))] = &instances[..] {
            if let Some(action) = module.connection_action() {
                let (instance, _) = instances.pop().expect("one instance");
                return self.reconnecting(instance, action);
            }
        }
        let mut next = Next::Continue;
        let mut loop_results = Vec::new();
        let mut result_at = Vec::new();
        let mut instances = std::collections::VecDeque::from(instances);
        while let Some((instance, module)) = instances.pop_front() {
            let reads = self.own_reads(spec);
            let item = self.loop_item(&instance);
            let at = self.state.outcomes.len();
            let (mut result, flush) = match module {
                None => {
                    self.state.outcomes.skipped(&instance);
                    (plan::skipped_by_when(self.ctx.templates, &instance), false)
                }
                Some(m) => self.plan_item(instance, m),
            };
            if flush {
                next = Next::FlushAfter;
            }
            if let (Some(keys), Value::Object(r)) = (item, &mut result) {
                r.extend(keys);
            }
            loop_results.push(result);
            result_at.push((self.state.outcomes.len() > at).then_some(at));
            if self.state.stopped {
                return Next::Continue;
            }
            if !instances.is_empty() && self.own_reads(spec) != reads {
                match self.items_after(spec, loop_results.len()) {
                    Ok(Some(rest)) => instances = rest.into(),
                    Ok(None) => {}
                    Err(next) => return next,
                }
            }
        }
        match &spec.task.register {
            // A looped command's items register once its steps ran.
            Some(name) if spec.looping.items.is_some() && self.batch.registers.contains(name) => {
                let items = result_at.into_iter().zip(loop_results).collect();
                self.batch.loops.push((name.clone(), items));
            }
            _ => self.register(spec, loop_results),
        }
        next
    }

    /// Check mode: a task reading what a command that did not run
    /// registered cannot be known either, nor can what it registers.
    fn reads_unknown(&mut self, spec: &PreparedTask) -> bool {
        let Some(message) = spec.referenced.iter().find_map(|r| {
            let (name, origin) = self.state.unknown_vars.get_key_value(r)?;
            Some(format!(
                "depends on '{name}', registered by '{origin}', which check mode does not run"
            ))
        }) else {
            return false;
        };
        self.unknown(spec, message);
        true
    }

    /// Check mode: the task's outcome is unknown, and so is what it
    /// registers, for the tasks that read it.
    fn unknown(&mut self, spec: &PreparedTask, message: String) {
        self.state.outcomes.unknown(spec, message);
        if let Some(reg) = &spec.task.register {
            self.state
                .unknown_vars
                .insert(reg.clone(), spec.name.clone());
        }
    }

    /// Whether every item of a task is skipped by its `when:` on what is
    /// known now; a condition that cannot be judged yet (it reads facts not
    /// gathered) is not known to skip.
    /// Apply mode: something a task needs is absent while steps of earlier
    /// tasks are still queued, which may be what provides it (a download
    /// before its install). Its answers are dropped, so they are asked
    /// again once those steps ran; absent then, it fails. These plans are
    /// a trial, kept for no instance: each item is planned again in turn,
    /// after the effects its earlier items predict.
    fn provided_by_pending(&mut self, instances: &Instances<'p>) -> bool {
        if self.batch.pending.is_empty() {
            return false;
        }
        let mut stale = Vec::new();
        for (instance, module) in instances {
            let Some(module) = module.as_ref().filter(|_| !instance.check) else {
                continue;
            };
            if let Err(ModuleError::Absent(_)) = module.plan(&self.state.facts) {
                stale.extend(module.probes().into_iter().map(|p| p.key));
            }
        }
        stale.iter().for_each(|k| self.state.facts.remove(k));
        !stale.is_empty()
    }

    /// Resolves every item of a task; stops at the first item that fails
    /// (the task is then done) or that needs the batch run first. A task
    /// that fails to render while steps are pending is rendered again once
    /// they ran, as Ansible would render it only then: what it reads may be
    /// theirs (a file a lookup reads on a host that is the controller).
    fn resolve_all(&mut self, spec: &'p PreparedTask<'p>) -> Result<Instances<'p>, Next> {
        let pending = !self.batch.pending.is_empty();
        let Items { list, contexts } = match self.resolver().items(spec) {
            Ok(items) => items,
            Err(_) if pending => return Err(Next::FlushBefore),
            Err(e) => {
                self.fail_as(spec, None, e.to_string(), e.registered());
                return Err(Next::Continue);
            }
        };
        let mut instances = Vec::new();
        for item in list {
            match self.resolver().resolve(spec, contexts.as_ref(), item) {
                Resolution::Failed { .. } if pending => return Err(Next::FlushBefore),
                Resolution::Failed { label, error } => {
                    self.fail_as(spec, label, error.to_string(), error.registered());
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
        if module.reads_everything()
            && (!self.batch.pending.is_empty() || self.batch.changed_since_probe)
        {
            let stale: Vec<String> = module
                .probes()
                .into_iter()
                .map(|p| p.key)
                .filter(|k| !self.state.facts.lasts(k))
                .collect();
            stale.iter().for_each(|k| self.state.facts.remove(k));
            return Err(Next::FlushBefore);
        }
        if module
            .probes()
            .iter()
            .all(|p| self.state.facts.contains(&p.key))
        {
            Ok(())
        } else {
            Err(Next::FlushBefore)
        }
    }

    /// What Ansible keeps of a looped instance in each of the loop's
    /// results: the loop variable and its item (`results[0].item`),
    /// `ansible_loop_var`, and with `loop_control`'s `index_var` the index
    /// and `ansible_index_var`, with `extended` `ansible_loop`.
    fn loop_item(&self, instance: &TaskInstance<'p>) -> Option<Map<String, Value>> {
        let task = instance.spec.task;
        instance.spec.looping.items.as_ref()?;
        let of = |name: &str| instance.vars.get(name).cloned().unwrap_or(Value::Null);
        let mut keys = Map::new();
        keys.insert(task.loop_var.clone(), of(&task.loop_var));
        keys.insert("ansible_loop_var".into(), json!(task.loop_var));
        if let Some(index) = &task.loop_extras.index_var {
            keys.insert(index.clone(), of(index));
            keys.insert("ansible_index_var".into(), json!(index));
        }
        if task.loop_extras.extended.is_some() {
            keys.insert("ansible_loop".into(), of("ansible_loop"));
        }
        Some(keys)
    }

    /// Notifies the task's handlers; a templated name is rendered in the
    /// instance's variables, and one that names no handler fails the task,
    /// as in Ansible.
    fn notify(&mut self, instance: &TaskInstance<'p>) {
        let spec = instance.spec;
        for (name, span) in &spec.task.notify {
            if !crate::template::is_templated(name) {
                self.state.notified.insert(name.clone());
                continue;
            }
            let at = span.location();
            let rendered = self.ctx.templates.render_str(name, &instance.vars);
            let handlers = &self.ctx.prepared.handlers;
            let why = match rendered {
                Ok(n)
                    if handlers
                        .iter()
                        .any(|h| h.task.name == n || h.task.listen.contains(&n)) =>
                {
                    self.state.notified.insert(n);
                    continue;
                }
                Ok(n) => format!("{at}: notify: no handler named '{n}' in this play"),
                Err(e) => format!("{at}: notify: {e}"),
            };
            self.fail(spec, instance.label.clone(), why);
        }
    }
}
