//! One host through one play: probe everything in one batch, plan locally,
//! apply the changes as one guarded script, verify with one more probe.
//!
//! The batch is cut short only when correctness needs it: a task reads the
//! output of a command that has not run yet, a command ran (anything may
//! have changed), or a task's parameters could only be rendered after facts
//! were gathered.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{json, Value};

use super::result::{rfc3339, HostReport, Observation, Status, TaskResult};
use super::vars::{template_vars, Resolved, VarLayers};
use crate::load::playbook::{Play, Task};
use crate::modules::params::{BuildCtx, Sources};
use crate::modules::{Effect, Facts, Module, Params, Plan};
use crate::remote::host_facts;
use crate::remote::probe::{self, Probe, ProbeResult};
use crate::remote::{Output, Purpose, Script, Transport, TransportError};
use crate::template::{Templates, OMIT};

pub struct RunOptions {
    pub check: bool,
    /// Keep file diffs in the reports; without it they are dropped as soon
    /// as planned, since a fleet's worth of them would stay in memory.
    pub diff: bool,
    pub tags: Vec<String>,
    pub skip_tags: Vec<String>,
}

/// What a play needs that is the same for every host.
pub struct PlayCtx<'a> {
    pub play: &'a Play,
    pub templates: &'a Templates,
    /// Renders undefined values as empty, to guess probes early.
    pub lenient: &'a Templates,
    pub search_dirs: &'a [std::path::PathBuf],
    pub sources: &'a Sources,
    pub opts: &'a RunOptions,
}

/// A planned task instance whose steps wait in the current batch.
struct Pending<'p> {
    result: usize,
    body: String,
    may_fail: bool,
    is_command: bool,
    task: &'p Task,
    ctx: Value,
}

/// A changed instance to re-check after apply.
struct Applied {
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

pub struct HostRun<'a, 'p> {
    ctx: &'a PlayCtx<'p>,
    host: String,
    transport: &'a mut dyn Transport,
    vars: VarLayers,
    facts: Facts,
    results: Vec<TaskResult>,
    pending: Vec<Pending<'p>>,
    /// Registered names whose command is in `pending`.
    pending_registers: BTreeSet<String>,
    /// Check mode: registered names whose command did not run.
    unknown_vars: BTreeMap<String, String>,
    notified: BTreeSet<String>,
    applied: Vec<Applied>,
    round_trips: usize,
    /// A batch of changes ran since facts were last probed.
    changed_since_probe: bool,
    unreachable: Option<String>,
    stopped: bool,
    token: String,
    probes: Vec<Observation>,
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
            transport,
            vars,
            facts: Facts::default(),
            results: Vec::new(),
            pending: Vec::new(),
            pending_registers: BTreeSet::new(),
            unknown_vars: BTreeMap::new(),
            notified: BTreeSet::new(),
            applied: Vec::new(),
            round_trips: 0,
            changed_since_probe: false,
            unreachable: None,
            stopped: false,
            token: new_token(),
            probes: Vec::new(),
        }
    }

    pub fn run(mut self) -> HostReport {
        let started = Instant::now();
        let play = self.ctx.play;
        self.run_list(&play.tasks.iter().collect::<Vec<_>>());
        self.run_handlers();
        self.flush();
        if !self.stopped && !self.ctx.opts.check {
            self.verify();
        }
        if !self.stopped {
            self.run_list(&play.validate.iter().collect::<Vec<_>>());
            self.flush();
        }
        HostReport {
            host: self.host,
            play: play.name.clone(),
            unreachable: self.unreachable,
            tasks: self.results,
            round_trips: self.round_trips,
            duration_ms: started.elapsed().as_millis() as u64,
            probes: self.probes,
        }
    }

    /// Handlers join the last batch of task steps; a handler notified by a
    /// command that only just ran gets another pass.
    fn run_handlers(&mut self) {
        let mut done = BTreeSet::new();
        while !self.stopped {
            let due: Vec<(usize, &'p Task)> = self
                .ctx
                .play
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

    fn is_notified(&self, handler: &Task) -> bool {
        self.notified.contains(&handler.name)
            || handler.listen.iter().any(|l| self.notified.contains(l))
    }

    /// Plans the tasks in order, running the pending steps only where a
    /// task needs their results; what is still pending at the end waits for
    /// the caller's flush, so later lists can join the same batch.
    fn run_list(&mut self, tasks: &[&'p Task]) {
        let mut pos = 0;
        let mut stalled = false;
        while pos < tasks.len() && !self.stopped {
            self.probe_ahead(&tasks[pos..]);
            let start = pos;
            let mut must_flush = false;
            while pos < tasks.len() && !self.stopped {
                match self.plan_task(tasks[pos]) {
                    Next::Continue => pos += 1,
                    Next::FlushBefore => {
                        must_flush = true;
                        break;
                    }
                    Next::FlushAfter => {
                        pos += 1;
                        must_flush = true;
                        break;
                    }
                }
            }
            let progressed = pos > start || !self.pending.is_empty();
            if must_flush {
                self.flush();
            }
            if progressed {
                stalled = false;
            } else if stalled {
                self.fail_task(tasks[pos], None, "its probes could not be gathered".into());
                pos += 1;
            } else {
                stalled = true;
            }
        }
    }

    fn selected(&self, task: &Task) -> bool {
        let opts = self.ctx.opts;
        let tags: BTreeSet<&str> = task
            .tags
            .iter()
            .chain(&self.ctx.play.tags)
            .map(String::as_str)
            .collect();
        if opts.skip_tags.iter().any(|t| tags.contains(t.as_str())) {
            return false;
        }
        if opts.tags.is_empty() || opts.tags.iter().any(|t| t == "all") {
            return !tags.contains("never");
        }
        tags.contains("always") || opts.tags.iter().any(|t| tags.contains(t.as_str()))
    }

    fn resolved(&self, task: &Task, item: Option<&Value>) -> Resolved {
        let no_defaults = serde_json::Map::new();
        let defaults = task.role.as_ref().map_or(&no_defaults, |r| &r.defaults);
        self.vars.context(
            self.ctx.templates,
            defaults,
            &task.vars,
            item.map(|i| (task.loop_var.as_str(), i)),
        )
    }

    /// The context a task renders in; an error when the task reads a
    /// variable that could not be rendered (a cycle, an undefined
    /// reference, a value over the size limit).
    fn context(&self, task: &Task, item: Option<&Value>) -> Result<Value, String> {
        let r = self.resolved(task, item);
        let refs = self.referenced(task);
        match r.broken.iter().find(|(name, _)| refs.contains(*name)) {
            None => Ok(r.vars),
            Some((name, why)) => {
                let at = [&task.vars_node, &self.ctx.play.vars_node]
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_map())
                    .flatten()
                    .find(|(k, _)| k.as_str() == Some(name))
                    .map(|(k, _)| format!(" ({})", k.span.location()))
                    .unwrap_or_default();
                Err(format!("variable '{name}'{at} cannot be rendered: {why}"))
            }
        }
    }

    /// Names a task's templates and conditions read.
    fn referenced(&self, task: &Task) -> BTreeSet<String> {
        let t = self.ctx.templates;
        let mut names = BTreeSet::new();
        for node in task
            .params
            .iter()
            .map(|(_, n)| n)
            .chain(task.loop_items.iter())
        {
            template_vars(t, &node.to_json(), &mut names);
        }
        for cond in [&task.when, &task.changed_when, &task.failed_when]
            .into_iter()
            .flatten()
        {
            collect_condition_vars(t, &cond.to_json(), &mut names);
        }
        names
    }

    /// Loop items, or one pass with no item.
    fn items(&self, task: &Task) -> Result<Vec<Option<Value>>, String> {
        let Some(node) = &task.loop_items else {
            return Ok(vec![None]);
        };
        let ctx = self.context(task, None)?;
        match self.ctx.templates.render_value(&node.to_json(), &ctx) {
            Ok(Value::Array(items)) => Ok(items.into_iter().map(Some).collect()),
            Ok(other) => Err(format!("loop must be a list, got {other}")),
            Err(e) => Err(format!("cannot render loop: {e}")),
        }
    }

    /// Builds the module for one instance, or explains why not.
    fn build(&self, task: &Task, ctx: &Value) -> Result<Box<dyn Module>, String> {
        self.build_with(self.ctx.templates, task, ctx)
    }

    fn build_with(
        &self,
        t: &Templates,
        task: &Task,
        ctx: &Value,
    ) -> Result<Box<dyn Module>, String> {
        let mut entries = Vec::new();
        for (name, node) in &task.params {
            let value = t
                .render_value(&node.to_json(), ctx)
                .map_err(|e| format!("{}: parameter '{name}': {e}", node.span.location()))?;
            if value != Value::String(OMIT.into()) {
                entries.push((name.clone(), value, node.span.clone()));
            }
        }
        let search_dirs = task.search_dirs(self.ctx.search_dirs);
        let bctx = BuildCtx {
            templates: t,
            vars: ctx,
            search_dirs: &search_dirs,
            sources: self.ctx.sources,
        };
        let params = Params::new(task.module.name, task.module_span.clone(), entries, &bctx);
        (task.module.build)(&params).map_err(|e| e.to_diagnostic().to_string())
    }

    /// Gathers, in one script, every probe the remaining tasks need that
    /// is not already known.
    fn probe_ahead(&mut self, tasks: &[&'p Task]) {
        let mut wanted: BTreeMap<String, Probe> = BTreeMap::new();
        if self.ctx.play.gather_facts && !self.facts.contains(host_facts::KEY) {
            let p = host_facts::probe();
            wanted.insert(p.key.clone(), p);
        }
        let mut ahead: Vec<&Task> = tasks.to_vec();
        // The first probe also asks what handlers and validations will need:
        // when nothing changes (a compliant host), that was the only trip.
        if self.round_trips == 0 {
            let play = self.ctx.play;
            ahead.extend(play.handlers.iter().chain(&play.validate));
        }
        // Variables that set_fact and include_vars will set are guessed
        // along, so the tasks after them probe the right paths.
        let registered = self.vars.registered.clone();
        let ahead: Vec<&Task> = ahead.into_iter().filter(|t| self.selected(t)).collect();
        for task in ahead {
            for item in self.items(task).unwrap_or_default() {
                // A guess: a variable that cannot be rendered yet is left
                // out and fails the task when it is planned.
                let ctx = self.resolved(task, item.as_ref()).vars;
                // A task whose values are not known yet (a registered result)
                // usually still reads the same path: probe it now, leniently.
                let module = self
                    .build(task, &ctx)
                    .or_else(|_| self.build_with(self.ctx.lenient, task, &ctx));
                if let Ok(module) = module {
                    if let (true, Ok(plan)) = (module.probes().is_empty(), module.plan(&self.facts))
                    {
                        self.vars.registered.extend(plan.sets);
                    }
                    let query = module.query_probe().filter(|_| self.may_query(task));
                    for p in module.probes().into_iter().chain(query) {
                        if !self.facts.contains(&p.key) {
                            wanted.insert(p.key.clone(), p);
                        }
                    }
                }
            }
        }
        self.vars.registered = registered;
        if wanted.is_empty() {
            return;
        }
        self.changed_since_probe = false;
        if let Some(results) = self.probe(wanted.into_values().collect()) {
            if let Some(r) = results.get(host_facts::KEY) {
                self.vars.facts = host_facts::parse(r);
            }
            self.facts.extend(results);
        }
    }

    fn may_query(&self, task: &Task) -> bool {
        declared_read_only(task) && (!self.ctx.opts.check || task.check_mode == Some(false))
    }

    /// Sends probes; on failure the host is marked unreachable.
    fn probe(&mut self, probes: Vec<Probe>) -> Option<BTreeMap<String, ProbeResult>> {
        let units: Vec<(String, String)> = probes.into_iter().map(|p| (p.key, p.script)).collect();
        let ids: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
        let observed_at = rfc3339(std::time::SystemTime::now());
        self.probes
            .extend(units.iter().map(|(key, command)| Observation {
                key: key.clone(),
                command: command.clone(),
                observed_at: observed_at.clone(),
            }));
        let script = Script {
            purpose: Purpose::Probe,
            body: probe::build_script(&self.token, &units, false, &[]),
            become_user: self.ctx.play.become_user.clone(),
        };
        self.round_trips += 1;
        match self.transport.run(&script) {
            Ok(out) => match probe::parse_frames(&self.token, &out.stdout, &ids) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.lost(format!(
                        "probe output unreadable ({}): {}",
                        e.0,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                    None
                }
            },
            Err(e) => {
                self.lost(e.to_string());
                None
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

    fn lost(&mut self, why: String) {
        self.unreachable = Some(why);
        self.stopped = true;
    }

    fn push_result(&mut self, task: &Task, item: Option<&Value>, status: Status) -> usize {
        let label = item.map(|i| match (&task.loop_label, i) {
            (Some(l), _) => {
                let text = l.scalar_text().unwrap_or_default();
                self.ctx
                    .templates
                    .render_str(&text, &self.resolved(task, Some(i)).vars)
                    .unwrap_or(text)
            }
            (None, Value::String(s)) => s.clone(),
            (None, other) => other.to_string(),
        });
        self.results.push(TaskResult {
            task: display_name(task),
            module: task.module.name,
            location: task.location(),
            tags: task
                .tags
                .iter()
                .chain(&self.ctx.play.tags)
                .cloned()
                .collect(),
            item: label,
            status,
            changes: Vec::new(),
            notes: Vec::new(),
            message: None,
            ignored: false,
            duration_ms: 0,
            observed_by: Vec::new(),
            observed_at: None,
        });
        self.results.len() - 1
    }

    fn fail_task(&mut self, task: &Task, item: Option<&Value>, message: String) {
        let i = self.push_result(task, item, Status::Failed);
        self.results[i].message = Some(message);
        if task.ignore_errors {
            self.results[i].ignored = true;
        } else {
            self.task_failed();
        }
    }

    fn plan_task(&mut self, task: &'p Task) -> Next {
        if !self.selected(task) {
            return Next::Continue;
        }
        let refs = self.referenced(task);
        if refs.iter().any(|r| self.pending_registers.contains(r)) {
            return Next::FlushBefore;
        }
        let unknown = refs
            .iter()
            .find_map(|r| self.unknown_vars.get_key_value(r))
            .map(|(n, o)| (n.clone(), o.clone()));
        if let Some((name, origin)) = unknown {
            let i = self.push_result(task, None, Status::Unknown);
            self.results[i].message = Some(format!(
                "depends on '{name}', registered by '{origin}', which check mode does not run"
            ));
            if let Some(reg) = &task.register {
                self.unknown_vars.insert(reg.clone(), display_name(task));
            }
            return Next::Continue;
        }
        let items = match self.items(task) {
            Ok(items) => items,
            Err(msg) => {
                self.fail_task(task, None, msg);
                return Next::Continue;
            }
        };
        let mut planned = Vec::new();
        for item in items {
            let ctx = match self.context(task, item.as_ref()) {
                Ok(ctx) => ctx,
                Err(msg) => {
                    self.fail_task(task, item.as_ref(), msg);
                    return Next::Continue;
                }
            };
            match self.when_holds(task, &ctx) {
                Ok(true) => {}
                Ok(false) => {
                    planned.push((item, ctx, None));
                    continue;
                }
                Err(msg) => {
                    self.fail_task(task, item.as_ref(), msg);
                    return Next::Continue;
                }
            }
            match self.build(task, &ctx) {
                Ok(m)
                    if m.reads_everything()
                        && (!self.pending.is_empty() || self.changed_since_probe) =>
                {
                    m.probes().iter().for_each(|p| self.facts.remove(&p.key));
                    return Next::FlushBefore;
                }
                Ok(m) if m.probes().iter().all(|p| self.facts.contains(&p.key)) => {
                    planned.push((item, ctx, Some(m)))
                }
                Ok(_) => return Next::FlushBefore,
                Err(msg) => {
                    self.fail_task(task, item.as_ref(), msg);
                    return Next::Continue;
                }
            }
        }
        let mut next = Next::Continue;
        let mut loop_results = Vec::new();
        for (item, ctx, module) in planned {
            let (result, flush) = match module {
                None => {
                    self.push_result(task, item.as_ref(), Status::Skipped);
                    (json!({"changed": false, "skipped": true}), false)
                }
                Some(m) => self.plan_instance(task, item.as_ref(), ctx, m),
            };
            if flush {
                next = Next::FlushAfter;
            }
            loop_results.push(result);
            if self.stopped {
                return Next::Continue;
            }
        }
        self.register(task, loop_results);
        next
    }

    fn when_holds(&self, task: &Task, ctx: &Value) -> Result<bool, String> {
        match &task.when {
            None => Ok(true),
            Some(cond) => self
                .ctx
                .templates
                .eval_condition(&cond.to_json(), ctx)
                .map_err(|e| format!("{}: when: {e}", cond.span.location())),
        }
    }

    /// Plans one instance; returns its registered result and whether the
    /// batch must be run before planning anything else.
    fn plan_instance(
        &mut self,
        task: &'p Task,
        item: Option<&Value>,
        ctx: Value,
        module: Box<dyn Module>,
    ) -> (Value, bool) {
        let started = Instant::now();
        let mut plan = match module.plan(&self.facts) {
            Ok(plan) => plan,
            Err(e) => {
                self.fail_task(task, item, e.to_string());
                return (
                    json!({"changed": false, "failed": true, "msg": e.to_string()}),
                    false,
                );
            }
        };
        if let Some(r) = self.query_answer(task, module.as_ref(), &plan) {
            let i = self.push_result(task, item, Status::Changed);
            let p = Pending {
                result: i,
                body: String::new(),
                may_fail: false,
                is_command: true,
                task,
                ctx,
            };
            return (self.settle(task, p, &r), false);
        }
        // A command marked `check_mode: false` runs even in check mode, as in Ansible.
        let check = task.check_mode.unwrap_or(self.ctx.opts.check);
        let runs = !check || (module.is_command() && task.check_mode == Some(false));
        // Variables a task sets (set_fact) are there for the next task.
        self.vars.registered.extend(std::mem::take(&mut plan.sets));
        let returns = std::mem::take(&mut plan.returns);
        let (i, steps, mut flush) = self.record(task, item, plan, runs);
        self.note_observations(i, module.as_ref());
        flush |= self.track_command(task, module.is_command(), runs, self.results[i].status);
        let mut result = self.finish(task, i, steps, module, ctx);
        if let Value::Object(r) = &mut result {
            r.extend(returns);
        }
        self.results[i].duration_ms = started.elapsed().as_millis() as u64;
        (result, flush)
    }

    /// Which probes a result was planned from, and when the newest of them
    /// was read; a fact predicted by an earlier task has no probe of its own.
    fn note_observations(&mut self, i: usize, module: &dyn Module) {
        let keys: Vec<String> = module.probes().into_iter().map(|p| p.key).collect();
        let newest = self
            .probes
            .iter()
            .rev()
            .find(|o| keys.contains(&o.key))
            .map(|o| o.observed_at.clone());
        self.results[i].observed_by = keys;
        self.results[i].observed_at = newest;
    }

    /// Records a plan as the instance's result and applies its predicted
    /// effects; returns the result index, the steps, and whether the batch
    /// must run before anything else is planned.
    fn record(
        &mut self,
        task: &Task,
        item: Option<&Value>,
        plan: Plan,
        runs: bool,
    ) -> (usize, Vec<String>, bool) {
        let Plan {
            changes,
            steps,
            effects,
            unknown,
            notes,
            ..
        } = plan;
        let status = match (changes.is_empty(), runs, &unknown) {
            (true, _, _) => Status::Ok,
            (false, true, _) => Status::Changed,
            (false, false, Some(_)) => Status::Unknown,
            (false, false, None) => Status::Drift,
        };
        let i = self.push_result(task, item, status);
        self.results[i].changes = changes;
        if !self.ctx.opts.diff {
            self.results[i]
                .changes
                .iter_mut()
                .for_each(|c| c.diff = None);
        }
        self.results[i].notes = notes;
        if status == Status::Unknown {
            self.results[i].message = unknown;
        }
        let mut flush = false;
        for effect in effects {
            match effect {
                Effect::Predict(key, r) => self.facts.insert(key, r),
                Effect::Invalidate(key) if runs => self.facts.remove(&key),
                // `changed_when: false` declares a command read-only: later facts stay valid.
                Effect::InvalidateAll if runs && !declared_read_only(task) => flush = true,
                _ => {}
            }
        }
        (i, steps, flush)
    }

    /// Where a command's result will come from; true when the batch must
    /// run right after it (its `failed_when` decides whether to go on).
    fn track_command(&mut self, task: &Task, is_command: bool, runs: bool, status: Status) -> bool {
        let (Some(reg), true) = (&task.register, is_command) else {
            return is_command && runs && task.failed_when.is_some();
        };
        if runs {
            self.pending_registers.insert(reg.clone());
        } else if status != Status::Ok {
            self.unknown_vars.insert(reg.clone(), display_name(task));
        }
        runs && task.failed_when.is_some()
    }

    /// Evaluates a module's `changed_when`/`failed_when` on its predicted
    /// result, notifies handlers, and queues the steps to run.
    fn finish(
        &mut self,
        task: &'p Task,
        i: usize,
        steps: Vec<String>,
        module: Box<dyn Module>,
        ctx: Value,
    ) -> Value {
        let planned = self.results[i].status;
        let is_command = module.is_command();
        let mut result =
            json!({"changed": matches!(planned, Status::Changed | Status::Drift), "failed": false});
        if !is_command {
            let cctx = ctx_for_conditions(&ctx, &result);
            let status = self.apply_conditions(task, i, &mut result, &cctx);
            if status == Status::Failed {
                if !task.ignore_errors {
                    self.task_failed();
                }
                return result;
            }
            if matches!(status, Status::Changed | Status::Drift) {
                self.notify(task);
            }
        }
        if planned == Status::Changed {
            let body = join_steps(steps);
            let may_fail = task.ignore_errors || task.failed_when.is_some();
            self.pending.push(Pending {
                result: i,
                body,
                may_fail,
                is_command,
                task,
                ctx,
            });
            if !is_command && self.results[i].status == Status::Changed {
                self.applied.push(Applied { result: i, module });
            }
        }
        result
    }

    /// A declared query (a command with `changed_when: false`; in check
    /// mode also `check_mode: false`) rides in the probe batch; its early
    /// answer stands when nothing changed on the host since that probe.
    fn query_answer(&self, task: &Task, module: &dyn Module, plan: &Plan) -> Option<ProbeResult> {
        let probe = module.query_probe()?;
        let quiet = self.pending.is_empty() && !self.changed_since_probe;
        if !(self.may_query(task) && quiet && !plan.steps.is_empty()) {
            return None;
        }
        self.facts.get(&probe.key).ok().cloned()
    }

    /// `changed_when` / `failed_when`, evaluated with the task's result bound
    /// to its `register` name (and as `result`), as Ansible does.
    fn apply_conditions(
        &mut self,
        task: &Task,
        i: usize,
        result: &mut Value,
        ctx: &Value,
    ) -> Status {
        let t = self.ctx.templates;
        let mut ctx = ctx.clone();
        if let (Some(reg), Some(obj)) = (&task.register, ctx.as_object_mut()) {
            obj.insert(reg.clone(), result.clone());
        }
        if let Some(cond) = &task.changed_when {
            match t.eval_condition(&cond.to_json(), &ctx) {
                Ok(changed) => {
                    result["changed"] = json!(changed);
                    if !changed && matches!(self.results[i].status, Status::Changed | Status::Drift)
                    {
                        self.results[i].status = Status::Ok;
                    }
                }
                Err(e) => self.mark_failed(i, format!("changed_when: {e}")),
            }
        }
        if let Some(cond) = &task.failed_when {
            match t.eval_condition(&cond.to_json(), &ctx) {
                Ok(true) => self.mark_failed(i, "failed_when condition is true".into()),
                Ok(false) if self.results[i].status == Status::Failed => {
                    self.results[i].status = if result["changed"] == json!(true) {
                        Status::Changed
                    } else {
                        Status::Ok
                    };
                }
                Ok(false) => {}
                Err(e) => self.mark_failed(i, format!("failed_when: {e}")),
            }
        }
        if self.results[i].status == Status::Failed {
            result["failed"] = json!(true);
            self.results[i].ignored = task.ignore_errors;
        }
        self.results[i].status
    }

    fn mark_failed(&mut self, i: usize, message: String) {
        self.results[i].status = Status::Failed;
        self.results[i].message = Some(message);
    }

    fn notify(&mut self, task: &Task) {
        self.notified
            .extend(task.notify.iter().map(|(n, _)| n.clone()));
    }

    fn register(&mut self, task: &Task, mut results: Vec<Value>) {
        let Some(name) = &task.register else {
            return;
        };
        if self.pending_registers.contains(name) || self.unknown_vars.contains_key(name) {
            return;
        }
        let value = if task.loop_items.is_some() {
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
        let ids: Vec<String> = pending.iter().map(|p| format!("t{}", p.result)).collect();
        let size = pending.iter().map(|p| p.body.len()).sum();
        let mut body = probe::ScriptBuilder::new(&self.token, true, size);
        for (p, id) in pending.iter_mut().zip(&ids) {
            // Each body (it may hold whole files) is freed once it is in
            // the script.
            body.unit(id, &std::mem::take(&mut p.body), p.may_fail);
        }
        let script = Script {
            purpose: Purpose::Mutate,
            body: body.finish(),
            become_user: self.ctx.play.become_user.clone(),
        };
        self.round_trips += 1;
        let ended = self.transport.run(&script);
        let stdout = match &ended {
            Ok(out) => &out.stdout[..],
            Err(TransportError::Interrupted { stdout, .. }) => &stdout[..],
            Err(_) => &[],
        };
        // Only a step whose report arrived whole is known to have finished.
        let frames = probe::complete_frames(&self.token, stdout, &ids);
        let ran_command = pending
            .iter()
            .any(|p| p.is_command && !declared_read_only(p.task));
        self.changed_since_probe = true;
        for p in pending {
            let Some(r) = frames.get(&format!("t{}", p.result)) else {
                self.unfinished(p.result, &ended);
                break;
            };
            self.settle(p.task, p, r);
        }
        if let Err(e) = ended {
            self.lost(e.to_string());
        }
        self.pending_registers.clear();
        if ran_command {
            let keep = self.facts.get(host_facts::KEY).ok().cloned();
            self.facts = Facts::default();
            if let Some(k) = keep {
                self.facts.insert(host_facts::KEY.into(), k);
            }
        }
    }

    /// The first step without a report. After a failed step it simply never
    /// ran; otherwise the script ended or the host was lost before it
    /// reported, and its result says so instead of the planned `changed`.
    /// Steps planned after it never ran and are not reported.
    fn unfinished(&mut self, i: usize, ended: &Result<Output, TransportError>) {
        let mut keep = i;
        if !self.stopped {
            let (status, message) = match ended {
                Ok(out) => (
                    Status::Failed,
                    format!(
                        "the apply script ended before this step reported: {}",
                        step_failure(&ProbeResult {
                            rc: out.status,
                            stdout: String::new(),
                            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                        })
                    ),
                ),
                Err(e @ TransportError::Interrupted { .. }) => (
                    Status::Unreachable,
                    format!("the connection was lost while this step ran, so it may have taken effect in part: {e}"),
                ),
                Err(e @ TransportError::Unreachable(_)) => (Status::Unreachable, format!("not run: {e}")),
                Err(e) => (Status::Failed, format!("not run: {e}")),
            };
            self.results[i].status = status;
            self.results[i].message = Some(message);
            keep += 1;
        }
        self.results.truncate(keep);
        self.stopped = true;
    }

    /// Records what a step really did; for a command, returns its result.
    fn settle(&mut self, task: &Task, p: Pending<'p>, r: &ProbeResult) -> Value {
        let i = p.result;
        let mut registered = Value::Null;
        if r.rc != 0 {
            self.results[i].status = Status::Failed;
            self.results[i].message = Some(step_failure(r));
        }
        if p.is_command {
            let mut result = json!({
                "rc": r.rc, "stdout": r.stdout.trim_end_matches('\n'), "stderr": r.stderr.trim_end_matches('\n'),
                "stdout_lines": r.stdout.lines().collect::<Vec<_>>(), "stderr_lines": r.stderr.lines().collect::<Vec<_>>(),
                "changed": true, "failed": r.rc != 0,
            });
            let ctx = ctx_for_conditions(&p.ctx, &result);
            let status = self.apply_conditions(task, i, &mut result, &ctx);
            if status == Status::Changed {
                self.notify(task);
            }
            if let Some(reg) = &task.register {
                self.vars.registered.insert(reg.clone(), result.clone());
            }
            registered = result;
        }
        if self.results[i].status == Status::Failed {
            if task.ignore_errors {
                self.results[i].ignored = true;
            } else {
                self.task_failed();
            }
        }
        registered
    }

    /// Re-probes what changed and re-plans it: anything still to change
    /// means the module did not converge.
    fn verify(&mut self) {
        let applied = std::mem::take(&mut self.applied);
        let checks: Vec<&Applied> = applied
            .iter()
            .filter(|a| self.results[a.result].status == Status::Changed)
            .collect();
        if checks.is_empty() {
            return;
        }
        let probes: BTreeMap<String, Probe> = checks
            .iter()
            .flat_map(|a| a.module.probes())
            .map(|p| (p.key.clone(), p))
            .collect();
        let Some(results) = self.probe(probes.into_values().collect()) else {
            return;
        };
        let facts = Facts::new(results);
        for (n, a) in checks.iter().enumerate() {
            // What a later task changed again is judged by that task alone
            // (a file templated, then edited by lineinfile).
            let later: BTreeSet<&str> = checks[n + 1..]
                .iter()
                .flat_map(|l| {
                    self.results[l.result]
                        .changes
                        .iter()
                        .map(|c| c.subject.as_str())
                })
                .collect();
            let problem = match a.module.plan(&facts) {
                Ok(plan) => plan
                    .changes
                    .iter()
                    .filter(|c| !later.contains(c.subject.as_str()))
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
                Err(e) => e.to_string(),
            };
            if !problem.is_empty() {
                self.mark_failed(a.result, format!("did not converge after apply: {problem}"));
            }
        }
    }
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

fn declared_read_only(task: &Task) -> bool {
    task.changed_when
        .as_ref()
        .is_some_and(|c| c.value == crate::load::yaml::Value::Bool(false))
}

fn ctx_for_conditions(ctx: &Value, result: &Value) -> Value {
    let mut ctx = ctx.clone();
    if let Some(obj) = ctx.as_object_mut() {
        obj.insert("result".into(), result.clone());
    }
    ctx
}

fn collect_condition_vars(t: &Templates, v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => out.extend(t.expression_vars(s)),
        Value::Array(a) => a.iter().for_each(|x| collect_condition_vars(t, x, out)),
        _ => {}
    }
}

fn display_name(task: &Task) -> String {
    if task.name.is_empty() {
        task.module.name.to_string()
    } else {
        task.name.clone()
    }
}

/// The last lines of stderr (or stdout) of a failed step, one line.
fn step_failure(r: &ProbeResult) -> String {
    let text = if r.stderr.trim().is_empty() {
        &r.stdout
    } else {
        &r.stderr
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    format!(
        "exit status {}: {}",
        r.rc,
        if tail.is_empty() {
            "no output".into()
        } else {
            tail
        }
    )
}

fn new_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos, std::process::id())
}
