//! nodeprov against ansible-core and pyinfra on the same SSH hosts.
//!
//! Starts a fleet of namespaced OpenSSH hosts (tests/support/sshd.rs), then for
//! each scenario and tool: resets the hosts from outside, times a first apply,
//! a no-op re-run and a check-mode run, and after each verifies from outside
//! that every host holds the desired state. A run that exits non-zero or
//! leaves a host unconverged is reported as failed, never timed.
//!
//! `cargo bench --bench compare`. NODEPROV_BENCH_SIZES (fleet sizes, e.g.
//! `10,50,200`; default NODEPROV_BENCH_HOSTS, else 10) and
//! NODEPROV_BENCH_REPS (default 3) size it; ansible-core only runs on
//! fleets of up to NODEPROV_BENCH_ANSIBLE_MAX hosts (default 50). Needs root,
//! like the SSH tests. Besides wall time it reads each run's cost on the
//! targets (probe_cost/meter.rs) and on the controller (wait4), prints
//! markdown tables and writes them to benches/RESULTS.md (or to
//! NODEPROV_BENCH_RESULTS, for a trial run).

#[path = "../tests/support/mod.rs"]
mod support;

// Beside compare.rs, cargo would take each module file for a bench target of
// its own, so they live in benches/compare/.
#[path = "compare/control.rs"]
mod control;
#[path = "probe_cost/meter.rs"]
mod meter;
#[path = "compare/report.rs"]
mod report;
#[path = "compare/run.rs"]
mod run;
#[path = "compare/scenario.rs"]
mod scenario;
#[path = "compare/tools.rs"]
mod tools;
#[path = "compare/venv.rs"]
mod venv;

use std::net::Ipv4Addr;
use std::process::Command;

use control::Control;
use meter::Meter;
use report::{Cell, Sample, Samples};
use scenario::Scenario;
use support::sshd::{SshFleet, SshHost};
use tools::{Outcome, Phase, Tool};
use venv::Venv;

/// The test suite's fleets take 127.0.1.1 upwards on the shared loopback
/// and probe_cost 127.0.1.201 upwards; the first 100 hosts take
/// 127.0.1.101–200, clear of both, the rest 127.0.2.1 upwards.
const FIRST_RANGE: (u8, u8) = (101, 200);
const SECOND_RANGE: (u8, u8) = (1, 254);

/// Hosts set up at the same time, on a machine of few cores.
const STARTING_AT_ONCE: usize = 20;

const RESULTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/RESULTS.md");

fn main() {
    let sizes = sizes();
    let reps = env_number("NODEPROV_BENCH_REPS", 3);
    let ansible_max = env_number("NODEPROV_BENCH_ANSIBLE_MAX", 50);
    run::adopt_orphans();
    let python = Tool::selected().iter().any(|t| t.is_python())
        || Scenario::selected().iter().any(|s| s.needs_ansible_core());
    let venv = Venv::prepare(python);
    let posix = python && venv.ansible_posix();
    let load_before = load_average();
    let fleet = start_fleet(*sizes.iter().max().expect("a fleet size"));
    let meters: Vec<Meter> = fleet.hosts.iter().map(Meter::new).collect();
    let mut samples = Samples::default();
    let mut control = None;
    for &size in &sizes {
        let hosts = &fleet.hosts[..size];
        let ctl = Control::new(hosts, venv.clone(), posix);
        let tools: Vec<Tool> = Tool::selected()
            .into_iter()
            .filter(|t| t.runs_at(size, ansible_max))
            .collect();
        for rep in 1..=reps {
            for scenario in Scenario::selected() {
                for &tool in tools
                    .iter()
                    .filter(|t| scenario.source(**t, posix).is_some())
                {
                    eprintln!(
                        "{size} hosts, rep {rep}/{reps}: {} with {}",
                        scenario.name(),
                        tool.name()
                    );
                    let fleet = (hosts, &meters[..size]);
                    cycle(fleet, &ctl, (size, scenario, tool), &mut samples);
                }
            }
        }
        control = Some(ctl);
    }
    let control = control.expect("a fleet size");
    let facts = machine_facts(&control, &sizes, reps, ansible_max, &load_before);
    let md = format!("{}\n{}", facts, samples.markdown(&sizes));
    println!("{md}");
    // A trial run can write elsewhere and leave the recorded results alone.
    let out = std::env::var("NODEPROV_BENCH_RESULTS").unwrap_or(RESULTS.into());
    std::fs::write(&out, md).unwrap_or_else(|e| panic!("write {out}: {e}"));
}

/// NODEPROV_BENCH_SIZES as a list, else NODEPROV_BENCH_HOSTS alone.
fn sizes() -> Vec<usize> {
    let size = |n: &str| n.parse().ok().filter(|&n: &usize| n > 0);
    env_list("NODEPROV_BENCH_SIZES", "a size", size)
        .unwrap_or_else(|| vec![env_number("NODEPROV_BENCH_HOSTS", 10)])
}

/// The comma-separated list in `name`, each entry read by `pick`; None when
/// unset. An entry `pick` refuses stops the run, naming it as not `what`.
pub fn env_list<T>(name: &str, what: &str, pick: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let list = std::env::var(name).ok()?;
    let read = |entry: &str| {
        pick(entry.trim()).unwrap_or_else(|| panic!("{name}={list}: {entry:?} is not {what}"))
    };
    Some(list.split(',').map(read).collect())
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
    let range = |(c, (lo, hi)): (u8, (u8, u8))| (lo..=hi).map(move |n| Ipv4Addr::new(127, 0, c, n));
    let ips: Vec<Ipv4Addr> = [(1, FIRST_RANGE), (2, SECOND_RANGE)]
        .into_iter()
        .flat_map(range)
        .take(count)
        .collect();
    assert_eq!(ips.len(), count, "at most {} hosts", ips.len());
    eprintln!("starting {count} SSH hosts");
    SshFleet::start_on(&ips, STARTING_AT_ONCE)
}

/// One repetition of the three phases for one tool, from the initial state.
/// After a failed phase the later ones are failed too: they would run on
/// hosts in an unknown state.
fn cycle(
    fleet: (&[SshHost], &[Meter]),
    control: &Control,
    (size, scenario, tool): (usize, Scenario, Tool),
    samples: &mut Samples,
) {
    for host in fleet.0 {
        scenario.reset(host);
    }
    let mut failed = None;
    for phase in Phase::ALL {
        let cell = (size, scenario, phase, tool);
        if let Some(earlier) = failed {
            samples.fail(cell, format!("not run: {earlier} failed"));
            continue;
        }
        match attempt(fleet, control, cell) {
            Ok((outcome, targets)) => record(samples, cell, &outcome, targets),
            Err(why) => {
                eprintln!("  {}: FAILED: {why}", phase.label());
                samples.fail(cell, why);
                failed = Some(phase.label());
            }
        }
    }
}

/// Runs the phase, then insists every host holds the desired state: a check
/// run must not have undone anything either. Also returns the run's cost on
/// the targets, per host.
fn attempt(
    (hosts, meters): (&[SshHost], &[Meter]),
    control: &Control,
    (_, scenario, phase, tool): Cell,
) -> Result<(Outcome, Vec<meter::Cost>), String> {
    let before: Vec<_> = meters.iter().map(Meter::read).collect();
    let outcome = tool.run(control, scenario, phase)?;
    let costs: Vec<_> = meters
        .iter()
        .zip(&before)
        .map(|(m, b)| m.read().since(b))
        .collect();
    for host in hosts {
        scenario
            .verify(host)
            .map_err(|e| format!("not converged: {e}"))?;
    }
    Ok((outcome, costs))
}

/// Records a run; `targets` is its cost on each host.
fn record(samples: &mut Samples, cell: Cell, outcome: &Outcome, targets: Vec<meter::Cost>) {
    let (hosts, scenario, phase, tool) = cell;
    eprintln!("  {}: {:.2}s", phase.label(), outcome.secs);
    let target = meter::Cost::typical(&targets);
    samples.add(
        cell,
        Sample {
            secs: outcome.secs,
            target_cpu_s: target.cpu_s,
            target_processes: target.processes as f64,
            controller_cpu_s: outcome.controller_cpu_s / hosts as f64,
            peak_rss_kib: outcome.peak_rss_kib as f64,
        },
    );
    if matches!(tool, Tool::Nodeprov | Tool::Sharded) {
        samples.round_trips(cell, &outcome.round_trips);
    }
    let changed = outcome.changed.unwrap_or(0);
    if phase != Phase::Apply && changed > 0 {
        samples.note(format!(
            "{} reported {changed} change(s) in the {} of {} on {hosts} converged hosts.",
            tool.name(),
            phase.label(),
            scenario.title()
        ));
    }
}

fn machine_facts(
    control: &Control,
    sizes: &[usize],
    reps: usize,
    ansible_max: usize,
    load_before: &str,
) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let versions: Vec<String> = [Tool::Nodeprov, Tool::Ansible, Tool::Pyinfra]
        .iter()
        .map(|t| t.version(control))
        .collect();
    let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
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
         - hosts: fleets of {} namespaced OpenSSH servers on this machine's loopback; \
         ansible-core on fleets of up to {ansible_max}\n\
         - nodeprov 4×shard: four `nodeprov --shard I/4` processes at once, each with a quarter of the hosts\n\
         - target CPU and processes: everything the run did on each host, SSH sessions included, \
         read from outside (benches/probe_cost/meter.rs); controller CPU: the tool's processes and \
         their children (wait4), per host; peak RSS: the largest single controller process\n\
         - nodeprov: {}; ansible-core: {}; pyinfra: {}; controller Python: {}; {}\n\
         - Ansible's sysctl scenario uses {sysctl_flavour}\n\
         - ratios: the other tool's median over nodeprov's; above 1× means nodeprov is faster\n\
         - nodeprov round trips/host: from its JSON report; an apply that changes something \
         is probe + apply script + verify probe, a no-op or check run the probe alone\n",
        first_line(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"])).unwrap_or_default(),
        cpu_model(),
        load_average(),
        sizes.join(", "),
        versions[0],
        versions[1],
        versions[2],
        first_line(Command::new(control.venv.bin("python")).arg("--version")).unwrap_or("none".into()),
        first_line(Command::new("ssh").arg("-V")).unwrap_or_default(),
    )
}

/// The first line a command printed, on stdout or (as `ssh -V`) stderr;
/// `None` when it cannot be run.
fn first_line(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    let text = [out.stdout, out.stderr].concat();
    let text = String::from_utf8_lossy(&text);
    Some(text.lines().next().unwrap_or("?").trim().to_string())
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
