//! `get_url`: a file on the host downloaded from a URL, by the host itself
//! (curl, else wget), into a temp file renamed over `dest` only once it is
//! complete and, with `checksum`, verified.
//!
//! A file that is there already is kept unless `checksum` says it is not
//! the right one or `force` asks for a fresh copy; its checksum is computed
//! on the host, so nothing is downloaded to find out. A checksum given as
//! the URL of a checksum file is read from that file, fetched by the host
//! in the probe.
//!
//! **`get_url`** downloads on the host itself, with curl (wget when curl is
//! absent), into a temp file beside `dest` that is renamed over it only once
//! the download is complete and, with `checksum`, verified; a failed or
//! mismatching download leaves the old file alone. A file already there is not
//! downloaded again: with `checksum` its digest is computed on the host in the
//! probe, and a mismatch is drift with that digest as evidence; without one it
//! is kept, as Ansible keeps it. `force: true` without `checksum` downloads on
//! every run, so it reports like a command (changed in apply, unknown in
//! check). `timeout` bounds the connection and any stall, not the whole
//! download. `checksum: sha256:<URL>` names a checksum file: the host fetches
//! it in the probe (curl, with the task's headers and credentials, as Ansible
//! does) and the digest is the one on the line for the URL's last part, else
//! for `dest`'s name (`<hex>  <name>` or `<hex> *<name>`, as `sha256sum`
//! writes them), or the file's only digest; a file without that line fails
//! the task and names it.
//!
//! Headers and credentials (`headers`, `url_username`, `url_password`;
//! `force_basic_auth` sends them without waiting for the server to ask) reach
//! curl as a config on its standard input (`--config -`), and so does the URL
//! itself, user, password and query included: none of it is on a command
//! line that `ps` shows, and every probe command a report shows has that text
//! masked as `(hidden)`. Probe keys, changes and messages show a URL without
//! its `user:password@` and with its query cut to `?…`, and name no header
//! value or password. Without curl, wget reads the URL alone on its standard
//! input (`-i -`), so a token in the query is on no command line either; with
//! headers or credentials (in the URL too), `get_url` needs curl on the host
//! (wget would take them as arguments).
//!
//! # Example
//!
//! ```yaml
//! - name: Download the CUDA 12.4 runfile, checked against NVIDIA's list
//!   get_url:
//!     url: https://developer.download.nvidia.com/compute/cuda/12.4.1/local_installers/cuda_12.4.1_550.54.15_linux.run
//!     dest: /opt/installers/
//!     checksum: md5:https://developer.download.nvidia.com/compute/cuda/12.4.1/docs/sidebar/md5sum.txt
//!     mode: "0755"
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, FileState, Kind, WriteOpts};
use crate::modules::kit::http::{curl_line, has_userinfo, shown_url, wget_line, Auth, AuthArgs};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const GET_URL: ModuleSpec = ModuleSpec {
    name: "get_url",
    source: file!(),
    aliases: &["ansible.builtin.get_url"],
    params: &GetUrlArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

/// The digests `checksum` may name, as `<name>sum` computes them, with
/// their length in hex digits.
const ALGORITHMS: &[(&str, usize)] = &[
    ("md5", 32),
    ("sha1", 40),
    ("sha224", 56),
    ("sha256", 64),
    ("sha384", 96),
    ("sha512", 128),
];

/// The largest checksum file read (a mirror's whole list is far smaller).
const MAX_SUMS_BYTES: u32 = 16 << 20;

module_params! {
    struct GetUrlArgs {
        /// http, https, ftp or file URL
        url: String,
        /// the file on the host, or a folder to put it in under the URL's last name
        dest: String,
        /// `<algorithm>:<hex digest>` the file must have (md5, sha1, sha224, sha256, sha384 or sha512), or `<algorithm>:<URL>` of a checksum file
        checksum: Option<String>,
        /// download again even if dest exists (without checksum: every run)
        force: bool = false,
        /// seconds to wait for the connection and between received data
        timeout: Option<i64>,
        /// false: accept any TLS certificate
        validate_certs: bool = true,
        /// its mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
        /// keep a timestamped copy of a file that is replaced
        backup: bool = false,
        ..auth: AuthArgs
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Checksum {
    algorithm: &'static str,
    digest: Digest,
}

#[derive(Clone, Debug, PartialEq)]
enum Digest {
    Hex(String),
    /// A checksum file with a line per file, read when planning.
    Url(String),
}

struct GetUrl {
    url: String,
    /// The URL as reports show it.
    shown: String,
    dest: String,
    /// The URL's last path segment, the file's name when `dest` is a folder.
    name: Option<String>,
    checksum: Option<Checksum>,
    force: bool,
    timeout: i64,
    validate_certs: bool,
    opts: WriteOpts,
    auth: Auth,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = GetUrlArgs::read(p)?;
    let scheme = a.url.split_once("://").map(|(s, _)| s);
    if !matches!(scheme, Some("http" | "https" | "ftp" | "file")) {
        return Err(p.error(
            "url",
            format!(
                "'{}' is not an http, https, ftp or file URL",
                shown_url(&a.url)
            ),
        ));
    }
    p.destructive_path("dest", &a.dest)?;
    let checksum = a
        .checksum
        .filter(|c| !c.is_empty())
        .map(|c| parse_checksum(&c).map_err(|m| p.error("checksum", m)))
        .transpose()?;
    let timeout = a.timeout.unwrap_or(10);
    if timeout <= 0 {
        return Err(p.error("timeout", "timeout must be a positive number of seconds"));
    }
    let auth = Auth::read(p, a.auth)?;
    Ok(Box::new(GetUrl {
        name: url_name(&a.url),
        shown: shown_url(&a.url),
        url: a.url,
        dest: a.dest.trim_end_matches('/').to_string(),
        checksum,
        force: a.force,
        timeout,
        validate_certs: a.validate_certs,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?.with_backup(a.backup),
        auth,
    }))
}

fn parse_checksum(text: &str) -> Result<Checksum, String> {
    let Some((algorithm, hex)) = text.split_once(':') else {
        return Err(format!(
            "checksum '{text}' must be <algorithm>:<hex digest>, such as sha256:…"
        ));
    };
    let (algorithm, _) = ALGORITHMS
        .iter()
        .find(|(a, _)| *a == algorithm.to_ascii_lowercase())
        .ok_or_else(|| {
            let names: Vec<&str> = ALGORITHMS.iter().map(|(a, _)| *a).collect();
            format!(
                "checksum algorithm '{algorithm}' is not one of {}",
                names.join(", ")
            )
        })?;
    let digest = if hex.contains("://") {
        Digest::Url(hex.trim().to_string())
    } else {
        let hex = hex.trim().to_ascii_lowercase();
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("checksum '{text}' has no hex digest after the ':'"));
        }
        Digest::Hex(hex)
    };
    Ok(Checksum { algorithm, digest })
}

/// The digest a checksum file gives `names` (the URL's last part, then
/// dest's): lines `<hex>  <name>` or `<hex> *<name>` as `sha256sum` writes
/// them, or a file holding one digest alone. The first match wins, as in
/// Ansible.
fn digest_in(sums: &str, names: &[&str]) -> Option<String> {
    let lines: Vec<&str> = sums.lines().filter(|l| !l.trim().is_empty()).collect();
    if let [only] = lines[..] {
        if only.split_whitespace().count() == 1 {
            return Some(only.trim().to_string());
        }
    }
    let entries: Vec<(&str, &str)> = lines
        .iter()
        .filter_map(|l| {
            let (hex, name) = l.trim_end_matches('\r').split_once(' ')?;
            let name = name.strip_prefix([' ', '*']).unwrap_or(name);
            Some((hex, name.trim_start_matches("./")))
        })
        .collect();
    names.iter().find_map(|want| {
        entries
            .iter()
            .find(|(_, name)| name == want)
            .map(|(hex, _)| hex.to_string())
    })
}

/// `https://h/a/b.tar.gz?x=1` → `b.tar.gz`.
fn url_name(url: &str) -> Option<String> {
    let path = url.split_once("://")?.1;
    let path = path.split(['?', '#']).next()?;
    let (_, name) = path.rsplit_once('/')?;
    (!name.is_empty() && name != "..").then(|| name.to_string())
}

/// What `dest` is, and the file the download would replace.
#[derive(Clone, Debug, PartialEq)]
struct Target {
    /// `dest` is a folder: the file is `dest/<name>`.
    in_folder: bool,
    found: Found,
}

#[derive(Clone, Debug, PartialEq)]
enum Found {
    Absent,
    /// Something that is not a regular file (a folder, a device).
    NotAFile,
    File {
        mode: u32,
        owner: String,
        group: String,
        /// Its digest with the checksum's algorithm; empty without one.
        sum: String,
    },
}

/// The probe's question: where, and which digest to compute.
struct Where {
    dest: String,
    name: String,
    algorithm: Option<&'static str>,
}

struct TargetFact;

impl Fact for TargetFact {
    type Query = Where;
    type Value = Target;

    fn key(q: &Where) -> String {
        format!(
            "get_url:{}:{}\u{0}{}",
            q.algorithm.unwrap_or("-"),
            q.dest,
            q.name
        )
    }

    fn script(q: &Where) -> String {
        let sum = match q.algorithm {
            Some(a) => format!("{a}sum -- \"$p\" | cut -d' ' -f1"),
            None => "echo".into(),
        };
        format!(
            "d={}; if [ -d \"$d\" ]; then p=\"$d\"/{}; echo folder; else p=\"$d\"; echo file; fi\n\
             if [ ! -e \"$p\" ]; then echo absent; exit 0; fi\n\
             if [ ! -f \"$p\" ]; then echo other; exit 0; fi\n\
             stat -L -c '%a %U %G' -- \"$p\" || exit 1\n{sum}",
            quote(&q.dest),
            quote(&q.name)
        )
    }

    fn parse(q: &Where, r: &ProbeResult) -> Result<Target, ModuleError> {
        let bad = || fact::bad(Self::key(q), format!("cannot read: {}", r.stderr.trim()));
        let mut lines = r.stdout.lines();
        let in_folder = match lines.next() {
            Some("folder") => true,
            Some("file") => false,
            _ => return Err(bad()),
        };
        let found = match lines.next() {
            _ if r.rc != 0 => return Err(bad()),
            Some("absent") => Found::Absent,
            Some("other") => Found::NotAFile,
            Some(attrs) => {
                let f: Vec<&str> = attrs.split(' ').collect();
                let [mode, owner, group] = f[..] else {
                    return Err(bad());
                };
                Found::File {
                    mode: u32::from_str_radix(mode, 8).map_err(|_| bad())?,
                    owner: owner.into(),
                    group: group.into(),
                    sum: lines.next().unwrap_or_default().trim().to_string(),
                }
            }
            None => return Err(bad()),
        };
        Ok(Target { in_folder, found })
    }

    fn render(t: &Target) -> ProbeResult {
        let found = match &t.found {
            Found::Absent => "absent\n".to_string(),
            Found::NotAFile => "other\n".to_string(),
            Found::File {
                mode,
                owner,
                group,
                sum,
            } => format!("{mode:o} {owner} {group}\n{sum}\n"),
        };
        let kind = if t.in_folder { "folder" } else { "file" };
        ProbeResult::ok(format!("{kind}\n{found}"))
    }
}

/// The probe's question about a checksum file.
struct SumsAt {
    url: String,
    /// curl and its options, the part of the command a key may show.
    curl: String,
    /// curl config lines: headers and credentials, never in the key.
    config: Vec<String>,
    /// What the key shows of the URL, headers and credentials.
    shown: String,
}

/// A checksum file's text, or why it could not be fetched.
struct SumsFact;

impl Fact for SumsFact {
    type Query = SumsAt;
    type Value = Result<String, String>;

    fn key(q: &SumsAt) -> String {
        format!("get_url-sums:{} {}", q.curl, q.shown)
    }

    fn script(q: &SumsAt) -> String {
        format!(
            "command -v curl >/dev/null 2>&1 || {{ echo 'a checksum URL needs curl on the host' >&2; exit 127; }}\n{}",
            curl_line(&q.curl, &q.url, &q.config)
        )
    }

    fn parse(_: &SumsAt, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        Ok(match r.rc {
            0 => Ok(r.stdout.clone()),
            _ => Err(r.stderr.trim().to_string()),
        })
    }

    fn render(v: &Self::Value) -> ProbeResult {
        match v {
            Ok(text) => ProbeResult::ok(text.clone()),
            Err(why) => ProbeResult {
                rc: 1,
                stdout: String::new(),
                stderr: why.clone(),
            },
        }
    }
}

impl GetUrl {
    /// curl's options for a fetch that fails on an HTTP error.
    fn curl(&self) -> String {
        let t = self.timeout;
        let tls = if self.validate_certs {
            ""
        } else {
            " --insecure"
        };
        // curl's --max-time would cap a large download; a stall of `t`
        // seconds is what fails it, as wget's --timeout does.
        format!("curl -fsSL{tls} --connect-timeout {t} --speed-limit 1 --speed-time {t}")
    }

    /// The checksum file's URL, when `checksum` names one.
    fn sums_url(&self) -> Option<&str> {
        match &self.checksum {
            Some(Checksum {
                digest: Digest::Url(url),
                ..
            }) => Some(url),
            _ => None,
        }
    }

    /// The same headers and credentials as the download, as in Ansible.
    fn sums_at(&self, url: &str) -> SumsAt {
        SumsAt {
            url: url.to_string(),
            curl: format!("{} --max-filesize {MAX_SUMS_BYTES}", self.curl()),
            config: self.auth.config(),
            shown: self.auth.key_of(url),
        }
    }

    /// The digest the file must have, read from the checksum file when
    /// `checksum` names one; `path` is where the file goes.
    fn expected(&self, facts: &Facts, path: &str) -> Result<Option<String>, ModuleError> {
        let Some(c) = &self.checksum else {
            return Ok(None);
        };
        let url = match &c.digest {
            Digest::Hex(hex) => return Ok(Some(hex.clone())),
            Digest::Url(url) => url,
        };
        let sums = SumsFact::read(facts, &self.sums_at(url))?;
        let url = shown_url(url);
        let sums =
            sums.map_err(|why| ModuleError::Missing(format!("cannot download {url}: {why}")))?;
        let dest_name = path.rsplit('/').next().unwrap_or(path);
        let mut names: Vec<&str> = self
            .name
            .as_deref()
            .into_iter()
            .chain([dest_name])
            .collect();
        names.dedup();
        let hex = digest_in(&sums, &names).ok_or_else(|| {
            ModuleError::Missing(format!("{url} has no checksum for {}", names.join(" or ")))
        })?;
        let len = ALGORITHMS
            .iter()
            .find(|(a, _)| *a == c.algorithm)
            .map_or(0, |(_, n)| *n);
        let hex = hex.to_ascii_lowercase();
        if hex.len() != len || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ModuleError::Missing(format!(
                "{url} gives '{hex}', which is not a {} digest",
                c.algorithm
            )));
        }
        Ok(Some(hex))
    }

    fn question(&self) -> Where {
        Where {
            dest: self.dest.clone(),
            name: self.name.clone().unwrap_or_default(),
            algorithm: self.checksum.as_ref().map(|c| c.algorithm),
        }
    }

    /// Downloads into a temp file beside `path`, checks it against
    /// `expected`, installs it.
    fn download_step(&self, path: &str, expected: Option<&str>) -> String {
        let t = self.timeout;
        let wget_tls = if self.validate_certs {
            ""
        } else {
            " --no-check-certificate"
        };
        let failed = quote(&format!("cannot download {}", self.shown));
        let curl = curl_line(
            &format!("{} -o \"$t\"", self.curl()),
            &self.url,
            &self.auth.config(),
        );
        // wget would put headers and credentials on its command line.
        let fallback = if self.auth.is_empty() && !has_userinfo(&self.url) {
            let wget = wget_line(
                &format!("wget -q{wget_tls} --timeout={t} -O \"$t\""),
                &self.url,
            );
            format!(
                "elif command -v wget >/dev/null 2>&1; then {wget}\
                     else echo 'neither curl nor wget is installed' >&2; false; "
            )
        } else {
            "else echo 'headers or credentials need curl on the host' >&2; false; ".to_string()
        };
        let mut s = files::temp_beside(path, &self.opts);
        s.push_str(&format!(
            "if command -v curl >/dev/null 2>&1; then {curl}{fallback}fi || {{ rm -f \"$t\"; echo {failed} >&2; exit 1; }}\n"
        ));
        if let (Some(c), Some(hex)) = (&self.checksum, expected) {
            s.push_str(&format!(
                "s=$({a}sum -- \"$t\" | cut -d' ' -f1); [ \"$s\" = {hex} ] || {{ rm -f \"$t\"; echo {msg}\"$s\" >&2; exit 1; }}\n",
                a = c.algorithm,
                hex = quote(hex),
                msg = quote(&format!(
                    "{} does not have {} {hex}: it has ",
                    self.shown, c.algorithm
                )),
            ));
        }
        s.push_str(&files::install_temp(&self.opts));
        s
    }
}

impl Module for GetUrl {
    fn probes(&self) -> Vec<Probe> {
        let sums = self.sums_url().map(|u| SumsFact::probe(&self.sums_at(u)));
        std::iter::once(TargetFact::probe(&self.question()))
            .chain(sums)
            .collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let q = self.question();
        let target = TargetFact::read(facts, &q)?;
        let path = if target.in_folder {
            let Some(name) = &self.name else {
                return Err(ModuleError::Refused(format!(
                    "{} is a folder and {} names no file: give dest as the file's path",
                    self.dest, self.shown
                )));
            };
            format!("{}/{name}", self.dest)
        } else {
            self.dest.clone()
        };
        let expected = self.expected(facts, &path)?;
        let mut plan = Plan::noop();
        let download = |before: String| {
            Change::new(
                path.clone(),
                Some(before),
                Some(format!("downloaded from {}", self.shown)),
            )
        };
        match &target.found {
            Found::NotAFile => {
                return Err(ModuleError::Refused(format!(
                    "{path} exists and is not a regular file"
                )))
            }
            Found::Absent => plan.changes.push(download("absent".into())),
            Found::File { sum, .. } => match (&self.checksum, &expected) {
                (Some(c), Some(hex)) if sum != hex => plan.changes.push(
                    download(format!("{} {sum}", c.algorithm))
                        .with_evidence(format!("{}sum on the host", c.algorithm)),
                ),
                (None, _) if self.force => {
                    plan.changes.push(download("present".into()));
                    plan.unknown = Some(format!(
                        "force: whether {} differs from {path} is only known by downloading it",
                        self.shown
                    ));
                }
                _ => {}
            },
        }
        if !plan.changes.is_empty() {
            plan.steps
                .push(self.download_step(&path, expected.as_deref()));
            if let (Some(suffix), Found::File { .. }) = (&self.opts.backup, &target.found) {
                let backup = format!("{path}{suffix}");
                plan.returns.insert("backup_file".into(), backup.into());
            }
        } else if let Found::File {
            mode, owner, group, ..
        } = &target.found
        {
            let st = FileState::of_kind(Kind::File, *mode, owner, group);
            plan.changes = files::attr_changes(&path, &st, &self.opts);
            if !plan.changes.is_empty() {
                plan.steps
                    .push(files::attr_commands(&quote(&path), &self.opts, "exit 1"));
            }
        }
        if !plan.steps.is_empty() {
            plan.effects.push(TargetFact::invalidate(&q));
            plan.effects.push(FileFact::invalidate(&path));
        }
        plan.returns
            .insert("dest".into(), serde_json::Value::String(path));
        Ok(plan)
    }

    /// Without a checksum, `force` downloads on every run: there is no
    /// state to verify afterwards, only the download that ran.
    fn is_command(&self) -> bool {
        self.force && self.checksum.is_none()
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = |algorithm| Where {
        dest: "/opt/x".into(),
        name: "x.tar.gz".into(),
        algorithm,
    };
    for found in [
        Found::Absent,
        Found::NotAFile,
        Found::File {
            mode: 0o640,
            owner: "root".into(),
            group: "adm".into(),
            sum: "ab12".into(),
        },
    ] {
        for in_folder in [true, false] {
            let found = found.clone();
            rt.check::<TargetFact>(&q(Some("sha256")), Target { in_folder, found });
        }
    }
    let sums = SumsAt {
        url: "https://h/SHA256SUMS".into(),
        curl: "curl -fsSL".into(),
        config: Vec::new(),
        shown: "https://h/SHA256SUMS".into(),
    };
    rt.check::<SumsFact>(&sums, Ok("ab12  x.tar.gz\n".into()));
    rt.check::<SumsFact>(&sums, Err("curl: (22) 404".into()));
    rt.check::<TargetFact>(
        &q(None),
        Target {
            in_folder: false,
            found: Found::File {
                mode: 0o644,
                owner: "root".into(),
                group: "root".into(),
                sum: String::new(),
            },
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    const SUM: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn plan_on(params: serde_json::Value, answer: &str) -> Result<Plan, ModuleError> {
        plan_with_sums(params, answer, Ok(""))
    }

    /// Plans on a target answer and, for a checksum URL, the checksum file.
    fn plan_with_sums(
        params: serde_json::Value,
        answer: &str,
        sums: Result<&str, &str>,
    ) -> Result<Plan, ModuleError> {
        let m = build_test(&GET_URL, params).unwrap();
        let probes = m.probes();
        let mut facts = facts_of(&[(&probes[0].key, answer)]);
        if let Some(p) = probes.get(1) {
            let value = sums.map(str::to_string).map_err(str::to_string);
            facts.insert(p.key.clone(), SumsFact::render(&value));
        }
        let plan = m.plan(&facts);
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    const SUMS_URL: &str = "sha256:https://h/rel/SHA256SUMS";

    #[test]
    fn a_checksum_file_gives_the_digest_of_the_urls_name_or_dests() {
        let other = "1".repeat(64);
        let sums = format!("{other}  other.tar\n{SUM} *./nhc.tar.xz\n");
        let params = json!({"url": "https://h/rel/nhc.tar.xz", "dest": "/opt/nhc.tar.xz",
                            "checksum": SUMS_URL});
        let m = build_test(&GET_URL, params.clone()).unwrap();
        let sums_probe = &m.probes()[1];
        assert!(sums_probe.script.contains(
            "curl -fsSL --connect-timeout 10 --speed-limit 1 --speed-time 10 --max-filesize 16777216 --config - <<'NODEPROV_SECRET'\nurl = \"https://h/rel/SHA256SUMS\"\n"
        ), "{}", sums_probe.script);
        let have = format!("file\n644 root root\n{SUM}\n");
        let plan = plan_with_sums(params.clone(), &have, Ok(&sums)).unwrap();
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
        let plan = plan_with_sums(params.clone(), "file\nabsent\n", Ok(&sums)).unwrap();
        assert!(plan.steps[0].contains(&format!("[ \"$s\" = {SUM} ]")));
        // A file of one digest alone, and a line for dest's name only.
        let plan = plan_with_sums(params.clone(), &have, Ok(&format!("{other}\n"))).unwrap();
        assert_eq!(
            plan.changes[0].before.as_deref(),
            Some(&*format!("sha256 {SUM}"))
        );
        let by_dest = json!({"url": "https://h/rel/latest", "dest": "/opt/nhc.tar.xz",
                             "checksum": SUMS_URL});
        let plan = plan_with_sums(by_dest, &have, Ok(&sums)).unwrap();
        assert!(plan.changes.is_empty());

        let err = plan_with_sums(params.clone(), &have, Ok(&format!("{other}  other.tar\n")));
        assert_eq!(
            err,
            Err(ModuleError::Missing(
                "https://h/rel/SHA256SUMS has no checksum for nhc.tar.xz".into()
            ))
        );
        let err = plan_with_sums(params.clone(), &have, Ok("abc  nhc.tar.xz\n")).unwrap_err();
        assert!(err.to_string().contains("not a sha256 digest"), "{err}");
        let err = plan_with_sums(params, &have, Err("curl: (22) 404")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot download https://h/rel/SHA256SUMS: curl: (22) 404"
        );
    }

    #[test]
    fn headers_and_credentials_reach_curl_on_stdin_and_no_key() {
        let password = "pa'ss $(reboot)\nx";
        let params = json!({"url": "https://h/a", "dest": "/opt/a", "checksum": SUMS_URL,
                            "headers": {"X-Token": "t\"1"}, "url_username": "bob",
                            "url_password": password, "force_basic_auth": true});
        let m = build_test(&GET_URL, params.clone()).unwrap();
        let plan = plan_with_sums(params, "file\nabsent\n", Ok(&format!("{SUM}  a\n"))).unwrap();
        let step = &plan.steps[0];
        assert!(step.contains("--config - <<'NODEPROV_SECRET'\nheader = \"X-Token: t\\\"1\"\nuser = \"bob:pa'ss $(reboot)\\nx\"\nbasic\nurl = \"https://h/a\"\nNODEPROV_SECRET\n"), "{step}");
        assert!(step.contains("headers or credentials need curl"), "{step}");
        assert!(!step.contains("wget"), "{step}");
        for p in m.probes() {
            assert!(
                !p.key.contains("pa'ss") && !p.key.contains("bob"),
                "{}",
                p.key
            );
            let shown = crate::base::shell::mask_secrets(&p.script);
            assert!(!shown.contains("pa'ss"), "{shown}");
        }
        let shown = crate::base::shell::mask_secrets(step);
        assert!(
            !shown.contains("pa'ss") && !shown.contains("t\\\"1"),
            "{shown}"
        );
        let text = format!("{:?}{:?}", plan.changes, plan.notes);
        assert!(!text.contains("pa'ss"), "{text}");
    }

    #[test]
    fn a_url_with_a_user_and_a_token_is_on_no_command_line_and_in_no_report() {
        let url = "https://bob:pw-9@h/a?access_token=tk-9";
        let params = json!({"url": url, "dest": "/opt/a",
                            "checksum": "sha256:https://bob:pw-9@h/SUMS?t=tk-9"});
        let m = build_test(&GET_URL, params.clone()).unwrap();
        let plan = plan_with_sums(params, "file\nabsent\n", Ok(&format!("{SUM}  a\n"))).unwrap();
        let step = &plan.steps[0];
        assert!(
            step.contains(&format!("url = \"{url}\"\nNODEPROV_SECRET")),
            "{step}"
        );
        assert!(
            !step.contains("wget"),
            "the user would be on wget's command line: {step}"
        );
        let shown: Vec<String> = m
            .probes()
            .iter()
            .flat_map(|p| [p.key.clone(), crate::base::shell::mask_secrets(&p.script)])
            .chain([crate::base::shell::mask_secrets(step)])
            .chain(plan.changes.iter().map(|c| c.to_string()))
            .collect();
        for text in shown {
            assert!(!text.contains("pw-9") && !text.contains("tk-9"), "{text}");
        }
        assert_eq!(
            plan.changes[0].to_string(),
            "/opt/a: absent → downloaded from https://h/a?…"
        );
    }

    #[test]
    fn without_curl_wget_reads_the_url_and_its_token_on_stdin() {
        let url = "https://h/a?access_token=tk-10";
        let plan = plan_on(json!({"url": url, "dest": "/opt/a"}), "file\nabsent\n").unwrap();
        let step = &plan.steps[0];
        assert!(
            step.contains(&format!(
                "then wget -q --timeout=10 -O \"$t\" -i - <<'NODEPROV_SECRET'\n{url}\nNODEPROV_SECRET\n"
            )),
            "{step}"
        );
        let shown = crate::base::shell::mask_secrets(step);
        assert!(!shown.contains("tk-10"), "{shown}");
        assert!(shown.contains("cannot download https://h/a?…"), "{shown}");
    }

    #[test]
    fn parameters_are_checked() {
        assert!(
            build_error(&GET_URL, json!({"url": "example.com/x", "dest": "/x"}))
                .contains("not an http")
        );
        assert!(build_error(
            &GET_URL,
            json!({"url": "https://h/x", "dest": "/x", "checksum": "crc32:12"})
        )
        .contains("not one of"));
        assert!(build_error(
            &GET_URL,
            json!({"url": "https://h/x", "dest": "/x", "url_password": "p"})
        )
        .contains("needs url_username"));
        assert!(build_error(
            &GET_URL,
            json!({"url": "https://h/x", "dest": "/x", "headers": {"A": "x\r\nB: y"}})
        )
        .contains("line break"));
        assert!(build_error(
            &GET_URL,
            json!({"url": "https://h/x", "dest": "/x", "checksum": "sha256:zz"})
        )
        .contains("no hex digest"));
        assert_eq!(
            url_name("https://h/a/b.tar.gz?x=1#f"),
            Some("b.tar.gz".into())
        );
        assert_eq!(url_name("https://h/a/"), None);
        assert_eq!(
            parse_checksum("SHA256:ABC1"),
            Ok(Checksum {
                algorithm: "sha256",
                digest: Digest::Hex("abc1".into())
            })
        );
    }

    #[test]
    fn a_missing_file_is_downloaded_atomically_and_checked() {
        let params = json!({"url": "https://h/nhc.tar.xz", "dest": "/opt/nhc.tar.xz",
                            "checksum": format!("sha256:{SUM}"), "mode": "0640"});
        let plan = plan_on(params, "file\nabsent\n").unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "/opt/nhc.tar.xz: absent → downloaded from https://h/nhc.tar.xz"
        );
        let step = &plan.steps[0];
        assert!(step.contains("curl -fsSL --connect-timeout 10"), "{step}");
        assert!(step.contains("wget -q --timeout=10"), "{step}");
        assert!(step.contains(&format!(
            "sha256sum -- \"$t\" | cut -d' ' -f1); [ \"$s\" = {SUM} ]"
        )));
        assert!(step.contains("chmod 640 \"$t\""));
        assert!(step.ends_with("mv -f -- \"$t\" \"$p\" || { rm -f \"$t\"; exit 1; }"));
        assert_eq!(plan.returns["dest"], "/opt/nhc.tar.xz");
    }

    #[test]
    fn a_file_with_the_right_checksum_is_not_downloaded_again() {
        let params = json!({"url": "https://h/a", "dest": "/opt/a", "force": true,
                            "checksum": format!("sha256:{SUM}"), "mode": "0644"});
        let have = format!("file\n644 root root\n{SUM}\n");
        assert_eq!(
            plan_on(params.clone(), &have).unwrap().steps,
            Vec::<String>::new()
        );
        let other = have.replace(SUM, "0000");
        let plan = plan_on(params.clone(), &other).unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "/opt/a: sha256 0000 → downloaded from https://h/a"
        );
        assert_eq!(
            plan.changes[0].evidence.as_deref(),
            Some("sha256sum on the host")
        );
        let wrong_mode = have.replace("644", "600");
        let plan = plan_on(params, &wrong_mode).unwrap();
        assert_eq!(plan.changes[0].to_string(), "/opt/a mode: 0600 → 0644");
        assert_eq!(plan.steps, ["chmod 644 /opt/a || { exit 1; }\n"]);
    }

    #[test]
    fn an_existing_file_is_kept_unless_forced() {
        let params = json!({"url": "https://h/a", "dest": "/opt/a"});
        let have = "file\n644 root root\n\n";
        assert_eq!(plan_on(params, have).unwrap().changes, vec![]);
        let params = json!({"url": "https://h/a", "dest": "/opt/a", "force": true,
                            "validate_certs": false, "timeout": 30});
        let plan = plan_on(params.clone(), have).unwrap();
        assert!(plan.unknown.is_some());
        assert!(plan.steps[0].contains("curl -fsSL --insecure --connect-timeout 30"));
        assert!(build_test(&GET_URL, params).unwrap().is_command());
    }

    #[test]
    fn a_folder_dest_takes_the_urls_last_name() {
        let params = json!({"url": "https://h/d/cuda.repo", "dest": "/etc/yum.repos.d/"});
        let m = build_test(&GET_URL, params.clone()).unwrap();
        assert!(m.probes()[0]
            .script
            .starts_with("d=/etc/yum.repos.d; if [ -d"));
        let plan = plan_on(params, "folder\nabsent\n").unwrap();
        assert_eq!(plan.returns["dest"], "/etc/yum.repos.d/cuda.repo");
        assert!(plan.steps[0].starts_with("p=/etc/yum.repos.d/cuda.repo;"));
        let err = plan_on(
            json!({"url": "https://h/", "dest": "/opt"}),
            "folder\nabsent\n",
        );
        assert!(matches!(err, Err(ModuleError::Refused(m)) if m.contains("names no file")));
        let err = plan_on(
            json!({"url": "https://h/a", "dest": "/opt/a"}),
            "file\nother\n",
        );
        assert!(matches!(err, Err(ModuleError::Refused(m)) if m.contains("not a regular file")));
    }
}
