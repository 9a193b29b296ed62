//! Variable layers for one host, merged in Ansible's precedence order
//! (lowest first): inventory (all < groups < host) < gathered facts < play
//! `vars` < `vars_files` < task `vars` < registered results < loop item <
//! extra vars (`-e`).

mod play_files;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::prepared::RunOptions;
use crate::base::diag::Diagnostic;
use crate::load::roles::Exposed;
use crate::template::Templates;
pub(crate) use play_files::{entry_names, read_literal, unfound, Known, PlayVars};

/// The longest chain of variables referring to variables (`a` uses `b`
/// uses `c`...) that is resolved; each link costs one render pass.
pub const MAX_CHAIN: usize = 64;

#[derive(Clone, Default)]
pub struct VarLayers {
    pub inventory: Map<String, Value>,
    pub facts: Map<String, Value>,
    pub play: Map<String, Value>,
    pub registered: Map<String, Value>,
    pub extra: Map<String, Value>,
    /// The play's `vars` and `vars_files` while some file is named after
    /// the host's variables: `play` is then rebuilt once they are known.
    pub play_files: Option<Arc<PlayVars>>,
    /// The defaults and vars of the play's public roles.
    pub roles: Arc<Exposed>,
}

/// A task's variables, rendered; those that could not be rendered are
/// left out and named in `broken` with the reason, so that only a task
/// that uses one fails (Ansible resolves variables lazily).
pub struct Resolved {
    pub vars: Value,
    pub broken: BTreeMap<String, VarError>,
}

/// Why a variable cannot be rendered.
#[derive(Clone, Debug, thiserror::Error)]
pub enum VarError {
    #[error("it refers to itself")]
    SelfReference,
    /// The cycle it is on, as `a → b → a`.
    #[error("it refers back to itself through {0}")]
    Cycle(String),
    #[error("it depends on a cycle of variables: {0}")]
    OnCycle(String),
    #[error("it ends a chain of variables more than {MAX_CHAIN} deep")]
    TooDeep,
    #[error("it uses '{name}': {why}")]
    Uses { name: String, why: Box<VarError> },
    /// Rendering failed (an undefined reference, a value over the limit).
    #[error("{0}")]
    Render(String),
}

/// A task's own variables: its role's defaults, below everything else,
/// and its `vars:` (with the role's and its blocks'), above the play's.
#[derive(Clone, Copy)]
pub(crate) struct TaskVars<'a> {
    pub defaults: &'a Map<String, Value>,
    pub own: &'a Map<String, Value>,
}

impl<'a> TaskVars<'a> {
    pub fn of(task: &'a crate::load::playbook::Task) -> TaskVars<'a> {
        TaskVars {
            defaults: task.role.as_ref().map_or(no_vars(), |r| &r.defaults),
            own: &task.vars,
        }
    }
}

/// The magic variables of one batch of a play: the run's options as
/// Ansible names them (`ansible_check_mode`, `ansible_diff_mode`,
/// `ansible_forks`, `ansible_run_tags` (`['all']` when none are asked for),
/// `ansible_skip_tags`, `ansible_verbosity`, and `ansible_limit` when one
/// is given), the play's name and roles (`ansible_play_role_names` and its
/// old name `role_names`, the roles it names; `ansible_dependent_role_names`,
/// those loaded as dependencies; `ansible_role_names`, both, each once).
/// The play's host lists, as long as the fleet, are the batch's templates'
/// (`Templates::for_batch`), not copied into every host's variables.
pub fn play_magic(
    (opts, forks, limit): (&RunOptions, usize, Option<&str>),
    (play, roles): (&str, &Exposed),
) -> Map<String, Value> {
    let run_tags = match opts.tags.is_empty() {
        true => vec!["all".to_string()],
        false => opts.tags.clone(),
    };
    let mut magic = Map::new();
    magic.insert("ansible_check_mode".into(), opts.check.into());
    magic.insert("ansible_diff_mode".into(), opts.diff.into());
    magic.insert("ansible_forks".into(), forks.into());
    magic.insert("ansible_run_tags".into(), run_tags.into());
    magic.insert("ansible_skip_tags".into(), opts.skip_tags.clone().into());
    magic.insert("ansible_verbosity".into(), 0.into());
    if let Some(limit) = limit {
        magic.insert("ansible_limit".into(), limit.into());
    }
    magic.insert("ansible_play_name".into(), play.into());
    let mut every: Vec<&String> = Vec::new();
    for name in roles.role_names.iter().chain(&roles.dependency_names) {
        if !every.contains(&name) {
            every.push(name);
        }
    }
    let dependent: Vec<&String> = every
        .iter()
        .copied()
        .filter(|n| roles.dependency_names.contains(n))
        .collect();
    magic.insert("ansible_play_role_names".into(), json!(roles.role_names));
    magic.insert("role_names".into(), json!(roles.role_names));
    magic.insert("ansible_dependent_role_names".into(), json!(dependent));
    magic.insert("ansible_role_names".into(), json!(every));
    magic
}

/// A play's `hosts:` with its templates rendered, as Ansible renders it:
/// with the play's variables and the extra ones, not any host's.
pub fn host_pattern(
    play: &crate::load::playbook::Play,
    templates: &Templates,
    play_vars: &Map<String, Value>,
    extra: &Map<String, Value>,
) -> Result<String, Diagnostic> {
    if !crate::template::is_templated(&play.hosts) {
        return Ok(play.hosts.clone());
    }
    let mut ctx = play_vars.clone();
    ctx.extend(extra.clone());
    templates
        .render_str(&play.hosts, &Value::Object(ctx))
        .map_err(|e| Diagnostic::new(&play.span, format!("hosts: {e}")))
}

/// An empty set of variables, for a task outside any role.
fn no_vars() -> &'static Map<String, Value> {
    static NONE: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    NONE.get_or_init(Map::new)
}

impl VarLayers {
    /// Reads the play's `vars_files` named after the host's variables, once
    /// those are known (after facts, or at the start without them).
    pub fn read_host_files(
        &mut self,
        templates: &Templates,
        known: Known,
    ) -> Result<(), Diagnostic> {
        let Some(files) = self.play_files.take() else {
            return Ok(());
        };
        let none = TaskVars {
            defaults: no_vars(),
            own: no_vars(),
        };
        let ctx = self.context(templates, none, None).vars;
        self.play = files.for_host(templates, &ctx, known)?;
        Ok(())
    }

    /// The context a task renders in.
    pub fn context(
        &self,
        templates: &Templates,
        task_vars: TaskVars,
        item: Option<(&str, &Value)>,
    ) -> Resolved {
        let (all, data) = self.merged(task_vars, item);
        let deps = dependencies(templates, &all, &data);
        let depths = depths(&deps);
        render_levels(templates, all, &deps, depths, BTreeMap::new())
    }

    /// Every layer in one map, and the names whose values are data.
    fn merged(
        &self,
        task_vars: TaskVars,
        item: Option<(&str, &Value)>,
    ) -> (Map<String, Value>, BTreeSet<String>) {
        // Facts, registered results and loop items are data: a command's
        // output that happens to hold `{{ }}` must not be evaluated.
        let mut all = Map::new();
        let mut data = BTreeSet::new();
        let layers = [
            (&self.roles.defaults, false),
            (task_vars.defaults, false),
            (&self.inventory, false),
            (&self.facts, true),
            (&self.play, false),
            (&self.roles.vars, false),
            (task_vars.own, false),
            (&self.registered, true),
        ];
        for (layer, is_data) in layers {
            for (k, v) in layer {
                all.insert(k.clone(), v.clone());
                mark(&mut data, k, is_data);
            }
        }
        if let Some((name, value)) = item {
            all.insert(name.to_string(), value.clone());
            mark(&mut data, name, true);
        }
        for (k, v) in &self.extra {
            all.insert(k.clone(), v.clone());
            mark(&mut data, k, false);
        }
        (all, data)
    }

    /// The contexts of a loop's items, as [`VarLayers::context`] gives
    /// them, built so that what does not read the item is rendered once.
    pub fn item_contexts(
        &self,
        templates: &Templates,
        task_vars: TaskVars,
        loop_var: &str,
    ) -> ItemContexts {
        let loop_name = loop_var.to_string();
        // An extra variable of the same name hides the item altogether.
        let loop_var = (!self.extra.contains_key(loop_var)).then(|| loop_var.to_string());
        let (mut all, mut data) = self.merged(task_vars, None);
        if let Some(name) = &loop_var {
            all.remove(name);
            mark(&mut data, name, true);
        }
        let deps = dependencies(templates, &all, &data);
        let readers = loop_var
            .as_deref()
            .map(|name| readers_of(name, &deps))
            .unwrap_or_default();
        // Depths over the whole graph, so that an item's variables meet
        // the chain limit exactly as when everything renders at once.
        let (item_depths, base_depths): (BTreeMap<_, _>, BTreeMap<_, _>) = depths(&deps)
            .into_iter()
            .partition(|(k, _)| readers.contains(k));
        let (item_deps, base_deps): (BTreeMap<_, _>, BTreeMap<_, _>) =
            deps.into_iter().partition(|(k, _)| readers.contains(k));
        let per_item: Map<String, Value> = readers
            .iter()
            .filter_map(|k| Some((k.clone(), all.remove(k)?)))
            .collect();
        let base = render_levels(templates, all, &base_deps, base_depths, BTreeMap::new());
        ItemContexts {
            loop_var,
            loop_name,
            extras: Default::default(),
            items: Vec::new(),
            base,
            per_item,
            deps: item_deps,
            depths: item_depths,
        }
    }
}

/// The contexts of one loop's items: the variables that do not read the
/// item, rendered once, and those that do, rendered for each item.
pub struct ItemContexts {
    /// `None` when an extra variable hides the item.
    loop_var: Option<String>,
    /// The loop variable's name, which each item sees as `ansible_loop_var`.
    loop_name: String,
    /// `loop_control`'s `index_var` and `extended`, with every item.
    extras: crate::load::playbook::LoopExtras,
    items: Vec<Value>,
    base: Resolved,
    /// The variables that read the item, as written.
    per_item: Map<String, Value>,
    deps: BTreeMap<String, BTreeSet<String>>,
    depths: BTreeMap<String, Result<usize, VarError>>,
}

impl ItemContexts {
    /// The loop's `loop_control` extras, and its items for `ansible_loop`.
    pub fn with_extras(
        mut self,
        extras: &crate::load::playbook::LoopExtras,
        items: &[Option<Value>],
    ) -> Self {
        self.extras = extras.clone();
        if extras.extended.is_some() {
            self.items = items.iter().flatten().cloned().collect();
        }
        self
    }

    /// The variables of the `index`th item, `item`.
    pub fn context(&self, templates: &Templates, index: usize, item: &Value) -> Resolved {
        let mut vars = match &self.base.vars {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        vars.extend(self.per_item.clone());
        if let Some(name) = &self.loop_var {
            vars.insert(name.clone(), item.clone());
        }
        vars.insert("ansible_loop_var".into(), self.loop_name.clone().into());
        if let Some(name) = &self.extras.index_var {
            vars.insert(name.clone(), index.into());
            vars.insert("ansible_index_var".into(), name.clone().into());
        }
        if let Some(allitems) = self.extras.extended {
            vars.insert("ansible_loop".into(), self.ansible_loop(index, allitems));
        }
        let broken = self.base.broken.clone();
        render_levels(templates, vars, &self.deps, self.depths.clone(), broken)
    }
}

impl ItemContexts {
    /// Ansible's `ansible_loop` for the `index`th item (`extended`).
    fn ansible_loop(&self, index: usize, allitems: bool) -> Value {
        let length = self.items.len();
        let mut l = Map::new();
        if allitems {
            l.insert("allitems".into(), self.items.clone().into());
        }
        for (k, v) in [
            ("index", json!(index + 1)),
            ("index0", json!(index)),
            ("first", json!(index == 0)),
            ("last", json!(index + 1 == length)),
            ("length", json!(length)),
            ("revindex", json!(length - index)),
            ("revindex0", json!(length - index - 1)),
        ] {
            l.insert(k.into(), v);
        }
        if let Some(prev) = index.checked_sub(1).and_then(|p| self.items.get(p)) {
            l.insert("previtem".into(), prev.clone());
        }
        if let Some(next) = self.items.get(index + 1) {
            l.insert("nextitem".into(), next.clone());
        }
        Value::Object(l)
    }
}

/// Every variable that reads `name`, directly or through others.
fn readers_of(name: &str, deps: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (user, reads) in deps {
        for read in reads {
            users.entry(read).or_default().push(user);
        }
    }
    let mut found = BTreeSet::new();
    let mut todo = vec![name];
    while let Some(n) = todo.pop() {
        for user in users.get(n).into_iter().flatten() {
            if found.insert(user.to_string()) {
                todo.push(user);
            }
        }
    }
    found
}

fn mark(data: &mut BTreeSet<String>, name: &str, is_data: bool) {
    if is_data {
        data.insert(name.to_string());
    } else {
        data.remove(name);
    }
}

/// The names each templated variable (not data) reads.
fn dependencies(
    templates: &Templates,
    vars: &Map<String, Value>,
    data: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<String>> {
    vars.iter()
        .filter(|(k, v)| !data.contains(*k) && has_template(v))
        .map(|(k, v)| {
            let mut names = BTreeSet::new();
            template_vars(templates, v, &mut names);
            (k.clone(), names)
        })
        .collect()
}

/// Variables may refer to other variables (`bin: "{{ home }}/bin"`); each
/// is rendered once, after the ones it reads, so a chain resolves in as
/// many passes as it is long and a cycle is found instead of rendered.
fn render_levels(
    templates: &Templates,
    mut vars: Map<String, Value>,
    deps: &BTreeMap<String, BTreeSet<String>>,
    depths: BTreeMap<String, Result<usize, VarError>>,
    mut broken: BTreeMap<String, VarError>,
) -> Resolved {
    let mut levels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (name, depth) in depths {
        match depth {
            Ok(d) => levels.entry(d).or_default().push(name),
            Err(why) => {
                vars.remove(&name);
                broken.insert(name, why);
            }
        }
    }
    // Names of one level do not read each other, so each level renders
    // against the map as the previous levels left it, borrowed, not copied.
    let mut vars = Value::Object(vars);
    for names in levels.into_values() {
        let rendered: Vec<(String, Result<Value, VarError>)> = names
            .into_iter()
            .map(|name| {
                let r = render_var(templates, &vars, &deps[&name], &broken, &name);
                (name, r)
            })
            .collect();
        let map = vars.as_object_mut().expect("the variables are a map");
        for (name, r) in rendered {
            match r {
                Ok(v) => {
                    map.insert(name, v);
                }
                Err(why) => {
                    map.remove(&name);
                    broken.insert(name, why);
                }
            }
        }
    }
    Resolved { vars, broken }
}

/// One variable, rendered with the ones it reads, unless one of those is
/// broken.
fn render_var(
    templates: &Templates,
    vars: &Value,
    reads: &BTreeSet<String>,
    broken: &BTreeMap<String, VarError>,
    name: &str,
) -> Result<Value, VarError> {
    if let Some(dep) = reads.iter().find(|d| broken.contains_key(*d)) {
        return Err(VarError::Uses {
            name: dep.clone(),
            why: Box::new(broken[dep].clone()),
        });
    }
    templates
        .render_value(&vars[name], vars)
        .map_err(|e| VarError::Render(e.message))
}

/// For each templated variable, how many render passes it needs (1 when
/// it reads no other templated variable), or why it cannot be rendered:
/// it is part of a cycle, uses one, or ends a chain longer than
/// [`MAX_CHAIN`]. Iterative, so a hostile chain cannot exhaust the stack.
pub fn depths(
    deps: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, Result<usize, VarError>> {
    let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
    let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in deps.keys() {
        waiting.insert(name, templated_reads(deps, name).count());
        for dep in templated_reads(deps, name) {
            users.entry(dep).or_default().push(name);
        }
    }
    let mut depth: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ready: Vec<&str> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    while let Some(name) = ready.pop() {
        let d = *depth.entry(name).or_insert(1);
        for user in users.get(name).into_iter().flatten() {
            let du = depth.entry(user).or_insert(1);
            *du = (*du).max(d + 1);
            let left = waiting.get_mut(user).expect("every user is a variable");
            *left -= 1;
            if *left == 0 {
                ready.push(user);
            }
        }
    }
    let mut out: BTreeMap<String, Result<usize, VarError>> = BTreeMap::new();
    for (name, d) in &depth {
        let result = if *d > MAX_CHAIN {
            Err(VarError::TooDeep)
        } else {
            Ok(*d)
        };
        out.insert(name.to_string(), result);
    }
    // What is left waits on a cycle: walk its references to find it.
    cycle_errors(deps, &depth, &mut out);
    out
}

/// The templated variables `name` reads.
fn templated_reads<'d>(
    deps: &'d BTreeMap<String, BTreeSet<String>>,
    name: &str,
) -> impl Iterator<Item = &'d String> {
    deps[name].iter().filter(|d| deps.contains_key(*d))
}

/// Names every variable left waiting after `depths`' ordering: each is on a
/// cycle or reads one.
fn cycle_errors(
    deps: &BTreeMap<String, BTreeSet<String>>,
    depth: &BTreeMap<&str, usize>,
    out: &mut BTreeMap<String, Result<usize, VarError>>,
) {
    let mut cycles: BTreeMap<&str, String> = BTreeMap::new();
    for start in deps.keys().filter(|k| !depth.contains_key(k.as_str())) {
        let mut path: Vec<&String> = Vec::new();
        let mut on_path: BTreeMap<&str, usize> = BTreeMap::new();
        let mut at = start;
        let (on_cycle, cycle) = loop {
            if let Some(known) = cycles.get(at.as_str()) {
                break (path.len(), known.clone());
            }
            if let Some(&pos) = on_path.get(at.as_str()) {
                break (pos, chain_text(&path[pos..], at));
            }
            on_path.insert(at, path.len());
            path.push(at);
            at = templated_reads(deps, at)
                .find(|d| !depth.contains_key(d.as_str()))
                .expect("a variable left waiting waits on another one");
        };
        for (i, name) in path.into_iter().enumerate() {
            let why = match (i >= on_cycle, cycle.matches('→').count()) {
                (true, 1) => VarError::SelfReference,
                (true, _) => VarError::Cycle(cycle.clone()),
                (false, _) => VarError::OnCycle(cycle.clone()),
            };
            cycles.insert(name, cycle.clone());
            out.insert(name.clone(), Err(why));
        }
    }
}

/// `a → b → a`; a long cycle shows its ends, so a message stays one line.
fn chain_text(chain: &[&String], back_to: &str) -> String {
    let names: Vec<&str> = chain.iter().map(|s| s.as_str()).collect();
    let shown = match names.len() {
        n if n > 6 => format!(
            "{} → … → {}",
            names[..3].join(" → "),
            names[n - 2..].join(" → ")
        ),
        _ => names.join(" → "),
    };
    format!("{shown} → {back_to}")
}

pub fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => crate::template::is_templated(s),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(m) => m.values().any(has_template),
        _ => false,
    }
}

/// Top-level names the templates inside `v` read.
pub fn template_vars(t: &Templates, v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) if has_template(v) => out.extend(t.template_vars(s)),
        Value::Array(a) => a.iter().for_each(|x| template_vars(t, x, out)),
        Value::Object(m) => m.values().for_each(|x| template_vars(t, x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn precedence_and_chained_references() {
        let layers = VarLayers {
            inventory: map(json!({"a": "inv", "b": "inv", "home": "/usr/local/cuda"})),
            facts: Map::new(),
            play: map(json!({"b": "play", "c": "play", "bin": "{{ home }}/bin"})),
            registered: Map::new(),
            extra: map(json!({"c": "extra"})),
            play_files: None,
            roles: Arc::new(Exposed {
                defaults: map(json!({"a": "exposed", "y": "exposed", "z": "exposed"})),
                vars: map(json!({"b": "role", "d": "role", "r": "role"})),
                ..Exposed::default()
            }),
        };
        let t = Templates::new();
        let ctx = layers
            .context(
                &t,
                TaskVars {
                    defaults: &map(json!({"a": "default", "z": "default"})),
                    own: &map(json!({"d": "task"})),
                },
                Some(("item", &json!(1))),
            )
            .vars;
        assert_eq!(ctx["a"], "inv", "role defaults rank below the inventory");
        assert_eq!(ctx["z"], "default", "the task's own role's defaults win");
        assert_eq!(ctx["y"], "exposed");
        assert_eq!(ctx["r"], "role", "a public role's vars reach every task");
        assert_eq!(ctx["b"], "role", "role vars rank above the play's");
        assert_eq!(ctx["c"], "extra");
        assert_eq!(ctx["d"], "task");
        assert_eq!(ctx["item"], 1);
        assert_eq!(ctx["bin"], "/usr/local/cuda/bin");
    }

    fn no_task_vars() -> TaskVars<'static> {
        TaskVars {
            defaults: no_vars(),
            own: no_vars(),
        }
    }

    fn resolve_play(play: Value) -> Resolved {
        let layers = VarLayers {
            play: map(play),
            ..VarLayers::default()
        };
        layers.context(&Templates::new(), no_task_vars(), None)
    }

    #[test]
    fn self_reference_and_cycles_are_named_not_rendered_as_text() {
        let r = resolve_play(json!({
            "a": "{{ a }}",
            "b": "{{ c }}/x",
            "c": "{{ b }}",
            "d": "{{ b }}",
            "ok": "{{ base }}/bin",
            "base": "/opt",
        }));
        assert_eq!(r.broken["a"].to_string(), "it refers to itself");
        assert_eq!(
            r.broken["b"].to_string(),
            "it refers back to itself through b → c → b"
        );
        assert_eq!(
            r.broken["d"].to_string(),
            "it depends on a cycle of variables: b → c → b"
        );
        assert!(r.vars.get("a").is_none(), "never the text '{{{{ a }}}}'");
        assert_eq!(r.vars["ok"], "/opt/bin");
        assert_eq!(r.broken.len(), 4);
    }

    #[test]
    fn growth_by_self_reference_is_a_cycle_not_gigabytes() {
        let r = resolve_play(json!({"a": "{{ a ~ a ~ a ~ a }}"}));
        assert_eq!(r.broken["a"].to_string(), "it refers to itself");
    }

    #[test]
    fn a_value_over_the_size_limit_is_refused_and_its_users_say_why() {
        let mut vars = json!({"a": "x".repeat(1 << 20)});
        let mut prev = "a".to_string();
        for i in 0..5 {
            let name = format!("v{i}");
            vars[&name] = json!(format!("{{{{ {prev} ~ {prev} ~ {prev} ~ {prev} }}}}"));
            prev = name;
        }
        vars["user"] = json!("{{ v4 | length }}");
        let r = resolve_play(vars);
        assert_eq!(r.vars["v0"].as_str().unwrap().len(), 4 << 20);
        assert!(
            r.broken["v1"]
                .to_string()
                .contains("larger than the 16 MiB limit"),
            "{}",
            r.broken["v1"].to_string()
        );
        assert!(
            r.broken["user"]
                .to_string()
                .starts_with("it uses 'v4': it uses 'v3'"),
            "{}",
            r.broken["user"].to_string()
        );
    }

    #[test]
    fn chains_resolve_in_order_up_to_the_limit() {
        let chain = |n: usize| {
            let mut vars = json!({"v0": "end"});
            for i in 1..=n {
                vars[format!("v{i}")] = json!(format!("{{{{ v{} }}}}", i - 1));
            }
            resolve_play(vars)
        };
        let r = chain(MAX_CHAIN);
        assert_eq!(r.vars[format!("v{MAX_CHAIN}")], "end");
        assert!(r.broken.is_empty());
        let r = chain(MAX_CHAIN + 1);
        assert_eq!(
            r.broken[&format!("v{}", MAX_CHAIN + 1)].to_string(),
            format!("it ends a chain of variables more than {MAX_CHAIN} deep")
        );
        assert_eq!(r.vars[format!("v{MAX_CHAIN}")], "end");
    }

    #[test]
    fn a_cycle_through_ten_thousand_variables_does_not_exhaust_the_stack() {
        let n = 10_000;
        let vars: Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("v{i}"),
                    json!(format!("{{{{ v{} }}}}", (i + 1) % n)),
                )
            })
            .collect();
        let r = resolve_play(Value::Object(vars));
        assert_eq!(r.broken.len(), n);
        assert_eq!(
            r.broken["v0"].to_string(),
            "it refers back to itself through v0 → v1 → v2 → … → v9998 → v9999 → v0"
        );
    }

    #[test]
    fn facts_registered_results_and_items_are_data_not_templates() {
        let layers = VarLayers {
            facts: map(json!({"motd": "{{ secret }}"})),
            registered: map(json!({"out": {"stdout": "{{ secret }}"}})),
            play: map(json!({"secret": "s3cret", "shown": "{{ out.stdout }}"})),
            ..VarLayers::default()
        };
        let item = json!("{{ secret }}");
        let r = layers.context(&Templates::new(), no_task_vars(), Some(("item", &item)));
        assert_eq!(r.vars["motd"], "{{ secret }}");
        assert_eq!(r.vars["out"]["stdout"], "{{ secret }}");
        assert_eq!(r.vars["item"], "{{ secret }}");
        assert_eq!(r.vars["shown"], "{{ secret }}");
    }

    #[test]
    fn an_undefined_reference_breaks_only_that_variable() {
        let r = resolve_play(json!({"bin": "{{ cuda_home }}/bin", "x": "{{ bin }}", "y": "1"}));
        assert_eq!(
            r.broken["bin"].to_string(),
            "undefined variable 'cuda_home'"
        );
        assert_eq!(
            r.broken["x"].to_string(),
            "it uses 'bin': undefined variable 'cuda_home'"
        );
        assert_eq!(r.vars["y"], "1");
    }
    /// Each item's context, built once per item and through
    /// `item_contexts`, as JSON with its broken variables' reasons.
    fn both_ways(layers: &VarLayers, task_vars: Value, items: &[Value]) -> Vec<(Value, Value)> {
        let t = Templates::new();
        let own = map(task_vars);
        let task_vars = TaskVars {
            defaults: no_vars(),
            own: &own,
        };
        let contexts = layers.item_contexts(&t, task_vars, "item");
        let shown = |r: Resolved| {
            let broken: Map<String, Value> = r
                .broken
                .into_iter()
                .map(|(k, why)| (k, json!(why.to_string())))
                .collect();
            json!({"vars": r.vars, "broken": broken})
        };
        items
            .iter()
            .map(|item| {
                let mut whole = layers.context(&t, task_vars, Some(("item", item)));
                // What only a loop's items see.
                whole.vars["ansible_loop_var"] = json!("item");
                (shown(whole), shown(contexts.context(&t, 0, item)))
            })
            .collect()
    }

    #[test]
    fn item_contexts_equal_contexts_built_whole() {
        let mut chain = json!({"c0": "{{ item.n }}"});
        for i in 1..=MAX_CHAIN {
            chain[format!("c{i}")] = json!(format!("{{{{ c{} }}}}", i - 1));
        }
        let layers = VarLayers {
            inventory: map(json!({"home": "/opt", "item": "{{ home }}/shadowed"})),
            facts: map(json!({"os": "{{ not rendered }}"})),
            play: map(json!({
                "bin": "{{ home }}/bin",
                "dest": "{{ bin }}/{{ item.name }}",
                "cycle": "{{ item.name ~ cycle }}",
                "bad": "{{ missing }}",
                "uses_bad": "{{ bad ~ item.name }}",
                "deep": chain,
            })),
            registered: map(json!({"out": {"stdout": "{{ item }}"}})),
            extra: Map::new(),
            play_files: None,
            roles: Arc::default(),
        };
        let mut play = layers.play.clone();
        play.extend(map(layers.play["deep"].clone()));
        play.remove("deep");
        let layers = VarLayers { play, ..layers };
        let items = [json!({"name": "a", "n": 1}), json!({"name": "b", "n": 2})];
        for (whole, split) in both_ways(&layers, json!({"mode": "{{ item.n }}"}), &items) {
            assert_eq!(whole, split);
        }
        let r = &both_ways(&layers, json!({}), &items)[1].1;
        assert_eq!(r["vars"]["dest"], "/opt/bin/b");
        assert!(r["broken"][format!("c{MAX_CHAIN}")].is_string(), "{r}");
        let hidden = VarLayers {
            extra: map(json!({"item": "{{ home }}"})),
            ..layers
        };
        for (whole, split) in both_ways(&hidden, json!({}), &items) {
            assert_eq!(whole, split);
        }
    }
}
