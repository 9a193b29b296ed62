//! `swapfile`: a swap file of a given size, active and in fstab.
//!
//! Safer than the usual recipes: the file is 0600 from its first byte, it is
//! allocated without holes in the way its filesystem accepts (dd by default,
//! fallocate only on XFS ≥ 4.18, NOCOW on btrfs), a full disk or a swapoff
//! that memory cannot absorb is refused before anything is touched, and the
//! fstab line is keyed by the file's path so other swap lines stay.
//!
//! **`swapfile`** (nodeprov's own module): `path`, `size` (`8G`, `512M`), `priority`, `fstab` (default
//! true), `state: present|absent`. The file is `0600` from its first byte,
//! allocated without holes (`dd`; `fallocate` only on XFS with kernel ≥ 4.18;
//! btrfs gets `chattr +C` first), `mkswap`, `swapon`, and one fstab line keyed by
//! the path. It refuses to fill the disk (size + 5% + 256 MiB must be free) and
//! refuses a resize that would `swapoff` more than free memory can absorb. A
//! correct swap file is never recreated; `state: absent` swaps off, removes the
//! line and the file.
//!
//! # Example
//!
//! ```yaml
//! - name: Give the build nodes 16 GiB of swap for nvcc's large links
//!   swapfile:
//!     path: /swapfile
//!     size: 16G
//!     priority: 10
//! ```

mod facts;
#[cfg(test)]
mod tests;

use facts::{
    active_swap, labelled, DiskFree, FileFacts, KernelVersion, MemAvailable, SwapArea, SwapFile,
    Swaps, SWAPFILE_T,
};

use crate::base::shell::{quote, sbin};
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::fstab::{self, Entry};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, ParamValue, Params, Presence};
use crate::remote::probe::Probe;

pub(crate) const SWAPFILE: ModuleSpec = ModuleSpec {
    name: "swapfile",
    source: file!(),
    aliases: &[],
    params: &SwapArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

const MIB: u64 = 1 << 20;
/// Room left on the filesystem after the file is written: a full root
/// filesystem breaks logins and package managers.
const DISK_MARGIN: u64 = 256 * MIB;
/// Memory kept free while swapoff pages everything back in, so that it
/// fails or is refused instead of waking the OOM killer.
const SWAPOFF_MARGIN_KIB: u64 = 256 * 1024;
/// Filesystems whose files the kernel cannot swap to (or, for tmpfs,
/// where swap would only consume the memory it should free).
const UNSUPPORTED_FS: &[&str] = &[
    "tmpfs",
    "ramfs",
    "overlayfs",
    "squashfs",
    "zfs",
    "nfs",
    "cifs",
    "smb2",
    "fuse",
    "fuseblk",
    "9p",
    "virtiofs",
];

module_params! {
    struct SwapArgs {
        /// the swap file, an absolute path
        path: String,
        /// its size in whole MiB, such as 8G or 512M
        size: Option<Size>,
        /// swap priority, -1 to 32767
        priority: Option<i64>,
        /// keep a line for it in /etc/fstab
        fstab: bool = true,
        /// whether the swap file is there and active
        state: Presence = Presence::Present,
    }
}

/// Bytes, from `8G`, `512M`, `1024K`, `8GiB` or a number of bytes.
struct Size(u64);

impl ParamValue for Option<Size> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        p.str(key)?
            .map(|s| {
                parse_size(&s).map(Size).ok_or_else(|| {
                    p.error(
                        key,
                        format!(
                            "'{s}' is not a size in whole MiB (like 8G, 512M, 1024K or 1048576)"
                        ),
                    )
                })
            })
            .transpose()
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(Self::read(p, key)?.or(default))
    }
}

struct Swapfile {
    path: String,
    /// Bytes; `None` only for state=absent.
    size: Option<u64>,
    priority: Option<i64>,
    fstab: bool,
    present: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = SwapArgs::read(p)?;
    let path = a.path;
    if !path.starts_with('/') || path.ends_with('/') {
        return Err(p.error("path", format!("'{path}' must be an absolute file path")));
    }
    p.destructive_path("path", &path)?;
    let present = a.state == Presence::Present;
    if present && a.size.is_none() {
        return Err(p.error("size", "state=present needs 'size'"));
    }
    if a.priority.is_some_and(|n| !(-1..=32767).contains(&n)) {
        return Err(p.error("priority", "priority must be between -1 and 32767"));
    }
    Ok(Box::new(Swapfile {
        path,
        size: a.size.map(|s| s.0),
        priority: a.priority,
        fstab: a.fstab,
        present,
    }))
}

/// `8G`, `512M`, `1024K`, `8GiB` or bytes; swap is sized in whole MiB so
/// that dd can write it in 1 MiB blocks.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().ok()?;
    let unit = s[digits..].trim().to_ascii_uppercase();
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    let bytes = n.checked_mul(1 << shift)?;
    (bytes >= MIB && bytes.is_multiple_of(MIB)).then_some(bytes)
}

fn human(bytes: u64) -> String {
    [(40, "T"), (30, "G"), (20, "M"), (10, "K")]
        .iter()
        .find(|(shift, _)| bytes.is_multiple_of(1u64 << shift))
        .map_or(bytes.to_string(), |(shift, u)| {
            format!("{}{u}", bytes >> shift)
        })
}

fn swapoff_need_kib(used_kib: u64) -> u64 {
    used_kib + used_kib / 4 + SWAPOFF_MARGIN_KIB
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Alloc {
    Dd,
    Fallocate,
    /// btrfs: NOCOW set on the empty file, then written with dd.
    NocowDd,
}

/// How to allocate a file that swapon accepts on this filesystem: fallocate
/// leaves unwritten extents that several filesystems report as holes.
fn alloc_method(fstype: &str, kernel: Option<(u32, u32)>) -> Result<Alloc, ModuleError> {
    if UNSUPPORTED_FS.contains(&fstype) {
        return Err(ModuleError::Unsupported(format!(
            "cannot put a swap file on {fstype}: the kernel does not swap to files there"
        )));
    }
    match fstype {
        "btrfs" if kernel.is_some_and(|k| k < (5, 0)) => Err(ModuleError::Unsupported(
            "btrfs supports swap files only from Linux 5.0".into(),
        )),
        "btrfs" => Ok(Alloc::NocowDd),
        "xfs" if kernel.is_some_and(|k| k >= (4, 18)) => Ok(Alloc::Fallocate),
        _ => Ok(Alloc::Dd),
    }
}

impl Module for Swapfile {
    fn probes(&self) -> Vec<Probe> {
        vec![
            SwapFile::probe(&self.path),
            DiskFree::probe(self.dir()),
            Swaps::probe(&()),
            MemAvailable::probe(&()),
            KernelVersion::probe(&()),
            fstab::probe(),
        ]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let file = SwapFile::read(facts, &self.path)?;
        let swaps = Swaps::read(facts, &())?;
        let active = active_swap(&swaps, &[&self.path, &file.real]);
        let mut plan = Plan::noop();
        let (after, toggled) = if self.present {
            self.plan_present(facts, &file, active, &mut plan)?
        } else {
            self.plan_absent(facts, &file, active, &mut plan)?
        };
        self.plan_fstab(facts, &mut plan)?;
        if plan.steps.is_empty() {
            return Ok(plan);
        }
        plan.effects.push(SwapFile::predict(&self.path, &after));
        if toggled {
            let predicted = self.predict_swaps(&swaps, active);
            plan.effects.push(Swaps::predict(&(), &predicted));
            plan.effects.push(MemAvailable::invalidate(&()));
            plan.effects.push(DiskFree::invalidate(self.dir()));
        }
        Ok(plan)
    }
}

impl Swapfile {
    fn dir(&self) -> &str {
        match self.path.rfind('/') {
            Some(0) | None => "/",
            Some(i) => &self.path[..i],
        }
    }

    fn want_size(&self) -> u64 {
        self.size.expect("present has a size")
    }

    fn var(&self) -> String {
        format!("p={}\n", quote(&self.path))
    }

    /// Plans the file and its activation; returns the file as it will be
    /// and whether swap is turned off or on.
    fn plan_present(
        &self,
        facts: &Facts,
        file: &FileFacts,
        active: Option<&SwapArea>,
        plan: &mut Plan,
    ) -> Result<(FileFacts, bool), ModuleError> {
        let Some(fstype) = file.fstype.as_deref() else {
            return Err(ModuleError::Absent(format!(
                "{}: folder {} does not exist",
                self.path,
                self.dir()
            )));
        };
        if !matches!(file.kind.as_str(), "file" | "absent") {
            return Err(ModuleError::Refused(format!(
                "{} is a {} rather than a regular file; refusing to use it as a swap file",
                self.path,
                if file.kind == "link" {
                    "symlink"
                } else {
                    "special file"
                }
            )));
        }
        let mut label = self.label_steps(file, plan);
        let want = self.want_size();
        let subject = format!("swap {}", self.path);
        let describe_want = match self.priority {
            Some(n) => format!("{} active, priority {n}", human(want)),
            None => format!("{} active", human(want)),
        };
        let btrfs_cow = fstype == "btrfs" && !file.nocow && active.is_none();
        if !file.exists() || file.size != want || file.has_holes() || btrfs_cow {
            let before = self.describe(file, active);
            let alloc = alloc_method(fstype, KernelVersion::read(facts, &())?)?;
            self.check_disk(facts, file)?;
            if let Some(a) = active {
                self.check_memory(facts, a)?;
                plan.steps.push(self.swapoff_step(a));
            }
            plan.steps.push(self.create_step(alloc));
            plan.steps.push(self.mkswap_step());
            plan.steps.append(&mut label);
            plan.steps.push(self.swapon_step());
            plan.changes.push(
                Change::new(subject, Some(before), Some(describe_want))
                    .with_evidence(format!("stat {}; /proc/swaps", self.path)),
            );
            let after = FileFacts {
                kind: "file".into(),
                mode: 0o600,
                size: want,
                allocated: want,
                signature: Some(true),
                nocow: alloc == Alloc::NocowDd,
                selinux: labelled(file),
                ..file.clone()
            };
            return Ok((after, true));
        }
        if file.mode != 0o600 {
            plan.changes.push(Change::new(
                format!("{} mode", self.path),
                Some(format!("{:04o}", file.mode)),
                Some("0600".into()),
            ));
            plan.steps
                .push(format!("{}chmod 600 -- \"$p\" || exit 1", self.var()));
        }
        let toggled = match active {
            None => {
                let mut before = self.describe(file, None);
                if file.signature != Some(true) {
                    before.push_str(", no swap signature");
                    plan.steps.push(self.mkswap_step());
                }
                plan.steps.append(&mut label);
                plan.steps.push(self.swapon_step());
                plan.changes
                    .push(Change::new(subject, Some(before), Some(describe_want)));
                true
            }
            Some(a) if self.priority.is_some_and(|p| p != a.priority) => {
                self.check_memory(facts, a)?;
                plan.steps.push(self.swapoff_step(a));
                plan.steps.append(&mut label);
                plan.steps.push(self.swapon_step());
                plan.changes.push(
                    Change::new(
                        format!("{subject} priority"),
                        Some(a.priority.to_string()),
                        self.priority.map(|p| p.to_string()),
                    )
                    .with_evidence("/proc/swaps"),
                );
                true
            }
            Some(_) => false,
        };
        // An active swap file keeps working; its label matters at the next swapon.
        plan.steps.append(&mut label);
        let after = FileFacts {
            mode: 0o600,
            signature: Some(true),
            selinux: labelled(file),
            ..file.clone()
        };
        Ok((after, toggled))
    }

    fn plan_absent(
        &self,
        facts: &Facts,
        file: &FileFacts,
        active: Option<&SwapArea>,
        plan: &mut Plan,
    ) -> Result<(FileFacts, bool), ModuleError> {
        if file.kind == "other" {
            return Err(ModuleError::Refused(format!(
                "{} is not a regular file; refusing to remove it",
                self.path
            )));
        }
        if let Some(a) = active {
            self.check_memory(facts, a)?;
            plan.steps.push(self.swapoff_step(a));
        }
        if file.exists() {
            plan.steps
                .push(format!("{}rm -f -- \"$p\" || exit 1", self.var()));
        }
        if active.is_some() || file.exists() {
            plan.changes.push(Change::new(
                format!("swap {}", self.path),
                Some(self.describe(file, active)),
                Some("absent".into()),
            ));
        }
        let after = FileFacts {
            kind: "absent".into(),
            ..file.clone()
        };
        Ok((after, active.is_some()))
    }

    /// Steps that give the file the `swapfile_t` type, recorded in the
    /// policy with `semanage fcontext` where it exists (else `chcon`, which a
    /// relabel undoes: said in a note); their changes go into `plan`.
    fn label_steps(&self, file: &FileFacts, plan: &mut Plan) -> Vec<String> {
        let Some(l) = &file.selinux else {
            return Vec::new();
        };
        let mut steps = Vec::new();
        let policy_ok = l.policy_type.as_deref() == Some(SWAPFILE_T);
        if l.semanage && !policy_ok {
            plan.changes.push(
                Change::new(
                    format!("{} SELinux policy type", self.path),
                    l.policy_type.clone(),
                    Some(SWAPFILE_T.into()),
                )
                .with_evidence(format!("matchpathcon {}", self.path)),
            );
            let regex = quote(&regex::escape(&self.path));
            let semanage = sbin("semanage");
            steps.push(format!(
                "{semanage} fcontext -a -t {SWAPFILE_T} {regex} 2>/dev/null || {semanage} fcontext -m -t {SWAPFILE_T} {regex} || {{ echo \"semanage fcontext {} failed\" >&2; exit 1; }}",
                self.path
            ));
        }
        let file_ok = l.file_type.as_deref() == Some(SWAPFILE_T);
        if !file_ok && file.exists() {
            plan.changes.push(
                Change::new(
                    format!("{} SELinux type", self.path),
                    l.file_type.clone(),
                    Some(SWAPFILE_T.into()),
                )
                .with_evidence(format!("ls -Z {}", self.path)),
            );
        }
        if !file_ok || !steps.is_empty() {
            steps.push(match l.semanage {
                true => format!(
                    "{}{} -F -- \"$p\" || exit 1",
                    self.var(),
                    sbin("restorecon")
                ),
                false => format!("{}chcon -t {SWAPFILE_T} -- \"$p\" || exit 1", self.var()),
            });
        }
        if !l.semanage && (!file_ok || !policy_ok) {
            plan.notes.push(format!(
                "semanage is not installed: {} is labelled with chcon, which a relabel undoes (install policycoreutils-python-utils)",
                self.path
            ));
        }
        steps
    }

    /// The current state in a few words: `absent`, `4G active`, `8G inactive, holes`.
    fn describe(&self, file: &FileFacts, active: Option<&SwapArea>) -> String {
        if !file.exists() {
            return if active.is_some() {
                "deleted but still active".into()
            } else {
                "absent".into()
            };
        }
        let mut s = format!(
            "{} {}",
            human(file.size),
            if active.is_some() {
                "active"
            } else {
                "inactive"
            }
        );
        if file.has_holes() {
            s.push_str(", with holes");
        }
        if file.fstype.as_deref() == Some("btrfs") && !file.nocow {
            s.push_str(", copy-on-write");
        }
        s
    }

    /// Refuses to fill the filesystem; an existing file's blocks are freed first.
    fn check_disk(&self, facts: &Facts, file: &FileFacts) -> Result<(), ModuleError> {
        let free_kib = DiskFree::read(facts, self.dir())?;
        let want = self.want_size();
        let free = free_kib * 1024 + file.allocated;
        let need = want + want / 20 + DISK_MARGIN;
        if free < need {
            return Err(ModuleError::Refused(format!(
                "not enough disk for swap file {}: {} MiB free on {}, need {} MiB ({} plus 5% and 256 MiB to spare)",
                self.path,
                free / MIB,
                self.dir(),
                need.div_ceil(MIB),
                human(want)
            )));
        }
        Ok(())
    }

    /// Refuses a swapoff whose swapped-out pages would not fit in memory.
    fn check_memory(&self, facts: &Facts, a: &SwapArea) -> Result<(), ModuleError> {
        let avail = MemAvailable::read(facts, &())?
            .ok_or_else(|| fact::bad(MemAvailable::key(&()), "no MemAvailable"))?;
        let need = swapoff_need_kib(a.used_kib);
        if avail < need {
            return Err(ModuleError::Refused(format!(
                "refusing to swapoff {}: {} MiB are swapped out and only {} MiB of memory are available (need {} MiB); free memory or add another swap file first",
                self.path,
                a.used_kib / 1024,
                avail / 1024,
                need / 1024
            )));
        }
        Ok(())
    }

    /// swapoff, re-checking memory on the host at the moment it runs.
    fn swapoff_step(&self, a: &SwapArea) -> String {
        format!(
            r#"{var}used=$(f={name} awk '$1 == ENVIRON["f"] {{ print $4 }}' /proc/swaps)
if [ -n "$used" ]; then
  avail=$(awk '/^MemAvailable:/ {{ print $2 }}' /proc/meminfo)
  need=$(( used + used / 4 + {margin} ))
  [ "${{avail:-0}}" -ge "$need" ] || {{ echo "refusing to swapoff $p: $used KiB swapped out, only $avail KiB of memory available (need $need KiB)" >&2; exit 1; }}
  {swapoff} -- "$p" || {{ echo "swapoff $p failed" >&2; exit 1; }}
fi"#,
            var = self.var(),
            name = quote(&a.raw_name),
            margin = SWAPOFF_MARGIN_KIB,
            swapoff = sbin("swapoff"),
        )
    }

    /// A fresh file, 0600 from its first byte, fully allocated.
    fn create_step(&self, alloc: Alloc) -> String {
        let want = self.want_size();
        let nocow = if alloc == Alloc::NocowDd {
            "  chattr +C -- \"$p\" || { echo \"cannot set NOCOW (chattr +C) on $p: btrfs swap files must not be copy-on-write\" >&2; exit 1; }\n"
        } else {
            ""
        };
        let fill = match alloc {
            Alloc::Fallocate => format!("fallocate -l {want} -- \"$p\" || exit 1"),
            Alloc::Dd | Alloc::NocowDd => format!(
                "err=$(dd if=/dev/zero of=\"$p\" bs=1M count={} 2>&1) || {{ printf '%s\\n' \"$err\" >&2; exit 1; }}",
                want / MIB
            ),
        };
        format!(
            "{var}( umask 077\n  rm -f -- \"$p\" && : > \"$p\" || exit 1\n{nocow}  {fill}\n) || {{ rm -f -- \"$p\"; echo \"cannot allocate {size} for swap file $p\" >&2; exit 1; }}",
            var = self.var(),
            size = human(want),
        )
    }

    fn mkswap_step(&self) -> String {
        format!(
            "{}{} -- \"$p\" >/dev/null || {{ echo \"mkswap $p failed\" >&2; exit 1; }}",
            self.var(),
            sbin("mkswap")
        )
    }

    fn swapon_step(&self) -> String {
        let prio = self
            .priority
            .map(|n| format!(" -p {n}"))
            .unwrap_or_default();
        format!(
            "{}{}{prio} -- \"$p\" || {{ echo \"swapon $p failed\" >&2; exit 1; }}",
            self.var(),
            sbin("swapon")
        )
    }

    fn fstab_entry(&self) -> Entry {
        let opts = match self.priority {
            Some(n) => format!("sw,pri={n}"),
            None => "sw".into(),
        };
        Entry {
            src: self.path.clone(),
            target: "none".into(),
            fstype: "swap".into(),
            opts,
            dump: "0".into(),
            pass: "0".into(),
        }
    }

    /// One line for this file, any equivalent spelling accepted; with
    /// `fstab: false` or `state: absent`, none.
    fn plan_fstab(&self, facts: &Facts, plan: &mut Plan) -> Result<(), ModuleError> {
        let want = (self.present && self.fstab).then(|| self.fstab_entry());
        let pri = self.priority.map(|n| n.to_string());
        plan.absorb(fstab::plan_entry(
            facts,
            |e| e.is_swap() && e.src == self.path,
            want.as_ref(),
            |e| e.opt("pri") == pri.as_deref(),
        )?);
        Ok(())
    }

    /// /proc/swaps as it will read once swap was turned off or on.
    fn predict_swaps(&self, swaps: &[SwapArea], active: Option<&SwapArea>) -> Vec<SwapArea> {
        let mut areas: Vec<SwapArea> = swaps
            .iter()
            .filter(|a| active.is_none_or(|old| old.raw_name != a.raw_name))
            .cloned()
            .collect();
        if self.present {
            areas.push(SwapArea {
                raw_name: fstab::escape(&self.path),
                kind: "file".into(),
                size_kib: self.want_size() / 1024 - 4,
                used_kib: 0,
                priority: self.priority.unwrap_or(-2),
            });
        }
        areas
    }
}

#[cfg(test)]
pub(crate) use facts::fact_samples;
