//! The operator's side of a nodeprov run against SSH test hosts, and the
//! finished run's report, for the tests that drive the binary over SSH.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use super::sshd::SshFleet;

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// Writes a root-owned file in /etc, which only an escalated (or root) login can.
pub const MARKER_PLAYBOOK: &str = "
- name: marker
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: root-owned marker
      copy: {dest: /etc/nodeprov-marker, content: \"{{ inventory_hostname }}\\n\", mode: \"0644\"}
";

/// The operator's side of a run: a temp dir holding the inventory, the
/// known_hosts file, playbooks and an empty HOME.
pub struct Control {
    pub dir: TempDir,
}

impl Control {
    /// Knows every host of `fleet`.
    pub fn new(fleet: &SshFleet) -> Control {
        let control = Control {
            dir: tempfile::tempdir().expect("control dir"),
        };
        std::fs::create_dir(control.path("home")).unwrap();
        control.write("known_hosts", &fleet.known_hosts());
        control
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `name` (its folders made as needed) with `text`.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// `ansible-playbook <args>` of the newest ansible-core, in this
    /// folder with an empty HOME and no ansible.cfg: its exit status and
    /// its JSON callback's document.
    pub fn ansible_playbook(&self, args: &[&str]) -> (i32, Value) {
        let home = tempfile::tempdir().unwrap();
        let out = self
            .ansible_playbook_command(home.path(), args)
            .output()
            .unwrap();
        Self::ansible_json(&out)
    }

    /// The command [`Control::ansible_playbook`] runs, with `home` as its
    /// HOME and local temp folder, for callers that add to its environment.
    pub fn ansible_playbook_command(&self, home: &std::path::Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(super::newest_ansible_bin().join("ansible-playbook"));
        cmd.args(args)
            .env("HOME", home)
            .env("ANSIBLE_LOCAL_TEMP", home)
            .env("ANSIBLE_STDOUT_CALLBACK", "ansible.posix.json")
            .env("ANSIBLE_SHOW_CUSTOM_STATS", "true")
            .env("ANSIBLE_HOST_KEY_CHECKING", "false")
            .env_remove("ANSIBLE_CONFIG")
            .current_dir(self.path(""))
            .stdin(Stdio::null());
        cmd
    }

    /// A finished ansible-playbook's exit status and JSON callback document.
    pub fn ansible_json(out: &Output) -> (i32, Value) {
        let text = String::from_utf8_lossy(&out.stdout);
        let doc = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "ansible-playbook gave no JSON ({e}): {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), doc)
    }

    /// `nodeprov <args> --known-hosts <temp>` with none of the caller's SSH
    /// or nodeprov settings: no agent, no passwords, HOME in the temp dir.
    pub fn nodeprov(&self, args: &[&str]) -> Command {
        self.nodeprov_at(BIN, args)
    }

    /// The same with another build of nodeprov (a release artefact).
    pub fn nodeprov_at(&self, binary: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary);
        cmd.args(args);
        self.isolate(cmd)
    }

    /// The same, started by a shell that first runs `ulimit` with `limit`
    /// (such as `-n 64` or `-Sn 16`).
    pub fn nodeprov_with_ulimit(&self, limit: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
            .arg(BIN)
            .args(args);
        self.isolate(cmd)
    }

    fn isolate(&self, mut cmd: Command) -> Command {
        cmd.arg("--known-hosts")
            .arg(self.path("known_hosts"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("USER", "root")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        cmd
    }
}

/// One finished nodeprov run.
pub struct Run {
    pub code: i32,
    pub doc: Value,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    pub fn of(mut cmd: Command) -> Run {
        let started = Instant::now();
        let out = cmd.output().expect("spawn nodeprov");
        Run::finished(out, started.elapsed())
    }

    /// The run of a nodeprov process that has ended after `took`.
    pub fn finished(out: Output, took: Duration) -> Run {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let doc = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        Run {
            code: out.status.code().expect("nodeprov killed by a signal"),
            doc,
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            took,
        }
    }

    /// `--format json` run: panics with the output if it is not a report.
    pub fn json(mut cmd: Command) -> Run {
        cmd.args(["--format", "json"]);
        let run = Run::of(cmd);
        assert!(run.doc.is_object(), "no JSON report: {run}");
        run
    }

    pub fn host(&self, name: &str) -> &Value {
        self.hosts()
            .iter()
            .find(|h| h["host"] == name)
            .unwrap_or_else(|| panic!("{name} not in the report: {self}"))
    }

    pub fn hosts(&self) -> &Vec<Value> {
        self.doc["hosts"].as_array().expect("hosts array")
    }

    pub fn unreachable(&self, name: &str) -> String {
        let msg = self.host(name)["unreachable"].as_str();
        msg.unwrap_or_else(|| panic!("{name} should be unreachable: {self}"))
            .to_string()
    }

    /// Names of hosts with a recap field above zero.
    pub fn hosts_with(&self, field: &str) -> Vec<String> {
        self.hosts()
            .iter()
            .filter(|h| h["recap"][field].as_u64() > Some(0))
            .map(|h| h["host"].as_str().unwrap().to_string())
            .collect()
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {} after {:?}\nstdout: {}\nstderr: {}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}
