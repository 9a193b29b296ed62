//! `apt_repository`: one `deb`/`deb-src` line in a file under
//! /etc/apt/sources.list.d, then a refresh of the package lists. A PPA
//! (`ppa:owner/name`) becomes Launchpad's line for the host's Ubuntu
//! release, as Ansible expands it.
//!
//! The line is looked for in its own file only. A PPA (`ppa:owner/name`, or
//! `ppa:owner` for its archive named ppa) becomes Ansible's line, `deb
//! https://ppa.launchpadcontent.net/owner/name/ubuntu CODENAME main`, in
//! Ansible's file, `ppa_owner_name_CODENAME.list`, on Ubuntu hosts only
//! (elsewhere the task fails); CODENAME is `codename`, else the host's release
//! from its os-release. Ansible fetches the PPA's signing key from
//! Launchpad; nodeprov never reaches out, so it looks for the key where
//! add-apt-repository and Ansible put it
//! (`/etc/apt/trusted.gpg.d/owner-ubuntu-name.gpg` or `.asc`,
//! `ubuntu-CODENAME-main-owner-name.gpg` in `/etc/apt/keyrings`,
//! `/etc/apt/trusted.gpg.d` or `/usr/share/keyrings`): without one, check
//! reports the line with a note saying so, and apply fails before writing it
//! (an earlier task may install the key).
//!
//! # Example
//!
//! ```yaml
//! - name: Add NVIDIA's CUDA repository on the Ubuntu 22.04 nodes
//!   apt_repository:
//!     repo: deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /
//!     filename: cuda-ubuntu2204-x86_64
//!   when: ansible_facts['distribution'] == 'Ubuntu'
//! - name: Add the graphics-drivers PPA for newer NVIDIA driver branches
//!   apt_repository:
//!     repo: ppa:graphics-drivers/ppa
//!     codename: jammy
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, FileState, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Effect, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub const APT_REPOSITORY: ModuleSpec = ModuleSpec {
    name: "apt_repository",
    source: file!(),
    aliases: &["ansible.builtin.apt_repository"],
    params: &AptRepoArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct AptRepoArgs {
        /// the sources line, e.g. `deb [arch=amd64] https://host/path stable main`, or a PPA, `ppa:owner/name`
        repo: String,
        /// the line is there or not
        state: Presence = Presence::Present,
        /// the file's name without `.list` (default: from the URL, as Ansible names it)
        filename: Option<String>,
        /// refresh the package lists after a change (default true)
        update_cache: bool = true,
        /// the file's mode
        mode: Option<Mode>,
        /// a PPA's Ubuntu release (default: the host's, from its os-release)
        codename: Option<String>,
    }
}

const SOURCES_D: &str = "/etc/apt/sources.list.d";

/// Where Ansible's module fetches PPAs from.
const PPA_URI: &str = "https://ppa.launchpadcontent.net";

enum Source {
    Line { line: String, path: String },
    Ppa(Ppa),
}

struct AptRepo {
    source: Source,
    present: bool,
    update_cache: bool,
    opts: WriteOpts,
}

/// A Launchpad PPA, whose line and file name need the host's release.
struct Ppa {
    owner: String,
    name: String,
    codename: Option<String>,
    /// The file's name without `.list`, when the playbook gives it.
    filename: Option<String>,
}

/// The same line however it is spaced.
fn normalized(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Ansible's file name cleanup: runs of anything but ASCII letters and
/// digits become one underscore, none at either end.
fn cleaned(s: &str) -> String {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Ansible's `_suggest_filename`: the URL's host and path, without scheme,
/// options or credentials, with every other character an underscore.
fn suggested_filename(line: &str) -> String {
    let mut s = String::new();
    let mut in_options = false;
    for c in line.chars() {
        match c {
            '[' => in_options = true,
            ']' => in_options = false,
            _ if !in_options => s.push(c),
            _ => {}
        }
    }
    let url = s
        .split_whitespace()
        .find(|w| !matches!(*w, "deb" | "deb-src"))
        .unwrap_or("");
    let url = url.split_once("://").map_or(url, |(_, rest)| rest);
    let url = url.rsplit_once('@').map_or(url, |(_, host)| host);
    cleaned(url)
}

/// Launchpad's names for people, teams and archives.
fn launchpad_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
}

fn release_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AptRepoArgs::read(p)?;
    p.one_line("repo", &a.repo)?;
    let filename = a
        .filename
        .map(|f| f.strip_suffix(".list").unwrap_or(&f).to_string());
    if let Some(name) = &filename {
        if name.is_empty() || name.contains(['/', '\n']) || name.starts_with('.') {
            return Err(p.error("filename", format!("'{name}' is not a file name")));
        }
    }
    let source = match a.repo.trim().strip_prefix("ppa:") {
        Some(ppa) => Source::Ppa(read_ppa(p, ppa, a.codename, filename)?),
        None => {
            if a.codename.is_some() {
                return Err(p.error("codename", "codename is only for a PPA (ppa:owner/name)"));
            }
            let line = read_line(p, &a.repo)?;
            let name = filename.unwrap_or_else(|| suggested_filename(&line));
            let path = format!("{SOURCES_D}/{name}.list");
            Source::Line { line, path }
        }
    };
    Ok(Box::new(AptRepo {
        source,
        present: a.state == Presence::Present,
        update_cache: a.update_cache,
        opts: WriteOpts::new(a.mode, None, None),
    }))
}

fn read_line(p: &Params, repo: &str) -> Result<String, ParamError> {
    let line = normalized(repo);
    let kind = line.split(' ').next().unwrap_or("");
    if !matches!(kind, "deb" | "deb-src") || line.split(' ').count() < 3 {
        return Err(p.error(
            "repo",
            format!(
                "'{repo}' is not a sources line (deb|deb-src [options] URL suite [components]) nor a PPA (ppa:owner/name)"
            ),
        ));
    }
    Ok(line)
}

/// `owner/name`, or `owner` alone for the owner's archive named `ppa`.
fn read_ppa(
    p: &Params,
    ppa: &str,
    codename: Option<String>,
    filename: Option<String>,
) -> Result<Ppa, ParamError> {
    let (owner, name) = ppa.split_once('/').unwrap_or((ppa, "ppa"));
    if !launchpad_name(owner) || !launchpad_name(name) {
        return Err(p.error("repo", format!("'ppa:{ppa}' is not a PPA (ppa:owner/name)")));
    }
    if let Some(c) = codename.as_deref().filter(|c| !release_name(c)) {
        return Err(p.error("codename", format!("'{c}' is not an Ubuntu release name")));
    }
    Ok(Ppa {
        owner: owner.into(),
        name: name.into(),
        codename,
        filename,
    })
}

/// What the host says about a PPA: its distribution and release, the
/// signing keys it may hold for it, and the sources file.
#[derive(Clone, Debug, PartialEq)]
struct PpaHost {
    /// os-release's `ID`.
    distro: String,
    /// The `codename` parameter, else os-release's release name (what
    /// `ansible_distribution_release` says).
    codename: String,
    /// Key files whose names mention the PPA's owner and name.
    keys: Vec<String>,
    file: Option<FileState>,
}

/// The folders Ansible looks for apt keys in, besides apt-key's keyring.
const KEY_DIRS: [&str; 3] = [
    "/etc/apt/keyrings",
    "/etc/apt/trusted.gpg.d",
    "/usr/share/keyrings",
];

impl Ppa {
    fn spec(&self) -> String {
        format!("ppa:{}/{}", self.owner, self.name)
    }

    fn line(&self, codename: &str) -> String {
        format!(
            "deb {PPA_URI}/{}/{}/ubuntu {codename} main",
            self.owner, self.name
        )
    }

    /// Ansible names the file after the PPA and the release it is for.
    fn path(&self, codename: &str) -> String {
        match &self.filename {
            Some(name) => format!("{SOURCES_D}/{name}.list"),
            None => format!("{SOURCES_D}/{}_{codename}.list", cleaned(&self.spec())),
        }
    }

    /// Where a signing key for this PPA is found: where add-apt-repository
    /// puts it, and where Ansible's module writes it with gpg.
    fn key_paths(&self, codename: &str) -> Vec<String> {
        let (o, n) = (&self.owner, &self.name);
        let mut paths = vec![
            format!("/etc/apt/trusted.gpg.d/{o}-ubuntu-{n}.gpg"),
            format!("/etc/apt/trusted.gpg.d/{o}-ubuntu-{n}.asc"),
        ];
        paths.extend(
            KEY_DIRS
                .iter()
                .map(|d| format!("{d}/ubuntu-{codename}-main-{o}-{n}.gpg")),
        );
        paths
    }
}

struct PpaFact;

impl Fact for PpaFact {
    type Query = Ppa;
    type Value = PpaHost;

    fn key(ppa: &Ppa) -> String {
        format!(
            "apt:{}:{}:{}",
            ppa.spec(),
            ppa.codename.as_deref().unwrap_or_default(),
            ppa.filename.as_deref().unwrap_or_default()
        )
    }

    fn script(ppa: &Ppa) -> String {
        let path = match &ppa.filename {
            Some(_) => quote(&ppa.path("")),
            None => format!(
                "{}_\"$c\".list",
                quote(&format!("{SOURCES_D}/{}", cleaned(&ppa.spec())))
            ),
        };
        format!(
            r#"c={codename}; id=
for f in /etc/os-release /usr/lib/os-release; do
  [ -f "$f" ] || continue
  id=$(sed -n 's/^ID=//p' "$f" | tr -d "\"'")
  [ -n "$c" ] || c=$(sed -n 's/^VERSION_CODENAME=//p' "$f" | tr -d "\"'")
  [ -n "$c" ] || c=$(sed -n 's/^UBUNTU_CODENAME=//p' "$f" | tr -d "\"'")
  break
done
printf '%s\n%s\n' "$id" "$c"
for f in {dirs}; do case "${{f##*/}}" in *{owner}*{name}*) [ -f "$f" ] && echo "key $f";; esac; done
p={path}
{state}"#,
            codename = quote(ppa.codename.as_deref().unwrap_or_default()),
            dirs = KEY_DIRS.map(|d| format!("{d}/*")).join(" "),
            owner = quote(&ppa.owner),
            name = quote(&ppa.name),
            state = FileFact::state_script(),
        )
    }

    fn parse(ppa: &Ppa, r: &ProbeResult) -> Result<PpaHost, ModuleError> {
        let bad = || fact::bad(Self::key(ppa), format!("malformed answer: {:?}", r.stdout));
        let (distro, rest) = r.stdout.split_once('\n').ok_or_else(bad)?;
        let (codename, mut rest) = rest.split_once('\n').ok_or_else(bad)?;
        let mut keys = Vec::new();
        while let Some((key, after)) = rest.strip_prefix("key ").and_then(|k| k.split_once('\n')) {
            keys.push(key.to_string());
            rest = after;
        }
        let state = ProbeResult {
            stdout: rest.to_string(),
            ..r.clone()
        };
        let file = FileFact::parse(&ppa.path(codename), &state)?;
        Ok(PpaHost {
            distro: distro.into(),
            codename: codename.into(),
            keys,
            file,
        })
    }

    fn render(v: &PpaHost) -> ProbeResult {
        let file = FileFact::render(&v.file);
        let keys: String = v.keys.iter().map(|k| format!("key {k}\n")).collect();
        ProbeResult {
            stdout: format!("{}\n{}\n{keys}{}", v.distro, v.codename, file.stdout),
            ..file
        }
    }
}

impl AptRepo {
    /// The line, its file and what the host has there; for a PPA also
    /// whether its signing key is missing.
    fn resolve(&self, facts: &Facts) -> Result<Resolved, ModuleError> {
        let ppa = match &self.source {
            Source::Line { line, path } => {
                return Ok(Resolved {
                    line: line.clone(),
                    path: path.clone(),
                    current: FileFact::read(facts, path)?,
                    key_missing: None,
                    host: None,
                })
            }
            Source::Ppa(ppa) => ppa,
        };
        let host = PpaFact::read(facts, ppa)?;
        if host.distro != "ubuntu" {
            return Err(ModuleError::Unsupported(format!(
                "{}: PPAs are built for Ubuntu, and this host runs '{}'",
                ppa.spec(),
                host.distro
            )));
        }
        if !release_name(&host.codename) {
            return Err(ModuleError::Missing(format!(
                "{}: cannot tell the host's Ubuntu release from its os-release ('{}'): set codename",
                ppa.spec(),
                host.codename
            )));
        }
        let wanted = ppa.key_paths(&host.codename);
        let has_key = host.keys.iter().any(|k| wanted.contains(k));
        Ok(Resolved {
            line: ppa.line(&host.codename),
            path: ppa.path(&host.codename),
            current: host.file.clone(),
            key_missing: (!has_key).then(|| KeyMissing {
                spec: ppa.spec(),
                paths: wanted,
            }),
            host: Some(host),
        })
    }

    /// Adds or removes `line` in the file at `path`.
    fn plan_line(
        &self,
        line: &str,
        path: &str,
        current: Option<&FileState>,
    ) -> Result<Plan, ModuleError> {
        let missing = match self.present {
            true => WhenMissing::Create,
            false => WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(path, current, missing)? else {
            return Ok(Plan::noop());
        };
        let ours = |l: &&str| normalized(l) == line;
        let has = text.lines().any(|l| ours(&l));
        let mut plan = match (self.present, has) {
            (true, true) | (false, false) => return Ok(Plan::noop()),
            (true, false) => {
                let sep = if text.is_empty() || text.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                let new = format!("{text}{sep}{line}\n");
                files::plan_content(path, current, &new, &self.opts, true)?
            }
            (false, true) => {
                let rest: String = text
                    .lines()
                    .filter(|l| !ours(l))
                    .map(|l| format!("{l}\n"))
                    .collect();
                if rest.trim().is_empty() {
                    let mut plan = Plan::noop();
                    plan.changes
                        .push(Change::new(path, None, Some("absent".into())));
                    plan.steps.push(format!("rm -f -- {}", quote(path)));
                    plan.effects.push(FileFact::predict(path, &None));
                    plan
                } else {
                    files::plan_content(path, current, &rest, &self.opts, true)?
                }
            }
        };
        for c in plan.changes.iter_mut().filter(|c| c.subject == path) {
            let (before, after) = match self.present {
                true => ("no line".to_string(), line.to_string()),
                false => (line.to_string(), "no line".to_string()),
            };
            c.before = Some(before);
            c.after = Some(after);
        }
        if self.update_cache {
            plan.steps.push(
                "apt-get update -q || { echo 'package cache refresh failed' >&2; exit 1; }".into(),
            );
        }
        Ok(plan)
    }
}

struct Resolved {
    line: String,
    path: String,
    current: Option<FileState>,
    key_missing: Option<KeyMissing>,
    /// A PPA's probe answer, predicted anew after a change.
    host: Option<PpaHost>,
}

/// A PPA's signing key, which Ansible fetches from Launchpad and nodeprov,
/// which never reaches out to the network, does not.
struct KeyMissing {
    spec: String,
    paths: Vec<String>,
}

impl KeyMissing {
    fn message(&self) -> String {
        format!(
            "{}: its signing key is not installed (none of {}); Ansible fetches it from Launchpad, nodeprov does not: install it first (apt_key, or get_url into /etc/apt/trusted.gpg.d/)",
            self.spec,
            self.paths.join(", ")
        )
    }

    /// A step that fails unless a key is there by the time the apply runs
    /// (an earlier task may install it).
    fn guard(&self) -> String {
        let tests: Vec<String> = self
            .paths
            .iter()
            .map(|p| format!("[ -f {} ]", quote(p)))
            .collect();
        format!(
            "{} || {{ echo {} >&2; exit 1; }}",
            tests.join(" || "),
            quote(&self.message())
        )
    }
}

impl Module for AptRepo {
    fn probes(&self) -> Vec<Probe> {
        match &self.source {
            Source::Line { path, .. } => vec![FileFact::probe(path)],
            Source::Ppa(ppa) => vec![PpaFact::probe(ppa)],
        }
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let r = self.resolve(facts)?;
        let mut plan = self.plan_line(&r.line, &r.path, r.current.as_ref())?;
        if let (Source::Ppa(ppa), Some(host)) = (&self.source, r.host) {
            if plan.steps.is_empty() {
                return Ok(plan);
            }
            let file = plan.effects.iter().find_map(|e| match e {
                Effect::Predict(k, answer) if *k == FileFact::key(&r.path) => Some(answer),
                _ => None,
            });
            let file = file.map_or(Ok(None), |a| FileFact::parse(&r.path, a))?;
            plan.effects
                .push(PpaFact::predict(ppa, &PpaHost { file, ..host }));
            if let Some(missing) = r.key_missing.filter(|_| self.present) {
                plan.notes.push(missing.message());
                plan.steps.insert(0, missing.guard());
            }
        }
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let ppa = Ppa {
        owner: "graphics-drivers".into(),
        name: "ppa".into(),
        codename: None,
        filename: None,
    };
    let host = PpaHost {
        distro: "ubuntu".into(),
        codename: "jammy".into(),
        keys: vec!["/etc/apt/trusted.gpg.d/graphics-drivers-ubuntu-ppa.gpg".into()],
        file: Some(FileState::written("deb x y\n", 0o644, "root", "root")),
    };
    rt.check::<PpaFact>(&ppa, host.clone());
    rt.check::<PpaFact>(
        &ppa,
        PpaHost {
            distro: String::new(),
            codename: String::new(),
            keys: vec![],
            file: None,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, file_content, file_facts, settled,
    };
    use serde_json::json;

    const REPO: &str = "deb [signed-by=/usr/share/keyrings/cuda.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /";

    #[test]
    fn filenames_follow_ansible() {
        assert_eq!(
            suggested_filename("deb http://archive.canonical.com/ubuntu hardy partner"),
            "archive_canonical_com_ubuntu"
        );
        assert_eq!(
            suggested_filename(REPO),
            "developer_download_nvidia_com_compute_cuda_repos_ubuntu2204_x86_64"
        );
        assert_eq!(
            suggested_filename("deb https://u:p@host/x stable main"),
            "host_x"
        );
    }

    #[test]
    fn adds_the_line_refreshes_and_replans_to_a_noop() {
        let m = build_test(&APT_REPOSITORY, json!({"repo": REPO, "filename": "cuda"})).unwrap();
        let path = "/etc/apt/sources.list.d/cuda.list";
        let facts = file_facts(path, None, 0o644);
        let plan = m.plan(&facts).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        assert_eq!(plan.changes[0].after.as_deref(), Some(REPO));
        assert!(plan.steps[1].starts_with("apt-get update -q ||"));
        let after = settled(&facts, &plan);
        assert_eq!(file_content(&after, path), format!("{REPO}\n"));
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
        let spaced = file_facts(path, Some(&REPO.replace(' ', "  ")), 0o644);
        assert_eq!(m.plan(&spaced).unwrap(), Plan::noop());
    }

    #[test]
    fn absent_removes_the_line_or_the_file() {
        let path = "/etc/apt/sources.list.d/cuda.list";
        let m = build_test(
            &APT_REPOSITORY,
            json!({"repo": REPO, "filename": "cuda.list", "state": "absent", "update_cache": false}),
        )
        .unwrap();
        let only = file_facts(path, Some(&format!("{REPO}\n")), 0o644);
        let plan = m.plan(&only).unwrap();
        assert_eq!(plan.steps, [format!("rm -f -- {path}")]);
        let two = file_facts(path, Some(&format!("# keep\n{REPO}\n")), 0o644);
        let plan = m.plan(&two).unwrap();
        assert_eq!(file_content(&settled(&two, &plan), path), "# keep\n");
        assert_eq!(
            m.plan(&file_facts(path, None, 0o644)).unwrap(),
            Plan::noop()
        );
    }

    fn ubuntu(ppa: &Ppa, keys: &[&str], file: Option<&str>) -> Facts {
        let host = PpaHost {
            distro: "ubuntu".into(),
            codename: "jammy".into(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            file: file.map(|c| FileState::written(c, 0o644, "root", "root")),
        };
        facts_of(&[(&PpaFact::key(ppa), &PpaFact::render(&host).stdout)])
    }

    fn ppa(params: serde_json::Value) -> (Box<dyn Module>, Ppa) {
        let m = build_test(&APT_REPOSITORY, params.clone()).unwrap();
        let repo = params["repo"]
            .as_str()
            .unwrap()
            .strip_prefix("ppa:")
            .unwrap();
        let (owner, name) = repo.split_once('/').unwrap_or((repo, "ppa"));
        let q = Ppa {
            owner: owner.into(),
            name: name.into(),
            codename: params["codename"].as_str().map(Into::into),
            filename: params["filename"].as_str().map(Into::into),
        };
        (m, q)
    }

    const DRIVERS: &str =
        "deb https://ppa.launchpadcontent.net/graphics-drivers/ppa/ubuntu jammy main";

    #[test]
    fn a_ppa_becomes_launchpads_line_in_ansibles_file() {
        let (m, q) = ppa(json!({"repo": "ppa:graphics-drivers/ppa"}));
        let key = "/etc/apt/trusted.gpg.d/graphics-drivers-ubuntu-ppa.gpg";
        let facts = ubuntu(&q, &[key], None);
        let plan = m.plan(&facts).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        assert_eq!(
            plan.changes[0].subject,
            "/etc/apt/sources.list.d/ppa_graphics_drivers_ppa_jammy.list"
        );
        assert_eq!(plan.changes[0].after.as_deref(), Some(DRIVERS));
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        assert_eq!(m.plan(&settled(&facts, &plan)).unwrap(), Plan::noop());

        let (m, q) = ppa(json!({"repo": "ppa:deadsnakes", "codename": "noble",
                                "filename": "snakes", "update_cache": false}));
        let key = "/etc/apt/keyrings/ubuntu-jammy-main-deadsnakes-ppa.gpg";
        let plan = m.plan(&ubuntu(&q, &[key], None)).unwrap();
        assert_eq!(
            plan.changes[0].subject,
            "/etc/apt/sources.list.d/snakes.list"
        );
        assert_eq!(
            plan.changes[0].after.as_deref(),
            Some("deb https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu jammy main")
        );
        let gone = json!({"repo": "ppa:graphics-drivers/ppa", "state": "absent"});
        let (m, q) = ppa(gone);
        let plan = m
            .plan(&ubuntu(&q, &[], Some(&format!("{DRIVERS}\n"))))
            .unwrap();
        assert_eq!(
            plan.steps[0],
            "rm -f -- /etc/apt/sources.list.d/ppa_graphics_drivers_ppa_jammy.list"
        );
    }

    #[test]
    fn a_ppa_without_its_key_is_reported_and_stops_the_apply() {
        let (m, q) = ppa(json!({"repo": "ppa:graphics-drivers/ppa"}));
        let elsewhere = "/etc/apt/keyrings/other-graphics-drivers-ppa.gpg";
        let plan = m.plan(&ubuntu(&q, &[elsewhere], None)).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        assert!(
            plan.notes[0].contains("signing key is not installed"),
            "{:?}",
            plan.notes
        );
        assert!(plan.steps[0]
            .starts_with("[ -f /etc/apt/trusted.gpg.d/graphics-drivers-ubuntu-ppa.gpg ] || "));
        assert!(
            plan.steps[0].ends_with(">&2; exit 1; }"),
            "{}",
            plan.steps[0]
        );
        let there = ubuntu(&q, &[], Some(&format!("{DRIVERS}\n")));
        assert_eq!(m.plan(&there).unwrap(), Plan::noop());
    }

    #[test]
    fn ppas_are_for_ubuntu_only() {
        let (m, q) = ppa(json!({"repo": "ppa:graphics-drivers/ppa"}));
        let debian = PpaHost {
            distro: "debian".into(),
            codename: "bookworm".into(),
            keys: vec![],
            file: None,
        };
        let facts = facts_of(&[(&PpaFact::key(&q), &PpaFact::render(&debian).stdout)]);
        let err = m.plan(&facts).unwrap_err().to_string();
        assert!(err.contains("PPAs are built for Ubuntu"), "{err}");
        let unknown = PpaHost {
            distro: "ubuntu".into(),
            codename: String::new(),
            ..debian
        };
        let facts = facts_of(&[(&PpaFact::key(&q), &PpaFact::render(&unknown).stdout)]);
        let err = m.plan(&facts).unwrap_err().to_string();
        assert!(err.contains("set codename"), "{err}");
    }

    #[test]
    fn hostile_ppas_are_refused() {
        for repo in ["ppa:", "ppa:a/b c", "ppa:$(x)/y", "ppa:../y", "ppa:o/n/m"] {
            let err = build_error(&APT_REPOSITORY, json!({"repo": repo}));
            assert!(err.contains("is not a PPA"), "{repo}: {err}");
        }
        let err = build_error(
            &APT_REPOSITORY,
            json!({"repo": "ppa:o/n", "codename": "jammy; rm"}),
        );
        assert!(err.contains("not an Ubuntu release name"), "{err}");
        let (m, q) = ppa(json!({"repo": "ppa:o/n", "filename": "it's $(x)"}));
        assert!(m.probes()[0]
            .script
            .contains(r"'/etc/apt/sources.list.d/it'\''s $(x).list'"));
        let key = "/etc/apt/trusted.gpg.d/o-ubuntu-n.gpg";
        assert_sh_syntax(m.as_ref(), &m.plan(&ubuntu(&q, &[key], None)).unwrap());
    }

    #[test]
    fn errors_are_clear() {
        assert!(
            build_error(&APT_REPOSITORY, json!({"repo": "ppy:x/y"})).contains("not a sources line")
        );
        assert!(
            build_error(&APT_REPOSITORY, json!({"repo": REPO, "codename": "jammy"}))
                .contains("only for a PPA")
        );
        assert!(
            build_error(&APT_REPOSITORY, json!({"repo": REPO, "filename": "../x"}))
                .contains("not a file name")
        );
    }
}
