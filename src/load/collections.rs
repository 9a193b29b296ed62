//! Ansible collections: where they are installed (`ansible_collections/NS/COLL/`
//! under each search-path entry), roles and modules named by their fully
//! qualified name (`ns.coll.name`) or through a `collections:` list, and the
//! `ansible-galaxy` command that installs a missing one.

use std::path::{Path, PathBuf};

use super::yaml::{self, Node, Value};
use crate::base::diag::Diagnostic;
use crate::modules::{self, ModuleSpec};

/// Entries of a `collections:` list that name Ansible's own modules (which
/// nodeprov's native modules stand for) rather than an installed collection.
const BUILTIN: &[&str] = &["ansible.builtin", "ansible.legacy"];

/// `ns.coll.rest` split into the collection (`ns.coll`) and the rest, or
/// `None` for a short name.
pub(super) fn split_fqcn(name: &str) -> Option<(&str, &str)> {
    let mut dots = name.match_indices('.').map(|(i, _)| i);
    let (first, second) = (dots.next()?, dots.next()?);
    let (collection, rest) = (&name[..second], &name[second + 1..]);
    let parts = [&name[..first], &name[first + 1..second]];
    let identifier = |s: &str| {
        !s.is_empty()
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    (parts.iter().all(|p| identifier(p)) && !rest.is_empty()).then_some((collection, rest))
}

/// Whether a `collections:` entry is a well-formed collection name.
pub(super) fn is_collection_name(name: &str) -> bool {
    split_fqcn(&format!("{name}.x")).is_some_and(|(c, _)| c == name)
}

pub(super) fn builtin(collection: &str) -> bool {
    BUILTIN.contains(&collection)
}

/// The folders collections are installed in, in search order: the
/// playbook's `collections/` first, as in Ansible, then the configured path.
#[derive(Debug)]
pub(super) struct Installed {
    roots: Vec<PathBuf>,
}

impl Installed {
    pub(super) fn new(playbook_dir: &Path, configured: &[PathBuf]) -> Installed {
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in std::iter::once(&playbook_dir.join("collections")).chain(configured) {
            // Ansible takes an entry that already ends in the folder as well.
            let root = match dir.ends_with("ansible_collections") {
                true => dir.clone(),
                false => dir.join("ansible_collections"),
            };
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        Installed { roots }
    }

    /// The folder of collection `ns.coll`, where one is installed.
    pub(super) fn find(&self, collection: &str) -> Option<PathBuf> {
        let (ns, name) = collection.split_once('.')?;
        self.roots
            .iter()
            .map(|r| r.join(ns).join(name))
            .find(|p| p.is_dir())
    }

    /// The collection paths as Ansible is given them: the folders that
    /// hold `ansible_collections`.
    pub(super) fn paths(&self) -> Vec<PathBuf> {
        self.roots
            .iter()
            .filter_map(|r| r.parent().map(Path::to_path_buf))
            .collect()
    }

    pub(super) fn searched(&self) -> String {
        self.roots
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What a task's module key names.
pub(super) enum ModuleRef {
    Native(&'static ModuleSpec),
    /// A collection's module that nodeprov has no version of, by FQCN.
    Foreign(String),
    Unknown,
}

/// Resolves a task key as Ansible does: a FQCN as written (an
/// `ansible.legacy.` name as its short name); a short name through each
/// listed collection in order, then as Ansible's own. A collection module
/// that nodeprov implements resolves to the native module under any of its
/// names.
pub(super) fn module(key: &str, list: &[String], installed: &Installed) -> ModuleRef {
    let native = |name: &str| modules::find(name).map(ModuleRef::Native);
    if let Some((collection, name)) = split_fqcn(key) {
        let native = native(key).or_else(|| match collection {
            "ansible.legacy" => native(name),
            _ => None,
        });
        return match native {
            Some(found) => found,
            None if builtin(collection) => ModuleRef::Unknown,
            None => ModuleRef::Foreign(key.to_string()),
        };
    }
    for collection in list {
        if builtin(collection) {
            if let Some(found) = native(key) {
                return found;
            }
            continue;
        }
        let fqcn = format!("{collection}.{key}");
        if let Some(found) = native(&fqcn) {
            return found;
        }
        let shipped = installed.find(collection).is_some_and(|dir| {
            let plugins = dir.join("plugins");
            ["modules", "action"]
                .iter()
                .any(|d| plugins.join(d).join(format!("{key}.py")).is_file())
        });
        if shipped {
            return ModuleRef::Foreign(fqcn);
        }
    }
    native(key).unwrap_or(ModuleRef::Unknown)
}

/// The refusal of a collection module nodeprov has no version of.
pub(super) fn foreign_module(
    at: &Node,
    fqcn: &str,
    why: &crate::load::ansible_core::AnsibleCoreError,
) -> Diagnostic {
    let collection = split_fqcn(fqcn).map_or(fqcn, |(c, _)| c);
    let prefix = format!("{collection}.");
    let own: Vec<&str> = modules::all_names()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    let hint = match own.is_empty() {
        true => format!("nodeprov implements no module of {collection}"),
        false => format!(
            "the modules of {collection} nodeprov has: {}",
            own.join(", ")
        ),
    };
    at.error(format!(
        "module '{fqcn}' is not supported: nodeprov has no native version of it, \
         and Ansible's own module cannot run instead: {why}"
    ))
    .with_hint(hint)
}

/// An unknown short module name's refusal, saying which listed collections
/// (that might have shipped it) are not installed.
pub(super) fn with_missing_collections(
    d: Diagnostic,
    list: &[String],
    installed: &Installed,
) -> Diagnostic {
    let missing: Vec<&str> = list
        .iter()
        .filter(|c| !builtin(c) && installed.find(c).is_none())
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return d;
    }
    let note = format!(
        "the listed collections {} are not installed (looked in: {})",
        missing.join(", "),
        installed.searched()
    );
    let hint = match &d.hint {
        Some(h) => format!("{h}; {note}"),
        None => note,
    };
    d.with_hint(hint)
}

/// What the missing thing is, for the `ansible-galaxy` command that installs it.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Missing {
    Collection,
    Role,
}

impl Missing {
    fn section(self) -> &'static str {
        match self {
            Missing::Collection => "collections",
            Missing::Role => "roles",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Missing::Collection => "ansible-galaxy collection install",
            Missing::Role => "ansible-galaxy role install",
        }
    }
}

/// `requirements.yml`, `collections/requirements.yml` and
/// `roles/requirements.yml`, as Galaxy lays them out, beside the playbook
/// and in the folder above it (a project keeping its playbooks in a
/// subfolder).
pub(super) fn requirements_files(playbook_dir: &Path) -> Vec<PathBuf> {
    let dirs = std::iter::once(playbook_dir).chain(playbook_dir.parent());
    dirs.flat_map(|d| {
        [
            "requirements.yml",
            "collections/requirements.yml",
            "roles/requirements.yml",
        ]
        .map(|f| d.join(f))
    })
    .filter(|p| p.is_file())
    .collect()
}

/// The command that installs `name`: from the requirements file that lists
/// it, else by name (saying which requirements files do not list it).
pub(super) fn install_hint(files: &[PathBuf], what: Missing, name: &str) -> String {
    if let Some(file) = files.iter().find(|f| lists(f, what, name)) {
        return format!(
            "{} lists it: install it with `{} -r {}`",
            file.display(),
            what.command(),
            file.display()
        );
    }
    let by_name = format!("install it with `{} {name}`", what.command());
    match files.is_empty() {
        true => by_name,
        false => {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            format!("{by_name} (not listed in {})", names.join(", "))
        }
    }
}

/// Whether a requirements file lists `name` under `roles:`/`collections:`
/// (a bare list is the older roles-only layout). An unreadable file lists
/// nothing: it only feeds a hint.
fn lists(file: &Path, what: Missing, name: &str) -> bool {
    let Ok(root) = yaml::load_file(file) else {
        return false;
    };
    let entries = match (&root.value, what) {
        (Value::Seq(items), Missing::Role) => items.as_slice(),
        (Value::Map(_), _) => root
            .get(what.section())
            .and_then(Node::as_seq)
            .unwrap_or_default(),
        _ => &[],
    };
    entries
        .iter()
        .any(|e| entry_names(e).iter().any(|n| n == name))
}

/// The names a requirements entry installs under: a string (`ns.coll`,
/// `user.role,version`), or its `name:`, else `src:` and the repository
/// name a git `src:` gives.
fn entry_names(entry: &Node) -> Vec<String> {
    let text = |n: Option<&Node>| n.and_then(Node::scalar_text);
    let Some(src) =
        text(Some(entry)).or_else(|| text(entry.get("name")).or(text(entry.get("src"))))
    else {
        return Vec::new();
    };
    let first = src.split(',').next().unwrap_or_default().trim().to_string();
    let repo = first.rsplit('/').next().unwrap_or_default();
    let repo = repo.strip_suffix(".git").unwrap_or(repo).to_string();
    vec![first, repo]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::roles::tests::tree;

    #[test]
    fn fqcns_split_into_collection_and_name_and_short_names_do_not() {
        assert_eq!(split_fqcn("acme.gpu.tune"), Some(("acme.gpu", "tune")));
        assert_eq!(
            split_fqcn("community.general.system.ufw"),
            Some(("community.general", "system.ufw"))
        );
        for short in ["tune", "geerlingguy.docker", "a..b", "1a.b.c", "a-b.c.d"] {
            assert_eq!(split_fqcn(short), None, "{short}");
        }
        assert!(is_collection_name("acme.gpu"));
        assert!(!is_collection_name("acme") && !is_collection_name("acme.gpu.tune"));
    }

    fn resolved(r: ModuleRef) -> String {
        match r {
            ModuleRef::Native(spec) => format!("native {}", spec.name),
            ModuleRef::Foreign(fqcn) => format!("foreign {fqcn}"),
            ModuleRef::Unknown => "unknown".into(),
        }
    }

    #[test]
    fn module_names_resolve_through_the_list_to_native_or_foreign_modules() {
        let dir = tree(&["clocks", "sysctl"].map(|m| {
            let path = format!("collections/ansible_collections/acme/gpu/plugins/modules/{m}.py");
            (path, "")
        }));
        let installed = Installed::new(dir.path(), &[]);
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = |key: &str, l: &[&str]| resolved(module(key, &list(l), &installed));
        assert_eq!(r("ansible.builtin.copy", &[]), "native copy");
        assert_eq!(r("ansible.legacy.copy", &[]), "native copy");
        assert_eq!(r("community.general.ufw", &[]), "native ufw");
        assert_eq!(r("ansible.builtin.nosuch", &[]), "unknown");
        assert_eq!(
            r("community.general.nmcli", &[]),
            "foreign community.general.nmcli"
        );
        assert_eq!(r("clocks", &["acme.gpu"]), "foreign acme.gpu.clocks");
        // The listed collection's own `sysctl` wins over nodeprov's, as in Ansible...
        assert_eq!(r("sysctl", &["acme.gpu"]), "foreign acme.gpu.sysctl");
        // ...unless Ansible's own modules come first in the list.
        assert_eq!(
            r("sysctl", &["ansible.legacy", "acme.gpu"]),
            "native sysctl"
        );
        // A collection nodeprov implements resolves natively, installed or not.
        assert_eq!(r("ufw", &["community.general", "acme.gpu"]), "native ufw");
        assert_eq!(r("clocks", &[]), "unknown");
        assert_eq!(r("copy", &["acme.gpu"]), "native copy");
    }

    #[test]
    fn a_missing_collection_names_the_galaxy_command_that_installs_it() {
        let dir = tempfile::tempdir().unwrap();
        let play = dir.path().join("playbooks");
        std::fs::create_dir_all(play.join("roles")).unwrap();
        std::fs::write(
            dir.path().join("requirements.yml"),
            "collections:\n  - name: acme.gpu\n    version: '>=1.0'\n  - devsec.hardening\nroles:\n  - src: https://github.com/x/ansible-role-ntp.git\n",
        )
        .unwrap();
        std::fs::write(
            play.join("roles/requirements.yml"),
            "- src: geerlingguy.docker,7.0\n",
        )
        .unwrap();
        let files = requirements_files(&play);
        let top = dir.path().join("requirements.yml").display().to_string();
        let roles = play.join("roles/requirements.yml").display().to_string();
        assert_eq!(
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>(),
            [roles.clone(), top.clone()]
        );
        let hint = |what, name| install_hint(&files, what, name);
        assert_eq!(
            hint(Missing::Collection, "acme.gpu"),
            format!("{top} lists it: install it with `ansible-galaxy collection install -r {top}`")
        );
        assert!(hint(Missing::Collection, "devsec.hardening").contains("-r "));
        assert_eq!(
            hint(Missing::Role, "geerlingguy.docker"),
            format!("{roles} lists it: install it with `ansible-galaxy role install -r {roles}`")
        );
        assert!(hint(Missing::Role, "ansible-role-ntp").ends_with(&format!("-r {top}`")));
        assert_eq!(
            hint(Missing::Collection, "other.thing"),
            format!(
                "install it with `ansible-galaxy collection install other.thing` (not listed in {roles}, {top})"
            )
        );
        assert_eq!(
            install_hint(&[], Missing::Role, "x"),
            "install it with `ansible-galaxy role install x`"
        );
    }
}
