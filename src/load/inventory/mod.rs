//! Ansible inventories: INI and YAML sources, inventory scripts and plugin files, `group_vars/` and `host_vars/`
//! folders, host patterns, and the merged variables of each host.
//!
//! Hosts keep the order in which the inventory first names them ("inventory
//! order"); every list this module returns uses it unless it says otherwise.

mod ini;
mod load;
mod pattern;
mod plugins;
mod pylit;
mod range;
mod script;
pub mod shard;
mod yaml;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

pub use load::SourceOptions;
pub use pattern::PatternError;
pub use plugins::PluginRunner;

type Vars = Map<String, Value>;

/// Hosts one inventory may hold: ranges are capped per name, but many
/// capped names together could still take gigabytes.
pub const MAX_INVENTORY_HOSTS: usize = 200_000;

/// `all` and `ungrouped` exist in every inventory, created first, at these indices.
const ALL: usize = 0;
const UNGROUPED: usize = 1;

#[derive(Clone, Debug)]
pub struct Inventory {
    hosts: Vec<Host>,
    host_index: HashMap<String, usize>,
    groups: Vec<Group>,
    group_index: HashMap<String, usize>,
    /// The `groups` magic variable, the same for every host; set by `finish`.
    groups_var: Value,
    /// The folders whose `group_vars/` and `host_vars/` apply, each with
    /// its layer.
    vars_dirs: Vec<(std::path::PathBuf, Layer)>,
}

/// Where a `group_vars/` or `host_vars/` folder sits: beside an inventory
/// source, or beside the playbook, whose folders win over the inventory's
/// at each step of Ansible's precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layer {
    Inventory = 0,
    Playbook = 1,
}

/// A group's or host's variables from `group_vars/` or `host_vars/`
/// files, by [`Layer`].
type FileVars = [Vars; 2];

#[derive(Clone, Debug, Default)]
struct Host {
    name: String,
    /// Groups that list the host directly.
    groups: Vec<usize>,
    /// Variables set in the inventory source itself.
    vars: Vars,
    /// Variables from `host_vars/` files.
    file_vars: FileVars,
    /// The inventory file that first lists the host, and its folder.
    source: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

#[derive(Clone, Debug, Default)]
struct Group {
    name: String,
    hosts: Vec<usize>,
    children: Vec<usize>,
    parents: Vec<usize>,
    /// Longest path from `all`; deeper groups' variables win.
    depth: usize,
    vars: Vars,
    file_vars: FileVars,
}

impl Group {
    /// `ansible_group_priority` breaks ties between groups of equal depth.
    fn priority(&self) -> i64 {
        self.vars
            .get("ansible_group_priority")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    }
}

impl Inventory {
    /// The implicit inventory used when none is given: just `localhost` with `ansible_connection: local`.
    pub fn localhost() -> Inventory {
        let mut inv = Inventory::empty();
        let vars = Vars::from_iter([("ansible_connection".into(), "local".into())]);
        inv.add_host_to(UNGROUPED, "localhost", vars);
        inv.finish();
        inv
    }

    /// Ansible's comma form, e.g. "host1,host2," (-i "a,b,"). As in Ansible's
    /// `host_list` plugin, `name:port` sets `ansible_port` and ranges are not expanded.
    #[cfg(test)]
    pub fn from_host_list(list: &str) -> Inventory {
        let mut inv = Inventory::empty();
        inv.add_host_list(list, false).expect("a short host list");
        inv.finish();
        inv
    }

    pub fn has_host(&self, name: &str) -> bool {
        self.host_index.contains_key(name)
    }

    pub fn hosts(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.name.clone()).collect()
    }

    /// Every group with its hosts, direct and via children, including `all` and `ungrouped`.
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        self.groups
            .iter()
            .enumerate()
            .map(|(g, group)| (group.name.clone(), self.names(self.members(g))))
            .collect()
    }

    /// Merged variables for a host, following Ansible's `VariableManager.get_vars`
    /// and its default `precedence` (`all_inventory`, `groups_inventory`,
    /// `all_plugins_inventory`, `all_plugins_play`, `groups_plugins_inventory`,
    /// `groups_plugins_play`): inventory-source vars of `all` < those of the
    /// host's other groups < `group_vars/all` beside the inventory < beside the
    /// playbook < the other groups' `group_vars/` beside the inventory < beside
    /// the playbook < inventory-source host vars < `host_vars/` files beside
    /// the inventory < beside the playbook. Groups are applied by depth (children
    /// after parents), then `ansible_group_priority`, then name, later winning.
    /// A host missing from the inventory gets what Ansible gives its implicit
    /// `localhost`: the `all` variables only. Adds the magic variables
    /// `inventory_hostname`, `inventory_hostname_short`, `group_names`, `groups`,
    /// and `inventory_file` and `inventory_dir` for a host read from a file.
    pub fn host_vars(&self, host: &str) -> Vars {
        self.vars_of(host, true)
    }

    /// [`Inventory::host_vars`] for a host's run, without `groups`: that
    /// one lists every host of the inventory, so a copy per host (and per
    /// task) would cost each host the whole fleet; the run's templates
    /// hold it once for all ([`Inventory::groups_var`]).
    pub fn run_vars(&self, host: &str) -> Vars {
        self.vars_of(host, false)
    }

    /// The `groups` magic variable: every group with its hosts.
    pub fn groups_var(&self) -> &Value {
        &self.groups_var
    }

    fn vars_of(&self, host: &str, with_groups: bool) -> Vars {
        let mut vars = self.merged_vars(host);
        let groups = self.host_index.get(host).map(|&h| self.groups_of(h));
        let mut names: Vec<&str> = groups
            .iter()
            .flatten()
            .map(|&g| self.groups[g].name.as_str())
            .collect();
        names.sort_unstable();
        let short = host.split('.').next().unwrap_or(host);
        vars.insert("inventory_hostname".into(), host.into());
        vars.insert("inventory_hostname_short".into(), short.into());
        vars.insert("group_names".into(), names.into());
        if with_groups {
            vars.insert("groups".into(), self.groups_var.clone());
        }
        let source = self
            .host_index
            .get(host)
            .and_then(|&h| self.hosts[h].source.as_ref());
        if let Some((file, dir)) = source {
            vars.insert("inventory_file".into(), file.display().to_string().into());
            vars.insert("inventory_dir".into(), dir.display().to_string().into());
        }
        vars
    }

    /// The host's variables without the magic ones.
    fn merged_vars(&self, host: &str) -> Vars {
        let mut vars = Vars::new();
        let all = &self.groups[ALL];
        let index = self.host_index.get(host).copied();
        let groups = index.map(|h| self.groups_of(h)).unwrap_or_default();
        extend(&mut vars, &all.vars);
        for &g in &groups {
            extend(&mut vars, &self.groups[g].vars);
        }
        for layer in &all.file_vars {
            extend(&mut vars, layer);
        }
        for layer in [Layer::Inventory, Layer::Playbook] {
            for &g in &groups {
                extend(&mut vars, &self.groups[g].file_vars[layer as usize]);
            }
        }
        if let Some(h) = index {
            extend(&mut vars, &self.hosts[h].vars);
            for layer in &self.hosts[h].file_vars {
                extend(&mut vars, layer);
            }
        }
        if host == "localhost" {
            vars.entry("ansible_connection").or_insert("local".into());
        }
        vars
    }

    /// `ansible-inventory --list` shape. Keys are sorted as that command's
    /// `sort_keys=True` output is; groups with neither hosts nor children get
    /// no entry of their own but stay listed as children.
    pub fn list_json(&self) -> Value {
        let mut hostvars = BTreeMap::new();
        for host in &self.hosts {
            let vars = self.merged_vars(&host.name);
            if !vars.is_empty() {
                hostvars.insert(host.name.clone(), Value::Object(vars));
            }
        }
        let mut groups = BTreeMap::new();
        for (g, group) in self.groups.iter().enumerate() {
            let mut entry = Vars::new();
            if g != ALL && !group.hosts.is_empty() {
                entry.insert(
                    "hosts".into(),
                    self.names(group.hosts.iter().copied()).into(),
                );
            }
            if !group.children.is_empty() {
                entry.insert("children".into(), self.group_names(&group.children).into());
            }
            if !entry.is_empty() {
                groups.insert(group.name.clone(), Value::Object(entry));
            }
        }
        let mut out = Vars::new();
        out.insert("_meta".into(), serde_json::json!({ "hostvars": hostvars }));
        out.extend(groups);
        Value::Object(out)
    }

    /// `ansible-inventory --graph` text, children and hosts sorted by name.
    pub fn graph(&self) -> String {
        let mut out = String::new();
        self.graph_group(ALL, 0, &mut vec![false; self.groups.len()], &mut out);
        out
    }

    /// A group reached again through another parent is named, not
    /// expanded again: stacked diamonds of groups would otherwise print
    /// exponentially many lines.
    fn graph_group(&self, g: usize, depth: usize, shown: &mut [bool], out: &mut String) {
        let group = &self.groups[g];
        if std::mem::replace(&mut shown[g], true) {
            out.push_str(&graph_line(
                &format!("@{}: (shown above)", group.name),
                depth,
            ));
            return;
        }
        out.push_str(&graph_line(&format!("@{}:", group.name), depth));
        let mut children = group.children.clone();
        children.sort_by(|a, b| self.groups[*a].name.cmp(&self.groups[*b].name));
        for child in children {
            self.graph_group(child, depth + 1, shown, out);
        }
        if g != ALL {
            let mut hosts = self.names(group.hosts.iter().copied());
            hosts.sort();
            for host in hosts {
                out.push_str(&graph_line(&host, depth + 1));
            }
        }
    }

    fn empty() -> Inventory {
        let mut inv = Inventory {
            hosts: Vec::new(),
            host_index: HashMap::new(),
            groups: Vec::new(),
            group_index: HashMap::new(),
            groups_var: Value::Null,
            vars_dirs: Vec::new(),
        };
        inv.group("all");
        inv.group("ungrouped");
        // Linked now, as Ansible does, so that it is the first child of `all`.
        inv.groups[ALL].children.push(UNGROUPED);
        inv.groups[UNGROUPED].parents.push(ALL);
        inv
    }

    /// The group's index, creating it on first mention.
    fn group(&mut self, name: &str) -> usize {
        if let Some(&g) = self.group_index.get(name) {
            return g;
        }
        self.groups.push(Group {
            name: name.to_string(),
            ..Group::default()
        });
        self.group_index
            .insert(name.to_string(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Refuses `names` when the new ones among them would take the
    /// inventory past [`MAX_INVENTORY_HOSTS`].
    fn room_for(&self, names: &[String]) -> Result<(), String> {
        let new = names
            .iter()
            .filter(|n| !self.host_index.contains_key(*n))
            .count();
        if self.hosts.len() + new > MAX_INVENTORY_HOSTS {
            return Err(format!(
                "the inventory would hold more than {MAX_INVENTORY_HOSTS} hosts"
            ));
        }
        Ok(())
    }

    /// Adds a host (once) to a group; a host named again merges its variables.
    fn add_host_to(&mut self, group: usize, name: &str, vars: Vars) {
        let h = match self.host_index.get(name) {
            Some(&h) => h,
            None => {
                self.hosts.push(Host {
                    name: name.to_string(),
                    ..Host::default()
                });
                self.host_index
                    .insert(name.to_string(), self.hosts.len() - 1);
                self.hosts.len() - 1
            }
        };
        if !self.hosts[h].groups.contains(&group) {
            self.hosts[h].groups.push(group);
            self.groups[group].hosts.push(h);
        }
        extend(&mut self.hosts[h].vars, &vars);
    }

    /// `group_by`'s effect, as Ansible's inventory takes it: `host` joins
    /// `group`, which is made (with its `group_vars/`) when new and put
    /// under each of `parents` (made too when new). True when it changed
    /// the inventory, as Ansible judges it: a parent made, a group put
    /// under a parent, or the host new in the group (a group made without
    /// more is not a change). [`Inventory::settle`] once after the last
    /// change.
    pub fn join_group(
        &mut self,
        host: &str,
        group: &str,
        parents: &[String],
    ) -> Result<bool, String> {
        let g = self.group_with_vars(group)?;
        let mut changed = false;
        for parent in parents {
            changed |= !self.group_index.contains_key(parent.as_str());
            let p = self.group_with_vars(parent)?;
            if p != g {
                changed |= !self.groups[p].children.contains(&g);
                self.add_child(p, g)?;
                // Its depth orders its variables against its parents' before
                // the next settle; exact for a group with no children yet.
                let depth = self.groups[p].depth + 1;
                self.groups[g].depth = self.groups[g].depth.max(depth);
            }
        }
        changed |= !self.is_member(host, g);
        self.add_host_to(g, host, Vars::new());
        Ok(changed)
    }

    /// `add_host`'s effect: the host (made with its `host_vars/` when new)
    /// in each of `groups` (made when new), with `vars` over its own. True
    /// when it changed the inventory, as Ansible judges it: the host, one
    /// of the groups or a membership new, or its variables other than
    /// they were. [`Inventory::settle`] once after the last change.
    pub fn add_run_host(
        &mut self,
        name: &str,
        groups: &[String],
        vars: Vars,
    ) -> Result<bool, String> {
        let before = self
            .host_index
            .get(name)
            .map(|&h| self.hosts[h].vars.clone());
        self.room_for(&[name.to_string()])?;
        let mut changed = before.is_none();
        let mut targets = Vec::new();
        for group in groups {
            changed |= !self.group_index.contains_key(group.as_str());
            targets.push(self.group_with_vars(group)?);
        }
        // A known host named without groups keeps its own.
        if targets.is_empty() && before.is_none() {
            targets.push(ALL);
        }
        for &g in &targets {
            changed |= !self.is_member(name, g);
            self.add_host_to(g, name, Vars::new());
        }
        let h = self.host_index[name];
        extend(&mut self.hosts[h].vars, &vars);
        match &before {
            Some(before) => changed |= *before != self.hosts[h].vars,
            None => self.hosts[h].file_vars = self.files_vars("host_vars", name)?,
        }
        Ok(changed)
    }

    fn is_member(&self, host: &str, group: usize) -> bool {
        self.host_index
            .get(host)
            .is_some_and(|&h| self.hosts[h].groups.contains(&group))
    }

    /// Derives what depends on membership (`ungrouped`, depths, `groups`)
    /// after [`Inventory::join_group`] and [`Inventory::add_run_host`]:
    /// once for all of a play's changes, as it walks every host.
    pub fn settle(&mut self) {
        self.finish();
    }

    /// The variables of `name`'s file in `folder` (`group_vars`,
    /// `host_vars`) of every folder that has them, by layer, later folders
    /// winning.
    fn files_vars(&self, folder: &str, name: &str) -> Result<FileVars, String> {
        let mut vars = FileVars::default();
        for (dir, layer) in &self.vars_dirs {
            let found = load::read_vars(&dir.join(folder), name).map_err(|d| d.to_string())?;
            extend(&mut vars[*layer as usize], &found);
        }
        Ok(vars)
    }

    /// The group of that name, made with its variables files when new.
    fn group_with_vars(&mut self, name: &str) -> Result<usize, String> {
        if let Some(&g) = self.group_index.get(name) {
            return Ok(g);
        }
        let vars = self.files_vars("group_vars", name)?;
        let g = self.group(name);
        self.groups[g].file_vars = vars;
        Ok(g)
    }

    /// Makes `child` a child of `parent`; the message says why it cannot be.
    fn add_child(&mut self, parent: usize, child: usize) -> Result<(), String> {
        if self.is_ancestor_or_self(child, parent) {
            return Err(format!(
                "adding group '{}' as a child of '{}' creates a cycle",
                self.groups[child].name, self.groups[parent].name
            ));
        }
        if !self.groups[parent].children.contains(&child) {
            self.groups[parent].children.push(child);
            self.groups[child].parents.push(parent);
        }
        Ok(())
    }

    fn is_ancestor_or_self(&self, ancestor: usize, g: usize) -> bool {
        self.reachable(g, |group| &group.parents)
            .contains(&ancestor)
    }

    /// Which groups `start` reaches through `edges` (itself included).
    /// Each group is visited once: groups that share parents form
    /// diamonds, and walking every path through stacked diamonds takes
    /// exponential time.
    fn reachable(&self, start: usize, edges: impl Fn(&Group) -> &Vec<usize>) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start];
        while let Some(g) = todo.pop() {
            if seen.insert(g) {
                todo.extend(edges(&self.groups[g]));
            }
        }
        seen
    }

    /// Completes the group tree as Ansible's `reconcile_inventory` does:
    /// top-level groups become children of `all`, and `ungrouped` holds
    /// exactly the hosts that no other group lists.
    fn finish(&mut self) {
        for g in 0..self.groups.len() {
            if g != ALL && self.groups[g].parents.is_empty() {
                self.groups[ALL].children.push(g);
                self.groups[g].parents.push(ALL);
            }
        }
        self.groups[UNGROUPED].hosts.clear();
        for (h, host) in self.hosts.iter_mut().enumerate() {
            host.groups.retain(|&g| g != UNGROUPED);
            if host.groups.iter().all(|&g| g == ALL) {
                host.groups.push(UNGROUPED);
                self.groups[UNGROUPED].hosts.push(h);
            }
        }
        self.set_depths();
        self.groups_var = serde_json::to_value(self.groups()).unwrap_or_default();
    }

    /// Each group's longest path from a root, in topological order (the
    /// groups form a DAG: cycles are refused), so each edge is seen once.
    fn set_depths(&mut self) {
        let mut waiting: Vec<usize> = self.groups.iter().map(|g| g.parents.len()).collect();
        let mut ready: Vec<usize> = (0..self.groups.len())
            .filter(|&g| waiting[g] == 0)
            .collect();
        for group in &mut self.groups {
            group.depth = 0;
        }
        while let Some(g) = ready.pop() {
            for i in 0..self.groups[g].children.len() {
                let child = self.groups[g].children[i];
                let depth = self.groups[g].depth + 1;
                self.groups[child].depth = self.groups[child].depth.max(depth);
                waiting[child] -= 1;
                if waiting[child] == 0 {
                    ready.push(child);
                }
            }
        }
    }

    /// Hosts of a group and of its descendants.
    fn members(&self, g: usize) -> BTreeSet<usize> {
        if g == ALL {
            return (0..self.hosts.len()).collect();
        }
        self.reachable(g, |group| &group.children)
            .into_iter()
            .flat_map(|d| self.groups[d].hosts.iter().copied())
            .collect()
    }

    /// The host's groups and their ancestors, except `all`, in the order
    /// their variables apply.
    fn groups_of(&self, h: usize) -> Vec<usize> {
        let mut found = BTreeSet::new();
        let mut todo = self.hosts[h].groups.clone();
        while let Some(g) = todo.pop() {
            if g != ALL && found.insert(g) {
                todo.extend(&self.groups[g].parents);
            }
        }
        let mut groups: Vec<usize> = found.into_iter().collect();
        groups.sort_by_key(|&g| {
            let group = &self.groups[g];
            (group.depth, group.priority(), group.name.clone())
        });
        groups
    }

    fn names(&self, hosts: impl IntoIterator<Item = usize>) -> Vec<String> {
        hosts
            .into_iter()
            .map(|h| self.hosts[h].name.clone())
            .collect()
    }

    fn group_names(&self, groups: &[usize]) -> Vec<String> {
        groups
            .iter()
            .map(|&g| self.groups[g].name.clone())
            .collect()
    }
}

/// Top-level replacement, as Ansible's default `hash_behaviour = replace`.
fn extend(into: &mut Vars, from: &Vars) {
    for (k, v) in from {
        into.insert(k.clone(), v.clone());
    }
}

/// Checks a variable whose bad value would otherwise only show when a host
/// is contacted, so that the inventory error can name its position.
fn check_var(key: &str, value: &Value) -> Result<(), String> {
    if !matches!(key, "ansible_port" | "ansible_ssh_port") {
        return Ok(());
    }
    let ok = match value {
        Value::Number(n) => n.as_u64().is_some_and(|p| (1..=65535).contains(&p)),
        Value::String(s) => {
            crate::template::is_templated(s) || s.parse::<u16>().is_ok_and(|p| p > 0)
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let shown = match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    };
    Err(format!(
        "{key} must be a port number from 1 to 65535, got {shown}"
    ))
}

fn port_vars(port: Option<u16>) -> Vars {
    port.map(|p| ("ansible_port".to_string(), Value::from(p)))
        .into_iter()
        .collect()
}

fn graph_line(text: &str, depth: usize) -> String {
    if depth == 0 {
        format!("{text}\n")
    } else {
        format!("{}--{text}\n", "  |".repeat(depth))
    }
}

#[cfg(test)]
mod tests;
