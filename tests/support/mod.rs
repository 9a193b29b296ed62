//! Isolated test hosts for integration tests.
//!
//! An `IsolatedHost` is a private tree (copies of /etc, /root, /tmp, /run and a
//! fake /proc/sys/vm) that `run` lays over the real machine inside fresh mount,
//! pid and uts namespaces. Commands, including the real `nodeprov` binary, can
//! then provision "the host" as root without touching the developer machine.
//! Each `run` is a new namespace over the same tree, so state carries over
//! between calls just as it would on a real server.
//!
//! A host made `with_network` also has a network namespace of its own, so a
//! firewall can be turned on inside it; the machine's netfilter rules are
//! part of `machine_digest`.
//!
//! Requires root (or equivalent capabilities) and util-linux `unshare`,
//! `nsenter` and `mount`.
//!
//! `sshd` (a submodule) turns hosts into SSH servers for transport tests.

// Every test crate includes this module with `mod support;` and uses a different
// subset of it; the rest would otherwise warn as dead code in that crate.
#![allow(dead_code)]

pub mod control;
pub mod http;
pub mod sshd;

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use tempfile::TempDir;

const ENTER_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/enter-host.sh");

/// The directories a host gets private copies of, with the modes a real system has.
/// /var/log is among them because sshd and sudo record logins and failures there.
const PRIVATE_DIRS: [(&str, u32); 5] = [
    ("/etc", 0o755),
    ("/root", 0o700),
    ("/tmp", 0o1777),
    ("/run", 0o755),
    ("/var/log", 0o755),
];

/// Pinned so tests see the same starting point on every machine, whatever the
/// developer machine itself is tuned to.
const VM_DEFAULTS: [(&str, &str); 4] = [
    ("swappiness", "60"),
    ("overcommit_memory", "0"),
    ("dirty_ratio", "20"),
    ("min_free_kbytes", "67584"),
];

const FAKE_VM: &str = "/proc/sys/vm";

const SPAWN_LOG: &str = "/var/log/spawned.log";

/// enter-host.sh's exit status when it could not build the namespace.
const SETUP_FAILED: i32 = 125;

pub struct IsolatedHost {
    root: TempDir,
    vm: TempDir,
    hostname: String,
    /// Machine directories besides PRIVATE_DIRS that this host covers with
    /// its own (a package manager's state).
    extra_private: &'static [&'static str],
    /// The network namespace every command of the host enters, bound to a
    /// file of the host tree; `None`: the machine's network.
    netns: Option<PathBuf>,
    /// Whether /usr is an overlay of the machine's whose changes stay in
    /// the host tree (see `with_own_usr`).
    own_usr: bool,
}

/// Where dnf keeps its history and cache. rpm's database follows `%_dbpath`,
/// which Debian's rpm puts under /root (private already); on the host it is
/// kept there too, so no rpmdb of the machine is ever opened.
const DNF_STATE: [&str; 2] = ["/var/lib/dnf", "/var/cache/dnf"];

/// Where apt and dpkg keep what is installed, the package lists and the
/// downloaded archives.
const APT_STATE: [&str; 3] = ["/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt"];

/// The Rocky Linux 9 identity files an EL host carries.
const EL_OS_RELEASE: &str = r#"NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:rocky:rocky:9::baseos"
HOME_URL="https://rockylinux.org/"
"#;

/// Ubuntu 22.04's identity file.
const UBUNTU_OS_RELEASE: &str = r#"PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
"#;

impl IsolatedHost {
    /// A fresh host with a generated, process-unique hostname.
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        Self::with_hostname(&format!("node{:02}", NEXT.fetch_add(1, Ordering::Relaxed)))
    }

    pub fn with_hostname(hostname: &str) -> Self {
        let root = tempfile::Builder::new()
            .prefix("nodeprov-host-")
            .tempdir()
            .expect("create host tree");
        populate_private_dirs(root.path(), hostname);
        let vm = fake_vm_dir();
        IsolatedHost {
            root,
            vm,
            hostname: hostname.to_string(),
            extra_private: &[],
            netns: None,
            own_usr: false,
        }
    }

    /// This host with a network namespace of its own, holding only `lo`
    /// (up), which every later `run` and `spawn` enters: a firewall started
    /// in it edits that namespace's netfilter, never the machine's. The
    /// namespace lives as long as the host, bound to a file of its tree.
    pub fn with_network(mut self) -> Self {
        let file = self.root.path().join("netns");
        fs::write(&file, "").expect("create netns file");
        let made = Command::new("unshare")
            .arg(format!("--net={}", file.display()))
            .arg("true")
            .status()
            .expect("spawn unshare --net");
        assert!(made.success(), "unshare --net failed: {made}");
        self.netns = Some(file);
        let lo = self
            .netns_command("ip")
            .args(["link", "set", "lo", "up"])
            .status();
        assert!(lo.expect("spawn ip").success(), "cannot bring up lo");
        self
    }

    /// This host with a /usr of its own: the machine's /usr under an
    /// overlay whose writes (a package installed into /usr/bin and
    /// /usr/share) land in the host tree, listed by `usr_changes`.
    pub fn with_own_usr(mut self) -> Self {
        self.own_usr = true;
        self
    }

    /// Every file and symlink the host added to or changed in its /usr, as
    /// paths inside the host (`/usr/bin/...`), sorted.
    pub fn usr_changes(&self) -> Vec<String> {
        let upper = self.root.path().join("usr-upper");
        let mut files = Vec::new();
        if upper.exists() {
            non_dirs_under(&upper, &mut files);
        }
        let mut inside: Vec<String> = files
            .iter()
            .map(|f| {
                let rest = f.strip_prefix(&upper).expect("under the upper dir");
                Path::new("/usr").join(rest).display().to_string()
            })
            .collect();
        inside.sort();
        inside
    }

    /// A host laid out like Rocky Linux 9 with dnf: its own os-release and
    /// redhat-release, `/etc/yum.repos.d/` holding only `local.repo` (the
    /// repository at `/tmp/repo`, unsigned, for tests to fill with
    /// `createrepo_c`), and private dnf state and rpm database.
    pub fn el() -> Self {
        let mut host = Self::new();
        host.extra_private = &DNF_STATE;
        host.make_private_dirs();
        let etc = host.path("/etc");
        for stale in ["os-release", "debian_version", "lsb-release"] {
            let _ = fs::remove_file(etc.join(stale));
        }
        fs::write(etc.join("os-release"), EL_OS_RELEASE).expect("write os-release");
        fs::write(
            etc.join("redhat-release"),
            "Rocky Linux release 9.4 (Blue Onyx)\n",
        )
        .expect("write redhat-release");
        let repos = etc.join("yum.repos.d");
        let _ = fs::remove_dir_all(&repos);
        fs::create_dir_all(&repos).expect("create yum.repos.d");
        fs::write(
            repos.join("local.repo"),
            "[local]\nname=Local test packages\nbaseurl=file:///tmp/repo\nenabled=1\ngpgcheck=0\n",
        )
        .expect("write local.repo");
        fs::create_dir_all(host.path("/tmp/repo")).expect("create /tmp/repo");
        host
    }

    /// A Debian host whose apt and dpkg state is its own: nothing installed,
    /// and one source, the flat repository at `/tmp/repo` (trusted, for
    /// tests to fill with `dpkg-scanpackages`).
    pub fn apt() -> Self {
        let mut host = Self::new();
        host.extra_private = &APT_STATE;
        host.make_private_dirs();
        let apt = host.path("/etc/apt");
        // The machine's apt hooks (appstream's cache refresh, debconf) would
        // write to its own /var: the host's apt runs without them.
        let _ = fs::remove_dir_all(apt.join("apt.conf.d"));
        fs::create_dir_all(apt.join("apt.conf.d")).expect("create apt.conf.d");
        let _ = fs::remove_file(apt.join("sources.list"));
        let _ = fs::remove_dir_all(apt.join("sources.list.d"));
        fs::create_dir_all(apt.join("sources.list.d")).expect("create sources.list.d");
        fs::write(
            apt.join("sources.list.d/local.list"),
            "deb [trusted=yes] file:/tmp/repo ./\n",
        )
        .expect("write local.list");
        let dpkg = host.path("/var/lib/dpkg");
        for dir in ["info", "updates", "triggers"] {
            fs::create_dir_all(dpkg.join(dir)).expect("create dpkg dirs");
        }
        for file in ["status", "available"] {
            fs::write(dpkg.join(file), "").expect("create dpkg db");
        }
        for dir in [
            "/var/lib/apt/lists/partial",
            "/var/cache/apt/archives/partial",
            "/tmp/repo",
        ] {
            fs::create_dir_all(host.path(dir)).expect("create apt dirs");
        }
        host
    }

    /// An `apt()` host that says it is Ubuntu 22.04 (jammy).
    pub fn ubuntu() -> Self {
        let host = Self::apt();
        let etc = host.path("/etc");
        for stale in ["os-release", "debian_version", "lsb-release"] {
            let _ = fs::remove_file(etc.join(stale));
        }
        fs::write(etc.join("os-release"), UBUNTU_OS_RELEASE).expect("write os-release");
        fs::write(etc.join("debian_version"), "bookworm/sid\n").expect("write debian_version");
        host
    }

    fn make_private_dirs(&self) {
        for dir in self.extra_private {
            fs::create_dir_all(self.path(dir)).expect("create private state dir");
        }
    }

    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// Runs `argv` as root inside the host and returns what it did. `argv[0]` may
    /// be any path on the machine, e.g. `env!("CARGO_BIN_EXE_nodeprov")`: its
    /// directory stays visible even when it lies under /tmp or /root. Panics if
    /// the host itself could not be entered, so a broken harness never looks like
    /// a failing command.
    pub fn run(&self, argv: &[&str]) -> Output {
        let out = self.command(argv).output().expect("spawn unshare");
        panic_if_not_entered(&out);
        out
    }

    /// Runs a shell script inside; panics with its output when it fails.
    pub fn sh(&self, script: &str) -> String {
        let out = self.run(&["sh", "-c", script]);
        assert!(
            out.status.success(),
            "{script}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An installed rpm's version-release, or what rpm says of it.
    pub fn rpm_version(&self, name: &str) -> String {
        let out = self.run(&["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", name]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A deb's dpkg status abbreviation and version (`ii 1.0`), or nothing.
    pub fn dpkg_status(&self, name: &str) -> String {
        let format = "${db:Status-Abbrev}${Version}";
        let out = self.run(&["dpkg-query", "-W", "-f", format, name]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Starts `argv` inside a fresh namespace over the host's tree and returns at
    /// once, for servers. `argv` runs as PID 1 of that namespace, as the child of
    /// the returned `unshare`; killing `unshare` kills it and all it started.
    /// Its stdout and stderr are appended to the host's `/var/log/spawned.log`.
    pub fn spawn(&self, argv: &[&str]) -> Child {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(SPAWN_LOG))
            .expect("open spawn log");
        let mut cmd = self.command(argv);
        cmd.stdout(log.try_clone().expect("dup spawn log"))
            .stderr(log);
        cmd.spawn().expect("spawn unshare")
    }

    /// What spawned commands (and enter-host.sh, when entering failed) printed.
    pub fn spawn_log(&self) -> String {
        fs::read_to_string(self.path(SPAWN_LOG)).unwrap_or_default()
    }

    fn command(&self, argv: &[&str]) -> Command {
        let (program, _) = argv.split_first().expect("IsolatedHost needs a command");
        let mut cmd = self.netns_command("unshare");
        cmd.args(["--mount", "--propagation", "private", "--pid", "--fork"])
            .args([
                "--kill-child",
                "--uts",
                "--mount-proc",
                "/bin/sh",
                ENTER_SCRIPT,
            ])
            .arg(self.root.path())
            .arg(self.vm.path())
            .arg(&self.hostname);
        for keep in dirs_to_keep_visible(program) {
            cmd.arg("--keep").arg(keep);
        }
        for dir in self.extra_private {
            cmd.arg("--private").arg(&dir[1..]);
        }
        if self.own_usr {
            cmd.arg("--own-usr");
        }
        if self.netns.is_some() {
            cmd.arg("--own-network");
        }
        cmd.arg("--").args(argv);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LC_ALL", "C")
            .env("HOME", "/root")
            .stdin(Stdio::null());
        cmd
    }

    /// `program` in the host's network namespace, if it has one: nsenter
    /// joins it and execs the program, whose process id stays the one
    /// returned.
    fn netns_command(&self, program: &str) -> Command {
        let Some(netns) = &self.netns else {
            return Command::new(program);
        };
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", netns.display())).arg(program);
        cmd
    }

    /// The machine-side path of `inside`, which must lie in the host's private
    /// state (/etc, /root, /tmp, /run, /proc/sys/vm, or the package state of
    /// `el` and `apt` hosts). Anything else would be the real machine, so it
    /// panics instead.
    pub fn path(&self, inside: &str) -> PathBuf {
        let inside = Path::new(inside);
        if let Ok(rest) = inside.strip_prefix(FAKE_VM) {
            return self.vm.path().join(rest);
        }
        let private = PRIVATE_DIRS.iter().any(|(dir, _)| inside.starts_with(dir))
            || self.extra_private.iter().any(|dir| inside.starts_with(dir));
        assert!(private, "{} is not private to the host", inside.display());
        self.root
            .path()
            .join(inside.strip_prefix("/").expect("absolute path"))
    }

    /// The host's current value of a vm sysctl such as "vm.swappiness".
    pub fn sysctl(&self, key: &str) -> String {
        let path = self.sysctl_path(key);
        let value = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {key}: {e}"));
        value.trim_end().to_string()
    }

    pub fn set_sysctl(&self, key: &str, value: &str) {
        fs::write(self.sysctl_path(key), format!("{value}\n"))
            .unwrap_or_else(|e| panic!("set {key}: {e}"));
    }

    fn sysctl_path(&self, key: &str) -> PathBuf {
        let name = key
            .strip_prefix("vm.")
            .unwrap_or_else(|| panic!("only vm.* sysctls are private to a host, not {key}"));
        self.vm.path().join(name)
    }
}

impl Drop for IsolatedHost {
    /// Unbinds the network namespace, which then ends with its last process,
    /// so the host tree can be removed.
    fn drop(&mut self) {
        if let Some(netns) = &self.netns {
            let _ = Command::new("umount").arg(netns).status();
        }
    }
}

impl Default for IsolatedHost {
    fn default() -> Self {
        Self::new()
    }
}

fn non_dirs_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("list {}: {e}", dir.display())) {
        let path = entry.expect("read dir entry").path();
        if fs::symlink_metadata(&path).expect("stat").is_dir() {
            non_dirs_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn populate_private_dirs(root: &Path, hostname: &str) {
    let etc = root.join("etc");
    let copied = Command::new("cp")
        .args(["-a", "/etc"])
        .arg(&etc)
        .status()
        .expect("spawn cp");
    assert!(copied.success(), "cp -a /etc failed: {copied}");
    for (dir, mode) in PRIVATE_DIRS {
        let path = root.join(&dir[1..]);
        fs::create_dir_all(&path).expect("create private dir");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod private dir");
    }
    // A real host's /etc/hostname agrees with its kernel hostname.
    fs::write(etc.join("hostname"), format!("{hostname}\n")).expect("write /etc/hostname");
}

/// Plain files named like the real /proc/sys/vm, holding its current values.
///
/// They live on tmpfs (/dev/shm) when it exists: procps `sysctl -a` walks
/// directories assuming "." and ".." come first, as on procfs and tmpfs, but ext4
/// returns them in hash order and sysctl then recurses forever through "..".
fn fake_vm_dir() -> TempDir {
    let builder = tempfile::Builder::new().prefix("nodeprov-vm-").clone();
    let shm = Path::new("/dev/shm");
    let vm = if shm.is_dir() {
        builder.tempdir_in(shm)
    } else {
        builder.tempdir()
    }
    .expect("create fake vm dir");
    for entry in fs::read_dir(FAKE_VM).expect("list /proc/sys/vm") {
        let entry = entry.expect("read /proc/sys/vm");
        // Write-only knobs such as drop_caches cannot be read; they start empty.
        let value = fs::read_to_string(entry.path()).unwrap_or_default();
        fs::write(vm.path().join(entry.file_name()), value).expect("write fake vm file");
    }
    for (name, value) in VM_DEFAULTS {
        fs::write(vm.path().join(name), format!("{value}\n")).expect("write fake vm default");
    }
    vm
}

/// Real directories the command needs that the private dirs would hide: the
/// program's own directory (a cargo target dir may live under /root or /tmp)
/// and the caller's working directory. A private dir itself is never kept,
/// since that would expose all of the real one.
fn dirs_to_keep_visible(program: &str) -> BTreeSet<PathBuf> {
    let program = Path::new(program);
    let program_dir = program
        .is_absolute()
        .then(|| program.parent().map(Path::to_path_buf))
        .flatten();
    let cwd = std::env::current_dir().ok();
    program_dir
        .into_iter()
        .chain(cwd)
        .map(|p| fs::canonicalize(&p).unwrap_or(p))
        .filter(|p| {
            PRIVATE_DIRS
                .iter()
                .any(|(dir, _)| p.starts_with(dir) && p != Path::new(dir))
        })
        .collect()
}

fn panic_if_not_entered(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let entered = out.status.code() != Some(SETUP_FAILED)
        && !stderr.starts_with("unshare: ")
        && !stderr.starts_with("nsenter: ");
    assert!(entered, "could not enter isolated host: {stderr}");
}

/// Files whose change would mean the suite touched the developer machine.
const MACHINE_STATE_FILES: [&str; 3] = [
    "/proc/sys/vm/swappiness",
    "/proc/sys/vm/overcommit_memory",
    "/proc/swaps",
];

/// What the developer machine must never see changed: every entry of /etc
/// (path, mode, owner, file size and content hash or link target), live swap
/// and vm settings and its netfilter rules, one line each so a difference
/// names its culprit.
/// The `bin` folder of the newest ansible-core's venv, the one
/// scripts/test.sh installs (`NODEPROV_ANSIBLE_NEWEST_VENV` names another).
pub fn newest_ansible_bin() -> PathBuf {
    let venv = std::env::var("NODEPROV_ANSIBLE_NEWEST_VENV")
        .unwrap_or("target/ansible-core-newest".into());
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(venv).join("bin");
    assert!(
        bin.join("ansible-playbook").exists(),
        "{} is missing: run scripts/test.sh, which installs it",
        bin.display()
    );
    bin
}

pub fn machine_digest() -> String {
    let mut lines = tree_digest(Path::new("/etc"));
    for file in MACHINE_STATE_FILES {
        let value = fs::read_to_string(file).unwrap_or_else(|e| panic!("read {file}: {e}"));
        lines.push(format!("{file} = {}", value.trim_end()));
    }
    lines.extend(netfilter_digest());
    lines.join("\n")
}

/// The machine's firewall listings that tests with a network of their own
/// must leave alone.
const NETFILTER_LISTINGS: [&[&str]; 3] = [
    &["iptables-save"],
    &["ip6tables-save"],
    &["nft", "list", "ruleset"],
];

/// The machine's netfilter rules as its own tools list them, each line
/// prefixed with the tool; a tool that is not installed lists nothing.
/// iptables-save's comments carry the time and are left out.
pub fn netfilter_digest() -> Vec<String> {
    let mut lines = Vec::new();
    for argv in NETFILTER_LISTINGS {
        let Ok(out) = Command::new(argv[0]).args(&argv[1..]).output() else {
            continue;
        };
        assert!(out.status.success(), "{argv:?} failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        lines.extend(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| format!("{} {l}", argv[0])),
        );
    }
    lines
}

/// Panics with the differing lines if the machine no longer matches `before`.
pub fn assert_machine_unchanged(before: &str) {
    let after = machine_digest();
    if before == after {
        return;
    }
    let old: HashSet<&str> = before.lines().collect();
    let new: HashSet<&str> = after.lines().collect();
    let gone = old.difference(&new).map(|l| format!("- {l}"));
    let came = new.difference(&old).map(|l| format!("+ {l}"));
    let diff: Vec<String> = gone.chain(came).collect();
    panic!("the developer machine changed:\n{}", diff.join("\n"));
}

/// One line per entry under `root`, sorted, not descending into other filesystems.
pub fn tree_digest(root: &Path) -> Vec<String> {
    let dev = fs::symlink_metadata(root).expect("stat digest root").dev();
    let mut lines = Vec::new();
    walk(root, dev, &mut lines);
    lines
}

fn walk(dir: &Path, dev: u64, lines: &mut Vec<String>) {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|entry| entry.expect("read dir entry").path())
        .collect();
    paths.sort();
    for path in paths {
        let meta = fs::symlink_metadata(&path).expect("stat");
        lines.push(describe(&path, &meta));
        if meta.is_dir() && meta.dev() == dev {
            walk(&path, dev, lines);
        }
    }
}

fn describe(path: &Path, meta: &fs::Metadata) -> String {
    let content = if meta.is_symlink() {
        format!("-> {}", fs::read_link(path).expect("readlink").display())
    } else if meta.is_file() {
        format!("{} {:016x}", meta.len(), content_hash(path))
    } else {
        // A directory's own size depends on its history, not its entries, which
        // are listed on their own lines anyway.
        String::new()
    };
    let (mode, uid, gid) = (meta.mode(), meta.uid(), meta.gid());
    format!("{} {mode:o} {uid}:{gid} {content}", path.display())
}

fn content_hash(path: &Path) -> u64 {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut hasher = DefaultHasher::new();
    hasher.write(&bytes);
    hasher.finish()
}

/// The status of each task of the first host in a JSON report, in order.
pub fn task_statuses(doc: &serde_json::Value) -> Vec<String> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap().to_string())
        .collect()
}

/// The change to `subject` on task `task` of a `check` run's one host,
/// after asserting that the run exited 2 (drift) and that task drifted.
pub fn drift_on<'a>(
    code: i32,
    doc: &'a serde_json::Value,
    task: usize,
    subject: &str,
) -> &'a serde_json::Value {
    assert_eq!(code, 2, "check exits 2 on drift: {doc:#}");
    let t = &doc["hosts"][0]["tasks"][task];
    assert_eq!(t["status"], "drift", "task {task}: {doc:#}");
    t["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["subject"] == subject)
        .unwrap_or_else(|| panic!("no drift on {subject}: {doc:#}"))
}

/// Runs argv inside the host and reads its stdout as one JSON document
/// (nodeprov's `--format json`); returns the exit code with it.
pub fn run_json(host: &IsolatedHost, argv: &[&str]) -> (i32, serde_json::Value) {
    let out = host.run(argv);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

/// The conformance record, whose first line pins the ansible-core release
/// whose integration targets are held against nodeprov.
pub const CONFORMANCE_RECORD: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/record.tsv");

/// The release the conformance record pins.
pub fn pinned_release() -> String {
    let record = std::fs::read_to_string(CONFORMANCE_RECORD).expect("read the conformance record");
    record
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# ansible-core "))
        .expect("the record starts with '# ansible-core <version>'")
        .trim()
        .to_string()
}

/// The unpacked integration targets of the pinned release, which
/// scripts/test.sh downloads.
pub fn conformance_targets() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/ansible-core-targets")
        .join(pinned_release())
        .join("test/integration/targets");
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/test.sh, which downloads it",
        dir.display()
    );
    dir
}
