//! `copy` of a folder on the controller: its folders made and its files
//! written under `dest` on the host, as Ansible's copy does. `src: conf.d/`
//! copies what the folder holds into `dest`; `src: conf.d` the folder
//! itself, as `dest/conf.d`. Each file is written as `copy` writes one
//! (atomically, `mode`, `owner`, `group`, `force`, `backup`); a folder
//! that is not there yet is made with `directory_mode` (0755 unless
//! given), `owner` and `group`, and one already there is left as it is,
//! as in Ansible.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, FileState, Kind, WriteOpts};
use crate::modules::kit::module::Module;
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{ParamError, Params};
use crate::remote::probe::Probe;

/// The most files one task copies: each is a step of the host's script.
const MAX_FILES: usize = 10_000;

pub(crate) struct FolderCopy {
    /// The folder everything goes under, then the folders in it, parents
    /// first.
    folders: Vec<String>,
    /// Each file's path on the host and its content.
    files: Vec<(String, Arc<str>)>,
    opts: WriteOpts,
    /// How a folder made is written: its mode, owner and group.
    folder_opts: WriteOpts,
    force: bool,
}

impl FolderCopy {
    /// The tree under the controller folder `src` (as written, its trailing
    /// slash saying "what it holds") at `found`, for `dest` on the host.
    pub(crate) fn build(
        p: &Params,
        src: &str,
        found: &Path,
        dest: &str,
        opts: WriteOpts,
        folder_opts: WriteOpts,
        force: bool,
    ) -> Result<Self, ParamError> {
        let dest = dest.trim_end_matches('/');
        let dest = if dest.is_empty() { "/" } else { dest };
        let root = match src.ends_with('/') {
            true => dest.to_string(),
            false => {
                let name = found.file_name().map(|n| n.to_string_lossy().into_owned());
                format!(
                    "{}/{}",
                    dest.trim_end_matches('/'),
                    name.unwrap_or_default()
                )
            }
        };
        p.destructive_path("dest", &root)?;
        let mut copy = FolderCopy {
            folders: vec![root.clone()],
            files: Vec::new(),
            opts,
            folder_opts,
            force,
        };
        copy.walk(p, found, &root)?;
        Ok(copy)
    }

    /// Adds what `dir` holds, in name order, under `at` on the host;
    /// links are followed, as Ansible's `local_follow` does by default.
    fn walk(&mut self, p: &Params, dir: &Path, at: &str) -> Result<(), ParamError> {
        let unreadable =
            |e: std::io::Error| p.error("src", format!("cannot read {}: {e}", dir.display()));
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(unreadable)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(unreadable)?;
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let target = format!("{}/{name}", at.trim_end_matches('/'));
            if path.is_dir() {
                self.folders.push(target.clone());
                self.walk(p, &path, &target)?;
                continue;
            }
            if self.files.len() == MAX_FILES {
                return Err(p.error(
                    "src",
                    format!("{} holds more than {MAX_FILES} files", dir.display()),
                ));
            }
            let content = p
                .ctx
                .sources
                .read(&path)
                .map_err(|e| p.error("src", e.to_string()))?;
            self.files.push((target, content));
        }
        Ok(())
    }

    /// A folder made where there is none; the first, under which all
    /// goes, with any folder above it missing too (`mkdir -p`).
    fn plan_folder(
        &self,
        path: &str,
        current: Option<&FileState>,
        plan: &mut Plan,
    ) -> Result<(), ModuleError> {
        match current {
            Some(st) if st.kind == Kind::Dir => Ok(()),
            Some(_) => Err(ModuleError::Refused(format!(
                "{path} exists and is not a folder"
            ))),
            None => {
                let mode = self.folder_opts.mode.unwrap_or(0o755);
                plan.changes.push(Change::new(
                    path,
                    Some("absent".into()),
                    Some("directory".into()),
                ));
                let p = quote(path);
                let parents = match path == self.folders[0] {
                    true => "-p ",
                    false => "",
                };
                plan.steps.push(format!(
                    "mkdir {parents}-m {mode:o} -- {p} || exit 1\n{}",
                    files::attr_commands(&p, &self.folder_opts, "exit 1")
                ));
                plan.effects.push(FileFact::invalidate(path));
                Ok(())
            }
        }
    }
}

impl Module for FolderCopy {
    fn probes(&self) -> Vec<Probe> {
        let files = self.files.iter().map(|(path, _)| path);
        self.folders
            .iter()
            .chain(files)
            .map(|p| FileFact::probe(p))
            .collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = Plan::noop();
        for folder in &self.folders {
            let current = FileFact::read(facts, folder)?;
            self.plan_folder(folder, current.as_ref(), &mut plan)?;
        }
        for (path, content) in &self.files {
            let current = FileFact::read(facts, path)?;
            let part =
                files::plan_content(path, current.as_ref(), content, &self.opts, self.force)?;
            plan.absorb(part);
        }
        // Each file's backup is its own; Ansible returns none for a folder.
        plan.returns.remove("backup_file");
        plan.returns
            .insert("dest".into(), self.folders[0].clone().into());
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::copy::COPY;
    use crate::modules::kit::testing::{assert_sh_syntax, build_test_with, facts_of};
    use serde_json::json;

    /// `files/conf.d/` with a file and a folder holding another.
    fn controller_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("files/conf.d/sub")).unwrap();
        std::fs::write(dir.path().join("files/conf.d/a.conf"), "a\n").unwrap();
        std::fs::write(dir.path().join("files/conf.d/sub/b.conf"), "b\n").unwrap();
        dir
    }

    fn folder_state() -> Option<FileState> {
        Some(FileState::of_kind(Kind::Dir, 0o755, "root", "root"))
    }

    /// Facts where `present` are folders and every other path is absent.
    fn facts(m: &dyn Module, present: &[&str]) -> Facts {
        let answers: Vec<(String, String)> = m
            .probes()
            .iter()
            .map(|p| {
                let path = p.key.trim_start_matches("file:");
                let state = present.contains(&path).then(folder_state).flatten();
                (p.key.clone(), FileFact::render(&state).stdout)
            })
            .collect();
        let pairs: Vec<(&str, &str)> = answers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        facts_of(&pairs)
    }

    fn copy(params: serde_json::Value, dir: &tempfile::TempDir) -> Box<dyn Module> {
        build_test_with(&COPY, params, json!({}), &[dir.path().to_path_buf()]).unwrap()
    }

    #[test]
    fn what_a_folder_holds_goes_under_dest_folders_first() {
        let dir = controller_folder();
        let m = copy(
            json!({"src": "conf.d/", "dest": "/etc/app", "mode": "0640"}),
            &dir,
        );
        let plan = m.plan(&facts(m.as_ref(), &["/etc/app"])).unwrap();
        let changed: Vec<&str> = plan.changes.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(
            changed,
            ["/etc/app/sub", "/etc/app/a.conf", "/etc/app/sub/b.conf"]
        );
        assert!(
            plan.steps[0].starts_with("mkdir -m 755 -- /etc/app/sub"),
            "{}",
            plan.steps[0]
        );
        assert!(plan.steps[1].contains("chmod 640"), "{}", plan.steps[1]);
        assert_eq!(plan.returns["dest"], "/etc/app");
        assert_sh_syntax(m.as_ref(), &plan);
        // Once there, nothing to do.
        let mut after = facts(m.as_ref(), &["/etc/app", "/etc/app/sub"]);
        for e in &plan.effects {
            if let crate::modules::kit::plan::Effect::Predict(k, r) = e {
                after.insert(k.clone(), r.clone());
            }
        }
        assert!(m.plan(&after).unwrap().changes.is_empty());
    }

    #[test]
    fn a_folder_named_without_a_slash_is_copied_itself() {
        let dir = controller_folder();
        let params = json!({"src": "conf.d", "dest": "/srv/new/", "directory_mode": "0700"});
        let m = copy(params, &dir);
        let plan = m.plan(&facts(m.as_ref(), &[])).unwrap();
        assert!(
            plan.steps[0].starts_with("mkdir -p -m 700 -- /srv/new/conf.d"),
            "{}",
            plan.steps[0]
        );
        assert_eq!(
            plan.changes.last().unwrap().subject,
            "/srv/new/conf.d/sub/b.conf"
        );
        // A file where a folder goes is refused, not replaced.
        let mut on_file = facts(m.as_ref(), &[]);
        let file = FileState::written("x", 0o644, "root", "root");
        on_file.insert("file:/srv/new/conf.d".into(), FileFact::render(&Some(file)));
        let err = m.plan(&on_file).unwrap_err().to_string();
        assert!(
            err.contains("/srv/new/conf.d exists and is not a folder"),
            "{err}"
        );
    }
}
