//! The active tuned profile's `[sysctl]` settings, which tuned applies at
//! every start and which beat sysctl files unless `reapply_sysctl` is on.

use std::collections::BTreeMap;

use super::config::{self, ConfFile, SysctlFiles, FRAME};
use super::normalize_key;
use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::modules::params::parse_bool;
use crate::remote::probe::ProbeResult;

const ACTIVE: &str = "/etc/tuned/active_profile";
const MAIN: &str = "/etc/tuned/tuned-main.conf";

/// Where tuned looks for a profile, user folders first (newer tuned keeps
/// them under `profiles/`).
const PROFILE_DIRS: &[&str] = &[
    "/etc/tuned/profiles",
    "/etc/tuned",
    "/usr/lib/tuned/profiles",
    "/usr/lib/tuned",
];

/// Profiles followed through `include=`, against include loops.
const MAX_PROFILES: usize = 32;

/// The active tuned profile: the profile, tuned-main.conf and every
/// profile file the active ones include, framed like the sysctl files.
/// The query is the root prefix of every path, as for [`SysctlFiles`].
pub(crate) struct TunedProfile;

impl Fact for TunedProfile {
    type Query = str;
    /// `None` when no profile is active.
    type Value = Option<Tuned>;

    fn key(_: &str) -> String {
        "sysctl:tuned".into()
    }

    fn script(root: &str) -> String {
        script(root, None)
    }

    fn parse(root: &str, r: &ProbeResult) -> Result<Option<Tuned>, ModuleError> {
        parse(r, None).map_err(|d| fact::bad(Self::key(root), d))
    }

    /// The profile as one file of its first name, and reapply_sysctl.
    fn render(tuned: &Option<Tuned>) -> ProbeResult {
        render(tuned)
    }
}

/// A profile a task makes active (`tuned-adm profile`), read like the
/// active one: its files and includes, and reapply_sysctl. The query is the
/// root prefix and the profile names; `None` when tuned has no such profile.
pub(crate) struct TunedCandidate;

impl Fact for TunedCandidate {
    type Query = (String, String);
    type Value = Option<Tuned>;

    fn key((_, profile): &(String, String)) -> String {
        format!("sysctl:tuned:{profile}")
    }

    fn script((root, profile): &(String, String)) -> String {
        script(root, Some(profile))
    }

    fn parse(q: &(String, String), r: &ProbeResult) -> Result<Option<Tuned>, ModuleError> {
        parse(r, Some(&q.1)).map_err(|d| fact::bad(Self::key(q), d))
    }

    fn render(tuned: &Option<Tuned>) -> ProbeResult {
        render(tuned)
    }
}

/// Reads every file with the shell's own `read`, so following a chain of
/// includes costs no process per profile. The chain starts at `start`, or
/// at the active profile.
fn script(root: &str, start: Option<&str>) -> String {
    let dirs = PROFILE_DIRS.join(" ");
    let start = start.map_or(String::new(), |names| format!("q={}\n", quote(names)));
    format!(
        r#"R={root}
LC_ALL=C; export LC_ALL
np_tf() {{
  f=$1; fp=${{f#"$R"}}; c=; inc=
  while IFS= read -r l || [ -n "$l" ]; do
    c="$c$l
"
    case $l in *include*=*)
      set -- ${{l%%=*}}
      if [ "$#" = 1 ] && [ "$1" = include ]; then IFS=' ,;'; set -- ${{l#*=}}; unset IFS; inc="$inc $*"; fi ;;
    esac
  done < "$f"
  printf '{FRAME} f %s 0 %s\n%s%s' "${{#fp}}" "${{#c}}" "$fp" "$c"
}}
set -f
q=
if [ -f "$R{ACTIVE}" ] && [ -r "$R{ACTIVE}" ]; then np_tf "$R{ACTIVE}"; q=$c; fi
if [ -f "$R{MAIN}" ] && [ -r "$R{MAIN}" ]; then np_tf "$R{MAIN}"; fi
{start}seen=' '; n=0
while set -- $q && [ "$#" -gt 0 ] && [ "$n" -lt {MAX_PROFILES} ]; do
  p=$1; shift; q="$*"; n=$((n+1))
  case "$seen" in *" $p "*) continue ;; esac
  seen="$seen$p "
  for d in {dirs}; do
    if [ -f "$R$d/$p/tuned.conf" ] && [ -r "$R$d/$p/tuned.conf" ]; then
      np_tf "$R$d/$p/tuned.conf"
      q="$q $inc"
      break
    fi
  done
done
exit 0"#,
        root = quote(root)
    )
}

fn render(tuned: &Option<Tuned>) -> ProbeResult {
    let Some(t) = tuned else {
        return SysctlFiles::render(&Vec::new());
    };
    let first = t.profile.split_whitespace().next().unwrap_or_default();
    let sysctl: String = t
        .sysctl
        .iter()
        .map(|(k, v)| format!("{k} = {v}\n"))
        .collect();
    SysctlFiles::render(&vec![
        ConfFile::new(ACTIVE, None, Some(&format!("{}\n", t.profile))),
        ConfFile::new(
            MAIN,
            None,
            Some(&format!("reapply_sysctl = {}\n", u8::from(t.reapply))),
        ),
        ConfFile::new(
            &format!("{}/{first}/tuned.conf", PROFILE_DIRS[0]),
            None,
            Some(&format!("[sysctl]\n{sysctl}")),
        ),
    ])
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tuned {
    /// As `active_profile` names it (several merge left to right).
    pub profile: String,
    /// `[sysctl]` of the profile and everything it includes, merged.
    pub sysctl: BTreeMap<String, String>,
    /// `reapply_sysctl` (default on): /etc and /run sysctl files win.
    pub reapply: bool,
}

impl Tuned {
    pub(crate) fn value(&self, key: &str) -> Option<&str> {
        self.sysctl.get(key).map(String::as_str)
    }
}

/// The active profile, or `want` when a task makes it active (`None` then
/// when tuned has no profile of its first name).
fn parse(r: &ProbeResult, want: Option<&str>) -> Result<Option<Tuned>, String> {
    let files = config::parse_frames(r)?;
    let read = |path: &str| {
        files
            .iter()
            .find(|f| f.path == path)
            .and_then(|f| f.content.as_deref())
    };
    let profile = want
        .or(read(ACTIVE))
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let first = profile.split_whitespace().next().unwrap_or_default();
    let found = PROFILE_DIRS
        .iter()
        .any(|d| read(&format!("{d}/{first}/tuned.conf")).is_some());
    if profile.is_empty() || (want.is_some() && !found) {
        return Ok(None);
    }
    let reapply = read(MAIN)
        .and_then(|t| ini(t).into_iter().find(|(_, k, _)| k == "reapply_sysctl"))
        .and_then(|(_, _, v)| parse_bool(&v))
        .unwrap_or(true);
    let mut sysctl = BTreeMap::new();
    let mut seen = Vec::new();
    for name in profile.split_whitespace() {
        merge(name, &files, &mut seen, &mut sysctl);
    }
    Ok(Some(Tuned {
        profile,
        sysctl,
        reapply,
    }))
}

/// Included profiles first, then the profile's own settings over them.
fn merge(
    name: &str,
    files: &[ConfFile],
    seen: &mut Vec<String>,
    out: &mut BTreeMap<String, String>,
) {
    if seen.iter().any(|s| s == name) || seen.len() >= MAX_PROFILES {
        return;
    }
    seen.push(name.to_string());
    let Some(text) = PROFILE_DIRS.iter().find_map(|d| {
        let path = format!("{d}/{name}/tuned.conf");
        files.iter().find(|f| f.path == path)?.content.as_deref()
    }) else {
        return;
    };
    let entries = ini(text);
    for (_, _, v) in entries
        .iter()
        .filter(|(s, k, _)| s == "main" && k == "include")
    {
        for inc in v.split([',', ';', ' ', '\t']).filter(|s| !s.is_empty()) {
            merge(inc, files, seen, out);
        }
    }
    for (_, k, v) in entries.into_iter().filter(|(s, _, _)| s == "sysctl") {
        out.insert(normalize_key(&k), v);
    }
}

/// `(section, key, value)` of an ini file as tuned writes them.
fn ini(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.trim().to_string();
        } else if let Some((k, v)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
            out.push((section.clone(), k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_output(active: &str, main: Option<&str>, profiles: &[(&str, &str)]) -> ProbeResult {
        let mut files = vec![ConfFile::new(ACTIVE, None, Some(active))];
        files.extend(main.map(|m| ConfFile::new(MAIN, None, Some(m))));
        files.extend(
            profiles
                .iter()
                .map(|(p, c)| ConfFile::new(p, None, Some(c))),
        );
        SysctlFiles::render(&files)
    }

    #[test]
    fn profile_merges_includes_and_reads_reapply() {
        let r = probe_output(
            "virtual-guest\n",
            Some("[main]\nreapply_sysctl = 0\n"),
            &[
                (
                    "/usr/lib/tuned/virtual-guest/tuned.conf",
                    "[main]\ninclude=throughput-performance\n[sysctl]\nvm.swappiness = 30\n",
                ),
                (
                    "/usr/lib/tuned/throughput-performance/tuned.conf",
                    "[sysctl]\nvm.swappiness=10\nvm/dirty_ratio = 40\n",
                ),
            ],
        );
        let t = parse(&r, None).unwrap().unwrap();
        assert_eq!(t.profile, "virtual-guest");
        assert_eq!(t.value("vm.swappiness"), Some("30"));
        assert_eq!(t.value("vm.dirty_ratio"), Some("40"));
        assert!(!t.reapply);
    }

    #[test]
    fn user_profile_overrides_shipped_and_default_reapplies() {
        let r = probe_output(
            "p",
            None,
            &[
                ("/usr/lib/tuned/p/tuned.conf", "[sysctl]\nvm.x=1\n"),
                ("/etc/tuned/p/tuned.conf", "[sysctl]\nvm.x=2\n"),
            ],
        );
        let t = parse(&r, None).unwrap().unwrap();
        assert_eq!((t.value("vm.x"), t.reapply), (Some("2"), true));
        assert_eq!(parse(&probe_output("", None, &[]), None).unwrap(), None);
    }

    /// The probe run by `sh` with no `PATH` (so builtins only: no process
    /// per profile file) over the profiles EL ships, copied from this
    /// machine's tuned package (`/usr/lib/tuned`, the same profiles as EL's).
    #[test]
    fn shipped_profiles_resolve_their_includes_with_builtins_only() {
        let root = tempfile::tempdir().unwrap();
        let r = |p: &str| root.path().join(p.trim_start_matches('/'));
        for name in [
            "throughput-performance",
            "virtual-guest",
            "latency-performance",
            "hpc-compute",
        ] {
            let shipped = format!("/usr/lib/tuned/{name}/tuned.conf");
            let text = std::fs::read_to_string(&shipped)
                .unwrap_or_else(|e| panic!("{shipped}: {e} (scripts/test.sh installs tuned)"));
            std::fs::create_dir_all(r(&format!("/usr/lib/tuned/{name}"))).unwrap();
            std::fs::write(r(&shipped), text).unwrap();
        }
        std::fs::create_dir_all(r("/etc/tuned/gpu-node")).unwrap();
        std::fs::write(
            r("/etc/tuned/gpu-node/tuned.conf"),
            "[main]\ninclude = hpc-compute\n[sysctl]\nvm.swappiness = 1\n",
        )
        .unwrap();
        let base = root.path().to_str().unwrap().to_string();
        // With `want`, the chain starts at that profile instead of the active one.
        let run = |want: Option<&str>| {
            let out = std::process::Command::new("/bin/sh")
                .args(["-c", &script(&base, want)])
                .env_clear()
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r = ProbeResult::ok(String::from_utf8(out.stdout).unwrap());
            parse(&r, want).unwrap()
        };
        let probe = |active: &str| {
            std::fs::write(r(ACTIVE), format!("{active}\n")).unwrap();
            run(None).unwrap()
        };
        let guest = probe("virtual-guest");
        assert_eq!(
            guest.value("vm.swappiness"),
            Some("30"),
            "its own value over the included one"
        );
        assert_eq!(guest.value("vm.dirty_ratio"), Some("30"));
        assert_eq!(
            guest.value("vm.dirty_background_ratio"),
            Some("10"),
            "from throughput-performance"
        );
        let throughput = probe("throughput-performance");
        assert_eq!(throughput.value("vm.swappiness"), Some("10"));
        assert_eq!(throughput.value("vm.dirty_ratio"), Some("40"));
        let hpc = probe("hpc-compute");
        assert_eq!(
            hpc.value("vm.swappiness"),
            Some("10"),
            "from latency-performance"
        );
        assert_eq!(hpc.value("vm.dirty_ratio"), Some("10"));
        assert_eq!(hpc.value("vm.min_free_kbytes"), Some("135168"));
        let ours = probe("gpu-node");
        assert_eq!(
            ours.value("vm.swappiness"),
            Some("1"),
            "a user profile over two levels of includes"
        );
        assert_eq!(ours.value("vm.zone_reclaim_mode"), Some("1"));
        assert_eq!(ours.value("vm.dirty_background_ratio"), Some("3"));
        assert!(ours.reapply, "no tuned-main.conf: tuned's default");
        // A profile a task selects is read the same way, whatever is active.
        std::fs::write(r(ACTIVE), "virtual-guest\n").unwrap();
        assert_eq!(run(Some("gpu-node")), Some(ours));
        assert_eq!(run(Some("no-such")), None);
    }
}
