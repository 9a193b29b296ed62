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

use crate::base::shell::{quote, sbin, unescape_octal};
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::fstab::{self, Entry};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, ParamValue, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const SWAPFILE: ModuleSpec = ModuleSpec {
    name: "swapfile",
    source: file!(),
    aliases: &[],
    params: &SwapArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
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

/// The active swap areas, as /proc/swaps lists them.
struct Swaps;

impl Fact for Swaps {
    type Query = ();
    type Value = Vec<SwapArea>;

    fn key(_: &()) -> String {
        "proc:swaps".into()
    }

    fn script(_: &()) -> String {
        "cat /proc/swaps".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Vec<SwapArea>, ModuleError> {
        Ok(r.stdout
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let [name, kind, size, used, prio] = f[..] else {
                    return None;
                };
                Some(SwapArea {
                    raw_name: name.to_string(),
                    kind: kind.to_string(),
                    size_kib: size.parse().unwrap_or(0),
                    used_kib: used.parse().unwrap_or(0),
                    priority: prio.parse().unwrap_or(0),
                })
            })
            .collect())
    }

    fn render(areas: &Vec<SwapArea>) -> ProbeResult {
        let mut s = String::from("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        for a in areas {
            s.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\n",
                a.raw_name, a.kind, a.size_kib, a.used_kib, a.priority
            ));
        }
        ProbeResult::ok(s)
    }
}

/// `MemAvailable` in KiB, when the kernel reports it.
struct MemAvailable;

impl Fact for MemAvailable {
    type Query = ();
    type Value = Option<u64>;

    fn key(_: &()) -> String {
        "proc:meminfo".into()
    }

    fn script(_: &()) -> String {
        "grep -E '^(MemAvailable|SwapTotal|SwapFree):' /proc/meminfo".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Option<u64>, ModuleError> {
        Ok(r.stdout.lines().find_map(|l| {
            l.strip_prefix("MemAvailable:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        }))
    }

    fn render(kib: &Option<u64>) -> ProbeResult {
        ProbeResult::ok(kib.map_or(String::new(), |k| format!("MemAvailable: {k} kB\n")))
    }
}

/// The kernel's `(major, minor)`, from `uname -r` (`4.18.0-513.el8.x86_64`).
struct KernelVersion;

impl Fact for KernelVersion {
    type Query = ();
    type Value = Option<(u32, u32)>;

    fn key(_: &()) -> String {
        "kernel:release".into()
    }

    fn script(_: &()) -> String {
        "uname -r".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Option<(u32, u32)>, ModuleError> {
        let mut parts = r.stdout.trim().split(['.', '-']);
        let mut next = || parts.next()?.parse().ok();
        Ok(next().zip(next()))
    }

    fn render(v: &Option<(u32, u32)>) -> ProbeResult {
        ProbeResult::ok(v.map_or(String::new(), |(major, minor)| format!("{major}.{minor}\n")))
    }
}

/// Free KiB on the filesystem holding a folder.
struct DiskFree;

impl Fact for DiskFree {
    type Query = str;
    type Value = u64;

    fn key(dir: &str) -> String {
        format!("df:{dir}")
    }

    fn script(dir: &str) -> String {
        format!("df -Pk -- {} | awk 'NR == 2 {{ print $4 }}'", quote(dir))
    }

    fn parse(dir: &str, r: &ProbeResult) -> Result<u64, ModuleError> {
        r.stdout.trim().parse().map_err(|_| {
            fact::bad(
                Self::key(dir),
                format!("not a number of KiB: {}{}", r.stdout, r.stderr),
            )
        })
    }

    fn render(kib: &u64) -> ProbeResult {
        ProbeResult::ok(format!("{kib}\n"))
    }
}

/// What the module needs to know about the swap file's path, as
/// `key=value` lines; never reads more than the 10-byte swap signature.
struct SwapFile;

impl Fact for SwapFile {
    type Query = str;
    type Value = FileFacts;

    fn key(path: &str) -> String {
        format!("swapfile:{path}")
    }

    fn script(path: &str) -> String {
        format!(
            r#"p={p}; d=$(dirname -- "$p")
if [ -d "$d" ]; then echo "fstype=$(stat -f -c %T -- "$d")"; else echo parent=absent; fi
echo "real=$(readlink -f -- "$p")"
if [ -L "$p" ]; then echo type=link
elif [ -f "$p" ]; then
  echo type=file
  set -- $(stat -c '%a %s %b %B' -- "$p")
  echo "mode=$1"; echo "size=$2"; echo "allocated=$(( $3 * $4 ))"
  if [ ! -r "$p" ]; then echo signature=unknown
  elif [ "$(dd if="$p" bs=1 skip=$(( $(getconf PAGESIZE) - 10 )) count=10 2>/dev/null)" = SWAPSPACE2 ]; then echo signature=yes
  else echo signature=no; fi
  echo "attrs=$(lsattr -d -- "$p" 2>/dev/null | cut -d' ' -f1)"
elif [ -e "$p" ]; then echo type=other
else echo type=absent; fi
if [ -e /sys/fs/selinux/enforce ]; then
  echo selinux=on
  command -v semanage >/dev/null 2>&1 && echo semanage=yes
  if [ -e "$p" ]; then c=$(stat -c %C -- "$p" 2>/dev/null); c=${{c#*:}}; c=${{c#*:}}; echo "selinux_type=${{c%%:*}}"; fi
  if command -v matchpathcon >/dev/null 2>&1; then c=$(matchpathcon -n -- "$p" 2>/dev/null); c=${{c#*:}}; c=${{c#*:}}; echo "selinux_policy=${{c%%:*}}"; fi
fi"#,
            p = quote(path)
        )
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<FileFacts, ModuleError> {
        let get = |k: &str| {
            r.stdout
                .lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
        };
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<u64>().ok());
        let kind = get("type").ok_or_else(|| {
            fact::bad(
                Self::key(path),
                format!("no file type in: {}{}", r.stdout, r.stderr),
            )
        })?;
        Ok(FileFacts {
            fstype: get("fstype").map(str::to_string),
            real: get("real").unwrap_or(path).to_string(),
            kind: kind.to_string(),
            mode: get("mode")
                .and_then(|m| u32::from_str_radix(m, 8).ok())
                .unwrap_or(0),
            size: num("size").unwrap_or(0),
            allocated: num("allocated").unwrap_or(0),
            signature: match get("signature") {
                Some("yes") => Some(true),
                Some("no") => Some(false),
                _ => None,
            },
            nocow: get("attrs").is_some_and(|a| a.contains('C')),
            selinux: (get("selinux") == Some("on")).then(|| Selinux {
                file_type: get("selinux_type").map(str::to_string),
                policy_type: get("selinux_policy").map(str::to_string),
                semanage: get("semanage") == Some("yes"),
            }),
        })
    }

    fn render(f: &FileFacts) -> ProbeResult {
        let mut s = match &f.fstype {
            Some(t) => format!("fstype={t}\n"),
            None => "parent=absent\n".into(),
        };
        s.push_str(&format!("real={}\ntype={}\n", f.real, f.kind));
        if f.kind == "file" {
            let sig = match f.signature {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown",
            };
            let attrs = if f.nocow { "---------------C--" } else { "" };
            s.push_str(&format!(
                "mode={:o}\nsize={}\nallocated={}\nsignature={sig}\nattrs={attrs}\n",
                f.mode, f.size, f.allocated
            ));
        }
        if let Some(l) = &f.selinux {
            s.push_str("selinux=on\n");
            if l.semanage {
                s.push_str("semanage=yes\n");
            }
            for (k, v) in [
                ("selinux_type", &l.file_type),
                ("selinux_policy", &l.policy_type),
            ] {
                if let Some(v) = v {
                    s.push_str(&format!("{k}={v}\n"));
                }
            }
        }
        ProbeResult::ok(s)
    }
}

#[derive(Clone, Debug, PartialEq)]
struct FileFacts {
    /// `None` when the parent folder does not exist.
    fstype: Option<String>,
    real: String,
    kind: String,
    mode: u32,
    size: u64,
    allocated: u64,
    signature: Option<bool>,
    nocow: bool,
    /// `None` where SELinux is off.
    selinux: Option<Selinux>,
}

/// A swap file's SELinux labelling: `swapon` is denied a file whose type is
/// not `swapfile_t`, and only a type the policy itself assigns to the path
/// survives a relabel.
#[derive(Clone, Debug, PartialEq)]
struct Selinux {
    /// The file's type now; `None` when it does not exist.
    file_type: Option<String>,
    /// The type the policy gives the path (`matchpathcon`), if known.
    policy_type: Option<String>,
    /// Whether `semanage` can record a type in the policy.
    semanage: bool,
}

const SWAPFILE_T: &str = "swapfile_t";

/// The labelling a swap file has once the label steps ran.
fn labelled(file: &FileFacts) -> Option<Selinux> {
    file.selinux.as_ref().map(|l| Selinux {
        file_type: Some(SWAPFILE_T.into()),
        policy_type: match l.semanage {
            true => Some(SWAPFILE_T.into()),
            false => l.policy_type.clone(),
        },
        semanage: l.semanage,
    })
}

impl FileFacts {
    fn exists(&self) -> bool {
        self.kind != "absent"
    }

    fn has_holes(&self) -> bool {
        self.allocated < self.size
    }
}

/// One line of /proc/swaps.
#[derive(Clone, Debug, PartialEq)]
struct SwapArea {
    /// As the kernel prints it (octal escapes), for matching in steps.
    raw_name: String,
    kind: String,
    size_kib: u64,
    used_kib: u64,
    priority: i64,
}

/// The area of a file known by any of `names`.
fn active_swap<'a>(areas: &'a [SwapArea], names: &[&str]) -> Option<&'a SwapArea> {
    areas
        .iter()
        .find(|a| names.contains(&unescape_octal(&a.raw_name).as_str()))
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

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let area = |name: &str, kind: &str, used_kib, priority| SwapArea {
        raw_name: name.into(),
        kind: kind.into(),
        size_kib: 8 * 1024 * 1024 - 4,
        used_kib,
        priority,
    };
    rt.check::<Swaps>(&(), Vec::new());
    rt.check::<Swaps>(
        &(),
        vec![
            area("/swap\\040file", "file", 0, -2),
            area("/dev/nvme0n1p3", "partition", 4096, 10),
        ],
    );
    rt.check::<MemAvailable>(&(), None);
    rt.check::<MemAvailable>(&(), Some(120 * 1024 * 1024));
    rt.check::<KernelVersion>(&(), None);
    rt.check::<KernelVersion>(&(), Some((4, 18)));
    rt.check::<DiskFree>("/", 0);
    rt.check::<DiskFree>("/", 104_857_600);
    let absent = FileFacts {
        fstype: Some("xfs".into()),
        real: "/swapfile".into(),
        kind: "absent".into(),
        mode: 0,
        size: 0,
        allocated: 0,
        signature: None,
        nocow: false,
        selinux: None,
    };
    let file = FileFacts {
        fstype: Some("btrfs".into()),
        kind: "file".into(),
        mode: 0o600,
        size: 1 << 30,
        allocated: 1 << 29,
        signature: Some(true),
        nocow: true,
        ..absent.clone()
    };
    for v in [
        absent.clone(),
        FileFacts {
            fstype: None,
            ..absent.clone()
        },
        FileFacts {
            signature: None,
            nocow: false,
            ..file.clone()
        },
        FileFacts {
            signature: Some(false),
            ..file.clone()
        },
        FileFacts {
            selinux: Some(Selinux {
                file_type: Some("default_t".into()),
                policy_type: Some(SWAPFILE_T.into()),
                semanage: true,
            }),
            ..file.clone()
        },
        FileFacts {
            selinux: Some(Selinux {
                file_type: None,
                policy_type: None,
                semanage: false,
            }),
            ..absent.clone()
        },
        file,
    ] {
        rt.check::<SwapFile>("/swapfile", v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::{FileFact, FileState};
    use crate::modules::kit::plan::Effect;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    const SWAPS_EMPTY: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
    const GIB: u64 = 1 << 30;

    fn file(size: u64, allocated: u64, mode: u32, sig: bool) -> String {
        format!(
            "fstype=ext2/ext3\nreal=/swapfile\ntype=file\nmode={mode:o}\nsize={size}\nallocated={allocated}\nsignature={}\nattrs=--------------e-------\n",
            if sig { "yes" } else { "no" }
        )
    }

    const ABSENT: &str = "fstype=ext2/ext3\nreal=/swapfile\ntype=absent\n";

    fn swaps_with(size_gib: u64, used_kib: u64, prio: i64) -> String {
        format!(
            "{SWAPS_EMPTY}/swapfile                               file\t\t{}\t\t{used_kib}\t\t{prio}\n",
            size_gib * 1024 * 1024 - 4
        )
    }

    const FSTAB_OK: &str = "UUID=abc / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n";
    const FSTAB_NONE: &str = "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n";

    struct Host {
        file: String,
        swaps: String,
        fstab: String,
        free_kib: u64,
        mem_avail_kib: u64,
        kernel: &'static str,
    }

    impl Default for Host {
        fn default() -> Self {
            Host {
                file: file(8 * GIB, 8 * GIB, 0o600, true),
                swaps: swaps_with(8, 0, -2),
                fstab: FSTAB_OK.into(),
                free_kib: 100 * 1024 * 1024,
                mem_avail_kib: 120 * 1024 * 1024,
                kernel: "6.18.44-fc-v657-gpu",
            }
        }
    }

    fn plan(params: serde_json::Value, h: &Host) -> Result<Plan, ModuleError> {
        let m = build_test(&SWAPFILE, params).unwrap();
        let meminfo = format!(
            "MemTotal:       131072000 kB\nMemAvailable:   {} kB\nSwapFree:        0 kB\n",
            h.mem_avail_kib
        );
        let mut f = facts_of(&[
            ("swapfile:/swapfile", &h.file),
            ("df:/", &format!("{}\n", h.free_kib)),
            (&Swaps::key(&()), &h.swaps),
            (&MemAvailable::key(&()), &meminfo),
            (&KernelVersion::key(&()), h.kernel),
        ]);
        f.insert(
            FileFact::key(fstab::PATH),
            FileFact::render(&Some(FileState::written(&h.fstab, 0o644, "root", "root"))),
        );
        let plan = m.plan(&f);
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    fn p8() -> serde_json::Value {
        json!({"path": "/swapfile", "size": "8G"})
    }

    fn summary(plan: &Plan) -> Vec<String> {
        plan.changes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn sizes_parse_in_whole_mib() {
        assert_eq!(parse_size("8G"), Some(8 * GIB));
        assert_eq!(parse_size("512M"), Some(512 * MIB));
        assert_eq!(parse_size("1024K"), Some(MIB));
        assert_eq!(parse_size("8GiB"), Some(8 * GIB));
        assert_eq!(parse_size("1048576"), Some(MIB));
        assert_eq!(parse_size("100K"), None);
        assert_eq!(parse_size("8X"), None);
        assert_eq!(human(8 * GIB), "8G");
        assert_eq!(human(1536 * MIB), "1536M");
    }

    #[test]
    fn invalid_params_are_rejected() {
        assert!(build_error(&SWAPFILE, json!({"path": "/swapfile"})).contains("needs 'size'"));
        assert!(
            build_error(&SWAPFILE, json!({"path": "swapfile", "size": "1G"})).contains("absolute")
        );
        assert!(build_error(&SWAPFILE, json!({"path": "/s", "size": "1.5G"})).contains("size"));
        assert!(build_error(
            &SWAPFILE,
            json!({"path": "/s", "size": "1G", "priority": 40000})
        )
        .contains("priority"));
        assert!(build_error(
            &SWAPFILE,
            json!({"path": "/s", "size": "1G", "state": "gone"})
        )
        .contains("state"));
        assert!(build_test(&SWAPFILE, json!({"path": "/s", "state": "absent"})).is_ok());
        let err = build_error(&SWAPFILE, json!({"path": "/tmp/..", "state": "absent"}));
        assert!(
            err.contains("refusing to remove or replace '/tmp/..'"),
            "{err}"
        );
    }

    #[test]
    fn correct_swap_is_a_noop() {
        assert_eq!(plan(p8(), &Host::default()).unwrap(), Plan::noop());
        // An equivalent fstab spelling is not drift.
        let h = Host {
            fstab: "/swapfile\tnone  swap defaults,nofail 0 0\n".into(),
            ..Host::default()
        };
        assert_eq!(plan(p8(), &h).unwrap(), Plan::noop());
    }

    #[test]
    fn missing_swap_is_created_safely_and_predicted() {
        let h = Host {
            file: ABSENT.into(),
            swaps: SWAPS_EMPTY.into(),
            fstab: FSTAB_NONE.into(),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert_eq!(
            summary(&plan),
            [
                "swap /swapfile: absent → 8G active",
                "/etc/fstab: no line → /swapfile none swap sw 0 0"
            ]
        );
        let create = &plan.steps[0];
        assert!(
            create.contains("( umask 077\n  rm -f -- \"$p\" && : > \"$p\""),
            "{create}"
        );
        assert!(
            create.contains("dd if=/dev/zero of=\"$p\" bs=1M count=8192"),
            "{create}"
        );
        assert!(!create.contains("fallocate") && !create.contains("chattr"));
        assert!(plan.steps[1].contains("mkswap") && plan.steps[2].contains("swapon"));
        assert!(plan.steps[3].contains("mv -f"), "fstab written atomically");
        let Some(Effect::Predict(_, swaps)) = plan
            .effects
            .iter()
            .find(|e| matches!(e, Effect::Predict(k, _) if *k == Swaps::key(&())))
        else {
            panic!("no /proc/swaps prediction")
        };
        let swaps = Swaps::parse(&(), swaps).unwrap();
        assert!(active_swap(&swaps, &["/swapfile"]).is_some());
    }

    #[test]
    fn prediction_replans_to_a_noop() {
        let h = Host {
            file: ABSENT.into(),
            swaps: SWAPS_EMPTY.into(),
            fstab: FSTAB_NONE.into(),
            ..Host::default()
        };
        let first = plan(p8(), &h).unwrap();
        let get = |key: &str| {
            first.effects.iter().find_map(|e| match e {
                Effect::Predict(k, r) if k == key => Some(r.stdout.clone()),
                _ => None,
            })
        };
        let fstab_after = FileFact::parse(
            fstab::PATH,
            &ProbeResult::ok(get("file:/etc/fstab").unwrap()),
        )
        .unwrap()
        .unwrap()
        .content
        .unwrap();
        let h = Host {
            file: get("swapfile:/swapfile").unwrap(),
            swaps: get(&Swaps::key(&())).unwrap(),
            fstab: fstab_after,
            ..h
        };
        assert_eq!(summary(&plan(p8(), &h).unwrap()), Vec::<String>::new());
    }

    const ENFORCING: &str = "selinux=on\nsemanage=yes\n";

    #[test]
    fn selinux_label_is_recorded_in_the_policy_before_swapon_and_predicted() {
        let h = Host {
            file: ABSENT.to_string() + ENFORCING + "selinux_policy=default_t\n",
            swaps: SWAPS_EMPTY.into(),
            ..Host::default()
        };
        let first = plan(p8(), &h).unwrap();
        assert_eq!(
            summary(&first),
            [
                "/swapfile SELinux policy type: default_t → swapfile_t",
                "swap /swapfile: absent → 8G active"
            ]
        );
        let at = |what: &str| first.steps.iter().position(|s| s.contains(what)).unwrap();
        assert!(at("mkswap") < at("fcontext -a -t swapfile_t /swapfile"));
        assert!(at("fcontext") < at("restorecon") && at("restorecon") < at("swapon"));
        let after = first
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::Predict(k, r) if k == "swapfile:/swapfile" => Some(r.stdout.clone()),
                _ => None,
            })
            .unwrap();
        let h = Host {
            file: after,
            ..Host::default()
        };
        assert_eq!(summary(&plan(p8(), &h).unwrap()), Vec::<String>::new());
    }

    #[test]
    fn a_wrong_label_on_an_active_swap_file_is_drift_and_chcon_without_semanage_is_said() {
        let labelled = |extra: &str| file(8 * GIB, 8 * GIB, 0o600, true) + extra;
        let h = Host {
            file: labelled(
                &(ENFORCING.to_string() + "selinux_type=default_t\nselinux_policy=swapfile_t\n"),
            ),
            ..Host::default()
        };
        let p = plan(p8(), &h).unwrap();
        assert_eq!(
            summary(&p),
            ["/swapfile SELinux type: default_t → swapfile_t"]
        );
        assert_eq!(p.steps.len(), 1);
        assert!(
            p.steps[0].contains("restorecon") && p.steps[0].contains("-F"),
            "{}",
            p.steps[0]
        );
        let h = Host {
            file: labelled("selinux=on\nselinux_type=default_t\n"),
            ..Host::default()
        };
        let p = plan(p8(), &h).unwrap();
        assert!(p.steps[0].contains("chcon -t swapfile_t"), "{}", p.steps[0]);
        assert!(
            p.notes[0].contains("semanage is not installed"),
            "{:?}",
            p.notes
        );
        let h = Host {
            file: labelled(
                &(ENFORCING.to_string() + "selinux_type=swapfile_t\nselinux_policy=swapfile_t\n"),
            ),
            ..Host::default()
        };
        assert_eq!(plan(p8(), &h).unwrap(), Plan::noop());
    }

    #[test]
    fn inactive_correct_file_only_needs_swapon() {
        let h = Host {
            swaps: SWAPS_EMPTY.into(),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert_eq!(summary(&plan), ["swap /swapfile: 8G inactive → 8G active"]);
        assert_eq!(plan.steps.len(), 1);
        assert!(plan.steps[0].contains("swapon") && !plan.steps[0].contains("mkswap"));
        let h = Host {
            swaps: SWAPS_EMPTY.into(),
            file: file(8 * GIB, 8 * GIB, 0o600, false),
            ..Host::default()
        };
        let plan = super::tests::plan(p8(), &h).unwrap();
        assert!(
            plan.steps[0].contains("mkswap"),
            "no signature → mkswap first"
        );
    }

    #[test]
    fn wrong_mode_is_a_chmod() {
        let h = Host {
            file: file(8 * GIB, 8 * GIB, 0o644, true),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert_eq!(summary(&plan), ["/swapfile mode: 0644 → 0600"]);
        assert_eq!(plan.steps, ["p=/swapfile\nchmod 600 -- \"$p\" || exit 1"]);
    }

    #[test]
    fn file_with_holes_is_recreated() {
        let h = Host {
            file: file(8 * GIB, 0, 0o600, true),
            swaps: SWAPS_EMPTY.into(),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert_eq!(
            summary(&plan),
            ["swap /swapfile: 8G inactive, with holes → 8G active"]
        );
        assert!(plan.steps[0].contains("dd if=/dev/zero"));
    }

    #[test]
    fn allocation_follows_the_filesystem() {
        assert_eq!(alloc_method("xfs", Some((4, 18))), Ok(Alloc::Fallocate));
        assert_eq!(alloc_method("xfs", Some((3, 10))), Ok(Alloc::Dd));
        assert_eq!(alloc_method("ext2/ext3", Some((6, 1))), Ok(Alloc::Dd));
        assert_eq!(alloc_method("btrfs", Some((6, 1))), Ok(Alloc::NocowDd));
        assert!(alloc_method("btrfs", Some((4, 19))).is_err());
        assert!(alloc_method("tmpfs", Some((6, 1))).is_err());
        let release = ProbeResult::ok("3.10.0-1160.el7.x86_64\n");
        assert_eq!(KernelVersion::parse(&(), &release), Ok(Some((3, 10))));

        let xfs_old = Host {
            file: ABSENT.replace("ext2/ext3", "xfs"),
            swaps: SWAPS_EMPTY.into(),
            kernel: "3.10.0-1160.el7.x86_64",
            ..Host::default()
        };
        let steps = plan(p8(), &xfs_old).unwrap().steps;
        assert!(steps[0].contains("dd if=/dev/zero") && !steps[0].contains("fallocate"));
        let xfs_new = Host {
            kernel: "4.18.0-513.el8.x86_64",
            ..xfs_old
        };
        let steps = plan(p8(), &xfs_new).unwrap().steps;
        assert!(steps[0].contains("fallocate -l 8589934592 -- \"$p\""));
    }

    #[test]
    fn btrfs_gets_nocow_on_the_empty_file() {
        let h = Host {
            file: ABSENT.replace("ext2/ext3", "btrfs"),
            swaps: SWAPS_EMPTY.into(),
            ..Host::default()
        };
        let step = &plan(p8(), &h).unwrap().steps[0];
        let (touch, chattr, dd) = (
            step.find(": > \"$p\"").unwrap(),
            step.find("chattr +C").unwrap(),
            step.find("dd if=/dev/zero").unwrap(),
        );
        assert!(touch < chattr && chattr < dd, "{step}");
        // A copy-on-write file of the right size is recreated, not swapped on.
        let h = Host {
            file: file(8 * GIB, 8 * GIB, 0o600, true).replace("ext2/ext3", "btrfs"),
            swaps: SWAPS_EMPTY.into(),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert!(summary(&plan)[0].contains("copy-on-write"));
        assert!(plan.steps[0].contains("chattr +C"));
    }

    #[test]
    fn full_disk_is_refused() {
        let h = Host {
            file: ABSENT.into(),
            swaps: SWAPS_EMPTY.into(),
            free_kib: 8 * 1024 * 1024,
            ..Host::default()
        };
        let err = plan(p8(), &h).unwrap_err();
        assert!(
            matches!(&err, ModuleError::Refused(m) if m.contains("not enough disk") && m.contains("8192 MiB free")),
            "{err}"
        );
    }

    #[test]
    fn resize_swaps_off_only_when_memory_can_absorb_it() {
        let h = Host {
            file: file(4 * GIB, 4 * GIB, 0o600, true),
            swaps: swaps_with(4, 2 * 1024 * 1024, -2),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        assert_eq!(summary(&plan), ["swap /swapfile: 4G active → 8G active"]);
        assert!(plan.steps[0].contains("swapoff") && plan.steps[0].contains("MemAvailable"));
        assert!(plan.steps[1].contains("count=8192"));
        let low = Host {
            mem_avail_kib: 2 * 1024 * 1024,
            ..h
        };
        let err = super::tests::plan(p8(), &low).unwrap_err();
        assert!(
            matches!(&err, ModuleError::Refused(m) if m.contains("refusing to swapoff") && m.contains("2048 MiB are swapped out")),
            "{err}"
        );
    }

    #[test]
    fn priority_drift_reactivates_and_rewrites_fstab() {
        let params = json!({"path": "/swapfile", "size": "8G", "priority": 10});
        let plan = plan(params, &Host::default()).unwrap();
        assert_eq!(
            summary(&plan),
            [
                "swap /swapfile priority: -2 → 10",
                "/etc/fstab: /swapfile none swap sw 0 0 → /swapfile none swap sw,pri=10 0 0"
            ]
        );
        assert!(
            plan.steps[1].contains(")\" -p 10 -- \"$p\""),
            "{}",
            plan.steps[1]
        );
    }

    #[test]
    fn absent_swaps_off_removes_line_and_file() {
        let params = json!({"path": "/swapfile", "state": "absent"});
        let plan = plan(params.clone(), &Host::default()).unwrap();
        assert_eq!(
            summary(&plan),
            [
                "swap /swapfile: 8G active → absent",
                "/etc/fstab: /swapfile none swap sw 0 0 → no line"
            ]
        );
        assert!(plan.steps[0].contains("swapoff"));
        assert!(plan.steps[1].contains("rm -f -- \"$p\""));
        let gone = Host {
            file: ABSENT.into(),
            swaps: SWAPS_EMPTY.into(),
            fstab: FSTAB_NONE.into(),
            ..Host::default()
        };
        assert_eq!(super::tests::plan(params, &gone).unwrap(), Plan::noop());
    }

    #[test]
    fn other_swap_lines_are_kept() {
        let h = Host {
            fstab: "/dev/sdb2 none swap sw 0 0\n".into(),
            ..Host::default()
        };
        let plan = plan(p8(), &h).unwrap();
        let diff = plan.changes[0].diff.as_deref().unwrap();
        assert!(diff.contains("+/swapfile none swap sw 0 0") && !diff.contains("-/dev/sdb2"));
    }

    #[test]
    fn hostile_path_is_quoted() {
        let path = "/data/$(reboot) it's";
        let m = build_test(&SWAPFILE, json!({"path": path, "size": "1G"})).unwrap();
        let mut f = facts_of(&[
            (&SwapFile::key(path), "fstype=xfs\nreal=x\ntype=absent\n"),
            ("df:/data", "999999999\n"),
            (&Swaps::key(&()), SWAPS_EMPTY),
            (&MemAvailable::key(&()), "MemAvailable: 1 kB\n"),
            (&KernelVersion::key(&()), "6.1.0"),
        ]);
        f.insert(FileFact::key(fstab::PATH), FileFact::render(&None));
        let plan = m.plan(&f).unwrap();
        for s in &plan.steps[..3] {
            assert!(s.starts_with("p='/data/$(reboot) it'\\''s'\n"), "{s}");
        }
        assert!(plan.changes[1]
            .after
            .as_deref()
            .unwrap()
            .starts_with("/data/$(reboot)\\040it's none"));
        assert!(SwapFile::script(path).starts_with("p='/data/$(reboot) it'\\''s';"));
    }

    #[test]
    fn not_a_regular_file_is_refused() {
        let h = Host {
            file: "fstype=xfs\nreal=/x\ntype=link\n".into(),
            ..Host::default()
        };
        assert!(matches!(plan(p8(), &h), Err(ModuleError::Refused(m)) if m.contains("symlink")));
    }
}
