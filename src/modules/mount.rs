//! `mount` (`ansible.posix.mount`): an fstab entry, and the mount itself.
//!
//! Entries are keyed by mount point, except swap entries, which all share
//! the mount point `none` and are keyed by their source (the bug that made
//! Ansible's second swap line replace the first). fstab is rewritten
//! atomically, touching only the entry's lines.
//!
//! `state: remounted` runs `mount -o remount` (with `opts` if given), leaves
//! fstab untouched and is changed on every run, as in Ansible. A swap entry
//! (`fstype: swap`) is the one with its `src`, or, to remove without one, every
//! swap line whose second field is `path` (`swap`, `none`), as Ansible matches
//! them.
//!
//! # Example
//!
//! ```yaml
//! - name: Mount the shared home folders over NFS
//!   mount:
//!     path: /home
//!     src: nfs01:/export/home
//!     fstype: nfs
//!     opts: rw,hard,vers=4.2
//!     state: mounted
//! - name: Mount the local NVMe scratch disk for datasets
//!   mount:
//!     path: /scratch
//!     src: LABEL=scratch
//!     fstype: xfs
//!     opts: defaults,noatime
//!     state: mounted
//! ```

use crate::base::shell::{quote, unescape_octal};
use crate::modules::kit::fact::Fact;
use crate::modules::kit::fstab::{self, Entry};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const MOUNT: ModuleSpec = ModuleSpec {
    name: "mount",
    source: file!(),
    aliases: &["ansible.posix.mount"],
    params: &MountArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum State {
        Mounted = "mounted",
        Present = "present",
        Unmounted = "unmounted",
        Absent = "absent",
        Remounted = "remounted",
    }
}

module_params! {
    struct MountArgs {
        /// the mount point (`none` for swap)
        #[aliases("name")]
        path: String,
        /// the device, label or share mounted
        src: Option<String>,
        /// its filesystem type
        fstype: Option<String>,
        /// mount options
        opts: String = "defaults".into(),
        /// fstab's dump field
        dump: String = "0".into(),
        /// fstab's fsck pass field
        passno: String = "0".into(),
        /// in fstab and mounted, only in fstab, unmounted, or neither
        state: State,
    }
}

struct Mount {
    path: String,
    entry: Option<Entry>,
    state: State,
    /// `fstype: swap`: the path is fstab's second field (`swap`, `none`).
    swap: bool,
    /// `opts` given for `state: remounted`, applied to the remount only.
    remount_opts: Option<String>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = MountArgs::read(p)?;
    let path = a.path;
    let state = a.state;
    // fstab holds a line break escaped (`\012`): an option mount refuses at boot.
    p.one_line("opts", &a.opts)?;
    let swap = a.fstype.as_deref() == Some("swap");
    if !swap && !path.starts_with('/') {
        return Err(p.error("path", format!("'{path}' must be an absolute path")));
    }
    if matches!(state, State::Absent | State::Unmounted) && !swap {
        // Unmounting `/` and dropping its fstab line leaves a host that
        // does not boot.
        p.destructive_path("path", &path)?;
    }
    if swap && matches!(state, State::Mounted | State::Unmounted | State::Remounted) {
        return Err(p.error(
            "state",
            "swap entries take state present or absent; the swapfile module turns swap on",
        ));
    }
    let remount_opts = (state == State::Remounted && p.has("opts")).then(|| a.opts.clone());
    let entry = match (a.src, a.fstype) {
        (Some(src), Some(fstype)) => Some(Entry {
            src,
            target: path.clone(),
            fstype,
            opts: a.opts,
            dump: a.dump,
            pass: a.passno,
        }),
        _ if matches!(state, State::Mounted | State::Present) => {
            return Err(p.error("src", "state mounted and present need 'src' and 'fstype'"))
        }
        _ => None,
    };
    if swap && entry.is_none() && state != State::Absent {
        return Err(p.error("src", "swap entries are keyed by 'src'; give it"));
    }
    Ok(Box::new(Mount {
        path,
        entry,
        state,
        swap,
        remount_opts,
    }))
}

/// What is mounted where, topmost mount last: `(mount point, fstype)`.
struct Mounts;

impl Fact for Mounts {
    type Query = ();
    type Value = Vec<(String, String)>;

    fn key(_: &()) -> String {
        "proc:mountinfo".into()
    }

    fn script(_: &()) -> String {
        "cat /proc/self/mountinfo".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        Ok(r.stdout
            .lines()
            .filter_map(|l| {
                let (left, right) = l.split_once(" - ")?;
                let point = left.split_whitespace().nth(4)?;
                let fstype = right.split_whitespace().next().unwrap_or("");
                Some((unescape_octal(point), fstype.to_string()))
            })
            .collect())
    }

    fn render(mounts: &Self::Value) -> ProbeResult {
        let lines: String = mounts
            .iter()
            .enumerate()
            .map(|(i, (point, fstype))| {
                format!(
                    "{i} 0 0:0 / {} rw - {fstype} none rw\n",
                    fstab::escape(point)
                )
            })
            .collect();
        ProbeResult::ok(lines)
    }
}

/// The filesystem type mounted on `path` (the topmost mount), if any.
fn mounted_fstype(mounts: &[(String, String)], path: &str) -> Option<String> {
    mounts
        .iter()
        .rev()
        .find(|(point, _)| point == path)
        .map(|(_, fstype)| fstype.clone())
}

impl Module for Mount {
    fn probes(&self) -> Vec<Probe> {
        vec![fstab::probe(), Mounts::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = match self.state {
            State::Unmounted | State::Remounted => Plan::noop(),
            _ => self.plan_fstab(facts)?,
        };
        let fstab_changed = !plan.steps.is_empty();
        if self.is_swap() {
            return Ok(plan);
        }
        let mounted = mounted_fstype(&Mounts::read(facts, &())?, &self.path);
        let p = quote(&self.path);
        let step = match (self.state, &mounted) {
            (State::Mounted, None) => Some((
                "not mounted",
                "mounted",
                format!(
                    "mkdir -p -- {p} && mount -- {p} || {{ echo {} >&2; exit 1; }}",
                    quote(&format!("cannot mount {}", self.path))
                ),
            )),
            (State::Mounted, Some(t)) if fstab_changed => {
                let want = self.entry.as_ref().map(|e| e.fstype.as_str());
                // Options change in place; another filesystem needs a fresh mount.
                let cmd = if want == Some(t.as_str()) {
                    format!("mount -o remount -- {p}")
                } else {
                    format!("umount -- {p} && mount -- {p}")
                };
                Some((
                    "mounted with old entry",
                    "remounted",
                    format!(
                        "{cmd} || {{ echo {} >&2; exit 1; }}",
                        quote(&format!("cannot remount {}", self.path))
                    ),
                ))
            }
            // As in Ansible: every run remounts (options refreshed, fstab
            // untouched), so it always changes.
            (State::Remounted, Some(_)) => {
                let opts = match &self.remount_opts {
                    Some(o) => format!("remount,{o}"),
                    None => "remount".into(),
                };
                Some((
                    "mounted",
                    "remounted",
                    format!(
                        "mount -o {} -- {p} || {{ echo {} >&2; exit 1; }}",
                        quote(&opts),
                        quote(&format!("cannot remount {}", self.path))
                    ),
                ))
            }
            (State::Remounted, None) => {
                return Err(ModuleError::Absent(format!(
                    "{} is not mounted, so it cannot be remounted",
                    self.path
                )))
            }
            (State::Unmounted | State::Absent, Some(_)) => Some((
                "mounted",
                "not mounted",
                format!(
                    "umount -- {p} || {{ echo {} >&2; exit 1; }}",
                    quote(&format!("cannot unmount {} (busy?)", self.path))
                ),
            )),
            _ => None,
        };
        if let Some((before, after, cmd)) = step {
            plan.changes.push(
                Change::new(&self.path, Some(before.into()), Some(after.into()))
                    .with_evidence("/proc/self/mountinfo"),
            );
            // Unmount before the entry goes, mount after it is written.
            if self.state == State::Absent {
                plan.steps.insert(0, cmd);
            } else {
                plan.steps.push(cmd);
            }
            plan.effects.push(Mounts::invalidate(&()));
        }
        Ok(plan)
    }
}

impl Mount {
    fn is_swap(&self) -> bool {
        self.swap
    }

    /// A swap entry is the one with its `src`; without one (removing, as
    /// kubespray does with `name: swap` and `name: none`), every swap
    /// entry whose second field is the path, as Ansible matches them.
    fn is_ours(&self, e: &Entry) -> bool {
        match &self.entry {
            Some(w) if w.is_swap() => e.is_swap() && e.src == w.src,
            None if self.swap => e.is_swap() && e.target == self.path,
            _ => !e.is_swap() && e.target == self.path,
        }
    }

    fn plan_fstab(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let want = match self.state {
            State::Absent => None,
            _ => self.entry.as_ref(),
        };
        fstab::plan_entry(
            facts,
            |e| self.is_ours(e),
            want,
            |e| {
                want.is_some_and(|w| {
                    e.src == w.src
                        && e.fstype == w.fstype
                        && e.opts == w.opts
                        && e.dump == w.dump
                        && e.pass == w.pass
                })
            },
        )
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    rt.check::<Mounts>(&(), Vec::new());
    rt.check::<Mounts>(
        &(),
        vec![
            ("/".into(), "xfs".into()),
            ("/data dir".into(), "ext4".into()),
            ("/data dir".into(), "tmpfs".into()),
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::{FileFact, FileState};
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    const FSTAB: &str = "# static\nUUID=1 / xfs defaults 0 0\n/dev/nvme1n1 /data xfs defaults,noatime 0 0\n/swapfile none swap sw 0 0\n";
    const MOUNTINFO: &str = "22 1 259:2 / / rw,relatime shared:1 - xfs /dev/nvme0n1p2 rw\n90 22 259:5 / /data rw,noatime shared:40 - xfs /dev/nvme1n1 rw\n";

    fn plan_on(
        params: serde_json::Value,
        fstab: &str,
        mountinfo: &str,
    ) -> Result<Plan, ModuleError> {
        let m = build_test(&MOUNT, params).unwrap();
        let mut f = facts_of(&[(&Mounts::key(&()), mountinfo)]);
        f.insert(
            FileFact::key(fstab::PATH),
            FileFact::render(&Some(FileState::written(fstab, 0o644, "root", "root"))),
        );
        let plan = m.plan(&f);
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    fn data(state: &str, opts: &str) -> serde_json::Value {
        json!({"path": "/data", "src": "/dev/nvme1n1", "fstype": "xfs", "opts": opts, "state": state})
    }

    #[test]
    fn mounted_entry_is_a_noop() {
        assert_eq!(
            plan_on(data("mounted", "defaults,noatime"), FSTAB, MOUNTINFO).unwrap(),
            Plan::noop()
        );
    }

    #[test]
    fn new_mount_writes_fstab_then_mounts() {
        let plan = plan_on(
            json!({"path": "/scratch space", "src": "/dev/nvme2n1", "fstype": "ext4", "state": "mounted"}),
            FSTAB,
            MOUNTINFO,
        )
        .unwrap();
        assert_eq!(
            plan.changes[0].after.as_deref(),
            Some("/dev/nvme2n1 /scratch\\040space ext4 defaults 0 0")
        );
        assert!(plan.steps[0].contains("mv -f"));
        assert_eq!(plan.steps[1], "mkdir -p -- '/scratch space' && mount -- '/scratch space' || { echo 'cannot mount /scratch space' >&2; exit 1; }");
    }

    #[test]
    fn remounted_remounts_every_run_with_its_options_and_leaves_fstab() {
        let plan = plan_on(
            json!({"path": "/data", "state": "remounted", "opts": "nodev,nosuid"}),
            FSTAB,
            MOUNTINFO,
        )
        .unwrap();
        assert_eq!(plan.steps.len(), 1, "{plan:?}");
        assert!(plan.steps[0].starts_with("mount -o remount,nodev,nosuid -- /data"));
        assert_eq!(plan.changes[0].after.as_deref(), Some("remounted"));
        let gone = plan_on(
            json!({"path": "/nowhere", "state": "remounted"}),
            FSTAB,
            MOUNTINFO,
        );
        assert!(matches!(gone, Err(ModuleError::Absent(_))), "{gone:?}");
    }

    #[test]
    fn option_drift_remounts_and_unmounted_only_unmounts() {
        let plan = plan_on(data("mounted", "defaults"), FSTAB, MOUNTINFO).unwrap();
        assert_eq!(
            plan.changes[0].before.as_deref(),
            Some("/dev/nvme1n1 /data xfs defaults,noatime 0 0")
        );
        assert!(plan.steps[1].starts_with("mount -o remount -- /data"));
        let plan = plan_on(
            json!({"path": "/data", "state": "unmounted"}),
            FSTAB,
            MOUNTINFO,
        )
        .unwrap();
        assert_eq!(plan.steps.len(), 1);
        assert!(plan.steps[0].starts_with("umount -- /data"));
    }

    #[test]
    fn absent_unmounts_first_and_keeps_swap_lines() {
        let plan = plan_on(
            json!({"path": "/data", "state": "absent"}),
            FSTAB,
            MOUNTINFO,
        )
        .unwrap();
        assert!(plan.steps[0].starts_with("umount"));
        let diff = plan.changes.iter().find_map(|c| c.diff.as_deref()).unwrap();
        assert!(diff.contains("-/dev/nvme1n1") && !diff.contains("-/swapfile"));
    }

    #[test]
    fn swap_entries_are_keyed_by_src() {
        let plan = plan_on(json!({"path": "none", "src": "/swap2", "fstype": "swap", "opts": "sw", "state": "present"}), FSTAB, MOUNTINFO).unwrap();
        let diff = plan.changes[0].diff.as_deref().unwrap();
        assert!(diff.contains("+/swap2 none swap sw 0 0") && !diff.contains("-/swapfile"));
        assert!(build_error(
            &MOUNT,
            json!({"path": "none", "src": "/s", "fstype": "swap", "state": "mounted"})
        )
        .contains("swapfile"));
    }

    #[test]
    fn swap_lines_are_removed_by_their_second_field_without_src() {
        let fstab = "/swapfile none swap sw 0 0\n/dev/sdb2 swap swap defaults 0 0\n/dev/nvme1n1 /data xfs defaults 0 0\n";
        let plan = plan_on(
            json!({"path": "swap", "fstype": "swap", "state": "absent"}),
            fstab,
            MOUNTINFO,
        )
        .unwrap();
        let diff = plan.changes[0].diff.as_deref().unwrap();
        assert!(diff.contains("-/dev/sdb2 swap swap"), "{diff}");
        assert!(
            !diff.contains("-/swapfile") && !diff.contains("-/dev/nvme1n1"),
            "{diff}"
        );
        let absent = json!({"path": "gone", "fstype": "swap", "state": "absent"});
        assert!(plan_on(absent, fstab, MOUNTINFO).unwrap().steps.is_empty());
        assert!(build_error(
            &MOUNT,
            json!({"path": "none", "fstype": "swap", "state": "present"})
        )
        .contains("need 'src'"));
    }

    #[test]
    fn invalid_and_hostile_params() {
        assert!(
            build_error(&MOUNT, json!({"path": "/x", "state": "mounted"}))
                .contains("'src' and 'fstype'")
        );
        assert!(build_error(&MOUNT, json!({"path": "x", "state": "absent"})).contains("absolute"));
        for state in ["absent", "unmounted"] {
            let err = build_error(&MOUNT, json!({"path": "/.", "state": state}));
            assert!(err.contains("refusing to remove or replace '/.'"), "{err}");
        }
        assert!(
            build_error(&MOUNT, json!({"path": "/x", "state": "up"})).contains("not a valid state")
        );
        let plan = plan_on(
            json!({"path": "/mnt/$(reboot)", "src": "a'b", "fstype": "nfs", "state": "mounted"}),
            FSTAB,
            MOUNTINFO,
        )
        .unwrap();
        assert!(
            plan.steps[1].starts_with("mkdir -p -- '/mnt/$(reboot)' && mount -- '/mnt/$(reboot)'"),
            "{}",
            plan.steps[1]
        );
    }
}
