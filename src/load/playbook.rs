//! Playbooks: Ansible's shape (plays, tasks, handlers), loaded with a
//! position for every task and parameter, and checked before any host is
//! touched.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::collections::{self, ModuleRef};
use super::keywords::{self, Level};
use super::{roles, tasks};
use crate::base::diag::{suggest, Diagnostic, Span};
use crate::load::ansible_core::{self, AnsibleCoreError};
use crate::load::yaml::{self, Node, Value};
use crate::modules::ansible_module::ANSIBLE_MODULE;
use crate::modules::kit::ansible::{Fallback, Payload};
use crate::modules::kit::module::AnsiblePlugin;
use crate::modules::{self, ModuleSpec};

#[derive(Debug)]
pub struct Playbook {
    pub path: PathBuf,
    pub plays: Vec<Play>,
    /// Variables that cannot be rendered, which Ansible finds only when
    /// something reads them: the tasks that do fail, and `validate` lists
    /// them.
    pub variable_errors: Vec<Diagnostic>,
    /// What Ansible passes over without a word and a run does too (a
    /// `vars_files` entry that is nowhere): every command that loads the
    /// playbook says it.
    pub warnings: Vec<Diagnostic>,
}

impl Playbook {
    /// Everything Ansible finds only when a task runs or a variable is
    /// read, in file order: `validate` lists it, `--strict` refuses it.
    pub fn run_time_errors(&self) -> Vec<&Diagnostic> {
        let tasks = self
            .plays
            .iter()
            .flat_map(|p| p.tasks.iter().chain(&p.handlers).chain(&p.validate));
        let mut all: Vec<&Diagnostic> = tasks
            .flat_map(|t| t.run_errors.iter().chain(&t.loop_refused))
            .chain(&self.variable_errors)
            .collect();
        all.sort_by(|a, b| a.span.order(&b.span));
        all.dedup_by(|a, b| a.span.order(&b.span).is_eq() && a.message == b.message);
        all
    }

    /// A play before the `p`th puts hosts in groups the inventory lacks
    /// (`group_by`, `add_host`): a later `hosts:` naming none it knows may
    /// name one of those, and selects no host rather than being a mistake.
    pub fn groups_made_before(&self, p: usize) -> bool {
        self.plays[..p].iter().any(|play| {
            (play.tasks.iter().chain(&play.handlers)).any(|t| t.module.kind.changes_inventory())
        })
    }
}

/// `serial:` as Ansible takes it: a count, a percentage, or a list of either.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchSize {
    Count(usize),
    Percent(f64),
}

/// What `loop_control` adds to each item's variables besides the item.
#[derive(Clone, Debug, Default)]
pub struct LoopExtras {
    /// `index_var`: the variable holding the item's index, from 0.
    pub index_var: Option<String>,
    /// `extended`: `ansible_loop` (index, first, last, length...), with
    /// `allitems` unless `extended_allitems: false`.
    pub extended: Option<bool>,
}

/// `loop_control`'s `pause` and `break_when`: a loop with either runs its
/// items one after the other, each after the one before it ran.
#[derive(Clone, Debug, Default)]
pub struct LoopPace {
    /// Seconds waited between two items.
    pub pause: Option<std::time::Duration>,
    /// Conditions judged on each item once it ran, its result registered:
    /// the first item they hold for is the loop's last.
    pub break_when: Option<Node>,
}

impl LoopPace {
    pub fn paced(&self) -> bool {
        self.pause.is_some() || self.break_when.is_some()
    }
}

/// Ansible's play `order`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostOrder {
    #[default]
    Inventory,
    ReverseInventory,
    Sorted,
    ReverseSorted,
    Shuffle,
}

impl HostOrder {
    const NAMES: [(&'static str, HostOrder); 5] = [
        ("inventory", HostOrder::Inventory),
        ("reverse_inventory", HostOrder::ReverseInventory),
        ("sorted", HostOrder::Sorted),
        ("reverse_sorted", HostOrder::ReverseSorted),
        ("shuffle", HostOrder::Shuffle),
    ];

    /// Puts hosts given in inventory order in this order.
    pub fn arrange(self, hosts: &mut [String]) {
        match self {
            HostOrder::Inventory => {}
            HostOrder::ReverseInventory => hosts.reverse(),
            HostOrder::Sorted => hosts.sort(),
            HostOrder::ReverseSorted => hosts.sort_by(|a, b| b.cmp(a)),
            HostOrder::Shuffle => {
                // Fisher-Yates over the OS random source.
                for i in (1..hosts.len()).rev() {
                    let mut word = [0u8; 8];
                    rustix::rand::getrandom(&mut word, rustix::rand::GetRandomFlags::empty())
                        .expect("getrandom(2)");
                    let j = (u64::from_ne_bytes(word) % (i as u64 + 1)) as usize;
                    hosts.swap(i, j);
                }
            }
        }
    }
}

fn host_order(node: &Node, errors: &mut Errors) -> HostOrder {
    let name = string(node, "order", errors);
    match HostOrder::NAMES.iter().find(|(n, _)| *n == name) {
        Some((_, order)) => *order,
        None => {
            let names: Vec<&str> = HostOrder::NAMES.iter().map(|(n, _)| *n).collect();
            errors.push(
                node.error(format!("unknown order '{name}'"))
                    .with_hint(format!("one of: {}", names.join(", "))),
            );
            HostOrder::Inventory
        }
    }
}

#[derive(Debug)]
pub struct Play {
    pub name: String,
    /// A host pattern; with templates, rendered before hosts are chosen.
    pub hosts: String,
    /// `remote_user`: the login user where the inventory sets no `ansible_user`.
    pub remote_user: Option<String>,
    /// `connection`: `local` or `ssh`, where the inventory sets no
    /// `ansible_connection`.
    pub connection: Option<String>,
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// `vars:` as written, for template checks and positions.
    pub vars_node: Option<Node>,
    /// Each entry a file name, or a list of names of which the first that
    /// exists is read.
    pub vars_files: Vec<Node>,
    pub become_user: Option<String>,
    /// `become_flags`: sudo's options, in place of nodeprov's `-H`.
    pub become_flags: Option<String>,
    pub gather_facts: bool,
    pub serial: Vec<BatchSize>,
    /// `order`: the order its hosts are taken in, batches included.
    pub order: HostOrder,
    pub max_fail_percentage: Option<f64>,
    pub any_errors_fatal: bool,
    pub tags: Vec<String>,
    pub tasks: Vec<Task>,
    pub handlers: Vec<Task>,
    pub validate: Vec<Task>,
    /// What its public roles give every task of the play.
    pub roles: Arc<roles::Exposed>,
    pub span: Span,
}

#[derive(Debug)]
pub struct Task {
    pub name: String,
    pub module: &'static ModuleSpec,
    pub module_span: Span,
    /// Parameters as written (templates not yet rendered), with positions.
    pub params: Vec<(String, Node)>,
    pub when: Option<Node>,
    pub loop_items: Option<Node>,
    pub loop_var: String,
    pub loop_label: Option<Node>,
    /// `loop_control`'s `index_var` and `extended`.
    pub loop_extras: LoopExtras,
    pub loop_pace: LoopPace,
    /// A `loop_control` value Ansible refuses when the loop starts (a
    /// `loop_var` that is no variable name, a `pause` that is no number):
    /// the looped task fails with it then.
    pub loop_refused: Option<Diagnostic>,
    pub register: Option<String>,
    /// Handler names or `listen` topics, each where it was written.
    pub notify: Vec<(String, Span)>,
    pub listen: Vec<String>,
    pub tags: Vec<String>,
    /// `Some(user)` to escalate, `Some(None)`-like cases folded: `None` = inherit.
    pub become_user: Option<Option<String>>,
    pub ignore_errors: bool,
    /// A templated `ignore_errors` (`"{{ ansible_check_mode }}"`), judged per host.
    pub ignore_errors_if: Option<Node>,
    /// A templated `become`, judged per host: the task runs as its
    /// `become_user` where it holds, as the login user where it does not.
    pub become_if: Option<Node>,
    /// A templated `become_method`, judged per host: where it is not sudo,
    /// the task fails saying so.
    pub become_method_if: Option<Node>,
    /// `no_log`: the task's values are hidden from every report.
    pub no_log: bool,
    pub changed_when: Option<Node>,
    pub failed_when: Option<Node>,
    pub check_mode: Option<bool>,
    /// `diff`: keep (or drop) the task's diffs whatever the run's `--diff`.
    pub diff: Option<bool>,
    /// `throttle`: at most this many hosts apply the task's changes at once.
    pub throttle: Option<u64>,
    /// A templated `check_mode` (`"{{ x | d(ansible_check_mode) }}"`),
    /// judged per host and item.
    pub check_mode_if: Option<Node>,
    /// `async:` and `poll:` where either is templated, judged per host and
    /// item as `timeout:` then (fire-and-forget only when written as 0).
    pub async_if: Option<(Node, Option<Node>)>,
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// `vars:` as written, for template checks and positions.
    pub vars_node: Option<Node>,
    /// The role the task comes from, if any.
    pub role: Option<Arc<Role>>,
    /// `environment:` of the play, its blocks and the task, in that order:
    /// mappings, or templates that render to one; later keys win.
    pub environment: Vec<Node>,
    /// `until:` with its `retries:` and `delay:`.
    pub retry: Option<tasks::Retry>,
    /// The innermost section of a block with `rescue:`/`always:` the task is in.
    pub frame: Option<Arc<tasks::Frame>>,
    /// `timeout:` seconds the task's steps may run.
    pub timeout: Option<u64>,
    /// Fire-and-forget (`async` with `poll: 0`): its steps are started
    /// detached and left running, for at most `timeout` seconds.
    pub detach: bool,
    /// `delegate_to:`: the host its probes and steps go to instead.
    pub delegate_to: Option<tasks::Delegate>,
    /// `run_once`: one host of the batch runs it for all.
    pub run_once: bool,
    /// Ansible's own module, run where nodeprov has no module or lacks a
    /// parameter the task gives.
    pub ansible: Option<Fallback>,
    /// Where Ansible's namesake of a native module is, run instead when a
    /// host's values ask for what the native one cannot do.
    pub ansible_source: Option<Arc<ansible_core::ModuleSource>>,
    /// Conditions under which a templated include names the task's file
    /// (all must hold): otherwise the task was never included.
    pub included: Option<Node>,
    /// A `package` task's `module_defaults` for the module its host's
    /// package manager is (`apt`, `dnf`, …), chosen per host.
    pub backend_defaults: Vec<tasks::ModuleDefaults>,
    /// What Ansible finds only when the task runs (an unknown parameter,
    /// an unknown filter, a Windows module): the task fails with the first
    /// where it is reached, and nowhere else.
    pub run_errors: Vec<Diagnostic>,
    pub span: Span,
}

/// A role a task was loaded from: its defaults are the lowest-precedence
/// variables, and its folders are searched first for `src:` files.
#[derive(Debug)]
pub struct Role {
    pub name: String,
    pub path: PathBuf,
    pub defaults: serde_json::Map<String, serde_json::Value>,
    /// `defaults/main.yml` as written, for template checks and positions.
    pub defaults_node: Option<Node>,
}

impl Task {
    /// Ansible's search path for the task's files (`Task.get_search_path`,
    /// then the loader's base folder): its role, the folder of the file
    /// that holds it, then the playbook's folder.
    pub fn search_path(&self, playbook: &[PathBuf]) -> Vec<PathBuf> {
        let own = Path::new(&self.span.source.name)
            .parent()
            .map(Path::to_path_buf);
        let mut path: Vec<PathBuf> = self.role.iter().map(|r| r.path.clone()).collect();
        for dir in own.into_iter().chain(playbook.iter().cloned()) {
            if !path.contains(&dir) {
                path.push(dir);
            }
        }
        path
    }

    pub fn location(&self) -> String {
        self.span.location()
    }
}

/// Collects every problem in one pass so `validate` reports them all.
#[derive(Default)]
pub(super) struct Errors(Vec<Diagnostic>);

impl Errors {
    pub(super) fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }
}

pub fn load(path: &Path) -> Result<Playbook, Vec<Diagnostic>> {
    load_with(path, &[], &[], &PlayDefaults::default())
}

/// What a play that does not say gets: ansible.cfg's `become`,
/// `become_user` and `gathering`.
#[derive(Clone, Debug)]
pub struct PlayDefaults {
    /// `become`.
    pub escalate: bool,
    pub become_user: Option<String>,
    pub become_flags: Option<String>,
    pub gather_facts: bool,
}

impl Default for PlayDefaults {
    fn default() -> PlayDefaults {
        PlayDefaults {
            escalate: false,
            become_user: None,
            become_flags: None,
            gather_facts: true,
        }
    }
}

/// Loads a playbook, looking for roles also in `roles_path`, and for
/// collections in the playbook's `collections/` then `collections_path`.
pub fn load_with(
    path: &Path,
    roles_path: &[PathBuf],
    collections_path: &[PathBuf],
    defaults: &PlayDefaults,
) -> Result<Playbook, Vec<Diagnostic>> {
    let finder = Arc::new(roles::Finder::new(path, roles_path, collections_path));
    let mut errors = Errors::default();
    let at = Loading {
        finder: &finder,
        defaults,
        warnings: Default::default(),
    };
    let plays = plays_of(path, &at, &mut vec![path.to_path_buf()], &mut errors);
    // Sections expand after the play's keys are read: report in file order.
    errors.0.sort_by(|a, b| a.span.order(&b.span));
    if errors.0.is_empty() {
        Ok(Playbook {
            path: path.to_path_buf(),
            plays,
            variable_errors: Vec::new(),
            warnings: at.warnings.into_inner(),
        })
    } else {
        Err(errors.0)
    }
}

/// What every play of one load shares.
struct Loading<'a> {
    finder: &'a Arc<roles::Finder>,
    defaults: &'a PlayDefaults,
    /// What Ansible passes over (its versions differ) and a run does too.
    warnings: std::cell::RefCell<Vec<Diagnostic>>,
}

/// The plays of one playbook file, with `import_playbook:` entries
/// replaced by the plays they name.
fn plays_of(path: &Path, at: &Loading, stack: &mut Vec<PathBuf>, errors: &mut Errors) -> Vec<Play> {
    let root = match yaml::load_file(path) {
        Ok(root) => root,
        Err(d) => {
            errors.push(d);
            return Vec::new();
        }
    };
    let Value::Seq(items) = &root.value else {
        errors.push(root.error(format!(
            "a playbook must be a list of plays, found {}",
            root.kind()
        )));
        return Vec::new();
    };
    if items.is_empty() {
        // A run of nothing is no success to report (Ansible: "Empty playbook").
        errors.push(root.error("the playbook holds no play: nothing to do"));
    }
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut plays = Vec::new();
    for item in items {
        let import = ["import_playbook", "ansible.builtin.import_playbook"]
            .iter()
            .find_map(|k| item.get(k));
        match import {
            Some(file) => plays.extend(imported(item, file, &dir, at, stack, errors)),
            None => plays.extend(parse_play(item, &dir, at, errors)),
        }
    }
    plays
}

fn imported(
    item: &Node,
    file: &Node,
    dir: &Path,
    at: &Loading,
    stack: &mut Vec<PathBuf>,
    errors: &mut Errors,
) -> Vec<Play> {
    let mut when = Vec::new();
    let mut vars: Option<&Node> = None;
    let mut tags = Vec::new();
    for (k, v) in item.as_map().unwrap_or_default() {
        match k.as_str() {
            // As Ansible, a condition on the import holds for each task imported.
            Some("when") => when.extend(
                condition(v, "when", errors)
                    .map(tasks::conditions)
                    .unwrap_or_default(),
            ),
            // Each imported play takes them over its own, as in Ansible.
            Some("vars") => vars = Some(v),
            Some("tags") => tags = string_list(v, "tags", errors),
            Some("import_playbook" | "ansible.builtin.import_playbook" | "name") => {}
            _ => errors.push(k.error(format!(
                "'{}' on import_playbook is not supported by nodeprov",
                k.scalar_text().unwrap_or_default()
            ))),
        }
    }
    let (name, path) = imported_file(file, dir, at, errors);
    if stack.contains(&path) || stack.len() > 32 {
        errors.push(file.error(format!("{name} imports itself")));
        return Vec::new();
    }
    stack.push(path.clone());
    let mut plays = plays_of(&path, at, stack, errors);
    stack.pop();
    let import_vars = vars.map(|v| (v, vars_map(v, errors)));
    for play in &mut plays {
        let all = play
            .tasks
            .iter_mut()
            .chain(&mut play.handlers)
            .chain(&mut play.validate);
        all.for_each(|t| tasks::guard(t, &when));
        if let Some((node, map)) = &import_vars {
            play.vars.extend(map.clone());
            play.vars_node = Some(merged_vars_node(play.vars_node.take(), node));
        }
        for tag in &tags {
            if !play.tags.contains(tag) {
                play.tags.push(tag.clone());
            }
        }
    }
    plays
}

/// The file an `import_playbook:` names. The newest ansible-core takes the
/// whole text as its name; older ones (2.15 to 2.17 at least) take its
/// first word and pass over the rest (`key=value` words, which never set
/// anything). A text that names no file is read the older way, with a
/// warning.
fn imported_file(file: &Node, dir: &Path, at: &Loading, errors: &mut Errors) -> (String, PathBuf) {
    let text = string(file, "import_playbook", errors);
    let whole = dir.join(&text);
    let words = super::kv::split_args(&text).unwrap_or_default();
    match words.as_slice() {
        [first, _, ..] if !whole.exists() => {
            let first = first.trim().to_string();
            at.warnings.borrow_mut().push(file.error(format!(
                "import_playbook: '{}' after the file name is passed over, as older ansible-core releases pass it over (the newest takes the whole text as the file's name); give variables in the import's vars:",
                text[text.find(&first).map_or(0, |i| i + first.len())..].trim()
            )));
            let path = dir.join(&first);
            (first, path)
        }
        _ => (text, whole),
    }
}

/// A play's `vars:` with an import's over them, each entry where written.
fn merged_vars_node(own: Option<Node>, over: &Node) -> Node {
    let Some(own) = own else {
        return over.clone();
    };
    let mut entries = own.as_map().unwrap_or_default().to_vec();
    entries.extend(over.as_map().unwrap_or_default().iter().cloned());
    Node::new(Value::Map(entries), own.span.clone())
}

pub(super) fn unknown_key(key: &Node, what: &str, known: &[&str]) -> Diagnostic {
    let name = key.scalar_text().unwrap_or_default();
    let d = key.error(format!("unknown {what} '{name}'"));
    match suggest(&name, known.iter().copied()) {
        Some(s) => d.with_hint(format!("did you mean '{s}'?")),
        None => d.with_hint(format!("expected one of: {}", known.join(", "))),
    }
}

pub(super) fn expect_map<'a>(
    node: &'a Node,
    what: &str,
    errors: &mut Errors,
) -> Option<&'a [(Node, Node)]> {
    let m = node.as_map();
    if m.is_none() {
        errors.push(node.error(format!("{what} must be a mapping, found {}", node.kind())));
    }
    m
}

pub(super) fn string(node: &Node, what: &str, errors: &mut Errors) -> String {
    match &node.value {
        Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            node.scalar_text().unwrap_or_default()
        }
        _ => {
            errors.push(node.error(format!("{what} must be a string, found {}", node.kind())));
            String::new()
        }
    }
}

pub(super) fn boolean(node: &Node, what: &str, errors: &mut Errors) -> bool {
    boolean_value(node).unwrap_or_else(|| {
        errors.push(node.error(format!(
            "{what} must be a boolean (yes/no), found {}",
            shown(node)
        )));
        false
    })
}

/// A value as an error shows what was found: the text, or its kind.
fn shown(node: &Node) -> String {
    match &node.value {
        Value::Str(s) => format!("'{s}'"),
        _ => node.kind().to_string(),
    }
}

/// `no_log:`, a boolean; a templated one (`"{{ ansible_verbosity < 2 }}"`,
/// as linux-system-roles write it) hides the task, since a report cannot
/// wait for a host's values to decide whether it may show a secret.
pub(super) fn no_log(node: &Node, errors: &mut Errors) -> bool {
    match &node.value {
        _ if is_template(node) => true,
        _ => boolean(node, "no_log", errors),
    }
}

/// `check_mode:`, a boolean, or a template judged per host (the second).
pub(super) fn check_mode(v: &Node, errors: &mut Errors) -> (Option<bool>, Option<Node>) {
    match is_template(v) {
        true => (None, Some(v.clone())),
        false => (Some(boolean(v, "check_mode", errors)), None),
    }
}

fn is_template(v: &Node) -> bool {
    matches!(&v.value, Value::Str(s) if crate::template::is_templated(s))
}

/// A string or a list of strings (`tags: a` or `tags: [a, b]`).
pub(super) fn string_list(node: &Node, what: &str, errors: &mut Errors) -> Vec<String> {
    match &node.value {
        Value::Seq(items) => items.iter().map(|i| string(i, what, errors)).collect(),
        Value::Str(s) => s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        _ => vec![string(node, what, errors)],
    }
}

/// A `collections:` list (of a play or a role's meta): collection names,
/// in search order.
pub(super) fn collection_list(node: &Node, errors: &mut Errors) -> Vec<String> {
    let items = match &node.value {
        Value::Seq(items) => items.as_slice(),
        _ => std::slice::from_ref(node),
    };
    let mut list = Vec::new();
    for item in items {
        let name = string(item, "a collection", errors);
        if collections::is_collection_name(&name) {
            list.push(name);
        } else if !name.is_empty() {
            errors.push(item.error(format!(
                "'{name}' is not a collection name (namespace.collection)"
            )));
        }
    }
    list
}

/// A name or a list of names; unlike tags, handler names may hold commas.
pub(super) fn names(node: &Node, what: &str, errors: &mut Errors) -> Vec<(String, Span)> {
    let items = match &node.value {
        Value::Seq(items) => items.as_slice(),
        _ => std::slice::from_ref(node),
    };
    items
        .iter()
        .map(|n| (string(n, what, errors), n.span.clone()))
        .collect()
}

pub(super) fn vars_map(
    node: &Node,
    errors: &mut Errors,
) -> serde_json::Map<String, serde_json::Value> {
    for (k, _) in node.as_map().unwrap_or_default() {
        identifier(k, "variable", errors);
    }
    match node.to_json() {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => serde_json::Map::new(),
        _ => {
            errors.push(node.error(format!("vars must be a mapping, found {}", node.kind())));
            serde_json::Map::new()
        }
    }
}

/// A mapping key as text; a list or mapping used as a key is an error.
fn key_name(key: &Node, what: &str, errors: &mut Errors) -> Option<String> {
    let name = key.scalar_text();
    if name.is_none() {
        errors.push(key.error(format!("{what} must be a plain name, found {}", key.kind())));
    }
    name
}

/// Names that templates read back (`register`, `loop_var`, variable
/// names) must be Jinja identifiers, or no template could refer to them.
fn identifier(node: &Node, what: &str, errors: &mut Errors) -> String {
    let name = string(node, what, errors);
    if !name.is_empty() && !is_identifier(&name) {
        errors.push(
            node.error(format!("{what} '{name}' is not a valid variable name"))
                .with_hint("use letters, digits and '_', not starting with a digit"),
        );
    }
    name
}

pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `when:`-style conditions: an expression, a boolean, or a list of them.
pub(super) fn condition(node: &Node, what: &str, errors: &mut Errors) -> Option<Node> {
    let items = match &node.value {
        Value::Seq(items) => items.as_slice(),
        _ => std::slice::from_ref(node),
    };
    for bad in items
        .iter()
        .filter(|n| matches!(n.value, Value::Seq(_) | Value::Map(_)))
    {
        errors.push(bad.error(format!(
            "{what} must be an expression, a boolean or a list of them, found {}",
            bad.kind()
        )));
    }
    Some(node.clone())
}

/// `loop:` is a list, or a template that renders to one.
fn loop_items(node: &Node, what: &str, errors: &mut Errors) -> Option<Node> {
    match &node.value {
        Value::Seq(_) => Some(node.clone()),
        Value::Str(s) if crate::template::is_templated(s) => Some(node.clone()),
        _ => {
            errors.push(
                node.error(format!("{what} must be a list, found {}", node.kind()))
                    .with_hint("write a YAML list, or an expression such as \"{{ hosts_list }}\""),
            );
            None
        }
    }
}

/// `vars_files:` is a file name or a list of them; an entry that is itself
/// a list names alternatives, the first that exists being read.
fn vars_files(node: &Node, errors: &mut Errors) -> Vec<Node> {
    let files = match &node.value {
        Value::Seq(items) => items.to_vec(),
        _ => vec![node.clone()],
    };
    let is_name = |f: &Node| matches!(f.value, Value::Str(_));
    files
        .into_iter()
        .filter(|f| match &f.value {
            Value::Str(_) => true,
            Value::Seq(names) if !names.is_empty() && names.iter().all(is_name) => true,
            _ => {
                errors.push(f.error(format!(
                    "vars_files must be a file name or a list of file names, found {}",
                    f.kind()
                )));
                false
            }
        })
        .collect()
}

/// A key not taken at `level`: refused with its reason where Ansible has
/// it there, else unknown, with the nearest keyword taken there.
pub(super) fn not_a_keyword(key: &Node, level: Level) -> Diagnostic {
    let name = key.scalar_text().unwrap_or_default();
    match keywords::refused(level, &name) {
        Some(k) => key
            .error(format!("'{name}' is not supported by nodeprov"))
            .with_hint(format!("{}; remove it", k.notes)),
        None => unknown_key(
            key,
            &format!("{} keyword", level.name()),
            &keywords::taken(level),
        ),
    }
}

/// `connection:` names a transport nodeprov has: `local`, or SSH under
/// Ansible's names for it.
pub(super) fn connection(node: &Node, errors: &mut Errors) -> String {
    let name = string(node, "connection", errors);
    match name.as_str() {
        "local" => name,
        // Paramiko is another SSH client: the same connection to nodeprov.
        "ssh"
        | "smart"
        | "paramiko"
        | "paramiko_ssh"
        | "ansible.builtin.ssh"
        | "ansible.builtin.paramiko_ssh" => "ssh".into(),
        "ansible.builtin.local" => "local".into(),
        _ => {
            errors.push(
                node.error(format!("connection '{name}' is not supported"))
                    .with_hint("nodeprov connects over ssh or local"),
            );
            name
        }
    }
}

fn become_method(node: &Node, errors: &mut Errors) {
    let method = string(node, "become_method", errors);
    if node.scalar_text().is_some() && !crate::base::escalation::is_sudo(&method) {
        errors.push(
            node.error(format!("become_method '{method}' is not supported"))
                .with_hint("only sudo is supported"),
        );
    }
}

/// Hosts always proceed independently: the batched design has no per-task
/// barrier, so Ansible's `linear` cannot be honoured and is refused rather
/// than silently run as `free`.
fn strategy(node: &Node, errors: &mut Errors) {
    let name = string(node, "strategy", errors);
    let scalar = !matches!(node.value, Value::Seq(_) | Value::Map(_) | Value::Null);
    if scalar && name != "free" {
        errors.push(
            node.error(format!("unsupported strategy '{name}'"))
                .with_hint("only 'free' is supported: each host runs its tasks independently"),
        );
    }
}

fn fail_percentage(node: &Node, errors: &mut Errors) -> f64 {
    let pct = percent(node, errors);
    if !(0.0..=100.0).contains(&pct) {
        errors.push(node.error(format!(
            "max_fail_percentage must be between 0 and 100, found {pct}"
        )));
    }
    pct
}

fn parse_play(node: &Node, dir: &Path, at: &Loading, errors: &mut Errors) -> Option<Play> {
    let entries = expect_map(node, "a play", errors)?;
    let mut play = Play {
        name: String::new(),
        hosts: String::new(),
        remote_user: None,
        connection: None,
        vars: serde_json::Map::new(),
        vars_node: None,
        vars_files: Vec::new(),
        become_user: None,
        become_flags: at.defaults.become_flags.clone(),
        gather_facts: at.defaults.gather_facts,
        serial: Vec::new(),
        max_fail_percentage: None,
        order: HostOrder::Inventory,
        any_errors_fatal: false,
        tags: Vec::new(),
        tasks: Vec::new(),
        handlers: Vec::new(),
        validate: Vec::new(),
        roles: Arc::default(),
        span: node.span.clone(),
    };
    let mut become_ = at.defaults.escalate;
    let mut hosts_seen = false;
    let mut scope = tasks::Scope::new(dir.to_path_buf(), at.finder.clone());
    // What a play hands its tasks and handlers as a block does, whatever
    // the order its keys are written in.
    let handed: Vec<(Node, Node)> = entries
        .iter()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                Some("check_mode" | "diff" | "ignore_errors" | "throttle")
            )
        })
        .cloned()
        .collect();
    scope = scope.narrowed(&handed, errors);
    // The playbook is being expanded too: no include names it (a templated
    // `{{ os }}.yml` beside it does not mean it).
    let own = Path::new(&node.span.source.name).file_name();
    scope.stack.extend(own.map(|name| dir.join(name)));
    if let Some(env) = node.get("environment") {
        scope.inherit_environment(environment(env, errors));
    }
    if let Some(v) = node.get("no_log") {
        scope.inherit_no_log(boolean(v, "no_log", errors));
    }
    if let Some(v) = node.get("collections") {
        scope.collections = collection_list(v, errors);
    }
    if let Some(v) = node.get("module_defaults") {
        scope.inherit_module_defaults(v);
    }
    let mut sections: [Option<&Node>; 4] = [None; 4];
    for (k, v) in entries {
        let Some(key) = key_name(k, "a play keyword", errors) else {
            continue;
        };
        match key.as_str() {
            // Ansible leaves a null value as no name.
            "name" if v.value == Value::Null => {}
            "name" => play.name = string(v, "name", errors),
            "hosts" => {
                hosts_seen = true;
                play.hosts = string_list(v, "hosts", errors).join(":");
            }
            "remote_user" => play.remote_user = Some(string(v, "remote_user", errors)),
            "connection" => play.connection = Some(connection(v, errors)),
            "vars" => {
                play.vars = vars_map(v, errors);
                play.vars_node = Some(v.clone());
            }
            "vars_files" => play.vars_files = vars_files(v, errors),
            "become" => become_ = boolean(v, "become", errors),
            "become_user" => play.become_user = Some(string(v, "become_user", errors)),
            "gather_facts" => play.gather_facts = boolean(v, "gather_facts", errors),
            "serial" => play.serial = parse_serial(v, errors),
            "order" => play.order = host_order(v, errors),
            "max_fail_percentage" => play.max_fail_percentage = Some(fail_percentage(v, errors)),
            "any_errors_fatal" => play.any_errors_fatal = boolean(v, "any_errors_fatal", errors),
            "strategy" => strategy(v, errors),
            "tags" => play.tags = string_list(v, "tags", errors),
            "pre_tasks" => sections[0] = Some(v),
            "roles" => sections[1] = Some(v),
            "tasks" => sections[2] = Some(v),
            "post_tasks" => sections[3] = Some(v),
            "handlers" => play.handlers = tasks::expand(v, &scope, errors),
            "validate" => play.validate = tasks::expand(v, &scope, errors),
            "become_method" => become_method(v, errors),
            "become_flags" if is_template(v) => {
                errors.push(v.error("a templated become_flags is not supported: sudo is started once per host, before any variable of the play is known"))
            }
            "become_flags" => play.become_flags = Some(string(v, "become_flags", errors)),
            "environment" | "no_log" | "collections" | "module_defaults" | "check_mode"
            | "diff" | "ignore_errors" | "throttle" => {}
            _ => errors.push(not_a_keyword(k, Level::Play)),
        }
    }
    if !hosts_seen {
        errors.push(node.error("a play needs 'hosts:' (a host pattern such as 'all' or 'gpu')"));
    }
    scope.play_vars = Arc::new(play.vars.clone());
    play.tasks = play_tasks(&sections, &scope, errors);
    let mut collected = scope.play.lock().expect("not poisoned");
    play.handlers
        .extend(std::mem::take(&mut collected.handlers));
    play.roles = Arc::new(std::mem::take(&mut collected.exposed));
    drop(collected);
    play.become_user = become_.then(|| {
        play.become_user
            .clone()
            .or_else(|| at.defaults.become_user.clone())
            .unwrap_or_else(|| "root".into())
    });
    if play.name.is_empty() {
        // Ansible names an unnamed play after its host pattern.
        play.name = play.hosts.clone();
    }
    Some(play)
}

impl Play {
    /// The folder of the file that holds the play: Ansible's base folder
    /// while it runs (`playbook_dir`, where `vars_files` are looked for),
    /// which for a play of an imported playbook is that file's folder.
    pub fn dir(&self) -> &Path {
        Path::new(&self.span.source.name)
            .parent()
            .unwrap_or(Path::new(""))
    }

    fn all_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks
            .iter()
            .chain(&self.handlers)
            .chain(&self.validate)
    }

    /// The user a task's steps run as: its own `become`, else the play's;
    /// `None` is the login user.
    pub fn task_user<'a>(&'a self, task: &'a Task) -> &'a Option<String> {
        task.become_user.as_ref().unwrap_or(&self.become_user)
    }

    /// The user every script of the play runs as: the play's, or root when
    /// a task becomes another user than the play's or one each host names
    /// (`become_user: "{{ app_user }}"`); each step then drops to its
    /// task's user.
    pub fn script_user(&self) -> Option<String> {
        let per_host = (self.become_user.as_deref()).is_some_and(crate::template::is_templated);
        let one_user = self
            .all_tasks()
            .all(|t| *self.task_user(t) == self.become_user);
        match one_user && !per_host {
            true => self.become_user.clone(),
            false => Some("root".into()),
        }
    }
}

fn percent(v: &Node, errors: &mut Errors) -> f64 {
    match &v.value {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Str(s) => s.trim_end_matches('%').trim().parse().unwrap_or_else(|_| {
            errors.push(v.error(format!("expected a percentage, found '{s}'")));
            0.0
        }),
        _ => {
            errors.push(v.error(format!("expected a percentage, found {}", v.kind())));
            0.0
        }
    }
}

fn parse_serial(v: &Node, errors: &mut Errors) -> Vec<BatchSize> {
    let one = |n: &Node, errors: &mut Errors| match &n.value {
        Value::Int(i) if *i > 0 => Some(BatchSize::Count(*i as usize)),
        Value::Str(s) if s.ends_with('%') => match s.trim_end_matches('%').trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Some(BatchSize::Percent(p)),
            _ => {
                errors.push(n.error(format!(
                    "serial '{s}' must be a percentage above 0% and at most 100%"
                )));
                None
            }
        },
        _ => {
            errors.push(n.error(
                "serial must be a positive number, a percentage like '25%', or a list of those",
            ));
            None
        }
    };
    match &v.value {
        Value::Seq(items) => items.iter().filter_map(|n| one(n, errors)).collect(),
        _ => one(v, errors).into_iter().collect(),
    }
}

/// `pre_tasks`, `roles`, `tasks` and `post_tasks`, in Ansible's order.
fn play_tasks(
    sections: &[Option<&Node>; 4],
    scope: &tasks::Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    let [pre, roles, tasks, post] = sections;
    let mut out: Vec<Task> = pre
        .map(|v| tasks::expand(v, scope, errors))
        .unwrap_or_default();
    if let Some(list) = roles {
        match &list.value {
            Value::Seq(entries) => {
                for entry in entries {
                    if let Some(req) = roles::RoleRequest::from_entry(entry, errors) {
                        out.extend(roles::expand(&req, scope, errors).tasks);
                    }
                }
            }
            Value::Null => {}
            _ => errors.push(list.error(format!("roles must be a list, found {}", list.kind()))),
        }
    }
    out.extend(
        tasks
            .map(|v| tasks::expand(v, scope, errors))
            .unwrap_or_default(),
    );
    out.extend(
        post.map(|v| tasks::expand(v, scope, errors))
            .unwrap_or_default(),
    );
    out
}

pub(super) fn parse_task(node: &Node, scope: &tasks::Scope, errors: &mut Errors) -> Option<Task> {
    let entries = expect_map(node, "a task", errors)?;
    let mut module: Option<(&'static ModuleSpec, &Node, &Node)> = None;
    let mut args: Option<&Node> = None;
    let mut task = Task {
        name: String::new(),
        module: &modules::registry()[0],
        module_span: node.span.clone(),
        params: Vec::new(),
        when: None,
        loop_items: None,
        loop_var: "item".into(),
        loop_label: None,
        loop_extras: LoopExtras::default(),
        loop_pace: LoopPace::default(),
        loop_refused: None,
        register: None,
        notify: Vec::new(),
        listen: Vec::new(),
        tags: Vec::new(),
        become_user: None,
        ignore_errors: false,
        ignore_errors_if: None,
        become_if: None,
        become_method_if: None,
        no_log: false,
        changed_when: None,
        failed_when: None,
        check_mode: None,
        diff: None,
        throttle: None,
        check_mode_if: None,
        async_if: None,
        vars: serde_json::Map::new(),
        vars_node: None,
        role: None,
        environment: Vec::new(),
        retry: None,
        frame: None,
        timeout: None,
        detach: false,
        delegate_to: None,
        run_once: false,
        ansible: None,
        ansible_source: None,
        included: None,
        backend_defaults: Vec::new(),
        run_errors: Vec::new(),
        span: node.span.clone(),
    };
    let mut own_defaults = None;
    let mut retry_keys = tasks::RetryKeys::default();
    let mut become_: Option<bool> = None;
    let mut become_user: Option<String> = None;
    let mut unknown = false;
    let mut first_found = None;
    // Keys neither native modules nor keywords: (key, value, module name).
    let mut foreign: Vec<(&Node, &Node, String)> = Vec::new();
    let mut async_run = None;
    let mut task_connection = None;
    let mut delegate_facts = false;
    let mut poll = None;
    let (mut templated_async, mut templated_poll) = (None, None);
    for (k, v) in entries {
        let Some(key) = key_name(k, "a task keyword", errors) else {
            continue;
        };
        let key = key.as_str();
        match key {
            "name" if v.value == Value::Null => {}
            "name" => task.name = string(v, "name", errors),
            "when" => task.when = condition(v, key, errors),
            "loop" | "with_items" => task.loop_items = loop_items(v, key, errors),
            "with_first_found" => first_found = Some(v),
            _ if key.starts_with("with_") => task.loop_items = Some(with_loop(k, v)),
            "loop_control" => parse_loop_control(v, &mut task, errors),
            "register" => task.register = Some(identifier(v, "register", errors)),
            "notify" => task.notify = names(v, "notify", errors),
            "listen" => {
                task.listen = names(v, "listen", errors)
                    .into_iter()
                    .map(|n| n.0)
                    .collect()
            }
            "tags" => task.tags = string_list(v, "tags", errors),
            // The play's scripts may have to escalate for it: it counts as
            // becoming until a host judges it.
            "become" if is_template(v) => {
                task.become_if = Some(v.clone());
                become_ = Some(true);
            }
            "become" => become_ = Some(boolean(v, "become", errors)),
            "become_user" => become_user = Some(string(v, "become_user", errors)),
            "ignore_errors" => match v.as_str() {
                Some(t) if crate::template::is_templated(t) => {
                    task.ignore_errors_if = Some(v.clone())
                }
                _ => task.ignore_errors = boolean(v, "ignore_errors", errors),
            },
            "changed_when" => task.changed_when = condition(v, key, errors),
            "failed_when" => task.failed_when = condition(v, key, errors),
            "check_mode" => (task.check_mode, task.check_mode_if) = check_mode(v, errors),
            "vars" => {
                task.vars = vars_map(v, errors);
                task.vars_node = Some(v.clone());
            }
            "args" => args = Some(v),
            "environment" => task.environment.extend(environment(v, errors)),
            "become_method" if is_template(v) => task.become_method_if = Some(v.clone()),
            "become_method" => become_method(v, errors),
            "no_log" => task.no_log = no_log(v, errors),
            "diff" => task.diff = Some(boolean(v, "diff", errors)),
            "throttle" => task.throttle = tasks::seconds("throttle", v, errors),
            "timeout" => tasks::timeout(&mut task, v, errors),
            "until" | "retries" | "delay" => retry_keys.add(k, v),
            "delegate_to" => task.delegate_to = tasks::delegate_to(v, errors),
            "delegate_facts" => delegate_facts = boolean(v, key, errors),
            "run_once" => task.run_once = boolean(v, key, errors),
            "connection" => task_connection = Some(v),
            "async" | "poll" if is_template(v) => match key {
                "async" => templated_async = Some(v.clone()),
                _ => templated_poll = Some(v.clone()),
            },
            "async" => async_run = Some((k, v, tasks::seconds("async", v, errors))),
            "poll" => poll = Some((v, tasks::seconds("poll", v, errors))),
            "module_defaults" => own_defaults = Some(v),
            _ if keywords::refused(Level::Task, key).is_some() => {
                errors.push(not_a_keyword(k, Level::Task))
            }
            _ => match collections::module(key, &scope.collections, &scope.roles.collections) {
                ModuleRef::Native(spec) if module.is_none() => module = Some((spec, k, v)),
                ModuleRef::Native(_) => {
                    errors.push(k.error(format!("a task runs one module; '{key}' is a second one")))
                }
                ModuleRef::Foreign(fqcn) => foreign.push((k, v, fqcn)),
                ModuleRef::Unknown => foreign.push((k, v, key.to_string())),
            },
        }
    }
    // One key nodeprov does not know, and no module: Ansible's own module,
    // if the controller's ansible-core has it.
    match (module.is_some(), foreign.as_slice()) {
        (false, [(k, v, name)]) => match ansible_module(name, handed_over(name, v, args), scope) {
            Ok(payload) => {
                module = Some((&ANSIBLE_MODULE, k, v));
                task.run_errors
                    .extend(payload.unrunnable().map(|why| k.error(why)));
                task.ansible = Some(Fallback {
                    payload,
                    why: "no native module".into(),
                });
            }
            Err(why) => {
                unknown = true;
                errors.push(not_runnable(k, name, scope, &why));
            }
        },
        (_, keys) => {
            for (k, _, name) in keys {
                unknown = true;
                errors.push(not_runnable(
                    k,
                    name,
                    scope,
                    &AnsibleCoreError::Refused("a task runs one module".into()),
                ));
            }
        }
    }
    task.become_user = become_setting(become_, become_user);
    // After delegate_to, which it may turn local, whatever the key order.
    if let Some(v) = task_connection {
        tasks::task_connection(&mut task, v, errors);
    }
    if let Some(d) = &mut task.delegate_to {
        d.facts = delegate_facts;
    }
    task.retry = retry_keys.parse(errors);
    if templated_async.is_some() || templated_poll.is_some() {
        // Either may only be known per host: both are judged then.
        let literal = |n: Option<&Node>| n.cloned();
        let seconds = templated_async.or_else(|| literal(async_run.map(|(_, v, _)| v)));
        let every = templated_poll.or_else(|| literal(poll.map(|(v, _)| v)));
        if let Some(seconds) = seconds {
            task.async_if = Some((seconds, every));
        }
    } else if let Some((_, _, Some(seconds @ 1..))) = async_run {
        // `async: 0` runs the task as any other, as in Ansible.
        tasks::run_async(&mut task, seconds, poll.and_then(|(_, p)| p));
    }
    let Some((spec, key, value)) = module else {
        // An unknown key already said what is wrong: most likely the module.
        if !unknown {
            errors.push(node.error("this task names no module").with_hint(format!(
                "add one of: {}",
                modules::registry().iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            )));
        }
        return None;
    };
    task.module = spec;
    task.module_span = key.span.clone();
    // Ansible's plugin bypasses the host loop: one host runs it for all.
    if spec.kind == modules::ModuleKind::NewHosts {
        task.run_once = true;
    }
    if let Some(terms) = first_found {
        task.loop_items = Some(first_found_loop(spec, terms));
    }
    task.params = module_params(spec, value, args, errors);
    canonical_names(spec, &mut task.params, errors);
    // Judged as written: a dropped `remote_src: false` reads as absent.
    let handed = spec.plugin.is_some_and(|p| hands_over(&p, &task.params));
    drop_native_defaults(spec, &mut task.params);
    let written = key.as_str().unwrap_or_default();
    tasks::module_defaults(&mut task, written, own_defaults, scope, errors);
    if task.ansible.is_none() && first_found.is_none() {
        if let Some(fallback) = native_lacks(spec, key, &task.params, handed, scope) {
            task.module = &ANSIBLE_MODULE;
            task.ansible = Some(fallback);
            tasks::check_once_per_host(&task, key, errors);
            tasks::check_delegated(&task, key, errors);
            tasks::check_detached(&task, key, errors);
            return Some(task);
        }
    }
    check_params(spec, key, &mut task, errors);
    if task.ansible.is_none() && task.run_errors.is_empty() && first_found.is_none() {
        let source = Arc::new(ansible_core::ModuleSource {
            module: key.scalar_text().unwrap_or_default(),
            library: scope.library_dirs(),
            collections: scope.collections.clone(),
            collection_paths: scope.collection_paths(),
        });
        if let Some(fallback) = native_cannot(spec, key, &task.params, &source) {
            task.module = &ANSIBLE_MODULE;
            task.ansible = Some(fallback);
        } else if spec.kind == modules::ModuleKind::State && spec.plugin.is_none() {
            task.ansible_source = Some(source);
        }
    }
    tasks::check_once_per_host(&task, key, errors);
    tasks::check_delegated(&task, key, errors);
    tasks::check_detached(&task, key, errors);
    Some(task)
}

thread_local! {
    /// For building tasks whose parameters hold no template, which render nothing.
    static LITERAL: crate::template::Templates = crate::template::Templates::new();
}

/// Values the native module takes but cannot carry out (`file`'s
/// `follow: false`): the task runs Ansible's module, which can, as for a
/// parameter the native module lacks. Decided here for parameters written
/// without templates; without ansible-core, `validate` refuses them.
fn native_cannot(
    spec: &ModuleSpec,
    key: &Node,
    params: &[(String, Node)],
    source: &ansible_core::ModuleSource,
) -> Option<Fallback> {
    if spec.controller_file.is_some_and(|f| f.template) || spec.params.any_variable {
        return None;
    }
    let entries: Vec<(String, serde_json::Value, Span)> = params
        .iter()
        .map(|(k, n)| (k.clone(), n.to_json(), n.span.clone()))
        .collect();
    if entries
        .iter()
        .any(|(k, v, _)| crate::exec::vars::has_template(v) || crate::template::is_templated(k))
    {
        return None;
    }
    let why = LITERAL.with(|t| {
        let vars = serde_json::Value::Object(serde_json::Map::new());
        let sources = crate::modules::params::Sources::default();
        let ctx = crate::modules::params::BuildCtx::new(t, &vars, &[], &sources, None);
        let p = crate::modules::params::Params::new(spec.name, key.span.clone(), entries, &ctx);
        match (spec.build)(&p) {
            Err(e) if e.unsupported => Some(e.native_cannot(spec.name)),
            _ => None,
        }
    })?;
    let payload = source.payload().ok()?;
    Some(Fallback { payload, why })
}

fn ansible_module(
    name: &str,
    module_only: bool,
    scope: &tasks::Scope,
) -> Result<Arc<Payload>, AnsibleCoreError> {
    let library = scope.library_dirs();
    let collection_paths = scope.collection_paths();
    ansible_core::module(&ansible_core::Query {
        module: name,
        module_only,
        library: &library,
        collections: &scope.collections,
        collection_paths: &collection_paths,
    })
}

/// Parameters the native module does not take but Ansible's own module
/// documents (`copy`'s `remote_src`, `dnf`'s `nobest`): the task runs
/// Ansible's module instead. A parameter neither knows stays an error.
fn native_lacks(
    spec: &ModuleSpec,
    key: &Node,
    params: &[(String, Node)],
    module_only: bool,
    scope: &tasks::Scope,
) -> Option<Fallback> {
    if spec.params.any_variable {
        return None;
    }
    let lacking: Vec<&str> = params
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !spec.params.names.contains(n) && spec.params.canonical(n).is_none())
        .filter(|n| *n != VARIABLE_PARAMS)
        .collect();
    // Ansible's plugin may hand the task to its module on the host as it
    // is (`copy` with `remote_src: true`): `module_only`.
    let host_side = spec.plugin.is_some_and(|p| host_side_only(spec, &p)) && module_only;
    if lacking.is_empty() && !host_side {
        return None;
    }
    let payload = ansible_module(&key.scalar_text()?, module_only, scope).ok()?;
    let documented = payload.options.as_ref()?;
    if !lacking.iter().all(|n| documented.iter().any(|o| o == n)) {
        return None;
    }
    let why = match lacking.is_empty() {
        true => "Ansible's plugin hands the task to its module on the host".to_string(),
        false => format!("the native module lacks '{}'", lacking.join("', '")),
    };
    Some(Fallback { payload, why })
}

/// Whether the native module does only what Ansible's plugin does itself:
/// its plugin hands the task over both when a parameter the native module
/// does not take is true and when it is absent (`assemble`'s `remote_src`,
/// true by default), so only that parameter's false is the native one.
fn host_side_only(spec: &ModuleSpec, plugin: &AnsiblePlugin) -> bool {
    plugin.hands_over.iter().any(|(param, when)| {
        *when && plugin.hands_over.contains(&(param, false)) && !spec.params.names.contains(param)
    })
}

/// Whether the action plugin of a module nodeprov has no native version
/// of hands the task, as written, to its module on the host.
fn handed_over(name: &str, value: &Node, args: Option<&Node>) -> bool {
    let Some(plugin) = modules::foreign_plugin(name) else {
        return false;
    };
    let mut given: Vec<(String, Node)> = Vec::new();
    for node in std::iter::once(value).chain(args) {
        match &node.value {
            Value::Map(entries) => given.extend(
                entries
                    .iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.clone()))),
            ),
            // `key=value` words of a free-form line.
            Value::Str(line) => {
                given.extend(crate::base::shell::split(line).iter().filter_map(|w| {
                    let (k, v) = w.split_once('=')?;
                    Some((
                        k.to_string(),
                        Node::new(Value::Str(v.to_string()), node.span.clone()),
                    ))
                }))
            }
            _ => {}
        }
    }
    hands_over(&plugin, &given)
}

/// Whether Ansible's action plugin hands these parameters to its module
/// unchanged.
fn hands_over(plugin: &AnsiblePlugin, params: &[(String, Node)]) -> bool {
    plugin.hands_over.iter().any(|(param, when)| {
        let given = params.iter().find(|(n, _)| n == param);
        match when {
            true => given.is_some_and(|(_, v)| boolean_value(v) == Some(true)),
            false => given.is_none(),
        }
    })
}

/// The boolean a parameter's value reads as, as `boolean()` reads it;
/// `None` for what is no boolean (left to the module to refuse).
fn boolean_value(v: &Node) -> Option<bool> {
    match &v.value {
        Value::Bool(b) => Some(*b),
        Value::Str(s) => modules::params::parse_bool(s),
        Value::Int(0) => Some(false),
        Value::Int(1) => Some(true),
        _ => None,
    }
}

/// A hand-over parameter at the value that keeps the task on the
/// controller (`remote_src: false`) asks for what the native module does
/// anyway; it is dropped when the native module does not take it. Any
/// other value (`remote_src: maybe`) stays, to be judged as given.
fn drop_native_defaults(spec: &ModuleSpec, params: &mut Vec<(String, Node)>) {
    let Some(plugin) = spec.plugin else {
        return;
    };
    params.retain(|(n, v)| {
        spec.params.names.contains(&n.as_str())
            || !plugin
                .hands_over
                .iter()
                .any(|(p, when)| p == n && *when && boolean_value(v) == Some(false))
    });
}

/// A key nodeprov cannot run: not native, and not a module the
/// controller's ansible-core can run for it (`why`).
fn not_runnable(k: &Node, name: &str, scope: &tasks::Scope, why: &AnsibleCoreError) -> Diagnostic {
    let refused = match collections::split_fqcn(name) {
        Some((collection, _)) if !collections::builtin(collection) => {
            collections::foreign_module(k, name, why)
        }
        _ => {
            let d = unknown_module(k);
            // A near miss of a name nodeprov knows is most likely a typo.
            if d.hint
                .as_deref()
                .is_some_and(|h| h.starts_with("did you mean"))
            {
                return collections::with_missing_collections(
                    d,
                    &scope.collections,
                    &scope.roles.collections,
                );
            }
            let hint = format!("Ansible's own module: {why}");
            d.with_hint(hint)
        }
    };
    collections::with_missing_collections(refused, &scope.collections, &scope.roles.collections)
}

/// A key that is neither a task keyword nor a module: a typo gets a
/// suggestion; anything else is named as unsupported with the modules
/// nodeprov has (their canonical names, not every alias).
fn unknown_module(k: &Node) -> Diagnostic {
    let name = k.scalar_text().unwrap_or_default();
    let known: Vec<&str> = modules::all_names()
        .chain(keywords::taken(Level::Task))
        .collect();
    if let Some(s) = suggest(&name, known) {
        return k
            .error(format!("unknown module or task keyword '{name}'"))
            .with_hint(format!("did you mean '{s}'?"));
    }
    let modules: Vec<&str> = modules::registry().iter().map(|s| s.name).collect();
    k.error(format!(
        "'{name}' is not a module or task keyword supported by nodeprov"
    ))
    .with_hint(format!("modules nodeprov has: {}", modules.join(", ")))
}

/// An `environment:` value: a mapping of variable names, or a template
/// that renders to one (`"{{ proxy_env }}"`).
pub(super) fn environment(v: &Node, errors: &mut Errors) -> Option<Node> {
    match &v.value {
        Value::Map(entries) => {
            for (k, _) in entries {
                let name = k.scalar_text().unwrap_or_default();
                if !is_identifier(&name) {
                    errors.push(k.error(format!("'{name}' is not an environment variable name")));
                }
            }
            Some(v.clone())
        }
        Value::Str(s) if crate::template::is_templated(s) => Some(v.clone()),
        Value::Null => None,
        _ => {
            errors.push(v.error(format!(
                "environment must be a mapping or a template of one, found {}",
                v.kind()
            )));
            None
        }
    }
}

/// `become`/`become_user` as one setting: `Some(None)` runs as the login
/// user, `Some(Some(u))` as `u`, `None` inherits.
pub(super) fn become_setting(
    become_: Option<bool>,
    user: Option<String>,
) -> Option<Option<String>> {
    match (become_, user) {
        (Some(false), _) => Some(None),
        (Some(true), user) => Some(Some(user.unwrap_or_else(|| "root".into()))),
        (None, Some(user)) => Some(Some(user)),
        (None, None) => None,
    }
}

fn parse_loop_control(v: &Node, task: &mut Task, errors: &mut Errors) {
    let Some(entries) = expect_map(v, "loop_control", errors) else {
        return;
    };
    let mut allitems = true;
    let mut extended = false;
    // Ansible checks these values when the loop starts, so a task that
    // never loops never fails for them.
    let mut refused = Vec::new();
    for (k, v) in entries {
        let key = k.as_str().unwrap_or_default();
        if is_template(v) && !matches!(key, "label" | "break_when") {
            errors.push(v.error(format!(
                "loop_control's '{key}' is decided when the playbook loads; give a value, not a template"
            )));
            continue;
        }
        let mut refuse = |msg: String| refused.push(v.error(msg));
        match key {
            "loop_var" => task.loop_var = loop_name(v, key, &mut refuse, errors),
            "label" => {
                string(v, "label", errors);
                task.loop_label = Some(v.clone());
            }
            "index_var" => {
                task.loop_extras.index_var = Some(loop_name(v, key, &mut refuse, errors))
            }
            "extended" => extended = loop_flag(v, key, &mut refuse),
            "extended_allitems" => allitems = loop_flag(v, key, &mut refuse),
            "pause" => {
                let seconds = match &v.value {
                    Value::Int(_) | Value::Float(_) | Value::Str(_) => {
                        tasks::seconds_of(&v.to_json())
                    }
                    _ => None,
                };
                match seconds {
                    Some(s) if s > 0.0 => {
                        task.loop_pace.pause = Some(std::time::Duration::from_secs_f64(s))
                    }
                    Some(_) => {}
                    None => refuse(format!(
                        "Error processing keyword 'pause': The value {} could not be converted to 'float'.",
                        crate::base::python::repr(&v.to_json())
                    )),
                }
            }
            "break_when" => task.loop_pace.break_when = Some(v.clone()),
            _ => errors.push(unknown_key(
                k,
                "loop_control key",
                &[
                    "loop_var",
                    "label",
                    "index_var",
                    "extended",
                    "extended_allitems",
                    "pause",
                    "break_when",
                ],
            )),
        }
    }
    task.loop_extras.extended = extended.then_some(allitems);
    task.loop_refused = refused.into_iter().next();
}

/// `loop_var` or `index_var`: a name Ansible can set as a variable.
fn loop_name(v: &Node, key: &str, refuse: &mut impl FnMut(String), errors: &mut Errors) -> String {
    let name = string(v, key, errors);
    if !is_variable_name(&name) {
        refuse(format!("Invalid '{key}': Invalid variable name '{name}'."));
    }
    name
}

fn loop_flag(v: &Node, key: &str, refuse: &mut impl FnMut(String)) -> bool {
    boolean_value(v).unwrap_or_else(|| {
        refuse(format!(
            "Error processing keyword '{key}': The value {} could not be converted to 'bool'.",
            crate::base::python::repr(&v.to_json())
        ));
        false
    })
}

/// A name Ansible takes for a variable: an identifier that is not one of
/// Python's keywords (`ansible.utils.vars.isidentifier`).
pub fn is_variable_name(name: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    is_identifier(name) && !KEYWORDS.contains(&name)
}

/// The module's parameters from its mapping, its free-form string
/// (`command: echo hi`, or `copy: src=a dest=b`), and `args:`.
/// The parameter that holds a task's arguments given as one template
/// (`yum_repository: "{{ item }}"`, `args: "{{ repo }}"`): rendered per
/// host into a mapping that the arguments written beside it override, as
/// Ansible's `_variable_params`.
pub const VARIABLE_PARAMS: &str = "_variable_params";

/// A string that is one template and nothing else.
fn is_whole_template(s: &str) -> bool {
    let (masked, templates) = mask_templates(s.trim());
    templates.len() == 1 && masked == "\u{E000}0\u{E001}" && templates[0].starts_with("{{")
}

fn module_params(
    spec: &ModuleSpec,
    value: &Node,
    args: Option<&Node>,
    errors: &mut Errors,
) -> Vec<(String, Node)> {
    let mut params: Vec<(String, Node)> = Vec::new();
    let entries = |m: &[(Node, Node)]| -> Vec<(String, Node)> {
        m.iter()
            .map(|(k, v)| (k.scalar_text().unwrap_or_default(), v.clone()))
            .collect()
    };
    match &value.value {
        Value::Map(m) => params.extend(entries(m)),
        Value::Null => {}
        Value::Str(s) => match spec.free_form {
            Some(name) => params.extend(free_form_params(spec, name, s, value, errors)),
            None if is_whole_template(s) => params.push((VARIABLE_PARAMS.into(), value.clone())),
            None => params.extend(key_value_params(s, value, errors)),
        },
        _ => errors.push(value.error(format!(
            "parameters of '{}' must be a mapping, found {}",
            spec.name,
            value.kind()
        ))),
    }
    match args {
        Some(a) if a.as_str().is_some_and(is_whole_template) => {
            params.push((VARIABLE_PARAMS.into(), a.clone()));
        }
        Some(a) => {
            if let Some(m) = expect_map(a, "args", errors) {
                params.extend(entries(m));
            }
        }
        None => {}
    }
    params
}

/// A free-form module's string (`command: make chdir=/src`,
/// `include_vars: a.yml`), as Ansible's `parse_kv` reads it: a command
/// line gives up only its options (`creates=`, `chdir=`…), any other
/// module every `key=value` word; the rest is the free-form parameter.
fn free_form_params(
    spec: &ModuleSpec,
    name: &str,
    s: &str,
    node: &Node,
    errors: &mut Errors,
) -> Vec<(String, Node)> {
    let read = match spec.kind {
        crate::modules::ModuleKind::Command => super::kv::parse_command(s),
        _ => super::kv::parse(s),
    };
    let kv = match read {
        Ok(kv) => kv,
        Err(why) => {
            errors.push(node.error(why));
            return Vec::new();
        }
    };
    let text = |v: String| Node::new(Value::Str(v), node.span.clone());
    let free = kv.raw.map(|r| (name.to_string(), r));
    (free.into_iter().chain(kv.pairs))
        .map(|(k, v)| (k, text(v)))
        .collect()
}

/// `copy: src=a dest=b`, as Ansible's `parse_kv` reads it; words without a
/// key are `_raw_params`, which a module that takes no free form refuses
/// when the task runs, as Ansible's does.
fn key_value_params(s: &str, node: &Node, errors: &mut Errors) -> Vec<(String, Node)> {
    let kv = match super::kv::parse(s) {
        Ok(kv) => kv,
        Err(why) => {
            errors.push(node.error(why));
            return Vec::new();
        }
    };
    let text = |v: String| Node::new(Value::Str(v), node.span.clone());
    let raw = kv.raw.map(|r| ("_raw_params".to_string(), r));
    (kv.pairs.into_iter().chain(raw))
        .map(|(k, v)| (k, text(v)))
        .collect()
}

/// `with_<lookup>:` loops as the `loop:` expression Ansible documents for
/// each (`with_nested: [a, b]` is `loop: "{{ a | product(b) | list }}"`).
pub(super) fn with_loop(k: &Node, v: &Node) -> Node {
    let key = k.as_str().unwrap_or_default();
    // The lookups that take several lists become filters when the value
    // lists them; any other shape goes to the lookup itself, which fails the
    // task when it runs with Ansible's own message, as Ansible does.
    let lists: Vec<String> = match &v.value {
        Value::Seq(items) => items.iter().map(jinja_expr).collect(),
        _ => Vec::new(),
    };
    let expr = match (key, lists.as_slice()) {
        ("with_flattened" | "with_community.general.flattened", _) => {
            format!("{} | flatten", jinja_expr(v))
        }
        ("with_nested" | "with_cartesian", [first, rest @ ..]) => {
            format!("{first} | product({}) | list", rest.join(", "))
        }
        ("with_together", [first, rest @ ..]) => {
            format!("{first} | zip({}) | list", rest.join(", "))
        }
        ("with_fileglob", _) => format!("query('fileglob', {})", jinja_expr(v)),
        ("with_subelements", [first, rest @ ..]) if subelements_filter_takes(v) => {
            format!("{first} | subelements({})", rest.join(", "))
        }
        // Any other lookup runs as Ansible's `with_` runs it: on the terms
        // the value lists (validate refuses a lookup nobody has).
        _ => {
            let name = serde_json::Value::String(key["with_".len()..].to_string());
            format!("_with_lookup({name}, {})", jinja_expr(v))
        }
    };
    Node::new(Value::Str(format!("{{{{ {expr} }}}}")), v.span.clone())
}

/// Whether `with_subelements`' terms are what the filter takes: a list or
/// mapping (or a template of one), a key's text and perhaps a mapping of
/// flags (`{skip_missing: true}`).
fn subelements_filter_takes(v: &Node) -> bool {
    match &v.value {
        Value::Seq(items) => {
            let list = |n: &Node| matches!(n.value, Value::Str(_) | Value::Seq(_) | Value::Map(_));
            match &items[..] {
                [first, key] => list(first) && key.as_str().is_some(),
                [first, key, flags] => {
                    list(first) && key.as_str().is_some() && matches!(flags.value, Value::Map(_))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// `with_first_found:` loops over the first file found, as the
/// `first_found` lookup finds it; like Ansible, the module says which role
/// folder is searched (`vars/` for include_vars, `templates/` for template).
fn first_found_loop(spec: &ModuleSpec, terms: &Node) -> Node {
    let subdir = ["template", "var", "file"]
        .into_iter()
        .find(|d| spec.name.contains(d))
        .unwrap_or("file");
    let expr = format!(
        "{{{{ query('first_found', {}, subdir='{subdir}s') }}}}",
        jinja_expr(terms)
    );
    Node::new(Value::Str(expr), terms.span.clone())
}

/// A YAML value as a Jinja expression: `"{{ x }}"` is `(x)`, a string
/// holding templates their concatenation, anything else a literal.
fn jinja_expr(n: &Node) -> String {
    jinja_literal(&n.to_json())
}

/// `"a{{ x }}b"` as `("a" ~ (x) ~ "b")`; a string with `{% %}` stays text.
fn string_expr(s: &str) -> String {
    // The expression is a playbook value, whose string constants are read
    // back verbatim (see template::backslash): the text goes in as it is,
    // between quotes it does not hold; escaping it would add backslashes.
    let quoted = |t: &str| match (t.contains('"'), t.contains('\''), t.ends_with('\\')) {
        (false, _, false) => format!("\"{t}\""),
        (true, false, false) => format!("'{t}'"),
        _ => serde_json::Value::String(t.to_string()).to_string(),
    };
    if !crate::template::is_templated(s) || s.contains("{%") {
        return quoted(s);
    }
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        if start > 0 {
            parts.push(quoted(&rest[..start]));
        }
        parts.push(format!("({})", rest[start + 2..start + len].trim()));
        rest = &rest[start + len + 2..];
    }
    if !rest.is_empty() {
        parts.push(quoted(rest));
    }
    match parts.len() {
        1 => parts.remove(0),
        _ => format!("({})", parts.join(" ~ ")),
    }
}

fn jinja_literal(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::Null => "none".into(),
        J::String(s) => string_expr(s),
        J::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(jinja_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        J::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", J::String(k.clone()), jinja_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Ansible splits `key=value` arguments around `{{ … }}` and `{% … %}`
/// as units, whatever spaces or quotes they hold: each is swapped for a
/// placeholder while the words are split.
fn mask_templates(s: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut found = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{").into_iter().chain(rest.find("{%")).min() {
        let close = if rest[start..].starts_with("{{") {
            "}}"
        } else {
            "%}"
        };
        let Some(len) = rest[start..].find(close) else {
            break;
        };
        let end = start + len + 2;
        out.push_str(&rest[..start]);
        out.push_str(&format!("\u{E000}{}\u{E001}", found.len()));
        found.push(rest[start..end].to_string());
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, found)
}

/// Each parameter under its declared name: an alias (`dest` for `path`)
/// is read as the name it stands for, and two names of one parameter in a
/// task are an error, not one of them silently winning.
fn canonical_names(spec: &ModuleSpec, params: &mut [(String, Node)], errors: &mut Errors) {
    let mut seen: Vec<(String, String)> = Vec::new();
    for (name, value) in params.iter_mut() {
        let written = std::mem::take(name);
        let declared = spec
            .params
            .canonical(&written)
            .unwrap_or(&written)
            .to_string();
        match seen.iter().find(|(d, w)| *d == declared && *w != written) {
            Some((_, first)) => errors.push(value.error(format!(
                "'{written}' and '{first}' name one parameter of '{}': give it once",
                spec.name
            ))),
            None => seen.push((declared.clone(), written)),
        }
        *name = declared;
    }
}

/// What nodeprov cannot do refuses the run; a parameter Ansible's module
/// would refuse fails the task when it runs, as Ansible's module checks
/// its arguments then.
fn check_params(spec: &ModuleSpec, key: &Node, task: &mut Task, errors: &mut Errors) {
    let params = &task.params;
    let wrong = &mut task.run_errors;
    let variable = params.iter().any(|(n, _)| n == VARIABLE_PARAMS);
    for (name, value) in params {
        // A templated name is checked once rendered, by the module.
        let templated = spec.params.any_variable && (is_identifier(name) || name.contains("{{"));
        if templated || name == VARIABLE_PARAMS {
            continue;
        }
        let lacked = spec
            .plugin
            .and_then(|p| p.lacked().find(|(l, _)| l == name));
        let switch = spec
            .plugin
            .is_some_and(|p| p.hands_over.iter().any(|(h, when)| h == name && *when));
        if switch && !spec.params.names.contains(&name.as_str()) {
            // Only a literal true hands the task over, and a literal false is
            // dropped before: what is left cannot be told apart at load.
            let why = match is_template(value) {
                true => "is decided when the playbook loads; give true or false, not a template"
                    .to_string(),
                false => format!("must be a boolean (yes/no), found {}", shown(value)),
            };
            errors.push(Diagnostic::new(
                &value.span,
                format!("parameter '{name}' of '{}' {why}", spec.name),
            ));
        } else if let Some((_, why)) = lacked {
            errors.push(Diagnostic::new(
                &value.span,
                format!(
                    "parameter '{name}' of '{}' is not supported by nodeprov: {why}",
                    spec.name
                ),
            ));
        } else if !spec.params.names.contains(&name.as_str()) {
            let d = Diagnostic::new(
                &value.span,
                // Ansible's module words it so, when the task runs.
                format!("Unsupported parameters for ({}) module: {name}", spec.name),
            );
            let hint = match suggest(name, spec.params.names.iter().copied()) {
                Some(s) => format!("did you mean '{s}'?"),
                None => format!("'{}' takes: {}", spec.name, spec.params.names.join(", ")),
            };
            wrong.push(d.with_hint(hint));
        }
    }
    // What the template gives is checked once rendered, by the module.
    for required in spec.params.required.iter().filter(|_| !variable) {
        if !params.iter().any(|(n, _)| n == required) {
            wrong.push(key.error(format!(
                "module '{}' needs parameter '{required}'",
                spec.name
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Playbook, Vec<Diagnostic>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.yml");
        std::fs::write(&path, text).unwrap();
        load(&path).map_err(|errs| {
            errs.into_iter()
                .map(|mut d| {
                    d.span = Span::new(
                        std::sync::Arc::new(crate::base::diag::Source {
                            name: "site.yml".into(),
                            text: text.into(),
                        }),
                        d.span.line,
                        d.span.col,
                    );
                    d
                })
                .collect()
        })
    }

    #[test]
    fn loads_plays_tasks_and_positions() {
        let pb = load_text(
            "- name: base\n  hosts: gpu\n  serial: [1, '50%']\n  tasks:\n    - name: swappiness\n      sysctl: {name: vm.swappiness, value: 10}\n      tags: [sysctl]\n      notify: reload\n",
        )
        .unwrap();
        let play = &pb.plays[0];
        assert_eq!(play.hosts, "gpu");
        assert_eq!(play.serial, [BatchSize::Count(1), BatchSize::Percent(50.0)]);
        let task = &play.tasks[0];
        assert_eq!(task.module.name, "sysctl");
        assert_eq!(task.module_span.line, 6);
        assert_eq!(task.module_span.col, 7);
        assert_eq!(task.params[0].0, "name");
        assert_eq!(
            task.params[1].1.span.location().rsplit('/').next().unwrap(),
            "site.yml:6:44"
        );
    }

    #[test]
    fn a_parameter_alias_loads_as_the_declared_name() {
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - systemd: {daemon-reload: true, name: x, state: started}\n",
        )
        .unwrap();
        let names: Vec<&str> = pb.plays[0].tasks[0]
            .params
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, ["daemon_reload", "name", "state"]);
    }

    #[test]
    fn an_unnamed_play_is_named_after_its_hosts() {
        let pb =
            load_text("- hosts: gpu:&rack1\n  tasks: []\n- name: named\n  hosts: all\n").unwrap();
        assert_eq!(pb.plays[0].name, "gpu:&rack1");
        assert_eq!(pb.plays[1].name, "named");
    }

    #[test]
    fn unknown_module_names_position_and_suggests() {
        let errs =
            load_text("- hosts: all\n  tasks:\n    - sysctll: {name: a, value: 1}\n").unwrap_err();
        assert_eq!(errs[0].span.location(), "site.yml:3:7");
        assert_eq!(errs[0].message, "unknown module or task keyword 'sysctll'");
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean 'sysctl'?"));
    }

    #[test]
    fn a_templated_no_log_hides_the_task() {
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - command: a\n      no_log: \"{{ ansible_verbosity < 2 }}\"\n    - command: b\n      no_log: false\n",
        )
        .unwrap();
        let hidden: Vec<bool> = pb.plays[0].tasks.iter().map(|t| t.no_log).collect();
        assert_eq!(hidden, [true, false]);
    }

    #[test]
    fn async_with_poll_bounds_the_task_as_timeout_does() {
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - command: a\n      async: 600\n      poll: 5\n    - command: b\n      async: 600\n      timeout: 30\n    - command: c\n      async: 0\n",
        )
        .unwrap();
        let timeouts: Vec<Option<u64>> = pb.plays[0].tasks.iter().map(|t| t.timeout).collect();
        assert_eq!(timeouts, [Some(600), Some(30), None]);
        let errs = load_text("- hosts: all\n  tasks:\n    - command: a\n      debugger: always\n")
            .unwrap_err();
        assert_eq!(errs[0].message, "'debugger' is not supported by nodeprov");
        assert!(errs[0].hint.as_deref().unwrap().contains("debugger"));
    }

    #[test]
    fn a_plays_check_mode_diff_and_ignore_errors_reach_its_tasks_and_handlers() {
        let pb = load_text("- hosts: all\n  handlers:\n    - name: h\n      debug: msg=h\n  tasks:\n    - debug: msg=t\n    - debug: msg=u\n      check_mode: false\n      diff: true\n  check_mode: true\n  diff: false\n  ignore_errors: yes\n  name: null\n").unwrap();
        let play = &pb.plays[0];
        let modes: Vec<(Option<bool>, Option<bool>, bool)> = play
            .tasks
            .iter()
            .chain(&play.handlers)
            .map(|t| (t.check_mode, t.diff, t.ignore_errors))
            .collect();
        let (on, off) = (Some(true), Some(false));
        assert_eq!(modes, [(on, off, true), (off, on, true), (on, off, true)]);
        assert_eq!(play.name, "all", "a null name is no name");
    }

    #[test]
    fn host_orders_are_ansibles() {
        let arranged = |order: HostOrder| {
            let mut hosts: Vec<String> = ["b", "c", "a"].map(String::from).to_vec();
            order.arrange(&mut hosts);
            hosts
        };
        assert_eq!(arranged(HostOrder::Inventory), ["b", "c", "a"]);
        assert_eq!(arranged(HostOrder::ReverseInventory), ["a", "c", "b"]);
        assert_eq!(arranged(HostOrder::Sorted), ["a", "b", "c"]);
        assert_eq!(arranged(HostOrder::ReverseSorted), ["c", "b", "a"]);
        let mut shuffled = arranged(HostOrder::Shuffle);
        shuffled.sort();
        assert_eq!(shuffled, ["a", "b", "c"]);
        let errs = load_text("- hosts: all\n  order: random\n  tasks: []\n").unwrap_err();
        assert_eq!(errs[0].message, "unknown order 'random'");
    }

    #[test]
    fn unknown_parameter_suggests_nearest() {
        // Ansible's module finds it when the task runs: the task keeps it.
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - copy:\n        dest: /x\n        contnet: y\n",
        )
        .unwrap();
        let errs = &pb.plays[0].tasks[0].run_errors;
        assert!(errs[0].span.location().ends_with("/site.yml:5:18"));
        assert_eq!(
            errs[0].message,
            "Unsupported parameters for (copy) module: contnet"
        );
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean 'content'?"));
    }

    #[test]
    fn with_lookups_become_loop_expressions() {
        let pb = load_text("- hosts: all\n  tasks:\n    - command: echo {{ item.key }}\n      with_dict: '{{ users }}'\n    - command: echo\n      with_nested: [[1, 2], '{{ xs }}']\n    - command: echo\n      with_subelements: ['{{ users }}', keys]\n    - command: echo\n      with_together: [[a, null], [{k: v}]]\n").unwrap();
        let loops: Vec<String> = pb.plays[0]
            .tasks
            .iter()
            .map(|t| t.loop_items.as_ref().unwrap().scalar_text().unwrap())
            .collect();
        assert_eq!(
            loops,
            [
                "{{ _with_lookup(\"dict\", (users)) }}",
                "{{ [1, 2] | product((xs)) | list }}",
                "{{ (users) | subelements(\"keys\") }}",
                "{{ [\"a\", none] | zip([{\"k\": \"v\"}]) | list }}"
            ]
        );
        // Any other lookup is run on the loop's terms; a line break and a
        // backslash reach it as they are.
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - command: echo\n      with_sequence: start=1 end=3\n    - command: echo\n      with_lines: \"printf 'a\\\\nb'\"\n",
        )
        .unwrap();
        let loops: Vec<String> = pb.plays[0]
            .tasks
            .iter()
            .map(|t| t.loop_items.as_ref().unwrap().scalar_text().unwrap())
            .collect();
        assert_eq!(
            loops,
            [
                "{{ _with_lookup(\"sequence\", \"start=1 end=3\") }}",
                "{{ _with_lookup(\"lines\", \"printf 'a\\nb'\") }}"
            ]
        );
    }

    #[test]
    fn key_value_arguments_keep_templates_whole() {
        let pb = load_text("- hosts: all\n  tasks:\n    - copy: src=a dest={{ base ~ '/x y' }} owner=root content=\"a b\"\n").unwrap();
        let params: Vec<(String, String)> = pb.plays[0].tasks[0]
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.scalar_text().unwrap()))
            .collect();
        assert_eq!(
            params,
            [
                ("src".to_string(), "a".to_string()),
                ("dest".into(), "{{ base ~ '/x y' }}".into()),
                ("owner".into(), "root".into()),
                ("content".into(), "a b".into())
            ]
        );
    }

    #[test]
    fn all_errors_are_reported_at_once() {
        let errs = load_text("- hosts: all\n  tasks:\n    - name: no module\n    - file: {path: /x, stat: directory}\n  hanlders: []\n").unwrap_err();
        let messages: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "this task names no module",
                "unknown play keyword 'hanlders'"
            ]
        );
        assert_eq!(errs[1].hint.as_deref(), Some("did you mean 'handlers'?"));
    }

    #[test]
    fn free_form_and_key_value_params() {
        let pb = load_text("- hosts: all\n  tasks:\n    - command: echo hi\n    - file: path=/tmp/x state=directory\n").unwrap();
        let t = &pb.plays[0].tasks;
        assert_eq!(t[0].params[0].0, "cmd");
        assert_eq!(
            t[1].params.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["path", "state"]
        );
        let pb = load_text(
            "- hosts: all\n  tasks:\n    - command: make -j4 V=1 chdir=/src creates=/src/out\n",
        )
        .unwrap();
        let params: Vec<(&str, &str)> = (pb.plays[0].tasks[0].params.iter())
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
            .collect();
        assert_eq!(
            params,
            [
                ("cmd", "make -j4 V=1"),
                ("chdir", "/src"),
                ("creates", "/src/out")
            ],
            "a command line's options are taken out of it, other words stay"
        );
    }

    fn messages(text: &str) -> Vec<(String, String)> {
        load_text(text)
            .unwrap_err()
            .into_iter()
            .map(|d| (d.span.location(), d.message))
            .collect()
    }

    #[test]
    fn a_hand_over_switch_is_dropped_only_at_false_and_judged_otherwise() {
        let pb = load_text("- hosts: all\n  tasks:\n    - copy: {content: x, dest: /a, remote_src: false}\n    - copy: {content: x, dest: /a, remote_src: 0}\n    - copy: {content: x, dest: /a, remote_src: 'no'}\n").unwrap();
        for task in &pb.plays[0].tasks {
            assert_eq!(task.module.name, "copy");
            assert!(task.ansible.is_none(), "the native copy does it");
            assert!(!task.params.iter().any(|(n, _)| n == "remote_src"));
        }
        let errs = messages("- hosts: all\n  tasks:\n    - copy: {content: x, dest: /a, remote_src: maybe}\n    - copy: {content: x, dest: /a, remote_src: '{{ flag }}'}\n    - copy: {content: x, dest: /a, remote_src: [1]}\n");
        assert_eq!(
            errs,
            [
                ("site.yml:3:48".to_string(), "parameter 'remote_src' of 'copy' must be a boolean (yes/no), found 'maybe'".to_string()),
                ("site.yml:4:48".to_string(), "parameter 'remote_src' of 'copy' is decided when the playbook loads; give true or false, not a template".to_string()),
                ("site.yml:5:48".to_string(), "parameter 'remote_src' of 'copy' must be a boolean (yes/no), found a list".to_string()),
            ]
        );
    }

    #[test]
    fn an_alias_is_read_as_its_parameter_and_two_names_of_one_are_refused() {
        let pb = load_text("- hosts: all\n  module_defaults:\n    file: {dest: /d, mode: '0600'}\n  tasks:\n    - file: {dest: /a, state: touch}\n    - lineinfile: {name: /b, line: x}\n    - file: {state: touch}\n").unwrap();
        let params = |i: usize| -> Vec<&str> {
            pb.plays[0].tasks[i]
                .params
                .iter()
                .map(|(n, _)| n.as_str())
                .collect()
        };
        assert_eq!(
            params(0),
            ["path", "state", "mode"],
            "the task's own path wins"
        );
        assert_eq!(params(1), ["path", "line"]);
        assert_eq!(params(2), ["state", "path", "mode"]);
        let errs =
            messages("- hosts: all\n  tasks:\n    - file: {path: /a, dest: /b, state: touch}\n");
        assert_eq!(
            errs,
            [(
                "site.yml:3:30".to_string(),
                "'dest' and 'path' name one parameter of 'file': give it once".to_string()
            )]
        );
    }

    #[test]
    fn task_keywords_of_the_wrong_type_are_refused() {
        let errs = messages("- hosts: all\n  tasks:\n    - command: a\n      loop: 5\n    - command: b\n      with_items: true\n    - command: c\n      when: {a: 1}\n    - command: d\n      register: not an identifier\n      loop: [1]\n      loop_control: {loop_var: 'a b'}\n");
        let want = [
            ("site.yml:4:13", "loop must be a list, found a number"),
            (
                "site.yml:6:19",
                "with_items must be a list, found a boolean",
            ),
            (
                "site.yml:8:13",
                "when must be an expression, a boolean or a list of them, found a mapping",
            ),
            (
                "site.yml:10:17",
                "register 'not an identifier' is not a valid variable name",
            ),
        ];
        assert_eq!(errs, want.map(|(l, m)| (l.to_string(), m.to_string())));
        // Ansible refuses a loop_var only when the loop starts.
        let pb = load_text("- hosts: all\n  tasks:\n    - command: d\n      loop: [1]\n      loop_control: {loop_var: 'a b', pause: soon}\n").unwrap();
        let refused = pb.plays[0].tasks[0].loop_refused.as_ref().unwrap();
        assert_eq!(
            refused.message,
            "Invalid 'loop_var': Invalid variable name 'a b'."
        );
        let listed: Vec<&str> = pb
            .run_time_errors()
            .iter()
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(listed, ["Invalid 'loop_var': Invalid variable name 'a b'."]);
        load_text("- hosts: all\n  tasks:\n    - command: a\n      loop: \"{{ xs }}\"\n      when: [x, true]\n").unwrap();
    }

    #[test]
    fn play_keywords_of_the_wrong_type_are_refused() {
        let errs = messages("- hosts: all\n  vars_files: {a: 1}\n  strategy: linear\n  max_fail_percentage: 101\n  vars: {'a b': 1}\n  [x]: 1\n");
        let want = [
            (
                "site.yml:2:15",
                "vars_files must be a file name or a list of file names, found a mapping",
            ),
            ("site.yml:3:13", "unsupported strategy 'linear'"),
            (
                "site.yml:4:24",
                "max_fail_percentage must be between 0 and 100, found 101",
            ),
            (
                "site.yml:5:10",
                "variable 'a b' is not a valid variable name",
            ),
            (
                "site.yml:6:3",
                "a play keyword must be a plain name, found a list",
            ),
        ];
        assert_eq!(errs, want.map(|(l, m)| (l.to_string(), m.to_string())));
        assert_eq!(
            messages("- hosts: all\n  max_fail_percentage: -5\n")[0].1,
            "max_fail_percentage must be between 0 and 100, found -5"
        );
        assert_eq!(
            messages("- hosts: all\n  serial: ['-10%', '150%']\n")
                .into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>(),
            [
                "serial '-10%' must be a percentage above 0% and at most 100%",
                "serial '150%' must be a percentage above 0% and at most 100%"
            ]
        );
        load_text(
            "- hosts: all\n  strategy: free\n  vars_files: [a.yml]\n  max_fail_percentage: 0\n",
        )
        .unwrap();
    }

    #[test]
    fn the_cfgs_defaults_apply_to_plays_that_do_not_say() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.yml");
        let text = "- hosts: all\n  tasks: [{command: a}]\n- hosts: all\n  become: false\n  gather_facts: true\n  tasks: [{command: a}]\n";
        std::fs::write(&path, text).unwrap();
        let defaults = PlayDefaults {
            escalate: true,
            become_user: Some("ops".into()),
            become_flags: Some("-i".into()),
            gather_facts: false,
        };
        let pb = load_with(&path, &[], &[], &defaults).unwrap();
        assert_eq!(pb.plays[0].become_user.as_deref(), Some("ops"));
        assert_eq!(pb.plays[0].become_flags.as_deref(), Some("-i"));
        assert!(!pb.plays[0].gather_facts);
        assert_eq!(pb.plays[1].become_user, None);
        assert!(pb.plays[1].gather_facts);
    }

    #[test]
    fn keywords_that_would_be_ignored_are_refused() {
        load_text("- hosts: all\n  become: true\n  become_method: sudo\n  tasks:\n    - command: a\n      become: yes\n      become_user: root\n").unwrap();
        let errs = messages("- hosts: all\n  become: true\n  remote_user: x\n  tasks:\n    - command: a\n      port: 22\n");
        let messages: Vec<&str> = errs.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(messages, ["'port' is not supported by nodeprov"]);
    }

    /// A play's become_flags reach its sudo; sudo starts once per host and
    /// play, so a block's or task's own are refused, as is a templated one.
    #[test]
    fn become_flags_are_a_plays() {
        let pb = load_text(
            "- hosts: all\n  become: true\n  become_flags: -i\n  tasks:\n    - command: a\n",
        )
        .unwrap();
        assert_eq!(pb.plays[0].become_flags.as_deref(), Some("-i"));
        let errs = messages("- hosts: all\n  tasks:\n    - command: a\n      become_flags: -i\n");
        assert!(errs[0].1.contains("not supported"), "{errs:?}");
        let errs = messages("- hosts: all\n  become_flags: \"{{ f }}\"\n  tasks: []\n");
        assert!(errs[0].1.contains("templated become_flags"), "{errs:?}");
    }

    #[test]
    fn play_connection_keywords_and_templated_hosts_are_taken() {
        let pb = load_text("- hosts: \"{{ target }}\"\n  remote_user: ops\n  connection: smart\n  vars_files:\n    - a.yml\n    - [\"{{ os }}.yml\", default.yml]\n").unwrap();
        let play = &pb.plays[0];
        assert_eq!(play.hosts, "{{ target }}");
        assert_eq!(play.remote_user.as_deref(), Some("ops"));
        assert_eq!(play.connection.as_deref(), Some("ssh"));
        assert_eq!(play.vars_files.len(), 2);
        assert_eq!(
            messages("- hosts: all\n  connection: winrm\n  vars_files: [[a.yml, {b: 1}]]\n")
                .into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>(),
            [
                "connection 'winrm' is not supported",
                "vars_files must be a file name or a list of file names, found a list"
            ]
        );
    }

    #[test]
    fn with_first_found_searches_the_folder_its_module_reads() {
        let pb = load_text("- hosts: all\n  tasks:\n    - include_vars: \"{{ item }}\"\n      with_first_found:\n        - files: [\"{{ os | lower }}-{{ ver }}.yml\", default.yml]\n          paths: [../vars]\n          skip: true\n    - template: {src: \"{{ item }}\", dest: /etc/x}\n      with_first_found: [\"a.j2\", \"{{ b }}\"]\n    - copy: {src: \"{{ item }}\", dest: /etc/y}\n      with_first_found: [y]\n").unwrap();
        let loops: Vec<String> = pb.plays[0]
            .tasks
            .iter()
            .map(|t| t.loop_items.as_ref().unwrap().scalar_text().unwrap())
            .collect();
        assert_eq!(
            loops,
            [
                "{{ query('first_found', [{\"files\": [((os | lower) ~ \"-\" ~ (ver) ~ \".yml\"), \"default.yml\"], \"paths\": [\"../vars\"], \"skip\": true}], subdir='vars') }}",
                "{{ query('first_found', [\"a.j2\", (b)], subdir='templates') }}",
                "{{ query('first_found', [\"y\"], subdir='files') }}",
            ]
        );
    }

    #[test]
    fn notify_names_keep_their_commas_and_positions() {
        let pb = load_text("- hosts: all\n  tasks:\n    - command: a\n      notify: 'restart a, b'\n    - command: b\n      notify: [x, y]\n").unwrap();
        let tasks = &pb.plays[0].tasks;
        assert_eq!(tasks[0].notify.len(), 1);
        assert_eq!(tasks[0].notify[0].0, "restart a, b");
        assert_eq!(tasks[1].notify[1].0, "y");
        assert_eq!(tasks[1].notify[1].1.line, 6);
        assert_eq!(tasks[1].notify[1].1.col, 19);
    }

    #[test]
    fn wrong_shapes_are_explained() {
        let errs = load_text("hosts: all\n").unwrap_err();
        assert_eq!(
            errs[0].message,
            "a playbook must be a list of plays, found a mapping"
        );
        let errs = load_text("- hosts: all\n  become: maybe\n  tasks: {}\n").unwrap_err();
        assert_eq!(
            errs[0].message,
            "become must be a boolean (yes/no), found 'maybe'"
        );
        assert_eq!(errs[1].message, "expected a list of tasks, found a mapping");
    }
}
