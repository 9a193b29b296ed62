//! The sysctl configuration a host boots with: every candidate file, read
//! by one probe, and the precedence systemd-sysctl, procps and tuned apply
//! to them. Everything here except the probe scripts is pure.

use super::{components, normalize_key, same_value, tuned::Tuned};
use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::{carried_len, uncarry, Carried, ProbeResult};

/// sysctl.d(5) search path; for one basename the first folder wins.
pub(crate) const DIRS: &[&str] = &[
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
];

/// procps `sysctl --system` and tuned read it last; systemd-sysctl only
/// through a sysctl.d link such as RHEL's `99-sysctl.conf -> ../sysctl.conf`.
pub(crate) const SYSCTL_CONF: &str = "/etc/sysctl.conf";

/// Folders tuned's `reapply_sysctl` re-reads after applying its profile.
const REAPPLIED_DIRS: &[&str] = &["/etc/sysctl.d", "/run/sysctl.d"];

pub(crate) const FRAME: &str = "@@SYSCTL";

/// A shell function that prints the frame of one file (following links):
/// `@@SYSCTL <c|u> <pathlen> <linklen> 0`, then exactly those bytes. A
/// readable file's content (`c`) is deferred to the files attached at the
/// end; `u` has none (a dangling link, a folder). It returns true for `c`.
/// The path is printed without the `$R` prefix that tests point at a temp
/// folder. In the C locale `${#var}` counts bytes, and `true <file` opens
/// the file in the shell. A link that is `/etc/sysctl.conf` or `/dev/null`
/// (`-ef`, a builtin) is named by that path, so only a link to anything
/// else costs a process (its `readlink`).
const FRAME_FN: &str = r#"LC_ALL=C; export LC_ALL
np_sf() {
  p=${1#"$R"}; t=
  if ! [ -L "$1" ]; then :
  elif [ "$1" -ef "$R/etc/sysctl.conf" ]; then t=/etc/sysctl.conf
  elif [ "$1" -ef /dev/null ]; then t=/dev/null
  else t=$(readlink -- "$1"); fi
  if { [ -f "$1" ] || [ "$1" -ef /dev/null ]; } && true 2>/dev/null <"$1"; then s=c; else s=u; fi
  printf '@@SYSCTL %s %s %s 0\n%s%s' "$s" "${#p}" "${#t}" "$p" "$t"
  [ "$s" = c ]
}
"#;

/// Every sysctl file a host boots with, read by one probe shared by every
/// sysctl task of a host. The query is the root prefix of every path
/// (`""`; only tests point it at a temp folder).
pub(crate) struct SysctlFiles;

impl Fact for SysctlFiles {
    type Query = str;
    type Value = Vec<ConfFile>;

    fn key(_: &str) -> String {
        "sysctl:config".into()
    }

    /// Frames first, then `@@SYSCTL sizes <n>` and the n readable files
    /// attached (`np_cat`: their sizes on one line, then their bytes). On
    /// merged-/usr hosts /lib/sysctl.d is
    /// /usr/lib/sysctl.d, which [`boot_order`] already prefers, so it is
    /// skipped rather than read twice.
    fn script(root: &str) -> String {
        let dirs = DIRS.join(" ");
        format!(
            r#"R={root}
{FRAME_FN}set --
for d in {dirs}; do
  if [ "$d" = /lib/sysctl.d ] && [ "$R$d" -ef "$R/usr/lib/sysctl.d" ]; then continue; fi
  for f in "$R$d"/*.conf; do
    if {{ [ -e "$f" ] || [ -L "$f" ]; }} && np_sf "$f"; then set -- "$@" "$f"; fi
  done
done
f="$R{SYSCTL_CONF}"
if [ -e "$f" ] && np_sf "$f"; then set -- "$@" "$f"; fi
printf '{FRAME} sizes %s\n' "$#"
[ "$#" -gt 0 ] || exit 0
np_cat "$@""#,
            root = quote(root)
        )
    }

    fn parse(root: &str, r: &ProbeResult) -> Result<Vec<ConfFile>, ModuleError> {
        parse_frames(r).map_err(|d| fact::bad(Self::key(root), d))
    }

    fn render(files: &Vec<ConfFile>) -> ProbeResult {
        let mut out = String::new();
        for f in files {
            let link = f.link.as_deref().unwrap_or("");
            let content = f.content.as_deref().unwrap_or("");
            let status = if f.content.is_some() { "f" } else { "u" };
            out.push_str(&format!(
                "{FRAME} {status} {} {} {}\n{}{link}{content}",
                f.path.len(),
                link.len(),
                content.len(),
                f.path
            ));
        }
        ProbeResult::ok(out)
    }
}

/// A file as the probe saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConfFile {
    pub path: String,
    /// The link target when the path is a symlink, as `readlink` prints
    /// it; `/etc/sysctl.conf` or `/dev/null` when it resolves to one.
    pub link: Option<String>,
    /// `None` when it could not be read (a dangling link, a folder).
    pub content: Option<String>,
}

impl ConfFile {
    pub(crate) fn new(path: &str, link: Option<&str>, content: Option<&str>) -> Self {
        ConfFile {
            path: path.to_string(),
            link: link.map(String::from),
            content: content.map(String::from),
        }
    }

    fn dir(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(d, _)| d)
    }

    pub(crate) fn basename(&self) -> &str {
        self.path.rsplit_once('/').map_or(&self.path, |(_, b)| b)
    }

    /// The file the content really comes from.
    pub(crate) fn real(&self) -> String {
        match &self.link {
            Some(l) if l.starts_with('/') => clean_path(l),
            Some(l) => clean_path(&format!("{}/{l}", self.dir())),
            None => self.path.clone(),
        }
    }

    fn masked(&self) -> bool {
        self.real() == "/dev/null"
    }
}

/// Resolves `.` and `..` without touching the filesystem.
fn clean_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            part => out.push(part),
        }
    }
    format!("/{}", out.join("/"))
}

/// Files as framed by [`FRAME_FN`] and [`SysctlFiles::script`], or by
/// [`SysctlFiles::render`] (content inline, status `f`).
pub(crate) fn parse_frames(r: &ProbeResult) -> Result<Vec<ConfFile>, String> {
    if r.rc != 0 {
        return Err(format!("exit {}: {}", r.rc, r.stderr.trim()));
    }
    let mut files = Vec::new();
    // Indexes of the files whose content the final `cat` holds.
    let mut deferred = Vec::new();
    let mut rest = r.stdout.as_str();
    while !rest.is_empty() {
        let (header, body) = rest.split_once('\n').ok_or("truncated frame header")?;
        let fields: Vec<&str> = header.split(' ').collect();
        let bad = || format!("bad frame header: {header}");
        if let [FRAME, "sizes", n] = fields[..] {
            let n = n.parse::<usize>().map_err(|_| bad())?;
            if n != deferred.len() {
                return Err(bad());
            }
            return fill_deferred(&mut files, &deferred, body).map(|()| files);
        }
        let [FRAME, status, plen, llen, clen] = fields[..] else {
            return Err(bad());
        };
        let num = |s: &str| s.parse::<usize>().map_err(|_| bad());
        let (plen, llen) = (num(plen)?, num(llen)?);
        let clen = if status == "f" { num(clen)? } else { 0 };
        let take = |from: usize, len: usize| {
            body.get(from..from + len)
                .ok_or_else(|| format!("truncated frame: {header}"))
        };
        let link = take(plen, llen)?;
        if status == "c" {
            deferred.push(files.len());
        }
        files.push(ConfFile::new(
            take(0, plen)?,
            (!link.is_empty()).then_some(link),
            (status == "f").then_some(take(plen + llen, clen)?),
        ));
        rest = &body[plen + llen + clen..];
    }
    match deferred.is_empty() {
        true => Ok(files),
        false => Err("frames without their contents".into()),
    }
}

/// Gives the deferred files their content: `body` is the line of their
/// sizes, then their bytes, as the framing attaches them.
fn fill_deferred(files: &mut [ConfFile], deferred: &[usize], body: &str) -> Result<(), String> {
    if deferred.is_empty() && body.is_empty() {
        return Ok(());
    }
    let (line, mut rest) = body.split_once('\n').ok_or("no line of sizes")?;
    let sizes: Vec<(&str, usize)> = line
        .split(' ')
        .map(|n| carried_len(n).map(|len| (n, len)))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("bad sizes: {line}"))?;
    if sizes.len() != deferred.len() || sizes.iter().map(|s| s.1).sum::<usize>() != rest.len() {
        return Err(format!(
            "{} sizes for {} files: {line}",
            sizes.len(),
            deferred.len()
        ));
    }
    for (&i, &(size, len)) in deferred.iter().zip(&sizes) {
        let text = rest.get(..len).ok_or("content split inside a character")?;
        // Settings are read as text: a byte that is not UTF-8 reads as U+FFFD.
        files[i].content = match uncarry(size, text).ok_or("bad content")? {
            Carried::Text(text) => Some(text.to_string()),
            Carried::Bytes(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        };
        rest = &rest[len..];
    }
    Ok(())
}

/// The files after `path` was written with `content`: wherever it is read
/// (directly or through a link), and listed itself as the probe would.
pub(crate) fn with_file(files: &[ConfFile], path: &str, content: &str) -> Vec<ConfFile> {
    let mut out = files.to_vec();
    for f in out.iter_mut().filter(|f| f.real() == path) {
        f.content = Some(content.to_string());
    }
    let found = out.iter().any(|f| f.path == path);
    let listed = DIRS.iter().any(|d| {
        path.strip_prefix(d)
            .is_some_and(|b| b.starts_with('/') && b.ends_with(".conf") && !b[1..].contains('/'))
    }) || path == SYSCTL_CONF;
    if !found && listed {
        out.push(ConfFile::new(path, None, Some(content)));
    }
    out
}

/// One assignment in a file, as systemd-sysctl reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    key: String,
    /// `None` for a bare `-key`, which only excludes the key from globs.
    value: Option<String>,
}

fn entry(line: &str) -> Option<Entry> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
        return None;
    }
    let (t, optional) = match t.strip_prefix('-') {
        Some(rest) => (rest, true),
        None => (t, false),
    };
    match t.split_once('=') {
        Some((k, v)) => Some(Entry {
            key: normalize_key(k),
            value: Some(v.trim().to_string()),
        }),
        None if optional => Some(Entry {
            key: normalize_key(t),
            value: None,
        }),
        None => None,
    }
}

fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '['])
}

/// Per component, `*` and `?` as fnmatch(3) treats them.
fn glob_matches(pattern: &str, key: &str) -> bool {
    let (p, k) = (components(pattern), components(key));
    p.len() == k.len()
        && p.iter()
            .zip(&k)
            .all(|(p, k)| wildcard(p.as_bytes(), k.as_bytes()))
}

fn wildcard(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => wildcard(&p[1..], s) || (!s.is_empty() && wildcard(p, &s[1..])),
        (Some(b'?'), Some(_)) => wildcard(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard(&p[1..], &s[1..]),
        _ => false,
    }
}

/// Where a boot-time value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    File { file: ConfFile, line: usize },
    Tuned { profile: String },
}

impl Origin {
    /// True when the value is read from `path` (directly or via a link).
    pub(crate) fn is_file(&self, path: &str) -> bool {
        matches!(self, Origin::File { file, .. } if file.real() == path)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { file, line } => match &file.link {
                Some(_) => write!(f, "{}:{line} (via {})", file.real(), file.path),
                None => write!(f, "{}:{line}", file.path),
            },
            Origin::Tuned { profile } => write!(f, "tuned profile '{profile}'"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Winner {
    pub value: String,
    pub origin: Origin,
}

/// The files systemd-sysctl applies, in order: per basename the one from
/// the first folder of [`DIRS`], then all sorted by basename.
pub(crate) fn boot_order(files: &[ConfFile]) -> Vec<&ConfFile> {
    let mut chosen: Vec<&ConfFile> = Vec::new();
    for dir in DIRS {
        for f in files
            .iter()
            .filter(|f| f.dir() == *dir && f.basename().ends_with(".conf"))
        {
            if !chosen.iter().any(|c| c.basename() == f.basename()) {
                chosen.push(f);
            }
        }
    }
    chosen.sort_by(|a, b| a.basename().cmp(b.basename()));
    chosen
}

/// procps `sysctl --system`: the same order, then `/etc/sysctl.conf`.
fn procps_order(files: &[ConfFile]) -> Vec<&ConfFile> {
    let mut order = boot_order(files);
    order.extend(files.iter().find(|f| f.path == SYSCTL_CONF));
    order
}

/// tuned with `reapply_sysctl`: only /etc and /run, then `/etc/sysctl.conf`.
fn reapply_order(files: &[ConfFile]) -> Vec<&ConfFile> {
    let mut order: Vec<&ConfFile> = boot_order(files)
        .into_iter()
        .filter(|f| REAPPLIED_DIRS.contains(&f.dir()))
        .collect();
    order.extend(files.iter().find(|f| f.path == SYSCTL_CONF));
    order
}

/// The last assignment of `key` in these files. An explicit key beats any
/// glob regardless of order, and a bare `-key` keeps globs off it
/// (sysctl.d(5)); a masked file (link to /dev/null) reads as empty.
fn winner(key: &str, order: &[&ConfFile]) -> Option<Winner> {
    let mut explicit = None;
    let mut glob = None;
    for file in order.iter().filter(|f| !f.masked()) {
        let text = file.content.as_deref().unwrap_or("");
        for (i, e) in text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| Some((i, entry(l)?)))
        {
            let at = || Origin::File {
                file: (*file).clone(),
                line: i + 1,
            };
            if e.key == key {
                explicit = Some(e.value.map(|value| Winner {
                    value,
                    origin: at(),
                }));
            } else if is_glob(&e.key) && glob_matches(&e.key, key) {
                glob = e
                    .value
                    .map(|value| Winner {
                        value,
                        origin: at(),
                    })
                    .or(glob);
            }
        }
    }
    explicit.unwrap_or(glob)
}

/// The value `key` gets at the next boot: systemd-sysctl's winner, then the
/// active tuned profile, which beats files unless `reapply_sysctl` makes
/// tuned re-read /etc and /run afterwards.
pub(crate) fn boot(key: &str, files: &[ConfFile], tuned: Option<&Tuned>) -> Option<Winner> {
    let systemd = winner(key, &boot_order(files));
    let Some((profile, value)) = tuned.and_then(|t| Some((t, t.value(key)?))) else {
        return systemd;
    };
    let from_tuned = Winner {
        value: value.to_string(),
        origin: Origin::Tuned {
            profile: profile.profile.clone(),
        },
    };
    if !profile.reapply {
        return Some(from_tuned);
    }
    winner(key, &reapply_order(files)).or(Some(from_tuned))
}

/// `/etc/sysctl.conf` when `sysctl --system` would apply it last with a
/// value other than the boot winner's (systemd-sysctl never reads it
/// without a sysctl.d link).
pub(crate) fn procps_override(
    key: &str,
    files: &[ConfFile],
    boot: Option<&Winner>,
) -> Option<Winner> {
    let procps = winner(key, &procps_order(files))?;
    let differs = boot.is_none_or(|b| !same_value(&b.value, &procps.value));
    (differs && procps.origin.is_file(SYSCTL_CONF)).then_some(procps)
}

/// A drop-in name that sorts after every file that assigns `key`.
pub(crate) fn later_name(key: &str, files: &[ConfFile]) -> String {
    let last = boot_order(files)
        .into_iter()
        .filter(|f| winner(key, &[f]).is_some())
        .map(|f| f.basename().to_string())
        .next_back()
        .unwrap_or_default();
    let name = "99-zz-nodeprov.conf";
    if name > last.as_str() {
        return name.to_string();
    }
    format!("{}z-nodeprov.conf", last.trim_end_matches(".conf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, content: &str) -> ConfFile {
        ConfFile::new(path, None, Some(content))
    }

    #[test]
    fn frames_round_trip_hostile_content() {
        let files = vec![
            f("/etc/sysctl.d/a b.conf", "@@SYSCTL f 1 2 3\nx = 1"),
            ConfFile::new(
                "/etc/sysctl.d/99-sysctl.conf",
                Some("../sysctl.conf"),
                Some(""),
            ),
            ConfFile::new("/etc/sysctl.d/dangling.conf", Some("/nope"), None),
        ];
        assert_eq!(parse_frames(&SysctlFiles::render(&files)).unwrap(), files);
        assert!(parse_frames(&ProbeResult::ok("@@SYSCTL f 9 0 0\nshort")).is_err());
    }

    /// The probe's own shape: frames, then the readable files as the
    /// framing attaches them, whatever their content holds.
    #[test]
    fn deferred_contents_follow_their_sizes() {
        let out = "@@SYSCTL c 3 0 0\n/a1@@SYSCTL u 2 2 0\n/bxy@@SYSCTL c 2 0 0\n/c\
                   @@SYSCTL sizes 2\n19 0\n@@SYSCTL f 1 1 1\nx\n";
        let files = parse_frames(&ProbeResult::ok(out)).unwrap();
        assert_eq!(
            files,
            [
                f("/a1", "@@SYSCTL f 1 1 1\nx\n"),
                ConfFile::new("/b", Some("xy"), None),
                f("/c", ""),
            ]
        );
        let changed = out.replace("19 0", "18 0");
        assert!(parse_frames(&ProbeResult::ok(changed)).is_err());
        let missing = "@@SYSCTL c 3 0 0\n/a1";
        assert!(parse_frames(&ProbeResult::ok(missing)).is_err());
        let none = "@@SYSCTL u 2 0 0\n/b@@SYSCTL sizes 0\n";
        assert_eq!(parse_frames(&ProbeResult::ok(none)).unwrap().len(), 1);
    }

    #[test]
    fn same_basename_prefers_etc_then_run_and_sorts_by_basename() {
        let files = vec![
            f("/usr/lib/sysctl.d/50-a.conf", "vm.x = 1\n"),
            f("/run/sysctl.d/50-a.conf", "vm.x = 2\n"),
            f("/etc/sysctl.d/10-b.conf", "vm.x = 3\n"),
            f("/lib/sysctl.d/60-c.conf", "# nothing\n"),
        ];
        let order: Vec<&str> = boot_order(&files).iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            order,
            [
                "/etc/sysctl.d/10-b.conf",
                "/run/sysctl.d/50-a.conf",
                "/lib/sysctl.d/60-c.conf"
            ]
        );
        let w = boot("vm.x", &files, None).unwrap();
        assert_eq!(
            (w.value.as_str(), w.origin.to_string().as_str()),
            ("2", "/run/sysctl.d/50-a.conf:1")
        );
    }

    #[test]
    fn explicit_key_beats_glob_and_dash_excludes() {
        let files = vec![
            f(
                "/etc/sysctl.d/10-a.conf",
                "net.ipv4.conf.eth0.rp_filter = 1\n",
            ),
            f(
                "/etc/sysctl.d/20-b.conf",
                "net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.all.rp_filter\n",
            ),
        ];
        assert_eq!(
            boot("net.ipv4.conf.eth0.rp_filter", &files, None)
                .unwrap()
                .value,
            "1"
        );
        assert_eq!(
            boot("net/ipv4/conf/eth1/rp_filter", &files, None)
                .unwrap()
                .value,
            "2"
        );
        assert_eq!(boot("net.ipv4.conf.all.rp_filter", &files, None), None);
        assert_eq!(boot("net.ipv4.conf.eth1.forwarding", &files, None), None);
    }

    #[test]
    fn links_resolve_and_dev_null_masks() {
        let link = ConfFile::new(
            "/etc/sysctl.d/99-sysctl.conf",
            Some("../sysctl.conf"),
            Some("vm.x=5\n"),
        );
        assert_eq!(link.real(), "/etc/sysctl.conf");
        let files = vec![
            f("/usr/lib/sysctl.d/50-x.conf", "vm.x = 1\n"),
            ConfFile::new("/etc/sysctl.d/50-x.conf", Some("/dev/null"), Some("")),
        ];
        assert_eq!(boot("vm.x", &files, None), None);
    }

    #[test]
    fn sysctl_conf_without_link_only_matters_to_procps() {
        let files = vec![
            f("/etc/sysctl.d/90-a.conf", "vm.x = 1\n"),
            f(SYSCTL_CONF, "vm.x = 7\n"),
        ];
        let b = boot("vm.x", &files, None);
        assert_eq!(b.as_ref().unwrap().value, "1");
        assert_eq!(
            procps_override("vm.x", &files, b.as_ref()).unwrap().value,
            "7"
        );
    }

    #[test]
    fn later_name_sorts_after_the_last_assignment() {
        let linked = ConfFile::new(
            "/etc/sysctl.d/99-sysctl.conf",
            Some("../sysctl.conf"),
            Some("vm.x=1\n"),
        );
        assert_eq!(later_name("vm.x", &[linked]), "99-zz-nodeprov.conf");
        assert_eq!(
            later_name("vm.x", &[f("/etc/sysctl.d/zzz.conf", "vm.x=1\n")]),
            "zzzz-nodeprov.conf"
        );
    }

    #[test]
    fn written_file_is_predicted_where_it_is_read() {
        let files = vec![ConfFile::new(
            "/etc/sysctl.d/99-sysctl.conf",
            Some("../sysctl.conf"),
            Some("a\n"),
        )];
        let out = with_file(&files, SYSCTL_CONF, "b\n");
        assert_eq!(out[0].content.as_deref(), Some("b\n"));
        assert_eq!(out[1], f(SYSCTL_CONF, "b\n"));
        assert_eq!(with_file(&[], "/etc/other.conf", "x").len(), 0);
    }
}
