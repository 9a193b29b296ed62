//! `service_facts`: the host's systemd services as the `services` variable
//! (`name`, `state`, `status`, `source`), as Ansible shapes it. Read after
//! every earlier change of the run, so services an earlier task installed
//! are there. Without systemd it is empty, with a note.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the node's services
//!   service_facts:
//! - name: Say whether slurmd runs
//!   debug:
//!     msg: "slurmd is {{ services['slurmd.service'].state | default('not installed') }}"
//! ```

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{known_facts, Facts, ModuleError, Plan};
use crate::modules::params::{ParamError, ParamSpec, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const SERVICE_FACTS: ModuleSpec = ModuleSpec {
    name: "service_facts",
    source: file!(),
    aliases: &["ansible.builtin.service_facts"],
    // Ansible's takes no parameters either.
    params: &ParamSpec {
        names: &[],
        required: &[],
        docs: &[],
        any_variable: false,
        aliases: &[],
    },
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

/// What systemctl lists: loaded units (name, load state, sub state) and
/// unit files (name, file state); `None` without systemd.
#[derive(Clone, Debug, Default, PartialEq)]
struct Listed {
    units: Vec<(String, String, String)>,
    files: Vec<(String, String)>,
}

struct ServicesFact;

impl Fact for ServicesFact {
    type Query = ();
    type Value = Option<Listed>;

    fn key(_: &()) -> String {
        "services:systemd".into()
    }

    fn script(_: &()) -> String {
        "[ -d /run/systemd/system ] || { echo nosystemd; exit 0; }\n\
         systemctl list-units --type=service --all --no-legend --plain --no-pager | awk '{print \"u\", $1, $2, $4}' || exit 1\n\
         systemctl list-unit-files --type=service --no-legend --no-pager | awk '{print \"f\", $1, $2}' || exit 1"
            .into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Option<Listed>, ModuleError> {
        if r.rc != 0 {
            return Err(fact::bad(Self::key(&()), r.stderr.trim().to_string()));
        }
        if r.stdout.trim() == "nosystemd" {
            return Ok(None);
        }
        let mut listed = Listed::default();
        for line in r.stdout.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f[..] {
                ["u", name, load, sub] => listed.units.push((name.into(), load.into(), sub.into())),
                ["f", name, state] => listed.files.push((name.into(), state.into())),
                _ => {}
            }
        }
        Ok(Some(listed))
    }

    fn render(v: &Option<Listed>) -> ProbeResult {
        let Some(l) = v else {
            return ProbeResult::ok("nosystemd\n");
        };
        let mut out = String::new();
        for (name, load, sub) in &l.units {
            out.push_str(&format!("u {name} {load} {sub}\n"));
        }
        for (name, state) in &l.files {
            out.push_str(&format!("f {name} {state}\n"));
        }
        ProbeResult::ok(out)
    }
}

struct ServiceFacts {
    /// The host's facts when the task was built, which `services` joins.
    known: Map<String, Value>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    Ok(Box::new(ServiceFacts {
        known: known_facts(p),
    }))
}

/// Ansible's shape: a loaded unit is `running` or `stopped`, a unit file
/// nothing loaded is `inactive`; `status` is the unit file's state, or
/// `not-found`/`unknown` for a loaded unit without one.
fn services(l: &Listed) -> Map<String, Value> {
    let files: BTreeMap<&str, &str> = l
        .files
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let mut out = Map::new();
    let entry = |name: &str, state: &str, status: &str| json!({"name": name, "state": state, "status": status, "source": "systemd"});
    for (name, load, sub) in &l.units {
        let state = if sub == "running" {
            "running"
        } else {
            "stopped"
        };
        let status = match files.get(name.as_str()) {
            Some(s) => *s,
            None if load == "not-found" => "not-found",
            None => "unknown",
        };
        out.insert(name.clone(), entry(name, state, status));
    }
    for (name, status) in &l.files {
        if !out.contains_key(name) {
            out.insert(name.clone(), entry(name, "inactive", status));
        }
    }
    out
}

impl Module for ServiceFacts {
    fn probes(&self) -> Vec<Probe> {
        vec![ServicesFact::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = Plan::noop();
        let found = match ServicesFact::read(facts, &())? {
            Some(l) => services(&l),
            None => {
                plan.notes
                    .push("no systemd on this host: no services are listed".into());
                Map::new()
            }
        };
        plan.set_fact(&self.known, "services", Value::Object(found));
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<ServicesFact>(&(), None);
    rt.check::<ServicesFact>(
        &(),
        Some(Listed {
            units: vec![("ssh.service".into(), "loaded".into(), "running".into())],
            files: vec![("ssh.service".into(), "enabled".into())],
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_test, facts_of};

    #[test]
    fn services_are_shaped_as_ansible_shapes_them() {
        let m = build_test(&SERVICE_FACTS, json!({})).unwrap();
        assert!(m.reads_everything());
        let out = "u ssh.service loaded running\nu gone.service not-found dead\n\
                   u cron.service loaded exited\nf ssh.service enabled\nf cron.service static\n\
                   f nvidia-dcgm.service disabled\n";
        let plan = m
            .plan(&facts_of(&[(&ServicesFact::key(&()), out)]))
            .unwrap();
        let s = &plan.sets["services"];
        assert_eq!(
            s["ssh.service"],
            json!({"name": "ssh.service", "state": "running", "status": "enabled", "source": "systemd"})
        );
        assert_eq!(s["gone.service"]["status"], "not-found");
        assert_eq!(s["cron.service"]["state"], "stopped");
        assert_eq!(s["nvidia-dcgm.service"]["state"], "inactive");
        assert_eq!(plan.returns["ansible_facts"]["services"], *s);
        assert_eq!(
            plan.sets["ansible_facts"]["services"], *s,
            "a host fact too, as ansible_facts.services"
        );
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        let none = m
            .plan(&facts_of(&[(&ServicesFact::key(&()), "nosystemd\n")]))
            .unwrap();
        assert_eq!(none.sets["services"], json!({}));
        assert!(none.notes[0].contains("no systemd"));
    }
}
