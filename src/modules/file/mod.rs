//! `file`: a path's type and attributes (directory, absent, touched, link).
//!
//! With `recurse`, a directory's owner, group and octal mode are set on all it
//! holds too; drift there is found with one find.
//!
//! `access_time` and `modification_time` are each `preserve` (also when unset,
//! even with `state: touch`, so a touch converges), `now` (set on every run and
//! reported changed, as Ansible does), or a local time of the host written as
//! `access_time_format` or `modification_time_format` says, which is compared
//! with the path's and set only when it differs. A literal `access_time` needs
//! `state: directory`, since the probe reads a file's content and so moves its
//! access time; with `recurse` or `state: link` neither may be other than
//! `preserve`.
//!
//! `follow` is only true, Ansible's default: a link is never changed in
//! itself, and a path that is a link is refused unless the state is link; give
//! its target's path. A task written with `follow: false`, a symbolic mode
//! with `recurse`, or times with `recurse` or `state: link` runs Ansible's
//! own module instead.
//!
//! # Example
//!
//! ```yaml
//! - name: Make the shared datasets folder Slurm jobs read
//!   file:
//!     path: /scratch/datasets
//!     state: directory
//!     owner: slurm
//!     group: slurm
//!     mode: "0775"
//! - name: Point /usr/local/cuda at the 12.4 toolkit
//!   file:
//!     path: /usr/local/cuda
//!     src: /usr/local/cuda-12.4
//!     state: link
//! ```

mod times;

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::files::{self, FileState, Kind, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, Mode, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};
use times::{Time, TimesFact, Wanted as WantedTimes, DEFAULT_FORMAT};

pub(crate) const FILE: ModuleSpec = ModuleSpec {
    name: "file",
    source: file!(),
    aliases: &["ansible.builtin.file"],
    params: &FileArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
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
        #[aliases("dest", "name")]
        path: String,
        /// what the path must be (default: what it is, a file if it is absent)
        state: Option<State>,
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
        /// a directory's owner, group and (octal) mode set on all it holds too
        recurse: bool = false,
        /// `preserve` (unset too, even with state touch), `now` (set on every run) or a time in `access_time_format`
        access_time: Option<String>,
        /// how a literal `access_time` is written, as Python's strftime (default `%Y%m%d%H%M.%S`; `%Y %y %m %d %H %M %S`)
        access_time_format: String = DEFAULT_FORMAT.into(),
        /// `preserve` (unset too, even with state touch), `now` (set on every run) or a time in `modification_time_format`
        modification_time: Option<String>,
        /// how a literal `modification_time` is written, as Python's strftime (default `%Y%m%d%H%M.%S`; `%Y %y %m %d %H %M %S`)
        modification_time_format: String = DEFAULT_FORMAT.into(),
        /// only true (Ansible's default): a link is not changed in itself
        follow: bool = true,
    }
}

struct FileModule {
    path: String,
    /// `None`: what the path is now, as Ansible decides when unset.
    state: Option<State>,
    src: Option<String>,
    opts: WriteOpts,
    /// Owner, group and mode of a directory's contents too.
    recurse: bool,
    times: WantedTimes,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FileArgs::read(p)?;
    // Ansible playbooks set it; `ln -sfn` replaces whatever is there anyway.
    let _ = a.force;
    let (key, path) = ("path", a.path);
    if a.state == Some(State::Absent) {
        p.destructive_path(key, &path)?;
    }
    if a.state == Some(State::Link) && a.src.is_none() {
        return Err(p.error("src", "state=link needs 'src' (the link target)"));
    }
    let time = |key: &str, value: Option<String>, format: &str| {
        let time = Time::parse(value.as_deref().unwrap_or("preserve"), format)
            .map_err(|m| p.error(key, m))?;
        let refused = match time {
            Time::Preserve => None,
            _ if a.recurse => Some(format!("{key} with recurse is not supported")),
            _ if a.state == Some(State::Link) => Some(format!(
                "{key} with state: link is not supported (set it on the target)"
            )),
            // The probe reads a file's content, which moves its access time
            // (relatime: it is older than the change time touch leaves), so a
            // file's could never settle.
            Time::At(_) if key == "access_time" && a.state != Some(State::Directory) => {
                Some("a literal access_time is supported with state: directory only (reading a file moves its access time)".into())
            }
            _ => None,
        };
        refused.map_or(Ok(time), |m| Err(p.unsupported(key, m)))
    };
    // Unset is preserve even for touch (Ansible's touch moves both times):
    // a task that touches a file converges.
    let times = WantedTimes {
        atime: time("access_time", a.access_time, &a.access_time_format)?,
        mtime: time(
            "modification_time",
            a.modification_time,
            &a.modification_time_format,
        )?,
    };
    if !a.follow {
        return Err(p.unsupported(
            "follow",
            "only follow: true is supported (a link's own owner or mode is never set)",
        ));
    }
    if a.recurse && a.state.is_some_and(|s| s != State::Directory) {
        return Err(p.error("recurse", "recurse needs state: directory"));
    }
    if a.recurse && matches!(a.mode, Some(Mode::Symbolic(_))) {
        return Err(p.unsupported(
            "mode",
            "with recurse, give an octal mode (a symbolic one is not supported there)",
        ));
    }
    let opts = WriteOpts::read(p, a.mode, a.owner, a.group)?;
    let recurse =
        a.recurse && (opts.mode.is_some() || opts.owner.is_some() || opts.group.is_some());
    Ok(Box::new(FileModule {
        path,
        state: a.state,
        src: a.src,
        opts,
        recurse,
        times,
    }))
}

/// Entries under a directory whose owner, group or mode differ from the
/// wanted ones: how many, and the first.
struct Contents;

/// The directory and the attributes its contents must have.
struct Wanted {
    path: String,
    opts: WriteOpts,
}

impl Fact for Contents {
    type Query = Wanted;
    type Value = (usize, String);

    fn key(q: &Wanted) -> String {
        format!(
            "file:contents:{}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
            q.path, q.opts.owner, q.opts.group, q.opts.mode
        )
    }

    fn script(q: &Wanted) -> String {
        let mut tests = Vec::new();
        if let Some(o) = &q.opts.owner {
            tests.push(format!("! -user {}", quote(o)));
        }
        if let Some(g) = &q.opts.group {
            tests.push(format!("! -group {}", quote(g)));
        }
        if let Some(m) = q.opts.mode {
            tests.push(format!("! -perm {m:04o}"));
        }
        format!(
            "[ -d {p} ] || {{ echo 0; exit 0; }}\n\
             l=$(find {p} -mindepth 1 \\( {} \\) -print) || exit 1\n\
             if [ -z \"$l\" ]; then echo 0; else printf '%s\\n' \"$l\" | wc -l; printf '%s\\n' \"$l\" | head -n 1; fi",
            tests.join(" -o "),
            p = quote(&q.path)
        )
    }

    fn parse(q: &Wanted, r: &ProbeResult) -> Result<(usize, String), ModuleError> {
        let mut lines = r.stdout.lines();
        let count = lines.next().and_then(|n| n.trim().parse().ok());
        match count {
            Some(n) if r.rc == 0 => Ok((n, lines.next().unwrap_or_default().to_string())),
            _ => Err(crate::modules::kit::fact::bad(
                Self::key(q),
                r.stderr.trim().to_string(),
            )),
        }
    }

    fn render((n, first): &(usize, String)) -> ProbeResult {
        ProbeResult::ok(if *n == 0 {
            "0\n".to_string()
        } else {
            format!("{n}\n{first}\n")
        })
    }
}

impl FileModule {
    fn wanted(&self) -> Wanted {
        Wanted {
            path: self.path.clone(),
            opts: self.opts.clone(),
        }
    }

    /// Owner, group and mode for everything under the directory.
    fn plan_contents(&self, facts: &Facts, plan: &mut Plan) -> Result<(), ModuleError> {
        let q = self.wanted();
        let (n, first) = Contents::read(facts, &q)?;
        if n == 0 {
            return Ok(());
        }
        let mut want = Vec::new();
        let p = quote(&self.path);
        let mut step = String::new();
        if self.opts.owner.is_some() || self.opts.group.is_some() {
            let og = format!(
                "{}{}",
                self.opts.owner.as_deref().unwrap_or(""),
                self.opts
                    .group
                    .as_deref()
                    .map(|g| format!(":{g}"))
                    .unwrap_or_default()
            );
            want.push(og.clone());
            step.push_str(&format!("chown -R -- {} {p} || exit 1\n", quote(&og)));
        }
        if let Some(m) = self.opts.mode {
            want.push(format!("{m:04o}"));
            step.push_str(&format!("chmod -R {m:o} {p} || exit 1\n"));
        }
        plan.changes.push(
            Change::new(
                format!("{} contents", self.path),
                Some(format!("{n} entries differ, first {first}")),
                Some(want.join(" ")),
            )
            .with_evidence("find"),
        );
        plan.steps.push(step);
        plan.effects
            .push(Contents::predict(&q, &(0, String::new())));
        plan.effects.push(FileFact::invalidate(&self.path));
        Ok(())
    }
}

impl Module for FileModule {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![FileFact::probe(&self.path)];
        if self.recurse {
            probes.push(Contents::probe(&self.wanted()));
        }
        if self.times.reads() {
            probes.push(TimesFact::probe(&self.path));
        }
        probes
    }

    /// A time set to `now` is an action, as a restart is: it is run on
    /// every run, and verify would re-plan it and call that
    /// non-convergence, so the task is run and reported like a command.
    fn is_command(&self) -> bool {
        self.times.moves()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let p = quote(&self.path);
        let mut plan = Plan::noop();
        let describe = |st: &FileState| format!("{:?}", st.kind).to_lowercase();
        let state = self.state.unwrap_or(match &current {
            Some(st) if st.kind == Kind::Dir => State::Directory,
            _ if self.recurse => State::Directory,
            _ => State::File,
        });
        match (state, &current) {
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
                let (made, create) = match state {
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
                self.times.plan(&self.path, facts, true, &mut plan)?;
            }
            (State::Link, _) => self.plan_link(current.as_ref(), &mut plan),
            (want, Some(st)) => {
                // A link's own mode says nothing of its target's, and chmod
                // would change the target: comparing them could never settle.
                if st.kind == Kind::Link {
                    return Err(ModuleError::Refused(format!(
                        "{} is a symbolic link; give the path of its target ({})",
                        self.path,
                        st.link_target.as_deref().unwrap_or("?")
                    )));
                }
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
                if self.recurse {
                    self.plan_contents(facts, &mut plan)?;
                }
                self.times.plan(&self.path, facts, false, &mut plan)?;
            }
        }
        // Returned whether or not diff mode is on, as Ansible's module
        // returns it, so `register` holds it always.
        (plan.returns).insert("diff".into(), self.diff(state, current.as_ref()));
        Ok(plan)
    }
}

impl FileModule {
    /// What Ansible's module returns as `diff`, changed or not: the path,
    /// its state before and after when they differ, and a link's target
    /// when it changes.
    fn diff(&self, state: State, current: Option<&FileState>) -> serde_json::Value {
        let was = current.map_or("absent", |st| match st.kind {
            Kind::Dir => "directory",
            Kind::Link => "link",
            Kind::File | Kind::Other => "file",
        });
        let mut before = serde_json::json!({"path": self.path});
        let mut after = before.clone();
        if was != state.name() {
            before["state"] = was.into();
            after["state"] = state.name().into();
        }
        let target = current.and_then(|st| st.link_target.as_deref());
        if let (State::Link, Some(have), Some(src)) = (state, target, self.src.as_deref()) {
            if have != src {
                before["src"] = have.into();
                after["src"] = src.into();
            }
        }
        serde_json::json!({"before": before, "after": after})
    }

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

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    let q = Wanted {
        path: "/home/slurm".into(),
        opts: WriteOpts::new(None, Some("slurm".into()), None),
    };
    rt.check::<Contents>(&q, (0, String::new()));
    rt.check::<Contents>(&q, (3, "/home/slurm/a b".into()));
    times::fact_samples(rt);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(without_diff(m.plan(&facts(0o755)).unwrap()), Plan::noop());
        let plan = m.plan(&facts(0o700)).unwrap();
        assert_eq!(plan.changes[0].to_string(), "/srv/d mode: 0700 → 0755");
        assert_eq!(plan.steps[0], "chmod u=rwX,go=rX /srv/d || { exit 1; }\n");
        let bad = build_error(
            &FILE,
            serde_json::json!({"path": "/x", "mode": "rw-r--r--"}),
        );
        assert!(bad.contains("symbolic one like"), "{bad}");
    }

    #[test]
    fn recurse_sets_the_contents_found_to_differ_and_times_are_preserved() {
        use crate::modules::kit::testing::{build_error, build_test, facts_of, settled};
        let params = serde_json::json!({"path": "/home/slurm", "state": "directory",
                                        "recurse": true, "owner": "slurm", "mode": "0750"});
        let m = build_test(&FILE, params).unwrap();
        let contents = m.probes()[1].clone();
        assert!(
            contents
                .script
                .contains("find /home/slurm -mindepth 1 \\( ! -user slurm -o ! -perm 0750 \\)"),
            "{}",
            contents.script
        );
        let dir_state = FileFact::render(&Some(FileState {
            owner: "slurm".into(),
            ..dir(0o750)
        }))
        .stdout;
        let facts = facts_of(&[
            (&FileFact::key("/home/slurm"), &dir_state),
            (&contents.key, "2\n/home/slurm/.bashrc\n"),
        ]);
        let plan = m.plan(&facts).unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "/home/slurm contents: 2 entries differ, first /home/slurm/.bashrc → slurm 0750"
        );
        assert_eq!(
            plan.steps[0],
            "chown -R -- slurm /home/slurm || exit 1\nchmod -R 750 /home/slurm || exit 1\n"
        );
        let after = settled(&facts, &plan);
        assert_eq!(
            Contents::read(
                &after,
                &Wanted {
                    path: "/home/slurm".into(),
                    opts: WriteOpts::new(Some(Mode::Octal(0o750)), Some("slurm".into()), None)
                }
            )
            .unwrap()
            .0,
            0
        );
        // Nothing to set: recurse alone probes nothing more.
        let bare = build_test(
            &FILE,
            serde_json::json!({"path": "/d", "state": "directory", "recurse": true}),
        )
        .unwrap();
        assert_eq!(bare.probes().len(), 1);
        assert!(build_error(
            &FILE,
            serde_json::json!({"path": "/d", "state": "file", "recurse": true})
        )
        .contains("state: directory"));
        let touch = serde_json::json!({"path": "/f", "state": "touch", "access_time": "preserve",
                                       "modification_time": "preserve"});
        assert!(build_test(&FILE, touch).is_ok());
        assert!(build_error(
            &FILE,
            serde_json::json!({"path": "/d", "state": "directory", "recurse": true,
                               "access_time": "now"})
        )
        .contains("access_time with recurse is not supported"));
    }

    fn plan_times(params: serde_json::Value, file: Option<FileState>, times: &str) -> Plan {
        use crate::modules::kit::testing::build_test;
        let m = build_test(&FILE, params).unwrap();
        let mut f = Facts::default();
        f.insert(FileFact::key("/srv/f"), FileFact::render(&file));
        f.insert(TimesFact::key("/srv/f"), ProbeResult::ok(times));
        m.plan(&f).unwrap()
    }

    fn file() -> Option<FileState> {
        Some(FileState::written("", 0o644, "root", "root"))
    }

    #[test]
    fn a_literal_access_time_needs_a_directory() {
        use crate::modules::kit::testing::build_error;
        for state in [Some("file"), Some("touch"), None] {
            let mut params =
                serde_json::json!({"path": "/srv/f", "access_time": "202401020304.05"});
            if let Some(state) = state {
                params["state"] = state.into();
            }
            let err = build_error(&FILE, params);
            assert!(err.contains("state: directory only"), "{err}");
        }
    }

    /// A literal time is compared with the host's and set only when it
    /// differs; the times it sets are what later tasks read.
    #[test]
    fn a_literal_time_is_set_only_when_it_differs() {
        use crate::modules::kit::testing::settled;
        let params = serde_json::json!({"path": "/srv/f", "state": "directory",
            "modification_time": "202401020304.05", "access_time": "202401020304.05"});
        let same = "2024-01-02 03:04:05.000000000 +0100|2024-01-02 03:04:05.000000000 +0100\n";
        assert_eq!(
            without_diff(plan_times(params.clone(), Some(dir(0o755)), same)),
            Plan::noop()
        );
        let newer = "2024-01-02 03:04:05.000000000 +0100|2025-06-01 10:00:00.250000000 +0200\n";
        let plan = plan_times(params.clone(), Some(dir(0o755)), newer);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(
            plan.changes[0].to_string(),
            "/srv/f mtime: 2025-06-01 10:00:00.250000000 → 2024-01-02 03:04:05"
        );
        assert_eq!(
            plan.steps,
            ["touch -c -m -t 202401020304.05 -- /srv/f || exit 1"]
        );
        let mut facts = Facts::default();
        facts.insert(FileFact::key("/srv/f"), FileFact::render(&Some(dir(0o755))));
        facts.insert(TimesFact::key("/srv/f"), ProbeResult::ok(newer));
        let after = settled(&facts, &plan);
        let m = crate::modules::kit::testing::build_test(&FILE, params).unwrap();
        assert_eq!(without_diff(m.plan(&after).unwrap()), Plan::noop());
        // A custom format reads the same time.
        let custom = serde_json::json!({"path": "/srv/f", "modification_time": "2024-01-02 03:04:05",
            "modification_time_format": "%Y-%m-%d %H:%M:%S"});
        assert_eq!(without_diff(plan_times(custom, file(), same)), Plan::noop());
    }

    /// `now` changes the path on every run, as in Ansible, and reads no time.
    #[test]
    fn now_sets_the_time_on_every_run() {
        use crate::modules::kit::testing::build_test;
        for state in ["touch", "file", "directory"] {
            let current = match state {
                "directory" => Some(dir(0o755)),
                _ => file(),
            };
            let params = serde_json::json!({"path": "/srv/f", "state": state,
                "access_time": "now", "modification_time": "now"});
            assert_eq!(build_test(&FILE, params.clone()).unwrap().probes().len(), 1);
            let plan = plan_times(params, current, "");
            assert_eq!(plan.changes.len(), 2, "{state}");
            assert_eq!(
                plan.steps,
                [
                    "touch -c -a -- /srv/f || exit 1",
                    "touch -c -m -- /srv/f || exit 1"
                ],
                "{state}"
            );
        }
        // A file touch creates gets the literal time after it is made.
        let params = serde_json::json!({"path": "/srv/f", "state": "touch",
            "modification_time": "202401020304.05"});
        let plan = plan_times(params, None, "");
        assert_eq!(plan.steps.len(), 2);
        assert!(plan.steps[0].starts_with("touch -- /srv/f"));
        assert_eq!(
            plan.steps[1],
            "touch -c -m -t 202401020304.05 -- /srv/f || exit 1"
        );
    }

    /// The plan but its `diff`, which the module returns changed or not.
    fn without_diff(mut plan: Plan) -> Plan {
        plan.returns.remove("diff");
        plan
    }

    fn run_plan(state: State, current: Option<FileState>) -> Result<Plan, ModuleError> {
        let m = FileModule {
            path: "/srv/d".into(),
            state: Some(state),
            src: Some("/opt/x".into()),
            opts: WriteOpts {
                mode: Some(0o755),
                ..WriteOpts::default()
            },
            recurse: false,
            times: WantedTimes {
                atime: Time::Preserve,
                mtime: Time::Preserve,
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
            link_resolved: None,
            content: None,
            binary: None,
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
    fn a_link_is_refused_rather_than_compared_with_its_target_and_follow_false_too() {
        let link = FileState {
            kind: Kind::Link,
            mode: 0o777,
            link_target: Some("/opt/x".into()),
            ..dir(0o777)
        };
        let err = run_plan(State::File, Some(link)).unwrap_err().to_string();
        assert!(
            err.contains("/srv/d is a symbolic link; give the path of its target (/opt/x)"),
            "{err}"
        );
        let err = crate::modules::kit::testing::build_error(
            &FILE,
            serde_json::json!({"path": "/x", "follow": false}),
        );
        assert!(err.contains("only follow: true"), "{err}");
    }

    #[test]
    fn without_a_state_the_path_keeps_the_kind_it_has() {
        let build = |path: &str| {
            crate::modules::kit::testing::build_test(
                &FILE,
                serde_json::json!({"path": path, "mode": "0700"}),
            )
            .unwrap()
        };
        let facts = crate::modules::kit::testing::facts_of(&[]);
        let mut facts = facts;
        facts.insert(FileFact::key("/boot"), FileFact::render(&Some(dir(0o755))));
        facts.insert(FileFact::key("/gone"), FileFact::render(&None));
        let plan = build("/boot").plan(&facts).unwrap();
        assert_eq!(plan.steps, ["chmod 700 /boot || { exit 1; }\n"]);
        let err = build("/gone").plan(&facts).unwrap_err().to_string();
        assert!(err.contains("/gone does not exist"), "{err}");
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

    #[test]
    fn the_diff_names_the_state_and_a_link_target_that_change_as_ansibles() {
        let plan = run_plan(State::Link, None).unwrap();
        assert_eq!(
            plan.returns["diff"],
            json!({"before": {"path": "/srv/d", "state": "absent"},
                   "after": {"path": "/srv/d", "state": "link"}})
        );
        let old = FileState {
            kind: Kind::Link,
            link_target: Some("/opt/old".into()),
            ..dir(0o777)
        };
        let plan = run_plan(State::Link, Some(old)).unwrap();
        assert_eq!(
            plan.returns["diff"],
            json!({"before": {"path": "/srv/d", "src": "/opt/old"},
                   "after": {"path": "/srv/d", "src": "/opt/x"}})
        );
        let plan = run_plan(State::Directory, Some(dir(0o755))).unwrap();
        assert_eq!(
            plan.returns["diff"],
            json!({"before": {"path": "/srv/d"}, "after": {"path": "/srv/d"}})
        );
    }
}
