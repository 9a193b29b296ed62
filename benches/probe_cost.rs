//! What a no-op check costs the target host: nodeprov's probe against the
//! floor, a hand-written script sent with one `ssh` per host that checks the
//! same state (benches/scenarios/sysctl/floor.sh).
//!
//! `cargo bench --bench probe_cost`; NODEPROV_BENCH_HOSTS (default 10) and
//! NODEPROV_BENCH_REPS (default 5) size it. Needs root, like the SSH tests.
//! For each host it counts the processes the run started inside the host's
//! PID namespace and the CPU time they used (see probe_cost/meter.rs), and
//! prints a markdown table of the typical cost per host, also written to
//! benches/PROBE_COST.md. NODEPROV_BENCH_TRACE=1 adds what each process a
//! run started on one host ran (needs strace); NODEPROV_BENCH_BASELINE=path
//! adds a row for another nodeprov binary, such as the build from before a
//! change.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "probe_cost/meter.rs"]
mod meter;
#[path = "probe_cost/trace.rs"]
mod trace;

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
    // Another build of nodeprov, such as the one from before a change, is
    // measured in the same repetitions, so a busy spell hurts both alike.
    let baseline = std::env::var_os("NODEPROV_BENCH_BASELINE").map(std::path::PathBuf::from);
    let fleet = SshFleet::start_at(FIRST_ADDRESS, count);
    let dir = tempfile::tempdir().expect("control dir");
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("known_hosts"), fleet.known_hosts()).unwrap();
    std::fs::write(path("inventory.ini"), fleet.inventory("root", "")).unwrap();
    std::fs::write(path("p.yml"), PLAYBOOK).unwrap();
    let nodeprov_of = |bin: &Path, mode: &str| {
        let mut cmd = Command::new(bin);
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
    let nodeprov = |mode: &str| nodeprov_of(Path::new(env!("CARGO_BIN_EXE_nodeprov")), mode);
    let applied = nodeprov("apply").status().unwrap();
    assert!(applied.success(), "the first apply failed");
    let meters: Vec<Meter> = fleet.hosts.iter().map(Meter::new).collect();
    let check_with = |bin: &Path| {
        let code = nodeprov_of(bin, "check").status().unwrap().code();
        assert_eq!(code, Some(0), "the no-op check found drift or failed");
    };
    let check = || check_with(Path::new(env!("CARGO_BIN_EXE_nodeprov")));
    let check_baseline = || check_with(baseline.as_deref().expect("a baseline"));
    let sharded = || {
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
    };
    let floor = || floor_run(&fleet, dir.path());
    let mut runs: Vec<(String, &dyn Fn())> = vec![
        ("nodeprov check".into(), &check),
        (format!("nodeprov check, {SHARDS} × --shard"), &sharded),
        ("floor: one ssh + sh script".into(), &floor),
    ];
    if baseline.is_some() {
        runs.insert(
            0,
            ("nodeprov check, baseline build".into(), &check_baseline),
        );
    }
    let mut rows: Vec<Row> = runs.iter().map(|(name, _)| Row::new(name)).collect();
    for rep in 1..=reps {
        eprintln!("rep {rep}/{reps}");
        for (row, (_, run)) in rows.iter_mut().zip(&runs) {
            row.measure(&meters, run);
        }
    }
    let mut md = table(hosts, reps, &rows);
    if std::env::var_os("NODEPROV_BENCH_TRACE").is_some() {
        md += &traced(&meters[0], &runs);
    }
    println!("{md}");
    // The record of earlier steps is written by hand, below the measured part.
    let old = std::fs::read_to_string(RESULTS).unwrap_or_default();
    let kept = old.find(STEPS).map_or("", |at| &old[at..]);
    std::fs::write(RESULTS, md + kept).expect("write benches/PROBE_COST.md");
}

/// Where the hand-kept part of benches/PROBE_COST.md begins.
const STEPS: &str = "\n## Steps so far\n";

/// One more run of each kind with strace on the first host: what each
/// process it started there ran.
fn traced(meter: &Meter, runs: &[(String, &dyn Fn())]) -> String {
    let mut md = String::from(
        "\nProcesses one run starts on one host (`NODEPROV_BENCH_TRACE=1`), in order:\n",
    );
    for (name, run) in runs {
        let tracer = meter.trace();
        run();
        let started = tracer.finish();
        md += &format!("\n{name}: {}\n\n", started.len());
        for (n, what) in started.iter().enumerate() {
            md += &format!("{}. `{}`\n", n + 1, what.replace('`', "'"));
        }
    }
    md
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
    fn measure(&mut self, meters: &[Meter], run: &dyn Fn()) {
        let before: Vec<_> = meters.iter().map(Meter::read).collect();
        let controller = children_cpu_s();
        run();
        let controller = children_cpu_s() - controller;
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
    let floor = Cost::typical(&rows[rows.len() - 1].targets);
    let mut md = format!(
        "# Target cost of a no-op check\n\n`cargo bench --bench probe_cost`; \
         see benches/README.md for how it is measured.\n\n\
         No-op check of the sysctl scenario, cost per host over {hosts} hosts × \
         {reps} runs (processes: median; CPU: mean):\n\n\
         | run | target: processes started | target: CPU ms | vs floor | controller: CPU ms |\n\
         |---|---:|---:|---:|---:|\n"
    );
    for row in rows {
        let c = Cost::typical(&row.targets);
        let mut ctl = row.controller_s.clone();
        ctl.sort_by(f64::total_cmp);
        md += &format!(
            "| {} | {} | {:.1} | {:.2}× | {:.1} |\n",
            row.name,
            c.processes,
            1000.0 * c.cpu_s,
            c.cpu_s / floor.cpu_s.max(f64::EPSILON),
            1000.0 * ctl[ctl.len() / 2]
        );
    }
    md
}

/// CPU seconds of this process's waited-for children so far: the controller
/// side of a run (nodeprov, or the floor's `ssh` clients).
fn children_cpu_s() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
