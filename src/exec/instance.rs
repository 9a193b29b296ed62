//! Resolve, second half: a task on one host for one loop item, rendered
//! once into a [`TaskInstance`] (its variables, label, `when:` verdict and
//! module with rendered parameters).
//!
//! Kept apart from the schedule so that everything after resolution reads
//! one finished value instead of rendering the same templates again, and
//! so that what a task's parameters become can be followed in one file.

use std::time::Duration;

use serde_json::Value;

use super::built::{BuildKey, Built};
use super::prepared::{BackendDefaults, PlayCtx, PreparedTask, PKG_MGR};
use super::vars::{template_vars, ItemContexts, Resolved, TaskVars, VarError, VarLayers};
use crate::load::playbook::VARIABLE_PARAMS;
use crate::load::tasks::{Count, Retry};
use crate::modules::ansible_module::ANSIBLE_MODULE;
use crate::modules::kit::ansible::AnsibleCall;
use crate::modules::params::{BuildCtx, VarsRead};
use crate::modules::{Module, Params};
use crate::template::{TemplateError, Templates, OMIT};

/// Why a task cannot be resolved on a host.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    #[error("variable '{name}'{at} cannot be rendered: {why}")]
    Variable {
        name: String,
        /// ` (file:line:column)` of its definition, when known.
        at: String,
        why: VarError,
    },
    #[error("loop must be a list, got {0}")]
    LoopNotList(Value),
    #[error("cannot render loop: {0}")]
    Loop(TemplateError),
    #[error("{at}: when: {why}")]
    When { at: String, why: TemplateError },
    #[error("{at}: parameter '{name}': {why}")]
    Parameter {
        at: String,
        name: String,
        why: TemplateError,
    },
    /// The module refused its parameters (a rendered diagnostic).
    #[error("{0}")]
    Module(String),
    /// The module refused its rendered parameters: the diagnostic shown,
    /// and the module's words alone, which the task registers as `msg`.
    #[error("{shown}")]
    Params { shown: String, msg: String },
    /// What Ansible finds only when the task runs, found at load.
    #[error("{at}: {msg}{}", .hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    AtRun {
        at: String,
        msg: String,
        hint: Option<String>,
    },
    #[error("{at}: environment: {why}")]
    Environment { at: String, why: String },
    #[error("{at}: async: {why}")]
    Async { at: String, why: String },
    #[error("{at}: become: {why}")]
    Become { at: String, why: TemplateError },
    #[error("{at}: delegate_to: {why}")]
    Delegate { at: String, why: TemplateError },
    #[error("{at}: {key}: {why}")]
    Retry {
        at: String,
        key: &'static str,
        why: String,
    },
}

impl ResolveError {
    /// What the loader found and Ansible finds only when the task runs;
    /// a module's refusal registers the module's words alone.
    fn at_run(d: &crate::base::diag::Diagnostic, module: &str) -> Self {
        ResolveError::AtRun {
            at: d.span.location(),
            msg: crate::modules::params::module_words(module, &d.message).to_string(),
            hint: d.hint.clone(),
        }
    }

    /// The `msg` a task failing so registers: Ansible's message alone,
    /// where the report adds where and a hint.
    pub(crate) fn registered(&self) -> String {
        match self {
            ResolveError::AtRun { msg, .. } | ResolveError::Params { msg, .. } => msg.clone(),
            other => other.to_string(),
        }
    }
}

/// One task for one loop item on one host, resolved.
pub(crate) struct TaskInstance<'p> {
    pub spec: &'p PreparedTask<'p>,
    /// The loop item as reports show it.
    pub label: Option<String>,
    /// The variables its templates and conditions render in.
    pub vars: Value,
    /// `ignore_errors`, judged with those variables when templated.
    pub ignore_errors: bool,
    /// Whether it runs in check mode: the run's mode, or the task's
    /// `check_mode`, judged with those variables when templated.
    pub check: bool,
    /// Seconds its steps may run: `timeout:`, or `async:` judged with
    /// those variables when templated.
    pub timeout: Option<u64>,
    /// `until:`'s attempts, with a templated `retries:` or `delay:`
    /// rendered in `vars`.
    pub retry: Option<Retrying>,
    /// `environment:` rendered, for the task's steps.
    pub environment: Vec<(String, String)>,
    /// The user its steps and probes run as (`None`: the login user),
    /// with a templated `become` judged in those variables.
    pub user: Option<String>,
}

/// What resolving an instance came to.
/// A task retried with `until:`.
#[derive(Clone, Copy, Debug)]
pub struct Retrying {
    /// Attempts in all.
    pub attempts: u32,
    /// Time between them.
    pub delay: Duration,
    /// This attempt's number, from 1: the result's `attempts`, which its
    /// `changed_when` and `failed_when` read too.
    pub attempt: u32,
}

pub(crate) enum Resolution<'p> {
    /// `when:` is false.
    Skip(TaskInstance<'p>),
    Run(TaskInstance<'p>, Box<dyn Module>),
    /// The task fails on this item (and is not planned further).
    Failed {
        label: Option<String>,
        error: ResolveError,
    },
}

/// A task's loop items (one pass with no item when it has no loop), and
/// the contexts they render in.
pub(crate) struct Items {
    pub list: Vec<Option<LoopItem>>,
    pub contexts: Option<ItemContexts>,
}

/// One loop item, and where it stands in the loop.
pub(crate) struct LoopItem {
    pub index: usize,
    pub value: Value,
}

/// Renders tasks against one host's variables.
pub(crate) struct Resolver<'r> {
    pub ctx: &'r PlayCtx<'r>,
    pub vars: &'r VarLayers,
    /// The host's modules built so far, which an item reuses while what
    /// it is built from holds.
    pub built: &'r Built,
}

impl Resolver<'_> {
    /// Loop items, or one pass with no item.
    pub fn items(&self, spec: &PreparedTask) -> Result<Items, ResolveError> {
        let Some(items) = &spec.looping.items else {
            return Ok(Items {
                list: vec![None],
                contexts: None,
            });
        };
        if let Some(d) = &spec.task.loop_refused {
            return Err(ResolveError::at_run(d, spec.task.module.name));
        }
        // Only what the loop expression reads must render: task `vars:`
        // reading the item cannot be rendered before there is one.
        let mut reads = std::collections::BTreeSet::new();
        template_vars(self.ctx.templates, items, &mut reads);
        let resolved = self.resolve_vars(spec, None, None);
        if let Some(error) = self.broken_read(spec, &resolved, &reads) {
            return Err(error);
        }
        let list: Vec<Option<Value>> = match self.ctx.templates.render_value(items, &resolved.vars)
        {
            Ok(Value::Array(items)) => items.into_iter().map(Some).collect(),
            Ok(other) => return Err(ResolveError::LoopNotList(other)),
            // As Ansible, an undefined loop fails only if `when:` holds
            // without an item: otherwise the task is skipped.
            Err(e) if e.is_undefined && self.when_is_false(spec, &resolved.vars) => {
                return Ok(Items {
                    list: vec![None],
                    contexts: None,
                })
            }
            Err(e) => return Err(ResolveError::Loop(e)),
        };
        let task = spec.task;
        let contexts = self
            .vars
            .item_contexts(self.ctx.templates, TaskVars::of(task), &task.loop_var)
            .with_extras(&task.loop_extras, &list);
        let list = (list.into_iter().enumerate())
            .map(|(index, value)| value.map(|value| LoopItem { index, value }))
            .collect();
        Ok(Items {
            list,
            contexts: Some(contexts),
        })
    }

    /// Renders one instance: its variables, `when:`, and module.
    pub fn resolve<'p>(
        &self,
        spec: &'p PreparedTask<'p>,
        contexts: Option<&ItemContexts>,
        item: Option<LoopItem>,
    ) -> Resolution<'p> {
        let resolved = self.resolve_vars(spec, contexts, item.as_ref());
        let label = item.map(|i| self.label(spec, i.value, &resolved.vars));
        if let Some(error) = self.broken_read(spec, &resolved, &spec.referenced) {
            // A task whose `when:` is false is skipped whatever else it
            // reads, as Ansible renders nothing else of a skipped task.
            if !self.when_is_false(spec, &resolved.vars) {
                return Resolution::Failed { label, error };
            }
        }
        let vars = resolved.vars;
        let ignore_errors = self.ignores_errors(spec, &vars);
        let check = self.check_mode(spec, &vars);
        let timeout = match self.timeout(spec, &vars) {
            Ok(t) => t,
            Err(error) => return Resolution::Failed { label, error },
        };
        let retry = match self.retry(spec, &vars) {
            Ok(r) => r,
            Err(error) => return Resolution::Failed { label, error },
        };
        let user = match self.user(spec, &vars) {
            Ok(u) => u,
            Err(error) => return Resolution::Failed { label, error },
        };
        let instance = TaskInstance {
            spec,
            label,
            vars,
            ignore_errors,
            check,
            timeout,
            retry,
            environment: Vec::new(),
            user,
        };
        match self.when_holds(&instance) {
            Ok(true) => {}
            Ok(false) => return Resolution::Skip(instance),
            Err(error) => {
                let label = instance.label;
                return Resolution::Failed { label, error };
            }
        }
        if let Some(d) = spec.task.run_errors.first() {
            let error = ResolveError::at_run(d, spec.task.module.name);
            let label = instance.label;
            return Resolution::Failed { label, error };
        }
        let mut instance = instance;
        match self.environment(spec, &instance.vars) {
            Ok(env) => instance.environment = env,
            Err(error) => {
                let label = instance.label;
                return Resolution::Failed { label, error };
            }
        }
        match self.built_module(spec, &instance.vars, &instance.user, instance.check) {
            Ok(module) => Resolution::Run(instance, module),
            Err(error) => Resolution::Failed {
                label: instance.label,
                error,
            },
        }
    }

    /// The host a delegated task runs on, rendered in the host's variables
    /// (load refuses a target that reads the loop variable).
    pub fn delegate_target(
        &self,
        spec: &PreparedTask,
    ) -> Result<Option<(String, bool)>, ResolveError> {
        let Some(delegate) = &spec.task.delegate_to else {
            return Ok(None);
        };
        let vars = self.resolve_vars(spec, None, None).vars;
        let to = self
            .ctx
            .templates
            .render_str(&delegate.to, &vars)
            .map_err(|why| ResolveError::Delegate {
                at: delegate.span.location(),
                why,
            })?;
        Ok(Some((to.trim().to_string(), delegate.controller)))
    }

    /// The module an instance will most likely need, built before facts
    /// and registered results are known, to gather its probes early. A
    /// variable that cannot be rendered yet is left out (the task fails on
    /// it when planned); a value not known yet renders empty, since such a
    /// task usually still reads the same path.
    pub fn guess(
        &self,
        spec: &PreparedTask,
        contexts: Option<&ItemContexts>,
        item: Option<&LoopItem>,
    ) -> Option<Box<dyn Module>> {
        let vars = self.resolve_vars(spec, contexts, item).vars;
        let user = self.user(spec, &vars).ok()?;
        let check = self.check_mode(spec, &vars);
        self.built_module(spec, &vars, &user, check)
            .or_else(|_| {
                self.build(self.ctx.lenient, spec, &vars, &user)
                    .map(|(m, _)| m)
            })
            .ok()
    }

    /// The item's module: the one built before from the same values, or a
    /// new one.
    fn built_module(
        &self,
        spec: &PreparedTask,
        vars: &Value,
        user: &Option<String>,
        check: bool,
    ) -> Result<Box<dyn Module>, ResolveError> {
        let task = std::ptr::from_ref(spec) as usize;
        let key = BuildKey::new(task, &spec.args.reads, vars, user, check);
        self.built.get_or_build(key, vars, || {
            self.build(self.ctx.templates, spec, vars, user)
        })
    }

    fn resolve_vars(
        &self,
        spec: &PreparedTask,
        contexts: Option<&ItemContexts>,
        item: Option<&LoopItem>,
    ) -> Resolved {
        let task = spec.task;
        match (contexts, item) {
            (Some(contexts), Some(item)) => {
                contexts.context(self.ctx.templates, item.index, &item.value)
            }
            (_, item) => {
                let item = item.map(|i| (task.loop_var.as_str(), &i.value));
                self.vars
                    .context(self.ctx.templates, TaskVars::of(task), item)
            }
        }
    }

    /// Why the task cannot run, if it reads (`reads`) a variable that could
    /// not be rendered (a cycle, an undefined reference, a value over the
    /// size limit).
    fn broken_read(
        &self,
        spec: &PreparedTask,
        r: &Resolved,
        reads: &std::collections::BTreeSet<String>,
    ) -> Option<ResolveError> {
        let (name, why) = r.broken.iter().find(|(name, _)| reads.contains(*name))?;
        let at = [&spec.task.vars_node, &self.ctx.play.vars_node]
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_map())
            .flatten()
            .find(|(k, _)| k.as_str() == Some(name))
            .map(|(k, _)| format!(" ({})", k.span.location()))
            .unwrap_or_default();
        Some(ResolveError::Variable {
            name: name.clone(),
            at,
            why: why.clone(),
        })
    }

    /// Whether the templated include a task came from names its file on
    /// this host (true for a task from no such include).
    pub fn included(&self, spec: &PreparedTask) -> Result<bool, ResolveError> {
        let Some(cond) = &spec.conditions.included else {
            return Ok(true);
        };
        let vars = self.resolve_vars(spec, None, None).vars;
        self.ctx
            .templates
            .eval_condition(cond, &vars)
            .map_err(|e| ResolveError::AtRun {
                at: spec.task.span.location(),
                msg: format!("the include naming this task's file: {e}"),
                hint: None,
            })
    }

    /// `when:` is written and judged false with these variables.
    fn when_is_false(&self, spec: &PreparedTask, vars: &Value) -> bool {
        spec.conditions.when.as_ref().is_some_and(|(cond, _)| {
            matches!(self.ctx.templates.eval_condition(cond, vars), Ok(false))
        })
    }

    fn label(&self, spec: &PreparedTask, item: Value, vars: &Value) -> String {
        match (&spec.looping.label, item) {
            (Some(text), _) => self
                .ctx
                .templates
                .render_str(text, vars)
                .unwrap_or_else(|_| text.clone()),
            (None, Value::String(s)) => s,
            (None, other) => other.to_string(),
        }
    }

    /// The task's environment: each source rendered to a mapping, later
    /// keys winning.
    fn environment(
        &self,
        spec: &PreparedTask,
        vars: &Value,
    ) -> Result<Vec<(String, String)>, ResolveError> {
        let mut env: Vec<(String, String)> = Vec::new();
        for node in &spec.task.environment {
            let fail = |why: String| ResolveError::Environment {
                at: node.span.location(),
                why,
            };
            let rendered = self
                .ctx
                .templates
                .render_value(&node.to_json(), vars)
                .map_err(|e| fail(e.to_string()))?;
            let Value::Object(map) = rendered else {
                return Err(fail(format!("must be a mapping, got {rendered}")));
            };
            for (k, v) in map {
                // The name reaches the shell unquoted in `export`.
                if !crate::load::playbook::is_identifier(&k) {
                    return Err(fail(format!("'{k}' is not an environment variable name")));
                }
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                env.retain(|(name, _)| *name != k);
                env.push((k, text));
            }
        }
        Ok(env)
    }

    /// The task's `timeout:`, or its templated `async:` with `poll:`
    /// rendered: above 0, the smaller of the two. Fire-and-forget is
    /// decided at load, so a `poll` that renders 0 is refused here.
    fn timeout(&self, spec: &PreparedTask, vars: &Value) -> Result<Option<u64>, ResolveError> {
        let task = spec.task;
        let Some((seconds, poll)) = &task.async_if else {
            return Ok(task.timeout);
        };
        let at = seconds.span.location();
        let number = |n: &crate::load::yaml::Node| {
            self.whole_number(n, vars)
                .map_err(|why| ResolveError::Async {
                    at: at.clone(),
                    why,
                })
        };
        let seconds = number(seconds)?;
        let poll = poll.as_ref().map(number).transpose()?;
        match (seconds, poll) {
            (0, _) => Ok(task.timeout),
            (_, Some(0)) => Err(ResolveError::Async {
                at,
                why: "a templated poll that renders 0 (fire-and-forget) is not supported by nodeprov: write 'poll: 0'".into(),
            }),
            (s, _) => Ok(Some(task.timeout.map_or(s, |t| t.min(s)))),
        }
    }

    /// `until:`'s attempts and delay, each rendered when templated.
    fn retry(&self, spec: &PreparedTask, vars: &Value) -> Result<Option<Retrying>, ResolveError> {
        let Some(retry) = &spec.task.retry else {
            return Ok(None);
        };
        // Retries are whole, a delay may be a fraction of seconds.
        let count = |c: &Option<Count>, key: &'static str| match c {
            None => Ok(None),
            Some(Count::Number(n)) => Ok(Some(*n as f64)),
            Some(Count::Seconds(s)) => Ok(Some(*s)),
            Some(Count::Template(node)) => {
                let fail = |why| ResolveError::Retry {
                    at: node.span.location(),
                    key,
                    why,
                };
                let v = (self.ctx.templates)
                    .render_value(&node.to_json(), vars)
                    .map_err(|e| fail(e.to_string()))?;
                let n = crate::load::tasks::seconds_of(&v)
                    .filter(|n| key == "delay" || n.fract() == 0.0);
                n.map(Some)
                    .ok_or_else(|| fail(format!("{v} is not a whole number")))
            }
        };
        let retries = count(&retry.retries, "retries")?.map(|n| n as u64);
        let delay = count(&retry.delay, "delay")?.unwrap_or(5.0);
        Ok(Some(Retrying {
            attempts: Retry::attempts(retries),
            delay: Duration::from_secs_f64(delay),
            attempt: 1,
        }))
    }

    /// A templated whole number, rendered in `vars`.
    fn whole_number(&self, node: &crate::load::yaml::Node, vars: &Value) -> Result<u64, String> {
        let v = self
            .ctx
            .templates
            .render_value(&node.to_json(), vars)
            .map_err(|e| e.to_string())?;
        let n = match &v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        n.ok_or_else(|| format!("{v} is not a whole number"))
    }

    /// The `module_defaults` of the module the host's package manager is,
    /// for a `package` task that has some: as Ansible's `package` action,
    /// the task's `use` names it, else the host's `ansible_pkg_mgr` fact.
    fn backend_defaults<'s>(
        &self,
        spec: &'s PreparedTask,
        vars: &Value,
    ) -> Result<Option<&'s BackendDefaults>, ResolveError> {
        if spec.args.backend_defaults.is_empty() {
            return Ok(None);
        }
        let chosen = spec.args.params.iter().find(|(n, _, _)| n == "backend");
        let manager = match chosen {
            Some((_, v, _)) => self.ctx.templates.render_value(v, vars).ok(),
            None => vars.get(PKG_MGR).cloned(),
        };
        let manager = match manager {
            Some(Value::String(m)) if m != "auto" => m,
            _ => {
                let (module, _) = &spec.args.backend_defaults[0];
                return Err(ResolveError::Module(format!(
                    "module_defaults for '{module}' apply on hosts whose package manager it is, and this host's is unknown: gather facts, or give the task 'use'"
                )));
            }
        };
        Ok((spec.args.backend_defaults.iter())
            .find(|(module, _)| module.rsplit('.').next() == Some(manager.as_str())))
    }

    /// A templated `check_mode` that cannot be judged runs in check mode,
    /// which changes nothing.
    pub(crate) fn check_mode(&self, spec: &PreparedTask, vars: &Value) -> bool {
        let task = spec.task;
        match (task.check_mode, &task.check_mode_if) {
            (Some(fixed), _) => fixed,
            (None, Some(n)) => self
                .ctx
                .templates
                .eval_condition(&n.to_json(), vars)
                .unwrap_or(true),
            (None, None) => self.ctx.opts.check,
        }
    }

    /// A templated `ignore_errors` that cannot be judged does not ignore.
    /// The task's user: its `become_user` (or the play's), unless a
    /// templated `become` is false here.
    fn user(&self, spec: &PreparedTask, vars: &Value) -> Result<Option<String>, ResolveError> {
        let task = spec.task;
        let user = match self.ctx.play.task_user(task) {
            // `become_user: "{{ app_user }}"`, rendered per host.
            Some(name) if crate::template::is_templated(name) => {
                let rendered = self.ctx.templates.render_str(name, vars).map_err(|why| {
                    ResolveError::Become {
                        at: task.module_span.location(),
                        why,
                    }
                })?;
                Some(rendered)
            }
            user => user.clone(),
        };
        if let Some(node) = &task.become_method_if {
            let at = node.span.location();
            let method = self
                .ctx
                .templates
                .render_value(&node.to_json(), vars)
                .map_err(|why| ResolveError::Become {
                    at: at.clone(),
                    why,
                })?;
            if !method
                .as_str()
                .is_some_and(crate::base::escalation::is_sudo)
            {
                let method = method.as_str().map_or(method.to_string(), String::from);
                return Err(ResolveError::Module(format!(
                    "{at}: become_method '{method}' is not supported: only sudo is"
                )));
            }
        }
        let Some(node) = &task.become_if else {
            return Ok(user);
        };
        let becomes = self
            .ctx
            .templates
            .eval_condition(&node.to_json(), vars)
            .map_err(|why| ResolveError::Become {
                at: node.span.location(),
                why,
            })?;
        Ok(if becomes { user } else { None })
    }

    fn ignores_errors(&self, spec: &PreparedTask, vars: &Value) -> bool {
        let task = spec.task;
        task.ignore_errors
            || task.ignore_errors_if.as_ref().is_some_and(|n| {
                self.ctx
                    .templates
                    .eval_condition(&n.to_json(), vars)
                    .unwrap_or(false)
            })
    }

    fn when_holds(&self, instance: &TaskInstance) -> Result<bool, ResolveError> {
        let Some((cond, at)) = &instance.spec.conditions.when else {
            return Ok(true);
        };
        self.ctx
            .templates
            .eval_condition(cond, &instance.vars)
            .map_err(|e| ResolveError::When {
                at: at.clone(),
                why: e,
            })
    }

    /// Renders the parameters and builds the module from them; with what
    /// the build read of the variables besides.
    fn build(
        &self,
        t: &Templates,
        spec: &PreparedTask,
        vars: &Value,
        user: &Option<String>,
    ) -> Result<(Box<dyn Module>, VarsRead), ResolveError> {
        let mut entries = Vec::new();
        let task = spec.task;
        let declared = &task.module.params;
        // The loader gave the task's own parameters their declared names;
        // what only a host's values name is given them here.
        let name_of = |n: &str| declared.canonical(n).unwrap_or(n).to_string();
        let own = spec.args.params.iter();
        // The task's own parameters win over its package manager's defaults.
        let defaults = self
            .backend_defaults(spec, vars)?
            .into_iter()
            .flat_map(|(_, params)| params)
            .filter(|(name, _, _)| !spec.args.params.iter().any(|(n, _, _)| *n == name_of(name)));
        for (name, value, span) in own.chain(defaults) {
            let fail = |why| ResolveError::Parameter {
                at: span.location(),
                name: name.clone(),
                why,
            };
            if name == VARIABLE_PARAMS {
                let given = |n: &String| spec.args.params.iter().any(|(o, _, _)| o == n);
                match t.render_value(value, vars).map_err(fail)? {
                    Value::Object(m) => {
                        for (n, v) in m {
                            let n = name_of(&n);
                            if !declared.any_variable && !declared.names.contains(&n.as_str()) {
                                return Err(ResolveError::Module(format!(
                                    "{}: the task's arguments give '{n}', which '{}' does not take",
                                    span.location(),
                                    task.module.name
                                )));
                            }
                            if !given(&n) && v != Value::String(OMIT.into()) {
                                entries.push((n, v, span.clone()));
                            }
                        }
                    }
                    other => {
                        return Err(ResolveError::Module(format!(
                            "{}: the task's arguments must render to a mapping, got {other}",
                            span.location()
                        )))
                    }
                }
                continue;
            }
            // set_fact's parameters are the variables it sets, and Ansible
            // renders their names too (`"{{ item.key }}": …` over a loop).
            let name = match task.module.params.any_variable && name.contains("{{") {
                true => t.render_str(name, vars).map_err(fail)?,
                false => name.clone(),
            };
            let value = t.render_value(value, vars).map_err(fail)?;
            if value != Value::String(OMIT.into()) {
                entries.push((name_of(&name), value, span.clone()));
            }
        }
        let search_path = task.search_path(self.ctx.playbook_folder);
        let call = |payload, why| AnsibleCall {
            payload,
            why,
            check: self.check_mode(spec, vars),
            diff: task.diff.unwrap_or(self.ctx.opts.diff),
            no_log: task.no_log,
        };
        let ansible = (task.ansible.as_ref()).map(|f| call(f.payload.clone(), f.why.clone()));
        let bctx = BuildCtx::new(t, vars, &search_path, self.ctx.sources, ansible);
        let params = Params::new(task.module.name, task.module_span.clone(), entries, &bctx);
        let mut built = (task.module.build)(&params);
        // What the native module cannot do with a host's values (`file`'s
        // `follow: false`), Ansible's own module does, as when the load
        // saw it written.
        let fallback;
        if let (Err(e), Some(source)) = (&built, &task.ansible_source) {
            if let Some(payload) = e.unsupported.then(|| source.payload().ok()).flatten() {
                let ansible = Some(call(payload, e.native_cannot(task.module.name)));
                fallback = BuildCtx::new(t, vars, &search_path, self.ctx.sources, ansible);
                built = (ANSIBLE_MODULE.build)(&params.with_ctx(&fallback));
            }
        }
        #[cfg(test)]
        if built.is_ok() {
            super::built::BUILDS.lock().unwrap().push(spec.name.clone());
        }
        built
            .map(|m| super::task_user::reading_as_task_user(self.ctx.play, user, m))
            .map(|m| (m, bctx.vars_read()))
            .map_err(|e| ResolveError::Params {
                shown: e.to_diagnostic().to_string(),
                msg: crate::modules::params::module_words(task.module.name, &e.message).to_string(),
            })
    }
}
