//! `unarchive`: an archive on the host (or at a URL the host downloads)
//! extracted into a folder, with tar or unzip on the host.
//!
//! Compliance is "every member of the archive exists under `dest`" (after
//! `--strip-components`), read by listing the archive in the probe; or,
//! with `creates`, "that path exists". The probe runs after every earlier
//! change of the run, since the archive is usually what an earlier task
//! downloaded. A tar archive (any compression tar reads) or a zip is told by
//! its name.
//!
//! **`unarchive`** lists the archive on the host (`tar -tf`, `unzip -Z1`) in
//! its probe, after every earlier change of the run: it complies when every
//! member exists under `dest` (after `--strip-components`), or when `creates`
//! exists; the evidence of drift is how many members are missing and the
//! first. A URL `src` is downloaded only to extract it: without `creates` it
//! is extracted on every run and reported like a command; it reaches curl or
//! wget as `get_url`'s URL does, and is shown as its URL is. Archives on the
//! controller (`remote_src: false`) and owner/mode of extracted files are not
//! supported.
//!
//! # Example
//!
//! ```yaml
//! - name: Make cuDNN's folder
//!   file:
//!     path: /opt/cudnn-9.1
//!     state: directory
//! - name: Unpack cuDNN 9.1 for CUDA 12 into it
//!   unarchive:
//!     src: https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz
//!     dest: /opt/cudnn-9.1
//!     remote_src: true
//!     extra_opts: [--strip-components=1]
//!     creates: /opt/cudnn-9.1/include/cudnn.h
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::http::{curl_line, shown_url, wget_line, Auth};
use crate::modules::kit::module::{AnsiblePlugin, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const UNARCHIVE: ModuleSpec = ModuleSpec {
    name: "unarchive",
    source: file!(),
    aliases: &["ansible.builtin.unarchive"],
    params: &UnarchiveArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[("remote_src", true)],
        writes_files: false,
        lacks: &[],
    }),
    controller_file: None,
    build,
};

module_params! {
    struct UnarchiveArgs {
        /// the archive: a path on the host, or an http(s) URL the host downloads
        src: String,
        /// the folder to extract into; it must exist
        dest: String,
        /// must be true (or `copy: false`): archives are not copied from the controller
        remote_src: bool = false,
        /// a path that, when it exists, means the archive was extracted
        creates: Option<String>,
        /// only `--strip-components=N` is taken (tar archives)
        extra_opts: Vec<String>,
        /// Ansible's older spelling: `copy: false` is `remote_src: true`
        copy: Option<bool>,
    }
}

struct Unarchive {
    src: String,
    /// `src` as reports show it.
    shown: String,
    dest: String,
    creates: Option<String>,
    strip: usize,
    zip: bool,
    /// `src` is a URL: nothing to list before downloading it.
    url: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UnarchiveArgs::read(p)?;
    if !(a.remote_src || a.copy == Some(false)) {
        return Err(p.error(
            "remote_src",
            "only remote_src: true is supported (the archive is on the host or at a URL); \
             copy it to the host with get_url or copy first",
        ));
    }
    p.destructive_path("dest", &a.dest)?;
    let mut strip = 0;
    for opt in &a.extra_opts {
        let n = opt
            .strip_prefix("--strip-components=")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                p.error(
                    "extra_opts",
                    format!("'{opt}' is not supported; only --strip-components=N is"),
                )
            })?;
        strip = n;
    }
    let url = a.src.starts_with("http://") || a.src.starts_with("https://");
    let zip = a
        .src
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .ends_with(".zip");
    if zip && strip > 0 {
        return Err(p.error(
            "extra_opts",
            "--strip-components is for tar archives, not zip",
        ));
    }
    Ok(Box::new(Unarchive {
        shown: if url {
            shown_url(&a.src)
        } else {
            a.src.clone()
        },
        src: a.src,
        dest: a.dest.trim_end_matches('/').to_string(),
        creates: a.creates,
        strip,
        zip,
        url,
    }))
}

/// What the probe asks: where, and how to list the archive.
struct Question {
    src: String,
    dest: String,
    creates: Option<String>,
    strip: usize,
    zip: bool,
    /// Whether the archive can be listed (it is a file, not a URL).
    list: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Found {
    NoDest,
    /// `creates` exists.
    Created,
    NoSrc,
    /// Members the archive lists, how many of them are missing under
    /// `dest` and the first missing one.
    Listed {
        members: usize,
        missing: usize,
        first: String,
    },
    /// A URL not downloaded to find out, and no `creates`.
    NotListed,
}

struct ArchiveFact;

impl Fact for ArchiveFact {
    type Query = Question;
    type Value = Found;

    fn key(q: &Question) -> String {
        let src = if q.list {
            q.src.clone()
        } else {
            Auth::default().key_of(&q.src)
        };
        format!(
            "unarchive:{}\u{0}{}\u{0}{}\u{0}{}",
            src,
            q.dest,
            q.creates.as_deref().unwrap_or(""),
            q.strip
        )
    }

    fn script(q: &Question) -> String {
        let mut s = format!(
            "d={}\n[ -d \"$d\" ] || {{ echo nodest; exit 0; }}\n",
            quote(&q.dest)
        );
        if let Some(c) = &q.creates {
            s.push_str(&format!(
                "if [ -e {0} ] || [ -L {0} ]; then echo created; exit 0; fi\n",
                quote(c)
            ));
        }
        if !q.list {
            s.push_str("echo unlisted");
            return s;
        }
        let list = if q.zip {
            "unzip -Z1 \"$s\""
        } else {
            "tar -tf \"$s\""
        };
        s.push_str(&format!(
            "s={}\n[ -f \"$s\" ] || {{ echo nosrc; exit 0; }}\n\
             l=$({list}) || {{ echo \"cannot list $s\" >&2; exit 1; }}\n\
             printf '%s\\n' \"$l\" | sed -E -n 's#^([^/]*(/|$)){{{strip}}}##p' | grep -v '^$' | {{\n\
             n=0; k=0; f=\n\
             while IFS= read -r m; do n=$((n+1)); if [ ! -e \"$d/$m\" ] && [ ! -L \"$d/$m\" ]; then k=$((k+1)); [ -n \"$f\" ] || f=$m; fi; done\n\
             echo \"listed $n $k\"; printf '%s\\n' \"$f\"; }}",
            quote(&q.src),
            strip = q.strip
        ));
        s
    }

    fn parse(q: &Question, r: &ProbeResult) -> Result<Found, ModuleError> {
        let bad = || fact::bad(Self::key(q), format!("cannot read: {}", r.stderr.trim()));
        if r.rc != 0 {
            return Err(bad());
        }
        let (head, rest) = r.stdout.split_once('\n').unwrap_or((&r.stdout, ""));
        Ok(match head.trim_end() {
            "nodest" => Found::NoDest,
            "created" => Found::Created,
            "nosrc" => Found::NoSrc,
            "unlisted" => Found::NotListed,
            listed => {
                let f: Vec<&str> = listed.split(' ').collect();
                let ["listed", n, k] = f[..] else {
                    return Err(bad());
                };
                Found::Listed {
                    members: n.parse().map_err(|_| bad())?,
                    missing: k.parse().map_err(|_| bad())?,
                    first: rest.lines().next().unwrap_or_default().to_string(),
                }
            }
        })
    }

    fn render(f: &Found) -> ProbeResult {
        ProbeResult::ok(match f {
            Found::NoDest => "nodest\n".to_string(),
            Found::Created => "created\n".to_string(),
            Found::NoSrc => "nosrc\n".to_string(),
            Found::NotListed => "unlisted".to_string(),
            Found::Listed {
                members,
                missing,
                first,
            } => format!("listed {members} {missing}\n{first}\n"),
        })
    }
}

impl Unarchive {
    fn question(&self) -> Question {
        Question {
            src: self.src.clone(),
            dest: self.dest.clone(),
            creates: self.creates.clone(),
            strip: self.strip,
            zip: self.zip,
            list: !self.url,
        }
    }

    fn extract_step(&self) -> String {
        let extract = if self.zip {
            "unzip -o -q \"$a\" -d \"$d\"".to_string()
        } else if self.strip > 0 {
            format!("tar -xf \"$a\" -C \"$d\" --strip-components={}", self.strip)
        } else {
            "tar -xf \"$a\" -C \"$d\"".to_string()
        };
        let failed = quote(&format!("cannot extract {} into {}", self.shown, self.dest));
        let d = quote(&self.dest);
        if !self.url {
            return format!(
                "a={}; d={d}\n{extract} || {{ echo {failed} >&2; exit 1; }}",
                quote(&self.src)
            );
        }
        let curl = curl_line("curl -fsSL -o \"$a\"", &self.src, &[]);
        let wget = wget_line("wget -q -O \"$a\"", &self.src);
        let fetch_failed = quote(&format!("cannot download {}", self.shown));
        format!(
            "d={d}; a=$(mktemp) || exit 1\n\
             if command -v curl >/dev/null 2>&1; then {curl}else {wget}fi \
             || {{ rm -f \"$a\"; echo {fetch_failed} >&2; exit 1; }}\n\
             {extract} || {{ rm -f \"$a\"; echo {failed} >&2; exit 1; }}\n\
             rm -f \"$a\""
        )
    }
}

impl Module for Unarchive {
    fn probes(&self) -> Vec<Probe> {
        vec![ArchiveFact::probe(&self.question())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let q = self.question();
        let mut plan = Plan::noop();
        let change = |before: String| {
            Change::new(
                self.dest.clone(),
                Some(before),
                Some(format!("{} extracted", self.shown)),
            )
        };
        match ArchiveFact::read(facts, &q)? {
            Found::NoDest => {
                return Err(ModuleError::Absent(format!(
                    "destination folder {} does not exist",
                    self.dest
                )))
            }
            Found::NoSrc => {
                return Err(ModuleError::Absent(format!(
                    "archive {} does not exist on the host",
                    self.src
                )))
            }
            Found::Created => return Ok(plan),
            Found::Listed { missing: 0, .. } => return Ok(plan),
            Found::Listed {
                members,
                missing,
                first,
            } => plan.changes.push(
                change(format!(
                    "{missing} of {members} members missing, first {first}"
                ))
                .with_evidence("archive listing"),
            ),
            Found::NotListed => {
                plan.changes.push(change("not checked".into()));
                plan.unknown = Some(format!(
                    "{} is only known by downloading it; give creates: to make this idempotent",
                    self.shown
                ));
            }
        }
        plan.steps.push(self.extract_step());
        plan.effects.push(ArchiveFact::invalidate(&q));
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }

    /// A URL with no `creates` is extracted on every run: nothing on the
    /// host says it was.
    fn is_command(&self) -> bool {
        self.url && self.creates.is_none()
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = Question {
        src: "/tmp/a.tar.gz".into(),
        dest: "/opt".into(),
        creates: None,
        strip: 1,
        zip: false,
        list: true,
    };
    for found in [
        Found::NoDest,
        Found::Created,
        Found::NoSrc,
        Found::NotListed,
        Found::Listed {
            members: 3,
            missing: 1,
            first: "a b/c".into(),
        },
    ] {
        rt.check::<ArchiveFact>(&q, found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    fn plan_on(params: serde_json::Value, answer: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&UNARCHIVE, params).unwrap();
        let probe = m.probes().pop().unwrap();
        let plan = m.plan(&facts_of(&[(&probe.key, answer)]));
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    #[test]
    fn parameters_are_checked() {
        assert!(
            build_error(&UNARCHIVE, json!({"src": "a.tgz", "dest": "/opt"}))
                .contains("only remote_src: true")
        );
        let p = |extra: serde_json::Value, src: &str| {
            build_error(
                &UNARCHIVE,
                json!({"src": src, "dest": "/opt", "remote_src": true, "extra_opts": extra}),
            )
        };
        assert!(p(json!(["--exclude=x"]), "/a.tgz").contains("only --strip-components"));
        assert!(p(json!(["--strip-components=1"]), "/a.zip").contains("not zip"));
    }

    #[test]
    fn members_all_present_is_compliant_and_a_missing_one_is_drift() {
        let params = json!({"src": "/tmp/nhc.tar.xz", "dest": "/tmp/", "remote_src": true,
                            "extra_opts": ["--strip-components=1"]});
        let m = build_test(&UNARCHIVE, params.clone()).unwrap();
        let script = &m.probes()[0].script;
        assert!(script.contains("tar -tf \"$s\""), "{script}");
        assert!(script.contains("s#^([^/]*(/|$)){1}##p"), "{script}");
        assert!(m.reads_everything() && !m.is_command());
        assert_eq!(
            plan_on(params.clone(), "listed 12 0\n\n").unwrap(),
            Plan::noop()
        );
        let plan = plan_on(params, "listed 12 2\nnhc.conf\n").unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "/tmp: 2 of 12 members missing, first nhc.conf → /tmp/nhc.tar.xz extracted"
        );
        assert_eq!(
            plan.steps[0],
            "a=/tmp/nhc.tar.xz; d=/tmp\ntar -xf \"$a\" -C \"$d\" --strip-components=1 || { echo 'cannot extract /tmp/nhc.tar.xz into /tmp' >&2; exit 1; }"
        );
    }

    #[test]
    fn missing_folders_archives_and_creates() {
        let params = json!({"src": "/tmp/a.zip", "dest": "/srv", "remote_src": true});
        let err = plan_on(params.clone(), "nodest\n").unwrap_err();
        assert!(matches!(err, ModuleError::Absent(m) if m.contains("/srv does not exist")));
        let err = plan_on(params.clone(), "nosrc\n").unwrap_err();
        assert!(matches!(err, ModuleError::Absent(m) if m.contains("/tmp/a.zip does not exist")));
        let plan = plan_on(params, "listed 1 1\nx\n").unwrap();
        assert!(plan.steps[0].contains("unzip -o -q \"$a\" -d \"$d\""));
        let url = json!({"src": "https://h/pyxis.tar.gz", "dest": "/srv", "remote_src": true,
                         "creates": "/srv/Makefile"});
        assert_eq!(plan_on(url.clone(), "created\n").unwrap(), Plan::noop());
        let m = build_test(&UNARCHIVE, url).unwrap();
        assert!(m.probes()[0].script.contains("[ -e /srv/Makefile ]"));
        assert!(!m.probes()[0].script.contains("tar -tf"));
        let bare = json!({"src": "https://h/pyxis.tar.gz", "dest": "/srv", "remote_src": true});
        let plan = plan_on(bare.clone(), "unlisted").unwrap();
        assert!(plan.unknown.is_some());
        assert!(build_test(&UNARCHIVE, bare).unwrap().is_command());
    }

    #[test]
    fn a_url_reaches_curl_and_wget_on_stdin_and_reports_show_it_cut() {
        let url = "https://bob:pw-1@h/pyxis.tar.gz?token=tk-2";
        let params = json!({"src": url, "dest": "/srv", "remote_src": true});
        let m = build_test(&UNARCHIVE, params.clone()).unwrap();
        let plan = plan_on(params, "unlisted").unwrap();
        let step = &plan.steps[0];
        for fetch in [
            "then curl -fsSL -o \"$a\" --config - <<'NODEPROV_SECRET'\nurl = \"{url}\"\n",
            "else wget -q -O \"$a\" -i - <<'NODEPROV_SECRET'\n{url}\n",
        ] {
            let fetch = fetch.replace("{url}", url);
            assert!(step.contains(&fetch), "{step}");
        }
        let probe = &m.probes()[0];
        let shown = [
            crate::base::shell::mask_secrets(step),
            probe.key.clone(),
            probe.script.clone(),
            plan.changes[0].to_string(),
            plan.unknown.clone().unwrap(),
        ];
        for text in shown {
            assert!(
                !text.contains("pw-1") && !text.contains("tk-2") && !text.contains("bob"),
                "{text}"
            );
        }
        assert_eq!(
            plan.changes[0].to_string(),
            "/srv: not checked → https://h/pyxis.tar.gz?… extracted"
        );
        assert!(probe.key.contains("https://h/pyxis.tar.gz?… (credentials "));
    }
}
