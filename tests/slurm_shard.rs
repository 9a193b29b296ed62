//! The sharded run as GPU fleets run it: a real single-node Slurm (munged,
//! slurmctld, slurmd from Debian's packages) runs `deploy/slurm/submit.sh`,
//! a 4-task array of `nodeprov check --shard` against SSH test hosts and the
//! dependent merge job. Its fleet report must equal one controller's run,
//! with the become password read from a file: neither slurmctld's state nor
//! the jobs' environment may hold it. Every file the daemons use (config,
//! state, spool, key, socket, logs) is in a temp dir; the machine's /etc is
//! not read for Slurm or munge.

mod support;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::control::{Control, Run, MARKER_PLAYBOOK};
use support::sshd::{SshFleet, DEPLOY_PASSWORD};
use support::{assert_machine_unchanged, machine_digest};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const SUBMIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/slurm/submit.sh");
const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/report.schema.json");
const START_TIMEOUT: Duration = Duration::from_secs(30);
const JOB_TIMEOUT: Duration = Duration::from_secs(180);

/// munged, slurmctld and slurmd, killed when dropped.
struct Slurm {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

fn hostname() -> String {
    let out = Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl Slurm {
    fn start() -> Slurm {
        for tool in ["munged", "slurmctld", "slurmd", "sbatch"] {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(
                found,
                "{tool} is missing: scripts/test.sh installs slurmctld slurmd slurm-client munge"
            );
        }
        let dir = tempfile::tempdir().expect("slurm dir");
        let mut slurm = Slurm {
            dir,
            daemons: Vec::new(),
        };
        for sub in ["munge", "state", "spool", "log"] {
            std::fs::create_dir(slurm.path(sub)).unwrap();
        }
        let mut random = vec![0u8; 1024];
        std::io::Read::read_exact(
            &mut std::fs::File::open("/dev/urandom").unwrap(),
            &mut random,
        )
        .unwrap();
        let key = slurm.path("munge/munge.key");
        std::fs::write(&key, random).unwrap();
        // munged refuses a key others can read.
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        let d = slurm.dir.path().display().to_string();
        slurm.spawn(Command::new("munged").args([
            "-F",
            "--force",
            &format!("--key-file={d}/munge/munge.key"),
            &format!("--socket={d}/munge/munge.sock"),
            &format!("--pid-file={d}/munge/munged.pid"),
            &format!("--log-file={d}/munge/munged.log"),
            &format!("--seed-file={d}/munge/munged.seed"),
        ]));
        slurm.wait_for(|s| s.path("munge/munge.sock").exists(), "munged socket");
        std::fs::write(slurm.conf(), slurm_conf(&d, &hostname())).unwrap();
        let conf = slurm.conf().display().to_string();
        slurm.spawn(Command::new("slurmctld").args(["-D", "-f", &conf]));
        slurm.spawn(Command::new("slurmd").args(["-D", "-f", &conf]));
        slurm.wait_for(
            |s| {
                let out = s.command("sinfo").args(["-h", "-o", "%t"]).output();
                out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
            },
            "an idle Slurm node",
        );
        slurm
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn conf(&self) -> PathBuf {
        self.path("slurm.conf")
    }

    fn spawn(&mut self, cmd: &mut Command) {
        let log =
            std::fs::File::create(self.path(&format!("log/daemon-{}.out", self.daemons.len())))
                .unwrap();
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start daemon");
        self.daemons.push(child);
    }

    fn wait_for(&self, ready: impl Fn(&Slurm) -> bool, what: &str) {
        let deadline = Instant::now() + START_TIMEOUT;
        while !ready(self) {
            assert!(Instant::now() < deadline, "no {what}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A Slurm client command talking to this cluster only.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.conf()).stdin(Stdio::null());
        cmd
    }

    /// `JobState` and `ExitCode` of a job, or `None` while it is not done.
    fn finished(&self, job: &str) -> Option<(String, String)> {
        let out = self
            .command("scontrol")
            .args(["show", "job", "-o", job])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .unwrap_or_default()
                .to_string()
        };
        let state = field("JobState");
        let done =
            !["PENDING", "RUNNING", "CONFIGURING", "COMPLETING", ""].contains(&state.as_str());
        done.then(|| (state, field("ExitCode")))
    }

    fn logs(&self) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.path("log")).unwrap().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            all += &format!("== {}\n", entry.path().display());
            all.extend(tail.into_iter().rev().map(|l| format!("{l}\n")));
        }
        all
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // slurmd and slurmctld first: they hold munge credentials.
        for child in self.daemons.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn slurm_conf(d: &str, host: &str) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!(
        "ClusterName=nodeprov-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.sock
SlurmctldPort={}
SlurmdPort={}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
",
        free_port(),
        free_port()
    )
}

/// The report without what differs between any two runs: timings and
/// timestamps. Hosts sorted by play and name, the merged report's order.
fn comparable(doc: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| !["duration_ms", "observed_at"].contains(&k.as_str()));
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut doc = doc.clone();
    strip(&mut doc);
    doc["hosts"]
        .as_array_mut()
        .unwrap()
        .sort_by_key(|h| (h["play"].to_string(), h["host"].to_string()));
    doc
}

fn wait_job(slurm: &Slurm, job: &str) -> (String, String) {
    let deadline = Instant::now() + JOB_TIMEOUT;
    loop {
        if let Some(done) = slurm.finished(job) {
            return done;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} did not end:\n{}",
            slurm.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every file named `name` under `dir`, at any depth.
fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_named(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

/// In the submitting environment only: no job may see it.
const SUBMITTER_ONLY: &str = "SUBMITTER_ONLY=kept-on-the-login-node";

/// A job's environment as `text` shows it holds the password file's path,
/// and neither the password nor anything the submitter did not pass on.
/// Failures name what was found, not the environment, which a log keeps.
fn assert_no_secret(what: &str, text: &str, password_file: &str) {
    assert!(
        text.contains(&format!("NODEPROV_BECOME_PASSWORD_FILE={password_file}")),
        "{what} lacks NODEPROV_BECOME_PASSWORD_FILE={password_file}"
    );
    for secret in [DEPLOY_PASSWORD, "NODEPROV_BECOME_PASSWORD=", SUBMITTER_ONLY] {
        assert!(!text.contains(secret), "{what} holds {secret}");
    }
}

#[test]
fn a_slurm_array_of_four_shards_merges_into_the_single_controller_report() {
    let before = machine_digest();
    let fleet = SshFleet::start(6);
    // Two hosts already compliant, four drifting: shards differ in exit code.
    for h in [&fleet.hosts[1], &fleet.hosts[4]] {
        std::fs::write(
            h.host.path("/etc/nodeprov-marker"),
            format!("{}\n", h.name()),
        )
        .unwrap();
    }
    let control = Control::new(&fleet);
    // deploy's sudo asks for its password: a run without it fails every host.
    let inventory = control.write("inventory.ini", &fleet.inventory("deploy", ""));
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);

    let single = Run::json({
        let mut cmd = control.nodeprov(&["check", &playbook, "-i", &inventory]);
        cmd.env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD);
        cmd
    });
    assert_eq!(single.code, 2, "{single}");

    let password_file = control.write("become-password", &format!("{DEPLOY_PASSWORD}\n"));
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Runs nodeprov for the jobs after recording the environment they see.
    let job_env = control.path("job-env");
    std::fs::create_dir(&job_env).unwrap();
    let wrapper = control.write(
        "nodeprov-wrapper",
        &format!(
            "#!/bin/sh\n/usr/bin/env >'{}'/\"$SLURM_JOB_ID\"\nexec '{BIN}' \"$@\"\n",
            job_env.display()
        ),
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (name, value) = SUBMITTER_ONLY.split_once('=').unwrap();

    let slurm = Slurm::start();
    let reports = control.path("reports");
    let known_hosts = control.path("known_hosts");
    // Held, so that slurmctld still keeps both jobs' environment in its state.
    let submitted = slurm
        .command(SUBMIT)
        .args(["4", &playbook, &inventory])
        .arg(&reports)
        .arg("--hold")
        .env("NODEPROV", &wrapper)
        .env(
            "NODEPROV_ARGS",
            format!("--known-hosts {}", known_hosts.display()),
        )
        .env("NODEPROV_BECOME_PASSWORD_FILE", &password_file)
        .env(name, value)
        .env("HOME", control.path("home"))
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&submitted.stdout).to_string();
    assert!(
        submitted.status.success(),
        "submit: {ids}{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let (array, merge) = ids.trim().split_once(' ').expect("two job ids");

    let stored = files_named(&slurm.path("state"), "environment");
    assert_eq!(stored.len(), 2, "the array's and the merge's: {stored:?}");
    for file in &stored {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        assert_no_secret(&file.display().to_string(), &text, &password_file);
    }
    for job in [array, merge] {
        let shown = slurm
            .command("scontrol")
            .args(["show", "job", "-dd", job])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.contains("JobState=PENDING"), "{shown}");
        assert!(!shown.contains(DEPLOY_PASSWORD), "{shown}");
    }
    let released = slurm
        .command("scontrol")
        .args(["release", &format!("{array},{merge}")])
        .status()
        .unwrap();
    assert!(released.success());

    let (state, exit) = wait_job(&slurm, merge);
    assert_eq!(
        (state.as_str(), exit.as_str()),
        ("FAILED", "2:0"),
        "{}",
        slurm.logs()
    );
    let seen: Vec<_> = std::fs::read_dir(&job_env).unwrap().flatten().collect();
    assert_eq!(seen.len(), 5, "4 shard tasks and the merge");
    for entry in seen {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        assert_no_secret(
            &format!("job {:?}", entry.file_name()),
            &text,
            &password_file,
        );
    }

    let fleet_doc = read_json(&reports.join("fleet/report.json"));
    assert_valid(&fleet_doc);
    assert_eq!(
        comparable(&fleet_doc),
        comparable(&single.doc),
        "{fleet_doc:#}"
    );
    let sizes: Vec<usize> = (1..=4)
        .map(|i| {
            let shard = read_json(&reports.join(format!("shard-{i}/report.json")));
            assert_eq!(shard["shard"]["index"], i);
            shard["hosts"].as_array().unwrap().len()
        })
        .collect();
    assert_eq!(sizes, [2, 2, 1, 1]);
    for name in ["junit.xml", "report.html"] {
        let merged = std::fs::read_to_string(reports.join("fleet").join(name)).unwrap();
        for h in &fleet.hosts {
            assert!(merged.contains(h.name()), "{name} lacks {}", h.name());
        }
    }
    drop(slurm);
    assert_machine_unchanged(&before);
}

fn assert_valid(doc: &Value) {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

#[test]
fn merge_names_a_shard_that_wrote_no_report() {
    let fleet = SshFleet::start(3);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("marker.yml", MARKER_PLAYBOOK);
    let mut written = Vec::new();
    for i in [1, 3] {
        let dir = control.path(&format!("shard-{i}"));
        let shard = format!("{i}/3");
        let run = Run::of(control.nodeprov(&[
            "check",
            &playbook,
            "-i",
            &inventory,
            "--shard",
            &shard,
            "--report",
            dir.to_str().unwrap(),
        ]));
        assert_eq!(run.code, 2, "{run}");
        assert_valid(&read_json(&dir.join("report.json")));
        written.push(dir.join("report.json").display().to_string());
    }
    let mut args = vec!["report", "merge"];
    args.extend(written.iter().map(String::as_str));
    // Not `control.nodeprov`: merging reaches no host and takes no SSH flags.
    let merged = Run::of({
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        cmd
    });
    assert_eq!(merged.code, 1, "{merged}");
    assert!(
        merged.stderr.contains("missing shard report(s): shard 2/3"),
        "{merged}"
    );
}

#[test]
fn submit_refuses_a_become_password_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let out = Command::new(SUBMIT)
        .args(["4", "marker.yml", "inventory.ini"])
        .arg(&reports)
        .env("NODEPROV_BECOME_PASSWORD", DEPLOY_PASSWORD)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("NODEPROV_BECOME_PASSWORD is not passed to Slurm jobs")
            && stderr.contains("set NODEPROV_BECOME_PASSWORD_FILE"),
        "{stderr}"
    );
    assert!(
        !reports.exists(),
        "refused before anything is made or submitted"
    );
}
