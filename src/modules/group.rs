//! `group` (ansible.builtin.group): a local group, read with `getent group`
//! and made with groupadd, groupmod and groupdel.
//!
//! # Example
//!
//! ```yaml
//! - name: Give the Slurm daemons their group, with one gid on every node
//!   group:
//!     name: slurm
//!     gid: 64030
//!     system: true
//! ```

use crate::base::shell::quote;
use crate::modules::kit::account::valid_name;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const GROUP: ModuleSpec = ModuleSpec {
    name: "group",
    source: file!(),
    aliases: &["ansible.builtin.group"],
    params: &GroupArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct GroupArgs {
        /// the group's name
        name: String,
        /// whether the group exists
        state: Presence = Presence::Present,
        /// its numeric id (changed with groupmod where it differs)
        gid: Option<i64>,
        /// a system group (a gid from the system range) when it is created
        system: bool = false,
    }
}

struct Group {
    name: String,
    state: Presence,
    gid: Option<u32>,
    system: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = GroupArgs::read(p)?;
    if !valid_name(&a.name) {
        return Err(p.error("name", format!("'{}' is not a group name", a.name)));
    }
    let gid = a
        .gid
        .map(|g| u32::try_from(g).map_err(|_| p.error("gid", format!("{g} is not a gid"))))
        .transpose()?;
    Ok(Box::new(Group {
        name: a.name,
        state: a.state,
        gid,
        system: a.system,
    }))
}

/// The group's gid, or `None` when there is no such group.
struct GroupFact;

impl Fact for GroupFact {
    type Query = str;
    type Value = Option<u32>;

    fn key(name: &str) -> String {
        format!("group:{name}")
    }

    fn script(name: &str) -> String {
        format!("getent group {} | cut -d: -f3", quote(name))
    }

    fn parse(name: &str, r: &ProbeResult) -> Result<Option<u32>, ModuleError> {
        let text = r.stdout.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|_| fact::bad(Self::key(name), format!("not a gid: {text:?}")))
    }

    fn render(gid: &Option<u32>) -> ProbeResult {
        ProbeResult::ok(gid.map(|g| format!("{g}\n")).unwrap_or_default())
    }
}

impl Module for Group {
    fn probes(&self) -> Vec<Probe> {
        vec![GroupFact::probe(&self.name)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = GroupFact::read(facts, &self.name)?;
        let name = quote(&self.name);
        let gid_opt = |g: Option<u32>| g.map(|g| format!(" -g {g}")).unwrap_or_default();
        let show = |g: u32| format!("gid {g}");
        let mut plan = Plan::noop();
        let subject = format!("group {}", self.name);
        let evidence = format!("getent group {}", self.name);
        match (self.state, current) {
            (Presence::Absent, None) => return Ok(plan),
            (Presence::Absent, Some(g)) => {
                plan.changes
                    .push(Change::new(subject, Some(show(g)), None).with_evidence(evidence));
                plan.steps.push(format!("/usr/sbin/groupdel {name}"));
                plan.effects.push(GroupFact::predict(&self.name, &None));
            }
            (Presence::Present, None) => {
                let system = if self.system { " -r" } else { "" };
                let after = self.gid.map_or("present".into(), show);
                plan.changes
                    .push(Change::new(subject, None, Some(after)).with_evidence(evidence));
                plan.steps.push(format!(
                    "/usr/sbin/groupadd{system}{} {name}",
                    gid_opt(self.gid)
                ));
                // The gid groupadd picks is known only once it ran.
                plan.effects.push(match self.gid {
                    Some(g) => GroupFact::predict(&self.name, &Some(g)),
                    None => GroupFact::invalidate(&self.name),
                });
            }
            (Presence::Present, Some(g)) => match self.gid {
                Some(want) if want != g => {
                    plan.changes.push(
                        Change::new(subject, Some(show(g)), Some(show(want)))
                            .with_evidence(evidence),
                    );
                    plan.steps
                        .push(format!("/usr/sbin/groupmod{} {name}", gid_opt(Some(want))));
                    plan.effects
                        .push(GroupFact::predict(&self.name, &Some(want)));
                }
                _ => {}
            },
        }
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<GroupFact>("render", Some(1001));
    rt.check::<GroupFact>("nobody-here", None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, settled,
    };
    use serde_json::json;

    fn facts(gid: Option<u32>) -> Facts {
        facts_of(&[(&GroupFact::key("render"), &GroupFact::render(&gid).stdout)])
    }

    fn steps(params: serde_json::Value, gid: Option<u32>) -> Vec<String> {
        let m = build_test(&GROUP, params).unwrap();
        let before = facts(gid);
        let plan = m.plan(&before).unwrap();
        assert_sh_syntax(&*m, &plan);
        if plan
            .effects
            .iter()
            .all(|e| matches!(e, crate::modules::kit::plan::Effect::Predict(..)))
        {
            assert_eq!(m.plan(&settled(&before, &plan)).unwrap(), Plan::noop());
        }
        plan.steps
    }

    #[test]
    fn groups_are_added_changed_and_removed_once() {
        let add = json!({"name": "render", "gid": 993, "system": true});
        assert_eq!(
            steps(add.clone(), None),
            ["/usr/sbin/groupadd -r -g 993 render"]
        );
        assert_eq!(steps(add.clone(), Some(993)), Vec::<String>::new());
        assert_eq!(steps(add, Some(44)), ["/usr/sbin/groupmod -g 993 render"]);
        let any_gid = json!({"name": "render"});
        assert_eq!(steps(any_gid.clone(), Some(44)), Vec::<String>::new());
        assert_eq!(steps(any_gid, None), ["/usr/sbin/groupadd render"]);
        let gone = json!({"name": "render", "state": "absent"});
        assert_eq!(steps(gone.clone(), Some(44)), ["/usr/sbin/groupdel render"]);
        assert_eq!(steps(gone, None), Vec::<String>::new());
    }

    #[test]
    fn a_new_group_without_gid_is_known_only_after_apply() {
        let m = build_test(&GROUP, json!({"name": "render"})).unwrap();
        let plan = m.plan(&facts(None)).unwrap();
        assert_eq!(plan.effects, [GroupFact::invalidate("render")]);
        assert_eq!(
            plan.changes[0].to_string(),
            "group render: (none) → present"
        );
    }

    #[test]
    fn names_and_gids_are_checked() {
        for bad in ["-r", "a b", "a:b", "", "x;rm"] {
            assert!(build_error(&GROUP, json!({"name": bad})).contains("not a group name"));
        }
        assert!(build_error(&GROUP, json!({"name": "g", "gid": -1})).contains("not a gid"));
        assert!(
            !GROUP.params.names.contains(&"members"),
            "refused at load, never ignored"
        );
    }
}
