//! Collected samples and the markdown they become.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::scenario::Scenario;
use crate::tools::{Phase, Tool};

type Cell = (Scenario, Phase, Tool);

#[derive(Default)]
pub struct Samples {
    secs: BTreeMap<Cell, Vec<f64>>,
    /// Why a cell's runs failed; one failure makes the whole cell failed.
    failures: BTreeMap<Cell, Vec<String>>,
    round_trips: BTreeMap<(Scenario, Phase), BTreeSet<u64>>,
    /// Runs that changed something where nothing should change.
    notes: Vec<String>,
}

impl Samples {
    pub fn time(&mut self, cell: Cell, secs: f64) {
        self.secs.entry(cell).or_default().push(secs);
    }

    pub fn fail(&mut self, cell: Cell, why: String) {
        self.failures.entry(cell).or_default().push(why);
    }

    pub fn round_trips(&mut self, scenario: Scenario, phase: Phase, trips: &[u64]) {
        let seen = self.round_trips.entry((scenario, phase)).or_default();
        seen.extend(trips);
    }

    pub fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// The median in seconds, or None when the cell failed or never ran.
    fn median(&self, cell: Cell) -> Option<f64> {
        if self.failures.contains_key(&cell) {
            return None;
        }
        let mut secs = self.secs.get(&cell)?.clone();
        secs.sort_by(f64::total_cmp);
        let mid = secs.len() / 2;
        Some(if secs.len() % 2 == 1 {
            secs[mid]
        } else {
            (secs[mid - 1] + secs[mid]) / 2.0
        })
    }

    /// The results table followed by failures and notes.
    pub fn markdown(&self) -> String {
        let mut md = String::from(
            "| scenario | phase | nodeprov s | ansible-core s | pyinfra s | ansible/nodeprov | pyinfra/nodeprov | nodeprov round trips/host |\n\
             |---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        for scenario in Scenario::ALL {
            for phase in Phase::ALL {
                md.push_str(&self.row(scenario, phase));
            }
        }
        for (cell, why) in &self.failures {
            let (scenario, phase, tool) = cell;
            let first = why[0].lines().next().unwrap_or("");
            writeln!(
                md,
                "\n**FAILED** {} / {} / {} ({} of the runs): {first}",
                scenario.title(),
                phase.label(),
                tool.name(),
                why.len()
            )
            .unwrap();
        }
        for note in &self.notes {
            writeln!(md, "\nNote: {note}").unwrap();
        }
        md
    }

    fn row(&self, scenario: Scenario, phase: Phase) -> String {
        let median = |tool| self.median((scenario, phase, tool));
        let base = median(Tool::Nodeprov);
        let secs =
            Tool::ALL.map(|tool| median(tool).map_or("FAILED".into(), |s| format!("{s:.2}")));
        let ratio = |tool| match (median(tool), base) {
            (Some(other), Some(base)) => format!("{:.1}×", other / base),
            _ => "–".into(),
        };
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            scenario.title(),
            phase.label(),
            secs[0],
            secs[1],
            secs[2],
            ratio(Tool::Ansible),
            ratio(Tool::Pyinfra),
            self.trips_text(scenario, phase)
        )
    }

    /// "3", or "2–3" when hosts or repetitions differed.
    fn trips_text(&self, scenario: Scenario, phase: Phase) -> String {
        let Some(seen) = self.round_trips.get(&(scenario, phase)) else {
            return "–".into();
        };
        match (seen.first(), seen.last()) {
            (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
            (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
            _ => "–".into(),
        }
    }
}
