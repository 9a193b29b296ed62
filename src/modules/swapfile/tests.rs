use super::*;
use crate::modules::kit::files::{FileFact, FileState};
use crate::modules::kit::plan::Effect;
use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
use crate::remote::probe::ProbeResult;
use serde_json::json;

const SWAPS_EMPTY: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
const GIB: u64 = 1 << 30;

fn file(size: u64, allocated: u64, mode: u32, sig: bool) -> String {
    format!(
            "fstype=ext2/ext3\nreal=/swapfile\ntype=file\nmode={mode:o}\nsize={size}\nallocated={allocated}\nsignature={}\nattrs=--------------e-------\n",
            if sig { "yes" } else { "no" }
        )
}

const ABSENT: &str = "fstype=ext2/ext3\nreal=/swapfile\ntype=absent\n";

fn swaps_with(size_gib: u64, used_kib: u64, prio: i64) -> String {
    format!(
        "{SWAPS_EMPTY}/swapfile                               file\t\t{}\t\t{used_kib}\t\t{prio}\n",
        size_gib * 1024 * 1024 - 4
    )
}

const FSTAB_OK: &str = "UUID=abc / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n";
const FSTAB_NONE: &str = "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n";

struct Host {
    file: String,
    swaps: String,
    fstab: String,
    free_kib: u64,
    mem_avail_kib: u64,
    kernel: &'static str,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            file: file(8 * GIB, 8 * GIB, 0o600, true),
            swaps: swaps_with(8, 0, -2),
            fstab: FSTAB_OK.into(),
            free_kib: 100 * 1024 * 1024,
            mem_avail_kib: 120 * 1024 * 1024,
            kernel: "6.18.44-fc-v657-gpu",
        }
    }
}

fn plan(params: serde_json::Value, h: &Host) -> Result<Plan, ModuleError> {
    let m = build_test(&SWAPFILE, params).unwrap();
    let meminfo = format!(
        "MemTotal:       131072000 kB\nMemAvailable:   {} kB\nSwapFree:        0 kB\n",
        h.mem_avail_kib
    );
    let mut f = facts_of(&[
        ("swapfile:/swapfile", &h.file),
        ("df:/", &format!("{}\n", h.free_kib)),
        (&Swaps::key(&()), &h.swaps),
        (&MemAvailable::key(&()), &meminfo),
        (&KernelVersion::key(&()), h.kernel),
    ]);
    f.insert(
        FileFact::key(fstab::PATH),
        FileFact::render(&Some(FileState::written(&h.fstab, 0o644, "root", "root"))),
    );
    let plan = m.plan(&f);
    if let Ok(p) = &plan {
        assert_sh_syntax(&*m, p);
    }
    plan
}

fn p8() -> serde_json::Value {
    json!({"path": "/swapfile", "size": "8G"})
}

fn summary(plan: &Plan) -> Vec<String> {
    plan.changes.iter().map(ToString::to_string).collect()
}

#[test]
fn sizes_parse_in_whole_mib() {
    assert_eq!(parse_size("8G"), Some(8 * GIB));
    assert_eq!(parse_size("512M"), Some(512 * MIB));
    assert_eq!(parse_size("1024K"), Some(MIB));
    assert_eq!(parse_size("8GiB"), Some(8 * GIB));
    assert_eq!(parse_size("1048576"), Some(MIB));
    assert_eq!(parse_size("100K"), None);
    assert_eq!(parse_size("8X"), None);
    assert_eq!(human(8 * GIB), "8G");
    assert_eq!(human(1536 * MIB), "1536M");
}

#[test]
fn invalid_params_are_rejected() {
    assert!(build_error(&SWAPFILE, json!({"path": "/swapfile"})).contains("needs 'size'"));
    assert!(build_error(&SWAPFILE, json!({"path": "swapfile", "size": "1G"})).contains("absolute"));
    assert!(build_error(&SWAPFILE, json!({"path": "/s", "size": "1.5G"})).contains("size"));
    assert!(build_error(
        &SWAPFILE,
        json!({"path": "/s", "size": "1G", "priority": 40000})
    )
    .contains("priority"));
    assert!(build_error(
        &SWAPFILE,
        json!({"path": "/s", "size": "1G", "state": "gone"})
    )
    .contains("state"));
    assert!(build_test(&SWAPFILE, json!({"path": "/s", "state": "absent"})).is_ok());
    let err = build_error(&SWAPFILE, json!({"path": "/tmp/..", "state": "absent"}));
    assert!(
        err.contains("refusing to remove or replace '/tmp/..'"),
        "{err}"
    );
}

#[test]
fn correct_swap_is_a_noop() {
    assert_eq!(plan(p8(), &Host::default()).unwrap(), Plan::noop());
    // An equivalent fstab spelling is not drift.
    let h = Host {
        fstab: "/swapfile\tnone  swap defaults,nofail 0 0\n".into(),
        ..Host::default()
    };
    assert_eq!(plan(p8(), &h).unwrap(), Plan::noop());
}

#[test]
fn missing_swap_is_created_safely_and_predicted() {
    let h = Host {
        file: ABSENT.into(),
        swaps: SWAPS_EMPTY.into(),
        fstab: FSTAB_NONE.into(),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert_eq!(
        summary(&plan),
        [
            "swap /swapfile: absent → 8G active",
            "/etc/fstab: no line → /swapfile none swap sw 0 0"
        ]
    );
    let create = &plan.steps[0];
    assert!(
        create.contains("( umask 077\n  rm -f -- \"$p\" && : > \"$p\""),
        "{create}"
    );
    assert!(
        create.contains("dd if=/dev/zero of=\"$p\" bs=1M count=8192"),
        "{create}"
    );
    assert!(!create.contains("fallocate") && !create.contains("chattr"));
    assert!(plan.steps[1].contains("mkswap") && plan.steps[2].contains("swapon"));
    assert!(plan.steps[3].contains("mv -f"), "fstab written atomically");
    let Some(Effect::Predict(_, swaps)) = plan
        .effects
        .iter()
        .find(|e| matches!(e, Effect::Predict(k, _) if *k == Swaps::key(&())))
    else {
        panic!("no /proc/swaps prediction")
    };
    let swaps = Swaps::parse(&(), swaps).unwrap();
    assert!(active_swap(&swaps, &["/swapfile"]).is_some());
}

#[test]
fn prediction_replans_to_a_noop() {
    let h = Host {
        file: ABSENT.into(),
        swaps: SWAPS_EMPTY.into(),
        fstab: FSTAB_NONE.into(),
        ..Host::default()
    };
    let first = plan(p8(), &h).unwrap();
    let get = |key: &str| {
        first.effects.iter().find_map(|e| match e {
            Effect::Predict(k, r) if k == key => Some(r.stdout.clone()),
            _ => None,
        })
    };
    let fstab_after = FileFact::parse(
        fstab::PATH,
        &ProbeResult::ok(get("file:/etc/fstab").unwrap()),
    )
    .unwrap()
    .unwrap()
    .content
    .unwrap();
    let h = Host {
        file: get("swapfile:/swapfile").unwrap(),
        swaps: get(&Swaps::key(&())).unwrap(),
        fstab: fstab_after,
        ..h
    };
    assert_eq!(summary(&plan(p8(), &h).unwrap()), Vec::<String>::new());
}

const ENFORCING: &str = "selinux=on\nsemanage=yes\n";

#[test]
fn selinux_label_is_recorded_in_the_policy_before_swapon_and_predicted() {
    let h = Host {
        file: ABSENT.to_string() + ENFORCING + "selinux_policy=default_t\n",
        swaps: SWAPS_EMPTY.into(),
        ..Host::default()
    };
    let first = plan(p8(), &h).unwrap();
    assert_eq!(
        summary(&first),
        [
            "/swapfile SELinux policy type: default_t → swapfile_t",
            "swap /swapfile: absent → 8G active"
        ]
    );
    let at = |what: &str| first.steps.iter().position(|s| s.contains(what)).unwrap();
    assert!(at("mkswap") < at("fcontext -a -t swapfile_t /swapfile"));
    assert!(at("fcontext") < at("restorecon") && at("restorecon") < at("swapon"));
    let after = first
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Predict(k, r) if k == "swapfile:/swapfile" => Some(r.stdout.clone()),
            _ => None,
        })
        .unwrap();
    let h = Host {
        file: after,
        ..Host::default()
    };
    assert_eq!(summary(&plan(p8(), &h).unwrap()), Vec::<String>::new());
}

#[test]
fn a_wrong_label_on_an_active_swap_file_is_drift_and_chcon_without_semanage_is_said() {
    let labelled = |extra: &str| file(8 * GIB, 8 * GIB, 0o600, true) + extra;
    let h = Host {
        file: labelled(
            &(ENFORCING.to_string() + "selinux_type=default_t\nselinux_policy=swapfile_t\n"),
        ),
        ..Host::default()
    };
    let p = plan(p8(), &h).unwrap();
    assert_eq!(
        summary(&p),
        ["/swapfile SELinux type: default_t → swapfile_t"]
    );
    assert_eq!(p.steps.len(), 1);
    assert!(
        p.steps[0].contains("restorecon") && p.steps[0].contains("-F"),
        "{}",
        p.steps[0]
    );
    let h = Host {
        file: labelled("selinux=on\nselinux_type=default_t\n"),
        ..Host::default()
    };
    let p = plan(p8(), &h).unwrap();
    assert!(p.steps[0].contains("chcon -t swapfile_t"), "{}", p.steps[0]);
    assert!(
        p.notes[0].contains("semanage is not installed"),
        "{:?}",
        p.notes
    );
    let h = Host {
        file: labelled(
            &(ENFORCING.to_string() + "selinux_type=swapfile_t\nselinux_policy=swapfile_t\n"),
        ),
        ..Host::default()
    };
    assert_eq!(plan(p8(), &h).unwrap(), Plan::noop());
}

#[test]
fn inactive_correct_file_only_needs_swapon() {
    let h = Host {
        swaps: SWAPS_EMPTY.into(),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert_eq!(summary(&plan), ["swap /swapfile: 8G inactive → 8G active"]);
    assert_eq!(plan.steps.len(), 1);
    assert!(plan.steps[0].contains("swapon") && !plan.steps[0].contains("mkswap"));
    let h = Host {
        swaps: SWAPS_EMPTY.into(),
        file: file(8 * GIB, 8 * GIB, 0o600, false),
        ..Host::default()
    };
    let plan = super::tests::plan(p8(), &h).unwrap();
    assert!(
        plan.steps[0].contains("mkswap"),
        "no signature → mkswap first"
    );
}

#[test]
fn wrong_mode_is_a_chmod() {
    let h = Host {
        file: file(8 * GIB, 8 * GIB, 0o644, true),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert_eq!(summary(&plan), ["/swapfile mode: 0644 → 0600"]);
    assert_eq!(plan.steps, ["p=/swapfile\nchmod 600 -- \"$p\" || exit 1"]);
}

#[test]
fn file_with_holes_is_recreated() {
    let h = Host {
        file: file(8 * GIB, 0, 0o600, true),
        swaps: SWAPS_EMPTY.into(),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert_eq!(
        summary(&plan),
        ["swap /swapfile: 8G inactive, with holes → 8G active"]
    );
    assert!(plan.steps[0].contains("dd if=/dev/zero"));
}

#[test]
fn allocation_follows_the_filesystem() {
    assert_eq!(alloc_method("xfs", Some((4, 18))), Ok(Alloc::Fallocate));
    assert_eq!(alloc_method("xfs", Some((3, 10))), Ok(Alloc::Dd));
    assert_eq!(alloc_method("ext2/ext3", Some((6, 1))), Ok(Alloc::Dd));
    assert_eq!(alloc_method("btrfs", Some((6, 1))), Ok(Alloc::NocowDd));
    assert!(alloc_method("btrfs", Some((4, 19))).is_err());
    assert!(alloc_method("tmpfs", Some((6, 1))).is_err());
    let release = ProbeResult::ok("3.10.0-1160.el7.x86_64\n");
    assert_eq!(KernelVersion::parse(&(), &release), Ok(Some((3, 10))));

    let xfs_old = Host {
        file: ABSENT.replace("ext2/ext3", "xfs"),
        swaps: SWAPS_EMPTY.into(),
        kernel: "3.10.0-1160.el7.x86_64",
        ..Host::default()
    };
    let steps = plan(p8(), &xfs_old).unwrap().steps;
    assert!(steps[0].contains("dd if=/dev/zero") && !steps[0].contains("fallocate"));
    let xfs_new = Host {
        kernel: "4.18.0-513.el8.x86_64",
        ..xfs_old
    };
    let steps = plan(p8(), &xfs_new).unwrap().steps;
    assert!(steps[0].contains("fallocate -l 8589934592 -- \"$p\""));
}

#[test]
fn btrfs_gets_nocow_on_the_empty_file() {
    let h = Host {
        file: ABSENT.replace("ext2/ext3", "btrfs"),
        swaps: SWAPS_EMPTY.into(),
        ..Host::default()
    };
    let step = &plan(p8(), &h).unwrap().steps[0];
    let (touch, chattr, dd) = (
        step.find(": > \"$p\"").unwrap(),
        step.find("chattr +C").unwrap(),
        step.find("dd if=/dev/zero").unwrap(),
    );
    assert!(touch < chattr && chattr < dd, "{step}");
    // A copy-on-write file of the right size is recreated, not swapped on.
    let h = Host {
        file: file(8 * GIB, 8 * GIB, 0o600, true).replace("ext2/ext3", "btrfs"),
        swaps: SWAPS_EMPTY.into(),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert!(summary(&plan)[0].contains("copy-on-write"));
    assert!(plan.steps[0].contains("chattr +C"));
}

#[test]
fn full_disk_is_refused() {
    let h = Host {
        file: ABSENT.into(),
        swaps: SWAPS_EMPTY.into(),
        free_kib: 8 * 1024 * 1024,
        ..Host::default()
    };
    let err = plan(p8(), &h).unwrap_err();
    assert!(
        matches!(&err, ModuleError::Refused(m) if m.contains("not enough disk") && m.contains("8192 MiB free")),
        "{err}"
    );
}

#[test]
fn resize_swaps_off_only_when_memory_can_absorb_it() {
    let h = Host {
        file: file(4 * GIB, 4 * GIB, 0o600, true),
        swaps: swaps_with(4, 2 * 1024 * 1024, -2),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    assert_eq!(summary(&plan), ["swap /swapfile: 4G active → 8G active"]);
    assert!(plan.steps[0].contains("swapoff") && plan.steps[0].contains("MemAvailable"));
    assert!(plan.steps[1].contains("count=8192"));
    let low = Host {
        mem_avail_kib: 2 * 1024 * 1024,
        ..h
    };
    let err = super::tests::plan(p8(), &low).unwrap_err();
    assert!(
        matches!(&err, ModuleError::Refused(m) if m.contains("refusing to swapoff") && m.contains("2048 MiB are swapped out")),
        "{err}"
    );
}

#[test]
fn priority_drift_reactivates_and_rewrites_fstab() {
    let params = json!({"path": "/swapfile", "size": "8G", "priority": 10});
    let plan = plan(params, &Host::default()).unwrap();
    assert_eq!(
        summary(&plan),
        [
            "swap /swapfile priority: -2 → 10",
            "/etc/fstab: /swapfile none swap sw 0 0 → /swapfile none swap sw,pri=10 0 0"
        ]
    );
    assert!(
        plan.steps[1].contains(")\" -p 10 -- \"$p\""),
        "{}",
        plan.steps[1]
    );
}

#[test]
fn absent_swaps_off_removes_line_and_file() {
    let params = json!({"path": "/swapfile", "state": "absent"});
    let plan = plan(params.clone(), &Host::default()).unwrap();
    assert_eq!(
        summary(&plan),
        [
            "swap /swapfile: 8G active → absent",
            "/etc/fstab: /swapfile none swap sw 0 0 → no line"
        ]
    );
    assert!(plan.steps[0].contains("swapoff"));
    assert!(plan.steps[1].contains("rm -f -- \"$p\""));
    let gone = Host {
        file: ABSENT.into(),
        swaps: SWAPS_EMPTY.into(),
        fstab: FSTAB_NONE.into(),
        ..Host::default()
    };
    assert_eq!(super::tests::plan(params, &gone).unwrap(), Plan::noop());
}

#[test]
fn other_swap_lines_are_kept() {
    let h = Host {
        fstab: "/dev/sdb2 none swap sw 0 0\n".into(),
        ..Host::default()
    };
    let plan = plan(p8(), &h).unwrap();
    let diff = plan.changes[0].diff.as_deref().unwrap();
    assert!(diff.contains("+/swapfile none swap sw 0 0") && !diff.contains("-/dev/sdb2"));
}

#[test]
fn hostile_path_is_quoted() {
    let path = "/data/$(reboot) it's";
    let m = build_test(&SWAPFILE, json!({"path": path, "size": "1G"})).unwrap();
    let mut f = facts_of(&[
        (&SwapFile::key(path), "fstype=xfs\nreal=x\ntype=absent\n"),
        ("df:/data", "999999999\n"),
        (&Swaps::key(&()), SWAPS_EMPTY),
        (&MemAvailable::key(&()), "MemAvailable: 1 kB\n"),
        (&KernelVersion::key(&()), "6.1.0"),
    ]);
    f.insert(FileFact::key(fstab::PATH), FileFact::render(&None));
    let plan = m.plan(&f).unwrap();
    for s in &plan.steps[..3] {
        assert!(s.starts_with("p='/data/$(reboot) it'\\''s'\n"), "{s}");
    }
    assert!(plan.changes[1]
        .after
        .as_deref()
        .unwrap()
        .starts_with("/data/$(reboot)\\040it's none"));
    assert!(SwapFile::script(path).starts_with("p='/data/$(reboot) it'\\''s';"));
}

#[test]
fn not_a_regular_file_is_refused() {
    let h = Host {
        file: "fstype=xfs\nreal=/x\ntype=link\n".into(),
        ..Host::default()
    };
    assert!(matches!(plan(p8(), &h), Err(ModuleError::Refused(m)) if m.contains("symlink")));
}
