//! Blocks with `rescue:` and `always:`, inside the schedule. Their tasks
//! arrive flat, each with its frame (block and section); this file keeps
//! which blocks are failing on the host and so which sections still run.
//!
//! A failed task inside such a block does not stop the host: the rest of
//! its section is left out, the block's `rescue:` runs after a failure in
//! its body, its `always:` runs in any case, and once the block is left
//! the failure is either rescued (a body failure whose rescue went through)
//! or passed to the block around it, or at the top stops the host.

use std::sync::Arc;

use serde_json::{json, Value};

use super::HostRun;
use crate::exec::prepared::PreparedTask;
use crate::load::tasks::{Frame, Part};

/// Where the host is among blocks: the section the last planned task is
/// in, and the blocks failing around it, innermost last.
#[derive(Default)]
pub(super) struct Blocks {
    pub section: Option<Arc<Frame>>,
    pub failing: Vec<Failing>,
}

/// A block that failed on this host, and where.
pub(super) struct Failing {
    frame: Arc<Frame>,
    /// The result of the first failed task, to mark rescued.
    result: usize,
}

/// What a block's failure in `failed` leaves of a section `part` of it.
fn runs(failed: Option<Part>, part: Part) -> bool {
    match (failed, part) {
        (None, Part::Rescue) => false,
        (None, _) => true,
        (Some(Part::Body), Part::Rescue | Part::Always) => true,
        (Some(Part::Rescue), Part::Always) => true,
        _ => false,
    }
}

/// Two tasks are in the same section of the same block.
pub(super) fn same_section(a: Option<&Arc<Frame>>, b: Option<&Arc<Frame>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl<'p> HostRun<'_, 'p> {
    /// Whether the task's sections still run, given the failing blocks.
    pub(super) fn in_running_section(&self, spec: &PreparedTask) -> bool {
        let Some(frame) = &spec.task.frame else {
            return true;
        };
        frame.chain().all(|f| {
            let failed = self
                .blocks
                .failing
                .iter()
                .find(|x| x.frame.block == f.block)
                .map(|x| x.frame.part);
            runs(failed, f.part)
        })
    }

    /// A task failed for good; true when a block catches it (the host goes
    /// on), false when it stops the host.
    pub(super) fn caught(&mut self, spec: &PreparedTask, result: usize, value: Value) -> bool {
        let Some(frame) = &spec.task.frame else {
            return false;
        };
        let failed_task = json!({"name": spec.name, "action": spec.task.module.name});
        let vars = &mut self.state.vars.registered;
        vars.insert("ansible_failed_task".into(), failed_task);
        vars.insert("ansible_failed_result".into(), value);
        self.block_failed(frame.clone(), result);
        true
    }

    fn block_failed(&mut self, frame: Arc<Frame>, result: usize) {
        match self
            .blocks
            .failing
            .iter_mut()
            .find(|x| x.frame.block == frame.block)
        {
            Some(x) => x.frame = frame,
            None => self.blocks.failing.push(Failing { frame, result }),
        }
    }

    /// Leaves the failing blocks the next task (`None`: the end of the
    /// list) is not inside: a body failure with a rescue that went through
    /// is rescued, any other passes to the block around, or at the top
    /// stops the host.
    pub(super) fn leave_blocks(&mut self, next: Option<&Arc<Frame>>) {
        let inside = |block: usize| next.is_some_and(|n| n.chain().any(|f| f.block == block));
        while let Some(last) = self.blocks.failing.last() {
            if inside(last.frame.block) {
                break;
            }
            let Failing { frame, result } = self.blocks.failing.pop().expect("just seen");
            if frame.part == Part::Body && frame.has_rescue {
                self.state.outcomes.rescued(result);
                continue;
            }
            match &frame.outer {
                Some(outer) => self.block_failed(outer.clone(), result),
                None if !self.ctx.opts.check => self.state.stopped = true,
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescue_runs_only_after_a_body_failure_and_always_unless_always_failed() {
        use Part::*;
        let table = [
            (None, [true, false, true]),
            (Some(Body), [false, true, true]),
            (Some(Rescue), [false, false, true]),
            (Some(Always), [false, false, false]),
        ];
        for (failed, want) in table {
            let got = [Body, Rescue, Always].map(|p| runs(failed, p));
            assert_eq!(got, want, "after a failure in {failed:?}");
        }
    }
}
