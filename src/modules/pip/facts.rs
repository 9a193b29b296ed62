//! What one pip (a virtualenv's or an executable on `PATH`) has installed,
//! read with one `pip list --format=json`.

use std::collections::BTreeMap;

use super::requirement::normalize;
use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

/// Which pip is asked: a virtualenv's own, or an executable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Env {
    Venv(String),
    Executable(String),
}

impl Env {
    /// The pip command, quoted for the shell.
    pub(crate) fn pip(&self) -> String {
        match self {
            Env::Venv(dir) => quote(&format!("{dir}/bin/pip")),
            Env::Executable(exe) => quote(exe),
        }
    }

    /// How a report names it.
    pub(crate) fn label(&self) -> String {
        match self {
            Env::Venv(dir) => format!("virtualenv {dir}"),
            Env::Executable(exe) => exe.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Listing {
    /// The executable is not on the host's `PATH`.
    Missing,
    /// The virtualenv has no pip yet: it is to be made.
    NoVenv,
    /// Normalized project names and their versions.
    Installed(BTreeMap<String, String>),
}

pub(crate) struct PipList;

impl Fact for PipList {
    type Query = Env;
    type Value = Listing;

    fn key(env: &Env) -> String {
        match env {
            Env::Venv(dir) => format!("pip:venv:{dir}"),
            Env::Executable(exe) => format!("pip:exe:{exe}"),
        }
    }

    fn script(env: &Env) -> String {
        let guard = match env {
            Env::Venv(dir) => format!(
                "[ -x {} ] || {{ echo novenv; exit 0; }}",
                quote(&format!("{dir}/bin/pip"))
            ),
            Env::Executable(exe) => format!(
                "command -v {} >/dev/null 2>&1 || {{ echo missing; exit 0; }}",
                quote(exe)
            ),
        };
        format!(
            "{guard}\nPIP_NO_INPUT=1 {} list --format=json --disable-pip-version-check",
            env.pip()
        )
    }

    fn parse(env: &Env, r: &ProbeResult) -> Result<Listing, ModuleError> {
        let bad = |detail: String| fact::bad(Self::key(env), detail);
        if r.rc != 0 {
            return Err(bad(format!("pip list failed: {}", r.stderr.trim())));
        }
        match r.stdout.trim() {
            "missing" => return Ok(Listing::Missing),
            "novenv" => return Ok(Listing::NoVenv),
            _ => {}
        }
        let rows: Vec<BTreeMap<String, String>> =
            serde_json::from_str(r.stdout.trim()).map_err(|e| bad(e.to_string()))?;
        rows.into_iter()
            .map(|row| match (row.get("name"), row.get("version")) {
                (Some(n), Some(v)) => Ok((normalize(n), v.clone())),
                _ => Err(bad("a row without name or version".into())),
            })
            .collect::<Result<_, _>>()
            .map(Listing::Installed)
    }

    fn render(v: &Listing) -> ProbeResult {
        ProbeResult::ok(match v {
            Listing::Missing => "missing\n".to_string(),
            Listing::NoVenv => "novenv\n".to_string(),
            Listing::Installed(set) => {
                let rows: Vec<_> = set
                    .iter()
                    .map(|(name, version)| serde_json::json!({"name": name, "version": version}))
                    .collect();
                serde_json::Value::Array(rows).to_string()
            }
        })
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let env = Env::Venv("/opt/venv".into());
    let set = BTreeMap::from([
        ("torch".to_string(), "2.3.0+cu121".to_string()),
        ("nvidia-nccl-cu12".to_string(), "2.20.5".to_string()),
    ]);
    for v in [
        Listing::Missing,
        Listing::NoVenv,
        Listing::Installed(BTreeMap::new()),
        Listing::Installed(set),
    ] {
        rt.check::<PipList>(&env, v);
    }
}
