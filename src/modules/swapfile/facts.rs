//! What a swapfile task compares, each fact with its probe, its parser and
//! its rendering: the file at the path (type, mode, allocation, swap
//! signature, SELinux label), the free space beside it, the active swap
//! areas, the memory a swapoff would need and the kernel's version.

use crate::base::shell::{quote, unescape_octal};
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

/// The active swap areas, as /proc/swaps lists them.
pub(super) struct Swaps;

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
pub(super) struct MemAvailable;

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
pub(super) struct KernelVersion;

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
pub(super) struct DiskFree;

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
pub(super) struct SwapFile;

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
pub(super) struct FileFacts {
    /// `None` when the parent folder does not exist.
    pub(super) fstype: Option<String>,
    pub(super) real: String,
    pub(super) kind: String,
    pub(super) mode: u32,
    pub(super) size: u64,
    pub(super) allocated: u64,
    pub(super) signature: Option<bool>,
    pub(super) nocow: bool,
    /// `None` where SELinux is off.
    pub(super) selinux: Option<Selinux>,
}

/// A swap file's SELinux labelling: `swapon` is denied a file whose type is
/// not `swapfile_t`, and only a type the policy itself assigns to the path
/// survives a relabel.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Selinux {
    /// The file's type now; `None` when it does not exist.
    pub(super) file_type: Option<String>,
    /// The type the policy gives the path (`matchpathcon`), if known.
    pub(super) policy_type: Option<String>,
    /// Whether `semanage` can record a type in the policy.
    pub(super) semanage: bool,
}

pub(super) const SWAPFILE_T: &str = "swapfile_t";

/// The labelling a swap file has once the label steps ran.
pub(super) fn labelled(file: &FileFacts) -> Option<Selinux> {
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
    pub(super) fn exists(&self) -> bool {
        self.kind != "absent"
    }

    pub(super) fn has_holes(&self) -> bool {
        self.allocated < self.size
    }
}

/// One line of /proc/swaps.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SwapArea {
    /// As the kernel prints it (octal escapes), for matching in steps.
    pub(super) raw_name: String,
    pub(super) kind: String,
    pub(super) size_kib: u64,
    pub(super) used_kib: u64,
    pub(super) priority: i64,
}

/// The area of a file known by any of `names`.
pub(super) fn active_swap<'a>(areas: &'a [SwapArea], names: &[&str]) -> Option<&'a SwapArea> {
    areas
        .iter()
        .find(|a| names.contains(&unescape_octal(&a.raw_name).as_str()))
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
