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
    let mut rows = [
        Row::new("nodeprov check"),
        Row::new(&format!("nodeprov check, {SHARDS} × --shard")),
        Row::new("floor: one ssh + sh script"),
    ];
    for rep in 1..=reps {
        eprintln!("rep {rep}/{reps}");
        rows[0].measure(&meters, || {
            let code = nodeprov("check").status().unwrap().code();
            assert_eq!(code, Some(0), "the no-op check found drift or failed");
        });
        rows[1].measure(&meters, || {
            let shards: Vec<_> = (1..=SHARDS)
                .map(|i| {
                    let mut cmd = nodeprov("check");
                    cmd.args(["--shard", &format!("{i}/{SHARDS}")]);
                    cmd.spawn().unwrap()
                })
                .collect();
            for mut shard in shards {
                assert_eq!(
                    shard.wait().unwrap().code(),
                    Some(0),
                    "a shard found drift or failed"
                );
            }
        });
        rows[2].measure(&meters, || floor_run(&fleet, dir.path()));
    }
    let md = table(hosts, reps, &rows);
    println!("{md}");
    std::fs::write(RESULTS, md).expect("write benches/PROBE_COST.md");
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |t| {
        t.parse()
            .unwrap_or_else(|_| panic!("{name}={t} is not a number"))
    })
}

const SHARDS: usize = 4;

/// One way of checking the fleet: each host's cost per run, and the
/// controller's CPU per host per run.
struct Row {
    name: String,
    targets: Vec<Cost>,
    controller_s: Vec<f64>,
}

impl Row {
    fn new(name: &str) -> Row {
        Row {
            name: name.into(),
            targets: Vec::new(),
            controller_s: Vec::new(),
        }
    }

    /// One `run` over all hosts.
    fn measure(&mut self, meters: &[Meter], run: impl FnOnce()) {
        let before: Vec<_> = meters.iter().map(Meter::read).collect();
        let controller = meter::children_cpu_s();
        run();
        let controller = meter::children_cpu_s() - controller;
        self.controller_s.push(controller / meters.len() as f64);
        self.targets
            .extend(meters.iter().zip(before).map(|(m, b)| m.read().since(&b)));
    }
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

fn table(hosts: usize, reps: usize, rows: &[Row]) -> String {
    let floor = Cost::median(&rows[rows.len() - 1].targets);
    let mut md = format!(
        "# Target cost of a no-op check\n\n`cargo bench --bench probe_cost`; \
         see benches/README.md for how it is measured.\n\n\
         No-op check of the sysctl scenario, cost per host \
         (medians of {hosts} hosts × {reps} runs):\n\n\
         | run | target: processes started | target: CPU s | vs floor | controller: CPU ms |\n\
         |---|---:|---:|---:|---:|\n"
    );
    for row in rows {
        let c = Cost::median(&row.targets);
        let mut ctl = row.controller_s.clone();
        ctl.sort_by(f64::total_cmp);
        md += &format!(
            "| {} | {} | {:.3} | {:.2}× | {:.1} |\n",
            row.name,
            c.processes,
            c.cpu_s,
            c.cpu_s / floor.cpu_s.max(f64::EPSILON),
            1000.0 * ctl[ctl.len() / 2]
        );
    }
    md
}
