//! `ufw` (community.general): the firewall on or off, or reloaded. Only
//! `state` is supported; rules (`rule`, `port`, `from_ip`…) are not
//! parameters here, so a task that sets one is refused when the playbook
//! is loaded rather than half applied.

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const UFW: ModuleSpec = ModuleSpec {
    name: "ufw",
    aliases: &["community.general.ufw"],
    params: &UfwArgs::SPEC,
    free_form: None,
    build,
};

choices! {
    enum State {
        Enabled = "enabled",
        Disabled = "disabled",
        Reloaded = "reloaded",
        Reset = "reset",
    }
}

module_params! {
    struct UfwArgs {
        /// on or off at boot and now; reloaded or reset now
        state: State,
    }
}

struct Ufw {
    state: State,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UfwArgs::read(p)?;
    Ok(Box::new(Ufw { state: a.state }))
}

/// Whether ufw is installed, and whether it is active.
struct Status;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Found {
    Missing,
    Active,
    Inactive,
}

impl Fact for Status {
    type Query = ();
    type Value = Found;

    fn key(_: &()) -> String {
        "ufw:status".into()
    }

    fn script(_: &()) -> String {
        "command -v ufw >/dev/null 2>&1 || { echo missing; exit 0; }\n\
         s=$(ufw status) || exit 1\n\
         case \"$s\" in 'Status: active'*) echo active ;; *) echo inactive ;; esac"
            .into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Found, ModuleError> {
        match (r.rc, r.stdout.trim()) {
            (0, "missing") => Ok(Found::Missing),
            (0, "active") => Ok(Found::Active),
            (0, "inactive") => Ok(Found::Inactive),
            _ => Err(fact::bad(Self::key(&()), r.stderr.trim().to_string())),
        }
    }

    fn render(f: &Found) -> ProbeResult {
        ProbeResult::ok(match f {
            Found::Missing => "missing\n",
            Found::Active => "active\n",
            Found::Inactive => "inactive\n",
        })
    }
}

impl Module for Ufw {
    fn probes(&self) -> Vec<Probe> {
        vec![Status::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let found = Status::read(facts, &())?;
        if found == Found::Missing {
            return Err(ModuleError::Missing(
                "ufw is not installed on this host".into(),
            ));
        }
        let now = if found == Found::Active {
            "active"
        } else {
            "inactive"
        };
        let (after, step, predicted) = match (self.state, found) {
            (State::Enabled, Found::Inactive) => {
                ("active", "ufw --force enable", Some(Found::Active))
            }
            (State::Disabled, Found::Active) => ("inactive", "ufw disable", Some(Found::Inactive)),
            (State::Reloaded, _) => ("reloaded", "ufw reload", None),
            (State::Reset, _) => ("reset", "ufw --force reset", Some(Found::Inactive)),
            _ => return Ok(Plan::noop()),
        };
        let mut plan = Plan::noop();
        plan.changes.push(
            Change::new("ufw", Some(now.into()), Some(after.into())).with_evidence("ufw status"),
        );
        plan.steps
            .push(format!("{step} || {{ echo '{step} failed' >&2; exit 1; }}"));
        plan.effects.push(match predicted {
            Some(f) => Status::predict(&(), &f),
            None => Status::invalidate(&()),
        });
        Ok(plan)
    }

    /// Reloading and resetting are actions: nothing shows afterwards that
    /// they happened.
    fn is_command(&self) -> bool {
        matches!(self.state, State::Reloaded | State::Reset)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    for f in [Found::Missing, Found::Active, Found::Inactive] {
        rt.check::<Status>(&(), f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_test, facts_of};
    use serde_json::json;

    fn plan_on(state: &str, found: &str) -> (Box<dyn Module>, Result<Plan, ModuleError>) {
        let m = build_test(&UFW, json!({ "state": state })).unwrap();
        let plan = m.plan(&facts_of(&[(&Status::key(&()), found)]));
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        (m, plan)
    }

    #[test]
    fn state_is_compared_with_ufw_status() {
        let (_, plan) = plan_on("enabled", "inactive\n");
        let plan = plan.unwrap();
        assert_eq!(plan.changes[0].to_string(), "ufw: inactive → active");
        assert!(plan.steps[0].starts_with("ufw --force enable ||"));
        assert_eq!(plan_on("enabled", "active\n").1.unwrap(), Plan::noop());
        assert_eq!(plan_on("disabled", "inactive\n").1.unwrap(), Plan::noop());
        let (m, plan) = plan_on("reloaded", "active\n");
        assert!(m.is_command() && plan.unwrap().steps[0].starts_with("ufw reload ||"));
        let (_, err) = plan_on("enabled", "missing\n");
        assert!(matches!(err, Err(ModuleError::Missing(m)) if m.contains("not installed")));
    }
}
