//! End-to-end proof on real Linux VMs (see tests/vm): a real kernel, systemd,
//! tuned, XFS and btrfs, reached over SSH on a forwarded port.
//!
//! Booting VMs takes minutes, so these tests are ignored by a plain
//! `cargo test` and run one at a time, beside the other tests:
//!
//!   cargo test --test vm_e2e -- --ignored --test-threads=1
//!
//! (scripts/test.sh does exactly that).

mod vm;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;
use vm::TestVm;

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const GPU_NODE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/gpu-node.yml");

/// The VMs have no GPU and a 4 GiB root disk: skip the smoke validation and
/// keep the swap file small. Their Debian image's redundant services carry
/// EL's unit names (httpd, mysqld), and no NVIDIA repository is reachable
/// (the driver role's nouveau part runs alone, in its own test). Every
/// gpu-node run uses these.
const GPU_NODE_VARS: [&str; 8] = [
    "-e",
    "gpu_validate=false",
    "-e",
    "nvidia_install=false",
    "-e",
    "swap_size=256M",
    "-e",
    r#"{"redundant_services": {"RedHat": ["httpd", "mysqld"], "Debian": ["httpd", "mysqld"]}}"#,
];
const SWAP_BYTES: u64 = 256 << 20;

/// tuned applies its profile some seconds after sshd is up.
const TUNED_DEADLINE: Duration = Duration::from_secs(180);

// ---------------------------------------------------------------------------
// The VM itself: what every nodeprov test below takes for granted.

/// The starting point of the gpu-node playbook, as a RHEL-like GPU node has it.
fn assert_baseline(vm: &TestVm) {
    assert_eq!(
        swap_devices(vm),
        Vec::<String>::new(),
        "swap must start off"
    );
    wait_for_swappiness(vm, "30");
    assert_eq!(vm.ssh_ok("sysctl -n vm.overcommit_memory"), "0\n");
    assert_eq!(
        vm.ssh_ok("readlink /etc/sysctl.d/99-sysctl.conf"),
        "../sysctl.conf\n"
    );
    for (service, port) in [("httpd", 80), ("mysqld", 3306)] {
        assert_eq!(unit_state(vm, service), "enabled active", "{service}");
        assert_eq!(
            answer_on_port(vm, port).as_deref(),
            Some(format!("{service}\n").as_str()),
            "{service} listens on {port}"
        );
    }
    assert_eq!(unit_state(vm, "nodeprov-static"), "static active");
    assert_eq!(unit_state(vm, "foo.socket"), "enabled active");
    assert_eq!(unit_state(vm, "foo.service"), "static inactive");
    assert_eq!(vm.ssh_ok("findmnt -n -o FSTYPE /mnt/xfs"), "xfs\n");
    assert_eq!(vm.ssh_ok("findmnt -n -o FSTYPE /mnt/btrfs"), "btrfs\n");
}

/// The three ways in: root, sudo with a password, passwordless sudo.
fn assert_accounts(vm: &TestVm) {
    assert!(vm.ssh_as("ops", "sudo -n true").status.success());
    assert!(!vm.ssh_as("deploy", "sudo -n true").status.success());
    let with_password = vm.ssh_as("deploy", "echo deploy-pass | sudo -S -p '' id -u");
    assert_eq!(String::from_utf8_lossy(&with_password.stdout), "0\n");
}

fn wait_for_swappiness(vm: &TestVm, want: &str) {
    let start = Instant::now();
    loop {
        let now = vm.ssh_ok("sysctl -n vm.swappiness");
        if now.trim() == want {
            return;
        }
        assert!(
            start.elapsed() < TUNED_DEADLINE,
            "vm.swappiness is {} after {TUNED_DEADLINE:?}, want {want}; tuned: {}",
            now.trim(),
            vm.ssh("systemctl status tuned --no-pager")
                .stdout
                .escape_ascii()
        );
        sleep(Duration::from_secs(2));
    }
}

fn swap_devices(vm: &TestVm) -> Vec<String> {
    vm.ssh_ok("cat /proc/swaps")
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// `is-enabled` and `is-active` of a unit, e.g. "enabled active".
fn unit_state(vm: &TestVm, unit: &str) -> String {
    let out = vm.ssh(&format!(
        "echo $(systemctl is-enabled {unit}) $(systemctl is-active {unit})"
    ));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What a TCP client on the guest reads from `port`; None if nothing listens.
fn answer_on_port(vm: &TestVm, port: u16) -> Option<String> {
    let out = vm.ssh(&format!("socat -T5 - TCP:127.0.0.1:{port} </dev/null"));
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

// ---------------------------------------------------------------------------
// nodeprov against the VM. These drive the real binary over SSH with an
// inventory and start passing once the SSH transport lands.

/// Runs the nodeprov binary against one VM with its host keys pinned.
struct Nodeprov {
    known_hosts: PathBuf,
    root: PathBuf,
    deploy: PathBuf,
}

impl Nodeprov {
    fn new(vm: &TestVm) -> Self {
        Nodeprov {
            known_hosts: vm.known_hosts_file(),
            root: vm.inventory("root", ""),
            deploy: vm.inventory("deploy", "ansible_become_password=deploy-pass"),
        }
    }

    fn command(&self, mode: &str, playbook: &Path, inventory: &Path, extra: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg(mode)
            .arg(playbook)
            .arg("-i")
            .arg(inventory)
            .arg("--known-hosts")
            .arg(&self.known_hosts)
            // A guest under TCG on a busy machine can take seconds to start a shell.
            .args(["--timeout", "60"])
            .args(["--format", "json"])
            .args(extra)
            .stdin(Stdio::null());
        cmd
    }

    /// Exit code and JSON report of one run.
    fn run(&self, mode: &str, playbook: &Path, inventory: &Path, extra: &[&str]) -> (i32, Value) {
        let out = self
            .command(mode, playbook, inventory, extra)
            .output()
            .expect("run nodeprov");
        report(mode, &out.stdout, &out.stderr, out.status.code())
    }

    fn gpu_node(&self, mode: &str, inventory: &Path) -> (i32, Value) {
        self.run(mode, Path::new(GPU_NODE), inventory, &GPU_NODE_VARS)
    }
}

fn report(mode: &str, stdout: &[u8], stderr: &[u8], code: Option<i32>) -> (i32, Value) {
    let doc = serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "nodeprov {mode}: no JSON report ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(stdout),
            String::from_utf8_lossy(stderr)
        )
    });
    (code.expect("nodeprov exited normally"), doc)
}

/// One line per task that drifted or changed: name, item and changed
/// subjects, lowercased, so assertions can look for what each is about.
fn touched(doc: &Value) -> Vec<String> {
    doc["hosts"][0]["tasks"]
        .as_array()
        .expect("a host report with tasks")
        .iter()
        .filter(|t| t["status"] != "ok" && t["status"] != "skipped")
        .map(|t| {
            let subjects: Vec<String> = t["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["subject"].to_string())
                .collect();
            format!(
                "{} {} {}: {}",
                t["status"],
                t["task"],
                t["item"],
                subjects.join(" ")
            )
            .to_lowercase()
        })
        .collect()
}

/// Whether some drifted or changed task is about `what`.
fn names(touched: &[String], what: &[&str]) -> bool {
    touched.iter().any(|t| what.iter().any(|w| t.contains(w)))
}

const SWAP_FILE: &[&str] = &["swapfile", "swap file"];

fn changed_count(doc: &Value) -> u64 {
    doc["hosts"][0]["recap"]["changed"].as_u64().unwrap()
}

/// The gpu-node playbook's end state, read from the live system.
fn assert_converged(vm: &TestVm) {
    assert_eq!(swap_devices(vm), ["/swapfile"]);
    assert_swap_file_allocated(vm, "/swapfile", SWAP_BYTES);
    assert_eq!(vm.ssh_ok("sysctl -n vm.swappiness"), "10\n");
    assert_eq!(vm.ssh_ok("sysctl -n vm.overcommit_memory"), "1\n");
    for (service, port) in [("httpd", 80), ("mysqld", 3306)] {
        // A daemon killed by `systemctl stop` may leave the unit "failed":
        // not running either way, which is what compliance asks.
        let state = unit_state(vm, service);
        assert!(
            ["disabled inactive", "disabled failed"].contains(&state.as_str()),
            "{service}: {state}"
        );
        assert_eq!(
            answer_on_port(vm, port),
            None,
            "{service} port {port} closed"
        );
    }
    let boot_file = vm.ssh_ok("cat /etc/sysctl.d/90-gpu-node.conf");
    assert!(
        boot_file.contains("vm.swappiness") && boot_file.contains("vm.overcommit_memory"),
        "{boot_file}"
    );
    for dir in ["/etc/profile.d", "/etc/ld.so.conf.d"] {
        let mentions = vm.ssh_ok(&format!("grep -rl /usr/local/cuda {dir} || true"));
        assert!(!mentions.trim().is_empty(), "no CUDA file in {dir}");
    }
}

/// The kernel refuses swap files with holes; so must the module, by never
/// creating one: every byte is allocated.
fn assert_swap_file_allocated(vm: &TestVm, path: &str, bytes: u64) {
    let stat = vm.ssh_ok(&format!("stat -c '%s %b %B' {path}"));
    let v: Vec<u64> = stat
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(v[0], bytes, "{path} size");
    assert!(v[1] * v[2] >= bytes, "{path} has holes: {stat}");
}

#[test]
#[ignore = "boots a VM; scripts/test.sh runs it beside the other tests"]
fn gpu_node_converges_on_a_real_vm_and_survives_reboot_drift_and_power_loss() {
    let vm = TestVm::start();
    // The VM itself first: what every run below takes for granted.
    assert_baseline(&vm);
    assert_accounts(&vm);
    install_toolkit_layout(&vm);
    let np = Nodeprov::new(&vm);

    check_lists_every_drift_and_changes_nothing(&vm, &np);
    apply_as_password_sudo_user_converges(&vm, &np);

    let (code, doc) = np.gpu_node("apply", &np.root);
    assert_eq!((code, changed_count(&doc)), (0, 0), "{:?}", touched(&doc));
    assert_eq!(np.gpu_node("check", &np.root).0, 0);
    let converged_etc = vm.etc_digest();

    vm.reboot();
    let (code, doc) = np.gpu_node("check", &np.root);
    assert_eq!(code, 0, "after reboot: {:?}", touched(&doc));
    assert_converged(&vm);
    tuned_profile_is_reported_and_loses_to_our_file(&np);
    a_later_file_that_shadows_ours_is_named(&vm, &np);

    hand_made_drift_is_named_and_repaired(&vm, &np);
    power_loss_mid_apply_then_converges(&vm, &np, &converged_etc);
}

/// The VM's tuned profile sets vm.swappiness=30; with tuned's default
/// `reapply_sysctl=1` the files in /etc/sysctl.d win, so ours decides, and
/// the report says both.
fn tuned_profile_is_reported_and_loses_to_our_file(np: &Nodeprov) {
    let (code, doc) = np.gpu_node("check", &np.root);
    assert_eq!(code, 0);
    let notes = task_notes(&doc, "Memory sysctls, live and at boot");
    assert!(
        notes.contains("nodeprov-test") && notes.contains("/etc/sysctl.d/90-gpu-node.conf"),
        "{notes}"
    );
}

/// A file sorting after ours takes the boot value: drift, naming that file.
fn a_later_file_that_shadows_ours_is_named(vm: &TestVm, np: &Nodeprov) {
    vm.ssh_ok("echo 'vm.swappiness = 60' > /etc/sysctl.d/99-zz-local.conf");
    let (code, doc) = np.gpu_node("check", &np.root);
    assert_eq!(code, 2, "{:?}", touched(&doc));
    let evidence = doc.to_string();
    assert!(evidence.contains("99-zz-local.conf"), "{:?}", touched(&doc));
    vm.ssh_ok("rm /etc/sysctl.d/99-zz-local.conf");
}

fn task_notes(doc: &Value, task: &str) -> String {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == task)
        .map(|t| t["notes"].to_string())
        .unwrap_or_default()
}

/// The VM has no GPU; `cuda_env` needs a toolkit's layout to point at. This
/// one is laid out like CUDA 13 under alternatives-style links, with an
/// `nvcc` that answers with a real H200 host's version text.
fn install_toolkit_layout(vm: &TestVm) {
    let version = include_str!("fixtures/gpu-h200/nvcc-version.txt");
    let dir = "/usr/local/cuda-13.0";
    vm.ssh_ok(&format!(
        "mkdir -p {dir}/bin {dir}/lib64 {dir}/targets/x86_64-linux/lib\n\
         cat > {dir}/nvcc-version.txt <<'EOF'\n{version}EOF\n\
         printf '#!/bin/sh\\ncat {dir}/nvcc-version.txt\\n' > {dir}/bin/nvcc\n\
         chmod 755 {dir}/bin/nvcc && ln -sfn {dir} /usr/local/cuda"
    ));
    assert!(vm
        .ssh_ok("/usr/local/cuda/bin/nvcc --version")
        .contains("release 13.0"));
}

fn check_lists_every_drift_and_changes_nothing(vm: &TestVm, np: &Nodeprov) {
    let before = vm.state_digest();
    let (code, doc) = np.gpu_node("check", &np.root);
    let drift = touched(&doc);
    assert_eq!(code, 2, "{drift:?}");
    for what in [
        SWAP_FILE,
        &["swappiness"],
        &["overcommit"],
        &["httpd"],
        &["mysqld"],
        &["cuda"],
    ] {
        assert!(names(&drift, what), "no drift about {what:?} in {drift:?}");
    }
    assert_eq!(vm.state_digest(), before, "check changed the VM");
}

fn apply_as_password_sudo_user_converges(vm: &TestVm, np: &Nodeprov) {
    let (code, doc) = np.gpu_node("apply", &np.deploy);
    assert_eq!(code, 0, "{doc:#}");
    assert_converged(vm);
}

fn hand_made_drift_is_named_and_repaired(vm: &TestVm, np: &Nodeprov) {
    vm.ssh_ok("swapoff -a && sysctl -w vm.swappiness=60 && systemctl enable --now httpd");
    let (code, doc) = np.gpu_node("check", &np.root);
    let drift = touched(&doc);
    assert_eq!(code, 2, "{drift:?}");
    assert_eq!(
        drift.len(),
        3,
        "exactly the three hand-made drifts: {drift:?}"
    );
    assert!(names(&drift, SWAP_FILE), "{drift:?}");
    assert!(names(&drift, &["swappiness"]), "{drift:?}");
    assert!(names(&drift, &["httpd"]), "{drift:?}");
    assert!(
        !names(&drift, &["mysqld", "overcommit", "cuda"]),
        "{drift:?}"
    );

    let (code, doc) = np.gpu_node("apply", &np.root);
    assert_eq!(code, 0, "{doc:#}");
    assert_converged(vm);
}

/// Pulls the plug in the middle of an apply that has real work to do, at the
/// moment the new swap file appears (while it is being filled), not after a
/// guessed delay that a faster or slower run would miss: the run reports the
/// host unreachable (exit 4), and after a restart an apply converges to
/// exactly the state a clean run leaves, with no torn or stray file in /etc.
fn power_loss_mid_apply_then_converges(vm: &TestVm, np: &Nodeprov, converged_etc: &str) {
    vm.ssh_ok("echo survives > /root/marker && sync");
    vm.ssh_ok(
        "swapoff -a && rm -f /swapfile && sysctl -w vm.overcommit_memory=0 \
         && systemctl enable --now httpd mysqld",
    );
    let mut child = np
        .command("apply", Path::new(GPU_NODE), &np.root, &GPU_NODE_VARS)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nodeprov");
    loop {
        if vm.ssh("test -e /swapfile").status.success() {
            break;
        }
        if child.try_wait().expect("poll nodeprov").is_some() {
            let out = child.wait_with_output().expect("nodeprov output");
            panic!(
                "the apply finished before the swap file appeared:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        sleep(Duration::from_millis(100));
    }
    vm.power_off_hard();
    let out = child.wait_with_output().expect("nodeprov finishes");
    let (code, doc) = report("apply", &out.stdout, &out.stderr, out.status.code());
    assert_eq!(code, 4, "{doc:#}");
    assert!(doc["hosts"][0]["unreachable"].is_string(), "{doc:#}");

    vm.restart();
    assert_eq!(
        vm.ssh_ok("cat /root/marker"),
        "survives\n",
        "synced before the power loss"
    );
    let (code, doc) = np.gpu_node("apply", &np.root);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(np.gpu_node("check", &np.root).0, 0);
    assert_converged(vm);
    assert_eq!(
        vm.etc_digest(),
        converged_etc,
        "/etc differs from a clean run's"
    );
}

const SWAP_PLAYBOOK: &str = "\
- name: Swap files on XFS and btrfs
  hosts: all
  become: true
  vars:
    swap_size: 64M
    swap_state: present
  tasks:
    - name: Swap file on XFS
      swapfile:
        path: /mnt/xfs/swapfile
        size: \"{{ swap_size }}\"
        state: \"{{ swap_state }}\"
    - name: Swap file on btrfs
      swapfile:
        path: /mnt/btrfs/swapfile
        size: \"{{ swap_size }}\"
        state: \"{{ swap_state }}\"
";

const DATA_SWAP_FILES: [&str; 2] = ["/mnt/xfs/swapfile", "/mnt/btrfs/swapfile"];

#[test]
#[ignore = "boots a VM; scripts/test.sh runs it beside the other tests"]
fn swapfile_module_on_xfs_and_btrfs() {
    let vm = TestVm::start();
    let np = Nodeprov::new(&vm);
    let dir = tempfile::tempdir().unwrap();
    let playbook = dir.path().join("swap.yml");
    std::fs::write(&playbook, SWAP_PLAYBOOK).unwrap();
    let apply = |vars: &[&str]| np.run("apply", &playbook, &np.root, vars);

    let (code, doc) = apply(&[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_data_swap_files(&vm, 64 << 20);

    let (code, doc) = apply(&["-e", "swap_size=96M"]);
    assert_eq!((code, changed_count(&doc)), (0, 2), "resize: {doc:#}");
    assert_data_swap_files(&vm, 96 << 20);
    let (code, doc) = apply(&["-e", "swap_size=96M"]);
    assert_eq!((code, changed_count(&doc)), (0, 0), "{:?}", touched(&doc));

    reboot_task_reboots_once_and_the_play_goes_on(&vm, &np);
    assert_data_swap_files(&vm, 96 << 20);
    module_unloads_once_and_a_hand_load_is_drift(&vm, &np);
    nouveau_blacklist_rebuilds_the_initramfs_and_reboots_once(&vm, &np);

    let (code, doc) = apply(&["-e", "swap_state=absent"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(swap_devices(&vm), Vec::<String>::new());
    for path in DATA_SWAP_FILES {
        let gone = !vm.ssh(&format!("test -e {path}")).status.success();
        assert!(gone, "{path} left behind");
    }
    assert!(
        !vm.ssh("grep -q '^/mnt/.*/swapfile' /etc/fstab")
            .status
            .success(),
        "fstab still names a removed swap file"
    );
}

/// A sysctl change that asks for a reboot, Ansible's usual pattern. The
/// play goes on over a new session after the reboot, the value set before
/// it is verified after it, and a second run changes nothing and so does
/// not reboot.
const REBOOT_PLAYBOOK: &str = "\
- hosts: all
  become: true
  tasks:
    - name: Boot before
      command: cat /proc/sys/kernel/random/boot_id
      register: before
      changed_when: false
    - name: Dirty ratio
      sysctl:
        name: vm.dirty_background_ratio
        value: '7'
        sysctl_file: /etc/sysctl.d/95-reboot-test.conf
      register: ratio
    - name: Dummy interfaces at boot
      modprobe:
        name: dummy
        params: numdummies=2
        persistent: present
    - name: Reboot for it
      reboot:
        reboot_timeout: 1500
        connect_timeout: 60
      when: ratio.changed
      register: rebooted
    - name: Wait
      wait_for_connection:
        timeout: 120
    - name: Boot after
      command: cat /proc/sys/kernel/random/boot_id
      register: after
      changed_when: false
    - name: Rebooted exactly when the ratio changed
      assert:
        that: (before.stdout != after.stdout) == ratio.changed
";

/// The driver role's nouveau part (gpu-node.yml `--tags nouveau`) on a
/// kernel with nouveau loaded: the blacklist lands in a rebuilt initramfs,
/// the host reboots once and comes back without nouveau, and a second run
/// neither rebuilds nor reboots.
fn nouveau_blacklist_rebuilds_the_initramfs_and_reboots_once(vm: &TestVm, np: &Nodeprov) {
    vm.ssh_ok("modprobe nouveau && test -d /sys/module/nouveau");
    let initrd = "/boot/initrd.img-$(uname -r)";
    let built = || vm.ssh_ok(&format!("stat -c %Y {initrd}"));
    let boot = || vm.ssh_ok("cat /proc/sys/kernel/random/boot_id");
    let (first_build, first_boot) = (built(), boot());
    let vars = [
        "--tags",
        "nouveau",
        "-e",
        "gpu_validate=false",
        "-e",
        "nvidia_reboot_timeout=1500",
    ];
    let (code, doc) = np.run("apply", Path::new(GPU_NODE), &np.root, &vars);
    assert_eq!(code, 0, "{doc:#}");
    assert!(
        task_notes(&doc, "Reboot into the nvidia module").contains("rebooted; back after "),
        "{doc:#}"
    );
    assert_ne!(boot(), first_boot, "the VM did not reboot");
    vm.settle();
    let loaded = vm.ssh("test -d /sys/module/nouveau").status.success();
    assert!(!loaded, "nouveau is loaded after the reboot");
    assert_ne!(built(), first_build, "the initramfs was not rebuilt");
    let listed = vm.ssh_ok(&format!("lsinitramfs {initrd}"));
    assert!(
        listed.contains("etc/modprobe.d/blacklist-nouveau.conf"),
        "the blacklist is not in the initramfs"
    );
    let (second_build, second_boot) = (built(), boot());
    let (code, doc) = np.run("apply", Path::new(GPU_NODE), &np.root, &vars);
    assert_eq!((code, changed_count(&doc)), (0, 0), "{:?}", touched(&doc));
    assert_eq!(boot(), second_boot, "a run with nothing to change rebooted");
    assert_eq!(
        built(),
        second_build,
        "a run with nothing to change rebuilt"
    );
}

fn reboot_task_reboots_once_and_the_play_goes_on(vm: &TestVm, np: &Nodeprov) {
    let dir = tempfile::tempdir().unwrap();
    let playbook = dir.path().join("reboot.yml");
    std::fs::write(&playbook, REBOOT_PLAYBOOK).unwrap();
    let boot = || vm.ssh_ok("cat /proc/sys/kernel/random/boot_id");
    let first_boot = boot();

    let (code, doc) = np.run("apply", &playbook, &np.root, &[]);
    assert_eq!(code, 0, "{doc:#}");
    let notes = task_notes(&doc, "Reboot for it");
    assert!(notes.contains("rebooted; back after "), "{doc:#}");
    let second_boot = boot();
    assert_ne!(first_boot, second_boot, "the VM did not reboot");
    // Swap units start after sshd; compare the settled boot.
    vm.settle();
    let live = vm.ssh_ok("cat /proc/sys/vm/dirty_background_ratio");
    assert_eq!(live.trim(), "7", "the value did not survive the reboot");
    // Loaded again at boot, by systemd from modules-load.d.
    let loaded = vm.ssh("grep -q '^dummy ' /proc/modules").status.success();
    let why = "cat /etc/modules-load.d/dummy.conf /etc/modprobe.d/dummy.conf";
    assert!(
        loaded,
        "dummy was not loaded at boot:\n{}",
        String::from_utf8_lossy(&vm.ssh(why).stdout)
    );
    eprintln!("vm: reboot task: {notes}");

    let (code, doc) = np.run("apply", &playbook, &np.root, &[]);
    assert_eq!((code, changed_count(&doc)), (0, 0), "{:?}", touched(&doc));
    assert_eq!(boot(), second_boot, "a run with nothing to change rebooted");
}

const UNLOAD_PLAYBOOK: &str = "\
- hosts: all
  become: true
  tasks:
    - name: No dummy interfaces
      modprobe: {name: dummy, state: absent, persistent: absent}
";

/// The module the reboot play loaded on a real kernel leaves it, and its
/// boot files go; loading it again by hand is drift that check leaves.
fn module_unloads_once_and_a_hand_load_is_drift(vm: &TestVm, np: &Nodeprov) {
    let dir = tempfile::tempdir().unwrap();
    let playbook = dir.path().join("unload.yml");
    std::fs::write(&playbook, UNLOAD_PLAYBOOK).unwrap();
    let loaded = || vm.ssh("grep -q '^dummy ' /proc/modules").status.success();

    let (code, doc) = np.run("apply", &playbook, &np.root, &[]);
    assert_eq!((code, changed_count(&doc)), (0, 1), "{doc:#}");
    assert!(!loaded(), "dummy is still loaded");
    let files = "ls /etc/modules-load.d/dummy.conf /etc/modprobe.d/dummy.conf";
    assert!(!vm.ssh(files).status.success(), "boot files left behind");
    let (code, doc) = np.run("apply", &playbook, &np.root, &[]);
    assert_eq!((code, changed_count(&doc)), (0, 0), "{:?}", touched(&doc));

    vm.ssh_ok("modprobe dummy");
    let (code, doc) = np.run("check", &playbook, &np.root, &[]);
    assert_eq!(code, 2, "{doc:#}");
    assert!(names(&touched(&doc), &["dummy"]), "{:?}", touched(&doc));
    assert!(loaded(), "check unloaded the module");
    vm.ssh_ok("modprobe -r dummy");
}

fn assert_data_swap_files(vm: &TestVm, bytes: u64) {
    let mut active = swap_devices(vm);
    active.sort();
    assert_eq!(active, ["/mnt/btrfs/swapfile", "/mnt/xfs/swapfile"]);
    for path in DATA_SWAP_FILES {
        assert_swap_file_allocated(vm, path, bytes);
    }
}

// ---------------------------------------------------------------------------
// SELinux enforcing, as EL GPU nodes run it.

/// On an enforcing host the boot's `swapon` (systemd's swap units, in the
/// `fsadm_t` domain) is denied a file without the `swapfile_t` type. mkswap
/// sets that type, but only on the file: the policy does not know it, so a
/// relabel (`restorecon`, `fixfiles`, an autorelabel) takes it away and swap
/// is gone after the next boot. nodeprov records the type in the policy
/// (`semanage fcontext`), so its swap file keeps the label through a
/// relabel and comes back at boot.
#[test]
#[ignore = "boots a VM; scripts/test.sh runs it beside the other tests"]
fn selinux_enforcing_host_gets_a_labelled_swap_file_that_survives_reboot() {
    let vm = TestVm::start_selinux_enforcing();
    assert_eq!(vm.ssh_ok("getenforce"), "Enforcing\n");
    vm.ssh_ok(
        "fallocate -l 16M /hand-made && chmod 600 /hand-made && mkswap /hand-made >/dev/null",
    );
    assert!(
        vm.ssh_ok("ls -Z /hand-made").contains(":swapfile_t:"),
        "mkswap labels the file"
    );
    vm.ssh_ok("restorecon -F /hand-made");
    let relabelled = vm.ssh_ok("ls -Z /hand-made");
    assert!(!relabelled.contains(":swapfile_t:"), "{relabelled}");
    // As systemd activates swap at boot, not as the unconfined login shell.
    let denied = vm.ssh("systemd-run --wait -p Type=oneshot /sbin/swapon /hand-made");
    assert!(
        !denied.status.success(),
        "a swap file without swapfile_t must be denied: {relabelled} {}",
        vm.ssh_ok("cat /proc/swaps")
    );
    let avc = vm.ssh_ok("journalctl -k --no-pager | grep 'avc:  denied' | grep swapon || true");
    assert!(
        avc.contains("fsadm_t") && avc.contains("default_t"),
        "{avc}"
    );

    install_toolkit_layout(&vm);
    let np = Nodeprov::new(&vm);
    let (code, report) = np.gpu_node("apply", &np.root);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(swap_devices(&vm), ["/swapfile"], "{report:#}");
    assert!(
        vm.ssh_ok("ls -Z /swapfile").contains(":swapfile_t:"),
        "{}",
        vm.ssh_ok("ls -Z /swapfile")
    );
    assert!(
        vm.ssh_ok("semanage fcontext -l -C").contains("swapfile_t"),
        "the label is recorded in the policy, so restorecon keeps it"
    );
    vm.ssh_ok("restorecon -F /swapfile");
    assert!(
        vm.ssh_ok("ls -Z /swapfile").contains(":swapfile_t:"),
        "a relabel keeps it"
    );

    vm.reboot();
    assert_eq!(vm.ssh_ok("getenforce"), "Enforcing\n");
    assert_eq!(swap_devices(&vm), ["/swapfile"]);
    let (code, report) = np.gpu_node("check", &np.root);
    assert_eq!(code, 0, "clean after reboot: {report:#}");
}
