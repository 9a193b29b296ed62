//! Outcome: the one place that decides what a task's [`Status`] is, from
//! its plan, its `changed_when`/`failed_when`, what its step reported, and
//! how the apply script ended.
//!
//! Kept apart so that a result is written by one owner: the schedule asks
//! for a verdict and reads it back, and never sets a status itself.

use serde_json::{json, Map, Value};

use super::instance::TaskInstance;
use super::prepared::PreparedTask;
use super::result::{Evidence, ForTheRun, Observation, Status, TaskId, TaskResult};
use crate::base::shell::keyed_digest;
use crate::modules::{Change, Effect, Plan};
use crate::remote::probe::ProbeResult;
use crate::remote::{Output, TransportError};
use crate::template::Templates;

/// The results of one host's tasks, in the order they were planned.
pub(crate) struct Outcomes {
    results: Vec<TaskResult>,
    /// Keep file diffs (dropped as soon as planned otherwise).
    diff: bool,
    /// Results of `no_log` tasks, whose values no report may show.
    hidden: std::collections::BTreeSet<usize>,
    /// Probes a `no_log` task asked for: their keys and commands may quote
    /// its values (a command's text, a URL's token).
    secret_probes: std::collections::BTreeSet<String>,
}

/// What a report shows in place of a `no_log` task's values.
pub(crate) const HIDDEN: &str = "(hidden by no_log)";

/// What a plan says, before conditions are applied.
pub(crate) struct Planned {
    pub changes: Vec<Change>,
    pub notes: Vec<String>,
    pub unknown: Option<String>,
    /// Its steps will run (apply mode, or a command that runs in check mode).
    pub runs: bool,
    pub for_run: ForTheRun,
}

impl Planned {
    /// What of a plan its outcome reads, apart from its steps and effects;
    /// `returns` are what the task registers (custom stats among them).
    pub fn split(
        plan: Plan,
        returns: &serde_json::Map<String, Value>,
        runs: bool,
    ) -> (Planned, Vec<String>, Vec<Effect>) {
        let Plan {
            changes,
            steps,
            effects,
            unknown,
            notes,
            ..
        } = plan;
        let for_run = ForTheRun {
            stats: returns.get("ansible_stats").cloned(),
        };
        let planned = Planned {
            changes,
            notes,
            unknown,
            runs,
            for_run,
        };
        (planned, steps, effects)
    }
}

/// One attempt of a task with `until:`, to judge.
pub(crate) struct Retried<'a> {
    pub until: &'a Value,
    /// The instance's variables, which the condition reads besides its result.
    pub vars: &'a Value,
    pub register: Option<&'a str>,
    pub attempt: u32,
    /// No attempt is left after this one.
    pub last: bool,
}

impl Outcomes {
    pub fn new(diff: bool) -> Self {
        Outcomes {
            results: Vec::new(),
            diff,
            hidden: Default::default(),
            secret_probes: Default::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.results.len()
    }

    /// Drops the results from `i` on: an attempt that is tried again.
    pub fn forget_from(&mut self, i: usize) {
        self.results.truncate(i);
        self.hidden.retain(|&h| h < i);
    }

    /// `until:` on an attempt's result: false to try again, true when the
    /// item is done (see `item_done`). An attempt
    /// that planned no run (check mode's drift) is not judged: nothing ran
    /// that could meet the condition.
    pub fn retried(
        &mut self,
        t: &Templates,
        i: usize,
        attempt: &Retried,
        result: &mut Value,
    ) -> bool {
        let status = self.status(i);
        let judged = matches!(status, Status::Ok | Status::Changed | Status::Failed);
        let mut ctx = attempt.vars.clone();
        if let Some(obj) = ctx.as_object_mut() {
            obj.insert("result".into(), result.clone());
            if let Some(reg) = attempt.register {
                obj.insert(reg.into(), result.clone());
            }
        }
        let met = match t.eval_condition(attempt.until, &ctx) {
            Ok(met) => met || !judged,
            Err(e) => {
                self.mark_failed(i, format!("until: {e}"));
                true
            }
        };
        if !met && !attempt.last {
            return false;
        }
        let n = attempt.attempt;
        if n > 1 {
            self.results[i].notes.push(format!("{n} attempts"));
        }
        // Out of attempts fails the task, unless its `failed_when` judged
        // the last one not failed (ansible-core 2.19 and later).
        let overruled = result["failed_when_result"] == json!(false);
        if !met && !overruled {
            let why = match &self.results[i].message {
                Some(m) => format!("until: still false after {n} attempt(s); last: {m}"),
                None => format!("until: still false after {n} attempt(s)"),
            };
            self.mark_failed(i, why);
            result["failed"] = json!(true);
        }
        true
    }

    /// An item run on its own, with failures tolerated, is over: true when
    /// its failure stops the host after all, under the task's own
    /// `ignore_errors`.
    pub fn item_done(&mut self, i: usize, ignore_errors: bool) -> bool {
        self.results[i].ignored = false;
        self.tolerated(ignore_errors, i)
    }

    /// `break_when` could not be judged on an item that ran: the item
    /// fails, with why.
    pub fn break_when_failed(&mut self, i: usize, why: String) {
        self.mark_failed(i, why);
    }

    /// Done by the schedule, not by a step on this host (`meta:`, a
    /// `run_once` task another host ran), with what happened.
    pub fn noted(&mut self, spec: &PreparedTask, status: Status, note: String) {
        let i = self.push(spec, None, status);
        self.results[i].notes.push(note);
    }

    /// The task was not run on this host, for the reason given.
    pub fn skipped_because(&mut self, instance: &TaskInstance, message: String) {
        let i = self.push(instance.spec, instance.label.clone(), Status::Skipped);
        self.results[i].message = Some(message);
    }

    /// Failed and not ignored.
    pub fn failed_for_good(&self, i: usize) -> bool {
        self.status(i) == Status::Failed && !self.results[i].ignored
    }

    pub fn message(&self, i: usize) -> Option<&str> {
        self.results[i].message.as_deref()
    }

    /// A block's `rescue:` went through after this failure: it no longer
    /// fails the host, as in Ansible.
    pub fn rescued(&mut self, i: usize) {
        if let Some(r) = self.results.get_mut(i) {
            r.ignored = true;
            r.notes.push("rescued".into());
        }
    }

    /// Whether an earlier task of this host drifted (check mode).
    pub fn drifted(&self) -> bool {
        self.results.iter().any(|r| r.status == Status::Drift)
    }

    pub fn status(&self, i: usize) -> Status {
        self.results[i].status
    }

    pub fn changes(&self, i: usize) -> &[Change] {
        &self.results[i].changes
    }

    /// Keys of probes a `no_log` task asked for, in planning ahead or in
    /// planning (a declared query is answered from its probe).
    pub fn secret_probes(&mut self, keys: impl IntoIterator<Item = String>) {
        self.secret_probes.extend(keys);
    }

    /// The results, with every value of a `no_log` task hidden: the
    /// change's subject, before and after, diffs, evidence, notes, message and item;
    /// and every probe such a task asked for hidden in `probes` and in the
    /// results that name it, under a key that quotes neither its key nor
    /// its command.
    pub fn into_results(mut self, probes: &mut [Observation]) -> Vec<TaskResult> {
        let mut secret = std::mem::take(&mut self.secret_probes);
        for &i in &self.hidden {
            secret.extend(self.results[i].evidence.observed_by.iter().cloned());
        }
        let hide = |key: &mut String| {
            if secret.contains(key.as_str()) {
                *key = format!("{HIDDEN} {}", keyed_digest(key));
            }
        };
        // A script that answered a secret probe answered every probe joined
        // with it, and quotes them all.
        let secret_commands: std::collections::BTreeSet<String> = probes
            .iter()
            .filter(|p| secret.contains(&p.key))
            .map(|p| p.command.clone())
            .collect();
        for p in probes.iter_mut() {
            if secret_commands.contains(&p.command) {
                p.command = HIDDEN.to_string();
            }
            if secret.contains(&p.key) {
                hide(&mut p.key);
            }
        }
        for r in &mut self.results {
            r.evidence.observed_by.iter_mut().for_each(hide);
        }
        for &i in &self.hidden {
            let r = &mut self.results[i];
            for c in &mut r.changes {
                // A path or a name may be the secret itself.
                c.subject = HIDDEN.to_string();
                c.before = c.before.as_ref().map(|_| HIDDEN.to_string());
                c.after = c.after.as_ref().map(|_| HIDDEN.to_string());
                c.diff = None;
                c.evidence = None;
            }
            r.notes.iter_mut().for_each(|n| *n = HIDDEN.to_string());
            r.message = r.message.as_ref().map(|_| HIDDEN.to_string());
            r.id.item = r.id.item.as_ref().map(|_| HIDDEN.to_string());
        }
        self.results
    }

    fn push(&mut self, spec: &PreparedTask, label: Option<String>, status: Status) -> usize {
        if spec.task.no_log {
            self.hidden.insert(self.results.len());
        }
        let (task, module) = (spec.name.clone(), spec.task.module.name);
        self.record(
            task,
            module,
            spec.task.location(),
            spec.tags.clone(),
            label,
            status,
        )
    }

    /// The play's `vars_files` could not be read for the host, and no task
    /// ran to fail with it: the failure is the play's own.
    pub fn vars_files_failed(&mut self, location: String, message: String) {
        let i = self.record(
            "vars_files".into(),
            "vars_files",
            location,
            Vec::new(),
            None,
            Status::Failed,
        );
        self.results[i].message = Some(message);
    }

    fn record(
        &mut self,
        task: String,
        module: &'static str,
        location: String,
        tags: Vec<String>,
        item: Option<String>,
        status: Status,
    ) -> usize {
        let id = TaskId {
            task,
            module,
            location,
            tags,
            item,
        };
        self.results.push(TaskResult::new(id, status));
        self.results.len() - 1
    }

    /// The task fails on this item; true when that stops the host (the
    /// failure is not ignored).
    pub fn fail(&mut self, spec: &PreparedTask, label: Option<String>, message: String) -> bool {
        let i = self.push(spec, label, Status::Failed);
        self.results[i].message = Some(message);
        self.tolerated(spec.task.ignore_errors, i)
    }

    /// The module could not plan: a failed result, which the task's
    /// `failed_when` judges as Ansible judges a module's failure. Returns
    /// the result's index and the value to register.
    pub fn plan_failed(
        &mut self,
        t: &Templates,
        instance: &TaskInstance,
        (message, returns): (String, Map<String, Value>),
    ) -> (usize, Value) {
        let i = self.push(instance.spec, instance.label.clone(), Status::Failed);
        self.results[i].message = Some(message.clone());
        let mut result = Value::Object(returns);
        result["failed"] = json!(true);
        result["msg"] = json!(message);
        if result.get("changed").is_none() {
            result["changed"] = json!(false);
        }
        self.overrule(t, instance, i, &mut result);
        (i, result)
    }

    /// A step of a module (not a command, whose output is its result)
    /// failed: its `failed_when` may still clear the failure.
    pub fn step_failed(&mut self, t: &Templates, instance: &TaskInstance, i: usize) {
        let msg = self.message(i).unwrap_or_default().to_string();
        let mut result = json!({"changed": false, "failed": true, "msg": msg});
        self.overrule(t, instance, i, &mut result);
    }

    fn overrule(&mut self, t: &Templates, instance: &TaskInstance, i: usize, result: &mut Value) {
        if instance.spec.conditions.failed.is_some() && self.status(i) == Status::Failed {
            self.conditions(t, instance, i, result);
            result["failed"] = json!(self.status(i) == Status::Failed);
        }
    }

    /// Check mode: the task reads what a command that did not run registered.
    pub fn unknown(&mut self, spec: &PreparedTask, message: String) {
        let i = self.push(spec, None, Status::Unknown);
        self.results[i].message = Some(message);
    }

    pub fn skipped(&mut self, instance: &TaskInstance) {
        self.push(instance.spec, instance.label.clone(), Status::Skipped);
    }

    /// A declared query answered from the probe batch: it ran as a command.
    pub fn answered(&mut self, instance: &TaskInstance) -> usize {
        self.push(instance.spec, instance.label.clone(), Status::Changed)
    }

    /// Records a plan as the instance's result.
    pub fn planned(&mut self, instance: &TaskInstance, plan: Planned) -> usize {
        let status = match (plan.changes.is_empty(), plan.runs, &plan.unknown) {
            (true, _, _) => Status::Ok,
            (false, true, _) => Status::Changed,
            (false, false, Some(_)) => Status::Unknown,
            (false, false, None) => Status::Drift,
        };
        let i = self.push(instance.spec, instance.label.clone(), status);
        let r = &mut self.results[i];
        r.changes = plan.changes;
        if !instance.spec.task.diff.unwrap_or(self.diff) {
            r.changes.iter_mut().for_each(|c| c.diff = None);
        }
        r.notes = plan.notes;
        r.for_run = plan.for_run;
        if status == Status::Unknown {
            r.message = plan.unknown;
        }
        i
    }

    /// A result changed what is not the host (the run's inventory): no
    /// step runs for it.
    pub fn changed_without_steps(&mut self, i: usize) {
        if self.results[i].status == Status::Ok {
            self.results[i].status = Status::Changed;
        }
    }

    /// Which probes a result was planned from, when the newest was read,
    /// and how long planning took.
    pub fn observed(&mut self, i: usize, keys: Vec<String>, at: Option<String>, ms: u64) {
        let r = &mut self.results[i];
        r.evidence = Evidence {
            observed_by: keys,
            observed_at: at,
        };
        r.duration_ms = ms;
    }

    /// `changed_when` / `failed_when`, evaluated with the task's result bound
    /// to its `register` name (and as `result`), as Ansible does; updates
    /// `result` and returns the status they leave.
    pub fn conditions(
        &mut self,
        t: &Templates,
        instance: &TaskInstance,
        i: usize,
        result: &mut Value,
    ) -> Status {
        let spec = instance.spec;
        // A result that says it changed nothing (Ansible's own module run
        // for real) is ok, whatever its plan predicted.
        if result["changed"] == json!(false) && self.status(i) == Status::Changed {
            self.results[i].status = Status::Ok;
            self.results[i].changes.clear();
        }
        let ctx = condition_context(instance, result);
        // A `changed_when` that cannot be evaluated fails the task before
        // `failed_when` is read, as in Ansible.
        let mut unjudged = false;
        if let Some(cond) = &spec.conditions.changed {
            match t.eval_condition(cond, &ctx) {
                Ok(changed) => {
                    result["changed"] = json!(changed);
                    if !changed && matches!(self.status(i), Status::Changed | Status::Drift) {
                        self.results[i].status = Status::Ok;
                    }
                }
                Err(e) => {
                    // Ansible keeps why in the result, under the condition's name.
                    result["changed_when_result"] = json!(e.to_string());
                    unjudged = true;
                    self.mark_failed(i, format!("changed_when: {e}"))
                }
            }
        }
        if let (Some(cond), false) = (&spec.conditions.failed, unjudged) {
            let judged = t.eval_condition(cond, &ctx);
            // Ansible keeps the verdict in the result.
            if let Ok(verdict) = judged {
                result["failed_when_result"] = json!(verdict);
            }
            match judged {
                Ok(true) => self.mark_failed(i, "failed_when condition is true".into()),
                Ok(false) if self.status(i) == Status::Failed => {
                    self.results[i].status = if result["changed"] == json!(true) {
                        Status::Changed
                    } else {
                        Status::Ok
                    };
                }
                Ok(false) => {}
                Err(e) => {
                    result["failed_when_result"] = json!(e.to_string());
                    self.mark_failed(i, format!("failed_when: {e}"))
                }
            }
        }
        if self.status(i) == Status::Failed {
            result["failed"] = json!(true);
            self.results[i].ignored = instance.ignore_errors;
        }
        self.status(i)
    }

    /// A step's report arrived: a non-zero exit fails it; `timeout`'s own
    /// exit statuses (124, or 137 once it had to kill) under a task's
    /// `timeout:` say so.
    pub fn step_reported(&mut self, i: usize, r: &ProbeResult, timeout: Option<u64>) {
        match (r.rc, timed_out(r, timeout)) {
            (0, _) => {}
            (_, Some(n)) => self.mark_failed(i, timeout_message(n)),
            _ => self.mark_failed(i, step_failure(r)),
        }
    }

    /// True when the result failed in a way that stops the host; an
    /// ignored failure is marked so.
    pub fn tolerated(&mut self, ignore_errors: bool, i: usize) -> bool {
        if self.status(i) != Status::Failed {
            return false;
        }
        if ignore_errors {
            self.results[i].ignored = true;
            return false;
        }
        true
    }

    /// The first step without a report. After a failed step (`stopped`) it
    /// simply never ran and is dropped; otherwise the script ended or the
    /// host was lost before it reported, and its result says so instead of
    /// the planned `changed`. Steps planned after it never ran and are
    /// dropped too.
    pub fn unfinished(&mut self, i: usize, ended: &Result<Output, TransportError>, stopped: bool) {
        if stopped {
            self.results.truncate(i);
            return;
        }
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
        self.results.truncate(i + 1);
    }

    /// Verify found changes still to make after apply.
    pub fn did_not_converge(&mut self, i: usize, problem: String) {
        self.mark_failed(i, format!("did not converge after apply: {problem}"));
    }

    fn mark_failed(&mut self, i: usize, message: String) {
        self.results[i].status = Status::Failed;
        self.results[i].message = Some(message);
    }
}

/// The instance's variables with its result bound as `result` and under
/// its `register` name.
/// The seconds of the task's `timeout:` when its step ran out of them:
/// `timeout`'s own exit statuses, 124, or 137 once it had to kill.
pub fn timed_out(r: &ProbeResult, timeout: Option<u64>) -> Option<u64> {
    timeout.filter(|_| matches!(r.rc, 124 | 137))
}

/// As Ansible words it.
pub fn timeout_message(seconds: u64) -> String {
    let s = if seconds == 1 { "" } else { "s" };
    format!("Timed out after {seconds} second{s}")
}

fn condition_context(instance: &TaskInstance, result: &Value) -> Value {
    let mut ctx = instance.vars.clone();
    let mut result = result.clone();
    // A retried task's conditions see which attempt this is, as Ansible's.
    if let (Some(r), Value::Object(m)) = (&instance.retry, &mut result) {
        m.entry("attempts").or_insert(json!(r.attempt));
    }
    if let Some(obj) = ctx.as_object_mut() {
        if let Some(reg) = &instance.spec.task.register {
            obj.insert(reg.clone(), result.clone());
        }
        obj.insert("result".into(), result);
    }
    ctx
}

/// The last lines of stderr (or stdout) of a failed step, one line; the
/// `msg` of a step that printed only an Ansible module's JSON result.
fn step_failure(r: &ProbeResult) -> String {
    // A module's JSON result says its own message; the rest of it (the
    // arguments it echoes among them) never reaches a report.
    if let Ok(result) = crate::modules::kit::ansible::module_result(r) {
        return match result.get("msg") {
            Some(Value::String(msg)) => msg.clone(),
            _ => format!("exit status {}: the module failed without a message", r.rc),
        };
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::prepared::{testing, PreparedPlay, RunOptions};

    /// Runs `f` on the outcomes of the one task of a play, resolved with
    /// no variables.
    fn with_task(task: &str, diff: bool, f: impl FnOnce(&mut Outcomes, &TaskInstance)) {
        let (_dir, pb) = testing::tasks(&[task]);
        let opts = RunOptions {
            check: false,
            diff,
            tags: Vec::new(),
            skip_tags: Vec::new(),
            ansible_managed: None,
        };
        let prepared = PreparedPlay::new(&pb.plays[0], &Templates::new(), &opts);
        let instance = TaskInstance {
            spec: &prepared.tasks[0],
            label: None,
            vars: json!({}),
            ignore_errors: prepared.tasks[0].task.ignore_errors,
            check: false,
            timeout: None,
            retry: None,
            environment: Vec::new(),
            user: None,
        };
        f(&mut Outcomes::new(diff), &instance);
    }

    fn planned(changes: usize, runs: bool, unknown: Option<&str>) -> Planned {
        let mut change = Change::new("/etc/f", None, Some("x".into()));
        change.diff = Some("+x".into());
        Planned {
            changes: vec![change; changes],
            notes: Vec::new(),
            unknown: unknown.map(String::from),
            runs,
            for_run: ForTheRun::default(),
        }
    }

    #[test]
    fn a_plan_gives_ok_changed_unknown_or_drift() {
        with_task("{command: 'true'}", false, |o, inst| {
            let statuses: Vec<Status> = [
                planned(0, true, None),
                planned(1, true, None),
                planned(1, false, Some("needs a command")),
                planned(1, false, None),
            ]
            .into_iter()
            .map(|p| {
                let i = o.planned(inst, p);
                o.status(i)
            })
            .collect();
            use Status::*;
            assert_eq!(statuses, [Ok, Changed, Unknown, Drift]);
            let results = std::mem::replace(o, Outcomes::new(false)).into_results(&mut []);
            assert_eq!(results[2].message.as_deref(), Some("needs a command"));
            assert_eq!(
                results[1].changes[0].diff, None,
                "diffs only when asked for"
            );
        });
        with_task("{command: 'true'}", true, |o, inst| {
            let i = o.planned(inst, planned(1, true, None));
            assert_eq!(o.changes(i)[0].diff.as_deref(), Some("+x"));
        });
    }

    #[test]
    fn a_tasks_diff_keyword_overrules_the_runs() {
        let kept = |task: &str, run: bool| {
            let mut kept = false;
            with_task(task, run, |o, inst| {
                let i = o.planned(inst, planned(1, true, None));
                kept = o.changes(i)[0].diff.is_some();
            });
            kept
        };
        assert!(kept("{command: 'true', diff: true}", false));
        assert!(!kept("{command: 'true', diff: false}", true));
        assert!(kept("{command: 'true'}", true));
    }

    /// The status a command's step leaves, given its exit status.
    fn command_status(task: &str, rc: i32) -> (Status, Value, Option<String>) {
        let mut out = None;
        with_task(task, false, |o, inst| {
            let i = o.planned(inst, planned(1, true, None));
            let r = ProbeResult {
                rc,
                stdout: String::new(),
                stderr: "boom\n".into(),
            };
            o.step_reported(i, &r, None);
            let mut result = json!({"rc": rc, "changed": true, "failed": rc != 0});
            let status = o.conditions(&Templates::new(), inst, i, &mut result);
            let message = o.results[i].message.clone();
            out = Some((status, result, message));
        });
        out.unwrap()
    }

    #[test]
    fn conditions_see_the_result_under_its_register_name_and_as_result() {
        let task = "{command: x, register: out, changed_when: 'out.rc == 7', failed_when: 'result.rc > 7'}";
        assert_eq!(command_status(task, 7).0, Status::Changed);
        let (status, result, _) = command_status(task, 0);
        assert_eq!((status, &result["changed"]), (Status::Ok, &json!(false)));
        let (status, result, message) = command_status(task, 9);
        assert_eq!(status, Status::Failed);
        assert_eq!(result["failed"], json!(true));
        assert_eq!(message.as_deref(), Some("failed_when condition is true"));
    }

    #[test]
    fn a_condition_that_cannot_be_evaluated_fails_the_task_and_says_why_in_its_result() {
        let task = "{command: x, changed_when: boomboomboom, failed_when: false}";
        let (status, result, message) = command_status(task, 0);
        assert_eq!(status, Status::Failed);
        assert_eq!(result["failed"], json!(true));
        let why = result["changed_when_result"].as_str().unwrap();
        assert!(why.contains("boomboomboom"), "{why}");
        assert!(message.unwrap().starts_with("changed_when: "));
        // failed_when is not read after it.
        assert!(result.get("failed_when_result").is_none(), "{result}");
        let (status, result, _) = command_status("{command: x, failed_when: nosuch}", 0);
        assert_eq!(status, Status::Failed);
        assert!(result["failed_when_result"]
            .as_str()
            .unwrap()
            .contains("nosuch"));
    }

    #[test]
    fn a_failed_step_fails_unless_failed_when_says_otherwise() {
        let (status, _, message) = command_status("{command: x}", 3);
        assert_eq!(status, Status::Failed);
        assert_eq!(message.as_deref(), Some("exit status 3: boom"));
        let (status, _, _) = command_status("{command: x, failed_when: false}", 3);
        assert_eq!(status, Status::Changed);
    }

    #[test]
    fn a_module_failure_planning_or_in_its_step_yields_to_failed_when() {
        let t = Templates::new();
        with_task(
            "{file: {path: /x, mode: '0600'}, failed_when: false}",
            false,
            |o, inst| {
                let (i, result) = o.plan_failed(&t, inst, ("/x does not exist".into(), Map::new()));
                assert_eq!(o.status(i), Status::Ok);
                assert_eq!(
                    result,
                    json!({"changed": false, "failed": false, "msg": "/x does not exist",
                        "failed_when_result": false})
                );
                let i = o.planned(inst, planned(1, true, None));
                let r = ProbeResult {
                    rc: 1,
                    stdout: String::new(),
                    stderr: "chmod: Operation not permitted\n".into(),
                };
                o.step_reported(i, &r, None);
                o.step_failed(&t, inst, i);
                assert_eq!(o.status(i), Status::Ok);
            },
        );
        let judged = "{file: {path: /x, mode: '0600'}, failed_when: \"'denied' in result.msg\"}";
        with_task(judged, false, |o, inst| {
            let (i, result) = o.plan_failed(&t, inst, ("chmod: denied".into(), Map::new()));
            assert_eq!(o.status(i), Status::Failed);
            assert_eq!(result["failed"], json!(true));
        });
        with_task("{file: {path: /x, mode: '0600'}}", false, |o, inst| {
            let (i, _) = o.plan_failed(&t, inst, ("/x does not exist".into(), Map::new()));
            assert_eq!(o.status(i), Status::Failed);
        });
    }

    #[test]
    fn probes_a_no_log_task_asked_for_are_hidden_under_one_key() {
        with_task("{command: echo s3cr3t, no_log: true}", false, |o, inst| {
            let i = o.answered(inst);
            o.secret_probes(["query:echo s3cr3t".to_string()]);
            o.observed(
                i,
                vec!["query:echo s3cr3t".into(), "file:/etc".into()],
                None,
                0,
            );
            let probe = |key: &str| Observation {
                key: key.into(),
                command: format!("{key} command"),
                observed_at: String::new(),
            };
            let mut probes = vec![probe("query:echo s3cr3t"), probe("file:/etc")];
            let results = std::mem::replace(o, Outcomes::new(false)).into_results(&mut probes);
            let key = &probes[0].key;
            assert!(
                key.starts_with("(hidden by no_log) ") && !key.contains("s3cr3t"),
                "{key}"
            );
            assert_eq!(probes[0].command, HIDDEN);
            assert_eq!(results[0].evidence.observed_by[0], *key);
            // Planned from by a no_log task: hidden as well.
            assert_eq!(results[0].evidence.observed_by[1], probes[1].key);
            assert_eq!(probes[1].command, HIDDEN);
        });
    }

    #[test]
    fn an_ignored_failure_does_not_stop_the_host() {
        with_task("{command: x, ignore_errors: true}", false, |o, inst| {
            assert!(!o.fail(inst.spec, None, "no".into()));
            assert!(o.results[0].ignored);
        });
        with_task("{command: x}", false, |o, inst| {
            assert!(o.fail(inst.spec, None, "no".into()));
        });
    }

    #[test]
    fn a_step_without_a_report_says_why_and_later_steps_are_dropped() {
        with_task("{command: x}", false, |o, inst| {
            for _ in 0..3 {
                o.planned(inst, planned(1, true, None));
            }
            let lost = Err(TransportError::Interrupted {
                why: "reset".into(),
                stdout: Vec::new(),
            });
            o.unfinished(1, &lost, false);
            assert_eq!(o.results.len(), 2);
            assert_eq!(o.status(1), Status::Unreachable);
            let message = o.results[1].message.clone().unwrap();
            assert!(
                message.contains("may have taken effect in part"),
                "{message}"
            );
            o.unfinished(1, &lost, true);
            assert_eq!(o.results.len(), 1, "after a failed step it never ran");
        });
    }
}
