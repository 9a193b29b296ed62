//! `file`: a path's type and attributes (directory, absent, touched, link).

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::files::{self, FileState, Kind, WriteOpts};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, first_of, module_params, Choice, Mode, ParamError, Params};
use crate::remote::probe::Probe;
use crate::remote::shell::quote;

pub(crate) const FILE: ModuleSpec = ModuleSpec {
    name: "file",
    aliases: &["ansible.builtin.file"],
    params: &FileArgs::SPEC,
    free_form: None,
    build,
};

choices! {
    enum State {
        File = "file",
        Directory = "directory",
        Absent = "absent",
        Touch = "touch",
        Link = "link",
    }
}

module_params! {
    struct FileArgs {
        /// the path on the host
        path: Option<String>,
        /// another name for `path`
        dest: Option<String>,
        /// another name for `path`
        name: Option<String>,
        /// what the path must be
        state: State = State::File,
        /// its mode, such as 0755
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
        /// the target of a link
        src: Option<String>,
        /// accepted as Ansible does; a link always replaces what is there
        force: Option<bool>,
    }
}

struct FileModule {
    path: String,
    state: State,
    src: Option<String>,
    opts: WriteOpts,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FileArgs::read(p)?;
    // Ansible playbooks set it; `ln -sfn` replaces whatever is there anyway.
    let _ = a.force;
    let (key, path) = first_of(p, [("path", a.path), ("dest", a.dest), ("name", a.name)])?;
    if a.state == State::Absent {
        p.destructive_path(key, &path)?;
    }
    if a.state == State::Link && a.src.is_none() {
        return Err(p.error("src", "state=link needs 'src' (the link target)"));
    }
    Ok(Box::new(FileModule {
        path,
        state: a.state,
        src: a.src,
        opts: WriteOpts::new(a.mode, a.owner, a.group),
    }))
}

impl Module for FileModule {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let p = quote(&self.path);
        let mut plan = Plan::noop();
        let describe = |st: &FileState| format!("{:?}", st.kind).to_lowercase();
        match (self.state, &current) {
            (State::Absent, None) => {}
            (State::Absent, Some(st)) => {
                plan.changes.push(Change::new(
                    &self.path,
                    Some(describe(st)),
                    Some("absent".into()),
                ));
                plan.steps.push(format!("rm -rf -- {p}"));
                plan.effects.push(FileFact::predict(&self.path, &None));
            }
            (State::File, None) => {
                return Err(ModuleError::Missing(format!(
                    "{} does not exist (use state: touch to create it)",
                    self.path
                )))
            }
            (State::Directory | State::Touch, None) => {
                let (made, create) = match self.state {
                    State::Directory => ("directory", "mkdir -p"),
                    _ => ("file", "touch"),
                };
                plan.changes.push(Change::new(
                    &self.path,
                    Some("absent".into()),
                    Some(made.into()),
                ));
                plan.steps.push(format!(
                    "{create} -- {p}\n{}",
                    files::attr_commands(&p, &self.opts, "exit 1")
                ));
                plan.effects.push(FileFact::invalidate(&self.path));
            }
            (State::Link, _) => self.plan_link(current.as_ref(), &mut plan),
            (want, Some(st)) => {
                let wrong_kind = match want {
                    State::Directory => st.kind != Kind::Dir,
                    _ => st.kind == Kind::Dir,
                };
                if wrong_kind {
                    return Err(ModuleError::Refused(format!(
                        "{} is a {}, not a {}",
                        self.path,
                        describe(st),
                        want.name()
                    )));
                }
                let attr = files::attr_changes(&self.path, st, &self.opts);
                if !attr.is_empty() {
                    plan.steps
                        .push(files::attr_commands(&p, &self.opts, "exit 1"));
                    plan.changes.extend(attr);
                    plan.effects.push(FileFact::invalidate(&self.path));
                }
            }
        }
        Ok(plan)
    }
}

impl FileModule {
    fn plan_link(&self, current: Option<&FileState>, plan: &mut Plan) {
        let src = self.src.as_deref().expect("link has src");
        let have = current.and_then(|s| s.link_target.clone());
        if have.as_deref() == Some(src) {
            return;
        }
        plan.changes.push(Change::new(
            &self.path,
            have.or(current.map(|_| "not a link".into())),
            Some(format!("-> {src}")),
        ));
        plan.steps
            .push(format!("ln -sfn -- {} {}", quote(src), quote(&self.path)));
        plan.effects.push(FileFact::invalidate(&self.path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_refuses_the_root_and_empty_paths_in_any_spelling() {
        for path in ["/", "//", "/.", "/tmp/..", "", ".", "a/.."] {
            let err = crate::modules::kit::testing::build_error(
                &FILE,
                serde_json::json!({"path": path, "state": "absent"}),
            );
            assert!(
                err.contains("refusing to remove or replace"),
                "{path}: {err}"
            );
        }
        let ok = serde_json::json!({"path": "/tmp/x/..", "state": "absent"});
        assert!(crate::modules::kit::testing::build_test(&FILE, ok).is_ok());
        let dir = serde_json::json!({"path": "/", "state": "directory"});
        assert!(crate::modules::kit::testing::build_test(&FILE, dir).is_ok());
    }

    #[test]
    fn a_symbolic_mode_is_compared_with_the_mode_it_gives_and_passed_to_chmod() {
        use crate::modules::kit::testing::{build_error, build_test};
        let params =
            serde_json::json!({"path": "/srv/d", "state": "directory", "mode": "u=rwX,go=rX"});
        let m = build_test(&FILE, params).unwrap();
        let facts = |mode| {
            let mut f = Facts::default();
            f.insert(FileFact::key("/srv/d"), FileFact::render(&Some(dir(mode))));
            f
        };
        assert_eq!(m.plan(&facts(0o755)).unwrap(), Plan::noop());
        let plan = m.plan(&facts(0o700)).unwrap();
        assert_eq!(plan.changes[0].to_string(), "/srv/d mode: 0700 → 0755");
        assert_eq!(plan.steps[0], "chmod u=rwX,go=rX /srv/d || { exit 1; }\n");
        let bad = build_error(
            &FILE,
            serde_json::json!({"path": "/x", "mode": "rw-r--r--"}),
        );
        assert!(bad.contains("symbolic one like"), "{bad}");
    }

    fn run_plan(state: State, current: Option<FileState>) -> Result<Plan, ModuleError> {
        let m = FileModule {
            path: "/srv/d".into(),
            state,
            src: Some("/opt/x".into()),
            opts: WriteOpts {
                mode: Some(0o755),
                ..WriteOpts::default()
            },
        };
        let mut f = Facts::default();
        f.insert(FileFact::key("/srv/d"), FileFact::render(&current));
        m.plan(&f)
    }

    fn dir(mode: u32) -> FileState {
        FileState {
            kind: Kind::Dir,
            mode,
            owner: "root".into(),
            group: "root".into(),
            size: 4096,
            link_target: None,
            content: None,
            sha256: None,
        }
    }

    #[test]
    fn directory_noop_and_change() {
        assert!(run_plan(State::Directory, Some(dir(0o755)))
            .unwrap()
            .changes
            .is_empty());
        let plan = run_plan(State::Directory, Some(dir(0o700))).unwrap();
        assert_eq!(plan.changes[0].after.as_deref(), Some("0755"));
        let plan = run_plan(State::Directory, None).unwrap();
        assert!(plan.steps[0].starts_with("mkdir -p -- /srv/d"));
    }

    #[test]
    fn absent_removes_only_when_present() {
        assert!(run_plan(State::Absent, None).unwrap().changes.is_empty());
        assert_eq!(
            run_plan(State::Absent, Some(dir(0o755))).unwrap().steps,
            ["rm -rf -- /srv/d"]
        );
    }

    #[test]
    fn file_state_on_a_directory_is_an_error() {
        assert!(run_plan(State::File, Some(dir(0o755))).is_err());
        assert!(run_plan(State::File, None).is_err());
    }

    #[test]
    fn link_points_at_src() {
        let plan = run_plan(State::Link, None).unwrap();
        assert_eq!(plan.steps, ["ln -sfn -- /opt/x /srv/d"]);
    }
}
