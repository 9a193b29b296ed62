//! `apt_repository`: one `deb`/`deb-src` line in a file under
//! /etc/apt/sources.list.d, then a refresh of the package lists.

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WhenMissing, WriteOpts};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params, Presence};
use crate::remote::probe::Probe;
use crate::remote::shell::quote;

pub const APT_REPOSITORY: ModuleSpec = ModuleSpec {
    name: "apt_repository",
    aliases: &["ansible.builtin.apt_repository"],
    params: &AptRepoArgs::SPEC,
    free_form: None,
    build,
};

module_params! {
    struct AptRepoArgs {
        /// the sources line, e.g. `deb [arch=amd64] https://host/path stable main`
        repo: String,
        /// the line is there or not
        state: Presence = Presence::Present,
        /// the file's name without `.list` (default: from the URL, as Ansible names it)
        filename: Option<String>,
        /// refresh the package lists after a change
        update_cache: bool = true,
        /// the file's mode
        mode: Option<Mode>,
    }
}

struct AptRepo {
    line: String,
    path: String,
    present: bool,
    update_cache: bool,
    opts: WriteOpts,
}

/// The same line however it is spaced.
fn normalized(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
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
    url.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AptRepoArgs::read(p)?;
    let line = normalized(&a.repo);
    let kind = line.split(' ').next().unwrap_or("");
    if !matches!(kind, "deb" | "deb-src") || line.split(' ').count() < 3 {
        return Err(p.error(
            "repo",
            format!(
                "'{}' is not a sources line (deb|deb-src [options] URL suite [components])",
                a.repo
            ),
        ));
    }
    let name = a.filename.unwrap_or_else(|| suggested_filename(&line));
    let name = name.strip_suffix(".list").unwrap_or(&name).to_string();
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(p.error("filename", format!("'{name}' is not a file name")));
    }
    Ok(Box::new(AptRepo {
        line,
        path: format!("/etc/apt/sources.list.d/{name}.list"),
        present: a.state == Presence::Present,
        update_cache: a.update_cache,
        opts: WriteOpts::new(a.mode, None, None),
    }))
}

impl Module for AptRepo {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.path)?;
        let missing = match self.present {
            true => WhenMissing::Create,
            false => WhenMissing::Nothing,
        };
        let Some(text) = files::text_to_edit(&self.path, current.as_ref(), missing)? else {
            return Ok(Plan::noop());
        };
        let ours = |l: &&str| normalized(l) == self.line;
        let has = text.lines().any(|l| ours(&l));
        let mut plan = match (self.present, has) {
            (true, true) | (false, false) => return Ok(Plan::noop()),
            (true, false) => {
                let sep = if text.is_empty() || text.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                let new = format!("{text}{sep}{}\n", self.line);
                files::plan_content(&self.path, current.as_ref(), &new, &self.opts, true)?
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
                        .push(Change::new(&self.path, None, Some("absent".into())));
                    plan.steps.push(format!("rm -f -- {}", quote(&self.path)));
                    plan.effects.push(FileFact::predict(&self.path, &None));
                    plan
                } else {
                    files::plan_content(&self.path, current.as_ref(), &rest, &self.opts, true)?
                }
            }
        };
        for c in plan.changes.iter_mut().filter(|c| c.subject == self.path) {
            let (before, after) = match self.present {
                true => ("no line".to_string(), self.line.clone()),
                false => (self.line.clone(), "no line".to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
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

    #[test]
    fn errors_are_clear() {
        assert!(
            build_error(&APT_REPOSITORY, json!({"repo": "ppa:x/y"})).contains("not a sources line")
        );
        assert!(
            build_error(&APT_REPOSITORY, json!({"repo": REPO, "filename": "../x"}))
                .contains("not a file name")
        );
    }
}
