//! Reboot, wait_for_connection and pause inside the schedule: what is pending
//! runs first, then the wire replaces the session, and everything probed
//! before a reboot is forgotten, so the tasks after it plan from a fresh
//! probe. The batch is cut here by necessity.
//!
//! Check mode reboots nothing: the reboot is reported as drift, as
//! Ansible reports it changed.

use serde_json::{json, Value};

use super::{HostRun, Next};
use crate::exec::instance::TaskInstance;
use crate::exec::result::Status;
use crate::exec::wire::ReconnectError;
use crate::modules::ConnectionAction;

impl<'p> HostRun<'_, 'p> {
    pub(super) fn reconnecting(
        &mut self,
        instance: TaskInstance<'p>,
        action: ConnectionAction,
    ) -> Next {
        self.flush();
        if self.state.stopped {
            return Next::Continue;
        }
        let spec = instance.spec;
        let check = instance.check;
        let result = match action {
            ConnectionAction::Reboot(_) if check => {
                let note = "would reboot the host; check mode reboots nothing";
                self.state.outcomes.noted(spec, Status::Drift, note.into());
                json!({"changed": true, "rebooted": true, "elapsed": 0})
            }
            ConnectionAction::Reboot(r) => match self.wire.reboot(&r) {
                Ok(took) => {
                    self.forget_facts();
                    self.batch.changed_since_probe = true;
                    let note = format!("rebooted; back after {} s", took.as_secs());
                    self.state.outcomes.noted(spec, Status::Changed, note);
                    self.notify(&instance);
                    json!({"changed": true, "rebooted": true, "elapsed": took.as_secs()})
                }
                Err(e) => return self.not_reconnected(instance, e),
            },
            ConnectionAction::WaitFor(w) => match self.wire.wait_for(&w) {
                Ok(took) => {
                    let note = format!("connected after {} s", took.as_secs());
                    self.state.outcomes.noted(spec, Status::Ok, note);
                    json!({"changed": false, "elapsed": took.as_secs()})
                }
                Err(e) => return self.not_reconnected(instance, e),
            },
            ConnectionAction::Pause(p) => {
                let d = p.wait;
                std::thread::sleep(d);
                let note = match p.prompt {
                    Some(prompt) => format!("{prompt}: paused for {} s", d.as_secs()),
                    None => format!("paused for {} s", d.as_secs()),
                };
                self.state.outcomes.noted(spec, Status::Ok, note);
                let said = format!("Paused for {} seconds", d.as_secs());
                json!({"changed": false, "delta": d.as_secs(), "stdout": said, "user_input": ""})
            }
        };
        self.register(spec, vec![result]);
        Next::Continue
    }

    /// The task fails; a host that never came back is lost as well.
    fn not_reconnected(&mut self, instance: TaskInstance<'p>, e: ReconnectError) -> Next {
        let lost = matches!(
            e,
            ReconnectError::NotBack { .. } | ReconnectError::NoAnswer { .. }
        );
        let message = e.to_string();
        let value: Value = json!({"failed": true, "msg": message});
        self.fail(instance.spec, instance.label, message.clone());
        self.register(instance.spec, vec![value]);
        if lost {
            self.lost(message);
        }
        Next::Continue
    }
}
