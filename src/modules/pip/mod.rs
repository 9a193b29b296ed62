//! `pip` (ansible.builtin): Python packages in a virtualenv or for an
//! interpreter's pip. The installed set is read with one `pip list` per
//! pip in the batched probe; what to install or remove is decided here from
//! the version specifiers, so check mode names each package that would
//! change without asking an index.
//!
//! **`pip`** reads what each pip has installed with one
//! `pip list --format=json` (a virtualenv's `bin/pip`, or `executable`), in the
//! batched probe, and compares it with the specifiers as PEP 440 does
//! (`torch==2.3.0` holds for an installed `2.3.0+cu121`; `==1.26.*`, `~=`,
//! `!=`, `<`, `>` and lists of them), names normalized as pip does
//! (`Foo_Bar` is `foo-bar`). Only what does not satisfy its specifier is
//! installed, in one `pip install` (with `extra_args`), and only what is there
//! is removed; a missing `virtualenv` is made first with `virtualenv_command`.
//! `requirements` is read from the host in the same probe and planned line by
//! line; a line with options, URLs, paths or environment markers is refused,
//! as are such names. `latest` and `forcereinstall` run on every run (only
//! the package index knows whether there is something newer), reported like a
//! command. `extra_args` goes on every pip command, removals too, as in
//! Ansible (`pip uninstall` takes no `--no-index`). Relative `virtualenv` and
//! `requirements` paths need an absolute `chdir`.
//!
//! # Example
//!
//! ```yaml
//! - name: Install PyTorch for CUDA 12.4 in the shared environment
//!   pip:
//!     name: [torch==2.4.1, torchvision==0.19.1]
//!     virtualenv: /opt/pytorch
//!     virtualenv_command: python3 -m venv
//!     extra_args: --index-url https://download.pytorch.org/whl/cu124
//! ```

mod facts;
mod requirement;

use std::collections::BTreeMap;

use facts::{Env, Listing, PipList};
use requirement::Requirement;

use crate::base::shell::{self, quote};
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{FileFact, MAX_CONTENT};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const PIP: ModuleSpec = ModuleSpec {
    name: "pip",
    source: file!(),
    aliases: &["ansible.builtin.pip"],
    params: &PipArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum State {
        Present = "present",
        Absent = "absent",
        Latest = "latest",
        ForceReinstall = "forcereinstall",
    }
}

module_params! {
    struct PipArgs {
        /// packages, with version specifiers (`torch==2.3.0`, `numpy>=1.26`); one or a list
        name: Vec<String>,
        /// the version of the one package in `name`
        version: Option<String>,
        /// installed (satisfying the specifiers), removed, upgraded or reinstalled
        state: State = State::Present,
        /// a requirements file on the host (plain specifiers only)
        requirements: Option<String>,
        /// the pip to run when there is no virtualenv (default pip3)
        executable: Option<String>,
        /// the virtualenv to install into, made when missing
        virtualenv: Option<String>,
        /// the command that makes the virtualenv (default `virtualenv`; or `python3 -m venv`)
        virtualenv_command: String = "virtualenv".into(),
        /// give the new virtualenv the system's site packages
        virtualenv_site_packages: bool = false,
        /// more words for pip's command line (`--no-index --find-links DIR`)
        extra_args: Option<String>,
        /// the folder pip runs in; relative paths start there
        chdir: Option<String>,
        /// the umask pip runs with (octal)
        umask: Option<String>,
        /// let pip install beside the system's packages (PEP 668)
        break_system_packages: bool = false,
        /// not supported: editable installs are not planned
        editable: bool = false,
        /// not supported: name the interpreter in virtualenv_command
        virtualenv_python: Option<String>,
    }
}

struct Pip {
    reqs: Vec<Requirement>,
    requirements: Option<String>,
    state: State,
    env: Env,
    /// The command that makes the virtualenv, quoted, without its path.
    make_venv: Option<String>,
    /// The folder and umask every command runs with, as a shell prefix.
    prefix: String,
    extra_args: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = PipArgs::read(p)?;
    if a.editable {
        return Err(p.unsupported(
            "editable",
            "editable is not supported by nodeprov: an editable install cannot be planned",
        ));
    }
    if a.virtualenv_python.is_some() {
        return Err(p.unsupported(
            "virtualenv_python",
            "virtualenv_python is not supported by nodeprov: name the interpreter in virtualenv_command",
        ));
    }
    if a.name.is_empty() && a.requirements.is_none() {
        return Err(p.error("name", "one of name or requirements is required"));
    }
    if a.executable.is_some() && a.virtualenv.is_some() {
        return Err(p.error(
            "executable",
            "executable and virtualenv are mutually exclusive",
        ));
    }
    let reqs = requirements_of(p, &a)?;
    let at = |key: &str, path: String| under(p, key, a.chdir.as_deref(), path);
    let venv = a
        .virtualenv
        .clone()
        .map(|v| at("virtualenv", v))
        .transpose()?;
    let env = match venv {
        Some(dir) => Env::Venv(dir),
        None => Env::Executable(a.executable.clone().unwrap_or_else(|| "pip3".into())),
    };
    let make_venv = matches!(env, Env::Venv(_)).then(|| venv_command(&a));
    Ok(Box::new(Pip {
        reqs,
        requirements: a
            .requirements
            .clone()
            .map(|r| at("requirements", r))
            .transpose()?,
        state: a.state,
        env,
        make_venv,
        prefix: prefix(p, &a)?,
        extra_args: extra_args(&a),
    }))
}

/// `name` (with `version` for its one package) as requirements.
fn requirements_of(p: &Params, a: &PipArgs) -> Result<Vec<Requirement>, ParamError> {
    let named: Vec<String> = match (&a.version, &a.name[..]) {
        (None, _) => a.name.clone(),
        (Some(v), [one]) if Requirement::parse(one).is_some_and(|r| r.specs.is_empty()) => {
            vec![format!("{one}=={v}")]
        }
        (Some(_), _) => {
            return Err(p.error(
                "version",
                "version needs exactly one name, without a specifier of its own",
            ))
        }
    };
    named
        .iter()
        .map(|n| {
            Requirement::parse(n).ok_or_else(|| {
                p.unsupported(
                    "name",
                    format!("'{n}' is not supported by nodeprov: only names with version specifiers (no URLs, paths or markers)"),
                )
            })
        })
        .collect()
}

/// `path` made absolute against `chdir`.
fn under(p: &Params, key: &str, chdir: Option<&str>, path: String) -> Result<String, ParamError> {
    match chdir {
        _ if path.starts_with('/') => Ok(path),
        Some(dir) if dir.starts_with('/') => Ok(format!("{}/{path}", dir.trim_end_matches('/'))),
        _ => Err(p.error(
            key,
            format!("{key}: a relative path needs an absolute chdir"),
        )),
    }
}

fn venv_command(a: &PipArgs) -> String {
    let mut cmd = words(&a.virtualenv_command);
    if a.virtualenv_site_packages {
        cmd.push_str(" --system-site-packages");
    }
    cmd
}

/// The `cd` and `umask` every command of the task runs after.
fn prefix(p: &Params, a: &PipArgs) -> Result<String, ParamError> {
    let mut out = String::new();
    if let Some(dir) = &a.chdir {
        out.push_str(&format!("cd {} && ", quote(dir)));
    }
    if let Some(mask) = &a.umask {
        if mask.is_empty() || mask.len() > 4 || !mask.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return Err(p.error("umask", format!("umask '{mask}' is not an octal mask")));
        }
        out.push_str(&format!("umask {mask} && "));
    }
    Ok(out)
}

/// The words added to every pip command.
fn extra_args(a: &PipArgs) -> String {
    let mut args = words(a.extra_args.as_deref().unwrap_or(""));
    if a.break_system_packages {
        args = format!("--break-system-packages {args}")
            .trim_end()
            .to_string();
    }
    args
}

/// A command line split as the shell would, each word quoted again.
fn words(line: &str) -> String {
    shell::split(line)
        .iter()
        .map(|w| quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Module for Pip {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![PipList::probe(&self.env)];
        probes.extend(self.requirements.as_deref().map(FileFact::probe));
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = Plan::noop();
        let installed = match PipList::read(facts, &self.env)? {
            Listing::Missing => {
                return Err(ModuleError::Absent(format!(
                    "{} is not on this host's PATH",
                    self.env.label()
                )))
            }
            Listing::NoVenv if self.state == State::Absent => return Ok(plan),
            Listing::NoVenv => {
                self.make_venv_into(&mut plan);
                BTreeMap::new()
            }
            Listing::Installed(set) => set,
        };
        let reqs = self.all_requirements(facts)?;
        let todo: Vec<&Requirement> = reqs
            .iter()
            .filter(|r| self.needs_work(r, installed.get(&r.name)))
            .collect();
        if todo.is_empty() {
            return Ok(plan);
        }
        for r in &todo {
            plan.changes.push(self.change(r, installed.get(&r.name)));
        }
        plan.steps.push(self.pip_step(&todo));
        plan.effects.push(self.effect(installed, &todo));
        if matches!(self.state, State::Latest | State::ForceReinstall) {
            plan.unknown = Some(format!(
                "{}: whether pip would install another version is known only to the package index",
                self.state.name()
            ));
        }
        Ok(plan)
    }

    /// Upgrading and reinstalling run on every run: only the index knows
    /// whether anything changed.
    fn is_command(&self) -> bool {
        matches!(self.state, State::Latest | State::ForceReinstall)
    }
}

impl Pip {
    fn make_venv_into(&self, plan: &mut Plan) {
        let (Env::Venv(dir), Some(cmd)) = (&self.env, &self.make_venv) else {
            return;
        };
        plan.changes.push(
            Change::new(
                dir.clone(),
                Some("absent".into()),
                Some("virtualenv".into()),
            )
            .with_evidence(format!("no {dir}/bin/pip")),
        );
        plan.steps.push(self.guarded(
            &format!("{cmd} {}", quote(dir)),
            &format!("making the virtualenv {dir} failed"),
        ));
    }

    /// `name` and the requirements file's lines, in that order.
    fn all_requirements(&self, facts: &Facts) -> Result<Vec<Requirement>, ModuleError> {
        let mut reqs = self.reqs.clone();
        let Some(path) = &self.requirements else {
            return Ok(reqs);
        };
        let st = FileFact::read(facts, path)?
            .ok_or_else(|| ModuleError::Absent(format!("requirements file not found: {path}")))?;
        let text = st.content.ok_or_else(|| {
            ModuleError::Unsupported(format!(
                "{path} is not a text file of at most {MAX_CONTENT} bytes"
            ))
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split(" #").next().unwrap_or_default().trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            reqs.push(Requirement::parse(line).ok_or_else(|| {
                ModuleError::Unsupported(format!(
                    "{path}:{}: '{line}' is not supported by nodeprov: only names with version specifiers (no options, URLs, paths or markers)",
                    n + 1
                ))
            })?);
        }
        Ok(reqs)
    }

    fn needs_work(&self, r: &Requirement, have: Option<&String>) -> bool {
        match self.state {
            State::Present => !have.is_some_and(|v| r.allows(v)),
            State::Absent => have.is_some_and(|v| r.allows(v)),
            State::Latest | State::ForceReinstall => true,
        }
    }

    fn change(&self, r: &Requirement, have: Option<&String>) -> Change {
        let after = match self.state {
            State::Present => r.text.clone(),
            State::Absent => "absent".into(),
            State::Latest => format!("{} at its latest version", r.text),
            State::ForceReinstall => format!("{} reinstalled", r.text),
        };
        Change::new(
            format!("{} in {}", r.name, self.env.label()),
            Some(have.cloned().unwrap_or_else(|| "absent".into())),
            Some(after),
        )
        .with_evidence(format!("pip list of {}", self.env.label()))
    }

    fn pip_step(&self, todo: &[&Requirement]) -> String {
        let action = match self.state {
            State::Present => "install",
            State::Absent => "uninstall -y",
            State::Latest => "install --upgrade",
            State::ForceReinstall => "install --force-reinstall",
        };
        let names: Vec<String> = todo
            .iter()
            .map(|r| match self.state {
                State::Absent => quote(&r.name),
                _ => quote(&r.text),
            })
            .collect();
        let verb = action.split(' ').next().unwrap_or(action);
        let pip = format!("{} {action} --disable-pip-version-check", self.env.pip());
        let line = [pip.as_str(), &self.extra_args, &names.join(" ")]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        self.guarded(
            &format!("PIP_NO_INPUT=1 {line}"),
            &format!("pip {verb} failed"),
        )
    }

    /// The command in the task's folder and umask, failing with `what`.
    fn guarded(&self, cmd: &str, what: &str) -> String {
        format!(
            "( {}{cmd} ) || {{ echo {} >&2; exit 1; }}",
            self.prefix,
            quote(what)
        )
    }

    /// Exact pins and removals are known before they run; anything else is
    /// read again afterwards.
    fn effect(
        &self,
        mut installed: BTreeMap<String, String>,
        todo: &[&Requirement],
    ) -> crate::modules::kit::plan::Effect {
        for r in todo {
            let known = match self.state {
                State::Absent => installed.remove(&r.name).map(|_| ()),
                State::Present => r
                    .pinned()
                    .map(|v| installed.insert(r.name.clone(), v.to_string()))
                    .map(|_| ()),
                _ => None,
            };
            if known.is_none() {
                return PipList::invalidate(&self.env);
            }
        }
        PipList::predict(&self.env, &Listing::Installed(installed))
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    facts::fact_samples(rt);
}

#[cfg(test)]
mod tests;
