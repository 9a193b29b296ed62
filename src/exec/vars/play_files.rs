//! A play's `vars` and `vars_files`, as Ansible reads them: a file name
//! with templates is rendered per host, so `vars/{{ ansible_facts.os_family
//! }}.yml` names the host's file once its facts are gathered; an entry that
//! is a list names alternatives, the first that exists being read.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::base::diag::Diagnostic;
use crate::load::playbook::Play;
use crate::load::yaml::{self, Node, Value as Yaml};
use crate::template::Templates;

/// The play's variable layer: `vars`, then each `vars_files` entry in order.
#[derive(Debug, Default)]
pub struct PlayVars {
    entries: Vec<Entry>,
    base: PathBuf,
}

#[derive(Debug)]
enum Entry {
    Read(Map<String, Value>),
    /// Named with variables only a host has (its facts, its inventory).
    PerHost(Node),
}

/// What a host knows when its files are named.
#[derive(Clone, Copy, PartialEq)]
pub enum Known {
    /// Before facts: a name that cannot be rendered yet waits.
    BeforeFacts,
    /// All the host will know (its facts are gathered, or the play gathers
    /// none): a name that cannot be rendered is an error, not a file
    /// silently left unread.
    All,
}

impl PlayVars {
    /// Reads every entry that can be named before any host is: without
    /// templates, or with ones the play's vars and the extra vars fill.
    pub fn load(
        play: &Play,
        base: &Path,
        templates: &Templates,
        extra: &Map<String, Value>,
    ) -> Result<PlayVars, Diagnostic> {
        let mut known = play.vars.clone();
        let mut entries = vec![Entry::Read(play.vars.clone())];
        for node in &play.vars_files {
            let mut ctx = known.clone();
            ctx.extend(extra.clone());
            match read_entry(
                node,
                base,
                templates,
                &Value::Object(ctx),
                Known::BeforeFacts,
            )? {
                Some(vars) => {
                    known.extend(vars.clone());
                    entries.push(Entry::Read(vars));
                }
                None => entries.push(Entry::PerHost(node.clone())),
            }
        }
        Ok(PlayVars {
            entries,
            base: base.to_path_buf(),
        })
    }

    /// Some entry waits for each host's variables.
    pub fn per_host(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, Entry::PerHost(_)))
    }

    /// The layer with what was read before any host.
    pub fn known(&self) -> Map<String, Value> {
        let mut vars = Map::new();
        for entry in &self.entries {
            if let Entry::Read(m) = entry {
                vars.extend(m.clone());
            }
        }
        vars
    }

    /// The layer for one host whose variables so far are `ctx`.
    pub fn for_host(
        &self,
        templates: &Templates,
        ctx: &Value,
        known: Known,
    ) -> Result<Map<String, Value>, Diagnostic> {
        let mut vars = Map::new();
        for entry in &self.entries {
            match entry {
                Entry::Read(m) => vars.extend(m.clone()),
                Entry::PerHost(node) => {
                    let found = read_entry(node, &self.base, templates, ctx, known)?;
                    vars.extend(found.unwrap_or_default());
                }
            }
        }
        Ok(vars)
    }
}

/// Where Ansible looks for a `vars_files` name: the playbook's `vars/`
/// folder first (unless the name starts with it), then the playbook's
/// folder, where a name found nowhere is read so that the error says why.
pub fn locate(base: &Path, name: &str) -> PathBuf {
    let in_vars = base.join("vars").join(name);
    match !name.starts_with("vars/") && in_vars.exists() {
        true => in_vars,
        false => base.join(name),
    }
}

/// An entry named without templates, read as a run would read it.
pub fn read_literal(node: &Node, base: &Path) -> Result<Map<String, Value>, Diagnostic> {
    let none = Value::Object(Map::new());
    let read = read_entry(node, base, &Templates::new(), &none, Known::All)?;
    Ok(read.unwrap_or_default())
}

/// The names an entry gives: one, or a list of alternatives.
pub fn entry_names(node: &Node) -> &[Node] {
    match &node.value {
        Yaml::Seq(items) => items.as_slice(),
        _ => std::slice::from_ref(node),
    }
}

/// One entry's variables; `None` when a name cannot be rendered yet (or,
/// without facts, at all).
fn read_entry(
    node: &Node,
    base: &Path,
    templates: &Templates,
    ctx: &Value,
    known: Known,
) -> Result<Option<Map<String, Value>>, Diagnostic> {
    let names = entry_names(node);
    let mut tried = Vec::new();
    for n in names {
        let text = n.as_str().unwrap_or_default();
        let name = match templates.render_str(text, ctx) {
            Ok(name) => name,
            Err(e) if e.is_undefined && known != Known::All => return Ok(None),
            Err(e) => return Err(n.error(format!("vars_files: {e}"))),
        };
        let path = locate(base, &name);
        if path.exists() {
            return load_vars_file(n, &path).map(Some);
        }
        tried.push(name);
    }
    // Ansible skips an entry none of whose files exists, without a word;
    // `validate` lists one named without templates (`unfound`).
    Ok(Some(Map::new()))
}

/// An entry named without templates none of whose files exists, which a
/// run skips as Ansible does: `validate` lists it.
pub fn unfound(node: &Node, base: &Path) -> Option<Diagnostic> {
    let names: Vec<&str> = entry_names(node)
        .iter()
        .map(|n| n.as_str().unwrap_or_default())
        .collect();
    if names.iter().any(|n| locate(base, n).exists()) {
        return None;
    }
    let folder = match base.as_os_str().is_empty() {
        true => Path::new("."),
        false => base,
    };
    Some(node.error(format!(
        "vars_files: {} is in neither {} nor its vars/: Ansible skips the entry without a word, and so does a run",
        names.join(" or "),
        folder.display()
    )))
}

/// A variables file: a missing file is reported at the entry that names
/// it, a bad one inside the file.
pub(crate) fn load_vars_file(entry: &Node, path: &Path) -> Result<Map<String, Value>, Diagnostic> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(entry.error(format!("vars_files: cannot read {}: {e}", path.display())));
    }
    let loaded = yaml::load_file(path)?;
    match loaded.to_json() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(loaded.error(format!(
            "{} must hold a mapping of variables, found {}",
            path.display(),
            loaded.kind()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A playbook whose `vars_files:` is `files` (YAML), with `vars/Debian.yml`,
    /// `common.yml` and `default.yml` beside it.
    fn play(files: &str) -> (tempfile::TempDir, crate::load::playbook::Playbook) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("vars")).unwrap();
        std::fs::write(
            dir.path().join("vars/Debian.yml"),
            "pkg: apt\nwho: debian\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("common.yml"), "who: common\n").unwrap();
        std::fs::write(dir.path().join("Debian.yml"), "pkg: beside\n").unwrap();
        std::fs::write(dir.path().join("default.yml"), "pkg: default\n").unwrap();
        let path = dir.path().join("p.yml");
        let text = format!("- hosts: all\n  vars: {{who: play}}\n  vars_files: {files}\n");
        std::fs::write(&path, text).unwrap();
        let pb = crate::load::playbook::load(&path).unwrap();
        (dir, pb)
    }

    fn load(files: &str, extra: Value) -> (tempfile::TempDir, Result<PlayVars, Diagnostic>) {
        let (dir, pb) = play(files);
        let extra = extra.as_object().cloned().unwrap_or_default();
        let vars = PlayVars::load(&pb.plays[0], dir.path(), &Templates::new(), &extra);
        (dir, vars)
    }

    fn facts(os: &str) -> Value {
        json!({"ansible_facts": {"os_family": os}})
    }

    #[test]
    fn a_name_made_of_facts_waits_for_them_and_keeps_its_place() {
        let (_d, vars) = load(
            "['vars/{{ ansible_facts.os_family }}.yml', common.yml]",
            json!({}),
        );
        let vars = vars.unwrap();
        assert!(vars.per_host());
        assert_eq!(vars.known()["who"], "common");
        let t = Templates::new();
        let host = vars.for_host(&t, &facts("Debian"), Known::All).unwrap();
        assert_eq!(host["pkg"], "apt");
        assert_eq!(host["who"], "common", "a later file still wins");
        // A file that is not there is skipped, as Ansible skips it.
        let host = vars.for_host(&t, &facts("Suse"), Known::All).unwrap();
        assert!(!host.contains_key("pkg") && host["who"] == "common");
        let err = vars.for_host(&t, &json!({}), Known::All).unwrap_err();
        assert_eq!(
            err.message,
            "vars_files: undefined variable 'ansible_facts'"
        );
    }

    #[test]
    fn a_list_entry_reads_the_first_file_that_exists() {
        let (_d, vars) = load("[['{{ os }}.yml', default.yml]]", json!({}));
        let t = Templates::new();
        let vars = vars.unwrap();
        let read =
            |os: &str| vars.for_host(&t, &json!({"os": os}), Known::All).unwrap()["pkg"].clone();
        assert_eq!(
            read("Debian"),
            "apt",
            "found in the playbook's vars/ folder"
        );
        assert_eq!(read("Gentoo"), "default");
        let (d, vars) = load("[[nothere.yml, nor.yml]]", json!({}));
        assert!(!vars.unwrap().known().contains_key("pkg"));
        let (_, pb) = play("[[nothere.yml, nor.yml], common.yml]");
        let listed = unfound(&pb.plays[0].vars_files[0], d.path()).unwrap();
        assert!(
            listed
                .message
                .starts_with("vars_files: nothere.yml or nor.yml is in neither"),
            "{}",
            listed.message
        );
        assert!(unfound(&pb.plays[0].vars_files[1], d.path()).is_none());
    }

    #[test]
    fn extra_vars_name_a_file_before_any_host() {
        let (_d, vars) = load("['vars/{{ os }}.yml']", json!({"os": "Debian"}));
        let vars = vars.unwrap();
        assert!(!vars.per_host());
        assert_eq!(vars.known()["pkg"], "apt");
        let (_d, vars) = load("['vars/{{ os }}.yml']", json!({"os": "Arch"}));
        assert!(!vars.unwrap().known().contains_key("pkg"));
    }
}
