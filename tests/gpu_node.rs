//! `playbooks/gpu-node.yml` itself, with `-c local` inside isolated hosts:
//! the compliance report of a bare host, then apply, apply again, check.
//! Swap is global to the kernel, so these hosts skip the `swap` tag; the
//! swap file is proven on real VMs (`tests/vm_e2e.rs`).

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const PLAYBOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/gpu-node.yml");

/// A host with a toolkit laid out like CUDA 13 under /root/cuda (nvcc
/// answers with the real H200 host's version text).
fn host_with_toolkit() -> IsolatedHost {
    let host = IsolatedHost::new();
    for dir in [
        "/root/cuda/bin",
        "/root/cuda/lib64",
        "/root/cuda/targets/x86_64-linux/lib",
    ] {
        std::fs::create_dir_all(host.path(dir)).unwrap();
    }
    let version = include_str!("fixtures/gpu-h200/nvcc-version.txt");
    let nvcc = host.path("/root/cuda/bin/nvcc");
    std::fs::write(&nvcc, format!("#!/bin/sh\ncat <<'EOF'\n{version}EOF\n")).unwrap();
    std::fs::set_permissions(&nvcc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    host
}

fn run(host: &IsolatedHost, cmd: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut argv = vec![
        BIN,
        cmd,
        PLAYBOOK,
        "-c",
        "local",
        "--format",
        "json",
        "-e",
        "cuda_home=/root/cuda",
        // The driver and toolkit install is tests/gpu_install.rs's, against
        // a repository; these hosts have a toolkit laid out already.
        "-e",
        "nvidia_install=false",
    ];
    argv.extend_from_slice(extra);
    run_json(host, &argv)
}

fn task<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == name)
        .unwrap_or_else(|| panic!("no task {name}: {doc:#}"))
}

#[test]
fn bare_host_check_reports_every_drift_and_the_gpu_failure() {
    let before = machine_digest();
    let host = host_with_toolkit();
    let etc_before = std::fs::read_dir(host.path("/etc/sysctl.d"))
        .map(|d| d.count())
        .unwrap_or(0);
    let (code, doc) = run(&host, "check", &[]);
    assert_eq!(code, 6, "drift and a failed smoke test: {doc:#}");
    assert_eq!(
        task(&doc, "CUDA toolkit on PATH and in the linker cache")["status"],
        "drift"
    );
    assert_eq!(task(&doc, "Swap file")["status"], "drift");
    let sysctl = task(&doc, "Memory sysctls, live and at boot");
    assert_eq!(sysctl["status"], "drift");
    let subjects: Vec<&str> = sysctl["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    for s in [
        "vm.swappiness",
        "vm.swappiness at boot",
        "vm.overcommit_memory",
        "vm.overcommit_memory at boot",
    ] {
        assert!(subjects.contains(&s), "{subjects:?}");
    }
    assert_eq!(
        task(
            &doc,
            "Redundant services disabled and stopped (Debian family)"
        )["status"],
        "ok",
        "no systemd here"
    );
    let smoke = task(&doc, "GPUs answer and compute");
    assert_eq!(smoke["status"], "failed");
    assert!(smoke["message"]
        .as_str()
        .unwrap()
        .contains("no NVIDIA driver"));
    assert_eq!(
        doc["hosts"][0]["round_trips"], 1,
        "a compliance check is one probe"
    );
    assert_eq!(host.sysctl("vm.swappiness"), "60");
    assert_eq!(
        std::fs::read_dir(host.path("/etc/sysctl.d"))
            .map(|d| d.count())
            .unwrap_or(0),
        etc_before
    );
    assert_machine_unchanged(&before);
}

#[test]
fn apply_converges_and_check_is_clean() {
    let before = machine_digest();
    let host = host_with_toolkit();
    let skip = ["--skip-tags", "swap", "-e", "gpu_validate=false"];
    let (code, first) = run(&host, "apply", &skip);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(first["hosts"][0]["recap"]["changed"], 2, "{first:#}");
    assert_eq!(host.sysctl("vm.swappiness"), "10");
    assert_eq!(host.sysctl("vm.overcommit_memory"), "1");
    let profile = std::fs::read_to_string(host.path("/etc/profile.d/cuda.sh")).unwrap();
    assert!(
        profile.contains("CUDA_HOME=/root/cuda\n") && profile.contains("$CUDA_HOME/bin"),
        "{profile}"
    );
    let ld = std::fs::read_to_string(host.path("/etc/ld.so.conf.d/cuda.conf")).unwrap();
    assert!(ld.contains("/root/cuda/lib64"), "{ld}");
    let conf = std::fs::read_to_string(host.path("/etc/sysctl.d/90-gpu-node.conf")).unwrap();
    assert!(
        conf.contains("vm.swappiness = 10\nvm.overcommit_memory = 1\n"),
        "{conf}"
    );

    let (code, second) = run(&host, "apply", &skip);
    assert_eq!(code, 0);
    assert_eq!(second["hosts"][0]["recap"]["changed"], 0, "{second:#}");
    assert_eq!(second["hosts"][0]["round_trips"], 1);
    let tasks = second["hosts"][0]["tasks"].as_array().unwrap();
    let in_role = |t: &&serde_json::Value| {
        t["location"]
            .as_str()
            .is_some_and(|l| l.contains("roles/nvidia_gpu/"))
    };
    assert!(
        tasks
            .iter()
            .filter(in_role)
            .all(|t| t["status"] == "skipped"),
        "nvidia_install=false leaves the install role out: {second:#}"
    );
    let skipped: Vec<&str> = tasks
        .iter()
        .filter(|t| !in_role(t) && t["status"] == "skipped")
        .map(|t| t["task"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [
            "Redundant services disabled and stopped",
            "GPUs answer and compute"
        ],
        "the smoke step and the other family's services are skipped: {second:#}"
    );
    let (code, check) = run(&host, "check", &skip);
    assert_eq!(code, 0, "{check:#}");
    assert_machine_unchanged(&before);
}

/// An EL 9 host as Rocky 9 and NVIDIA's RPMs lay it out: Rocky's release
/// files (tests/fixtures/distro/rocky_9.json), `/etc/sysctl.d/99-sysctl.conf`
/// linked to `../sysctl.conf`, and a CUDA 12.4 toolkit behind the `cuda`
/// alternative (`cuda -> /etc/alternatives/cuda -> cuda-12.4`) whose
/// packages dropped `000_cuda.conf` and `cuda-12-4.conf`. /usr/local is not
/// private to an isolated host, so the toolkit lives under /root.
fn rocky_9_host() -> IsolatedHost {
    use std::os::unix::fs::symlink;
    let host = IsolatedHost::new();
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/distro/rocky_9.json")).unwrap();
    for name in ["os-release", "debian_version", "lsb-release"] {
        let _ = std::fs::remove_file(host.path(&format!("/etc/{name}")));
    }
    for (path, content) in fixture["input"].as_object().unwrap() {
        if path.starts_with("/etc/") {
            std::fs::write(host.path(path), content.as_str().unwrap()).unwrap();
        }
    }
    std::fs::write(host.path("/etc/sysctl.conf"), "# sysctl settings are defined through files in\n# /usr/lib/sysctl.d/, /run/sysctl.d/, and /etc/sysctl.d/.\n").unwrap();
    std::fs::create_dir_all(host.path("/etc/sysctl.d")).unwrap();
    let _ = std::fs::remove_file(host.path("/etc/sysctl.d/99-sysctl.conf"));
    symlink("../sysctl.conf", host.path("/etc/sysctl.d/99-sysctl.conf")).unwrap();
    let lib = "/root/cuda-12.4/targets/x86_64-linux/lib";
    std::fs::create_dir_all(host.path(lib)).unwrap();
    symlink(
        "targets/x86_64-linux/lib",
        host.path("/root/cuda-12.4/lib64"),
    )
    .unwrap();
    std::fs::write(
        host.path("/root/cuda-12.4/version.json"),
        r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.131"}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(host.path("/etc/alternatives")).unwrap();
    symlink("/root/cuda-12.4", host.path("/etc/alternatives/cuda")).unwrap();
    symlink("/etc/alternatives/cuda", host.path("/root/cuda")).unwrap();
    let ld = host.path("/etc/ld.so.conf.d");
    std::fs::create_dir_all(&ld).unwrap();
    std::fs::write(
        ld.join("000_cuda.conf"),
        "/root/cuda/targets/x86_64-linux/lib\n",
    )
    .unwrap();
    std::fs::write(ld.join("cuda-12-4.conf"), format!("{lib}\n")).unwrap();
    host
}

#[test]
fn rocky_9_layout_gets_el_names_and_its_rpm_entries_are_kept() {
    let before = machine_digest();
    let host = rocky_9_host();
    let (code, doc) = run(&host, "check", &[]);
    assert_eq!(code, 6, "drift and a failed smoke test: {doc:#}");
    assert_eq!(doc["hosts"][0]["round_trips"], 1, "still one probe");
    let services = task(&doc, "Redundant services disabled and stopped");
    let notes = services["notes"].to_string();
    assert!(
        notes.contains("httpd.service, mysqld.service"),
        "EL's unit names, picked by ansible_os_family: {services:#}"
    );
    let cuda = task(&doc, "CUDA toolkit on PATH and in the linker cache");
    assert_eq!(cuda["status"], "drift");
    let subjects: Vec<&str> = cuda["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["/etc/profile.d/cuda.sh"], "{cuda:#}");
    assert!(
        cuda["notes"]
            .to_string()
            .contains("000_cuda.conf already makes"),
        "{cuda:#}"
    );
    assert_eq!(
        task(&doc, "Memory sysctls, live and at boot")["status"],
        "drift"
    );

    let skip = ["--skip-tags", "swap", "-e", "gpu_validate=false"];
    let (code, applied) = run(&host, "apply", &skip);
    assert_eq!(code, 0, "{applied:#}");
    assert!(
        !host.path("/etc/ld.so.conf.d/cuda.conf").exists(),
        "no duplicate of the RPMs' entries"
    );
    assert_eq!(
        std::fs::read_link(host.path("/etc/alternatives/cuda")).unwrap(),
        std::path::Path::new("/root/cuda-12.4")
    );
    assert_eq!(
        std::fs::read_link(host.path("/etc/sysctl.d/99-sysctl.conf")).unwrap(),
        std::path::Path::new("../sysctl.conf")
    );
    assert_eq!(host.sysctl("vm.swappiness"), "10");
    let (code, check) = run(&host, "check", &skip);
    assert_eq!(code, 0, "{check:#}");
    assert_machine_unchanged(&before);
}
