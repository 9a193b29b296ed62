//! Task lists as Ansible writes them — `block:`, `import_tasks:`,
//! `include_tasks:`, `import_role:`/`include_role:` — flattened at load
//! time into plain tasks that carry what they inherit (conditions, tags,
//! become, vars, role). Expanding here keeps the round-trip contract: the
//! executor sees one flat list and probes it in one batch.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::playbook::{self, Errors, Role, Task};
use super::roles::{self, RoleRequest};
use super::yaml::{self, Node, Value};

/// How deep includes and roles may nest before it is called a loop.
const MAX_DEPTH: usize = 32;

pub(super) const BLOCK_KEYS: &[&str] = &[
    "block",
    "name",
    "when",
    "tags",
    "become",
    "become_user",
    "vars",
    "ignore_errors",
    "check_mode",
    "environment",
    "no_log",
];

const INCLUDE_KEYS: &[&str] = &[
    "name",
    "when",
    "tags",
    "vars",
    "become",
    "become_user",
    "apply",
    "loop",
    "with_items",
    "loop_control",
    "environment",
    "no_log",
];

/// What an enclosing block, include or role hands down to its tasks.
#[derive(Clone, Debug, Default)]
pub(super) struct Inherit {
    when: Vec<Node>,
    tags: Vec<String>,
    become_user: Option<Option<String>>,
    /// Variables as `key: value` entries; later entries win.
    vars: Vec<(Node, Node)>,
    ignore_errors: bool,
    check_mode: Option<bool>,
    role: Option<Arc<Role>>,
    environment: Vec<Node>,
    no_log: bool,
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
}

impl Scope {
    pub fn new(dir: PathBuf, roles: Arc<roles::Finder>) -> Scope {
        Scope {
            dir,
            inherit: Inherit::default(),
            stack: Vec::new(),
            roles,
            play: roles::Shared::default(),
        }
    }

    pub fn inherit_environment(&mut self, env: Option<Node>) {
        self.inherit.environment.extend(env);
    }

    pub fn inherit_no_log(&mut self, no_log: bool) {
        self.inherit.no_log |= no_log;
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
                "no_log" => inh.no_log |= playbook::boolean(v, "no_log", errors),
                "vars" => {
                    playbook::vars_map(v, errors);
                    inh.vars
                        .extend(v.as_map().unwrap_or_default().iter().cloned());
                }
                "ignore_errors" => {
                    inh.ignore_errors |= playbook::boolean(v, "ignore_errors", errors)
                }
                "check_mode" => inh.check_mode = Some(playbook::boolean(v, "check_mode", errors)),
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
    /// An include's or role task's keywords, then its `apply:` keywords.
    fn for_include(&self, node: &Node, entries: &[(Node, Node)], errors: &mut Errors) -> Scope {
        let inner = self.narrowed(entries, errors);
        match node
            .get("apply")
            .and_then(|a| playbook::expect_map(a, "apply", errors))
        {
            Some(keys) => inner.narrowed(keys, errors),
            None => inner,
        }
    }
}

/// One `when:` as a list of conditions, so inherited ones can be prepended.
fn conditions(node: Node) -> Vec<Node> {
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
        let short = key.strip_prefix("ansible.builtin.").unwrap_or(key);
        if let Some((_, expand)) = STRUCTURE.iter().find(|(name, _)| *name == short) {
            return expand(node, key, entries, scope, errors);
        }
    }
    playbook::parse_task(node, errors)
        .map(|mut t| {
            inherit(&mut t, &scope.inherit);
            t
        })
        .into_iter()
        .collect()
}

fn block(
    node: &Node,
    _key: &str,
    entries: &[(Node, Node)],
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    for (k, _) in entries {
        let key = k.as_str().unwrap_or_default();
        match key {
            "rescue" | "always" => errors.push(
                k.error(format!("'{key}' is not supported by nodeprov"))
                    .with_hint("a block's tasks run in one batch; handle failures with failed_when or ignore_errors"),
            ),
            _ if BLOCK_KEYS.contains(&key) => {}
            _ => errors.push(playbook::unknown_key(k, "block keyword", BLOCK_KEYS)),
        }
    }
    let inner = scope.narrowed(entries, errors);
    let body = node.get("block").expect("a block has 'block:'");
    expand(body, &inner, errors)
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
    let target = include_target(node.get(key).expect("the key is there"), errors);
    let Some((file, file_node)) = target else {
        return Vec::new();
    };
    let inner = scope.for_include(node, entries, errors);
    if let Some(l) = node.get("loop").or_else(|| node.get("with_items")) {
        return looped_include(node, l, &file, &file_node, &inner, errors);
    }
    candidates(&file, &file_node, &inner, errors)
        .into_iter()
        .flat_map(|(path, guard)| {
            let mut s = inner.clone();
            s.inherit.when.extend(guard);
            tasks_file(&path, &file_node, &s, errors)
        })
        .collect()
}

fn check_include_keys(key: &str, entries: &[(Node, Node)], errors: &mut Errors) {
    for (k, _) in entries {
        let name = k.as_str().unwrap_or_default();
        if name != key && !INCLUDE_KEYS.contains(&name) {
            errors.push(playbook::unknown_key(
                k,
                &format!("{key} keyword"),
                INCLUDE_KEYS,
            ));
        }
    }
}

fn include_target(v: &Node, errors: &mut Errors) -> Option<(String, Node)> {
    let node = match &v.value {
        Value::Map(_) => match v.get("file") {
            Some(f) => f.clone(),
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

/// A literal `loop:` over an include: one copy of the file per item, with
/// the item bound as the loop variable.
fn looped_include(
    node: &Node,
    items: &Node,
    file: &str,
    file_node: &Node,
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    let Value::Seq(list) = &items.value else {
        errors.push(
            items
                .error("a loop over included tasks must be a literal list in nodeprov")
                .with_hint("includes are expanded before any host is contacted; list the items, or move the loop onto the included tasks"),
        );
        return Vec::new();
    };
    let loop_var = node
        .get("loop_control")
        .and_then(|c| c.get("loop_var"))
        .and_then(Node::as_str)
        .unwrap_or("item")
        .to_string();
    let mut out = Vec::new();
    for item in list {
        let mut s = scope.clone();
        let key = Node::new(Value::Str(loop_var.clone()), item.span.clone());
        s.inherit.vars.push((key, item.clone()));
        for (path, guard) in candidates(file, file_node, &s, errors) {
            let mut g = s.clone();
            g.inherit.when.extend(guard);
            out.extend(tasks_file(&path, file_node, &g, errors));
        }
    }
    out
}

/// The files an include names: one, or for a templated name every file in
/// its folder that the name could render to, each with its guard.
fn candidates(
    file: &str,
    at: &Node,
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<(PathBuf, Option<Node>)> {
    if !crate::template::is_templated(file) {
        return vec![(scope.dir.join(file), None)];
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
        errors.push(at.error(format!(
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
            let cond = format!("({expr}) == {}", jinja_string(&rel));
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
    if node
        .get("loop")
        .or_else(|| node.get("with_items"))
        .is_some()
    {
        errors.push(node.error(format!("a loop over {key} is not supported by nodeprov")));
        return Vec::new();
    }
    let Some(spec) = playbook::expect_map(node.get(key).expect("the key is there"), key, errors)
    else {
        return Vec::new();
    };
    let Some(request) = RoleRequest::from_task(spec, errors) else {
        return Vec::new();
    };
    let inner = scope.for_include(node, entries, errors);
    roles::expand(&request, &inner, errors).tasks
}

/// Hands a block's, include's or role's settings down to one task; the
/// task's own settings win.
fn inherit(task: &mut Task, inh: &Inherit) {
    if !inh.when.is_empty() {
        let mut conds = inh.when.clone();
        let span = conds[0].span.clone();
        conds.extend(task.when.take().map(conditions).unwrap_or_default());
        task.when = Some(Node::new(Value::Seq(conds), span));
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
    task.check_mode = task.check_mode.or(inh.check_mode);
    if task.role.is_none() {
        task.role.clone_from(&inh.role);
    }
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
}
