//! Reading inventory sources from disk, with their `group_vars/` and
//! `host_vars/` folders.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::plugins::{self, PluginRunner};
use super::{extend, ini, port_vars, range, script, yaml, Inventory, Layer, Vars, UNGROUPED};
use crate::base::diag::{Diagnostic, Source, Span};
use crate::base::input::{read_text, ReadError};
use crate::load::yaml::{load_file, load_str, Node, Value};

/// Files in an inventory folder that are not inventories: editor and
/// packaging leftovers, Ansible's `INVENTORY_IGNORE_EXTS` less `.ini`.
const IGNORED_SUFFIXES: [&str; 12] = [
    "~", ".orig", ".bak", ".swp", ".retry", ".cfg", ".pyc", ".pyo", ".rpm", ".md", ".txt", ".rst",
];

/// Extensions tried for a `group_vars/NAME` file, in Ansible's order.
const VARS_EXTENSIONS: [&str; 4] = ["", ".yml", ".yaml", ".json"];

/// How inventory sources are read beyond their own text.
#[derive(Clone, Debug, Default)]
pub struct SourceOptions {
    /// `advanced_host_list` is enabled: `-i 'gpu[01:04],'` expands ranges.
    pub expand_host_list_ranges: bool,
    pub plugins: PluginRunner,
}

impl Inventory {
    /// Loads one Ansible inventory file or folder; see [`Inventory::load_sources`].
    pub fn load(path: &Path) -> Result<Inventory, Diagnostic> {
        Inventory::load_sources(&[path.display().to_string()], &SourceOptions::default())
    }

    /// Loads every source into one inventory, in order, as repeated `-i`
    /// do in Ansible. A source is a comma-separated host list ("a,b,"), a
    /// file, or a folder. A file is an inventory script when it is
    /// executable, a plugin file when it is YAML with a `plugin:` key, else
    /// INI or YAML (detected by content/extension). A folder is read as
    /// Ansible does: every inventory file in it, by name. `group_vars/` and
    /// `host_vars/` beside each file (inside each folder) apply: files
    /// `NAME`, `NAME.yml`, `NAME.yaml`, or a folder `NAME/` of yaml files.
    pub fn load_sources(sources: &[String], opts: &SourceOptions) -> Result<Inventory, Diagnostic> {
        let mut inv = Inventory::empty();
        let mut bases = Vec::new();
        for source in sources {
            let path = Path::new(source);
            if source.contains(',') && !path.exists() {
                inv.add_host_list(source, opts.expand_host_list_ranges)?;
            } else if path.is_dir() {
                for file in inventory_files(path)? {
                    read_source(&mut inv, &file, opts)?;
                    inv.mark_source(&file);
                }
                bases.push(path.to_path_buf());
            } else {
                read_source(&mut inv, path, opts)?;
                inv.mark_source(path);
                bases.push(
                    path.parent()
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                );
            }
        }
        inv.finish();
        for base in bases {
            inv.load_vars_files(&base, Layer::Inventory)?;
        }
        Ok(inv)
    }

    /// The `group_vars/` and `host_vars/` beside the playbook, which
    /// Ansible reads besides those beside the inventory, and above them.
    pub fn add_playbook_vars(&mut self, dir: &Path) -> Result<(), Diagnostic> {
        self.load_vars_files(dir, Layer::Playbook)
    }

    /// A host list source; with ranges expanded it is Ansible's
    /// `advanced_host_list`, else its `host_list`.
    pub(super) fn add_host_list(&mut self, list: &str, expand: bool) -> Result<(), Diagnostic> {
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (names, port) = if expand {
                range::parse_host_spec(entry)
                    .map_err(|m| Diagnostic::new(&Span::synthetic(list), m))?
            } else {
                let (name, port) = range::split_port(entry);
                (vec![name.to_string()], port)
            };
            self.room_for(&names)
                .map_err(|m| Diagnostic::new(&Span::synthetic(list), m))?;
            for name in names {
                self.add_host_to(UNGROUPED, &name, port_vars(port));
            }
        }
        Ok(())
    }

    /// Ansible's `inventory_file` and `inventory_dir`: where each host was
    /// first listed.
    fn mark_source(&mut self, file: &Path) {
        let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let dir = file.parent().unwrap_or(Path::new("/"));
        for host in self.hosts.iter_mut().filter(|h| h.source.is_none()) {
            host.source = Some((file.clone(), dir.to_path_buf()));
        }
    }

    fn load_vars_files(&mut self, base: &Path, layer: Layer) -> Result<(), Diagnostic> {
        self.vars_dirs.push((base.to_path_buf(), layer));
        let group_dir = base.join("group_vars");
        for g in 0..self.groups.len() {
            let vars = read_vars(&group_dir, &self.groups[g].name)?;
            extend(&mut self.groups[g].file_vars[layer as usize], &vars);
        }
        let host_dir = base.join("host_vars");
        for h in 0..self.hosts.len() {
            let vars = read_vars(&host_dir, &self.hosts[h].name)?;
            extend(&mut self.hosts[h].file_vars[layer as usize], &vars);
        }
        Ok(())
    }
}

fn io_error(path: &Path, what: &str, err: std::io::Error) -> Diagnostic {
    let name = path.display().to_string();
    Diagnostic::new(
        &Span::synthetic(&name),
        format!("cannot read {what} {name}: {err}"),
    )
}

fn read_source(inv: &mut Inventory, path: &Path, opts: &SourceOptions) -> Result<(), Diagnostic> {
    if is_script(path) {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        return script::run(inv, &path);
    }
    let text = read_text(path).map_err(ReadError::into_diagnostic)?;
    let name = path.display().to_string();
    match yaml_document(path, &text, &name)? {
        Some(doc) if plugins::plugin_name(&doc).is_some() => {
            plugins::load(inv, &doc, path, &opts.plugins)
        }
        Some(doc) => yaml::parse(inv, &doc),
        None => ini::parse(inv, Arc::new(Source { name, text })),
    }
}

/// Ansible's rule: a file with an executable bit is an inventory script,
/// unless its name ends as the files an inventory folder skips (or in
/// `.ini`), which checkouts and copies often leave executable.
fn is_script(path: &Path) -> bool {
    let executable =
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    executable && !is_ignored(path) && path.extension().is_none_or(|e| e != "ini")
}

fn is_ignored(path: &Path) -> bool {
    let name = path.to_string_lossy();
    IGNORED_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The YAML document when the source is YAML: by extension, or for other
/// names by its first line, so that a YAML inventory with a mistake gets a
/// YAML error instead of being read as INI.
fn yaml_document(path: &Path, text: &str, name: &str) -> Result<Option<Node>, Diagnostic> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let is_yaml = match ext {
        "yml" | "yaml" | "json" => true,
        "ini" => false,
        _ => looks_like_yaml(text),
    };
    if is_yaml {
        load_str(text, name).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether the first line that is not blank or a comment opens a YAML (or
/// JSON) mapping: `---`, `{`, or a key followed by a colon. INI lines are
/// `[section]` headers, host names and `key=value` words.
pub(super) fn looks_like_yaml(text: &str) -> bool {
    let Some(first) = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with(['#', ';']))
    else {
        return false;
    };
    if first.starts_with("---") || first.starts_with('{') {
        return true;
    }
    let first = first.split(" #").next().unwrap_or(first).trim_end();
    !first.starts_with('[')
        && !first.contains('=')
        && (first.ends_with(':') || first.contains(": "))
}

fn inventory_files(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let files = sorted_entries(dir)?
        .into_iter()
        .filter(|p| !p.is_dir() && !is_hidden(p))
        .filter(|p| !is_ignored(p))
        .collect();
    Ok(files)
}

/// Variables for one group or host from `dir`: the first of `NAME`,
/// `NAME.yml`, `NAME.yaml`, `NAME.json` that exists (as Ansible's
/// `find_vars_files`), a folder being read file by file in name order.
pub(super) fn read_vars(dir: &Path, name: &str) -> Result<Vars, Diagnostic> {
    let mut vars = Vars::new();
    if !dir.is_dir() {
        return Ok(vars);
    }
    let Some(found) = VARS_EXTENSIONS
        .iter()
        .map(|ext| dir.join(format!("{name}{ext}")))
        // An entry that exists at all counts, so that a broken link or a
        // link loop is an error instead of silently no variables.
        .find(|p| p.symlink_metadata().is_ok())
    else {
        return Ok(vars);
    };
    let files = if found.is_dir() {
        let mut files = Vec::new();
        vars_dir_files(&found, &mut Vec::new(), &mut files)?;
        files
    } else {
        vec![found]
    };
    for file in files {
        extend(&mut vars, &vars_file(&file)?);
    }
    Ok(vars)
}

/// The vars files under `dir`, depth first in name order. `ancestors` holds
/// the (device, inode) of the folders above, so that a link back to one of
/// them is an error instead of an endless walk.
fn vars_dir_files(
    dir: &Path,
    ancestors: &mut Vec<(u64, u64)>,
    files: &mut Vec<PathBuf>,
) -> Result<(), Diagnostic> {
    let meta = std::fs::metadata(dir).map_err(|e| io_error(dir, "folder", e))?;
    let id = (meta.dev(), meta.ino());
    if ancestors.contains(&id) {
        let name = dir.display().to_string();
        return Err(Diagnostic::new(
            &Span::synthetic(&name),
            format!("folder cycle: {name} leads back to a folder that contains it"),
        )
        .with_hint("remove the link that points back up the tree"));
    }
    ancestors.push(id);
    for path in sorted_entries(dir)? {
        if is_hidden(&path) {
            continue;
        }
        if path.is_dir() {
            vars_dir_files(&path, ancestors, files)?;
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str());
        if matches!(ext, None | Some("yml" | "yaml" | "json")) {
            files.push(path);
        }
    }
    ancestors.pop();
    Ok(())
}

fn vars_file(path: &Path) -> Result<Vars, Diagnostic> {
    let doc = load_file(path)?;
    match &doc.value {
        Value::Null => Ok(Vars::new()),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| yaml::checked_var(k, v))
            .collect(),
        _ => Err(doc.error(format!(
            "a variables file maps names to values, found {}",
            doc.kind()
        ))),
    }
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, "folder", e))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    Ok(paths)
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}
