//! The release artefacts that scripts/dist.sh leaves in dist/: the static
//! binary runs with no library at all and behaves as the dynamic build
//! does, locally and over SSH, and the .rpm and .deb install, verify and
//! remove cleanly with the real rpm and dpkg inside isolated hosts whose
//! /usr is an overlay, so the machine's own /usr never sees them.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::control::{Control, Run};
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest, IsolatedHost};

const DYNAMIC: &str = env!("CARGO_BIN_EXE_nodeprov");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The one file in dist/ whose name ends with `suffix`. dist/ is built by
/// scripts/dist.sh, which CI runs before the tests: missing artefacts fail
/// the test, never skip it.
fn artefact(suffix: &str) -> PathBuf {
    let dist = Path::new(ROOT).join("dist");
    let hint = if std::env::var("CI").as_deref() == Ok("true") {
        "CI must run scripts/dist.sh before cargo test"
    } else {
        "run scripts/dist.sh"
    };
    let found: Vec<PathBuf> = fs::read_dir(&dist)
        .unwrap_or_else(|e| panic!("no {}: {e}; {hint}", dist.display()))
        .map(|e| e.expect("read dist/").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    match found.as_slice() {
        [one] => one.clone(),
        _ => panic!("dist/ holds {found:?}, not one *{suffix}; {hint}"),
    }
}

/// dist/nodeprov, after checking that it was built from the same commit as
/// the binary under test: a stale artefact would compare two sources.
fn static_binary() -> String {
    let binary = artefact("/nodeprov");
    let version = |bin: &Path| stdout(Command::new(bin).arg("--version").output());
    assert_eq!(
        version(&binary),
        version(Path::new(DYNAMIC)),
        "dist/nodeprov is stale: run scripts/dist.sh"
    );
    binary.display().to_string()
}

fn stdout(out: std::io::Result<Output>) -> String {
    let out = out.expect("spawn");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Whether the ELF file names a program interpreter (PT_INTERP): every
/// dynamically linked executable does, since ld.so is what loads its
/// libraries; a static one has none.
fn has_interpreter(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let elf = fs::read(path).expect("read ELF");
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "64-bit little-endian ELF");
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([elf[at], elf[at + 1]]));
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (entry_size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let at = phoff + i * entry_size;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == PT_INTERP
    })
}

/// A root directory holding nothing but `binary` as /bin/nodeprov, the
/// shipped playbooks and templates, a minimal /etc and empty /proc, /tmp
/// and /root: no shell, no libc, no libssl.
fn bare_root(binary: &Path) -> tempfile::TempDir {
    let root = tempfile::Builder::new()
        .prefix("nodeprov-chroot-")
        .tempdir()
        .unwrap();
    let put = |inside: &str, content: &[u8]| {
        let path = root.path().join(inside);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    };
    put("bin/nodeprov", &fs::read(binary).unwrap());
    let bin = root.path().join("bin/nodeprov");
    fs::set_permissions(bin, fs::Permissions::from_mode(0o755)).unwrap();
    // The shipped trees whole: gpu-node.yml's role lives below playbooks/.
    let mut pending = vec!["playbooks".to_string(), "templates".to_string()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(Path::new(ROOT).join(&dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let inside = format!("{dir}/{name}");
            if path.is_dir() {
                pending.push(inside);
            } else {
                put(&inside, &fs::read(&path).unwrap());
            }
        }
    }
    put("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n");
    put("etc/group", b"root:x:0:\n");
    put("etc/hosts", b"127.0.0.1 localhost\n");
    put("etc/os-release", b"ID=scratch\nNAME=\"empty root\"\n");
    for dir in ["proc", "tmp", "root"] {
        fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    root
}

/// Copies into `root` every shared library `binary` loads, and its loader,
/// at the paths `ldd` names, so that the dynamic build can run there too.
fn add_libraries(root: &Path, binary: &str) {
    let listing = stdout(Command::new("ldd").arg(binary).output());
    let libraries = listing
        .split_whitespace()
        .filter(|word| word.starts_with('/'));
    for library in libraries {
        let inside = root.join(library.trim_start_matches('/'));
        fs::create_dir_all(inside.parent().unwrap()).unwrap();
        fs::copy(library, &inside).unwrap_or_else(|e| panic!("copy {library}: {e}"));
    }
}

/// Runs /bin/nodeprov `args` chrooted into `root`, in mount and pid
/// namespaces of its own (with its own /proc), so nothing of the machine
/// is mounted or changed.
fn in_chroot(root: &Path, args: &[&str]) -> Output {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--pid", "--fork"])
        .args(["--kill-child", "sh", "-c"])
        .arg(r#"mount -n -t proc proc "$0/proc" && cd / && exec chroot "$0" /bin/nodeprov "$@""#)
        .arg(root)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/root")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .expect("spawn unshare")
}

/// A JSON report without what differs from one run to the next anyway:
/// durations and timestamps.
fn comparable(mut doc: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|key, _| !key.ends_with("_ms") && !key.ends_with("_at"));
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut doc);
    doc
}

/// Exit code, stdout as a comparable report (or text), and stderr.
fn outcome(out: &Output) -> (i32, Value, String) {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc = serde_json::from_str(&text).map_or(Value::String(text), comparable);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), doc, stderr)
}

#[test]
fn the_static_binary_needs_no_library_and_does_what_the_dynamic_build_does() {
    let binary = static_binary();
    assert!(!has_interpreter(Path::new(&binary)), "{binary} is dynamic");
    assert!(has_interpreter(Path::new(DYNAMIC)), "the check sees ld.so");

    let bare = bare_root(Path::new(&binary));
    let with_libraries = bare_root(Path::new(DYNAMIC));
    add_libraries(with_libraries.path(), DYNAMIC);
    let runs: [&[&str]; 3] = [
        &["--version"],
        &["validate", "playbooks/gpu-node.yml"],
        &[
            "check",
            "-c",
            "local",
            "playbooks/gpu-node.yml",
            "--format",
            "json",
        ],
    ];
    for args in runs {
        let (code, doc, stderr) = outcome(&in_chroot(bare.path(), args));
        let dynamic = outcome(&in_chroot(with_libraries.path(), args));
        assert_eq!((code, &doc), (dynamic.0, &dynamic.1), "{args:?}: {stderr}");
        if args[0] == "check" {
            // The whole run up to the first probe: a root without a shell
            // leaves the local host unreachable, and the report says why.
            assert_eq!(code, 4, "{doc:#}");
            let why = doc["hosts"][0]["unreachable"].as_str().unwrap_or_default();
            assert!(why.contains("/bin/sh"), "{doc:#}");
        } else {
            assert_eq!(code, 0, "{args:?}: {stderr}");
        }
    }
    // Without its libraries the dynamic build does not even start there.
    let (code, _, _) = outcome(&in_chroot(
        bare_root(Path::new(DYNAMIC)).path(),
        &["--version"],
    ));
    assert_ne!(code, 0);
}

const SSH_PLAYBOOK: &str = "
- name: node baseline
  hosts: all
  gather_facts: true
  tasks:
    - name: swappiness
      sysctl: {name: vm.swappiness, value: '10', sysctl_file: /etc/sysctl.d/90-node.conf}
    - name: motd
      copy: {dest: /etc/motd, content: \"{{ inventory_hostname }} on {{ ansible_distribution }}\\n\", mode: '0644'}
    - name: config dir
      file: {path: /etc/nodeprov-dist, state: directory, mode: '0750'}
";

#[test]
fn over_ssh_the_static_binary_reports_what_the_dynamic_build_reports() {
    let binary = static_binary();
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));
    let playbook = control.write("node.yml", SSH_PLAYBOOK);
    let run = |bin: &str, cmd: &str| {
        let run = Run::json(control.nodeprov_at(bin, &[cmd, &playbook, "-i", &inventory]));
        (run.code, comparable(run.doc))
    };

    let drift = run(&binary, "check");
    assert_eq!(drift.0, 2, "{:#}", drift.1);
    assert_eq!(drift, run(DYNAMIC, "check"));
    let applied = run(&binary, "apply");
    assert_eq!(applied.0, 0, "{:#}", applied.1);
    let converged = run(&binary, "check");
    assert_eq!(converged.0, 0, "{:#}", converged.1);
    assert_eq!(converged, run(DYNAMIC, "check"));
    assert_machine_unchanged(&before);
}

/// A package's life in `host`: installed from `package` by `install`,
/// checked by `query` and `verify`, removed by `remove`. Every file it put
/// under /usr must be gone afterwards.
struct PackageManager {
    install: &'static str,
    query: &'static str,
    verify: &'static str,
    remove: &'static str,
    /// What `query` prints of an installed nodeprov.
    queried: &'static [&'static str],
}

const RPM: PackageManager = PackageManager {
    install: "rpm -i",
    query: "rpm -qi nodeprov",
    verify: "rpm -V nodeprov",
    remove: "rpm -e nodeprov",
    queried: &["Name        : nodeprov", "License     : Apache-2.0"],
};

const DPKG: PackageManager = PackageManager {
    install: "dpkg -i",
    query: "dpkg -s nodeprov",
    verify: "dpkg -V nodeprov",
    remove: "dpkg -P nodeprov",
    queried: &["Package: nodeprov", "Status: install ok installed"],
};

/// Every file a package must carry, wherever its distribution wants it.
const SHIPPED: [&str; 9] = [
    "/usr/bin/nodeprov",
    "/usr/share/man/man1/nodeprov.1",
    "/usr/share/bash-completion/completions/nodeprov",
    "_nodeprov",
    "/usr/share/fish/vendor_completions.d/nodeprov.fish",
    "/usr/share/nodeprov/playbooks/gpu-node.yml",
    "/usr/share/nodeprov/playbooks/roles/nvidia_gpu/tasks/main.yml",
    "/usr/share/nodeprov/playbooks/roles/nvidia_gpu/vars/main.yml",
    "/usr/share/nodeprov/templates/cuda.sh.j2",
];

fn sh(host: &IsolatedHost, script: &str) -> String {
    // dpkg looks for ldconfig and start-stop-daemon on PATH.
    let script = format!("PATH=$PATH:/usr/sbin:/sbin; {script}");
    let out = host.run(&["sh", "-c", &script]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn install_verify_remove(host: IsolatedHost, package: &Path, manager: &PackageManager) {
    let before = machine_digest();
    let machine_has_it = Path::new("/usr/bin/nodeprov").exists();
    let name = package.file_name().unwrap().to_string_lossy().into_owned();
    fs::copy(package, host.path(&format!("/tmp/{name}"))).unwrap();

    sh(&host, &format!("{} /tmp/{name}", manager.install));
    let installed = host.usr_changes();
    for file in SHIPPED {
        assert!(
            installed.iter().any(|f| f.contains(file)),
            "{file} not installed: {installed:#?}"
        );
    }
    let licence = installed
        .iter()
        .find(|f| f.contains("/share/licenses/nodeprov/") || f.ends_with("/doc/nodeprov/copyright"))
        .unwrap_or_else(|| panic!("no licence file: {installed:#?}"));
    let text = sh(&host, &format!("cat {licence}"));
    // The whole licence, not a pointer to it.
    for words in [
        "Apache License",
        "Version 2.0, January 2004",
        "END OF TERMS AND CONDITIONS",
    ] {
        assert!(text.contains(words), "{licence}: {text}");
    }
    let query = sh(&host, manager.query);
    for line in manager.queried {
        assert!(
            query.lines().any(|l| l.trim_end() == *line),
            "{line}: {query}"
        );
    }
    assert_eq!(sh(&host, manager.verify), "", "{}", manager.verify);
    let version = sh(&host, "/usr/bin/nodeprov --version");
    assert_eq!(
        version,
        stdout(Command::new(DYNAMIC).arg("--version").output())
    );

    sh(&host, manager.remove);
    assert_eq!(host.usr_changes(), Vec::<String>::new(), "left behind");
    assert_eq!(Path::new("/usr/bin/nodeprov").exists(), machine_has_it);
    assert_machine_unchanged(&before);
}

#[test]
fn the_rpm_installs_verifies_and_removes_cleanly_on_an_el_host() {
    // The packages carry dist/nodeprov: refused when stale.
    static_binary();
    install_verify_remove(IsolatedHost::el().with_own_usr(), &artefact(".rpm"), &RPM);
}

#[test]
fn the_deb_installs_verifies_and_removes_cleanly_on_a_debian_host() {
    // The packages carry dist/nodeprov: refused when stale.
    static_binary();
    install_verify_remove(IsolatedHost::apt().with_own_usr(), &artefact(".deb"), &DPKG);
}
