//! Typed facts: what a probe reads about a host, in one place.

use super::plan::{Effect, Facts, ModuleError};
use crate::remote::probe::{Probe, ProbeResult};

/// One thing a probe reads about a host: its canonical key, the read-only
/// snippet that reads it, the parser of its answer, and the answer a value
/// would produce, for predicted effects. Kept together, a key cannot drift
/// between the probe and the plan, and every prediction is something the
/// parser reads back (`RoundTrip` holds each fact to it).
pub(crate) trait Fact {
    /// What is asked about: a path, a list of units; `()` for the host.
    type Query: ?Sized;
    type Value;
    fn key(q: &Self::Query) -> String;
    fn script(q: &Self::Query) -> String;
    fn parse(q: &Self::Query, r: &ProbeResult) -> Result<Self::Value, ModuleError>;
    fn render(v: &Self::Value) -> ProbeResult;

    fn probe(q: &Self::Query) -> Probe {
        Probe::new(Self::key(q), Self::script(q))
    }

    /// The value among a plan's facts.
    fn read(facts: &Facts, q: &Self::Query) -> Result<Self::Value, ModuleError> {
        Self::parse(q, facts.get(&Self::key(q))?)
    }

    /// The effect "after the steps, the probe would answer `v`".
    fn predict(q: &Self::Query, v: &Self::Value) -> Effect {
        Effect::Predict(Self::key(q), Self::render(v))
    }

    /// The effect "after the steps, nothing is known about it".
    fn invalidate(q: &Self::Query) -> Effect {
        Effect::Invalidate(Self::key(q))
    }
}

/// A fact that could not be parsed, as the plan reports it.
pub(crate) fn bad(key: impl Into<String>, detail: impl Into<String>) -> ModuleError {
    ModuleError::Fact {
        key: key.into(),
        detail: detail.into(),
    }
}

/// Checks that each fact reads back what it renders: `parse(render(v)) == v`.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct RoundTrip {
    pub failures: Vec<String>,
    /// The facts checked, by type name.
    pub checked: std::collections::BTreeSet<String>,
}

#[cfg(test)]
impl RoundTrip {
    pub(crate) fn check<F: Fact>(&mut self, q: &F::Query, v: F::Value)
    where
        F::Value: PartialEq + std::fmt::Debug,
    {
        let name = std::any::type_name::<F>();
        let name = name.rsplit("::").next().unwrap_or(name).to_string();
        let answer = F::render(&v);
        match F::parse(q, &answer) {
            Ok(back) if back == v => {}
            other => self.failures.push(format!(
                "{name}: {v:?} rendered {answer:?} reads back {other:?}"
            )),
        }
        self.checked.insert(name);
    }
}
