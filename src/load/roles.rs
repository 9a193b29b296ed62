//! Roles: found by name in `roles/` beside the playbook, in `--roles-path`
//! and the resolved `roles_path` setting, then Ansible's default folders,
//! or in an installed collection (`ns.coll.role`, or a short name through a
//! `collections:` list); their `meta/` dependencies, `defaults/`, `vars/`,
//! `tasks/` and `handlers/` loaded into the play at load time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::collections::{self, Installed, Missing};
use super::keywords::{self, Level};
use super::playbook::{self, Errors, Role, Task};
use super::tasks::{self, Scope};
use super::yaml::{self, Node, Value};
use crate::base::diag::Span;

/// Where roles are looked for, in order, and the collections installed.
#[derive(Debug)]
pub(super) struct Finder {
    dirs: Vec<PathBuf>,
    pub(super) collections: Installed,
    /// The requirements files a missing role's hint may name.
    requirements: Vec<PathBuf>,
    library: PathBuf,
}

/// A role found: its folder, and the collection it belongs to.
struct Found {
    path: PathBuf,
    collection: Option<String>,
}

impl Finder {
    /// `roles/` beside the playbook, the given paths (from `--roles-path`,
    /// then `ANSIBLE_ROLES_PATH` or ansible.cfg's `roles_path`), Ansible's
    /// default folders, and the playbook's own folder; collections in the
    /// playbook's `collections/` and the configured collection path.
    pub(super) fn new(playbook: &Path, extra: &[PathBuf], collections_path: &[PathBuf]) -> Finder {
        let base = playbook
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let collections = Installed::new(&base, collections_path);
        let requirements = collections::requirements_files(&base);
        let mut dirs = vec![base.join("roles")];
        dirs.extend(extra.iter().cloned());
        if let Some(home) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(home).join(".ansible/roles"));
        }
        dirs.push("/usr/share/ansible/roles".into());
        dirs.push("/etc/ansible/roles".into());
        let library = base.join("library");
        dirs.push(base);
        Finder {
            dirs,
            collections,
            requirements,
            library,
        }
    }

    /// The playbook's own `library/`, where Ansible finds custom modules.
    pub(super) fn library(&self) -> &Path {
        &self.library
    }

    /// As Ansible looks a role up: a FQCN in its collection, a short name
    /// in each collection of `list` in order, then in each roles folder
    /// (also a name holding a `/`, as kubespray names its roles); an
    /// absolute path is taken as it is.
    fn find(&self, name: &str, list: &[String]) -> Option<Found> {
        let in_collection = |collection: &str, role: &str| {
            let path = self.collections.find(collection)?.join("roles").join(role);
            path.is_dir().then(|| Found {
                path,
                collection: Some(collection.to_string()),
            })
        };
        let collection_role = match collections::split_fqcn(name) {
            Some((collection, role)) => in_collection(collection, role),
            None => list.iter().find_map(|c| in_collection(c, name)),
        };
        let path = Path::new(name);
        let legacy = || match path.is_absolute() {
            true => path.is_dir().then(|| path.to_path_buf()),
            false => self.dirs.iter().map(|d| d.join(name)).find(|p| p.is_dir()),
        };
        collection_role.or_else(|| {
            legacy().map(|path| Found {
                path,
                collection: None,
            })
        })
    }

    /// Why the role `name` cannot be found, if it cannot.
    pub(super) fn missing(&self, name: &str, list: &[String]) -> Option<String> {
        match self.find(name, list) {
            Some(_) => None,
            None => Some(self.not_found(name, list)),
        }
    }

    /// Why `name` was not found: where it was looked for, and how Galaxy
    /// would install it.
    fn not_found(&self, name: &str, list: &[String]) -> String {
        if let Some((collection, role)) = collections::split_fqcn(name) {
            return match self.collections.find(collection) {
                Some(dir) => {
                    let mut roles: Vec<String> = std::fs::read_dir(dir.join("roles"))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter(|e| e.path().is_dir())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    roles.sort();
                    let has = match roles.is_empty() {
                        true => "none".to_string(),
                        false => roles.join(", "),
                    };
                    format!(
                        "collection {collection} (at {}) has no role '{role}'; its roles: {has}",
                        dir.display()
                    )
                }
                None => format!(
                    "collection {collection} is not installed (looked for ansible_collections/{} in: {}); {}",
                    collection.replace('.', "/"),
                    self.collections.searched(),
                    collections::install_hint(&self.requirements, Missing::Collection, collection)
                ),
            };
        }
        let dirs: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        let listed: Vec<&str> = list.iter().map(String::as_str).collect();
        let in_collections = match listed.is_empty() {
            true => String::new(),
            false => format!("the roles of the collections {}, then ", listed.join(", ")),
        };
        format!(
            "looked in: {in_collections}{}; {}",
            dirs.join(", "),
            collections::install_hint(&self.requirements, Missing::Role, name)
        )
    }
}

/// What a play collects while its roles expand: handlers of every role,
/// and which roles already ran (a role runs once per play for the same
/// parameters, as in Ansible).
#[derive(Debug, Default)]
pub(super) struct PlayState {
    pub(super) handlers: Vec<Task>,
    ran: BTreeSet<String>,
    /// The `defaults/` and `vars/` of the play's public roles, in the
    /// order they were loaded, a later one winning.
    pub(super) exposed: Exposed,
}

/// Role variables the whole play sees, as Ansible exposes those of a
/// `roles:` entry, an `import_role` and an `include_role` with
/// `public: true`: the defaults below every other variable, the vars
/// above the play's; and the names of its roles, for its magic variables.
#[derive(Clone, Debug, Default)]
pub struct Exposed {
    pub defaults: serde_json::Map<String, serde_json::Value>,
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// Each role the play names (`roles:`, `import_role`, `include_role`)
    /// as it is loaded: `ansible_play_role_names`.
    pub role_names: Vec<String>,
    /// Each role loaded as another's dependency: `ansible_dependent_role_names`.
    pub dependency_names: Vec<String>,
}

pub(super) type Shared = Arc<Mutex<PlayState>>;

/// One use of a role: from `roles:`, `meta/main.yml` or a role task.
pub(super) struct RoleRequest {
    pub(super) name: String,
    at: Node,
    tasks_from: String,
    handlers_from: String,
    vars_from: String,
    defaults_from: String,
    /// Role parameters, which outrank the role's own vars.
    params: Vec<(Node, Node)>,
    /// The `vars:` of a `roles:` entry: as strong as its parameters, and
    /// not among those its argument spec is given.
    entry_vars: Vec<(Node, Node)>,
    /// Keywords (`when`, `tags`, `become`...) of a `roles:` entry.
    keywords: Vec<(Node, Node)>,
    /// Listed under `roles:` or as a dependency: run once per play.
    dedupe: bool,
    /// Its defaults and vars are seen by the whole play.
    public: bool,
    /// Loaded from another role's `meta/` dependencies.
    dependency: bool,
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
                    .entry_vars
                    .extend(v.as_map().unwrap_or_default().iter().cloned()),
                key if keywords::takes(Level::RoleEntry, key) => {
                    req.keywords.push((k.clone(), v.clone()))
                }
                _ => req.params.push((k.clone(), v.clone())),
            }
        }
        Some(req)
    }

    /// The mapping of `import_role:` / `include_role:`; `public` unless
    /// it says otherwise for an import, not for an include, as in Ansible.
    pub(super) fn from_task(
        spec: &[(Node, Node)],
        dynamic: bool,
        errors: &mut Errors,
    ) -> Option<RoleRequest> {
        const KEYS: &[&str] = &[
            "name",
            "tasks_from",
            "handlers_from",
            "vars_from",
            "defaults_from",
            "public",
            "allow_duplicates",
            "apply",
        ];
        let mut req: Option<RoleRequest> = None;
        let mut froms = Vec::new();
        let mut public = !dynamic;
        let mut duplicates = true;
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
                "public" => public = playbook::boolean(v, "public", errors),
                "allow_duplicates" => duplicates = playbook::boolean(v, "allow_duplicates", errors),
                // `apply` is read with the task's keywords (Scope::for_include).
                "apply" => {}
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
        req.public = public;
        // Run once per play for the same parameters, as a `roles:` entry.
        req.dedupe = !duplicates;
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
            entry_vars: Vec::new(),
            keywords: Vec::new(),
            dedupe,
            public: true,
            dependency: false,
        }
    }

    /// A role runs once per play for the same parameters: named by its
    /// folder, so `acme.gpu.tune` and `tune` through `collections:` are one.
    fn identity(&self, path: &Path) -> String {
        let params: Vec<_> = self
            .params
            .iter()
            .chain(&self.entry_vars)
            .map(|(k, v)| (k.scalar_text(), v.to_json()))
            .collect();
        format!("{}{}", path.display(), serde_json::json!(params))
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
    let Some(found) = scope.roles.find(&req.name, &scope.collections) else {
        errors.push(
            req.at
                .error(format!("role '{}' not found", req.name))
                .with_hint(scope.roles.not_found(&req.name, &scope.collections)),
        );
        return none;
    };
    let path = found.path;
    // Every run counts, whether or not this one may repeat an earlier.
    let first = (scope.play.lock().expect("not poisoned").ran).insert(req.identity(&path));
    if req.dedupe && !first {
        return none;
    }
    // A role may import its own other task files (`tasks_from`); one that
    // truly includes itself is caught as a task file including itself.
    if scope.stack.len() > 32 || (req.dependency && scope.stack.contains(&path)) {
        errors.push(
            req.at
                .error(format!("role '{}' depends on itself", req.name)),
        );
        return none;
    }
    let meta = Meta::read(&path, errors);
    let mut scope = scope.narrowed(&req.keywords, errors);
    // A role sees its own collection and its meta's `collections:`, never
    // the play's, as in Ansible.
    let mut list: Vec<String> = found.collection.iter().cloned().collect();
    for c in meta.collections {
        if !list.contains(&c) {
            list.push(c);
        }
    }
    scope.collections = list;
    let mut tasks = dependencies(req, &path, &meta.dependencies, &scope, errors);
    let (defaults, defaults_node) = vars_file(&path.join("defaults"), &req.defaults_from, errors);
    let (own_vars, vars_node) = vars_file(&path.join("vars"), &req.vars_from, errors);
    if req.public {
        let mut play = scope.play.lock().expect("not poisoned");
        play.exposed.defaults.extend(defaults.clone());
        play.exposed.vars.extend(own_vars);
    }
    let short = role_name(&req.name, found.collection.is_some());
    // `ansible_role_name`: Ansible names a collection's role by its FQCN.
    let name = match &found.collection {
        Some(c) => format!("{c}.{short}"),
        None => short.clone(),
    };
    {
        let mut play = scope.play.lock().expect("not poisoned");
        let names = match req.dependency {
            true => &mut play.exposed.dependency_names,
            false => &mut play.exposed.role_names,
        };
        names.push(name.clone());
    }
    let role = Arc::new(Role {
        name,
        path: path.clone(),
        defaults,
        defaults_node,
    });
    let mut vars = role_vars(&role, &short, scope.parent_roles(), &req.at);
    if let Some(node) = vars_node {
        vars.extend(node.as_map().unwrap_or_default().iter().cloned());
    }
    vars.extend(req.entry_vars.iter().cloned());
    vars.extend(req.params.iter().cloned());
    let mut inner = scope.with_role(role, vars);
    inner.stack.push(path.clone());
    let specs = argument_specs(&path, meta.argument_specs, errors);
    if let Some(check) = validation_task(req, &path, specs.as_ref()) {
        tasks.extend(tasks::expand(&check, &inner, errors));
    }
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

/// The last part of a role's name: `tune` of `acme.gpu.tune`, `preinstall`
/// of `kubernetes/preinstall`; a roles folder's `a.b.c` keeps its dots.
fn role_name(name: &str, in_collection: bool) -> String {
    let name = match collections::split_fqcn(name) {
        Some((_, role)) if in_collection => role,
        _ => name,
    };
    Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned())
}

/// `role_name` (the short name), `ansible_role_name` (a collection role's
/// FQCN) and `role_path`, as Ansible sets them for a role's tasks; for a
/// role included from others, `ansible_parent_role_names` and
/// `ansible_parent_role_paths`, innermost first.
fn role_vars(role: &Role, short: &str, parents: &[Arc<Role>], at: &Node) -> Vec<(Node, Node)> {
    let s = |text: String| Node::new(Value::Str(text), at.span.clone());
    let mut vars = vec![
        (s("role_name".into()), s(short.to_string())),
        (s("ansible_role_name".into()), s(role.name.clone())),
        (s("role_path".into()), s(role.path.display().to_string())),
    ];
    if !parents.is_empty() {
        let list = |each: &dyn Fn(&Role) -> String| {
            let items = parents.iter().map(|p| s(each(p))).collect();
            Node::new(Value::Seq(items), at.span.clone())
        };
        vars.push((
            s("ansible_parent_role_names".into()),
            list(&|p| p.name.clone()),
        ));
        vars.push((
            s("ansible_parent_role_paths".into()),
            list(&|p| p.path.display().to_string()),
        ));
    }
    vars
}

/// A role's `meta/main.yml`: its dependencies, the collections its
/// short names resolve through, and argument specs.
#[derive(Default)]
struct Meta {
    dependencies: Vec<Node>,
    collections: Vec<String>,
    argument_specs: Option<Node>,
}

impl Meta {
    fn read(path: &Path, errors: &mut Errors) -> Meta {
        let Some(file) = main_file(&path.join("meta"), "main") else {
            return Meta::default();
        };
        let root = match yaml::load_file(&file) {
            Ok(root) => root,
            Err(d) => {
                errors.push(d);
                return Meta::default();
            }
        };
        Meta {
            dependencies: root
                .get("dependencies")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .to_vec(),
            collections: root
                .get("collections")
                .map(|v| playbook::collection_list(v, errors))
                .unwrap_or_default(),
            argument_specs: root.get("argument_specs").cloned(),
        }
    }
}

/// A role's argument specs by entry point: `meta/argument_specs.yml`,
/// else the `argument_specs` of `meta/main.yml`, as Ansible reads them.
fn argument_specs(path: &Path, in_main: Option<Node>, errors: &mut Errors) -> Option<Node> {
    let Some(file) = main_file(&path.join("meta"), "argument_specs") else {
        return in_main;
    };
    match yaml::load_file(&file) {
        Ok(root) => root.get("argument_specs").cloned(),
        Err(d) => {
            errors.push(d);
            None
        }
    }
}

/// The task Ansible puts first in a role whose argument specs name its
/// entry point: `validate_argument_spec` with the entry's options, the
/// role's parameters, and which role it checks.
fn validation_task(req: &RoleRequest, path: &Path, specs: Option<&Node>) -> Option<Node> {
    let entry = specs?.get(&req.tasks_from)?;
    if entry.as_map().is_none_or(<[_]>::is_empty) {
        return None;
    }
    let at = entry.span.clone();
    let s = |text: &str| Node::new(Value::Str(text.to_string()), at.clone());
    let map = |pairs: Vec<(&str, Node)>| {
        Node::new(
            Value::Map(pairs.into_iter().map(|(k, v)| (s(k), v)).collect()),
            at.clone(),
        )
    };
    let mut name = format!("Validating arguments against arg spec '{}'", req.tasks_from);
    if let Some(short) = entry.get("short_description").and_then(Node::scalar_text) {
        name = format!("{name} - {short}");
    }
    let options = entry
        .get("options")
        .cloned()
        .unwrap_or_else(|| map(Vec::new()));
    let args = map(vec![
        ("argument_spec", options),
        (
            "provided_arguments",
            Node::new(Value::Map(req.params.clone()), at.clone()),
        ),
        (
            "validate_args_context",
            map(vec![
                ("type", s("role")),
                ("name", s(&req.name)),
                ("argument_spec_name", s(&req.tasks_from)),
                ("path", s(&path.display().to_string())),
            ]),
        ),
    ]);
    let task = map(vec![
        ("name", s(&name)),
        ("ansible.builtin.validate_argument_spec", args),
        ("tags", Node::new(Value::Seq(vec![s("always")]), at.clone())),
    ]);
    Some(Node::new(Value::Seq(vec![task]), at))
}

/// A role's `meta/` dependencies, public when the role that needs them is.
fn dependencies(
    of: &RoleRequest,
    path: &Path,
    deps: &[Node],
    scope: &Scope,
    errors: &mut Errors,
) -> Vec<Task> {
    let mut inner = scope.clone();
    inner.stack.push(path.to_path_buf());
    let mut tasks = Vec::new();
    for dep in deps {
        if let Some(mut req) = RoleRequest::from_entry(dep, errors) {
            req.public = of.public;
            req.dependency = true;
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

/// A role's `defaults/` or `vars/` file as variables, with its node: the
/// file `main.yml`, or, as Ansible reads it, every file in a `main/`
/// folder (and its subfolders) in the order of their paths, a later
/// file's variable winning.
fn vars_file(
    dir: &Path,
    name: &str,
    errors: &mut Errors,
) -> (serde_json::Map<String, serde_json::Value>, Option<Node>) {
    let files = match main_file(dir, name) {
        Some(file) => vec![file],
        None => files_under(&dir.join(name)),
    };
    let mut vars = serde_json::Map::new();
    let mut entries = Vec::new();
    let mut span = None;
    for file in files {
        match yaml::load_file(&file) {
            Ok(node) if matches!(node.value, Value::Null) => {}
            Ok(node) => {
                vars.extend(playbook::vars_map(&node, errors));
                entries.extend(node.as_map().unwrap_or_default().iter().cloned());
                span.get_or_insert(node.span.clone());
            }
            Err(d) => errors.push(d),
        }
    }
    let node = span.map(|span| Node::new(Value::Map(entries), span));
    (vars, node)
}

/// The variables files in a folder and its subfolders, sorted by path:
/// `.yml`, `.yaml`, `.json` or no extension, hidden ones left out.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .extension()
                .is_none_or(|e| ["yml", "yaml", "json"].iter().any(|x| e == *x))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
pub(super) mod tests {
    use crate::load::playbook::{load, Playbook, Task};

    pub(in crate::load) fn tree<P: AsRef<std::path::Path>>(
        files: &[(P, &str)],
    ) -> tempfile::TempDir {
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
    fn a_role_task_without_duplicates_runs_once_per_play_for_the_same_parameters() {
        let (_dir, pb) = load_tree(&[
            ("roles/r/tasks/main.yml", "- {name: in r, command: echo}\n"),
            (
                "site.yml",
                "- hosts: all\n  tasks:\n    - import_role: {name: r}\n    - import_role: {name: r}\n\
                 \x20   - import_role: {name: r, allow_duplicates: false}\n\
                 \x20   - include_role: {name: r, allow_duplicates: false}\n",
            ),
        ]);
        assert_eq!(names(&pb.plays[0].tasks), ["in r", "in r"]);
    }

    #[test]
    fn public_roles_give_the_play_their_defaults_and_vars() {
        let role = |name: &str| {
            [
                (
                    format!("roles/{name}/defaults/main.yml"),
                    format!("{name}_d: d\n"),
                ),
                (
                    format!("roles/{name}/vars/main.yml"),
                    format!("{name}_v: v\n"),
                ),
                (
                    format!("roles/{name}/tasks/main.yml"),
                    "- command: echo\n".into(),
                ),
            ]
        };
        let mut files: Vec<(String, String)> = ["listed", "dep", "imported", "hidden", "shown"]
            .iter()
            .flat_map(|n| role(n))
            .collect();
        files.push((
            "roles/listed/meta/main.yml".into(),
            "dependencies: [dep]\n".into(),
        ));
        files.push((
            "site.yml".into(),
            "- hosts: all\n  roles: [listed]\n  tasks:\n    - import_role: {name: imported}\n\
             \x20   - include_role: {name: hidden}\n    - include_role: {name: shown, public: true}\n"
                .into(),
        ));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_dir, pb) = load_tree(&files);
        let exposed = &pb.plays[0].roles;
        let keys =
            |m: &serde_json::Map<String, serde_json::Value>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&exposed.defaults),
            ["dep_d", "listed_d", "imported_d", "shown_d"]
        );
        assert_eq!(
            keys(&exposed.vars),
            ["dep_v", "listed_v", "imported_v", "shown_v"]
        );
    }

    #[test]
    fn includes_name_role_path_and_files_beside_the_including_file() {
        let files = [
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
            (
                "roles/r/tasks/main.yml",
                "- include_tasks: \"{{ role_path }}/tasks/x.yml\"\n- import_tasks: sub/a.yml\n",
            ),
            (
                "roles/r/tasks/x.yml",
                "- {name: by role_path, command: echo}\n",
            ),
            ("roles/r/tasks/sub/a.yml", "- import_tasks: b.yml\n"),
            (
                "roles/r/tasks/sub/b.yml",
                "- {name: beside, command: echo}\n",
            ),
            ("roles/r/handlers/main.yml", "- import_tasks: more.yml\n"),
            (
                "roles/r/handlers/more.yml",
                "- {name: imported handler, command: echo, listen: topic}\n",
            ),
        ];
        let (_dir, pb) = load_tree(&files);
        let play = &pb.plays[0];
        assert_eq!(names(&play.tasks), ["by role_path", "beside"]);
        assert_eq!(names(&play.handlers), ["imported handler"]);
        assert_eq!(play.handlers[0].listen, ["topic"]);
    }

    #[test]
    fn blocks_and_includes_hand_down_notify_run_once_listen_and_delegation() {
        let files = [
            ("site.yml", "- hosts: all\n  tasks:\n    - block:\n        - {name: a, command: echo}\n        - {name: b, command: echo, notify: own}\n      notify: h1\n      run_once: true\n    - import_tasks: local.yml\n      delegate_to: localhost\n  handlers:\n    - import_tasks: hs.yml\n      listen: topic\n    - {name: h1, command: echo}\n    - {name: own, command: echo}\n"),
            ("local.yml", "- {name: c, command: echo}\n"),
            ("hs.yml", "- {name: imported, command: echo}\n"),
        ];
        let (_dir, pb) = load_tree(&files);
        let play = &pb.plays[0];
        let notify: Vec<Vec<&str>> = play.tasks[..2]
            .iter()
            .map(|t| t.notify.iter().map(|(n, _)| n.as_str()).collect())
            .collect();
        assert_eq!(notify, [vec!["h1"], vec!["own"]]);
        assert!(play.tasks[0].run_once && play.tasks[1].run_once);
        assert!(play.tasks[2].delegate_to.is_some() && play.tasks[0].delegate_to.is_none());
        assert_eq!(play.handlers[0].listen, ["topic"]);
        let refused = [
            ("site.yml", "- hosts: all\n  tasks:\n    - block:\n        - reboot:\n      delegate_to: localhost\n"),
        ];
        let dir = tree(&refused);
        let errs = load(&dir.path().join("site.yml")).unwrap_err();
        assert!(
            errs[0].message.contains("'reboot' cannot be delegated"),
            "{errs:?}"
        );
    }

    #[test]
    fn a_main_folder_of_defaults_or_vars_is_read_file_by_file_in_order() {
        let files = [
            ("roles/r/defaults/main/10-base.yml", "x: 1\ny: 1\n"),
            ("roles/r/defaults/main/20-more/a.yaml", "y: 2\nz: [a]\n"),
            ("roles/r/defaults/main/.hidden.yml", "x: 9\n"),
            ("roles/r/defaults/main/notes.txt", "x: 8\n"),
            ("roles/r/vars/main/a.yml", "v: 1\n"),
            ("roles/r/tasks/main.yml", "- command: echo\n"),
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
        ];
        let (_dir, pb) = load_tree(&files);
        let task = &pb.plays[0].tasks[0];
        let role = task.role.as_ref().unwrap();
        assert_eq!(role.defaults["x"], 1, "hidden and other files are not read");
        assert_eq!(role.defaults["y"], 2, "a later file wins");
        assert_eq!(role.defaults["z"], serde_json::json!(["a"]));
        assert_eq!(task.vars["v"], 1);
    }

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
        let debian = &play.tasks[3];
        assert_eq!(
            debian.when.as_ref().unwrap().to_json(),
            serde_json::json!(["enabled"])
        );
        let included = debian.included.as_ref().unwrap().to_json();
        let full = debian.span.source.name.clone();
        assert_eq!(
            included,
            serde_json::json!([format!(
                "('setup-' ~ (ansible_os_family) ~ '.yml') in ['setup-Debian.yml', '{full}']"
            )]),
            "the include's guard names the file as written and in full"
        );
        assert!(size.search_path(&[])[0].ends_with("roles/swap"));
        assert!(size.search_path(&[])[1].ends_with("roles/swap/tasks"));
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
            ("site.yml", "- hosts: all\n  tasks:\n    - include_tasks: sub/one.yml\n      vars: {x: 1}\n      ignore_errors: true\n    - import_tasks: sub/one.yml\n      loop: [a, b]\n      loop_control: {loop_var: pkg}\n"),
            ("sub/one.yml", "- import_tasks: two.yml\n"),
            ("sub/two.yml", "- {name: two, command: echo}\n"),
        ]);
        let tasks = &pb.plays[0].tasks;
        assert_eq!(names(tasks), ["two", "two", "two"]);
        assert_eq!(tasks[0].vars["x"], 1);
        // As Ansible's included tasks take it from their include.
        assert!(tasks[0].ignore_errors && !tasks[1].ignore_errors);
        assert_eq!(
            (&tasks[1].vars["pkg"], &tasks[2].vars["pkg"]),
            (&serde_json::json!("a"), &serde_json::json!("b"))
        );
    }

    #[test]
    fn a_condition_on_an_imported_playbook_holds_for_each_of_its_tasks() {
        let (_dir, pb) = load_tree(&[
            ("site.yml", "- import_playbook: sub/other.yml\n  when: deploy | bool\n- hosts: all\n  tasks: [{name: own, command: echo}]\n"),
            ("sub/other.yml", "- hosts: all\n  tasks:\n    - {name: guarded, command: echo, when: x}\n    - {name: plain, command: echo}\n  handlers:\n    - {name: h, command: echo}\n"),
        ]);
        let when = |t: &Task| t.when.as_ref().map(|w| w.to_json());
        let imported = &pb.plays[0];
        assert_eq!(
            when(&imported.tasks[0]),
            Some(serde_json::json!(["deploy | bool", "x"]))
        );
        assert_eq!(
            when(&imported.tasks[1]),
            Some(serde_json::json!(["deploy | bool"]))
        );
        assert_eq!(
            when(&imported.handlers[0]),
            Some(serde_json::json!(["deploy | bool"]))
        );
        assert_eq!(when(&pb.plays[1].tasks[0]), None);
    }

    #[test]
    fn an_imported_playbooks_vars_and_tags_go_over_each_of_its_plays() {
        let (_dir, pb) = load_tree(&[
            (
                "site.yml",
                "- import_playbook: other.yml
  vars: {driver: '580', swap: 8}
  tags: [gpu]
",
            ),
            (
                "other.yml",
                "- hosts: all
  vars: {driver: '550', keep: 1}
  tags: own
  tasks: [{name: t, command: echo}]
- hosts: all
  tasks: [{name: u, command: echo}]
",
            ),
        ]);
        let first = &pb.plays[0];
        assert_eq!(
            serde_json::Value::Object(first.vars.clone()),
            serde_json::json!({"driver": "580", "keep": 1, "swap": 8})
        );
        assert_eq!(first.tags, ["own", "gpu"]);
        let node = first.vars_node.as_ref().unwrap().to_json();
        assert_eq!(node["driver"], "580");
        assert_eq!(pb.plays[1].vars["swap"], 8);
        assert_eq!(pb.plays[1].tags, ["gpu"]);
    }

    #[test]
    fn a_loop_over_include_role_expands_the_role_per_item() {
        let (_dir, pb) = load_tree(&[
            ("site.yml", "- hosts: all\n  vars: {ports: [22, 2222]}\n  tasks:\n    - include_role: {name: r, tasks_from: port.yml}\n      loop: [a, b]\n    - include_role: {name: r, tasks_from: port.yml}\n      loop: '{{ ports }}'\n      loop_control: {loop_var: p}\n"),
            ("roles/r/tasks/port.yml", "- {name: port, command: echo}\n"),
        ]);
        let tasks = &pb.plays[0].tasks;
        // Two literal items; two from the play's list, then the guard for a
        // host whose list is longer.
        assert_eq!(
            names(tasks),
            ["port", "port", "port", "port", "loop over r"]
        );
        assert_eq!(tasks[1].vars["item"], "b");
        assert_eq!(tasks[3].vars["p"], "{{ (ports)[1] }}");
        let errs = errors(&[
            (
                "site.yml",
                "- hosts: all\n  tasks:\n    - import_role: {name: r}\n      loop: [a]\n",
            ),
            ("roles/r/tasks/main.yml", "- command: echo\n"),
        ]);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].ends_with(
                "site.yml:3:7: a loop over import_role is not allowed: use include_role"
            ),
            "{errs:?}"
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

#[cfg(test)]
mod collection_tests {
    use super::tests::tree;
    use crate::load::playbook::{load_with, PlayDefaults, Playbook};

    const COLL: &str = "collections/ansible_collections/acme/gpu";

    fn at(prefix: &str, files: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
        files
            .iter()
            .map(|(p, t)| (format!("{prefix}{p}"), *t))
            .collect()
    }

    fn load(
        dir: &tempfile::TempDir,
        configured: &[std::path::PathBuf],
    ) -> Result<Playbook, Vec<String>> {
        let defaults = PlayDefaults::default();
        load_with(&dir.path().join("site.yml"), &[], configured, &defaults).map_err(|errs| {
            errs.into_iter()
                .map(|d| {
                    format!(
                        "{}: {} [{}]",
                        d.span.location(),
                        d.message,
                        d.hint.unwrap_or_default()
                    )
                })
                .collect()
        })
    }

    fn names(pb: &Playbook) -> Vec<(String, String)> {
        pb.plays[0]
            .tasks
            .iter()
            .map(|t| {
                let role = t.role.as_ref().map_or(String::new(), |r| r.name.clone());
                (role, t.name.clone())
            })
            .collect()
    }

    fn pair(role: &str, task: &str) -> (String, String) {
        (role.to_string(), task.to_string())
    }

    #[test]
    fn collection_roles_resolve_by_fqcn_and_through_collections_lists() {
        let mut files = at(
            &format!("{COLL}/"),
            &[
                (
                    "roles/tune/tasks/main.yml",
                    "- {name: tune, debug: {msg: '{{ role_name }} {{ ansible_role_name }}'}}\n",
                ),
                (
                    "roles/tune/tasks/extra.yml",
                    "- {name: extra, clocks: {}}\n",
                ),
                (
                    "roles/tune/meta/main.yml",
                    "collections: [acme.base]\ndependencies: [base, acme.gpu.driver]\n",
                ),
                (
                    "roles/driver/tasks/main.yml",
                    "- {name: driver, debug: {}}\n",
                ),
                ("plugins/modules/clocks.py", ""),
            ],
        );
        files.extend(at(
            "collections/ansible_collections/acme/base/",
            &[("roles/base/tasks/main.yml", "- {name: base, debug: {}}\n")],
        ));
        files.push((
            "roles/tune/tasks/main.yml".into(),
            "- {name: legacy tune, debug: {}}\n",
        ));
        files.push((
            "site.yml".into(),
            "- hosts: all\n  collections: [acme.gpu]\n  roles: [acme.gpu.tune, tune]\n  tasks:\n    - import_role: {name: acme.gpu.tune, tasks_from: extra}\n",
        ));
        let dir = tree(&files);
        let errs = load(&dir, &[]).unwrap_err();
        // The role's `clocks` is the collection's module: refused, by FQCN.
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("tune/tasks/extra.yml:1:")
                && errs[0].contains(
                    "module 'acme.gpu.clocks' is not supported: nodeprov has no native version"
                ),
            "{errs:?}"
        );
        std::fs::write(
            dir.path()
                .join(format!("{COLL}/roles/tune/tasks/extra.yml")),
            "- {name: extra, debug: {}}\n",
        )
        .unwrap();
        let pb = load(&dir, &[]).unwrap();
        // Dependencies first (`base` through the meta's list, `driver` by FQCN);
        // `tune` through the play's list is the collection's, not roles/tune,
        // and runs once.
        assert_eq!(
            names(&pb),
            [
                pair("acme.base.base", "base"),
                pair("acme.gpu.driver", "driver"),
                pair("acme.gpu.tune", "tune"),
                pair("acme.gpu.tune", "extra"),
            ]
        );
        let tune = &pb.plays[0].tasks[2];
        assert_eq!(tune.vars["role_name"], "tune");
        assert_eq!(tune.vars["ansible_role_name"], "acme.gpu.tune");
        assert!(tune.vars["role_path"]
            .as_str()
            .unwrap()
            .ends_with("acme/gpu/roles/tune"));
        assert!(tune.search_path(&[])[0].ends_with("acme/gpu/roles/tune"));
    }

    #[test]
    fn the_playbooks_collections_come_before_the_configured_path_and_roles_before_none() {
        let other = tempfile::tempdir().unwrap();
        let role = other
            .path()
            .join("ansible_collections/acme/gpu/roles/tune/tasks");
        std::fs::create_dir_all(&role).unwrap();
        std::fs::write(role.join("main.yml"), "- {name: configured, debug: {}}\n").unwrap();
        let mut files = at(
            &format!("{COLL}/"),
            &[(
                "roles/tune/tasks/main.yml",
                "- {name: beside the playbook, debug: {}}\n",
            )],
        );
        files.push((
            "roles/tune/tasks/main.yml".into(),
            "- {name: legacy, debug: {}}\n",
        ));
        files.push((
            "roles/x.y.z/tasks/main.yml".into(),
            "- {name: dotted, debug: {}}\n",
        ));
        files.push((
            "site.yml".into(),
            "- hosts: all\n  roles: [acme.gpu.tune, tune, x.y.z]\n",
        ));
        let dir = tree(&files);
        let configured = [other.path().to_path_buf()];
        let tasks = |pb: &Playbook| -> Vec<String> { names(pb).into_iter().map(|p| p.1).collect() };
        let pb = load(&dir, &configured).unwrap();
        // Without a `collections:` list a short name is a roles/ role, and so
        // is a FQCN-shaped name that no collection has.
        assert_eq!(tasks(&pb), ["beside the playbook", "legacy", "dotted"]);
        assert_eq!(pb.plays[0].tasks[2].vars["role_name"], "x.y.z");
        std::fs::remove_dir_all(dir.path().join("collections")).unwrap();
        let pb = load(&dir, &configured).unwrap();
        assert_eq!(tasks(&pb), ["configured", "legacy", "dotted"]);
    }

    #[test]
    fn a_missing_collection_role_says_where_it_looked_and_how_to_install_it() {
        let mut files = at(
            &format!("{COLL}/"),
            &[("roles/tune/tasks/main.yml", "[]\n")],
        );
        files.push((
            "collections/requirements.yml".into(),
            "collections:\n  - name: acme.net\n",
        ));
        files.push((
            "site.yml".into(),
            "- hosts: all\n  collections: [acme.gpu, 'not a name']\n  roles:\n    - acme.net.bond\n    - acme.gpu.nosuch\n    - nosuch\n  tasks:\n    - community.general.nmcli: {conn_name: x}\n- hosts: all\n  collections: [acme.net, ansible.builtin]\n  tasks:\n    - bond_iface: {}\n",
        ));
        let dir = tree(&files);
        let errs = load(&dir, &[]).unwrap_err();
        let req = dir.path().join("collections/requirements.yml");
        let req = req.display();
        let has = |want: &[&str]| {
            assert!(
                errs.iter().any(|e| want.iter().all(|w| e.contains(w))),
                "{want:?} in {errs:#?}"
            )
        };
        has(&["site.yml:2:27: 'not a name' is not a collection name"]);
        has(&[
            "site.yml:4:7: role 'acme.net.bond' not found",
            "collection acme.net is not installed (looked for ansible_collections/acme/net in: ",
            &format!(
                "{req} lists it: install it with `ansible-galaxy collection install -r {req}`"
            ),
        ]);
        has(&[
            "site.yml:5:7: role 'acme.gpu.nosuch' not found",
            "collection acme.gpu (at ",
            "has no role 'nosuch'; its roles: tune",
        ]);
        has(&[
            "site.yml:6:7: role 'nosuch' not found",
            "looked in: the roles of the collections acme.gpu, then /",
            "/roles, ",
            "; install it with `ansible-galaxy role install nosuch` (not listed in ",
        ]);
        has(&[
            "site.yml:8:7: module 'community.general.nmcli' is not supported",
            "the modules of community.general nodeprov has: ",
        ]);
        has(&[
            "site.yml:12:7: 'bond_iface' is not a module or task keyword supported by nodeprov",
            "; the listed collections acme.net are not installed (looked in: ",
        ]);
        assert_eq!(errs.len(), 6, "{errs:#?}");
    }
}
