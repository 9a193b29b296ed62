//! The Python side of the comparison: one venv holding pinned ansible-core
//! and pyinfra, made once under ~/.cache and reused by later runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// ansible-core 2.21 needs Python >= 3.12 on the controller; pyenv's build is
/// used because the system Python may be older.
const DEFAULT_PYTHON: &str = "/root/.pyenv/versions/3.12.1/bin/python3";

/// Pinned so that numbers from different days compare the same releases.
const PINS: [&str; 2] = ["ansible-core==2.21.5", "pyinfra==3.10.0"];

const POSIX_COLLECTION: &str = "ansible.posix:==2.0.0";

#[derive(Clone)]
pub struct Venv {
    cache: PathBuf,
}

impl Venv {
    /// The venv at ~/.cache/nodeprov-bench/venv with the pinned tools,
    /// installing whatever is missing when `needed` (a Python tool is
    /// selected); a run of nodeprov alone needs neither Python nor PyPI.
    pub fn prepare(needed: bool) -> Venv {
        let home = std::env::var_os("HOME").expect("HOME is set");
        let venv = Venv {
            cache: Path::new(&home).join(".cache/nodeprov-bench"),
        };
        if !needed {
            return venv;
        }
        if !venv.bin("python").exists() {
            venv.create();
        }
        if !venv.pins_installed() {
            venv.install_pins();
        }
        venv
    }

    pub fn bin(&self, tool: &str) -> PathBuf {
        self.cache.join("venv/bin").join(tool)
    }

    /// Where ansible-galaxy puts collections, for ANSIBLE_COLLECTIONS_PATH.
    pub fn collections(&self) -> PathBuf {
        self.cache.join("collections")
    }

    /// Whether ansible.posix is installed, fetching it from Galaxy if needed.
    /// Galaxy is often unreachable from build machines, so failing is normal
    /// and the caller falls back to builtin modules.
    pub fn ansible_posix(&self) -> bool {
        let installed = self.collections().join("ansible_collections/ansible/posix");
        if installed.is_dir() {
            return true;
        }
        let mut galaxy = Command::new(self.bin("ansible-galaxy"));
        galaxy
            .args(["collection", "install", "--timeout", "20", POSIX_COLLECTION])
            .arg("-p")
            .arg(self.collections());
        let ok = galaxy.output().is_ok_and(|o| o.status.success());
        ok && installed.is_dir()
    }

    fn create(&self) {
        let python = std::env::var("NODEPROV_BENCH_PYTHON").unwrap_or(DEFAULT_PYTHON.into());
        eprintln!(
            "creating {} with {python}",
            self.cache.join("venv").display()
        );
        let mut venv = Command::new(&python);
        venv.args(["-m", "venv"]).arg(self.cache.join("venv"));
        run(venv, "python -m venv");
    }

    fn pins_installed(&self) -> bool {
        let out = Command::new(self.bin("pip"))
            .args(["freeze", "--all"])
            .output()
            .expect("spawn pip freeze");
        let frozen = String::from_utf8_lossy(&out.stdout);
        PINS.iter().all(|pin| frozen.lines().any(|l| l == *pin))
    }

    fn install_pins(&self) {
        eprintln!("installing {}", PINS.join(" "));
        let mut pip = Command::new(self.bin("pip"));
        pip.args(["install", "--quiet"]).args(PINS);
        run(pip, "pip install");
    }
}

fn run(mut cmd: Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    assert!(status.success(), "{what} failed: {status}");
}
