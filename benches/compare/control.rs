//! The operator's side of the comparison: one temp dir holding what all three
//! tools read (inventories, known_hosts, ansible.cfg, the scenario files) and
//! an empty HOME, so no tool picks up this machine's ~/.ssh or settings.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::scenario::Scenario;
use crate::support::sshd::{self, SshHost};
use crate::tools::Tool;
use crate::venv::Venv;

pub struct Control {
    dir: TempDir,
    pub venv: Venv,
    /// Whether Ansible runs the ansible.posix flavour of the sysctl scenario.
    pub posix: bool,
    pub forks: usize,
}

impl Control {
    /// For a run on `hosts`.
    pub fn new(hosts: &[SshHost], venv: Venv, posix: bool) -> Control {
        let control = Control {
            dir: tempfile::Builder::new()
                .prefix("nodeprov-bench-")
                .tempdir()
                .expect("control dir"),
            venv,
            posix,
            forks: hosts.len(),
        };
        std::fs::create_dir(control.path("home")).expect("create HOME");
        control.write("known_hosts", &sshd::known_hosts(hosts));
        control.write("inventory.ini", &control.ini_inventory(hosts));
        control.write("inventory.py", &control.pyinfra_inventory(hosts));
        control.write("ansible.cfg", &control.ansible_cfg());
        control.write_scenarios();
        control
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The file `tool` runs for `scenario`.
    pub fn source(&self, scenario: Scenario, tool: Tool) -> PathBuf {
        let (name, _) = scenario.source(tool, self.posix).expect("a source");
        self.path(scenario.name()).join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
    }

    fn write_scenarios(&self) {
        for scenario in Scenario::ALL {
            std::fs::create_dir(self.path(scenario.name())).expect("create scenario dir");
            for tool in [Tool::Nodeprov, Tool::Ansible, Tool::Pyinfra] {
                if let Some((name, text)) = scenario.source(tool, self.posix) {
                    self.write(&format!("{}/{name}", scenario.name()), text);
                }
            }
        }
    }

    /// Read by nodeprov and Ansible alike. nodeprov gets known_hosts from
    /// `--known-hosts`; Ansible's OpenSSH client from the common args.
    fn ini_inventory(&self, hosts: &[SshHost]) -> String {
        let known_hosts = self.path("known_hosts");
        format!(
            "{}\n[fleet:vars]\nansible_ssh_common_args='-o UserKnownHostsFile={} -o StrictHostKeyChecking=yes'\n",
            sshd::inventory(hosts, "root", ""),
            known_hosts.display()
        )
    }

    /// pyinfra's inventory is Python: a list of (name, data) pairs.
    fn pyinfra_inventory(&self, hosts: &[SshHost]) -> String {
        let mut py = String::from("fleet = [\n");
        for h in hosts {
            writeln!(
                py,
                "    ({:?}, {{\"ssh_hostname\": {:?}, \"ssh_port\": 22, \"ssh_user\": \"root\", \
                 \"ssh_key\": {:?}, \"ssh_known_hosts_file\": {:?}, \
                 \"ssh_strict_host_key_checking\": \"yes\"}}),",
                h.name(),
                h.ip(),
                h.key_path().display().to_string(),
                self.path("known_hosts").display().to_string(),
            )
            .unwrap();
        }
        py.push_str("]\n");
        py
    }

    /// Forks equal to the host count so Ansible, like the others, works on
    /// every host at once (its default of 5 would serialise a 10-host fleet
    /// into two waves). The interpreter is named so Ansible skips discovery,
    /// which would cost it a round trip per host that the others do not pay.
    fn ansible_cfg(&self) -> String {
        format!(
            "[defaults]\n\
             forks = {}\n\
             host_key_checking = True\n\
             interpreter_python = /usr/bin/python3\n\
             retry_files_enabled = False\n\
             [ssh_connection]\n\
             pipelining = True\n",
            self.forks
        )
    }
}
