//! What a run costs the host in processes, counted from outside (the PIDs
//! its namespace handed out, as `benches/probe_cost/meter.rs` reads them):
//! a fixed GPU-node play (two sysctls persisted in a drop-in, a folder of
//! twenty configuration files) over real SSH, first apply, no-op and
//! check. The counts are the host's own work, so they are the same on
//! every run; the test fails when one grows past what it is today, so a
//! change that starts more processes per host says so here first.

mod support;

// Shared with the bench, which reads the CPU time and the typical cost too.
#[allow(dead_code)]
#[path = "../benches/probe_cost/meter.rs"]
mod meter;

use meter::Meter;
use support::control::{Control, Run};
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

const SYSCTLS: &str = include_str!("../benches/scenarios/sysctl/nodeprov.yml");
const FILES: &str = include_str!("../benches/scenarios/files/nodeprov.yml");

/// Processes each run may start on the host at most: first apply, no-op
/// re-run, check. Lower them when a change makes a run cheaper.
const CEILING: [u64; 3] = [90, 19, 19];

#[test]
fn a_fixed_play_starts_no_more_processes_per_host_than_today() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &support::sshd::inventory(&fleet.hosts, "root", ""),
    );
    let playbook = control.write("gpu-node.yml", &format!("{SYSCTLS}{FILES}"));
    let meter = Meter::new(host);
    let mut counts = Vec::new();
    for verb in ["apply", "apply", "check"] {
        let start = meter.read();
        let run = Run::json(control.nodeprov(&[verb, &playbook, "-i", &inventory]));
        let cost = meter.read().since(&start);
        assert!(run.code == 0, "{verb}: {run}");
        counts.push(cost.processes);
    }
    eprintln!("processes on the host (first apply, no-op, check): {counts:?}");
    let grew = counts.iter().zip(CEILING).any(|(n, most)| *n > most);
    assert!(
        !grew,
        "processes on the host (first apply, no-op, check): {counts:?}, at most {CEILING:?}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}
