//! Task lists as Ansible writes them — `block:`, `import_tasks:`,
//! `include_tasks:`, `import_role:`/`include_role:` — flattened at load
//! time into plain tasks that carry what they inherit (conditions, tags,
//! become, vars, role). Expanding here keeps the round-trip contract: the
//! executor sees one flat list and probes it in one batch.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::keywords::{self, Level};
use super::playbook::{self, Errors, Role, Task};
use super::roles::{self, RoleRequest};
use super::yaml::{self, Node, Value};
use crate::modules::ModuleKind;

/// How deep includes and roles may nest before it is called a loop.
const MAX_DEPTH: usize = 32;

/// What an enclosing block, include or role hands down to its tasks.
#[derive(Clone, Debug, Default)]
pub(super) struct Inherit {
    when: Vec<Node>,
    /// Conditions under which a templated include names this file: when
    /// one is false the tasks were never included, so they are neither
    /// skipped nor registered.
    included: Vec<Node>,
    tags: Vec<String>,
    become_user: Option<Option<String>>,
    /// Variables as `key: value` entries; later entries win.
    vars: Vec<(Node, Node)>,
    ignore_errors: bool,
    check_mode: Option<bool>,
    check_mode_if: Option<Node>,
    diff: Option<bool>,
    throttle: Option<u64>,
    role: Option<Arc<Role>>,
    /// The roles whose `include_role`/`import_role` led here, innermost
    /// first: `ansible_parent_role_names` and `_paths` of a role loaded here.
    parent_roles: Vec<Arc<Role>>,
    environment: Vec<Node>,
    no_log: bool,
    frame: Option<Arc<Frame>>,
    /// Handlers the tasks notify, where they name none themselves.
    notify: Vec<(String, crate::base::diag::Span)>,
    /// Topics the handlers listen to besides their own.
    listen: Vec<String>,
    run_once: bool,
    delegate_to: Option<Delegate>,
    /// `module_defaults:` mappings (or lists of them), outermost first.
    module_defaults: Vec<Node>,
}

/// Where a task sits in a block that has `rescue:` or `always:`: which
/// block, which of its sections, and where that block itself sits. Blocks
/// without either add no frame: they only hand down keywords.
#[derive(Debug)]
pub struct Frame {
    /// Unique among the blocks of a run.
    pub block: usize,
    pub part: Part,
    pub has_rescue: bool,
    pub outer: Option<Arc<Frame>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Body,
    Rescue,
    Always,
}

impl Frame {
    /// This frame and those of the blocks around it, innermost first.
    pub fn chain(self: &Arc<Frame>) -> impl Iterator<Item = &Arc<Frame>> {
        std::iter::successors(Some(self), |f| f.outer.as_ref())
    }
}

/// Where a task list is read: relative includes resolve against `dir`.
#[derive(Clone)]
pub(super) struct Scope {
    pub dir: PathBuf,
    pub inherit: Inherit,
    /// Files being expanded, outermost first, to name an include loop.
    pub stack: Vec<PathBuf>,
    pub roles: Arc<roles::Finder>,
    pub play: roles::Shared,
    /// The `collections:` list short role and module names resolve through.
    pub collections: Vec<String>,
    /// The play's `vars:`, for what the load can know of a variable.
    pub play_vars: Arc<serde_json::Map<String, serde_json::Value>>,
    /// An include loop's variable and its item, when the load lists the
    /// item as text (`with_items: ["{{ role_path }}/x.yml"]`): no other
    /// variable outranks it.
    pub loop_item: Option<(String, String)>,
}

impl Scope {
    pub fn new(dir: PathBuf, roles: Arc<roles::Finder>) -> Scope {
        Scope {
            dir,
            inherit: Inherit::default(),
            stack: Vec::new(),
            roles,
            play: roles::Shared::default(),
            collections: Vec::new(),
            play_vars: Arc::default(),
            loop_item: None,
        }
    }

    pub fn inherit_environment(&mut self, env: Option<Node>) {
        self.inherit.environment.extend(env);
    }

    pub fn inherit_module_defaults(&mut self, defaults: &Node) {
        self.inherit.module_defaults.push(defaults.clone());
    }

    pub fn inherit_no_log(&mut self, no_log: bool) {
        self.inherit.no_log |= no_log;
    }

    /// A file an include names, found as Ansible's search stack finds it:
    /// in the role's `tasks/` (or the playbook's folder), else beside the
    /// including file (a role's handler file importing its neighbour),
    /// else in the role's own folder.
    fn beside(&self, file: &str) -> PathBuf {
        let including = self.stack.last().and_then(|f| f.parent());
        let role = self.inherit.role.as_ref().map(|r| r.path.as_path());
        let first = self.dir.join(file);
        std::iter::once(first.clone())
            .chain(including.map(|d| d.join(file)))
            .chain(role.map(|r| r.join(file)))
            .find(|p| p.is_file())
            .unwrap_or(first)
    }

    /// An include's name with what is known before any host is: the
    /// role's `role_path`, the run's `playbook_dir` and a listed include
    /// loop's item.
    /// `text` rendered in what is known at load (the role's defaults, the
    /// play's vars, then what the role, block and include set); None when
    /// that is not enough.
    fn render_at_load(&self, text: &str) -> Option<String> {
        let mut vars = serde_json::Map::new();
        if let Some(role) = &self.inherit.role {
            vars.extend(role.defaults.clone());
        }
        vars.extend(self.play_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (k, v) in &self.inherit.vars {
            if let Some(k) = k.as_str() {
                vars.insert(k.to_string(), v.to_json());
            }
        }
        crate::template::Templates::new()
            .render_str(text, &serde_json::Value::Object(vars))
            .ok()
    }

    fn known_at_load(&self, file: &str) -> String {
        let playbook_dir = self.roles.library().parent().map(Path::to_path_buf);
        let role_path = self.inherit.role.as_ref().map(|r| r.path.clone());
        let mut out = file.to_string();
        if let Some((name, item)) = &self.loop_item {
            for spelling in [format!("{{{{ {name} }}}}"), format!("{{{{{name}}}}}")] {
                out = out.replace(&spelling, item);
            }
        }
        for (name, value) in [("role_path", role_path), ("playbook_dir", playbook_dir)] {
            let Some(value) = value else { continue };
            let value = std::path::absolute(&value).unwrap_or(value);
            for spelling in [format!("{{{{ {name} }}}}"), format!("{{{{{name}}}}}")] {
                out = out.replace(&spelling, &value.display().to_string());
            }
        }
        out
    }

    /// Where Ansible looks for a custom module: the role's `library/`,
    /// then the playbook's (`ANSIBLE_LIBRARY` and ansible.cfg's `library`
    /// are read by ansible-core itself).
    pub fn library_dirs(&self) -> Vec<PathBuf> {
        let role = self.inherit.role.as_ref().map(|r| r.path.join("library"));
        role.into_iter()
            .chain([self.roles.library().to_path_buf()])
            .collect()
    }

    /// The folders that hold the installed collections.
    pub fn collection_paths(&self) -> Vec<PathBuf> {
        self.roles.collections.paths()
    }

    /// The roles a role loaded in this scope was included from, innermost
    /// first.
    pub fn parent_roles(&self) -> &[Arc<Role>] {
        &self.inherit.parent_roles
    }

    pub fn with_role(&self, role: Arc<Role>, vars: Vec<(Node, Node)>) -> Scope {
        let mut scope = self.clone();
        scope.dir = role.path.join("tasks");
        scope.inherit.role = Some(role);
        scope.inherit.vars.extend(vars);
        scope
    }

    /// The same scope with a role entry's or include's keywords added.
    pub fn narrowed(&self, keys: &[(Node, Node)], errors: &mut Errors) -> Scope {
        let mut scope = self.clone();
        let inh = &mut scope.inherit;
        let mut become_: Option<bool> = None;
        let mut become_user = None;
        for (k, v) in keys {
            match k.as_str().unwrap_or_default() {
                "when" => {
                    if let Some(c) = playbook::condition(v, "when", errors) {
                        inh.when.extend(conditions(c));
                    }
                }
                "tags" => inh.tags.extend(playbook::string_list(v, "tags", errors)),
                "become" => become_ = Some(playbook::boolean(v, "become", errors)),
                "become_user" => become_user = Some(playbook::string(v, "become_user", errors)),
                "environment" => inh.environment.extend(playbook::environment(v, errors)),
                "no_log" => inh.no_log |= playbook::no_log(v, errors),
                "vars" => {
                    playbook::vars_map(v, errors);
                    inh.vars
                        .extend(v.as_map().unwrap_or_default().iter().cloned());
                }
                "ignore_errors" => {
                    inh.ignore_errors |= playbook::boolean(v, "ignore_errors", errors)
                }
                "check_mode" => {
                    (inh.check_mode, inh.check_mode_if) = playbook::check_mode(v, errors)
                }
                "diff" => inh.diff = Some(playbook::boolean(v, "diff", errors)),
                "throttle" => inh.throttle = seconds("throttle", v, errors),
                "notify" => inh.notify = playbook::names(v, "notify", errors),
                "listen" => {
                    let topics = playbook::names(v, "listen", errors);
                    inh.listen.extend(topics.into_iter().map(|t| t.0));
                }
                "run_once" => inh.run_once |= playbook::boolean(v, "run_once", errors),
                "delegate_to" => inh.delegate_to = delegate_to(v, errors),
                "module_defaults" => inh.module_defaults.push(v.clone()),
                _ => {}
            }
        }
        if let Some(b) = playbook::become_setting(become_, become_user) {
            inh.become_user = Some(b);
        }
        scope
    }
}

impl Scope {
    /// An include's or role task's keywords, then its `apply:` keywords:
    /// among its arguments (`include_tasks: {file: …, apply: …}`), as
    /// Ansible writes it, or beside them.
    fn for_include(
        &self,
        node: &Node,
        key: &str,
        entries: &[(Node, Node)],
        errors: &mut Errors,
    ) -> Scope {
        let mut inner = self.narrowed(entries, errors);
        // A handler that is an include runs the included tasks when its
        // name is notified, as in Ansible.
        if let Some(name) = node.get("name").and_then(Node::as_str) {
            inner.inherit.listen.push(name.to_string());
        }
        let apply = node.get(key).and_then(|args| args.get("apply"));
        match apply
            .or_else(|| node.get("apply"))
            .and_then(|a| playbook::expect_map(a, "apply", errors))
        {
            Some(keys) => {
                block_keywords(keys, errors);
                inner.narrowed(keys, errors)
            }
            None => inner,
        }
    }
}

/// `until:` with how often and how far apart it is tried.
#[derive(Clone, Debug)]
pub struct Retry {
    pub until: Node,
    /// `retries:`, a number or a template judged per host (None: 2).
    pub retries: Option<Count>,
    /// `delay:` in seconds, the same way (None: 5).
    pub delay: Option<Count>,
}

/// A whole number as written: the number, or a template that renders to
/// one on each host.
#[derive(Clone, Debug, PartialEq)]
pub enum Count {
    Number(u64),
    /// A fraction of seconds (`delay: 0.5`).
    Seconds(f64),
    Template(Node),
}

impl Retry {
    /// Attempts in all: `retries` plus the first, or 3 without `retries`,
    /// as in ansible-core; `retries: 0` is one attempt.
    pub fn attempts(retries: Option<u64>) -> u32 {
        match retries {
            None => 3,
            Some(0) => 1,
            Some(n) => u32::try_from(n.saturating_add(1)).unwrap_or(u32::MAX),
        }
    }
}

/// A task's `until:`, `retries:` and `delay:` as written.
#[derive(Default)]
pub(super) struct RetryKeys {
    until: Option<Node>,
    retries: Option<(Node, Node)>,
    delay: Option<(Node, Node)>,
}

impl RetryKeys {
    pub fn add(&mut self, key: &Node, value: &Node) {
        let pair = Some((key.clone(), value.clone()));
        match key.as_str().unwrap_or_default() {
            "until" => self.until = Some(value.clone()),
            "retries" => self.retries = pair,
            _ => self.delay = pair,
        }
    }

    /// The retry a task asks for; `retries:` or `delay:` alone are refused
    /// rather than run differently from Ansible.
    pub fn parse(self, errors: &mut Errors) -> Option<Retry> {
        let Some(until) = self.until else {
            for (k, _) in self.retries.iter().chain(&self.delay) {
                let key = k.as_str().unwrap_or_default();
                errors.push(
                    k.error(format!(
                        "'{key}' without 'until:' is not supported by nodeprov"
                    ))
                    .with_hint(
                        "add the condition to retry on, such as 'until: result is succeeded'",
                    ),
                );
            }
            return None;
        };
        let until = playbook::condition(&until, "until", errors)?;
        let count = |kv: Option<(Node, Node)>, errors: &mut Errors| {
            let (k, v) = kv?;
            if matches!(&v.value, Value::Str(s) if crate::template::is_templated(s)) {
                return Some(Count::Template(v));
            }
            Some(Count::Number(whole_number(&k, &v, errors).unwrap_or(0)))
        };
        // Ansible's delay is a float: `delay: 0.5` waits half a second.
        let delay = match self.delay {
            Some((_, v)) if fraction(&v.value).is_some_and(|s| s.fract() != 0.0) => {
                Some(Count::Seconds(fraction(&v.value).unwrap_or_default()))
            }
            other => count(other, errors),
        };
        Some(Retry {
            until,
            retries: count(self.retries, errors),
            delay,
        })
    }
}

/// `meta:`, `reboot`, `wait_for_connection` and `pause` act on the
/// schedule or the session once per host: a loop over them is refused, as
/// is an `end_play` that a condition would end for some hosts only (hosts
/// run independently, so it could not end the others), and so is one host
/// rebooting or waiting for the others (`run_once`).
pub(super) fn check_once_per_host(task: &Task, key: &Node, errors: &mut Errors) {
    let (name, kind) = (task.module.name, task.module.kind);
    if !kind.once_per_host() {
        return;
    }
    if task.loop_items.is_some() {
        errors.push(key.error(format!("a loop over {name} is not supported by nodeprov")));
    }
    if kind != ModuleKind::Control && task.run_once {
        errors.push(key.error(format!(
            "{name} with 'run_once' is not supported by nodeprov"
        )));
    }
    let action = task.params.iter().find(|(n, _)| n == "action");
    let end_play = action.is_some_and(|(_, v)| v.as_str() == Some("end_play"));
    if end_play && task.when.is_some() {
        errors.push(
            key.error("'meta: end_play' with 'when:' is not supported by nodeprov")
                .with_hint("hosts run independently: use 'meta: end_host' with the condition"),
        );
    }
}

/// `action: copy src=a dest=b` (or `{module: copy, src: a, …}`) as the
/// task it stands for, `copy: src=a dest=b`; `local_action:` the same, run
/// on the controller (`connection: local`). `None`: the task has neither.
fn action_form(node: &Node, errors: &mut Errors) -> Option<Node> {
    let entries = node.as_map()?;
    let at = entries
        .iter()
        .position(|(k, _)| matches!(k.as_str(), Some("action" | "local_action")))?;
    let (key, value) = &entries[at];
    let text =
        |s: &str, span: &crate::base::diag::Span| Node::new(Value::Str(s.into()), span.clone());
    let (module, args) = match &value.value {
        Value::Str(s) => {
            let s = s.trim_start();
            let (name, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
            let rest = rest.trim();
            let args = match rest.is_empty() {
                true => Node::new(Value::Null, value.span.clone()),
                false => text(rest, &value.span),
            };
            (name.to_string(), args)
        }
        Value::Map(m) => {
            let Some(name) = m.iter().find(|(k, _)| k.as_str() == Some("module")) else {
                errors.push(value.error(format!(
                    "{} needs 'module:'",
                    key.as_str().unwrap_or_default()
                )));
                return None;
            };
            let rest = m
                .iter()
                .filter(|(k, _)| k.as_str() != Some("module"))
                .cloned()
                .collect();
            (
                name.1.scalar_text().unwrap_or_default(),
                Node::new(Value::Map(rest), value.span.clone()),
            )
        }
        _ => {
            errors.push(value.error(format!(
                "{} must name a module, found {}",
                key.as_str().unwrap_or_default(),
                value.kind()
            )));
            return None;
        }
    };
    let mut out: Vec<(Node, Node)> = entries.to_vec();
    out[at] = (text(&module, &key.span), args);
    if key.as_str() == Some("local_action") {
        out.push((text("connection", &key.span), text("local", &key.span)));
    }
    Some(Node::new(Value::Map(out), node.span.clone()))
}

/// `delegate_to:`: the host a task runs on instead of its own, written as
/// a name or a template rendered per host.
#[derive(Debug, Clone)]
pub struct Delegate {
    pub to: String,
    pub span: crate::base::diag::Span,
    /// `connection: local`: reached on the controller itself, whatever the
    /// inventory says of the name.
    pub controller: bool,
    /// `delegate_facts`: the variables the task sets are the delegate's,
    /// not its host's.
    pub facts: bool,
}

pub(super) fn delegate_to(v: &Node, errors: &mut Errors) -> Option<Delegate> {
    let to = playbook::string(v, "delegate_to", errors);
    (!to.is_empty()).then(|| Delegate {
        to,
        span: v.span.clone(),
        controller: false,
        facts: false,
    })
}

/// A task's own `connection:`: `local` runs it on the controller with its
/// host's variables, as Ansible does (delegated there, when it is also
/// delegated); the play's connection is the only other one.
pub(super) fn task_connection(task: &mut Task, v: &Node, errors: &mut Errors) {
    match playbook::connection(v, errors).as_str() {
        "local" => {
            let d = task.delegate_to.get_or_insert_with(|| Delegate {
                to: "localhost".into(),
                span: v.span.clone(),
                controller: true,
                facts: false,
            });
            d.controller = true;
        }
        other => errors.push(
            v.error(format!(
                "a task's connection '{other}' is not supported by nodeprov"
            ))
            .with_hint("a task may say 'connection: local'; other connections are set on the play"),
        ),
    }
}

/// What cannot run on another host: the tasks that act on this host's own
/// session, and a target that changes per loop item, which would split one
/// task over several hosts.
pub(super) fn check_delegated(task: &Task, key: &Node, errors: &mut Errors) {
    let Some(delegate) = &task.delegate_to else {
        return;
    };
    if matches!(
        task.module.kind,
        ModuleKind::Reboot | ModuleKind::AwaitLogin | ModuleKind::Control
    ) {
        errors.push(key.error(format!(
            "'{}' cannot be delegated in nodeprov",
            task.module.name
        )));
    }
    let loop_var = task.loop_var.as_str();
    let per_item = task.loop_items.is_some()
        && delegate.to.contains("{{")
        && delegate
            .to
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| word == loop_var);
    if per_item {
        let at = Node::new(Value::Str(delegate.to.clone()), delegate.span.clone());
        errors.push(
            at.error(format!(
                "a delegate_to that names the loop variable '{loop_var}' is not supported by nodeprov"
            ))
            .with_hint("loop in a task file included per target, or delegate to one host"),
        );
    }
}

/// The largest `timeout:` Ansible takes.
const MAX_TIMEOUT: i64 = 100_000_000;

/// A task's `timeout:` in seconds; 0 is none, as in Ansible. A number out
/// of Ansible's range fails the task when it runs, as Ansible's does.
pub(super) fn timeout(task: &mut Task, v: &Node, errors: &mut Errors) {
    if let Value::Int(n) = v.value {
        if !(0..=MAX_TIMEOUT).contains(&n) {
            task.run_errors
                .push(v.error(format!("Timeout {n} is invalid")));
            return;
        }
    }
    let key = Node::new(Value::Str("timeout".into()), v.span.clone());
    task.timeout = whole_number(&key, v, errors).filter(|n| *n > 0);
}

/// `async:` / `poll:`: whole seconds.
pub(super) fn seconds(name: &str, v: &Node, errors: &mut Errors) -> Option<u64> {
    let key = Node::new(Value::Str(name.into()), v.span.clone());
    whole_number(&key, v, errors)
}

/// `async:` with `poll:` above 0 waits for the task as every task is
/// waited for, at most `seconds` (as `timeout:`, the smaller of the two).
/// Fire-and-forget (`poll: 0`) starts it detached from the session, still
/// bounded by `seconds`, and goes on (see `check_detached`).
pub(super) fn run_async(task: &mut Task, seconds: u64, poll: Option<u64>) {
    task.detach = poll == Some(0);
    task.timeout = Some(task.timeout.map_or(seconds, |t| t.min(seconds)));
}

/// A task left running must be one Ansible runs as a job; its changes are
/// then not verified, as its steps have not ended.
pub(super) fn check_detached(task: &Task, key: &Node, errors: &mut Errors) {
    if task.detach && !crate::modules::registry::runs_as_job(task.module) {
        errors.push(
            key.error(format!(
                "This action ({}) does not support async.",
                task.module.name
            ))
            .with_hint(
                "Ansible runs it through an action plugin that cannot leave it running; give 'poll' a number above 0",
            ),
        );
    }
}

/// A number of seconds of 0 or more, written as one or as its text.
pub fn seconds_of(v: &serde_json::Value) -> Option<f64> {
    let s = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    s.filter(|s: &f64| s.is_finite() && *s >= 0.0)
}

fn fraction(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => seconds_of(&(*i).into()),
        Value::Float(f) => seconds_of(&(*f).into()),
        Value::Str(s) => seconds_of(&s.as_str().into()),
        _ => None,
    }
}

/// `retries:` / `delay:`: a whole number, written as one or as its text.
fn whole_number(key: &Node, v: &Node, errors: &mut Errors) -> Option<u64> {
    let name = key.as_str().unwrap_or_default();
    let n = match &v.value {
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    };
    if n.is_none() {
        let hint = "a template is not supported here: write the number";
        let found = v.scalar_text().unwrap_or_else(|| v.kind().to_string());
        errors.push(
            v.error(format!(
                "{name} must be a whole number of 0 or more, found {found}"
            ))
            .with_hint(hint),
        );
    }
    n
}

/// One `when:` as a list of conditions, so inherited ones can be prepended.
pub(super) fn conditions(node: Node) -> Vec<Node> {
    match node.value {
        Value::Seq(items) => items,
        _ => vec![node],
    }
}

/// A task list (`tasks:`, `handlers:`, a block, an included file) expanded.
pub(super) fn expand(v: &Node, scope: &Scope, errors: &mut Errors) -> Vec<Task> {
    let items = match &v.value {
        Value::Seq(items) => items.as_slice(),
        Value::Null => &[],
        _ => {
            errors.push(v.error(format!("expected a list of tasks, found {}", v.kind())));
            return Vec::new();
        }
    };
    items.iter().flat_map(|t| entry(t, scope, errors)).collect()
}

fn entry(node: &Node, scope: &Scope, errors: &mut Errors) -> Vec<Task> {
    let rewritten = action_form(node, errors);
    let node = rewritten.as_ref().unwrap_or(node);
    let Some(entries) = node.as_map() else {
        errors.push(node.error(format!("a task must be a mapping, found {}", node.kind())));
        return Vec::new();
    };
    type Expand = fn(&Node, &str, &[(Node, Node)], &Scope, &mut Errors) -> Vec<Task>;
    const STRUCTURE: &[(&str, Expand)] = &[
        ("block", block),
        ("import_tasks", include),
        ("include_tasks", include),
        ("import_role", role_task),
        ("include_role", role_task),
    ];
    for (k, _) in entries {
        let Some(key) = k.as_str() else { continue };
        let short = ["ansible.builtin.", "ansible.legacy."]
            .iter()
            .find_map(|p| key.strip_prefix(p))
            .unwrap_or(key);
        if let Some((_, expand)) = STRUCTURE.iter().find(|(name, _)| *name == short) {
            return expand(node, key, entries, scope, errors);
        }
    }
    playbook::parse_task(node, scope, errors)
        .map(|mut t| {
            inherit(&mut t, &scope.inherit);
            // What a block or include hands down is held to the task's rules.
            if scope.inherit.run_once || scope.inherit.delegate_to.is_some() {
                let at = Node::new(Value::Str(t.module.name.into()), t.module_span.clone());
                check_once_per_host(&t, &at, errors);
                check_delegated(&t, &at, errors);
            }
            t
        })
        .into_iter()
        .collect()
}

/// A block's keys, and an include's `apply:`, which hands its tasks
/// keywords as a block does.
fn block_keywords(entries: &[(Node, Node)], errors: &mut Errors) {
    for (k, _) in entries {
        if !keywords::takes(Level::Block, k.as_str().unwrap_or_default()) {
            errors.push(playbook::not_a_keyword(k, Level::Block));
        }
    }
}

fn block(
    node: &Node,
    _key: &str,
    entries: &[(Node, Node)],
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    block_keywords(entries, errors);
    let inner = scope.narrowed(entries, errors);
    let body = node.get("block").expect("a block has 'block:'");
    let (rescue, always) = (node.get("rescue"), node.get("always"));
    if rescue.is_none() && always.is_none() {
        return expand(body, &inner, errors);
    }
    static BLOCKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let section = |part: Part, tasks: &Node, errors: &mut Errors| {
        let mut s = inner.clone();
        s.inherit.frame = Some(Arc::new(Frame {
            block: id,
            part,
            has_rescue: rescue.is_some(),
            outer: inner.inherit.frame.clone(),
        }));
        expand(tasks, &s, errors)
    };
    let mut tasks = section(Part::Body, body, errors);
    tasks.extend(
        rescue
            .map(|r| section(Part::Rescue, r, errors))
            .unwrap_or_default(),
    );
    tasks.extend(
        always
            .map(|a| section(Part::Always, a, errors))
            .unwrap_or_default(),
    );
    tasks
}

/// `import_tasks: file.yml` / `include_tasks: file.yml` (also `{file: …}`).
/// A file name with a template in it is expanded once per file it could
/// name, each copy guarded by a condition that the name renders to it.
fn include(
    node: &Node,
    key: &str,
    entries: &[(Node, Node)],
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    check_include_keys(key, entries, errors);
    let target = include_target(key, node.get(key).expect("the key is there"), errors);
    let Some((file, file_node)) = target else {
        return Vec::new();
    };
    let inner = scope.for_include(node, key, entries, errors);
    let at_run = Deferral {
        dynamic: key.ends_with("include_tasks"),
        node,
        name: include_name(node, || format!("{key} {file}")),
    };
    let body = |s: &Scope, errors: &mut Errors| -> Vec<Task> {
        let mut own = Errors::default();
        let found = candidates(&file, &file_node, s, errors, &mut own);
        if !own.is_empty() {
            return at_run.fail(own, s, errors);
        }
        found
            .into_iter()
            .flat_map(|(path, guard)| {
                let mut g = s.clone();
                g.inherit.included.extend(guard);
                let mut own = Errors::default();
                let tasks = tasks_file(&path, &file_node, &g, &mut own);
                match own.is_empty() {
                    true => tasks,
                    false => at_run.fail(own, &g, errors),
                }
            })
            .collect()
    };
    match include_loop(node) {
        Some(l) => looped(node, &l, &file, &inner, errors, &body),
        None => body(&inner, errors),
    }
}

fn check_include_keys(key: &str, entries: &[(Node, Node)], errors: &mut Errors) {
    for (k, _) in entries {
        let name = k.as_str().unwrap_or_default();
        if name != key && !keywords::takes(Level::Include, name) {
            errors.push(playbook::unknown_key(
                k,
                &format!("{key} keyword"),
                &keywords::taken(Level::Include),
            ));
        }
    }
}

/// The file an include names, from its value or its `file:`; among its
/// arguments only `include_tasks` takes `apply:` too, as in Ansible.
fn include_target(key: &str, v: &Node, errors: &mut Errors) -> Option<(String, Node)> {
    let options: &[&str] = match key.ends_with("include_tasks") {
        true => &["file", "apply"],
        false => &["file"],
    };
    let node = match &v.value {
        Value::Map(args) => match v.get("file") {
            Some(f) => {
                for (k, _) in args
                    .iter()
                    .filter(|(k, _)| !options.contains(&k.as_str().unwrap_or_default()))
                {
                    errors.push(playbook::unknown_key(k, &format!("{key} option"), options));
                }
                f.clone()
            }
            None => {
                errors.push(v.error("an include needs 'file:' (or the file name as its value)"));
                return None;
            }
        },
        _ => v.clone(),
    };
    let name = playbook::string(&node, "file name", errors);
    (!name.is_empty()).then_some((name, node))
}

/// An include's `loop:`, `with_items:` or `with_<lookup>:`, as the list it
/// loops over (a `with_` lookup as the expression that runs it).
fn include_loop(node: &Node) -> Option<Node> {
    let Value::Map(entries) = &node.value else {
        return None;
    };
    entries.iter().find_map(|(k, v)| match k.as_str()? {
        "loop" | "with_items" => Some(v.clone()),
        key if key.starts_with("with_") => Some(playbook::with_loop(k, v)),
        _ => None,
    })
}

/// What an include expands to in a scope (one copy of a loop's body).
type Body<'b> = dyn Fn(&Scope, &mut Errors) -> Vec<Task> + 'b;

/// A `loop:` over an include (`what` names it): for a literal list, one
/// copy of the body per item, with the item bound as the loop variable.
fn looped(
    node: &Node,
    items: &Node,
    what: &str,
    scope: &Scope,
    errors: &mut Errors,
    body: &Body,
) -> Vec<Task> {
    let loop_var = node.get("loop_control").and_then(|c| c.get("loop_var"));
    let loop_var = match loop_var {
        None => "item".to_string(),
        Some(v) => match v.as_str().map(|name| scope.render_at_load(name)) {
            Some(Some(name)) if playbook::is_variable_name(&name) => name,
            _ => {
                errors.push(v.error("an included loop's loop_var must be a variable name, or a template of one that the play's or the include's vars decide at load"));
                return Vec::new();
            }
        },
    };
    let Value::Seq(list) = &items.value else {
        let expr = items.as_str().and_then(single_expression);
        let Some(expr) = expr else {
            errors.push(
                items
                    .error("a loop over included tasks must be a list, or one '{{ expression }}' of one, in nodeprov")
                    .with_hint("includes are expanded before any host is contacted; list the items, or move the loop onto the included tasks"),
            );
            return Vec::new();
        };
        let looped = HostLoop {
            expr,
            loop_var,
            what,
        };
        return looped.expand(node, scope, errors, body);
    };
    let mut out = Vec::new();
    for item in list {
        let mut s = scope.clone();
        let key = Node::new(Value::Str(loop_var.clone()), item.span.clone());
        s.inherit.vars.push((key, item.clone()));
        s.loop_item = item
            .as_str()
            .map(|text| (loop_var.clone(), text.to_string()));
        out.extend(body(&s, errors));
    }
    out
}

/// `{{ expression }}` alone, as the expression.
fn single_expression(text: &str) -> Option<String> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then(|| inner.trim().to_string())
}

/// A loop over an include whose items each host has its own list of.
struct HostLoop<'a> {
    expr: String,
    loop_var: String,
    what: &'a str,
}

impl HostLoop<'_> {
    /// The file once per item the load can count (from the role's
    /// defaults and the variables in scope; none when they do not say),
    /// each copy taking its item from the host's own list and running only
    /// where that list is long enough; then a `fail` task for a host whose
    /// list is longer still. No host runs fewer items than it has.
    fn expand(&self, node: &Node, scope: &Scope, errors: &mut Errors, body: &Body) -> Vec<Task> {
        let text = |s: &str| Node::new(Value::Str(s.into()), node.span.clone());
        let expr = &self.expr;
        let index_var = node
            .get("loop_control")
            .and_then(|c| c.get("index_var"))
            .and_then(Node::as_str);
        let count = self.count_at_load(scope);
        let mut out = Vec::new();
        for i in 0..count {
            let mut s = scope.clone();
            let item = format!("{{{{ ({expr})[{i}] }}}}");
            s.inherit.vars.push((text(&self.loop_var), text(&item)));
            if let Some(index) = index_var {
                let i = Node::new(Value::Int(i as i64), node.span.clone());
                s.inherit.vars.push((text(index), i));
            }
            s.inherit
                .when
                .push(text(&format!("({expr}) | length > {i}")));
            out.extend(body(&s, errors));
        }
        let msg = format!(
            "the loop over the include '{}' has {{{{ ({expr}) | length }}}} items on this host; nodeprov expanded it for {count}, as many as the play and role define before the run",
            self.what
        );
        let task = Node::new(
            Value::Map(vec![
                (text("name"), text(&format!("loop over {}", self.what))),
                (
                    text("fail"),
                    Node::new(
                        Value::Map(vec![(text("msg"), text(&msg))]),
                        node.span.clone(),
                    ),
                ),
                (text("when"), text(&format!("({expr}) | length > {count}"))),
            ]),
            node.span.clone(),
        );
        out.extend(playbook::parse_task(&task, scope, errors).map(|mut t| {
            inherit(&mut t, &scope.inherit);
            t
        }));
        out
    }

    /// How many items the list has by what is known at load (the role's
    /// defaults, the play's vars, then what the role, block and include
    /// set); 0 when that is not enough to say.
    fn count_at_load(&self, scope: &Scope) -> usize {
        // A value that is itself a template, or no list, says nothing.
        let length = format!(
            "{{{{ (({e}) | length) if ({e}) is sequence and ({e}) is not string and ({e}) is not mapping else 'unknown' }}}}",
            e = self.expr
        );
        scope
            .render_at_load(&length)
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The files an include names: one, or for a templated name every file in
/// its folder that the name could render to, each with its guard. None
/// matching is `missing`'s (Ansible's error when the include runs); a name
/// nodeprov cannot expand is `errors`'.
fn candidates(
    file: &str,
    at: &Node,
    scope: &Scope,
    errors: &mut Errors,
    missing: &mut Errors,
) -> Vec<(PathBuf, Option<Node>)> {
    let file = &scope.known_at_load(file);
    if !crate::template::is_templated(file) {
        return vec![(scope.beside(file), None)];
    }
    let Some(expr) = template_as_expression(file) else {
        errors.push(
            at.error(format!(
                "the include name '{file}' is too complex to expand before the run"
            ))
            .with_hint("use '{{ var }}' parts only, such as 'setup-{{ ansible_os_family }}.yml'"),
        );
        return Vec::new();
    };
    let pattern = glob_of(file);
    // The including file matches a pattern such as `{{ os }}.yml` too; it
    // is not a file the name can mean.
    let mut found: Vec<PathBuf> = glob_in(&scope.dir, &pattern)
        .into_iter()
        .filter(|p| !scope.stack.contains(p))
        .collect();
    found.sort();
    if found.is_empty() {
        missing.push(at.error(format!(
            "no file in {} matches the include '{file}'",
            scope.dir.display()
        )));
    }
    found
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&scope.dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            // A lookup (`first_found`) renders the name as a full path.
            let full = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
            let cond = format!(
                "({expr}) in [{}, {}]",
                jinja_string(&rel),
                jinja_string(&full.to_string_lossy())
            );
            let guard = Node::new(Value::Str(cond), at.span.clone());
            (path, Some(guard))
        })
        .collect()
}

/// `setup-{{ ansible_os_family }}.yml` → `'setup-' ~ (ansible_os_family) ~ '.yml'`.
fn template_as_expression(t: &str) -> Option<String> {
    if t.contains("{%") || t.contains("{#") {
        return None;
    }
    let mut parts = Vec::new();
    let mut rest = t;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..].find("}}")? + start;
        if start > 0 {
            parts.push(jinja_string(&rest[..start]));
        }
        parts.push(format!("({})", rest[start + 2..end].trim()));
        rest = &rest[end + 2..];
    }
    if !rest.is_empty() {
        parts.push(jinja_string(rest));
    }
    Some(parts.join(" ~ "))
}

fn jinja_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The name with each `{{ … }}` as `*`.
fn glob_of(t: &str) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        out.push('*');
        rest = rest[start..]
            .find("}}")
            .map_or("", |e| &rest[start + e + 2..]);
    }
    out.push_str(rest);
    out
}

/// Files under `dir` matching a pattern whose `*` stands for any text
/// (also `/`, as a templated part may name a subfolder).
fn glob_in(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let re = format!(
        "^{}$",
        pattern
            .split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*")
    );
    let Ok(re) = regex::Regex::new(&re) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                if re.is_match(&rel.to_string_lossy()) {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// Loads and expands a task file; relative includes inside it resolve
/// against its own folder.
pub(super) fn tasks_file(path: &Path, at: &Node, scope: &Scope, errors: &mut Errors) -> Vec<Task> {
    if scope.stack.len() >= MAX_DEPTH || scope.stack.iter().any(|p| p == path) {
        errors.push(at.error(format!(
            "{} includes itself (through {} files)",
            path.display(),
            scope.stack.len()
        )));
        return Vec::new();
    }
    let root = match yaml::load_file(path) {
        Ok(root) => root,
        Err(d) => {
            errors.push(d);
            return Vec::new();
        }
    };
    let mut inner = scope.clone();
    inner.stack.push(path.to_path_buf());
    if scope.inherit.role.is_none() {
        inner.dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    }
    expand(&root, &inner, errors)
}

/// `import_role:` / `include_role:` as a task.
fn role_task(
    node: &Node,
    key: &str,
    entries: &[(Node, Node)],
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    check_include_keys(key, entries, errors);
    let Some(spec) = playbook::expect_map(node.get(key).expect("the key is there"), key, errors)
    else {
        return Vec::new();
    };
    let dynamic = key.ends_with("include_role");
    let Some(mut request) = RoleRequest::from_task(spec, dynamic, errors) else {
        return Vec::new();
    };
    // `name: "{{ role_path }}/roles/x"`, as linux-system-roles nest theirs.
    request.name = scope.known_at_load(&request.name);
    let inner = scope.for_include(node, key, entries, errors);
    // Ansible includes a role when the task runs: one it cannot find fails
    // that task only, and only if it runs (content guards such includes
    // with `when:` for optional integrations).
    if dynamic && !crate::template::is_templated(&request.name) {
        if let Some(why) = scope.roles.missing(&request.name, &scope.collections) {
            let mut own = Errors::default();
            own.push(node.error(format!("role '{}' not found ({why})", request.name)));
            let at_run = Deferral {
                dynamic,
                node,
                name: include_name(node, || format!("{key} {}", request.name)),
            };
            return at_run.fail(own, &inner, errors);
        }
    }
    let at_run = Deferral {
        dynamic,
        node,
        name: include_name(node, || format!("{key} {}", request.name)),
    };
    let body = |s: &Scope, errors: &mut Errors| {
        let mut own = Errors::default();
        // A role included from a role's tasks has that role as its parent.
        let mut s = s.clone();
        if let Some(parent) = s.inherit.role.clone() {
            s.inherit.parent_roles.insert(0, parent);
        }
        let s = &s;
        let tasks = roles::expand(&request, s, &mut own).tasks;
        match own.is_empty() {
            true => tasks,
            false => at_run.fail(own, s, errors),
        }
    };
    match include_loop(node) {
        // Ansible refuses it too: an import happens before any loop runs.
        Some(_) if !dynamic => {
            errors.push(node.error(format!(
                "a loop over {key} is not allowed: use include_role"
            )));
            Vec::new()
        }
        Some(l) => looped(node, &l, &request.name, &inner, errors, &body),
        None => body(&inner, errors),
    }
}

/// What an include loads, and when Ansible loads it: a static import's
/// errors refuse the playbook; a dynamic include's are found only when it
/// runs (a file or role for another platform, guarded by `when:`).
struct Deferral<'n> {
    dynamic: bool,
    node: &'n Node,
    /// The include as reports name it (`include_tasks windows.yml`).
    name: String,
}

/// The include's own `name:`, else what it includes.
fn include_name(node: &Node, otherwise: impl FnOnce() -> String) -> String {
    node.get("name")
        .and_then(Node::as_str)
        .map_or_else(otherwise, str::to_string)
}

impl Deferral<'_> {
    /// In place of what could not be loaded: for a dynamic include, a
    /// `fail` task that fails with the errors where it is reached (and
    /// `validate` lists them); for a static one, nothing, the errors
    /// refusing the playbook.
    fn fail(&self, own: Errors, scope: &Scope, errors: &mut Errors) -> Vec<Task> {
        let found = own.into_vec();
        if !self.dynamic {
            found.into_iter().for_each(|d| errors.push(d));
            return Vec::new();
        }
        let span = &self.node.span;
        let text = |s: &str| Node::new(Value::Str(s.into()), span.clone());
        let args = Node::new(
            Value::Map(vec![(text("msg"), text(&found[0].message))]),
            span.clone(),
        );
        let task = Node::new(
            Value::Map(vec![(text("name"), text(&self.name)), (text("fail"), args)]),
            span.clone(),
        );
        playbook::parse_task(&task, scope, errors)
            .map(|mut t| {
                inherit(&mut t, &scope.inherit);
                t.run_errors = found;
                t
            })
            .into_iter()
            .collect()
    }
}

/// Conditions that must hold, outermost first, before the task's own.
pub(super) fn guard(task: &mut Task, when: &[Node]) {
    if when.is_empty() {
        return;
    }
    let mut conds = when.to_vec();
    let span = conds[0].span.clone();
    conds.extend(task.when.take().map(conditions).unwrap_or_default());
    task.when = Some(Node::new(Value::Seq(conds), span));
}

/// Hands a block's, include's or role's settings down to one task; the
/// task's own settings win.
fn inherit(task: &mut Task, inh: &Inherit) {
    guard(task, &inh.when);
    if let Some(first) = inh.included.first() {
        task.included = Some(Node::new(
            Value::Seq(inh.included.clone()),
            first.span.clone(),
        ));
    }
    for tag in inh.tags.iter().rev() {
        if !task.tags.contains(tag) {
            task.tags.insert(0, tag.clone());
        }
    }
    if task.become_user.is_none() {
        task.become_user.clone_from(&inh.become_user);
    }
    if !inh.vars.is_empty() {
        let own = task
            .vars_node
            .as_ref()
            .and_then(Node::as_map)
            .unwrap_or_default();
        let mut merged: Vec<(Node, Node)> = inh
            .vars
            .iter()
            .filter(|(k, _)| !own.iter().any(|(o, _)| o.as_str() == k.as_str()))
            .cloned()
            .collect();
        merged.extend(own.iter().cloned());
        let node = Node::new(Value::Map(merged), task.span.clone());
        if let serde_json::Value::Object(m) = node.to_json() {
            task.vars = m;
        }
        task.vars_node = Some(node);
    }
    if !inh.environment.is_empty() {
        let own = std::mem::take(&mut task.environment);
        task.environment = inh.environment.iter().cloned().chain(own).collect();
    }
    task.ignore_errors |= inh.ignore_errors;
    task.no_log |= inh.no_log;
    if task.notify.is_empty() {
        task.notify.clone_from(&inh.notify);
    }
    for topic in &inh.listen {
        if !task.listen.contains(topic) {
            task.listen.push(topic.clone());
        }
    }
    task.run_once |= inh.run_once;
    if task.delegate_to.is_none() {
        task.delegate_to.clone_from(&inh.delegate_to);
    }
    if task.check_mode.is_none() && task.check_mode_if.is_none() {
        task.check_mode = inh.check_mode;
        task.check_mode_if.clone_from(&inh.check_mode_if);
    }
    task.diff = task.diff.or(inh.diff);
    task.throttle = task.throttle.or(inh.throttle);
    if task.role.is_none() {
        task.role.clone_from(&inh.role);
    }
    task.frame.clone_from(&inh.frame);
    // Where a lookup looks for a relative name (`first_found`): the role,
    // then the task file's folder, as Ansible's magic variable has it.
    let search: Vec<serde_json::Value> = (task.search_path(&[]).iter())
        .map(|p| p.display().to_string().into())
        .collect();
    task.vars
        .entry("ansible_search_path")
        .or_insert(serde_json::Value::Array(search));
}

/// One module's `module_defaults`: its name as written, and the
/// parameters with their values.
pub type ModuleDefaults = (String, Vec<(String, Node)>);

/// Ansible's `module_defaults`: parameters a task's module takes where the
/// task gives none, from its play, blocks, roles and includes and the task
/// itself (the nearest wins). A `package` task keeps the defaults of the
/// package managers' own modules (`apt`, `dnf`, …) to take those of its
/// host's, as Ansible's `package` action does.
pub(super) fn module_defaults(
    task: &mut Task,
    written: &str,
    own: Option<&Node>,
    scope: &Scope,
    errors: &mut Errors,
) {
    let mut by_module: Vec<ModuleDefaults> = Vec::new();
    for node in scope.inherit.module_defaults.iter().chain(own) {
        for (name, params) in defaults_entries(node, errors) {
            let name = short_name(&name).to_string();
            let at = match by_module.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    by_module.push((name, Vec::new()));
                    by_module.len() - 1
                }
            };
            let slot = &mut by_module[at].1;
            for (param, value) in params {
                slot.retain(|(p, _)| *p != param);
                slot.push((param, value));
            }
        }
    }
    let frontend =
        task.module.kind == ModuleKind::Frontend && short_name(written) == task.module.name;
    for (module, params) in by_module {
        if same_module(&module, written) {
            let declared = &task.module.params;
            for (param, value) in params {
                let param = declared.canonical(&param).map_or(param, str::to_string);
                if !task.params.iter().any(|(p, _)| *p == param) {
                    task.params.push((param, value));
                }
            }
        } else if frontend
            && is_package_manager(&module)
            && check_backend_defaults(task, &module, &params, errors)
        {
            task.backend_defaults.push((module, params));
        }
    }
}

/// The `module name → parameters` entries of one `module_defaults` value: a
/// mapping, or a list of mappings.
fn defaults_entries(node: &Node, errors: &mut Errors) -> Vec<(String, Vec<(String, Node)>)> {
    let maps: Vec<&Node> = match &node.value {
        Value::Seq(items) => items.iter().collect(),
        _ => vec![node],
    };
    let mut entries = Vec::new();
    for map in maps {
        let Some(pairs) = map.as_map() else {
            errors.push(map.error(format!(
                "module_defaults must map module names to parameters, found {}",
                map.kind()
            )));
            continue;
        };
        for (k, v) in pairs {
            let name = k.as_str().unwrap_or_default();
            if name.starts_with("group/") {
                errors.push(
                    k.error(format!(
                        "module_defaults for the action group '{name}' is not supported by nodeprov"
                    ))
                    .with_hint("give the defaults for each module by name"),
                );
                continue;
            }
            let Some(params) = v.as_map() else {
                errors.push(v.error(format!(
                    "module_defaults for '{name}' must map parameters to values, found {}",
                    v.kind()
                )));
                continue;
            };
            let params = params
                .iter()
                .filter_map(|(p, value)| Some((p.as_str()?.to_string(), value.clone())))
                .collect();
            entries.push((name.to_string(), params));
        }
    }
    entries
}

/// A package manager's defaults must be parameters the native `package`
/// module takes, where nodeprov runs that manager itself.
fn check_backend_defaults(
    task: &Task,
    module: &str,
    params: &[(String, Node)],
    errors: &mut Errors,
) -> bool {
    let spec = task.module;
    if crate::modules::registry::find(short_name(module)).is_none_or(|s| s.name != spec.name) {
        return true;
    }
    let mut ok = true;
    for (param, value) in params {
        if !spec.params.names.contains(&param.as_str()) && spec.params.canonical(param).is_none() {
            errors.push(value.error(format!(
                "module_defaults for '{module}' gives '{param}', which nodeprov's package module does not take"
            )));
            ok = false;
        }
    }
    ok
}

/// The modules Ansible's `pkg_mgr` fact can name, whose defaults a
/// `package` task takes on a host of that manager.
fn is_package_manager(module: &str) -> bool {
    const MANAGERS: &[&str] = &[
        "apt",
        "dnf",
        "dnf5",
        "yum",
        "zypper",
        "apk",
        "pacman",
        "pkgng",
        "portage",
        "openbsd_pkg",
        "pkg5",
        "swdepot",
        "homebrew",
        "macports",
        "urpmi",
        "xbps",
        "installp",
        "sorcery",
        "svr4pkg",
        "rpm_ostree",
    ];
    module
        .rsplit('.')
        .next()
        .is_some_and(|m| MANAGERS.contains(&m))
}

/// `ansible.builtin.apt` and `apt` name one module; so does a collection
/// module's FQCN and its short name.
fn same_module(a: &str, b: &str) -> bool {
    let (a, b) = (short_name(a), short_name(b));
    a == b || a.rsplit('.').next() == Some(b) || b.rsplit('.').next() == Some(a)
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_templated_name_becomes_an_expression_and_a_glob() {
        let t = "setup-{{ ansible_os_family }}.yml";
        assert_eq!(
            template_as_expression(t).unwrap(),
            "'setup-' ~ (ansible_os_family) ~ '.yml'"
        );
        assert_eq!(glob_of(t), "setup-*.yml");
        assert_eq!(template_as_expression("{% if x %}a{% endif %}"), None);
        assert_eq!(jinja_string("it's"), "'it\\'s'");
    }

    fn load(text: &str) -> Result<playbook::Playbook, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.yml");
        std::fs::write(&path, text).unwrap();
        playbook::load(&path).map_err(|errs| {
            errs.into_iter()
                .map(|d| {
                    format!(
                        "{}: {}",
                        d.span.location().rsplit('/').next().unwrap(),
                        d.message
                    )
                })
                .collect()
        })
    }

    #[test]
    fn apply_hands_keywords_to_the_included_tasks_from_the_arguments_or_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.yml"), "- command: inner\n").unwrap();
        std::fs::create_dir_all(dir.path().join("roles/r/tasks")).unwrap();
        std::fs::write(
            dir.path().join("roles/r/tasks/main.yml"),
            "- command: role\n",
        )
        .unwrap();
        let site = dir.path().join("site.yml");
        std::fs::write(
            &site,
            "- hosts: all\n  tasks:\n\
             \x20   - include_tasks: {file: t.yml, apply: {tags: [a], become: true}}\n\
             \x20   - include_tasks: t.yml\n      apply: {tags: [b]}\n\
             \x20   - include_role: {name: r, apply: {tags: [c]}}\n",
        )
        .unwrap();
        let pb = playbook::load(&site).unwrap();
        let tasks = &pb.plays[0].tasks;
        let tags: Vec<&[String]> = tasks.iter().map(|t| t.tags.as_slice()).collect();
        assert_eq!(tags, [&["a".to_string()][..], &["b".into()], &["c".into()]]);
        assert_eq!(tasks[0].become_user, Some(Some("root".into())));
        std::fs::write(
            &site,
            "- hosts: all\n  tasks:\n    - include_tasks: {file: t.yml, bogus: 1}\n\
             \x20   - import_tasks: {file: t.yml, apply: {tags: [a]}}\n",
        )
        .unwrap();
        let errors: Vec<String> = playbook::load(&site)
            .unwrap_err()
            .into_iter()
            .map(|d| d.message)
            .collect();
        assert_eq!(
            errors,
            [
                "unknown include_tasks option 'bogus'",
                "unknown import_tasks option 'apply'"
            ]
        );
    }

    #[test]
    fn until_takes_ansible_defaults_and_whole_numbers() {
        let pb = load("- hosts: all\n  tasks:\n    - command: a\n      until: r.rc == 0\n    - command: b\n      until: [x, y]\n      retries: '0'\n      delay: 2\n    - command: c\n      until: x\n      retries: 10\n").unwrap();
        let retry = |i: usize| pb.plays[0].tasks[i].retry.clone().unwrap();
        assert_eq!((retry(0).retries, retry(0).delay), (None, None));
        assert_eq!(retry(1).retries, Some(Count::Number(0)));
        assert_eq!(retry(1).delay, Some(Count::Number(2)));
        assert_eq!(retry(2).retries, Some(Count::Number(10)));
        assert_eq!(
            [None, Some(0), Some(10)].map(Retry::attempts),
            [3, 1, 11],
            "as ansible-core counts them"
        );
    }

    #[test]
    fn module_defaults_fill_what_a_task_leaves_out_the_nearest_winning() {
        let pb = load("- hosts: all\n  module_defaults:\n    ansible.builtin.file: {mode: '0644', owner: root}\n  tasks:\n    - block:\n        - file: {path: /a, state: touch}\n        - ansible.builtin.file: {path: /b, state: touch, mode: '0600'}\n      module_defaults:\n        - file: {owner: ops}\n    - package: {name: x}\n      module_defaults:\n        apt: {update_cache: true}\n        community.general.zypper: {update_cache: true}\n    - command: date\n").unwrap();
        let tasks = &pb.plays[0].tasks;
        let param = |i: usize, name: &str| {
            let p = tasks[i].params.iter().find(|(n, _)| n == name);
            p.and_then(|(_, v)| v.scalar_text())
        };
        assert_eq!(param(0, "mode").as_deref(), Some("0644"));
        assert_eq!(param(0, "owner").as_deref(), Some("ops"));
        assert_eq!(
            param(1, "mode").as_deref(),
            Some("0600"),
            "the task's own wins"
        );
        assert_eq!(param(1, "owner").as_deref(), Some("ops"));
        let backends: Vec<&str> = tasks[2]
            .backend_defaults
            .iter()
            .map(|(m, _)| m.as_str())
            .collect();
        assert_eq!(backends, ["apt", "community.general.zypper"]);
        assert!(tasks[2].params.iter().all(|(n, _)| n == "name"));
        assert_eq!(tasks[3].params.len(), 1, "other modules take none");
    }

    #[test]
    fn module_defaults_nodeprov_cannot_honour_are_refused_where_written() {
        let errs = load("- hosts: all\n  tasks:\n    - package: {name: x}\n      module_defaults:\n        apt: {no_such: 1}\n        group/aws: {region: x}\n        file: mode\n").unwrap_err();
        assert_eq!(
            errs,
            [
                "site.yml:5:24: module_defaults for 'apt' gives 'no_such', which nodeprov's package module does not take",
                "site.yml:6:9: module_defaults for the action group 'group/aws' is not supported by nodeprov",
                "site.yml:7:15: module_defaults for 'file' must map parameters to values, found a string",
            ]
        );
    }

    #[test]
    fn retries_alone_and_a_bad_count_are_refused_where_written() {
        let errs = load("- hosts: all\n  tasks:\n    - command: a\n      retries: 3\n    - command: b\n      until: x\n      loop: [1]\n    - command: c\n      until: x\n      delay: 'soon'\n").unwrap_err();
        assert_eq!(
            errs,
            [
                "site.yml:4:7: 'retries' without 'until:' is not supported by nodeprov",
                "site.yml:10:14: delay must be a whole number of 0 or more, found soon",
            ]
        );
    }

    #[test]
    fn an_includes_notify_is_handed_to_its_tasks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.yml"),
            "- command: a\n- command: b\n  notify: own\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all\n  tasks:\n    - import_tasks: t.yml\n      notify: restart\n  handlers:\n    - {name: restart, debug: msg=r}\n    - {name: own, debug: msg=o}\n",
        )
        .unwrap();
        let pb = playbook::load(&dir.path().join("site.yml")).unwrap();
        let notified: Vec<Vec<&str>> = pb.plays[0]
            .tasks
            .iter()
            .map(|t| t.notify.iter().map(|(n, _)| n.as_str()).collect())
            .collect();
        assert_eq!(notified, [vec!["restart"], vec!["own"]]);
    }

    #[test]
    fn a_dynamic_include_fails_when_it_runs_where_a_static_import_refuses_the_playbook() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("Debian.yml", "- debug: msg=debian\n");
        write("Windows.yml", "- win_no_such_module: {}\n");
        let site = |include: &str| {
            format!(
                "- hosts: all\n  tasks:\n    - {include}: \"{{{{ os }}}}.yml\"\n    \
                 - name: gone\n      include_tasks: gone.yml\n      when: false\n"
            )
        };
        write("site.yml", &site("include_tasks"));
        let pb = playbook::load(&dir.path().join("site.yml")).unwrap();
        let tasks = &pb.plays[0].tasks;
        let shown: Vec<(&str, usize)> = tasks
            .iter()
            .map(|t| (t.module.name, t.run_errors.len()))
            .collect();
        // Debian's task, and a failing task for each include Ansible would
        // find broken when it runs it.
        assert_eq!(shown, [("debug", 0), ("fail", 1), ("fail", 1)]);
        assert!(tasks[1].run_errors[0]
            .message
            .contains("'win_no_such_module'"));
        assert!(
            tasks[1].included.is_some(),
            "the Windows copy keeps its guard"
        );
        assert_eq!(tasks[2].name, "gone");
        assert!(tasks[2].run_errors[0].message.contains("gone.yml"));

        write("site.yml", &site("import_tasks"));
        let refused = playbook::load(&dir.path().join("site.yml")).unwrap_err();
        assert!(refused[0].message.contains("'win_no_such_module'"));
    }

    #[test]
    fn meta_actions_nodeprov_cannot_honour_are_refused_where_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.yml");
        std::fs::write(
            &path,
            "- hosts: all\n  tasks:\n    - meta: refresh_inventory\n",
        )
        .unwrap();
        // Ansible's meta checks its action when it runs: the task fails then.
        let mut pb = playbook::load(&path).unwrap();
        crate::load::validate::templates(&mut pb).unwrap();
        let msg = pb.run_time_errors()[0].to_string();
        assert!(
            msg.contains("site.yml:3:13") && msg.contains("'refresh_inventory'"),
            "{msg}"
        );
        let errs = load("- hosts: all\n  tasks:\n    - meta: end_play\n      when: x\n    - meta: noop\n      loop: [1]\n").unwrap_err();
        assert_eq!(
            errs[0],
            "site.yml:3:7: 'meta: end_play' with 'when:' is not supported by nodeprov"
        );
        assert_eq!(
            errs[1],
            "site.yml:5:7: a loop over meta is not supported by nodeprov"
        );
    }

    #[test]
    fn a_reboot_runs_once_on_each_host_itself() {
        let errs = load("- hosts: all\n  tasks:\n    - reboot:\n      loop: [1, 2]\n    - reboot:\n      delegate_to: localhost\n    - wait_for_connection:\n      run_once: true\n").unwrap_err();
        assert_eq!(
            errs,
            [
                "site.yml:3:7: a loop over reboot is not supported by nodeprov",
                "site.yml:5:7: 'reboot' cannot be delegated in nodeprov",
                "site.yml:7:7: wait_for_connection with 'run_once' is not supported by nodeprov",
            ]
        );
        assert!(load("- hosts: all\n  tasks:\n    - reboot:\n        reboot_timeout: 900\n    - wait_for_connection:\n").is_ok());
    }

    #[test]
    fn a_timeout_is_whole_seconds_and_zero_is_none() {
        let pb = load("- hosts: all\n  tasks:\n    - command: a\n      timeout: 30\n    - command: b\n      timeout: 0\n    - command: c\n      timeout: -1\n").unwrap();
        let tasks = &pb.plays[0].tasks;
        assert_eq!((tasks[0].timeout, tasks[1].timeout), (Some(30), None));
        // Ansible fails such a task when it runs.
        assert_eq!(tasks[2].run_errors[0].message, "Timeout -1 is invalid");
        let errs =
            load("- hosts: all\n  tasks:\n    - command: b\n      timeout: soon\n").unwrap_err();
        assert_eq!(
            errs,
            ["site.yml:4:16: timeout must be a whole number of 0 or more, found soon"]
        );
    }

    #[test]
    fn delegation_and_run_once_are_checked_where_written() {
        let errs = load("- hosts: all\n  tasks:\n    - command: a\n      run_once: true\n      loop: [1]\n    - command: b\n      delegate_to: '{{ item }}'\n      loop: [h1, h2]\n    - local_action: command c\n    - meta: noop\n      delegate_to: localhost\n").unwrap_err();
        assert_eq!(
            errs,
            [
                "site.yml:7:20: a delegate_to that names the loop variable 'item' is not supported by nodeprov",
                "site.yml:10:7: 'meta' cannot be delegated in nodeprov",
            ]
        );
        let pb = load("- hosts: all\n  tasks:\n    - copy: {dest: /a, content: b}\n      delegate_to: '{{ control }}'\n    - block:\n        - stat: {path: /x}\n        - {command: y, delegate_to: other}\n      delegate_to: localhost\n")
            .unwrap();
        let to = |i: usize| {
            pb.plays[0].tasks[i]
                .delegate_to
                .as_ref()
                .map(|d| d.to.as_str())
        };
        assert_eq!(
            [to(0), to(1), to(2)],
            [Some("{{ control }}"), Some("localhost"), Some("other")]
        );
        let pb = load("- hosts: all\n  tasks:\n    - {command: a, connection: local}\n    - {command: b, connection: local, delegate_to: db}\n").unwrap();
        let d = |i: usize| pb.plays[0].tasks[i].delegate_to.clone().unwrap();
        assert!(d(0).controller && d(0).to == "localhost");
        assert!(d(1).controller && d(1).to == "db");
        let pb = load("- hosts: all\n  tasks:\n    - local_action: command echo hi\n    - action: {module: copy, dest: /x, content: y}\n    - action: file path=/y state=absent\n").unwrap();
        let t = &pb.plays[0].tasks;
        let names: Vec<&str> = t.iter().map(|t| t.module.name).collect();
        assert_eq!(names, ["command", "copy", "file"]);
        assert!(t[0]
            .delegate_to
            .as_ref()
            .is_some_and(|d| d.controller && d.to == "localhost"));
        assert!(t[1].delegate_to.is_none() && t[2].delegate_to.is_none());
        assert_eq!(t[2].params.len(), 2);
        let errs =
            load("- hosts: all\n  tasks:\n    - {command: a, connection: ssh}\n").unwrap_err();
        assert_eq!(
            errs,
            ["site.yml:3:32: a task's connection 'ssh' is not supported by nodeprov"]
        );
    }
}
