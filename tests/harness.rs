//! The isolated-host harness must really isolate: every other integration test
//! trusts it to keep provisioning runs off the developer machine.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::thread;

use support::{assert_machine_unchanged, machine_digest, tree_digest, IsolatedHost};

fn sysctl_bin() -> &'static str {
    ["/usr/sbin/sysctl", "/sbin/sysctl"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sysctl not installed (package procps)")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn assert_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "command failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(out)
}

fn sh(host: &IsolatedHost, script: &str) -> Output {
    host.run(&["/bin/sh", "-c", script])
}

#[test]
fn fresh_host_has_pinned_vm_defaults_and_every_real_vm_knob() {
    let host = IsolatedHost::new();
    assert_eq!(host.sysctl("vm.swappiness"), "60");
    assert_eq!(host.sysctl("vm.overcommit_memory"), "0");
    assert_eq!(host.sysctl("vm.dirty_ratio"), "20");
    assert_eq!(host.sysctl("vm.min_free_kbytes"), "67584");

    let names = |dir: &Path| {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&host.path("/proc/sys/vm")),
        names(Path::new("/proc/sys/vm"))
    );
}

#[test]
fn sysctl_inside_changes_only_the_private_file() {
    let before = machine_digest();
    let real = fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    let host = IsolatedHost::new();

    let out = host.run(&[sysctl_bin(), "-w", "vm.swappiness=10"]);
    assert_eq!(assert_ok(&out), "vm.swappiness = 10");
    assert_eq!(host.sysctl("vm.swappiness"), "10");
    let seen = host.run(&[sysctl_bin(), "-n", "vm.swappiness"]);
    assert_eq!(assert_ok(&seen), "10");

    assert_eq!(fs::read_to_string("/proc/sys/vm/swappiness").unwrap(), real);
    assert_machine_unchanged(&before);
}

#[test]
fn sysctl_walks_the_fake_vm_dir_without_looping() {
    let host = IsolatedHost::new();
    // A disk-backed fake dir made `sysctl -a` recurse forever; timeout catches a relapse.
    let out = host.run(&["timeout", "60", sysctl_bin(), "-a"]);
    let all = assert_ok(&out);
    assert!(all.lines().any(|l| l == "vm.swappiness = 60"), "{all}");
    assert!(!all.contains("vm.//"), "sysctl -a escaped the vm dir");
}

#[test]
fn rest_of_proc_sys_is_read_only() {
    let before = machine_digest();
    let host = IsolatedHost::new();

    let out = sh(&host, "echo nodeprov > /proc/sys/kernel/domainname");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Read-only file system"), "{stderr}");

    let out = host.run(&[sysctl_bin(), "-w", "kernel.domainname=nodeprov"]);
    assert!(!out.status.success(), "sysctl wrote a real kernel setting");

    assert_machine_unchanged(&before);
}

#[test]
fn etc_writes_land_in_the_private_copy() {
    let before = machine_digest();
    let host = IsolatedHost::new();

    let out = sh(
        &host,
        "echo hi > /etc/nodeprov-harness-probe && echo 1 >> /etc/hosts",
    );
    assert_ok(&out);
    let private = host.path("/etc/nodeprov-harness-probe");
    assert_eq!(fs::read_to_string(private).unwrap(), "hi\n");
    assert!(!Path::new("/etc/nodeprov-harness-probe").exists());

    assert_machine_unchanged(&before);
}

#[test]
fn private_etc_starts_as_a_copy_of_the_real_one() {
    let host = IsolatedHost::new();
    let copy = tree_digest(&host.path("/etc"));
    let real = tree_digest(Path::new("/etc"));
    let rebase = |lines: Vec<String>, prefix: &Path| -> Vec<String> {
        let prefix = prefix.display().to_string();
        lines
            .into_iter()
            .map(|l| l.replacen(&prefix, "", 1))
            // The copy's hostname is the host's own, not the machine's.
            .filter(|l| !l.starts_with("/hostname "))
            .collect()
    };
    assert_eq!(
        rebase(copy, &host.path("/etc")),
        rebase(real, Path::new("/etc"))
    );
}

#[test]
fn state_persists_across_runs_and_outside_edits_show_inside() {
    let host = IsolatedHost::new();
    assert_ok(&sh(
        &host,
        "echo kept > /root/note && touch /run/flag /tmp/scratch",
    ));
    // Not `ls /tmp`: a checkout under /tmp is bound through as the working
    // directory and would be listed too.
    let out = sh(&host, "cat /root/note && ls /run && ls /tmp/scratch");
    assert_eq!(assert_ok(&out), "kept\nflag\n/tmp/scratch");

    host.set_sysctl("vm.overcommit_memory", "2");
    let out = host.run(&["cat", "/proc/sys/vm/overcommit_memory"]);
    assert_eq!(assert_ok(&out), "2");
}

#[test]
fn private_dirs_start_empty_and_hide_the_real_ones() {
    let real = tempfile::Builder::new()
        .prefix("nodeprov-real-")
        .tempdir_in("/tmp")
        .unwrap();
    let host = IsolatedHost::new();
    let out = host.run(&["test", "-e", real.path().to_str().unwrap()]);
    assert!(!out.status.success(), "real /tmp leaked into the host");
    let out = sh(&host, "ls -A /root /run; stat -c %a /tmp /root");
    assert_eq!(assert_ok(&out), "/root:\n\n/run:\n1777\n700");
}

#[test]
fn program_under_a_private_dir_stays_runnable() {
    // Stands in for a cargo target dir under /tmp or /root.
    let dir = tempfile::Builder::new()
        .prefix("nodeprov-bin-")
        .tempdir_in("/tmp")
        .unwrap();
    let tool = dir.path().join("tool");
    fs::write(
        &tool,
        "#!/bin/sh\necho \"tool ran as $(id -u) in $(hostname)\"\n",
    )
    .unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();

    let host = IsolatedHost::with_hostname("gpu-a1");
    let out = host.run(&[tool.to_str().unwrap()]);
    assert_eq!(assert_ok(&out), "tool ran as 0 in gpu-a1");
}

#[test]
fn host_has_its_own_hostname_and_pid_namespace() {
    let real = fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = IsolatedHost::with_hostname("gpu-b7");
    let out = sh(
        &host,
        "hostname; cat /etc/hostname; echo $$; echo $HOME $LC_ALL",
    );
    assert_eq!(assert_ok(&out), "gpu-b7\ngpu-b7\n1\n/root C");
    assert_eq!(
        fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        real
    );
}

#[test]
fn ten_hosts_in_parallel_each_see_only_themselves() {
    let before = machine_digest();
    let hosts: Vec<IsolatedHost> = (0..10).map(|_| IsolatedHost::new()).collect();
    for (i, host) in hosts.iter().enumerate() {
        host.set_sysctl("vm.swappiness", &(i * 10).to_string());
    }
    let script = "echo $(hostname) > /etc/owner; sleep 0.2; \
                  echo $(hostname) $(cat /etc/owner) $(cat /proc/sys/vm/swappiness)";
    let seen: Vec<String> = thread::scope(|s| {
        let runs: Vec<_> = hosts
            .iter()
            .map(|host| s.spawn(move || assert_ok(&sh(host, script))))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (i, (host, seen)) in hosts.iter().zip(seen).enumerate() {
        let name = host.hostname();
        assert_eq!(seen, format!("{name} {name} {}", i * 10));
    }
    assert_machine_unchanged(&before);
}

#[test]
#[should_panic(expected = "not private to the host")]
fn path_refuses_paths_on_the_real_machine() {
    IsolatedHost::new().path("/usr/bin/env");
}

#[test]
#[should_panic(expected = "could not enter isolated host")]
fn a_host_that_cannot_be_entered_panics() {
    let host = IsolatedHost::new();
    fs::remove_dir_all(host.path("/run")).unwrap();
    host.run(&["true"]);
}

#[test]
fn tree_digest_notices_content_mode_and_new_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conf");
    fs::write(&file, "a").unwrap();
    let base = tree_digest(dir.path());

    fs::write(&file, "b").unwrap();
    let edited = tree_digest(dir.path());
    assert_ne!(edited, base);

    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    assert_ne!(tree_digest(dir.path()), edited);

    let before_new = tree_digest(dir.path());
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("sub/x"), "").unwrap();
    assert_eq!(tree_digest(dir.path()).len(), before_new.len() + 2);
}
