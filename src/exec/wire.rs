//! Wire: the host's transport, spoken to in whole scripts. A probe batch
//! goes out and comes back as answers; an apply batch goes out and comes
//! back as the reports of the steps that finished, plus how it ended.
//!
//! Kept apart so that framing, tokens and round-trip counting live in one
//! place, and so that talking to a host never decides a task's status:
//! that is the outcome's business.

use std::collections::BTreeMap;

mod reconnect;

pub(crate) use reconnect::ReconnectError;

use super::result::Observation;
use crate::base::time::rfc3339;
use crate::remote::joint::Batch;
use crate::remote::probe::{self, Probe, ProbeResult, RunTimes};
use crate::remote::{Output, Purpose, Script, Transport, TransportError};

/// Why a probe batch brought back no answers; the host is lost.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("probe output unreadable ({reason}): {stderr}")]
    Unreadable { reason: String, stderr: String },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// One task's steps in an apply batch, under its result's index.
pub(crate) struct Step {
    pub result: usize,
    pub body: String,
    /// The batch goes on when it fails (`ignore_errors`, `failed_when`).
    pub may_fail: bool,
    /// Its result says when it ran (a command's `start`, `end`, `delta`).
    pub timed: bool,
}

impl Step {
    /// The steps of one task as one guarded block, built in one buffer: a
    /// step may carry a whole file.
    pub fn new(result: usize, steps: Vec<String>, may_fail: bool) -> Self {
        Step {
            result,
            body: chained(steps),
            may_fail,
            timed: false,
        }
    }
}

/// Steps as one block that stops at the first that fails.
pub(crate) fn chained(steps: Vec<String>) -> String {
    let mut body = String::with_capacity(steps.iter().map(|s| s.len() + 8).sum());
    for (n, step) in steps.into_iter().enumerate() {
        if n > 0 {
            body.push_str(" &&\n");
        }
        body.push_str("{\n");
        body.push_str(&step);
        body.push_str("\n}");
    }
    body
}

/// What came back from an apply batch.
pub(crate) struct Applied {
    /// Reports of the steps known to have finished, by result index.
    pub reports: BTreeMap<usize, ProbeResult>,
    /// When each timed step that finished ran.
    pub ran: BTreeMap<usize, RunTimes>,
    pub ended: Result<Output, TransportError>,
}

/// The transport a wire speaks through: the host's own, lent by the
/// worker, or one the wire opened and holds (a host tasks are delegated to).
enum Link<'a> {
    Lent(&'a mut dyn Transport),
    Held(Box<dyn Transport>),
}

impl<'a> std::ops::Deref for Link<'a> {
    type Target = dyn Transport + 'a;
    fn deref(&self) -> &Self::Target {
        match self {
            Link::Lent(t) => &**t,
            Link::Held(t) => t.as_ref(),
        }
    }
}

impl std::ops::DerefMut for Link<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Link::Lent(t) => &mut **t,
            Link::Held(t) => t.as_mut(),
        }
    }
}

pub(crate) struct Wire<'a> {
    transport: Link<'a>,
    /// Marks this run's frames, so no output can pass for one.
    token: String,
    become_user: Option<String>,
    become_flags: Option<String>,
    round_trips: usize,
    /// Every probe sent, in order.
    observations: Vec<Observation>,
}

impl<'a> Wire<'a> {
    pub fn new(transport: &'a mut dyn Transport, become_user: Option<String>) -> Self {
        Self::over(Link::Lent(transport), become_user)
    }

    /// A wire that holds its transport.
    pub fn holding(transport: Box<dyn Transport>, become_user: Option<String>) -> Self {
        Self::over(Link::Held(transport), become_user)
    }

    /// Escalating with the play's `become_flags`.
    pub fn with_become_flags(self, flags: Option<String>) -> Self {
        Wire {
            become_flags: flags,
            ..self
        }
    }

    fn over(transport: Link<'a>, become_user: Option<String>) -> Self {
        Wire {
            transport,
            token: new_token(),
            become_user,
            become_flags: None,
            round_trips: 0,
            observations: Vec::new(),
        }
    }

    /// The round trips made and the probes sent.
    pub fn finish(self) -> (usize, Vec<Observation>) {
        (self.round_trips, self.observations)
    }

    /// When the newest answer to any of `keys` was read.
    pub fn newest_observation(&self, keys: &[String]) -> Option<String> {
        self.observations
            .iter()
            .rev()
            .find(|o| keys.contains(&o.key))
            .map(|o| o.observed_at.clone())
    }

    /// Sends probes as one script and returns their answers by key.
    pub fn probe(
        &mut self,
        probes: Vec<Probe>,
    ) -> Result<BTreeMap<String, ProbeResult>, WireError> {
        let batch = Batch::new(probes, self.transport.joins_probes());
        let ids: Vec<String> = batch.units.iter().map(|u| u.0.clone()).collect();
        let observed_at = rfc3339(std::time::SystemTime::now());
        self.observations
            .extend(batch.ran.iter().map(|(key, command)| Observation {
                key: key.clone(),
                // Reports show this; credentials a module sent stay out.
                command: crate::base::shell::mask_secrets(command),
                observed_at: observed_at.clone(),
            }));
        let body = probe::build_script(&self.token, &batch.units, false, &[]);
        let out = self.send(Purpose::Probe, body)?;
        let by_unit = probe::parse_frames(&self.token, &out.stdout, &ids).map_err(|e| {
            WireError::Unreadable {
                reason: e.0,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }
        })?;
        Ok(batch.answers(by_unit))
    }

    /// Runs the steps as one script that stops at the first failure.
    pub fn apply(&mut self, steps: Vec<Step>) -> Applied {
        let results: Vec<usize> = steps.iter().map(|s| s.result).collect();
        let ids: Vec<String> = results.iter().map(|r| format!("t{r}")).collect();
        let size = steps.iter().map(|s| s.body.len()).sum();
        let mut body = probe::ScriptBuilder::new(&self.token, true, size);
        // Each body (it may hold whole files) is freed once it is in the
        // script.
        for (step, id) in steps.into_iter().zip(&ids) {
            match step.timed {
                true => body.timed_unit(id, &step.body, step.may_fail),
                false => body.unit(id, &step.body, step.may_fail),
            }
        }
        let ended = self.send(Purpose::Mutate, body.finish());
        let stdout = match &ended {
            Ok(out) => &out.stdout[..],
            Err(TransportError::Interrupted { stdout, .. }) => &stdout[..],
            Err(_) => &[],
        };
        // Only a step whose report arrived whole is known to have finished.
        let (mut frames, mut times) = probe::complete_frames(&self.token, stdout, &ids);
        let mut ran = BTreeMap::new();
        let mut reports = BTreeMap::new();
        for (result, id) in results.into_iter().zip(&ids) {
            ran.extend(times.remove(id).map(|t| (result, t)));
            reports.extend(frames.remove(id).map(|r| (result, r)));
        }
        Applied {
            reports,
            ran,
            ended,
        }
    }

    fn send(&mut self, purpose: Purpose, body: String) -> Result<Output, TransportError> {
        let script = Script {
            purpose,
            body,
            become_user: self.become_user.clone(),
            become_flags: self.become_flags.clone(),
        };
        self.round_trips += 1;
        self.transport.run(&script)
    }
}

/// Random, so no output of the host can be made in advance to pass for
/// one of the run's frames.
fn new_token() -> String {
    crate::base::shell::random_hex() + &crate::base::shell::random_hex()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::fake::FakeTransport;
    use crate::remote::probe::fake_answer;

    fn answering(stderr: &'static str) -> FakeTransport {
        FakeTransport::new(move |s: &Script| {
            Ok(Output {
                status: 0,
                stdout: fake_answer(&s.body, |key| ProbeResult::ok(format!("answer {key}"))),
                stderr: stderr.as_bytes().to_vec(),
            })
        })
    }

    #[test]
    fn a_probe_batch_is_one_round_trip_and_every_probe_is_observed() {
        let mut fake = answering("");
        let log = fake.log();
        let mut wire = Wire::new(&mut fake, Some("root".into()));
        let answers = wire
            .probe(vec![Probe::new("a", "cat /a"), Probe::new("b", "cat /b")])
            .unwrap();
        assert_eq!(answers["b"].stdout, "answer b");
        assert!(wire.newest_observation(&["b".into()]).is_some());
        assert_eq!(wire.newest_observation(&["c".into()]), None);
        let (trips, observed) = wire.finish();
        assert_eq!(trips, 1);
        let keys: Vec<&str> = observed.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        let sent = log.lock().unwrap();
        assert_eq!(sent[0].purpose, Purpose::Probe);
        assert_eq!(sent[0].become_user.as_deref(), Some("root"));
    }

    #[test]
    fn unreadable_probe_output_names_what_the_host_said() {
        let mut fake = FakeTransport::new(|_: &Script| {
            Ok(Output {
                status: 1,
                stdout: b"not a frame".to_vec(),
                stderr: b"sudo: a password is required\n".to_vec(),
            })
        });
        let mut wire = Wire::new(&mut fake, None);
        let err = wire.probe(vec![Probe::new("a", "cat /a")]).unwrap_err();
        assert!(matches!(err, WireError::Unreadable { .. }));
        assert!(
            err.to_string().ends_with("): sudo: a password is required"),
            "{err}"
        );
    }

    #[test]
    fn an_apply_batch_reports_by_result_index() {
        let mut fake = answering("");
        let log = fake.log();
        let mut wire = Wire::new(&mut fake, None);
        let steps = vec![
            Step::new(0, vec!["a".into(), "b".into()], false),
            Step::new(2, vec!["c".into()], true),
        ];
        assert_eq!(steps[0].body, "{\na\n} &&\n{\nb\n}");
        let applied = wire.apply(steps);
        assert!(applied.ended.is_ok());
        let indexes: Vec<usize> = applied.reports.keys().copied().collect();
        assert_eq!(indexes, [0, 2]);
        assert_eq!(log.lock().unwrap()[0].purpose, Purpose::Mutate);
        assert_eq!(wire.round_trips, 1);
    }
}
