//! nodeprov against ansible-core and pyinfra on the same SSH hosts.
//!
//! Starts a fleet of namespaced OpenSSH hosts (tests/support/sshd.rs), then for
//! each scenario and tool: resets the hosts from outside, times a first apply,
//! a no-op re-run and a check-mode run, and after each verifies from outside
//! that every host holds the desired state. A run that exits non-zero or
//! leaves a host unconverged is reported as failed, never timed.
//!
//! `cargo bench --bench compare`; NODEPROV_BENCH_HOSTS (default 10) and
//! NODEPROV_BENCH_REPS (default 3) size it. Needs root, like the SSH tests.
//! Prints a markdown table and writes it to benches/RESULTS.md.

#[path = "../tests/support/mod.rs"]
mod support;

// Beside compare.rs, cargo would take each module file for a bench target of
// its own, so they live in benches/compare/.
#[path = "compare/control.rs"]
mod control;
#[path = "compare/report.rs"]
mod report;
#[path = "compare/scenario.rs"]
mod scenario;
#[path = "compare/tools.rs"]
mod tools;
#[path = "compare/venv.rs"]
mod venv;

use std::process::Command;

use control::Control;
use report::Samples;
use scenario::Scenario;
use support::sshd::SshFleet;
use tools::{Outcome, Phase, Tool};
use venv::Venv;

/// The test suite's fleets take 127.0.1.1 upwards on the shared loopback;
/// starting well above keeps a benchmark clear of a test run beside it.
const FIRST_ADDRESS: u8 = 101;

const RESULTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/RESULTS.md");

fn main() {
    let hosts = env_number("NODEPROV_BENCH_HOSTS", 10);
    let reps = env_number("NODEPROV_BENCH_REPS", 3);
    let venv = Venv::prepare();
    let posix = venv.ansible_posix();
    let load_before = load_average();
    let fleet = start_fleet(hosts);
    let control = Control::new(&fleet, venv, posix);
    let mut samples = Samples::default();
    for rep in 1..=reps {
        for scenario in Scenario::ALL {
            for tool in Tool::ALL {
                eprintln!("rep {rep}/{reps}: {} with {}", scenario.name(), tool.name());
                cycle(&fleet, &control, scenario, tool, &mut samples);
            }
        }
    }
    let facts = machine_facts(&control, hosts, reps, &load_before);
    let md = format!("{}\n{}", facts, samples.markdown());
    println!("{md}");
    std::fs::write(RESULTS, md).expect("write benches/RESULTS.md");
}

fn env_number(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text} is not a number")),
        Err(_) => default,
    }
}

fn start_fleet(count: usize) -> SshFleet {
    let count = u8::try_from(count)
        .ok()
        .filter(|c| u16::from(FIRST_ADDRESS) + u16::from(*c) <= 255)
        .unwrap_or_else(|| panic!("at most {} hosts", 255 - FIRST_ADDRESS));
    eprintln!("starting {count} SSH hosts");
    SshFleet::start_at(FIRST_ADDRESS, count)
}

/// One repetition of the three phases for one tool, from the initial state.
/// After a failed phase the later ones are failed too: they would run on
/// hosts in an unknown state.
fn cycle(
    fleet: &SshFleet,
    control: &Control,
    scenario: Scenario,
    tool: Tool,
    samples: &mut Samples,
) {
    for host in &fleet.hosts {
        scenario.reset(host);
    }
    let mut failed = None;
    for phase in Phase::ALL {
        let cell = (scenario, phase, tool);
        if let Some(earlier) = failed {
            samples.fail(cell, format!("not run: {earlier} failed"));
            continue;
        }
        match attempt(fleet, control, cell) {
            Ok(outcome) => record(samples, cell, &outcome),
            Err(why) => {
                eprintln!("  {}: FAILED: {why}", phase.label());
                samples.fail(cell, why);
                failed = Some(phase.label());
            }
        }
    }
}

/// Runs the phase, then insists every host holds the desired state: a check
/// run must not have undone anything either.
fn attempt(
    fleet: &SshFleet,
    control: &Control,
    (scenario, phase, tool): (Scenario, Phase, Tool),
) -> Result<Outcome, String> {
    let outcome = tool.run(control, scenario, phase)?;
    for host in &fleet.hosts {
        scenario
            .verify(host)
            .map_err(|e| format!("not converged: {e}"))?;
    }
    Ok(outcome)
}

fn record(samples: &mut Samples, cell: (Scenario, Phase, Tool), outcome: &Outcome) {
    let (scenario, phase, tool) = cell;
    eprintln!("  {}: {:.2}s", phase.label(), outcome.secs);
    samples.time(cell, outcome.secs);
    samples.round_trips(scenario, phase, &outcome.round_trips);
    let changed = outcome.changed.unwrap_or(0);
    if phase != Phase::Apply && changed > 0 {
        samples.note(format!(
            "{} reported {changed} change(s) in the {} of {} on converged hosts.",
            tool.name(),
            phase.label(),
            scenario.title()
        ));
    }
}

fn machine_facts(control: &Control, hosts: usize, reps: usize, load_before: &str) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let versions: Vec<String> = Tool::ALL.iter().map(|t| t.version(control)).collect();
    let sysctl_flavour = if control.posix {
        "`ansible.posix.sysctl` (collection from Galaxy)"
    } else {
        "`ansible.builtin.copy` of the drop-in + guarded `ansible.builtin.shell` `sysctl -w` \
         per key (Galaxy was unreachable, so no `ansible.posix`)"
    };
    format!(
        "# nodeprov vs ansible-core vs pyinfra\n\n\
         Measured by `cargo bench --bench compare` (see benches/README.md).\n\n\
         - date: {}\n\
         - machine: {cores} cores ({}), load average {load_before} before, {} after; \
         shared with other jobs, so numbers are noisy: medians of {reps} runs\n\
         - hosts: {hosts} namespaced OpenSSH servers on this machine's loopback\n\
         - nodeprov: {}; ansible-core: {}; pyinfra: {}; controller Python: {}; {}\n\
         - Ansible's sysctl scenario uses {sysctl_flavour}\n\
         - ratios: the other tool's median over nodeprov's; above 1× means nodeprov is faster\n\
         - nodeprov round trips/host: from its JSON report; an apply that changes something \
         is probe + apply script + verify probe, a no-op or check run the probe alone\n",
        first_line(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"])),
        cpu_model(),
        load_average(),
        versions[0],
        versions[1],
        versions[2],
        first_line(Command::new(control.venv.bin("python")).arg("--version")),
        first_line(Command::new("ssh").arg("-V")),
    )
}

/// The first line a command printed, on stdout or (as `ssh -V`) stderr.
fn first_line(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    let text = [out.stdout, out.stderr].concat();
    let text = String::from_utf8_lossy(&text);
    text.lines().next().unwrap_or("?").trim().to_string()
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info.lines().find_map(|l| l.strip_prefix("model name"));
    let model = model.and_then(|m| m.split_once(':')).map(|(_, m)| m.trim());
    model.unwrap_or("unknown CPU").to_string()
}

/// The 1-minute load average, to show how busy the shared machine was.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().unwrap_or("?").to_string()
}
