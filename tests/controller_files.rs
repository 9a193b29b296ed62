//! What nodeprov writes and reads on the controller, against a local
//! attacker: `nobody` plants links where a report or a retry file will be
//! written, and shard reports that are not files, or that claim a huge
//! shard count, are given to `report merge`. The tests run as root, as an
//! operator's run does, so a followed link would clobber a root-only file.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const NOBODY: u32 = 65534;
const SECRET: &str = "root only\n";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A root-only file that no run may change.
fn victim(dir: &Path) -> PathBuf {
    let p = dir.join("victim");
    std::fs::write(&p, SECRET).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// A folder anyone may write into, as shared report storage often is,
/// without the sticky bit (which would make the kernel refuse root's
/// following of `nobody`'s links and hide the defect).
fn shared_folder(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// Runs `argv` as `nobody`, a real unprivileged user.
fn as_nobody(argv: &[&str]) {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(argv)
        .output()
        .expect("setpriv runs");
    assert!(out.status.success(), "{argv:?}: {}", text(&out.stderr));
}

fn plant_link(target: &Path, at: &Path) {
    as_nobody(&["ln", "-s", target.to_str().unwrap(), at.to_str().unwrap()]);
    assert_eq!(std::fs::symlink_metadata(at).unwrap().uid(), NOBODY);
}

/// The PIDs the kernel hands out next, where a name built from the PID of
/// the process about to start can be guessed.
fn next_pids(n: u32) -> std::ops::Range<u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    last + 1..last + 1 + n
}

fn shard(dir: &Path, name: &str, index: u64, count: u64) -> String {
    let doc = serde_json::json!({
        "schema_version": 2, "tool": "nodeprov", "version": env!("CARGO_PKG_VERSION"),
        "mode": "check", "playbook": "site.yml", "exit_code": 2, "halted": null,
        "never_touched": [],
        "shard": {"index": index, "count": count, "plays": ["gpu"]},
        "hosts": [{"host": format!("gpu-{index}"), "play": "gpu", "failed": false,
                   "tasks": [{"task": "swappiness", "status": "drift"}]}],
    });
    let p = dir.join(name);
    std::fs::write(&p, doc.to_string()).unwrap();
    p.to_str().unwrap().to_string()
}

fn merge(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["report", "merge"])
        .args(args)
        .output()
        .expect("binary runs")
}

#[test]
fn reports_are_never_written_through_links_planted_at_their_names() {
    let root = tempfile::tempdir().unwrap();
    let victim = victim(root.path());
    let dir = shared_folder(root.path(), "reports");
    let a = shard(root.path(), "a.json", 1, 2);
    let b = shard(root.path(), "b.json", 2, 2);
    for name in ["report.json", "junit.xml", "report.html"] {
        plant_link(&victim, &dir.join(name));
    }
    // The names a report once took its temporary file under, planted
    // without starting a process, so the PIDs guessed stay the next ones.
    for pid in next_pids(400) {
        for name in ["report.json", "junit.xml", "report.html"] {
            let at = dir.join(format!(".{name}.{pid}.tmp"));
            std::os::unix::fs::symlink(&victim, &at).unwrap();
            std::os::unix::fs::lchown(&at, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    let out = merge(&[&a, &b, "--report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);
    for name in ["report.json", "junit.xml", "report.html"] {
        let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
        assert!(meta.is_file(), "{name} is still a link");
        assert_eq!(meta.uid(), 0, "{name}");
        assert_eq!(meta.mode() & 0o777, 0o640, "{name}");
    }
    let report = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert!(report.contains("\"gpu-2\""), "{report}");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with('.') && !std::fs::symlink_metadata(dir.join(n)).unwrap().is_symlink()
        })
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_report_folder_that_is_a_link_or_belongs_to_another_user_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let victim = victim(root.path());
    let a = shard(root.path(), "a.json", 1, 1);
    let theirs = shared_folder(root.path(), "theirs");
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = merge(&[&a, "--report", theirs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).lines().find(|l| l.starts_with("error:")),
        Some(
            format!(
                "error: will not write into {}: it belongs to uid 65534, who could replace \
                 or redirect what nodeprov writes there",
                theirs.display()
            )
            .as_str()
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);

    let shared = shared_folder(root.path(), "shared");
    let link = shared.join("out");
    plant_link(&root.path().join("elsewhere"), &link);
    std::fs::create_dir(root.path().join("elsewhere")).unwrap();
    let out = Command::new(BIN)
        .args(["check", "-c", "local", "--report", link.to_str().unwrap()])
        .arg(write_playbook(root.path(), "site.yml", "debug: {msg: hi}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(&format!(
            "will not write into {}: it is a symbolic link; name the folder it points to",
            link.display()
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(root.path().join("elsewhere"))
            .unwrap()
            .count(),
        0
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);
}

/// A parent folder another user may write lets them swap the report
/// folder for a link between nodeprov's check of it and its writes: the
/// folder written is the one judged, so nothing lands where the link points.
#[test]
fn a_report_folder_swapped_for_a_link_mid_run_is_not_written_through() {
    let root = tempfile::tempdir().unwrap();
    let a = shard(root.path(), "a.json", 1, 1);
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = shared_folder(root.path(), "shared");
    let out = shared.join("out");
    std::fs::create_dir(&out).unwrap();
    // Python's rename and symlink are single system calls, quick enough to
    // land between a check and a write; the folder stays longer than the
    // link, so that the check meets the folder and some writes the link.
    // A folder nodeprov made while the name was free stays beside, under
    // a name of its own, and the swapping goes on.
    let swap = "import os, sys, time\n\
        os.chdir(sys.argv[1])\n\
        end = time.time() + 60\n\
        open('ready', 'w').close()\n\
        n = 0\n\
        while not os.path.exists('stop') and time.time() < end:\n\
        \x20   n += 1\n\
        \x20   try:\n\
        \x20       os.rename('out', f'real{n}'); os.symlink(sys.argv[2], 'out')\n\
        \x20       os.unlink('out'); os.rename(f'real{n}', 'out'); time.sleep(0.0002)\n\
        \x20   except OSError:\n\
        \x20       pass\n";
    let mut swapper = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["/usr/bin/python3", "-c", swap])
        .arg(&shared)
        .arg(&elsewhere)
        .spawn()
        .expect("setpriv runs");
    while !shared.join("ready").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut written = 0;
    for _ in 0..300 {
        let out = merge(&[&a, "--report", out.to_str().unwrap()]);
        written += usize::from(out.status.code() == Some(2));
    }
    std::fs::write(shared.join("stop"), "").unwrap();
    assert!(swapper.wait().unwrap().success(), "the swapper failed");
    assert!(
        written > 0,
        "no run wrote its report while the folder was swapped"
    );
    let landed: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(landed.is_empty(), "written through the link: {landed:?}");
}

/// fetch writes its copy as the controller user, root here: a folder under
/// its dest that is a link, or a dest another user owns (who could plant
/// one at any time), must not take that copy elsewhere.
#[test]
fn fetch_never_writes_through_links_planted_under_its_dest() {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let src = root.path().join("src/hosts.txt");
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(&src, "fetched\n").unwrap();
    // Where the copy lands below `<dest>/localhost/`.
    let below = src.strip_prefix("/").unwrap();
    let first = below.iter().next().unwrap().to_str().unwrap();
    let victims = root.path().join("victims");
    let victim = victims.join(below.strip_prefix(first).unwrap());
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    std::fs::write(&victim, SECRET).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let fetch_into = |dest: &Path| {
        let task = format!(
            "fetch: {{src: {}, dest: {}/}}",
            src.display(),
            dest.display()
        );
        let pb = write_playbook(root.path(), "fetch.yml", &task);
        Command::new(BIN)
            .args(["apply", "-c", "local"])
            .arg(&pb)
            .output()
            .unwrap()
    };

    // `nobody`'s shared folder, with their link one level down.
    let shared = shared_folder(root.path(), "shared");
    std::os::unix::fs::chown(&shared, Some(NOBODY), Some(NOBODY)).unwrap();
    as_nobody(&["mkdir", "-p", shared.join("localhost").to_str().unwrap()]);
    plant_link(&victims, &shared.join("localhost").join(first));
    let out = fetch_into(&shared);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains(&format!(
            "{} belongs to uid 65534, who could redirect what is written below it",
            shared.display()
        )),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);

    // root's own dest, with a link left in it.
    let mine = root.path().join("mine");
    std::fs::create_dir_all(mine.join("localhost")).unwrap();
    std::os::unix::fs::symlink(&victims, mine.join("localhost").join(first)).unwrap();
    let out = fetch_into(&mine);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("is a symbolic link: nodeprov writes through no link"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);

    // A clean dest gets the copy, once.
    let clean = root.path().join("clean");
    for _ in 0..2 {
        let out = fetch_into(&clean);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    }
    let copy = clean.join("localhost").join(below);
    assert_eq!(std::fs::read_to_string(copy).unwrap(), "fetched\n");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);
}

fn write_playbook(dir: &Path, name: &str, task: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("- hosts: localhost\n  gather_facts: false\n  tasks:\n    - {task}\n"),
    )
    .unwrap();
    p
}

#[test]
fn the_retry_file_replaces_a_planted_link_instead_of_writing_through_it() {
    let root = tempfile::tempdir().unwrap();
    let victim = victim(root.path());
    let plays = shared_folder(root.path(), "plays");
    let pb = write_playbook(&plays, "site.yml", "fail: {msg: stop here}");
    let retry = plays.join("site.retry");
    plant_link(&victim, &retry);
    let out = Command::new(BIN)
        .args(["apply", "-c", "local"])
        .arg(&pb)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("to retry: --limit @{}", retry.display())),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), SECRET);
    assert!(std::fs::symlink_metadata(&retry).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(&retry).unwrap(), "localhost\n");
}

#[test]
fn merge_bounds_what_a_shard_report_claims_and_reads_only_files() {
    let root = tempfile::tempdir().unwrap();
    let huge = shard(root.path(), "huge.json", 1, 1_000_000_000_000);
    let many = shard(root.path(), "many.json", 1, 30_000_000);
    let fifo = root.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for (input, expected) in [
        (
            huge.clone(),
            format!("{huge} says the run has 1000000000000 shards; nodeprov merges at most 100000"),
        ),
        (
            many.clone(),
            format!("{many} says the run has 30000000 shards; nodeprov merges at most 100000"),
        ),
        (
            fifo.to_str().unwrap().to_string(),
            format!(
                "cannot read shard report: cannot read {}: it is a FIFO, not a regular file",
                fifo.display()
            ),
        ),
        (
            "/dev/zero".to_string(),
            "cannot read shard report: cannot read /dev/zero: it is a character device, \
             not a regular file"
                .to_string(),
        ),
    ] {
        let started = Instant::now();
        // 256 MiB of address space: a merge that tried to list every
        // claimed shard, or to read without end, dies here.
        let mut cmd = Command::new(BIN);
        cmd.args(["report", "merge", &input]);
        unsafe {
            cmd.pre_exec(|| {
                let cap = libc::rlimit {
                    rlim_cur: 256 << 20,
                    rlim_max: 256 << 20,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("merge of {input} did not end");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{input}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.lines().any(|l| l == format!("error: {expected}")),
            "{input}: {err}"
        );
        assert!(err.len() < 1000, "{input}: {} bytes of error", err.len());
    }
}
