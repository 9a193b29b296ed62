//! `cuda_env`: a CUDA toolkit usable by every process, not just login shells.
//!
//! Libraries are made findable through an ld.so.conf.d file and ldconfig
//! (profile.d is not read by `ssh host cmd`); the profile script only adds
//! PATH and CUDA_HOME for people. Entries left by another CUDA major (a
//! `988_cuda-12.conf` beside CUDA 13) are reported, since they make programs
//! load a libcudart that does not match the toolkit.
//!
//! **`cuda_env`**, nodeprov's own module, takes `cuda_home` (default
//! `/usr/local/cuda`), `version` (pin), `profile` (default
//! `/etc/profile.d/cuda.sh`, rendered from `templates/cuda.sh.j2`),
//! `ldconfig_file` (default `/etc/ld.so.conf.d/cuda.conf`), `remove_stale`.
//! Libraries are found through `ld.so.conf.d` and `ldconfig` (run only when
//! that file changed), because non-interactive `ssh host cmd` never reads
//! `profile.d`. It reports a missing toolkit, a version that differs from the
//! pin, and leftover `ld.so.conf.d` entries of another CUDA major
//! (`988_cuda-12.conf` beside CUDA 13), which cause mixed `libcudart` loads.
//! When another `ld.so.conf.d` file already lists the toolkit's libraries
//! (through `cuda_home` or its resolved folder, such as the `000_cuda.conf` and
//! `cuda-12-4.conf` NVIDIA's RPMs and debs install) and its own file does not
//! exist yet, it adds none beside them and says so; the `cuda` alternative
//! (`/usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-12.4`) is
//! followed, never changed.
//!
//! # Example
//!
//! ```yaml
//! - name: Make CUDA 12.4 findable by Slurm jobs and login shells alike
//!   cuda_env:
//!     cuda_home: /usr/local/cuda-12.4
//!     version: "12.4"
//!     remove_stale: true
//! ```

use std::sync::LazyLock;

use regex::Regex;
use serde_json::json;

use crate::base::shell::{quote, sbin};
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::files::{self, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, ParamValue, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const CUDA_ENV: ModuleSpec = ModuleSpec {
    name: "cuda_env",
    source: file!(),
    aliases: &[],
    params: &CudaArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct CudaArgs {
        /// the toolkit folder (default /usr/local/cuda)
        cuda_home: ConfPath = ConfPath::new("/usr/local/cuda"),
        /// the version the toolkit must have, such as 13 or 13.0
        version: Option<String>,
        /// the profile.d script that puts the toolkit on PATH for people
        profile: ConfPath = ConfPath::new("/etc/profile.d/cuda.sh"),
        /// the ld.so.conf.d file that makes its libraries findable
        ldconfig_file: ConfPath = ConfPath::new("/etc/ld.so.conf.d/cuda.conf"),
        /// delete ld.so.conf.d files of another CUDA major instead of reporting them
        remove_stale: bool = false,
    }
}

/// An absolute path that ld.so.conf and the profile script can hold.
struct ConfPath(String);

impl ConfPath {
    fn new(path: &str) -> Self {
        ConfPath(path.to_string())
    }
}

/// ld.so.conf splits on blanks, `:` and `,`; a newline would end a comment
/// in the profile script.
impl ParamValue for ConfPath {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        Self::read_or(p, key, ConfPath(String::new()))
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        let v = p.str(key)?.unwrap_or(default.0);
        if !v.starts_with('/') || v.chars().any(|c| c.is_whitespace() || ":,#".contains(c)) {
            return Err(p.error(
                key,
                format!("'{v}' must be an absolute path without blanks, ':', ',' or '#'"),
            ));
        }
        Ok(ConfPath(v.trim_end_matches('/').to_string()))
    }
}

const PROFILE_TEMPLATE: &str = include_str!("../../templates/cuda.sh.j2");
const LD_CONF_DIR: &str = "/etc/ld.so.conf.d";

static NVCC_RELEASE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"release (\d+(?:\.\d+)*)").expect("valid"));
static CUDA_DIR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"/cuda-(\d+)").expect("valid"));
static LIBCUDART: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"libcudart\.so\.(\d+)").expect("valid"));

struct CudaEnv {
    cuda_home: String,
    version: Option<String>,
    profile: String,
    profile_text: String,
    ldconfig_file: String,
    remove_stale: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = CudaArgs::read(p)?;
    let (cuda_home, ldconfig_file) = (a.cuda_home.0, a.ldconfig_file.0);
    if !ldconfig_file.starts_with("/etc/ld.so.conf.d/") || !ldconfig_file.ends_with(".conf") {
        return Err(p.error(
            "ldconfig_file",
            "ldconfig only reads /etc/ld.so.conf.d/*.conf",
        ));
    }
    if a.version
        .as_deref()
        .is_some_and(|v| v.is_empty() || !v.split('.').all(|n| n.parse::<u32>().is_ok()))
    {
        return Err(p.error("version", "version must look like 13 or 13.0"));
    }
    let vars = json!({"cuda_home": cuda_home, "ldconfig_file": ldconfig_file});
    let profile_text = p
        .ctx
        .templates
        .render_str(PROFILE_TEMPLATE, &vars)
        .map_err(|e| p.error("cuda_home", format!("cuda.sh template: {e}")))?;
    Ok(Box::new(CudaEnv {
        profile: a.profile.0,
        profile_text: format!("{}\n", profile_text.trim_end()),
        cuda_home,
        version: a.version,
        ldconfig_file,
        remove_stale: a.remove_stale,
    }))
}

/// Toolkits, the version of `home`, its library folders, every
/// ld.so.conf.d file and the CUDA entries of the ld cache, in sections.
struct Toolkit;

impl Fact for Toolkit {
    type Query = str;
    type Value = CudaFacts;

    fn key(home: &str) -> String {
        format!("cuda:{home}")
    }

    fn script(home: &str) -> String {
        format!(
            r###"h={h}
echo @@home; [ -d "$h" ] && readlink -f -- "$h"
echo @@toolkits; for d in /usr/local/cuda /usr/local/cuda-*; do [ -e "$d" ] && echo "$d $(readlink -f -- "$d")"; done
echo @@version; [ -r "$h/version.json" ] && head -c 65536 -- "$h/version.json"
echo; echo @@nvcc; [ -x "$h/bin/nvcc" ] && "$h/bin/nvcc" --version 2>&1
echo @@libdirs; for d in "$h/lib64" "$h"/targets/*/lib; do [ -d "$d" ] && echo "$d"; done
echo @@ldconf; for f in {dir}/*.conf; do [ -f "$f" ] && {{ echo "## $f"; cat -- "$f"; echo; }}; done
echo @@ldcache; {ldconfig} -p 2>/dev/null | grep -E 'libcudart|libcuda\.'
true"###,
            h = quote(home),
            dir = LD_CONF_DIR,
            ldconfig = sbin("ldconfig"),
        )
    }

    fn parse(_: &str, r: &ProbeResult) -> Result<CudaFacts, ModuleError> {
        Ok(CudaFacts::parse(&r.stdout))
    }

    fn render(f: &CudaFacts) -> ProbeResult {
        let mut out = String::from("@@home\n");
        out.extend(f.home.iter().map(|h| format!("{h}\n")));
        out.push_str("@@toolkits\n");
        out.extend(f.toolkits.iter().map(|t| format!("{t} {t}\n")));
        out.push_str("@@version\n");
        out.extend(
            f.version
                .iter()
                .map(|v| format!("{}\n", json!({"cuda": {"version": v}}))),
        );
        out.push_str("@@libdirs\n");
        out.extend(f.libdirs.iter().map(|d| format!("{d}\n")));
        out.push_str("@@ldconf\n");
        out.extend(
            f.ldconf
                .iter()
                .map(|(path, text)| format!("## {path}\n{text}")),
        );
        out.push_str("@@ldcache\n");
        out.push_str(&f.ldcache);
        ProbeResult::ok(out)
    }
}

#[derive(Debug, Default, PartialEq)]
struct CudaFacts {
    /// The resolved toolkit folder, `None` when `cuda_home` is missing.
    home: Option<String>,
    toolkits: Vec<String>,
    version: Option<String>,
    libdirs: Vec<String>,
    /// `(file, content)` of every ld.so.conf.d file.
    ldconf: Vec<(String, String)>,
    ldcache: String,
}

fn sections(text: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("@@") {
            Some(name) => out.push((name, String::new())),
            None => {
                if let Some((_, body)) = out.last_mut() {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

impl CudaFacts {
    fn parse(text: &str) -> CudaFacts {
        let mut f = CudaFacts::default();
        let mut nvcc = None;
        for (name, body) in sections(text) {
            match name {
                "home" => f.home = body.lines().next().map(str::to_string),
                "toolkits" => {
                    f.toolkits = body
                        .lines()
                        .filter_map(|l| l.split_once(' ').map(|(_, real)| real.to_string()))
                        .collect();
                    f.toolkits.sort();
                    f.toolkits.dedup();
                }
                "version" => {
                    f.version = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["cuda"]["version"].as_str().map(str::to_string))
                }
                "nvcc" => nvcc = NVCC_RELEASE.captures(&body).map(|c| c[1].to_string()),
                "libdirs" => f.libdirs = body.lines().map(str::to_string).collect(),
                "ldconf" => f.ldconf = split_files(&body),
                "ldcache" => f.ldcache = body,
                _ => {}
            }
        }
        f.version = f.version.or(nvcc);
        f
    }

    /// The toolkit's major version, from its version or its folder name.
    fn major(&self) -> Option<u32> {
        self.version
            .as_deref()
            .and_then(|v| v.split('.').next()?.parse().ok())
            .or_else(|| {
                self.home
                    .as_deref()
                    .and_then(|h| path_majors(h).first().copied())
            })
    }
}

fn split_files(body: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        match line.strip_prefix("## ") {
            Some(path) => out.push((path.to_string(), String::new())),
            None => {
                if let Some((_, text)) = out.last_mut() {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    out
}

/// CUDA majors named by versioned toolkit paths (`/usr/local/cuda-12.4/…`).
fn path_majors(text: &str) -> Vec<u32> {
    let mut majors: Vec<u32> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| {
            CUDA_DIR
                .captures_iter(l)
                .filter_map(|c| c[1].parse().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    majors.sort_unstable();
    majors.dedup();
    majors
}

/// `13.0.88` satisfies a pin of `13` or `13.0`.
fn version_matches(have: &str, pin: &str) -> bool {
    have == pin || have.starts_with(&format!("{pin}."))
}

impl Module for CudaEnv {
    fn probes(&self) -> Vec<Probe> {
        vec![
            Toolkit::probe(&self.cuda_home),
            FileFact::probe(&self.profile),
            FileFact::probe(&self.ldconfig_file),
        ]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let f = Toolkit::read(facts, &self.cuda_home)?;
        let home = f.home.as_deref().ok_or_else(|| {
            ModuleError::Absent(format!(
                "no CUDA toolkit at {} (installed: {})",
                self.cuda_home,
                installed(&f)
            ))
        })?;
        self.check_version(&f, home)?;
        let mut plan = self.write(&self.profile, &self.profile_text, facts)?;
        let dirs = self.ld_dirs(&f)?;
        let ld = match self.listed_elsewhere(&f, &dirs, facts)? {
            Some(file) => {
                plan.notes.push(format!(
                    "{file} already makes the toolkit's libraries findable (as NVIDIA's packages install it); {} is not added beside it",
                    self.ldconfig_file
                ));
                Plan::noop()
            }
            None => self.write(&self.ldconfig_file, &ld_conf(&dirs), facts)?,
        };
        let mut reload = !ld.steps.is_empty();
        plan.absorb(ld);
        reload |= self.plan_stale(&f, &mut plan);
        mixed_cache_note(&f, &mut plan);
        if reload {
            plan.steps.push(format!(
                "{} || {{ echo 'ldconfig failed' >&2; exit 1; }}",
                sbin("ldconfig")
            ));
            plan.effects.push(Toolkit::invalidate(&self.cuda_home));
        }
        Ok(plan)
    }
}

fn ld_conf(dirs: &[String]) -> String {
    format!("# Managed by nodeprov (cuda_env)\n{}\n", dirs.join("\n"))
}

fn installed(f: &CudaFacts) -> String {
    if f.toolkits.is_empty() {
        "none under /usr/local".into()
    } else {
        f.toolkits.join(", ")
    }
}

/// Two libcudart majors in the cache: which one a program gets depends on
/// its link order, the classic "multiple libcudart" failure.
fn mixed_cache_note(f: &CudaFacts, plan: &mut Plan) {
    let mut majors: Vec<&str> = LIBCUDART
        .captures_iter(&f.ldcache)
        .map(|c| c.get(1).expect("group").as_str())
        .collect();
    majors.sort_unstable();
    majors.dedup();
    if majors.len() > 1 {
        plan.notes.push(format!(
            "the ld cache holds libcudart of CUDA {}: programs may load a runtime that does not match the toolkit",
            majors.join(" and ")
        ));
    }
}

impl CudaEnv {
    fn check_version(&self, f: &CudaFacts, home: &str) -> Result<(), ModuleError> {
        let Some(pin) = &self.version else {
            return Ok(());
        };
        match f.version.as_deref() {
            Some(v) if version_matches(v, pin) => Ok(()),
            Some(v) => Err(ModuleError::Unsupported(format!(
                "CUDA at {} ({home}) is {v}, not {pin}; installed toolkits: {}. Point cuda_home at the right one or switch the cuda alternative",
                self.cuda_home,
                installed(f)
            ))),
            None => Err(ModuleError::Absent(format!(
                "cannot tell the CUDA version at {home}: no version.json and no bin/nvcc"
            ))),
        }
    }

    /// The toolkit's library folders, named through `cuda_home`.
    fn ld_dirs(&self, f: &CudaFacts) -> Result<Vec<String>, ModuleError> {
        let real = f.home.as_deref().unwrap_or(&self.cuda_home);
        // Entries name `cuda_home`, not its resolved folder, so a switch of
        // the alternative takes effect with one ldconfig.
        let dirs: Vec<String> = f
            .libdirs
            .iter()
            .map(|d| d.replacen(real, &self.cuda_home, 1))
            .collect();
        if dirs.is_empty() {
            return Err(ModuleError::Absent(format!(
                "{} has no lib64 or targets/*/lib folder",
                self.cuda_home
            )));
        }
        Ok(dirs)
    }

    /// Another ld.so.conf.d file that already lists one of the toolkit's
    /// library folders (through `cuda_home` or its resolved folder), such as
    /// the `000_cuda.conf` and `cuda-12-4.conf` NVIDIA's RPMs install, while
    /// ours does not exist: adding ours would only duplicate it. lib64 is a
    /// link to targets/<arch>/lib in NVIDIA's toolkits, so one suffices.
    fn listed_elsewhere(
        &self,
        f: &CudaFacts,
        dirs: &[String],
        facts: &Facts,
    ) -> Result<Option<String>, ModuleError> {
        if FileFact::read(facts, &self.ldconfig_file)?.is_some() {
            return Ok(None);
        }
        let real = f.home.as_deref().unwrap_or(&self.cuda_home);
        let lists = |text: &str| {
            text.lines()
                .map(|l| l.split('#').next().unwrap_or_default().trim())
                .map(|l| l.trim_end_matches('/').replacen(real, &self.cuda_home, 1))
                .any(|l| dirs.contains(&l))
        };
        Ok(f.ldconf
            .iter()
            .find(|(p, text)| *p != self.ldconfig_file && lists(text))
            .map(|(p, _)| p.clone()))
    }

    fn write(&self, path: &str, content: &str, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, path)?;
        let opts = WriteOpts {
            mode: Some(0o644),
            ..WriteOpts::default()
        };
        files::plan_content(path, current.as_ref(), content, &opts, true)
    }

    /// ld.so.conf.d files naming another CUDA major; returns whether any
    /// is removed.
    fn plan_stale(&self, f: &CudaFacts, plan: &mut Plan) -> bool {
        let Some(major) = f.major() else {
            plan.notes.push(
                "cannot tell the CUDA major version: stale ld.so.conf.d entries not checked".into(),
            );
            return false;
        };
        let mut removed = false;
        for (file, text) in f.ldconf.iter().filter(|(p, _)| *p != self.ldconfig_file) {
            let others: Vec<String> = path_majors(text)
                .into_iter()
                .filter(|m| *m != major)
                .map(|m| m.to_string())
                .collect();
            if others.is_empty() {
                continue;
            }
            let why = format!(
                "{file} adds libraries of CUDA {} beside CUDA {major}: programs can load a mismatched libcudart (\"multiple libcudart libraries found\")",
                others.join(", ")
            );
            if self.remove_stale {
                plan.changes.push(
                    Change::new(
                        file,
                        Some(format!("CUDA {} entries", others.join(", "))),
                        Some("absent".into()),
                    )
                    .with_evidence(why),
                );
                plan.steps
                    .push(format!("rm -f -- {} || exit 1", quote(file)));
                removed = true;
            } else {
                plan.notes
                    .push(format!("{why}; set remove_stale: true to delete it"));
            }
        }
        removed
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    rt.check::<Toolkit>("/usr/local/cuda", CudaFacts::default());
    rt.check::<Toolkit>(
        "/usr/local/cuda",
        CudaFacts {
            home: Some("/usr/local/cuda-13.0".into()),
            toolkits: vec!["/usr/local/cuda-12.4".into(), "/usr/local/cuda-13.0".into()],
            version: Some("13.0.88".into()),
            libdirs: vec![
                "/usr/local/cuda-13.0/lib64".into(),
                "/usr/local/cuda-13.0/targets/x86_64-linux/lib".into(),
            ],
            ldconf: vec![
                (
                    "/etc/ld.so.conf.d/988_cuda-12.conf".into(),
                    "/usr/local/cuda-12.4/targets/x86_64-linux/lib\n\n".into(),
                ),
                (
                    "/etc/ld.so.conf.d/cuda.conf".into(),
                    "# Managed\n/usr/local/cuda/lib64\n".into(),
                ),
            ],
            ldcache: "\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.13\n"
                .into(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::FileState;
    use crate::modules::kit::plan::Effect;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, unquoted_steps};

    /// The H200 fixture's toolkit, in this module's probe format.
    const H200: &str = include_str!("../../tests/fixtures/gpu-h200/cuda_env.probe");
    const CUDA_CONF: &str = "# Managed by nodeprov (cuda_env)\n/usr/local/cuda/lib64\n/usr/local/cuda/targets/x86_64-linux/lib\n";

    fn plan_with(
        params: serde_json::Value,
        probe: &str,
        existing: &[(&str, &str)],
    ) -> Result<Plan, ModuleError> {
        let m = build_test(&CUDA_ENV, params).unwrap();
        let mut f = Facts::default();
        for p in m.probes() {
            let r = if p.key.starts_with("cuda:") {
                ProbeResult::ok(probe)
            } else {
                let path = p.key.trim_start_matches("file:");
                let existing = existing
                    .iter()
                    .find(|(k, _)| *k == path)
                    .map(|(_, c)| FileState::written(c, 0o644, "root", "root"));
                FileFact::render(&existing)
            };
            f.insert(p.key, r);
        }
        let plan = m.plan(&f);
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    /// The profile script as the module writes it.
    fn profile() -> String {
        let plan = plan_with(json!({}), H200, &[]).unwrap();
        let Some(Effect::Predict(_, r)) = plan
            .effects
            .iter()
            .find(|e| matches!(e, Effect::Predict(k, _) if k == "file:/etc/profile.d/cuda.sh"))
        else {
            panic!("profile predicted")
        };
        FileFact::parse("/etc/profile.d/cuda.sh", r)
            .unwrap()
            .unwrap()
            .content
            .unwrap()
    }

    #[test]
    fn h200_fresh_host_gets_profile_and_ld_conf_then_ldconfig() {
        // The H200 host's NVIDIA packages list the libraries already.
        let plan = plan_with(json!({"version": "13.0"}), H200, &[]).unwrap();
        let subjects: Vec<&str> = plan.changes.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["/etc/profile.d/cuda.sh"]);
        assert!(plan.notes[0].starts_with("/etc/ld.so.conf.d/000_cuda.conf already makes"));
        // Without their entries, ours is written and the cache rebuilt.
        let (head, rest) = H200
            .split_once("## /etc/ld.so.conf.d/000_cuda.conf")
            .unwrap();
        let unlisted = format!(
            "{head}{}",
            &rest[rest.find("## /etc/ld.so.conf.d/libc.conf").unwrap()..]
        )
        .replace("/usr/local/cuda/lib64\n", "");
        let plan = plan_with(json!({"version": "13.0"}), &unlisted, &[]).unwrap();
        let subjects: Vec<&str> = plan.changes.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(
            subjects,
            ["/etc/profile.d/cuda.sh", "/etc/ld.so.conf.d/cuda.conf"]
        );
        assert!(plan.changes[1]
            .diff
            .as_deref()
            .unwrap()
            .contains("+/usr/local/cuda/targets/x86_64-linux/lib"));
        assert!(plan.steps.last().unwrap().contains("ldconfig"));
        assert!(
            plan.notes.is_empty(),
            "987_cuda-13 and gds-13-0 are not stale: {:?}",
            plan.notes
        );
    }

    #[test]
    fn h200_compliant_host_is_a_noop() {
        let text = profile();
        assert!(text.contains("CUDA_HOME=/usr/local/cuda\n") && text.contains("$CUDA_HOME/lib64"));
        let plan = plan_with(
            json!({}),
            H200,
            &[
                ("/etc/profile.d/cuda.sh", &text),
                ("/etc/ld.so.conf.d/cuda.conf", CUDA_CONF),
            ],
        )
        .unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn profile_change_alone_does_not_run_ldconfig() {
        let plan = plan_with(
            json!({}),
            H200,
            &[("/etc/ld.so.conf.d/cuda.conf", CUDA_CONF)],
        )
        .unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert!(!unquoted_steps(&plan).contains("ldconfig"));
    }

    #[test]
    fn stale_cuda_12_entry_is_noted_or_removed() {
        let probe = H200.replace(
            "## /etc/ld.so.conf.d/987_cuda-13.conf",
            "## /etc/ld.so.conf.d/988_cuda-12.conf\n/usr/local/cuda-12/targets/x86_64-linux/lib\n\n## /etc/ld.so.conf.d/987_cuda-13.conf",
        ) + "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12/targets/x86_64-linux/lib/libcudart.so.12\n";
        let existing = [
            ("/etc/profile.d/cuda.sh", profile()),
            ("/etc/ld.so.conf.d/cuda.conf", CUDA_CONF.to_string()),
        ];
        let existing: Vec<(&str, &str)> = existing.iter().map(|(a, b)| (*a, b.as_str())).collect();
        let plan = plan_with(json!({}), &probe, &existing).unwrap();
        assert!(plan.changes.is_empty());
        assert!(plan
            .notes
            .iter()
            .any(|n| n.contains("988_cuda-12.conf adds libraries of CUDA 12 beside CUDA 13")));
        assert!(plan
            .notes
            .iter()
            .any(|n| n.contains("libcudart of CUDA 12 and 13")));
        let plan = plan_with(json!({"remove_stale": true}), &probe, &existing).unwrap();
        assert_eq!(
            plan.changes[0].subject,
            "/etc/ld.so.conf.d/988_cuda-12.conf"
        );
        assert_eq!(
            plan.steps[0],
            "rm -f -- /etc/ld.so.conf.d/988_cuda-12.conf || exit 1"
        );
        assert!(plan.steps[1].contains("ldconfig"));
    }

    #[test]
    fn missing_toolkit_and_version_mismatch_are_host_errors() {
        let err = plan_with(
            json!({"cuda_home": "/usr/local/cuda-12.4"}),
            "@@home\n@@toolkits\n/usr/local/cuda-13.0 /usr/local/cuda-13.0\n",
            &[],
        )
        .unwrap_err();
        assert!(
            matches!(&err, ModuleError::Absent(m) if m == "no CUDA toolkit at /usr/local/cuda-12.4 (installed: /usr/local/cuda-13.0)"),
            "{err}"
        );
        let err = plan_with(json!({"version": "12.4"}), H200, &[]).unwrap_err();
        assert!(
            matches!(&err, ModuleError::Unsupported(m) if m.contains("is 13.0, not 12.4")),
            "{err}"
        );
        let with_json = H200.replace(
            "@@version\n",
            "@@version\n{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"13.0.1\"}}\n",
        );
        assert!(plan_with(json!({"version": "13"}), &with_json, &[]).is_ok());
    }

    #[test]
    fn invalid_and_hostile_params() {
        assert!(build_error(&CUDA_ENV, json!({"cuda_home": "cuda"})).contains("absolute"));
        assert!(build_error(&CUDA_ENV, json!({"cuda_home": "/opt/cuda x"})).contains("blanks"));
        assert!(
            build_error(&CUDA_ENV, json!({"ldconfig_file": "/etc/cuda.conf"}))
                .contains("ld.so.conf.d")
        );
        assert!(build_error(&CUDA_ENV, json!({"version": "thirteen"})).contains("version"));
        let home = "/opt/$(reboot)'";
        let probe = format!("@@home\n{home}\n@@libdirs\n{home}/lib64\n");
        let plan = plan_with(json!({"cuda_home": home}), &probe, &[]).unwrap();
        let diff = plan.changes[0].diff.as_deref().unwrap();
        assert!(
            diff.contains(r#"+CUDA_HOME='/opt/$(reboot)'"'"''"#),
            "{diff}"
        );
        assert!(Toolkit::script(home).starts_with("h='/opt/$(reboot)'\\'''\n"));
    }

    /// NVIDIA's RPMs on EL: `/usr/local/cuda` is the `cuda` alternative
    /// (resolved to cuda-12.4), and the packages drop `000_cuda.conf` and
    /// `cuda-12-4.conf`. Those already make the libraries findable.
    const EL_RPM: &str = "@@home\n/usr/local/cuda-12.4\n@@toolkits\n/usr/local/cuda /usr/local/cuda-12.4\n/usr/local/cuda-12.4 /usr/local/cuda-12.4\n@@version\n{\"cuda\": {\"version\": \"12.4.131\"}}\n@@nvcc\n@@libdirs\n/usr/local/cuda/lib64\n/usr/local/cuda/targets/x86_64-linux/lib\n@@ldconf\n## /etc/ld.so.conf.d/000_cuda.conf\n/usr/local/cuda/targets/x86_64-linux/lib\n\n## /etc/ld.so.conf.d/cuda-12-4.conf\n/usr/local/cuda-12.4/targets/x86_64-linux/lib\n\n@@ldcache\n";

    #[test]
    fn entries_of_nvidias_packages_satisfy_and_are_not_duplicated() {
        let plan = plan_with(json!({"version": "12"}), EL_RPM, &[]).unwrap();
        let subjects: Vec<&str> = plan.changes.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["/etc/profile.d/cuda.sh"], "{plan:?}");
        let steps = unquoted_steps(&plan);
        assert!(!steps.contains("ldconfig") && !steps.contains("cuda.conf"));
        assert!(
            plan.notes
                .iter()
                .any(|n| n.starts_with("/etc/ld.so.conf.d/000_cuda.conf already makes")),
            "{:?}",
            plan.notes
        );
        assert!(
            !plan.notes.iter().any(|n| n.contains("cuda-12-4.conf adds")),
            "same major: not stale"
        );
        // Only the versioned file: still listed (through the resolved folder).
        let versioned = EL_RPM.replace(
            "## /etc/ld.so.conf.d/000_cuda.conf\n/usr/local/cuda/targets/x86_64-linux/lib\n\n",
            "",
        );
        let plan = plan_with(json!({}), &versioned, &[]).unwrap();
        assert!(
            plan.notes
                .iter()
                .any(|n| n.starts_with("/etc/ld.so.conf.d/cuda-12-4.conf already makes")),
            "{:?}",
            plan.notes
        );
        // Ours, once written, stays managed.
        let plan = plan_with(
            json!({}),
            EL_RPM,
            &[("/etc/ld.so.conf.d/cuda.conf", "# old\n")],
        )
        .unwrap();
        assert!(plan
            .changes
            .iter()
            .any(|c| c.subject == "/etc/ld.so.conf.d/cuda.conf"));
        // Nothing listed: ours is written.
        let bare = EL_RPM
            .replace(
                "/usr/local/cuda/targets/x86_64-linux/lib\n\n##",
                "/opt/other\n\n##",
            )
            .replace(
                "/usr/local/cuda-12.4/targets/x86_64-linux/lib\n\n@@",
                "/opt/x\n\n@@",
            );
        let plan = plan_with(json!({}), &bare, &[]).unwrap();
        assert!(
            plan.changes
                .iter()
                .any(|c| c.subject == "/etc/ld.so.conf.d/cuda.conf"),
            "{plan:?}"
        );
    }
}
