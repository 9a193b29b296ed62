//! Real Linux VMs for end-to-end tests.
//!
//! A `TestVm` boots the Debian 12 image that `build-image.sh` builds once and
//! caches, on copy-on-write overlays of its disks so every VM starts pristine,
//! under qemu with user-mode networking: the guest's sshd is forwarded to a
//! free port on 127.0.0.1 and nothing else is reachable either way. The guest
//! has root, `deploy` (sudo with password `deploy-pass`) and `ops`
//! (passwordless sudo), all logging in with the cache's test key.
//!
//! Needs root (the image build), qemu-system-x86_64, qemu-img, ssh,
//! ssh-keyscan and the build script's tools. Dropping the VM kills qemu and
//! removes the overlays.

// A test crate uses only part of this module; the rest would warn as dead code.
#![allow(dead_code)]

use std::cell::Cell;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vm/build-image.sh");

/// Under TCG a Debian boot takes minutes on a loaded 2-core machine.
const TCG_BOOT_DEADLINE: Duration = Duration::from_secs(600);
/// A working KVM boots in seconds; a stalled one never does, and this is how
/// long the one-time probe waits before settling on TCG.
const KVM_PROBE_DEADLINE: Duration = Duration::from_secs(90);
/// How long a guest may take to go down after `systemctl reboot`.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(300);

/// Options for every ssh call: never prompt, never hang on a guest that is
/// going down, and ignore whatever keys or agent the developer has.
const SSH_OPTIONS: [&str; 14] = [
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "ConnectTimeout=15",
    "-o",
    "ServerAliveInterval=2",
    "-o",
    "ServerAliveCountMax=2",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "LogLevel=ERROR",
];

/// The files build-image.sh produced, shared by every VM of the test process.
struct Image {
    prefix: PathBuf,
    key: PathBuf,
}

impl Image {
    fn file(&self, suffix: &str) -> PathBuf {
        let mut name = self.prefix.clone().into_os_string();
        name.push(suffix);
        PathBuf::from(name)
    }

    /// The cached accelerator probe result. Kept across image rebuilds: the
    /// probe costs a long boot, and whether KVM works is the machine's trait.
    fn accel_file(&self) -> PathBuf {
        self.prefix.with_file_name("accel")
    }
}

fn image() -> &'static Image {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let start = Instant::now();
        let out = Command::new("bash")
            .arg(BUILD_SCRIPT)
            .stderr(Stdio::inherit())
            .output()
            .expect("run build-image.sh");
        assert!(out.status.success(), "build-image.sh failed");
        let prefix = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        eprintln!(
            "vm: image {} ready in {:.0?}",
            prefix.display(),
            start.elapsed()
        );
        let key = prefix.parent().unwrap().join("id_ed25519");
        Image { prefix, key }
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    fn deadline(self) -> Duration {
        match self {
            Accel::Kvm => KVM_PROBE_DEADLINE,
            Accel::Tcg => TCG_BOOT_DEADLINE,
        }
    }
}

pub struct TestVm {
    image: &'static Image,
    /// Overlays, serial log, pid file, known_hosts and inventories.
    dir: TempDir,
    port: u16,
    accel: Accel,
    pid: Cell<Option<u32>>,
    /// Kernel command line after the root and console settings.
    kernel_args: &'static str,
}

impl TestVm {
    /// Boots a pristine VM and returns once its sshd answers.
    pub fn start() -> TestVm {
        TestVm::start_with("")
    }

    /// Boots with SELinux enforcing the image's default policy, as an EL
    /// host runs (the files were labelled when the image was built).
    pub fn start_selinux_enforcing() -> TestVm {
        TestVm::start_with("security=selinux selinux=1 enforcing=1")
    }

    fn start_with(kernel_args: &'static str) -> TestVm {
        let image = image();
        let dir = tempfile::Builder::new()
            .prefix("nodeprov-vm-")
            .tempdir()
            .expect("create VM directory");
        let mut vm = TestVm {
            image,
            dir,
            port: free_port(),
            accel: Accel::Tcg,
            pid: Cell::new(None),
            kernel_args,
        };
        vm.create_overlays();
        vm.boot_with_probe();
        vm
    }

    fn boot_with_probe(&mut self) {
        let cached = fs::read_to_string(self.image.accel_file()).unwrap_or_default();
        match cached.trim() {
            "kvm" => self.accel = Accel::Kvm,
            "tcg" => self.accel = Accel::Tcg,
            _ if Path::new("/dev/kvm").exists() => return self.probe_kvm(),
            _ => self.accel = Accel::Tcg,
        }
        self.boot();
    }

    /// The first boot on a machine with /dev/kvm doubles as the probe: if it
    /// reaches SSH the VM is kept, otherwise it is killed and the VM boots
    /// again under TCG. Either way the answer is cached for later VMs.
    fn probe_kvm(&mut self) {
        self.accel = Accel::Kvm;
        let kvm_works = self.try_boot();
        if !kvm_works {
            eprintln!("vm: KVM guest did not boot; using TCG from now on");
            self.power_off_hard();
            // Whatever the stalled boot wrote must not leak into this VM.
            self.create_overlays();
            self.accel = Accel::Tcg;
        }
        fs::write(self.image.accel_file(), self.accel.name()).expect("cache accel probe");
        if !kvm_works {
            self.boot();
        }
    }

    /// Fresh copy-on-write layers over the cached disks.
    fn create_overlays(&self) {
        for (base, overlay) in [
            (".qcow2", "root.qcow2"),
            ("-xfs.qcow2", "xfs.qcow2"),
            ("-btrfs.qcow2", "btrfs.qcow2"),
        ] {
            create_overlay(&self.image.file(base), &self.path(overlay));
        }
    }

    fn boot(&self) {
        assert!(
            self.try_boot(),
            "VM did not answer SSH within {:?} ({}); serial console:\n{}",
            self.accel.deadline(),
            self.accel.name(),
            self.serial_tail()
        );
    }

    fn try_boot(&self) -> bool {
        let start = Instant::now();
        self.launch_qemu();
        let up = self.wait_for_ssh(self.accel.deadline(), |_| true);
        if up {
            eprintln!(
                "vm: booted ({}) to SSH on port {} in {:.0?}",
                self.accel.name(),
                self.port,
                start.elapsed()
            );
            self.settle();
        }
        up
    }

    fn launch_qemu(&self) {
        let pid_file = self.path("qemu.pid");
        let _ = fs::remove_file(&pid_file);
        let out = Command::new("qemu-system-x86_64")
            .args(self.qemu_args(&pid_file))
            .output()
            .expect("run qemu-system-x86_64");
        assert!(
            out.status.success(),
            "qemu failed to start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pid = fs::read_to_string(&pid_file).expect("qemu pid file");
        self.pid.set(Some(pid.trim().parse().expect("qemu pid")));
    }

    fn qemu_args(&self, pid_file: &Path) -> Vec<String> {
        let mut args: Vec<String> = [
            "-nodefaults",
            "-display",
            "none",
            "-daemonize",
            "-m",
            "1024",
            "-smp",
            "1",
            "-accel",
            self.accel.name(),
            "-device",
            "virtio-net-pci,netdev=net0",
            "-serial",
            "chardev:serial0",
        ]
        .map(String::from)
        .to_vec();
        let dir = self.dir.path().display();
        let cmdline = format!("root=/dev/vda rw console=ttyS0 {}", self.kernel_args);
        let pairs = [
            ("-append", cmdline.trim_end().to_string()),
            ("-pidfile", pid_file.display().to_string()),
            ("-kernel", self.image.file(".vmlinuz").display().to_string()),
            ("-initrd", self.image.file(".initrd").display().to_string()),
            (
                "-netdev",
                format!("user,id=net0,hostfwd=tcp:127.0.0.1:{}-:22", self.port),
            ),
            // Appending keeps the console of every boot of this VM.
            (
                "-chardev",
                format!("file,id=serial0,path={dir}/serial.log,append=on"),
            ),
        ];
        for (flag, value) in pairs {
            args.extend([flag.to_string(), value]);
        }
        // Root first: the kernel command line names it /dev/vda.
        for disk in ["root", "xfs", "btrfs"] {
            args.extend([
                "-drive".to_string(),
                format!("file={dir}/{disk}.qcow2,format=qcow2,if=virtio"),
            ]);
        }
        args
    }

    /// Polls until `ssh` runs a command whose stdout satisfies `ready`, failing
    /// fast if qemu dies.
    fn wait_for_ssh(&self, deadline: Duration, ready: impl Fn(&str) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < deadline {
            if !self.qemu_alive() {
                return false;
            }
            let out = self.ssh_once("root", "cat /proc/sys/kernel/random/boot_id");
            if out.status.success() && ready(&String::from_utf8_lossy(&out.stdout)) {
                return true;
            }
            sleep(Duration::from_secs(2));
        }
        false
    }

    /// Runs `cmd` as root in the guest through the system ssh client.
    pub fn ssh(&self, cmd: &str) -> Output {
        self.ssh_as("root", cmd)
    }

    /// Runs `cmd` as `user`. Under TCG on a busy machine a connection can
    /// time out; ssh's own failure (exit 255) is retried a few times, which
    /// is safe because every command the tests send is idempotent.
    pub fn ssh_as(&self, user: &str, cmd: &str) -> Output {
        let mut out = self.ssh_once(user, cmd);
        for _ in 0..4 {
            if out.status.code() != Some(255) {
                break;
            }
            std::thread::sleep(Duration::from_secs(3));
            out = self.ssh_once(user, cmd);
        }
        out
    }

    fn ssh_once(&self, user: &str, cmd: &str) -> Output {
        Command::new("ssh")
            .args(SSH_OPTIONS)
            .args([
                "-o",
                &format!(
                    "UserKnownHostsFile={}",
                    self.path("ssh_known_hosts").display()
                ),
            ])
            .args(["-i", &self.image.key.display().to_string()])
            .args(["-p", &self.port.to_string()])
            .arg(format!("{user}@127.0.0.1"))
            .arg(cmd)
            .stdin(Stdio::null())
            .output()
            .expect("run ssh")
    }

    /// Like `ssh`, but panics unless the command succeeds; returns its stdout.
    pub fn ssh_ok(&self, cmd: &str) -> String {
        let out = self.ssh(cmd);
        assert!(
            out.status.success(),
            "`{cmd}` failed in the VM ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// A clean reboot: returns once the guest is up again with a new boot id.
    pub fn reboot(&self) {
        let before = self.ssh_ok("cat /proc/sys/kernel/random/boot_id");
        // The connection may drop before ssh hears the exit status.
        let _ = self.ssh_once("root", "systemctl reboot");
        let deadline = SHUTDOWN_DEADLINE + self.accel.deadline();
        let start = Instant::now();
        assert!(
            self.wait_for_ssh(deadline, |id| id != before),
            "VM did not come back from reboot; serial console:\n{}",
            self.serial_tail()
        );
        self.settle();
        eprintln!("vm: rebooted in {:.0?}", start.elapsed());
    }

    /// Waits for the boot to finish (sshd starts before tuned and the test
    /// services), so tests compare settled states rather than a boot in flight.
    pub fn settle(&self) {
        let start = Instant::now();
        let state = self.ssh("systemctl is-system-running --wait");
        let state = String::from_utf8_lossy(&state.stdout);
        if state.trim() != "running" {
            eprintln!(
                "vm: system is {}; failed units:\n{}",
                state.trim(),
                String::from_utf8_lossy(&self.ssh("systemctl --failed --no-legend").stdout)
            );
        }
        eprintln!("vm: boot settled after {:.0?} more", start.elapsed());
    }

    /// Pulls the plug: kills qemu without letting the guest sync or unmount.
    pub fn power_off_hard(&self) {
        let Some(pid) = self.pid.take() else { return };
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        // qemu holds the overlays until it is gone; a restart must not race it.
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        while proc_dir.exists() {
            sleep(Duration::from_millis(100));
        }
    }

    /// Boots the same disks again, e.g. after `power_off_hard`.
    pub fn restart(&self) {
        self.power_off_hard();
        self.boot();
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The private key every guest account accepts.
    pub fn key_path(&self) -> &Path {
        &self.image.key
    }

    /// The guest's host keys as known_hosts lines (`[127.0.0.1]:PORT type key`,
    /// one per key type), read from the forwarded port.
    pub fn known_hosts_line(&self) -> String {
        let out = Command::new("ssh-keyscan")
            .args(["-T", "10", "-p", &self.port.to_string(), "127.0.0.1"])
            .stderr(Stdio::null())
            .output()
            .expect("run ssh-keyscan");
        let text = String::from_utf8(out.stdout).expect("utf-8 keyscan");
        assert!(!text.trim().is_empty(), "ssh-keyscan found no host keys");
        text
    }

    /// A known_hosts file holding this guest's keys, for nodeprov's `--known-hosts`.
    pub fn known_hosts_file(&self) -> PathBuf {
        let path = self.path("nodeprov_known_hosts");
        fs::write(&path, self.known_hosts_line()).expect("write known_hosts");
        path
    }

    /// An INI inventory with one host, `vm`, reached as `user` on the
    /// forwarded port; `extra` is appended to the host line
    /// (e.g. `ansible_become_password=deploy-pass`).
    pub fn inventory(&self, user: &str, extra: &str) -> PathBuf {
        let path = self.path(&format!("inventory-{user}.ini"));
        let line = format!(
            "vm ansible_host=127.0.0.1 ansible_port={} ansible_user={user} ansible_ssh_private_key_file={} {extra}\n",
            self.port,
            self.image.key.display()
        );
        fs::write(&path, line).expect("write inventory");
        path
    }

    /// Everything a check run must leave alone: swap, the memory sysctls, the
    /// redundant services, all of /etc (entries and content hashes) and the
    /// swap file. A listing rather than a hash, so a failed comparison shows
    /// what changed.
    pub fn state_digest(&self) -> String {
        self.ssh_ok(
            "cat /proc/swaps; \
             sysctl vm.swappiness vm.overcommit_memory; \
             for s in httpd mysqld; do \
               echo \"$s $(systemctl is-enabled $s) $(systemctl is-active $s)\"; \
             done; \
             ls -la /swapfile 2>&1 || true",
        ) + &self.etc_digest()
    }

    /// /etc alone: every entry's mode, owner, type, size and link target, and
    /// every file's content hash.
    pub fn etc_digest(&self) -> String {
        self.ssh_ok(
            "find /etc -xdev -printf '%p %m %U:%G %y %s %l\\n' | LC_ALL=C sort; \
             find /etc -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum",
        )
    }

    /// The end of the serial console log, for failure messages.
    pub fn serial_tail(&self) -> String {
        let log = fs::read(self.path("serial.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&log);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn qemu_alive(&self) -> bool {
        self.pid
            .get()
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for TestVm {
    fn drop(&mut self) {
        // The TempDir field, dropped after this, removes the overlays.
        self.power_off_hard();
    }
}

fn create_overlay(base: &Path, overlay: &Path) {
    let out = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", "-F", "qcow2", "-b"])
        .arg(base)
        .arg(overlay)
        .output()
        .expect("run qemu-img");
    assert!(
        out.status.success(),
        "qemu-img create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A port nothing listens on now. qemu binds it a moment later; another
/// process taking it in between makes qemu fail loudly, not silently.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}
