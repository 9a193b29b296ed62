//! Roles: found by name in `roles/` beside the playbook, in `--roles-path`
//! and `ANSIBLE_ROLES_PATH`, then Ansible's default folders; their
//! `meta/` dependencies, `defaults/`, `vars/`, `tasks/` and `handlers/`
//! loaded into the play at load time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::diag::Span;
use super::playbook::{self, Errors, Role, Task};
use super::tasks::{self, Scope};
use super::yaml::{self, Node, Value};

const ENTRY_KEYS: &[&str] = &[
    "role",
    "name",
    "when",
    "tags",
    "become",
    "become_user",
    "vars",
];

/// Where roles are looked for, in order.
#[derive(Debug)]
pub(super) struct Finder {
    dirs: Vec<PathBuf>,
}

impl Finder {
    /// `roles/` beside the playbook, the given paths (from `--roles-path`,
    /// then `ANSIBLE_ROLES_PATH`), Ansible's default folders, and the
    /// playbook's own folder.
    pub(super) fn new(playbook: &Path, extra: &[PathBuf]) -> Finder {
        let base = playbook.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut dirs = vec![base.join("roles")];
        dirs.extend(extra.iter().cloned());
        if let Some(env) = std::env::var_os("ANSIBLE_ROLES_PATH") {
            dirs.extend(std::env::split_paths(&env));
        }
        if let Some(home) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(home).join(".ansible/roles"));
        }
        dirs.push("/usr/share/ansible/roles".into());
        dirs.push("/etc/ansible/roles".into());
        dirs.push(base);
        Finder { dirs }
    }

    fn find(&self, name: &str) -> Option<PathBuf> {
        let path = Path::new(name);
        if path.is_absolute() || name.contains('/') {
            return path.is_dir().then(|| path.to_path_buf());
        }
        self.dirs.iter().map(|d| d.join(name)).find(|p| p.is_dir())
    }

    fn searched(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What a play collects while its roles expand: handlers of every role,
/// and which roles already ran (a role runs once per play for the same
/// parameters, as in Ansible).
#[derive(Debug, Default)]
pub(super) struct PlayState {
    pub(super) handlers: Vec<Task>,
    ran: BTreeSet<String>,
}

pub(super) type Shared = Arc<Mutex<PlayState>>;

/// One use of a role: from `roles:`, `meta/main.yml` or a role task.
pub(super) struct RoleRequest {
    name: String,
    at: Node,
    tasks_from: String,
    handlers_from: String,
    vars_from: String,
    defaults_from: String,
    /// Role parameters, which outrank the role's own vars.
    params: Vec<(Node, Node)>,
    /// Keywords (`when`, `tags`, `become`...) of a `roles:` entry.
    keywords: Vec<(Node, Node)>,
    /// Listed under `roles:` or as a dependency: run once per play.
    dedupe: bool,
}

impl RoleRequest {
    /// A `roles:` or `dependencies:` entry: a name, or a mapping with
    /// `role:` (or `name:`), keywords and role parameters.
    pub(super) fn from_entry(node: &Node, errors: &mut Errors) -> Option<RoleRequest> {
        if let Some(name) = node.as_str() {
            return Some(RoleRequest::named(name, node, true));
        }
        let entries = playbook::expect_map(node, "a role", errors)?;
        let Some(name_node) = node.get("role").or_else(|| node.get("name")) else {
            errors.push(node.error("a role entry needs 'role:' (the role's name)"));
            return None;
        };
        let mut req = RoleRequest::named(
            &playbook::string(name_node, "role", errors),
            name_node,
            true,
        );
        for (k, v) in entries {
            match k.as_str().unwrap_or_default() {
                "role" | "name" => {}
                "vars" => req
                    .params
                    .extend(v.as_map().unwrap_or_default().iter().cloned()),
                key if ENTRY_KEYS.contains(&key) => req.keywords.push((k.clone(), v.clone())),
                _ => req.params.push((k.clone(), v.clone())),
            }
        }
        Some(req)
    }

    /// The mapping of `import_role:` / `include_role:`.
    pub(super) fn from_task(spec: &[(Node, Node)], errors: &mut Errors) -> Option<RoleRequest> {
        const KEYS: &[&str] = &[
            "name",
            "tasks_from",
            "handlers_from",
            "vars_from",
            "defaults_from",
            "public",
            "allow_duplicates",
        ];
        let mut req: Option<RoleRequest> = None;
        let mut froms = Vec::new();
        for (k, v) in spec {
            match k.as_str().unwrap_or_default() {
                "name" => {
                    req = Some(RoleRequest::named(
                        &playbook::string(v, "name", errors),
                        v,
                        false,
                    ))
                }
                key @ ("tasks_from" | "handlers_from" | "vars_from" | "defaults_from") => {
                    froms.push((key.to_string(), playbook::string(v, key, errors)))
                }
                "public" | "allow_duplicates" => {}
                _ => errors.push(playbook::unknown_key(k, "role option", KEYS)),
            }
        }
        let Some(mut req) = req else {
            let at = spec
                .first()
                .map(|(k, _)| k.span.clone())
                .unwrap_or_else(|| Span::synthetic("role"));
            errors.push(
                yaml::Node::new(Value::Null, at)
                    .error("the role task needs 'name:' (the role's name)"),
            );
            return None;
        };
        for (key, file) in froms {
            let slot = match key.as_str() {
                "tasks_from" => &mut req.tasks_from,
                "handlers_from" => &mut req.handlers_from,
                "vars_from" => &mut req.vars_from,
                _ => &mut req.defaults_from,
            };
            *slot = file;
        }
        Some(req)
    }

    fn named(name: &str, at: &Node, dedupe: bool) -> RoleRequest {
        RoleRequest {
            name: name.to_string(),
            at: at.clone(),
            tasks_from: "main".into(),
            handlers_from: "main".into(),
            vars_from: "main".into(),
            defaults_from: "main".into(),
            params: Vec::new(),
            keywords: Vec::new(),
            dedupe,
        }
    }

    fn identity(&self) -> String {
        let params: Vec<_> = self
            .params
            .iter()
            .map(|(k, v)| (k.scalar_text(), v.to_json()))
            .collect();
        format!("{}{}", self.name, serde_json::json!(params))
    }
}

/// A role expanded into tasks; its handlers go to the play.
pub(super) struct Expanded {
    pub(super) tasks: Vec<Task>,
}

pub(super) fn expand(req: &RoleRequest, scope: &Scope, errors: &mut Errors) -> Expanded {
    let none = Expanded { tasks: Vec::new() };
    if req.name.is_empty() {
        return none;
    }
    let Some(path) = scope.roles.find(&req.name) else {
        let hint = match req.name.matches('.').count() >= 2 {
            true => "roles from Ansible collections are not supported by nodeprov; copy the role into roles/".to_string(),
            false => format!("looked in: {}", scope.roles.searched()),
        };
        errors.push(
            req.at
                .error(format!("role '{}' not found", req.name))
                .with_hint(hint),
        );
        return none;
    };
    if req.dedupe
        && !scope
            .play
            .lock()
            .expect("not poisoned")
            .ran
            .insert(req.identity())
    {
        return none;
    }
    if scope.stack.len() > 32 || scope.stack.contains(&path) {
        errors.push(
            req.at
                .error(format!("role '{}' depends on itself", req.name)),
        );
        return none;
    }
    let scope = scope.narrowed(&req.keywords, errors);
    let mut tasks = dependencies(&path, &scope, errors);
    let (defaults, defaults_node) = vars_file(&path.join("defaults"), &req.defaults_from, errors);
    let role = Arc::new(Role {
        name: role_name(&req.name),
        path: path.clone(),
        defaults,
        defaults_node,
    });
    let mut vars = role_vars(&role, &req.at);
    if let (_, Some(node)) = vars_file(&path.join("vars"), &req.vars_from, errors) {
        vars.extend(node.as_map().unwrap_or_default().iter().cloned());
    }
    vars.extend(req.params.iter().cloned());
    let mut inner = scope.with_role(role, vars);
    inner.stack.push(path.clone());
    if let Some(file) = main_file(&path.join("tasks"), &req.tasks_from) {
        tasks.extend(tasks::tasks_file(&file, &req.at, &inner, errors));
    } else if req.tasks_from != "main" {
        errors.push(req.at.error(format!(
            "role '{}' has no tasks file '{}'",
            req.name, req.tasks_from
        )));
    }
    if let Some(file) = main_file(&path.join("handlers"), &req.handlers_from) {
        let handlers = tasks::tasks_file(&file, &req.at, &inner, errors);
        scope
            .play
            .lock()
            .expect("not poisoned")
            .handlers
            .extend(handlers);
    }
    Expanded { tasks }
}

fn role_name(name: &str) -> String {
    Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned())
}

/// `role_name` and `role_path`, as Ansible sets them for a role's tasks.
fn role_vars(role: &Role, at: &Node) -> Vec<(Node, Node)> {
    let s = |text: String| Node::new(Value::Str(text), at.span.clone());
    vec![
        (s("role_name".into()), s(role.name.clone())),
        (s("role_path".into()), s(role.path.display().to_string())),
    ]
}

fn dependencies(path: &Path, scope: &Scope, errors: &mut Errors) -> Vec<Task> {
    let Some(meta) = main_file(&path.join("meta"), "main") else {
        return Vec::new();
    };
    let root = match yaml::load_file(&meta) {
        Ok(root) => root,
        Err(d) => {
            errors.push(d);
            return Vec::new();
        }
    };
    let Some(deps) = root.get("dependencies").and_then(Node::as_seq) else {
        return Vec::new();
    };
    let mut inner = scope.clone();
    inner.stack.push(path.to_path_buf());
    let mut tasks = Vec::new();
    for dep in deps {
        if let Some(req) = RoleRequest::from_entry(dep, errors) {
            tasks.extend(expand(&req, &inner, errors).tasks);
        }
    }
    tasks
}

/// `dir/name.yml`, `dir/name.yaml` or `dir/name`, as Ansible looks them up.
fn main_file(dir: &Path, name: &str) -> Option<PathBuf> {
    [
        format!("{name}.yml"),
        format!("{name}.yaml"),
        name.to_string(),
    ]
    .into_iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

/// A role's `defaults/` or `vars/` file as variables, with its node.
fn vars_file(
    dir: &Path,
    name: &str,
    errors: &mut Errors,
) -> (serde_json::Map<String, serde_json::Value>, Option<Node>) {
    let Some(file) = main_file(dir, name) else {
        return (serde_json::Map::new(), None);
    };
    match yaml::load_file(&file) {
        Ok(node) if matches!(node.value, Value::Null) => (serde_json::Map::new(), None),
        Ok(node) => (playbook::vars_map(&node, errors), Some(node)),
        Err(d) => {
            errors.push(d);
            (serde_json::Map::new(), None)
        }
    }
}
