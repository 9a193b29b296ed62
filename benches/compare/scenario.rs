//! The desired states being compared: each scenario carries one playbook or
//! deploy file per tool (kept readable in benches/scenarios/), puts a host
//! back to its initial state from outside, and checks from outside that a
//! host really reached the desired state, whatever the tool reported.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::sshd::SshHost;
use crate::tools::Tool;

const SYSCTL_FILE: &str = "/etc/sysctl.d/90-gpu-node.conf";

const SYSCTLS: [(&str, &str); 2] = [("vm.swappiness", "10"), ("vm.overcommit_memory", "1")];

/// The values support/mod.rs pins every fresh host to.
const INITIAL_SYSCTLS: [(&str, &str); 2] = [("vm.swappiness", "60"), ("vm.overcommit_memory", "0")];

const FILES_DIR: &str = "/etc/nodeprov-bench";

/// Must match the loops in benches/scenarios/files/*.
const FILE_COUNT: usize = 20;

/// What benches/scenarios/modules/playbook.yml writes, and the repository
/// it clones.
const KNOWN_HOSTS: &str = "/root/np-bench-known_hosts";
const PEERS: usize = 8;
const GIT_SOURCE: &str = "/root/np-bench-src";
const CLONE: &str = "/root/np-bench-clone-";
const CLONES: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scenario {
    Sysctl,
    Files,
    /// Ansible's own modules, which nodeprov runs as Ansible does.
    Modules,
}

impl Scenario {
    pub const ALL: [Scenario; 3] = [Scenario::Sysctl, Scenario::Files, Scenario::Modules];

    /// The scenarios NODEPROV_BENCH_SCENARIOS names (comma-separated), all
    /// of them when it is unset.
    pub fn selected() -> Vec<Scenario> {
        let pick = |name: &str| Scenario::ALL.into_iter().find(|s| s.name() == name);
        crate::env_list("NODEPROV_BENCH_SCENARIOS", "a scenario", pick)
            .unwrap_or(Scenario::ALL.to_vec())
    }

    /// Also the scenario's directory under benches/scenarios/.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Sysctl => "sysctl",
            Scenario::Files => "files",
            Scenario::Modules => "modules",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Scenario::Sysctl => "sysctl rollout (2 keys)",
            Scenario::Files => "20 files",
            Scenario::Modules => "20 runs of Ansible's modules",
        }
    }

    /// Whether nodeprov needs ansible-core on the controller for it.
    pub fn needs_ansible_core(self) -> bool {
        self == Scenario::Modules
    }

    /// The file `tool` runs, as (file name, text); None where the tool
    /// has no such thing (pyinfra runs no Ansible module). `posix` says
    /// whether Ansible has the ansible.posix collection.
    pub fn source(self, tool: Tool, posix: bool) -> Option<(&'static str, &'static str)> {
        Some(match (self, tool) {
            (Scenario::Sysctl, Tool::Nodeprov | Tool::Sharded) => (
                "nodeprov.yml",
                include_str!("../scenarios/sysctl/nodeprov.yml"),
            ),
            (Scenario::Sysctl, Tool::Ansible) if posix => (
                "ansible.yml",
                include_str!("../scenarios/sysctl/ansible-posix.yml"),
            ),
            (Scenario::Sysctl, Tool::Ansible) => (
                "ansible.yml",
                include_str!("../scenarios/sysctl/ansible.yml"),
            ),
            (Scenario::Sysctl, Tool::Pyinfra) => {
                ("pyinfra.py", include_str!("../scenarios/sysctl/pyinfra.py"))
            }
            (Scenario::Files, Tool::Nodeprov | Tool::Sharded) => (
                "nodeprov.yml",
                include_str!("../scenarios/files/nodeprov.yml"),
            ),
            (Scenario::Files, Tool::Ansible) => (
                "ansible.yml",
                include_str!("../scenarios/files/ansible.yml"),
            ),
            (Scenario::Files, Tool::Pyinfra) => {
                ("pyinfra.py", include_str!("../scenarios/files/pyinfra.py"))
            }
            (Scenario::Modules, Tool::Pyinfra) => return None,
            (Scenario::Modules, _) => (
                "playbook.yml",
                include_str!("../scenarios/modules/playbook.yml"),
            ),
        })
    }

    pub fn reset(self, host: &SshHost) {
        match self {
            Scenario::Sysctl => {
                remove(&host.host.path(SYSCTL_FILE));
                for (key, value) in INITIAL_SYSCTLS {
                    host.host.set_sysctl(key, value);
                }
            }
            Scenario::Files => remove(&host.host.path(FILES_DIR)),
            Scenario::Modules => {
                remove(&host.host.path(KNOWN_HOSTS));
                for i in 1..=CLONES {
                    remove(&host.host.path(&format!("{CLONE}{i}")));
                }
                git_source(&host.host.path(GIT_SOURCE));
            }
        }
    }

    /// Err names what is not as desired on `host`.
    pub fn verify(self, host: &SshHost) -> Result<(), String> {
        let problem = match self {
            Scenario::Sysctl => sysctl_problem(host),
            Scenario::Files => files_problem(host),
            Scenario::Modules => modules_problem(host),
        };
        problem.map_or(Ok(()), |p| Err(format!("{}: {p}", host.name())))
    }
}

fn remove(path: &Path) {
    let gone = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    if let Err(e) = gone {
        assert!(
            e.kind() == std::io::ErrorKind::NotFound,
            "remove {path:?}: {e}"
        );
    }
}

fn sysctl_problem(host: &SshHost) -> Option<String> {
    let persisted = fs::read_to_string(host.host.path(SYSCTL_FILE)).unwrap_or_default();
    SYSCTLS.iter().find_map(|&(key, want)| {
        let live = host.host.sysctl(key);
        let boot = last_assignment(&persisted, key);
        if live != want {
            Some(format!("{key} is {live} live, want {want}"))
        } else if boot.as_deref() != Some(want) {
            Some(format!("{key} is {boot:?} in {SYSCTL_FILE}, want {want}"))
        } else {
            None
        }
    })
}

/// The value sysctl.d would apply for `key` from `text`: the last
/// `key = value` line wins, whatever the spacing.
fn last_assignment(text: &str, key: &str) -> Option<String> {
    text.lines()
        .rev()
        .filter_map(|line| line.split_once('='))
        .find(|(k, _)| k.trim().replace('/', ".") == key)
        .map(|(_, v)| v.trim().to_string())
}

fn files_problem(host: &SshHost) -> Option<String> {
    let dir = host.host.path(FILES_DIR);
    if mode(&dir) != "755" {
        return Some(format!("{FILES_DIR} has mode {}", mode(&dir)));
    }
    (1..=FILE_COUNT).find_map(|i| {
        let path = dir.join(format!("file-{i}.conf"));
        let text = fs::read_to_string(&path).unwrap_or_default();
        if text != format!("setting_{i} = {i}\n") {
            Some(format!("file-{i}.conf holds {text:?}"))
        } else if mode(&path) != "640" {
            Some(format!("file-{i}.conf has mode {}", mode(&path)))
        } else {
            None
        }
    })
}

/// The permission bits in octal, or "missing".
fn mode(path: &Path) -> String {
    match fs::metadata(path) {
        Ok(meta) => format!("{:o}", meta.permissions().mode() & 0o7777),
        Err(_) => "missing".into(),
    }
}

/// A repository of one commit for the git tasks to clone, made once.
fn git_source(dir: &Path) {
    if dir.join(".git").is_dir() {
        return;
    }
    fs::create_dir_all(dir).expect("create the git source");
    fs::write(dir.join("README"), "bench\n").expect("write the git source");
    for args in [
        &["init", "-q"][..],
        &["add", "README"],
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
            "commit",
            "-qm",
            "one",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?} in {}", dir.display());
    }
}

fn modules_problem(host: &SshHost) -> Option<String> {
    let known = fs::read_to_string(host.host.path(KNOWN_HOSTS)).unwrap_or_default();
    if known.lines().count() != PEERS {
        return Some(format!(
            "{KNOWN_HOSTS} holds {} lines, want {PEERS}",
            known.lines().count()
        ));
    }
    (1..=CLONES)
        .map(|i| format!("{CLONE}{i}"))
        .find(|c| !host.host.path(c).join("README").is_file())
        .map(|c| format!("{c} is not a clone"))
}
