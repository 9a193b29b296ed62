//! A task run as another user than its play's scripts run as (root, when
//! some task of the play becomes someone else): its steps drop to that
//! user, and so must what it reads. Otherwise a task "as nobody" would
//! read, through a link nobody planted, what only root may read, and put
//! it in the report or a diff.

use crate::base::shell;
use crate::load::playbook::Play;
use crate::modules::{key_as, ConnectionAction, Effect, Facts, Module, ModuleError, Plan};
use crate::remote::probe::{Probe, ProbeResult};

/// The user a task's steps and probes drop to, when it differs from the
/// one its play's scripts run as: the name its probes' answers are kept
/// under, and the shell word that names it on the host. `user` is the
/// task's, as its instance judged it (`None`: the login user).
pub(crate) fn dropped_user(play: &Play, user: &Option<String>) -> Option<(String, String)> {
    if *user == play.script_user() {
        return None;
    }
    Some(match user {
        Some(u) => (u.clone(), shell::quote(u)),
        // The login user: the one sudo was called by.
        None => (
            "the login user".into(),
            "\"${SUDO_USER:-$(id -un)}\"".into(),
        ),
    })
}

/// `module` reading the host as its task's user, where that user is not
/// the play's script user.
pub(crate) fn reading_as_task_user(
    play: &Play,
    user: &Option<String>,
    module: Box<dyn Module>,
) -> Box<dyn Module> {
    match dropped_user(play, user) {
        Some((view, who)) => Box::new(AsUser {
            inner: module,
            view,
            who,
        }),
        None => module,
    }
}

struct AsUser {
    inner: Box<dyn Module>,
    view: String,
    who: String,
}

impl AsUser {
    /// A probe run as the user, under a key of the user's own; it joins no
    /// other probe, since those run as root.
    fn dropped(&self, p: Probe) -> Probe {
        Probe::new(
            key_as(&self.view, &p.key),
            shell::as_user_probe(&self.who, &p.script),
        )
    }
}

impl Module for AsUser {
    fn probes(&self) -> Vec<Probe> {
        let probes = self.inner.probes();
        probes.into_iter().map(|p| self.dropped(p)).collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = self.inner.plan(&facts.seen_by(&self.view))?;
        for effect in &mut plan.effects {
            if let Effect::Predict(key, _) | Effect::Invalidate(key) = effect {
                *key = key_as(&self.view, key);
            }
        }
        Ok(plan)
    }

    fn is_command(&self) -> bool {
        self.inner.is_command()
    }

    fn command_returns(&self, output: &ProbeResult) -> serde_json::Map<String, serde_json::Value> {
        self.inner.command_returns(output)
    }

    fn command_result(&self, output: &ProbeResult) -> serde_json::Value {
        self.inner.command_result(output)
    }

    fn output_is_json(&self) -> bool {
        self.inner.output_is_json()
    }

    fn query_probe(&self) -> Option<Probe> {
        self.inner.query_probe().map(|p| self.dropped(p))
    }

    fn reads_everything(&self) -> bool {
        self.inner.reads_everything()
    }

    fn connection_action(&self) -> Option<ConnectionAction> {
        self.inner.connection_action()
    }

    /// What the user read on the host; the controller's side is written
    /// as the controller's user, whoever the task becomes on the host.
    fn on_controller(&self, facts: &Facts) -> Option<Box<dyn Module>> {
        self.inner.on_controller(&facts.seen_by(&self.view))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes on the controller what it finds under `key` on the host.
    struct Reads;

    impl Module for Reads {
        fn probes(&self) -> Vec<Probe> {
            vec![Probe::new("key", "cat key")]
        }
        fn plan(&self, _: &Facts) -> Result<Plan, ModuleError> {
            Ok(Plan::noop())
        }
        fn on_controller(&self, facts: &Facts) -> Option<Box<dyn Module>> {
            facts
                .get("key")
                .ok()
                .map(|_| Box::new(Reads) as Box<dyn Module>)
        }
    }

    #[test]
    fn what_a_task_writes_on_the_controller_comes_from_its_user_s_reads() {
        let m = AsUser {
            inner: Box::new(Reads),
            view: "ops".into(),
            who: "ops".into(),
        };
        assert_eq!(m.probes()[0].key, "key (as ops)");
        let mut as_root = Facts::default();
        as_root.insert("key".into(), ProbeResult::ok("root's".to_string()));
        assert!(
            m.on_controller(&as_root).is_none(),
            "root's answer is not the user's"
        );
        let mut as_ops = Facts::default();
        as_ops.insert(key_as("ops", "key"), ProbeResult::ok("ops'".to_string()));
        assert!(m.on_controller(&as_ops).is_some());
    }
}
