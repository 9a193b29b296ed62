//! What a no-op check costs the target host: nodeprov's probe against the
//! floor, a hand-written script sent with one `ssh` per host that checks the
//! same state (benches/scenarios/sysctl/floor.sh).
//!
//! `cargo bench --bench probe_cost`; NODEPROV_BENCH_HOSTS (default 10) and
//! NODEPROV_BENCH_REPS (default 5) size it. Needs root, like the SSH tests.
//! For each host it counts the processes the run started inside the host's
//! PID namespace and the CPU time they used (see probe_cost/meter.rs), and
//! prints a markdown table of medians per host, also written to
//! benches/PROBE_COST.md.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "probe_cost/meter.rs"]
mod meter;

use std::path::Path;
use std::process::{Command, Stdio};

use meter::{Cost, Meter};
use support::sshd::SshFleet;

/// Clear of the test suite's 127.0.1.1 upwards and of `compare`'s fleet.
const FIRST_ADDRESS: u8 = 201;
const PLAYBOOK: &str = include_str!("scenarios/sysctl/nodeprov.yml");
const FLOOR: &str = include_str!("scenarios/sysctl/floor.sh");
const RESULTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/PROBE_COST.md");

fn main() {
    let hosts = env_number("NODEPROV_BENCH_HOSTS", 10);
    let reps = env_number("NODEPROV_BENCH_REPS", 5);
    let count = u8::try_from(hosts)
        .ok()
        .filter(|c| u16::from(FIRST_ADDRESS) + u16::from(*c) <= 255)
        .unwrap_or_else(|| panic!("at most {} hosts", 255 - FIRST_ADDRESS));
    let fleet = SshFleet::start_at(FIRST_ADDRESS, count);
    let dir = tempfile::tempdir().expect("control dir");
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("known_hosts"), fleet.known_hosts()).unwrap();
    std::fs::write(path("inventory.ini"), fleet.inventory("root", "")).unwrap();
    std::fs::write(path("p.yml"), PLAYBOOK).unwrap();
    let nodeprov = |mode: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nodeprov"));
        cmd.arg(mode)
            .arg(path("p.yml"))
            .arg("-i")
            .arg(path("inventory.ini"))
            .arg("--known-hosts")
            .arg(path("known_hosts"))
            .args(["-f", &hosts.to_string(), "--format", "json"])
            .stdout(Stdio::null());
        cmd
    };
    let applied = nodeprov("apply").status().unwrap();
    assert!(applied.success(), "the first apply failed");
    let meters: Vec<Meter> = fleet.hosts.iter().map(Meter::new).collect();
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for rep in 1..=reps {
        eprintln!("rep {rep}/{reps}");
        ours.extend(measure(&meters, || {
            let code = nodeprov("check").status().unwrap().code();
            assert_eq!(code, Some(0), "the no-op check found drift or failed");
        }));
        floor.extend(measure(&meters, || floor_run(&fleet, dir.path())));
    }
    let (ours, floor) = (Cost::median(&ours), Cost::median(&floor));
    let md = table(hosts, reps, &ours, &floor);
    println!("{md}");
    std::fs::write(RESULTS, md).expect("write benches/PROBE_COST.md");
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |t| {
        t.parse()
            .unwrap_or_else(|_| panic!("{name}={t} is not a number"))
    })
}

/// Each host's cost of one `run` over all of them.
fn measure(meters: &[Meter], run: impl FnOnce()) -> Vec<Cost> {
    let before: Vec<_> = meters.iter().map(Meter::read).collect();
    run();
    meters
        .iter()
        .zip(before)
        .map(|(m, b)| m.read().since(&b))
        .collect()
}

/// One `ssh host sh -s < floor.sh` per host, all at once, as a shell script
/// would with `&` and `wait`.
fn floor_run(fleet: &SshFleet, dir: &Path) {
    let children: Vec<_> = fleet
        .hosts
        .iter()
        .map(|h| {
            let mut child = Command::new("ssh")
                .args(["-F", "/dev/null", "-o", "BatchMode=yes", "-o"])
                .arg(format!(
                    "UserKnownHostsFile={}",
                    dir.join("known_hosts").display()
                ))
                .arg("-i")
                .arg(h.key_path())
                .arg(format!("root@{}", h.ip()))
                .args(["sh", "-s"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn ssh");
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), FLOOR.as_bytes()).unwrap();
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "floor: {out:?}"
        );
    }
}

fn table(hosts: usize, reps: usize, ours: &Cost, floor: &Cost) -> String {
    let row = |name: &str, c: &Cost| {
        format!(
            "| {name} | {} | {:.3} | {:.2}× |\n",
            c.processes,
            c.cpu_s,
            c.cpu_s / floor.cpu_s.max(f64::EPSILON)
        )
    };
    format!(
        "# Target cost of a no-op check\n\n`cargo bench --bench probe_cost`; \
         see benches/README.md for how it is measured.\n\n\
         No-op check of the sysctl scenario, target cost per host \
         (median of {hosts} hosts × {reps} runs):\n\n\
         | run | processes started | CPU s | vs floor |\n|---|---:|---:|---:|\n{}{}",
        row("nodeprov check", ours),
        row("floor: one ssh + sh script", floor)
    )
}
