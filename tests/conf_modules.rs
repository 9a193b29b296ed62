//! The node-configuration modules (pam_limits, blockinfile, kernel_blacklist,
//! replace, modprobe's boot files) through the real binary with `-c local`
//! inside an isolated host: apply twice (the second run changes nothing),
//! check is compliant, then a hand-edited file of each is drift that
//! `check` names with its evidence, exit code 2, and leaves as it was.

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const LIMITS: &str = "/etc/security/limits.d/90-gpu.conf";
const SSHD: &str = "/etc/nodeprov-test/sshd_config";
const GRUB: &str = "/etc/nodeprov-test/grub";
const BLACKLIST: &str = "/etc/modprobe.d/blacklist-ansible.conf";

/// A module built into this machine's kernel: `/sys/module` lists it without
/// the `initstate` a loadable one has, and `/proc/modules` does not. Tests
/// never load kernel modules, so modprobe's live part must already comply.
fn builtin_module() -> String {
    let loaded = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let mut names: Vec<String> = std::fs::read_dir("/sys/module")
        .expect("/sys/module is readable")
        .filter_map(|e| e.ok())
        .filter(|e| !e.path().join("initstate").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !loaded.lines().any(|l| l.split(' ').next() == Some(n)))
        .collect();
    names.sort();
    names
        .into_iter()
        .next()
        .expect("the kernel has a built-in module")
}

fn playbook(kmod: &str) -> String {
    format!(
        r#"- hosts: all
  tasks:
    - name: memlock
      pam_limits:
        domain: "*"
        limit_type: "-"
        limit_item: memlock
        value: unlimited
        dest: {LIMITS}
        comment: GPUDirect RDMA
    - name: sshd block
      blockinfile:
        path: {SSHD}
        insertbefore: "^Match"
        block: |
          MaxSessions 64
          ClientAliveInterval 60
    - name: nouveau
      kernel_blacklist:
        name: nouveau
    - name: iommu
      replace:
        path: {GRUB}
        regexp: '^(GRUB_CMDLINE_LINUX)="quiet"$'
        replace: '\1="quiet iommu=pt"'
    - name: kmod
      modprobe:
        name: {kmod}
        params: nodeprov_test=1
        persistent: present
"#
    )
}

fn host_with_files(kmod: &str) -> IsolatedHost {
    let host = IsolatedHost::new();
    let write = |p: &str, text: &str| {
        let path = host.path(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("/root/conf.yml", &playbook(kmod));
    write(
        LIMITS,
        "# GPU node limits\n@gpu soft nofile 65536\n* - memlock 65536\n",
    );
    write(
        SSHD,
        "Port 22\nUsePAM yes\nMatch User backup\n  X11Forwarding no\n",
    );
    write(GRUB, "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet\"\n");
    for dir in ["/etc/modprobe.d", "/etc/modules-load.d"] {
        std::fs::create_dir_all(host.path(dir)).unwrap();
    }
    // Whatever the machine's /etc held, the module's own files start absent.
    for f in [
        BLACKLIST.to_string(),
        format!("/etc/modprobe.d/{kmod}.conf"),
        format!("/etc/modules-load.d/{kmod}.conf"),
    ] {
        let _ = std::fs::remove_file(host.path(&f));
    }
    host
}

fn json(host: &IsolatedHost, cmd: &str) -> (i32, serde_json::Value) {
    run_json(
        host,
        &[
            BIN,
            cmd,
            "/root/conf.yml",
            "-c",
            "local",
            "--format",
            "json",
        ],
    )
}

fn tasks(doc: &serde_json::Value) -> &Vec<serde_json::Value> {
    doc["hosts"][0]["tasks"].as_array().unwrap()
}

fn statuses(doc: &serde_json::Value) -> Vec<(String, String)> {
    tasks(doc)
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn read(host: &IsolatedHost, p: &str) -> String {
    std::fs::read_to_string(host.path(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn apply_twice_changes_nothing_the_second_time_and_check_names_hand_edits() {
    let before = machine_digest();
    let kmod = builtin_module();
    let host = host_with_files(&kmod);

    let (code, first) = json(&host, "apply");
    assert_eq!(code, 0, "{first:#}");
    let all = ["memlock", "sshd block", "nouveau", "iommu", "kmod"];
    assert_eq!(
        statuses(&first),
        all.map(|t| (t.to_string(), "changed".to_string())),
        "{first:#}"
    );
    assert_eq!(
        read(&host, LIMITS),
        "# GPU node limits\n@gpu soft nofile 65536\n*\t-\tmemlock\tunlimited\t#GPUDirect RDMA\n"
    );
    assert_eq!(
        read(&host, SSHD),
        "Port 22\nUsePAM yes\n# BEGIN ANSIBLE MANAGED BLOCK\nMaxSessions 64\nClientAliveInterval 60\n# END ANSIBLE MANAGED BLOCK\nMatch User backup\n  X11Forwarding no\n"
    );
    assert_eq!(read(&host, BLACKLIST), "blacklist nouveau\n");
    assert_eq!(
        read(&host, GRUB),
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet iommu=pt\"\n"
    );
    assert_eq!(
        read(&host, &format!("/etc/modules-load.d/{kmod}.conf")),
        format!("{kmod}\n")
    );
    assert_eq!(
        read(&host, &format!("/etc/modprobe.d/{kmod}.conf")),
        format!("options {kmod} nodeprov_test=1\n")
    );

    // The built-in module counts as loaded: only its boot files changed.
    let kmod_task = tasks(&first).iter().find(|t| t["task"] == "kmod").unwrap();
    let subjects: Vec<&str> = kmod_task["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            format!("/etc/modules-load.d/{kmod}.conf"),
            format!("/etc/modprobe.d/{kmod}.conf")
        ]
    );

    // The parameter is no parameter of the built-in module: said, not drift.
    let note = kmod_task["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("nodeprov_test not shown in sysfs (wanted 1)"),
        "{kmod_task:#}"
    );

    let (code, second) = json(&host, "apply");
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(
        second["hosts"][0]["recap"]["changed"],
        0,
        "{:?}",
        statuses(&second)
    );
    let (code, check) = json(&host, "check");
    assert_eq!(code, 0, "{:?}", statuses(&check));
    assert_eq!(check["hosts"][0]["round_trips"], 1);

    // Hand edits, one per task.
    let options = format!("/etc/modprobe.d/{kmod}.conf");
    let edits: [(&str, String); 5] = [
        (
            LIMITS,
            "# GPU node limits\n@gpu soft nofile 65536\n* - memlock 64\n".into(),
        ),
        (
            SSHD,
            "Port 22\n# BEGIN ANSIBLE MANAGED BLOCK\nMaxSessions 10\n# END ANSIBLE MANAGED BLOCK\n"
                .into(),
        ),
        (BLACKLIST, "# emptied by hand\n".into()),
        (GRUB, "GRUB_CMDLINE_LINUX=\"quiet\"\n".into()),
        (&options, format!("options {kmod} nodeprov_test=0\n")),
    ];
    for (p, text) in &edits {
        std::fs::write(host.path(p), text).unwrap();
    }
    let (code, drift) = json(&host, "check");
    assert_eq!(code, 2, "{drift:#}");
    assert_eq!(
        statuses(&drift),
        all.map(|t| (t.to_string(), "drift".to_string())),
        "{drift:#}"
    );
    let change = |task: &str| {
        let t = tasks(&drift).iter().find(|t| t["task"] == task).unwrap();
        t["changes"][0].clone()
    };
    let memlock = change("memlock");
    assert_eq!(memlock["subject"], format!("{LIMITS}: * - memlock"));
    assert_eq!(
        (&memlock["before"], &memlock["after"]),
        (&"64".into(), &"unlimited".into())
    );
    assert_eq!(memlock["evidence"], format!("{LIMITS}:3"));
    let block = change("sshd block");
    assert_eq!(block["before"], "block at lines 2-4");
    assert_eq!(block["after"], "2 lines between the markers");
    assert_eq!(block["evidence"], format!("{SSHD}:2"));
    assert!(block["diff"].as_str().unwrap().contains("-MaxSessions 10"));
    assert_eq!(change("nouveau")["after"], "blacklist nouveau");
    assert_eq!(change("iommu")["evidence"], format!("{GRUB}:1"));
    let kmod_change = change("kmod");
    assert_eq!(
        kmod_change["subject"],
        format!("/etc/modprobe.d/{kmod}.conf")
    );
    assert!(kmod_change["diff"]
        .as_str()
        .unwrap()
        .contains(&format!("+options {kmod} nodeprov_test=1")));

    for (p, text) in &edits {
        assert_eq!(&read(&host, p), text, "check must not fix {p}");
    }
    assert_machine_unchanged(&before);
}

#[test]
fn absent_removes_the_line_the_block_and_the_boot_files_once() {
    let before = machine_digest();
    let kmod = builtin_module();
    let host = host_with_files(&kmod);
    assert_eq!(json(&host, "apply").0, 0);
    let removal = format!(
        r#"- hosts: all
  tasks:
    - name: sshd block
      blockinfile:
        path: {SSHD}
        state: absent
    - name: nouveau
      kernel_blacklist:
        name: nouveau
        state: absent
    - name: kmod
      modprobe:
        name: {kmod}
        persistent: absent
"#
    );
    std::fs::write(host.path("/root/conf.yml"), removal).unwrap();
    let (code, first) = json(&host, "apply");
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(
        statuses(&first),
        ["sshd block", "nouveau", "kmod"].map(|t| (t.to_string(), "changed".to_string()))
    );
    assert_eq!(
        read(&host, SSHD),
        "Port 22\nUsePAM yes\nMatch User backup\n  X11Forwarding no\n"
    );
    assert_eq!(read(&host, BLACKLIST), "");
    for f in [
        format!("/etc/modules-load.d/{kmod}.conf"),
        format!("/etc/modprobe.d/{kmod}.conf"),
    ] {
        assert!(!host.path(&f).exists(), "{f} is still there");
    }
    let (code, second) = json(&host, "apply");
    assert_eq!(code, 0);
    assert_eq!(
        second["hosts"][0]["recap"]["changed"],
        0,
        "{:?}",
        statuses(&second)
    );
    assert_machine_unchanged(&before);
}
