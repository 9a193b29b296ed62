//! The bare-to-validated path of `playbooks/gpu-node.yml` (role
//! `nvidia_gpu`) with the real dnf/rpm inside isolated EL hosts, against a
//! signed repository the test builds, named and laid out like NVIDIA's
//! (`tests/fixtures/nvidia-repo/build-rpms.sh`): the driver's module
//! streams, fabric manager, CUDA toolkits and kernel-devel of the host's
//! running kernel. The host's own /usr takes the packages' files.
//!
//! What the kernel shows is faked per run, inside the host's mount
//! namespace: `uname -r` answers an EL kernel, /sys/bus/pci/devices holds
//! an NVIDIA GPU (and NVSwitches on an HGX host), /sys/module says the
//! nvidia module is loaded. The initramfs command is a stand-in that counts
//! its runs; the reboot itself is proven on a VM (`tests/vm_e2e.rs`).

mod support;

use serde_json::Value;
use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const PLAYBOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/gpu-node.yml");
const BUILD_RPMS: &str = include_str!("fixtures/nvidia-repo/build-rpms.sh");
const BUILD_DEBS: &str = include_str!("fixtures/nvidia-repo/build-debs.sh");
const BUILD_WHEELS: &str = include_str!("fixtures/nvidia-repo/build-wheel-index.sh");

fn write_exec(host: &IsolatedHost, path: &str, body: &str) {
    let file = host.path(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, body).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// The layouts the role installs on, each with its repository builder and
/// a running kernel of its own.
#[derive(Clone, Copy)]
enum Family {
    El,
    Ubuntu,
}

impl Family {
    fn kernel(self) -> &'static str {
        match self {
            Family::El => "5.14.0-427.13.1.el9_4.x86_64",
            Family::Ubuntu => "5.15.0-91-generic",
        }
    }
}

/// A host of `family` with NVIDIA's repository at file:///tmp/nvidia, one
/// GPU on its PCI bus, and `nvswitches` NVSwitches beside it.
fn gpu_host(family: Family, nvswitches: usize) -> IsolatedHost {
    let (host, build) = match family {
        Family::El => {
            let host = IsolatedHost::el().with_own_usr();
            std::fs::remove_file(host.path("/etc/yum.repos.d/local.repo")).unwrap();
            (host, BUILD_RPMS)
        }
        Family::Ubuntu => {
            let host = IsolatedHost::ubuntu().with_own_usr();
            std::fs::remove_file(host.path("/etc/apt/sources.list.d/local.list")).unwrap();
            (host, BUILD_DEBS)
        }
    };
    let kernel = family.kernel();
    write_exec(
        &host,
        "/root/bin/uname",
        &format!("#!/bin/sh\n[ \"$1\" = -r ] && exec echo {kernel}\nexec /usr/bin/uname \"$@\"\n"),
    );
    write_exec(
        &host,
        "/root/bin/initramfs-stub",
        "#!/bin/sh\necho run >>/root/initramfs-runs\n",
    );
    let mut functions = vec![("0000:18:00.0", "0x030200")];
    let switches: Vec<String> = (0..nvswitches)
        .map(|i| format!("0000:0{}:00.0", i + 5))
        .collect();
    functions.extend(switches.iter().map(|s| (s.as_str(), "0x068000")));
    for (slot, class) in functions {
        let dir = host.path(&format!("/root/pci/{slot}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), "0x10de\n").unwrap();
        std::fs::write(dir.join("class"), format!("{class}\n")).unwrap();
    }
    std::fs::create_dir_all(host.path("/root/sys-module/nvidia/parameters")).unwrap();
    host.sh(&format!(
        "sh -s /tmp/nvidia {kernel} <<'BUILD'\n{build}\nBUILD\n"
    ));
    host
}

/// A driver already running on the host, installed by no package (a
/// runfile): nvidia-smi answers with its version and one GPU.
fn with_running_driver(host: &IsolatedHost, version: &str) {
    write_exec(
        host,
        "/root/bin/nvidia-smi",
        &format!(
            "#!/bin/sh\ncase \"$*\" in\n*driver_version*) echo {version} ;;\n\
             -L) echo 'GPU 0: NVIDIA H200 (UUID: GPU-039f01f0)' ;;\nesac\n"
        ),
    );
}

/// Runs the playbook with `cmd` under the faked kernel view.
fn run(host: &IsolatedHost, cmd: &str, extra: &[&str]) -> (i32, Value) {
    let script = "mount -n --bind /root/pci /sys/bus/pci/devices && \
                  mount -n --bind /root/sys-module /sys/module && \
                  PATH=/root/bin:$PATH exec \"$@\"";
    let mut argv = vec![
        "/bin/sh",
        "-c",
        script,
        "sh",
        BIN,
        cmd,
        PLAYBOOK,
        "-c",
        "local",
        "--format",
        "json",
        "--skip-tags",
        "swap",
        "-e",
        "gpu_validate=false",
        "-e",
        "nvidia_repo_base=file:///tmp/nvidia",
        "-e",
        "nvidia_initramfs_command=/root/bin/initramfs-stub",
    ];
    argv.extend_from_slice(extra);
    run_json(host, &argv)
}

fn task<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == name)
        .unwrap_or_else(|| panic!("no task {name}: {}", summary(doc)))
}

/// A task's changes, but for the cache refresh that precedes any install.
fn subjects(doc: &Value, name: &str) -> Vec<String> {
    task(doc, name)["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["subject"] != "package cache")
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c["subject"].as_str().unwrap(),
                c["before"],
                c["after"]
            )
        })
        .collect()
}

/// One line per task that did something: status, name, message, changes.
fn summary(doc: &Value) -> String {
    doc["hosts"][0]["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["status"] != "ok" && t["status"] != "skipped")
        .map(|t| {
            format!(
                "{} {}: {} {}",
                t["status"].as_str().unwrap_or_default(),
                t["task"].as_str().unwrap_or_default(),
                t["message"].as_str().unwrap_or_default(),
                t["changes"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn recap(doc: &Value, what: &str) -> u64 {
    doc["hosts"][0]["recap"][what].as_u64().unwrap()
}

#[test]
fn a_bare_el_host_gets_driver_toolkit_and_kernel_headers_and_stays_converged() {
    let before = machine_digest();
    let host = gpu_host(Family::El, 0);

    let (code, check) = run(&host, "check", &[]);
    assert_eq!(code, 2, "{}", summary(&check));
    assert_eq!(
        subjects(&check, "NVIDIA driver (module stream)"),
        [r#"module nvidia-driver: "not enabled" -> "570-open""#],
        "{}",
        summary(&check)
    );
    assert_eq!(
        subjects(&check, "CUDA toolkit for PyTorch's CUDA build")[0],
        r#"package cuda-toolkit-12-8: "absent" -> "installed""#
    );
    let headers = subjects(&check, "Kernel headers of the running kernel").join("\n");
    assert!(headers.contains("package kernel-devel:"), "{headers}");
    assert_eq!(
        task(
            &check,
            "Fabric manager of the driver's branch (NVSwitch systems)"
        )["status"],
        "skipped",
        "no NVSwitch on this host's bus"
    );
    assert_eq!(
        host.rpm_version("nvidia-driver"),
        "package nvidia-driver is not installed"
    );

    let (code, first) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{}", summary(&first));
    assert_eq!(recap(&first, "failed"), 0, "{}", summary(&first));
    assert_eq!(host.rpm_version("nvidia-driver"), "570.86.15-1.el9");
    assert_eq!(host.rpm_version("kernel-devel"), "5.14.0-427.13.1.el9_4");
    assert_eq!(host.rpm_version("cuda-toolkit-12-8"), "12.8.0-1");
    assert_eq!(
        host.rpm_version("nvidia-fabricmanager-570"),
        "package nvidia-fabricmanager-570 is not installed"
    );
    let signed = host.sh("rpm -qi nvidia-driver");
    assert!(
        signed.contains("Key ID"),
        "installed from the signed repository: {signed}"
    );
    assert!(host
        .sh("dnf -C -q module list --enabled nvidia-driver")
        .contains("570-open"));
    let blacklist =
        std::fs::read_to_string(host.path("/etc/modprobe.d/blacklist-nouveau.conf")).unwrap();
    assert_eq!(blacklist, "blacklist nouveau\noptions nouveau modeset=0\n");
    assert_eq!(
        host.sh("cat /root/initramfs-runs"),
        "run\n",
        "initramfs rebuilt once"
    );
    assert_eq!(
        task(&first, "Reboot into the nvidia module")["status"],
        "skipped",
        "the nvidia module is loaded: no reboot"
    );
    let profile = std::fs::read_to_string(host.path("/etc/profile.d/cuda.sh")).unwrap();
    assert!(profile.contains("CUDA_HOME=/usr/local/cuda"), "{profile}");

    let (code, second) = run(&host, "apply", &[]);
    assert_eq!(
        (code, recap(&second, "changed")),
        (0, 0),
        "{}",
        summary(&second)
    );
    assert_eq!(
        host.sh("cat /root/initramfs-runs"),
        "run\n",
        "no second rebuild"
    );
    let (code, clean) = run(&host, "check", &[]);
    assert_eq!(code, 0, "{}", summary(&clean));
    // Facts first, then what the kernel's and distribution's names ask.
    assert_eq!(clean["hosts"][0]["round_trips"], 2, "{}", summary(&clean));

    // Another PyTorch release: the plan names the toolkit it moves to.
    let (code, moved) = run(&host, "check", &["-e", "pytorch_version=2.6"]);
    assert_eq!(code, 2, "{}", summary(&moved));
    assert_eq!(
        subjects(&moved, "CUDA toolkit for PyTorch's CUDA build"),
        [r#"package cuda-toolkit-12-6: "absent" -> "installed""#],
        "{}",
        summary(&moved)
    );
    assert_eq!(
        recap(&moved, "drift"),
        1,
        "only the toolkit moves: {}",
        summary(&moved)
    );
    assert_machine_unchanged(&before);
}

#[test]
fn a_driver_branch_too_old_for_the_toolkit_is_refused_before_any_change() {
    let before = machine_digest();
    let host = gpu_host(Family::El, 0);
    let (code, doc) = run(&host, "apply", &["-e", "nvidia_driver_branch=550"]);
    assert_eq!(code, 4, "{}", summary(&doc));
    let refused = task(&doc, "Driver branch runs the CUDA toolkit");
    assert_eq!(refused["status"], "failed", "{}", summary(&doc));
    let msg = refused["message"].as_str().unwrap();
    assert!(
        msg.contains("driver branch 550 cannot run CUDA 12.8, which needs driver >= 570.26")
            && msg.contains("set nvidia_driver_branch to 570 or later"),
        "{msg}"
    );
    assert_eq!(recap(&doc, "changed"), 0, "{}", summary(&doc));
    assert!(!host
        .path("/etc/yum.repos.d/cuda-rhel9-x86_64.repo")
        .exists());
    // The same branch runs an older toolkit: PyTorch 2.4's CUDA 12.4.
    let (code, doc) = run(
        &host,
        "check",
        &[
            "-e",
            "nvidia_driver_branch=550",
            "-e",
            "pytorch_version=2.4",
        ],
    );
    assert_eq!(code, 2, "{}", summary(&doc));
    assert_eq!(
        subjects(&doc, "NVIDIA driver (module stream)"),
        [r#"module nvidia-driver: "not enabled" -> "550-open""#]
    );
    assert_machine_unchanged(&before);
}

#[test]
fn an_nvswitch_host_gets_the_fabric_manager_of_its_driver_branch() {
    let before = machine_digest();
    let host = gpu_host(Family::El, 2);
    let (code, check) = run(&host, "check", &[]);
    assert_eq!(code, 2, "{}", summary(&check));
    assert_eq!(
        subjects(
            &check,
            "Fabric manager of the driver's branch (NVSwitch systems)"
        ),
        [r#"package nvidia-fabricmanager-570: "absent" -> "installed""#],
        "{}",
        summary(&check)
    );
    let (code, doc) = run(&host, "apply", &["--tags", "driver"]);
    assert_eq!(code, 0, "{}", summary(&doc));
    assert_eq!(host.rpm_version("nvidia-fabricmanager-570"), "570.86.15-1");
    assert_machine_unchanged(&before);
}

#[test]
fn a_bare_ubuntu_host_gets_the_keyring_driver_and_toolkit_from_the_configured_mirror() {
    let before = machine_digest();
    let host = gpu_host(Family::Ubuntu, 0);
    let list = "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list";

    let (code, check) = run(&host, "check", &[]);
    assert_eq!(code, 2, "{}", summary(&check));
    assert_eq!(
        subjects(&check, "NVIDIA driver"),
        [r#"package nvidia-open-570: "absent" -> "installed""#],
        "{}",
        summary(&check)
    );
    let keyring = &task(&check, "NVIDIA's signing key (cuda-keyring)");
    assert_eq!(keyring["status"], "unknown", "{}", summary(&check));
    assert!(!host.path(list).exists(), "check changed nothing");

    let (code, first) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{}", summary(&first));
    assert_eq!(host.dpkg_status("cuda-keyring"), "ii 1.1-1");
    assert_eq!(
        host.dpkg_status("linux-headers-5.15.0-91-generic"),
        "ii 5.15.0-91.1"
    );
    assert_eq!(host.dpkg_status("nvidia-open-570"), "ii 570.86.15-0ubuntu1");
    assert_eq!(host.dpkg_status("cuda-toolkit-12-8"), "ii 12.8.0-1");
    assert_eq!(host.dpkg_status("nvidia-fabricmanager-570"), "");
    // cuda-keyring's source named NVIDIA's server; the mirror replaced it.
    assert_eq!(
        std::fs::read_to_string(host.path(list)).unwrap(),
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] file:///tmp/nvidia/ubuntu2204/x86_64/ /\n"
    );
    assert_eq!(
        host.sh("cat /root/initramfs-runs"),
        "run\n",
        "initramfs rebuilt once"
    );

    let (code, second) = run(&host, "apply", &[]);
    assert_eq!(
        (code, recap(&second, "changed")),
        (0, 0),
        "{}",
        summary(&second)
    );
    let (code, clean) = run(&host, "check", &[]);
    assert_eq!(code, 0, "{}", summary(&clean));
    let (code, moved) = run(&host, "check", &["-e", "pytorch_version=2.6"]);
    assert_eq!(code, 2, "{}", summary(&moved));
    assert_eq!(
        subjects(&moved, "CUDA toolkit for PyTorch's CUDA build"),
        [r#"package cuda-toolkit-12-6: "absent" -> "installed""#],
        "{}",
        summary(&moved)
    );
    assert_machine_unchanged(&before);
}

#[test]
fn a_running_driver_that_runs_the_toolkit_is_kept_and_an_older_one_is_not() {
    let before = machine_digest();
    let host = gpu_host(Family::El, 0);
    with_running_driver(&host, "580.65.06");
    let (code, check) = run(&host, "check", &[]);
    assert_eq!(code, 2, "{}", summary(&check));
    let kept = task(&check, "Running driver kept");
    assert_eq!(kept["status"], "ok", "{}", summary(&check));
    for skipped in [
        "Driver branch runs the CUDA toolkit",
        "Kernel headers of the running kernel",
        "NVIDIA driver (module stream)",
    ] {
        assert_eq!(
            task(&check, skipped)["status"],
            "skipped",
            "{skipped}: {}",
            summary(&check)
        );
    }
    assert_eq!(
        subjects(&check, "CUDA toolkit for PyTorch's CUDA build"),
        [r#"package cuda-toolkit-12-8: "absent" -> "installed""#]
    );
    let (code, applied) = run(&host, "apply", &[]);
    assert_eq!(code, 0, "{}", summary(&applied));
    assert_eq!(
        host.rpm_version("nvidia-driver"),
        "package nvidia-driver is not installed"
    );
    assert_eq!(host.rpm_version("cuda-toolkit-12-8"), "12.8.0-1");

    // A running 550 cannot run CUDA 12.8: the configured branch is installed.
    with_running_driver(&host, "550.144.03");
    let (code, older) = run(&host, "check", &[]);
    assert_eq!(code, 2, "{}", summary(&older));
    assert_eq!(task(&older, "Running driver kept")["status"], "skipped");
    assert_eq!(
        subjects(&older, "NVIDIA driver (module stream)"),
        [r#"module nvidia-driver: "not enabled" -> "570-open""#]
    );
    assert_machine_unchanged(&before);
}

#[test]
fn pytorch_comes_from_the_wheel_index_of_the_toolkits_cuda_build() {
    let before = machine_digest();
    let host = gpu_host(Family::El, 0);
    host.sh(&format!(
        "sh -s /tmp/whl <<'BUILD'\n{BUILD_WHEELS}\nBUILD\n"
    ));
    let vars = [
        "-e",
        "pytorch_install=true",
        "-e",
        "pytorch_venv=/root/torch",
        "-e",
        "pytorch_index_base=file:///tmp/whl",
        "--tags",
        "pytorch",
    ];
    let (code, check) = run(&host, "check", &vars);
    assert_eq!(code, 2, "{}", summary(&check));
    assert_eq!(
        task(&check, "PyTorch built for the toolkit's CUDA")["status"],
        "drift",
        "{}",
        summary(&check)
    );
    let (code, applied) = run(&host, "apply", &vars);
    assert_eq!(code, 0, "{}", summary(&applied));
    let cuda = host.sh(
        "/root/torch/bin/python -c 'import torch, torch.version; print(torch.__version__, torch.version.cuda)'",
    );
    assert_eq!(cuda.trim(), "2.7.1+cu128 12.8");
    let (code, again) = run(&host, "apply", &vars);
    assert_eq!(
        (code, recap(&again, "changed")),
        (0, 0),
        "{}",
        summary(&again)
    );

    // A toolkit PyTorch's release has no build for is refused.
    let mut other = vars.to_vec();
    other.extend(["-e", "cuda_version=12.4"]);
    let (code, refused) = run(&host, "check", &other);
    assert_eq!(code & 4, 4, "{}", summary(&refused));
    let msg = task(&refused, "PyTorch has a build for the CUDA toolkit")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("PyTorch 2.7 has no build for CUDA 12.4 (its builds: 11.8, 12.6, 12.8)"),
        "{msg}"
    );
    assert_machine_unchanged(&before);
}
