//! Collected samples and the markdown they become.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::scenario::Scenario;
use crate::tools::{Phase, Tool};

/// Fleet size, scenario, phase, tool.
pub type Cell = (usize, Scenario, Phase, Tool);

/// What one successful run cost.
#[derive(Clone, Copy)]
pub struct Sample {
    pub secs: f64,
    /// Per host: CPU seconds and processes on the targets, CPU seconds of
    /// the controller.
    pub target_cpu_s: f64,
    pub target_processes: f64,
    pub controller_cpu_s: f64,
    /// KiB, the largest single controller process.
    pub peak_rss_kib: f64,
}

#[derive(Default)]
pub struct Samples {
    runs: BTreeMap<Cell, Vec<Sample>>,
    /// Why a cell's runs failed; one failure makes the whole cell failed.
    failures: BTreeMap<Cell, Vec<String>>,
    round_trips: BTreeMap<(usize, Scenario, Phase), BTreeSet<u64>>,
    /// Runs that changed something where nothing should change.
    notes: Vec<String>,
}

impl Samples {
    pub fn add(&mut self, cell: Cell, sample: Sample) {
        self.runs.entry(cell).or_default().push(sample);
    }

    pub fn fail(&mut self, cell: Cell, why: String) {
        self.failures.entry(cell).or_default().push(why);
    }

    pub fn round_trips(&mut self, cell: Cell, trips: &[u64]) {
        let (hosts, scenario, phase, _) = cell;
        let seen = self
            .round_trips
            .entry((hosts, scenario, phase))
            .or_default();
        seen.extend(trips);
    }

    pub fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// Each field's own median, or None when the cell failed or never ran.
    fn median(&self, cell: Cell) -> Option<Sample> {
        if self.failures.contains_key(&cell) {
            return None;
        }
        let runs = self.runs.get(&cell)?;
        let m = |field: fn(&Sample) -> f64| median(runs.iter().map(field).collect());
        Some(Sample {
            secs: m(|s| s.secs),
            target_cpu_s: m(|s| s.target_cpu_s),
            target_processes: m(|s| s.target_processes),
            controller_cpu_s: m(|s| s.controller_cpu_s),
            peak_rss_kib: m(|s| s.peak_rss_kib),
        })
    }

    /// Per fleet size the time table and the cost table, then the per-host
    /// cost curve over the sizes, failures and notes.
    pub fn markdown(&self, sizes: &[usize]) -> String {
        let mut md = String::new();
        for &hosts in sizes {
            writeln!(md, "## {hosts} hosts\n").unwrap();
            md += &self.time_table(hosts);
            md += "\n";
            md += &self.cost_table(hosts);
            md += "\n";
        }
        if sizes.len() > 1 {
            md += &self.curve(sizes);
        }
        for (cell, why) in &self.failures {
            let (hosts, scenario, phase, tool) = cell;
            let first = why[0].lines().next().unwrap_or("");
            writeln!(
                md,
                "\n**FAILED** {hosts} hosts / {} / {} / {} ({} of the runs): {first}",
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

    fn time_table(&self, hosts: usize) -> String {
        let mut md = String::from(
            "| scenario | phase | nodeprov s | nodeprov 4×shard s | ansible-core s | pyinfra s | ansible/nodeprov | pyinfra/nodeprov | nodeprov round trips/host |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for scenario in Scenario::ALL {
            for phase in Phase::ALL {
                let median = |tool| self.median((hosts, scenario, phase, tool)).map(|s| s.secs);
                let base = median(Tool::Nodeprov);
                let secs = Tool::ALL.map(|tool| match median(tool) {
                    Some(s) => format!("{s:.2}"),
                    None => self.missing((hosts, scenario, phase, tool)),
                });
                let ratio = |tool| match (median(tool), base) {
                    (Some(other), Some(base)) => format!("{:.1}×", other / base),
                    _ => "–".into(),
                };
                writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    scenario.title(),
                    phase.label(),
                    secs[0],
                    secs[1],
                    secs[2],
                    secs[3],
                    ratio(Tool::Ansible),
                    ratio(Tool::Pyinfra),
                    self.trips_text(hosts, scenario, phase)
                )
                .unwrap();
            }
        }
        md
    }

    fn cost_table(&self, hosts: usize) -> String {
        let mut md = String::from(
            "| scenario | phase | tool | target CPU ms/host | target processes/host | controller CPU ms/host | controller peak RSS MiB |\n\
             |---|---|---|---:|---:|---:|---:|\n",
        );
        for scenario in Scenario::ALL {
            for phase in Phase::ALL {
                for tool in Tool::ALL {
                    let Some(s) = self.median((hosts, scenario, phase, tool)) else {
                        continue;
                    };
                    writeln!(
                        md,
                        "| {} | {} | {} | {:.1} | {:.0} | {:.1} | {:.0} |",
                        scenario.title(),
                        phase.label(),
                        tool.name(),
                        1000.0 * s.target_cpu_s,
                        s.target_processes,
                        1000.0 * s.controller_cpu_s,
                        s.peak_rss_kib / 1024.0
                    )
                    .unwrap();
                }
            }
        }
        md
    }

    /// How each tool's cost per host moves with the fleet size.
    fn curve(&self, sizes: &[usize]) -> String {
        let mut md = String::from(
            "## Per-host cost by fleet size\n\n\
             Each cell: wall s of the whole run · target CPU ms per host · \
             controller CPU ms per host (medians).\n\n| scenario | phase | tool |",
        );
        for hosts in sizes {
            write!(md, " {hosts} hosts |").unwrap();
        }
        md += "\n|---|---|---|";
        md += &"---:|".repeat(sizes.len());
        md += "\n";
        for scenario in Scenario::ALL {
            for phase in Phase::ALL {
                for tool in Tool::ALL {
                    write!(
                        md,
                        "| {} | {} | {} |",
                        scenario.title(),
                        phase.label(),
                        tool.name()
                    )
                    .unwrap();
                    for &hosts in sizes {
                        let cell = (hosts, scenario, phase, tool);
                        let text = match self.median(cell) {
                            Some(s) => format!(
                                "{:.2} · {:.1} · {:.1}",
                                s.secs,
                                1000.0 * s.target_cpu_s,
                                1000.0 * s.controller_cpu_s
                            ),
                            None => self.missing(cell),
                        };
                        write!(md, " {text} |").unwrap();
                    }
                    md += "\n";
                }
            }
        }
        md
    }

    /// "FAILED", or "not run" for a tool left out at this size.
    fn missing(&self, cell: Cell) -> String {
        match self.failures.contains_key(&cell) {
            true => "FAILED".into(),
            false => "not run".into(),
        }
    }

    /// "3", or "2–3" when hosts or repetitions differed.
    fn trips_text(&self, hosts: usize, scenario: Scenario, phase: Phase) -> String {
        let Some(seen) = self.round_trips.get(&(hosts, scenario, phase)) else {
            return "–".into();
        };
        match (seen.first(), seen.last()) {
            (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
            (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
            _ => "–".into(),
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}
