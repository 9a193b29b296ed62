//! `yum_repository`: one repository section in a `.repo` file under
//! /etc/yum.repos.d, written atomically with its keys sorted; other sections
//! of the file stay.
//!
//! # Example
//!
//! ```yaml
//! - name: Add NVIDIA's CUDA repository on the RHEL 9 nodes
//!   yum_repository:
//!     name: cuda-rhel9-x86_64
//!     description: NVIDIA CUDA for RHEL 9
//!     baseurl: https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64
//!     gpgcheck: true
//!     gpgkey: https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub
//!     file: cuda-rhel9
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::remote::probe::Probe;

pub const YUM_REPOSITORY: ModuleSpec = ModuleSpec {
    name: "yum_repository",
    source: file!(),
    aliases: &["ansible.builtin.yum_repository"],
    params: &RepoArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct RepoArgs {
        /// the repository id (the section name)
        name: String,
        /// its human-readable name (written as `name=`)
        description: Option<String>,
        /// one URL or a list
        baseurl: Vec<String>,
        /// a mirror list URL
        mirrorlist: Option<String>,
        /// a metalink URL
        metalink: Option<String>,
        /// whether the repository is used
        enabled: Option<bool>,
        /// check package signatures
        gpgcheck: Option<bool>,
        /// signing key URLs
        gpgkey: Vec<String>,
        /// check the repository metadata's signature
        repo_gpgcheck: Option<bool>,
        /// packages never taken from it
        exclude: Vec<String>,
        /// the only packages taken from it
        includepkgs: Vec<String>,
        /// its priority (lower wins)
        priority: Option<i64>,
        /// its cost (lower wins)
        cost: Option<i64>,
        /// go on when it cannot be reached
        skip_if_unavailable: Option<bool>,
        /// verify the server's TLS certificate
        sslverify: Option<bool>,
        /// take packages from it despite module filtering
        module_hotfixes: Option<bool>,
        /// how long its metadata stays fresh (`6h`, `never`)
        metadata_expire: Option<String>,
        /// a proxy URL, or `_none_`
        proxy: Option<String>,
        /// seconds before a connection gives up
        timeout: Option<i64>,
        /// the file's name without `.repo` (default: the repository id)
        file: Option<String>,
        /// the folder of repository files
        reposdir: String = "/etc/yum.repos.d".into(),
        /// the section is there or not
        state: Presence = Presence::Present,
        /// the file's mode
        mode: Option<Mode>,
        /// the file's owner
        owner: Option<String>,
        /// the file's group
        group: Option<String>,
    }
}

struct Repo {
    id: String,
    path: String,
    /// The section's `key = value` lines, or `None` to remove it.
    body: Option<Vec<(String, String)>>,
    opts: WriteOpts,
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = RepoArgs::read(p)?;
    if !valid_id(&a.name) {
        return Err(p.error("name", format!("'{}' is not a repository id", a.name)));
    }
    let file = a.file.clone().unwrap_or_else(|| a.name.clone());
    if !valid_id(&file) {
        return Err(p.error("file", format!("'{file}' is not a file name")));
    }
    let path = format!("{}/{file}.repo", a.reposdir.trim_end_matches('/'));
    p.destructive_path("reposdir", &path)?;
    let body = match a.state {
        Presence::Absent => None,
        Presence::Present => Some(body(p, &a)?),
    };
    Ok(Box::new(Repo {
        id: a.name,
        path,
        body,
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?,
    }))
}

/// The section's settings, sorted by key as Ansible writes them, booleans
/// as 1 and 0 and lists joined by spaces.
fn body(p: &Params, a: &RepoArgs) -> Result<Vec<(String, String)>, ParamError> {
    if a.baseurl.is_empty() && a.mirrorlist.is_none() && a.metalink.is_none() {
        return Err(p.error(
            "baseurl",
            "one of baseurl, mirrorlist or metalink is required with state: present",
        ));
    }
    let flag = |b: bool| if b { "1" } else { "0" }.to_string();
    let list = |v: &[String]| (!v.is_empty()).then(|| v.join(" "));
    let entries: [(&str, Option<String>); 18] = [
        ("baseurl", list(&a.baseurl)),
        ("cost", a.cost.map(|n| n.to_string())),
        ("enabled", a.enabled.map(flag)),
        ("exclude", list(&a.exclude)),
        ("gpgcheck", a.gpgcheck.map(flag)),
        ("gpgkey", list(&a.gpgkey)),
        ("includepkgs", list(&a.includepkgs)),
        ("metadata_expire", a.metadata_expire.clone()),
        ("metalink", a.metalink.clone()),
        ("mirrorlist", a.mirrorlist.clone()),
        ("module_hotfixes", a.module_hotfixes.map(flag)),
        (
            "name",
            Some(a.description.clone().unwrap_or_else(|| a.name.clone())),
        ),
        ("priority", a.priority.map(|n| n.to_string())),
        ("proxy", a.proxy.clone()),
        ("repo_gpgcheck", a.repo_gpgcheck.map(flag)),
        ("skip_if_unavailable", a.skip_if_unavailable.map(flag)),
        ("sslverify", a.sslverify.map(flag)),
        ("timeout", a.timeout.map(|n| n.to_string())),
    ];
    let mut out = Vec::new();
    for (key, value) in entries {
        let Some(value) = value else { continue };
        p.one_line(key, &value)?;
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// `text` with the section `id` replaced by `section` (or removed when
/// `None`); a new section goes at the end, after a blank line.
fn with_section(text: &str, id: &str, section: Option<&str>) -> String {
    let header = format!("[{id}]");
    let mut out = String::new();
    let mut inside = false;
    let mut placed = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed == header;
            if inside {
                out.push_str(section.unwrap_or(""));
                placed = true;
                continue;
            }
        }
        if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    if let (false, Some(s)) = (placed, section) {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(s);
    }
    out
}

impl Module for Repo {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let missing = match self.body {
            Some(_) => files::WhenMissing::Create,
            None => files::WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        let section = self.body.as_ref().map(|b| {
            let lines: String = b.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
            format!("[{}]\n{lines}\n", self.id)
        });
        let new = with_section(&text, &self.id, section.as_deref());
        if new.trim().is_empty() && current.is_some() {
            let mut plan = Plan::noop();
            plan.changes.push(Change::new(
                &self.path,
                Some(format!("[{}]", self.id)),
                Some("absent".into()),
            ));
            plan.steps.push(format!("rm -f -- {}", quote(&self.path)));
            plan.effects.push(FileFact::predict(&self.path, &None));
            return Ok(plan);
        }
        files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
    };
    use serde_json::json;

    const PATH: &str = "/etc/yum.repos.d/cuda.repo";

    fn params() -> serde_json::Value {
        json!({"name": "cuda", "description": "CUDA rhel9", "gpgcheck": true,
               "baseurl": "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64",
               "gpgkey": ["https://a/key1", "https://a/key2"], "enabled": true, "priority": 10})
    }

    #[test]
    fn writes_the_section_sorted_and_replans_to_a_noop() {
        let m = build_test(&YUM_REPOSITORY, params()).unwrap();
        let facts = file_facts(PATH, None, 0o644);
        let plan = m.plan(&facts).unwrap();
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        assert_eq!(
            file_content(&after, PATH),
            "[cuda]\nbaseurl = https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64\n\
             enabled = 1\ngpgcheck = 1\ngpgkey = https://a/key1 https://a/key2\nname = CUDA rhel9\npriority = 10\n\n"
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn other_sections_stay_and_absent_removes_only_its_own() {
        let other = "[other]\nname = other\nbaseurl = file:///x\n\n";
        let mut p = params();
        p["file"] = json!("cuda");
        let m = build_test(&YUM_REPOSITORY, p).unwrap();
        let plan = m.plan(&file_facts(PATH, Some(other), 0o644)).unwrap();
        let after = settled(&file_facts(PATH, Some(other), 0o644), &plan);
        let both = file_content(&after, PATH);
        assert!(
            both.starts_with(other) && both.contains("[cuda]\n"),
            "{both}"
        );
        let gone = build_test(&YUM_REPOSITORY, json!({"name": "cuda", "state": "absent"})).unwrap();
        let plan = gone.plan(&after).unwrap();
        assert_eq!(file_content(&settled(&after, &plan), PATH), other);
        let only = file_facts(PATH, Some("[cuda]\nname = x\n"), 0o644);
        let plan = gone.plan(&only).unwrap();
        assert_eq!(plan.steps, ["rm -f -- /etc/yum.repos.d/cuda.repo"]);
        let missing = file_facts(PATH, None, 0o644);
        assert_eq!(gone.plan(&missing).unwrap(), Plan::noop());
    }

    #[test]
    fn errors_are_clear() {
        assert!(build_error(&YUM_REPOSITORY, json!({"name": "x"})).contains("baseurl"));
        assert!(
            build_error(&YUM_REPOSITORY, json!({"name": "a b", "baseurl": "u"}))
                .contains("not a repository id")
        );
        assert!(
            build_error(&YUM_REPOSITORY, json!({"name": "x", "baseurl": "u\nv"}))
                .contains("one line")
        );
    }
}
