//! Roles: found by name in `roles/` beside the playbook, in `--roles-path`
//! and the resolved `roles_path` setting, then Ansible's default folders; their
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
    "environment",
    "no_log",
    "ignore_errors",
    "check_mode",
];

/// Where roles are looked for, in order.
#[derive(Debug)]
pub(super) struct Finder {
    dirs: Vec<PathBuf>,
}

impl Finder {
    /// `roles/` beside the playbook, the given paths (from `--roles-path`,
    /// then `ANSIBLE_ROLES_PATH` or ansible.cfg's `roles_path`), Ansible's
    /// default folders, and the playbook's own folder.
    pub(super) fn new(playbook: &Path, extra: &[PathBuf]) -> Finder {
        let base = playbook.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut dirs = vec![base.join("roles")];
        dirs.extend(extra.iter().cloned());
        if let Some(home) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(home).join(".ansible/roles"));
        }
        dirs.push("/usr/share/ansible/roles".into());
        dirs.push("/etc/ansible/roles".into());
        dirs.push(base);
        Finder { dirs }
    }

    /// A name is looked up in each folder, also when it holds a `/`
    /// (`kubernetes/preinstall`, as kubespray names its roles); an
    /// absolute path is taken as it is.
    fn find(&self, name: &str) -> Option<PathBuf> {
        let path = Path::new(name);
        if path.is_absolute() {
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

/// `role_name`, `ansible_role_name` (the same: collections' roles are
/// refused) and `role_path`, as Ansible sets them for a role's tasks.
fn role_vars(role: &Role, at: &Node) -> Vec<(Node, Node)> {
    let s = |text: String| Node::new(Value::Str(text), at.span.clone());
    vec![
        (s("role_name".into()), s(role.name.clone())),
        (s("ansible_role_name".into()), s(role.name.clone())),
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

#[cfg(test)]
mod tests {
    use crate::load::playbook::{load, Playbook, Task};

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn names(tasks: &[Task]) -> Vec<&str> {
        tasks.iter().map(|t| t.name.as_str()).collect()
    }

    fn load_tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Playbook) {
        let dir = tree(files);
        let pb = load(&dir.path().join("site.yml")).unwrap_or_else(|e| panic!("{e:?}"));
        (dir, pb)
    }

    const SWAP_ROLE: &[(&str, &str)] = &[
        ("roles/swap/defaults/main.yml", "swap_mb: 512\n"),
        ("roles/swap/vars/main.yml", "swap_path: /swapfile\n"),
        ("roles/swap/meta/main.yml", "dependencies:\n  - base\n"),
        ("roles/swap/tasks/main.yml", "- name: swap size\n  command: echo {{ swap_mb }}\n  notify: swap changed\n- import_tasks: setup-{{ ansible_os_family }}.yml\n"),
        ("roles/swap/tasks/setup-Debian.yml", "- {name: on debian, command: echo deb}\n"),
        ("roles/swap/tasks/setup-RedHat.yml", "- {name: on redhat, command: echo rh}\n"),
        ("roles/swap/handlers/main.yml", "- {name: swap changed, command: echo h}\n"),
        ("roles/base/tasks/main.yml", "- {name: base, command: echo base}\n"),
    ];

    #[test]
    fn a_role_brings_dependencies_defaults_vars_handlers_in_ansible_order() {
        let mut files = SWAP_ROLE.to_vec();
        files.push(("site.yml", "- hosts: all\n  pre_tasks: [{name: pre, command: echo}]\n  roles:\n    - role: swap\n      tags: [swap]\n      when: enabled\n      environment: {HTTP_PROXY: p}\n      no_log: true\n    - swap\n  tasks: [{name: main, command: echo}]\n  post_tasks: [{name: post, command: echo}]\n"));
        let (_dir, pb) = load_tree(&files);
        let play = &pb.plays[0];
        // `swap` listed twice with the same parameters runs once.
        assert_eq!(
            names(&play.tasks),
            [
                "pre",
                "base",
                "swap size",
                "on debian",
                "on redhat",
                "main",
                "post"
            ]
        );
        assert_eq!(names(&play.handlers), ["swap changed"]);
        let size = &play.tasks[2];
        let role = size.role.as_ref().unwrap();
        assert_eq!(role.name, "swap");
        assert_eq!(role.defaults["swap_mb"], 512);
        assert_eq!(size.vars["swap_path"], "/swapfile");
        assert_eq!(size.vars["ansible_role_name"], "swap");
        assert!(size.vars["role_path"]
            .as_str()
            .unwrap()
            .ends_with("roles/swap"));
        assert_eq!(size.tags, ["swap"]);
        // Keywords of a role entry reach its tasks; they are not role variables.
        assert!(size.no_log);
        assert_eq!(
            size.environment[0].to_json(),
            serde_json::json!({"HTTP_PROXY": "p"})
        );
        assert!(!size.vars.contains_key("environment") && !size.vars.contains_key("no_log"));
        let when = size.when.as_ref().unwrap().to_json();
        assert_eq!(when, serde_json::json!(["enabled"]));
        let debian = play.tasks[3].when.as_ref().unwrap().to_json();
        assert_eq!(
            debian,
            serde_json::json!([
                "enabled",
                "('setup-' ~ (ansible_os_family) ~ '.yml') == 'setup-Debian.yml'"
            ])
        );
        assert!(size.search_dirs(&[])[0].ends_with("roles/swap/templates"));
    }

    #[test]
    fn blocks_hand_down_conditions_tags_become_and_vars() {
        let (_dir, pb) = load_tree(&[(
            "site.yml",
            "- hosts: all\n  become: true\n  environment: {P: play}\n  tasks:\n    - environment: {B: block}\n      block:\n        - name: inner\n          command: echo {{ a }}\n          when: b\n          tags: t2\n          vars: {c: 3}\n      when: a is defined\n      tags: [t1]\n      vars: {a: 1, c: 2}\n      ignore_errors: true\n",
        )]);
        let t = &pb.plays[0].tasks[0];
        assert_eq!(
            t.when.as_ref().unwrap().to_json(),
            serde_json::json!(["a is defined", "b"])
        );
        assert_eq!(t.tags, ["t1", "t2"]);
        assert_eq!(t.vars["a"], 1);
        assert_eq!(t.vars["c"], 3, "the task's own vars win");
        let env: Vec<_> = t.environment.iter().map(|n| n.to_json()).collect();
        assert_eq!(
            env,
            [
                serde_json::json!({"P": "play"}),
                serde_json::json!({"B": "block"})
            ]
        );
        assert!(t.ignore_errors);
    }

    #[test]
    fn includes_resolve_beside_the_including_file_and_loop_over_literal_items() {
        let (_dir, pb) = load_tree(&[
            ("site.yml", "- hosts: all\n  tasks:\n    - include_tasks: sub/one.yml\n      vars: {x: 1}\n    - import_tasks: sub/one.yml\n      loop: [a, b]\n      loop_control: {loop_var: pkg}\n"),
            ("sub/one.yml", "- import_tasks: two.yml\n"),
            ("sub/two.yml", "- {name: two, command: echo}\n"),
        ]);
        let tasks = &pb.plays[0].tasks;
        assert_eq!(names(tasks), ["two", "two", "two"]);
        assert_eq!(tasks[0].vars["x"], 1);
        assert_eq!(
            (&tasks[1].vars["pkg"], &tasks[2].vars["pkg"]),
            (&serde_json::json!("a"), &serde_json::json!("b"))
        );
    }

    fn errors(files: &[(&str, &str)]) -> Vec<String> {
        let dir = tree(files);
        load(&dir.path().join("site.yml"))
            .map(drop)
            .unwrap_err()
            .into_iter()
            .map(|d| format!("{}: {}", d.span.location(), d.message))
            .collect()
    }

    #[test]
    fn what_cannot_be_expanded_is_refused_where_it_is_written() {
        let errs = errors(&[
            ("site.yml", "- hosts: all\n  roles: [nosuch, community.general.thing]\n  tasks:\n    - import_tasks: loop.yml\n    - block: [{command: a}]\n      rescue: 5\n"),
            ("loop.yml", "- import_tasks: loop.yml\n"),
        ]);
        assert!(
            errs.iter().any(|e| e.ends_with("role 'nosuch' not found")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.ends_with("role 'community.general.thing' not found")),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("loop.yml includes itself")),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.ends_with("expected a list of tasks, found a number")),
            "{errs:?}"
        );
    }
}
