//! `meta:` inside the schedule: what the action asks of this host's run.
//! It changes nothing on the host itself.

use serde_json::Value;

use super::{HostRun, Instances, Next};

impl<'p> HostRun<'_, 'p> {
    pub(super) fn meta(&mut self, mut instances: Instances<'p>) -> Next {
        // A loop over meta is refused at load: one instance.
        let Some((instance, module)) = instances.pop() else {
            return Next::Continue;
        };
        let Some(module) = module else {
            self.state.outcomes.skipped(&instance);
            return Next::Continue;
        };
        let action = module.plan(&self.state.facts).ok().map(|p| p.returns);
        let action = action.as_ref().and_then(|r| r.get("action"));
        let note = match action.and_then(Value::as_str) {
            Some("flush_handlers") => {
                self.flush();
                // Handlers are a list of their own, outside any block.
                let section = self.blocks.section.take();
                let failing = std::mem::take(&mut self.blocks.failing);
                self.run_handlers();
                self.flush();
                self.blocks.section = section;
                self.blocks.failing = failing;
                "notified handlers ran"
            }
            Some(end @ ("end_host" | "end_play")) => {
                self.flush();
                self.state.ended = !self.state.stopped;
                self.state.stopped = true;
                match end {
                    "end_host" => "the play ends here for this host",
                    _ => "the play ends here",
                }
            }
            Some("clear_facts") => {
                self.state.vars.facts.clear();
                "gathered facts cleared"
            }
            Some("reset_connection") => {
                self.flush();
                if let Err(e) = self.wire.reset() {
                    let message = format!("reset_connection: {e}");
                    self.fail(instance.spec, instance.label, message.clone());
                    self.lost(message);
                    return Next::Continue;
                }
                "logged in again"
            }
            _ => "nothing to do",
        };
        let ok = crate::exec::result::Status::Ok;
        self.state.outcomes.noted(instance.spec, ok, note.into());
        Next::Continue
    }
}
