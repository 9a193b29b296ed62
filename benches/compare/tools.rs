//! How each tool is invoked for a phase, and what is read back from its run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use regex::Regex;
use serde_json::Value;

use crate::control::Control;
use crate::run::run_all;
use crate::scenario::Scenario;

/// How many `nodeprov --shard I/N` processes the sharded run starts at once.
pub const SHARDS: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Tool {
    Nodeprov,
    /// nodeprov as [`SHARDS`] processes, each given its share of the hosts.
    Sharded,
    Ansible,
    Pyinfra,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Phase {
    /// Everything differs from the desired state.
    Apply,
    /// Everything is already as desired.
    Noop,
    /// Dry run on converged hosts.
    Check,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Apply, Phase::Noop, Phase::Check];

    pub fn label(self) -> &'static str {
        match self {
            Phase::Apply => "first apply",
            Phase::Noop => "no-op re-run",
            Phase::Check => "check mode",
        }
    }
}

/// What a successful run told about itself.
pub struct Outcome {
    pub secs: f64,
    /// Changes (or, in check mode, drift) the tool reported, where its output
    /// says so in a form worth parsing.
    pub changed: Option<u64>,
    /// nodeprov's round trips of each host.
    pub round_trips: Vec<u64>,
    /// CPU seconds of the tool's processes and every child they waited for.
    pub controller_cpu_s: f64,
    /// The largest peak resident set of any one of those processes, KiB.
    pub peak_rss_kib: u64,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Nodeprov, Tool::Sharded, Tool::Ansible, Tool::Pyinfra];

    /// The tools NODEPROV_BENCH_TOOLS names (`nodeprov`, `shard`, `ansible`,
    /// `pyinfra`, comma-separated), all of them when it is unset.
    pub fn selected() -> Vec<Tool> {
        let pick = |name: &str| match name {
            "nodeprov" => Some(Tool::Nodeprov),
            "shard" => Some(Tool::Sharded),
            "ansible" => Some(Tool::Ansible),
            "pyinfra" => Some(Tool::Pyinfra),
            _ => None,
        };
        crate::env_list("NODEPROV_BENCH_TOOLS", "a tool", pick).unwrap_or(Tool::ALL.to_vec())
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Nodeprov => "nodeprov",
            Tool::Sharded => "nodeprov 4×shard",
            Tool::Ansible => "ansible-core",
            Tool::Pyinfra => "pyinfra",
        }
    }

    /// Whether the tool works on this many hosts in this benchmark.
    pub fn runs_at(self, hosts: usize, ansible_max: usize) -> bool {
        self != Tool::Ansible || hosts <= ansible_max
    }

    /// Runs the phase and times the whole run, start-up included, as an
    /// operator would wait for it. Err holds the tail of the output of a
    /// process that did not exit 0.
    pub fn run(
        self,
        control: &Control,
        scenario: Scenario,
        phase: Phase,
    ) -> Result<Outcome, String> {
        let measured = run_all(self.commands(control, scenario, phase));
        let mut outcome = Outcome {
            secs: measured.secs,
            changed: None,
            round_trips: Vec::new(),
            controller_cpu_s: measured.cpu_s,
            peak_rss_kib: measured.peak_rss_kib,
        };
        for out in &measured.finished {
            if !out.status.success() {
                let why = match self {
                    Tool::Nodeprov | Tool::Sharded => nodeprov_failures(&out.stdout),
                    Tool::Ansible | Tool::Pyinfra => None,
                };
                let why = why.unwrap_or_else(|| tail(&format!("{}{}", out.stdout, out.stderr)));
                return Err(format!("{}: {why}", out.status));
            }
            let (changed, trips) = match self {
                Tool::Nodeprov | Tool::Sharded => nodeprov_summary(&out.stdout),
                Tool::Ansible => (ansible_changed(&out.stdout), Vec::new()),
                Tool::Pyinfra => (None, Vec::new()),
            };
            outcome.changed = match (outcome.changed, changed) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            outcome.round_trips.extend(trips);
        }
        Ok(outcome)
    }

    fn commands(self, control: &Control, scenario: Scenario, phase: Phase) -> Vec<Command> {
        let command = || {
            let mut cmd = program(control, &self.binary(control));
            match self {
                Tool::Nodeprov | Tool::Sharded => nodeprov_args(&mut cmd, control, phase),
                Tool::Ansible => ansible_args(&mut cmd, control, phase),
                Tool::Pyinfra => pyinfra_args(&mut cmd, control, phase),
            }
            cmd.arg(control.source(scenario, self));
            cmd
        };
        if self != Tool::Sharded {
            return vec![command()];
        }
        (1..=SHARDS)
            .map(|i| {
                let mut cmd = command();
                cmd.args(["--shard", &format!("{i}/{SHARDS}")]);
                cmd
            })
            .collect()
    }

    fn binary(self, control: &Control) -> PathBuf {
        match self {
            Tool::Nodeprov | Tool::Sharded => nodeprov_binary(),
            Tool::Ansible => control.venv.bin("ansible-playbook"),
            Tool::Pyinfra => control.venv.bin("pyinfra"),
        }
    }

    /// Whether the tool runs from the Python venv.
    pub fn is_python(self) -> bool {
        matches!(self, Tool::Ansible | Tool::Pyinfra)
    }

    /// The first line of `--version`; "not installed" for a Python tool
    /// when none of them was selected, so no venv was made.
    pub fn version(self, control: &Control) -> String {
        let mut cmd = program(control, &self.binary(control));
        cmd.arg("--version");
        let Ok(out) = cmd.output() else {
            return "not installed".into();
        };
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines().next().unwrap_or("?").trim().to_string()
    }
}

/// NODEPROV_BENCH_BIN, to time another build of nodeprov (the static
/// release binary, dist/nodeprov) on the same fleet; else the one cargo
/// built for the bench.
fn nodeprov_binary() -> PathBuf {
    std::env::var_os("NODEPROV_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_nodeprov")),
        PathBuf::from,
    )
}

fn nodeprov_args(cmd: &mut Command, control: &Control, phase: Phase) {
    cmd.arg(if phase == Phase::Check {
        "check"
    } else {
        "apply"
    })
    .arg("-i")
    .arg(control.path("inventory.ini"))
    .arg("--known-hosts")
    .arg(control.path("known_hosts"))
    .args(["-f", &control.forks.to_string(), "--format", "json"]);
}

fn ansible_args(cmd: &mut Command, control: &Control, phase: Phase) {
    cmd.arg("-i").arg(control.path("inventory.ini"));
    if phase == Phase::Check {
        cmd.arg("--check");
    }
    cmd.env("ANSIBLE_CONFIG", control.path("ansible.cfg"))
        .env("ANSIBLE_HOST_KEY_CHECKING", "True")
        .env("ANSIBLE_COLLECTIONS_PATH", control.venv.collections())
        .env("ANSIBLE_SSH_CONTROL_PATH_DIR", fresh_dir(control));
}

/// A control-socket dir no earlier run used: ControlPersist would otherwise
/// hand Ansible the previous run's open connections, and every tool is
/// measured starting cold.
fn fresh_dir(control: &Control) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = control.path(&format!("cp-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir(&dir).expect("create control path dir");
    dir
}

fn pyinfra_args(cmd: &mut Command, control: &Control, phase: Phase) {
    cmd.args(["--parallel", &control.forks.to_string()])
        .arg(if phase == Phase::Check { "--dry" } else { "-y" })
        .arg(control.path("inventory.py"));
}

/// Every tool starts from the same bare environment: the venv first on
/// PATH, HOME in the control dir (no ~/.ssh/config, agent or user settings)
/// and a UTF-8 locale, which ansible-core insists on.
fn program(control: &Control, path: &Path) -> Command {
    let inherited = std::env::var("PATH").unwrap_or_default();
    let venv_bin = control.venv.bin("");
    let mut cmd = Command::new(path);
    cmd.env_clear()
        .env("PATH", format!("{}:{inherited}", venv_bin.display()))
        .env("HOME", control.path("home"))
        .env("USER", "root")
        .env("LC_ALL", "C.UTF-8")
        .current_dir(control.dir())
        .stdin(Stdio::null());
    cmd
}

/// Sum of changed (and drift) over hosts, and each host's round trips.
fn nodeprov_summary(stdout: &str) -> (Option<u64>, Vec<u64>) {
    let doc: Value = serde_json::from_str(stdout).unwrap_or(Value::Null);
    let hosts = doc["hosts"].as_array().cloned().unwrap_or_default();
    let count = |h: &Value, field: &str| h["recap"][field].as_u64().unwrap_or(0);
    let changed = hosts
        .iter()
        .map(|h| count(h, "changed") + count(h, "drift"))
        .sum();
    let trips = hosts
        .iter()
        .filter_map(|h| h["round_trips"].as_u64())
        .collect();
    (Some(changed), trips)
}

/// What each host that failed or was unreachable said, from nodeprov's
/// report: the last lines of a long report only show closing brackets.
fn nodeprov_failures(stdout: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(stdout).ok()?;
    let hosts = doc["hosts"].as_array()?;
    let said: Vec<String> = hosts
        .iter()
        .filter_map(|h| {
            let why = h["unreachable"].as_str().map(str::to_string).or_else(|| {
                let tasks = h["tasks"].as_array()?;
                let failed = tasks.iter().find(|t| t["status"] == "failed")?;
                Some(format!("{}: {}", failed["task"], failed["message"]))
            })?;
            Some(format!("{}: {why}", h["host"].as_str().unwrap_or("?")))
        })
        .collect();
    let shown = said.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
    Some(format!("{} of {} hosts: {shown}", said.len(), hosts.len()))
}

/// Sum of `changed=N` over the PLAY RECAP lines.
fn ansible_changed(stdout: &str) -> Option<u64> {
    let re = Regex::new(r"\bchanged=(\d+)").expect("regex");
    let counts: Vec<u64> = re
        .captures_iter(stdout)
        .map(|c| c[1].parse().expect("digits"))
        .collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
