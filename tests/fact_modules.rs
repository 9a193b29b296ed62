//! The modules that only read the host (slurp, stat, getent, service_facts, find)
//! through the real binary with `-c local` inside an isolated host: what
//! they return or set reaches later tasks, a file an earlier task writes is
//! read as written, and nothing is changed in check or apply.

mod support;

use support::{
    assert_machine_unchanged, machine_digest, run_json, task_statuses as statuses, IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

const PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: resolver
      copy:
        content: "nameserver 10.0.0.1\n"
        dest: /etc/nodeprov-test/resolv.conf
    - name: read it
      slurp:
        src: /etc/nodeprov-test/resolv.conf
      register: resolv
    - name: users
      getent:
        database: passwd
    - name: nobody here
      getent:
        database: group
        key: nodeprov-no-such-group
        fail_key: false
    - name: services
      service_facts:
    - name: all read
      assert:
        that:
          - (resolv.content | b64decode) == "nameserver 10.0.0.1\n"
          - resolv.encoding == "base64"
          - getent_passwd.root[1] == "0"
          - ansible_facts.getent_passwd.root[4] == "/root"
          - getent_group['nodeprov-no-such-group'] is none
          - ansible_facts.hostname is defined
          - services is mapping
"#;

#[test]
fn read_only_modules_feed_later_tasks_in_check_and_apply() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/etc/nodeprov-test")).unwrap();
    std::fs::write(host.path("/root/read.yml"), PLAYBOOK).unwrap();
    let run = |cmd: &str| {
        run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/read.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        )
    };
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(
        statuses(&check),
        ["drift", "ok", "ok", "ok", "ok", "ok"],
        "{check:#}"
    );
    assert!(!host.path("/etc/nodeprov-test/resolv.conf").exists());
    let (code, apply) = run("apply");
    assert_eq!(code, 0, "{apply:#}");
    assert_eq!(
        statuses(&apply),
        ["changed", "ok", "ok", "ok", "ok", "ok"],
        "{apply:#}"
    );
    assert_machine_unchanged(&before);
}

const FIND_PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: every log below
      find:
        paths: /tmp/findme
        patterns: "*.log"
        recurse: true
      register: logs
    - name: logs at the top, by depth
      find:
        paths: /tmp/findme
        patterns: "*.log"
        recurse: true
        depth: 1
        limit: 3
      register: top
    - name: old logs at the top
      find:
        path: /tmp/findme
        patterns: "*.log"
        age: 2d
      register: old
    - name: big files
      find:
        paths: /tmp/findme
        size: 1m
      register: big
    - name: settings
      find:
        paths: /tmp/findme,/tmp/not-here
        contains: "GPU="
        excludes: "*.log"
      register: gpu
    - name: folders
      find:
        paths: /tmp/findme
        file_type: directory
        hidden: true
      register: dirs
    - name: all found
      assert:
        that:
          - logs.matched == 5
          - logs.files | map(attribute='path') | sort == ['/tmp/findme/a.log', '/tmp/findme/big.log', "/tmp/findme/odd name 'q'.log", '/tmp/findme/old.log', '/tmp/findme/sub/deep.log']
          - top.matched == 3 and top.msg == 'Limit of matches reached' and top.examined == 10
          - "top.files | selectattr('path', 'search', 'sub/') | list == []"
          - old.files | map(attribute='path') | list == ['/tmp/findme/old.log']
          - big.matched == 1 and big.files[0].size == 2097152 and big.files[0].isreg
          - gpu.files | map(attribute='path') | list == ['/tmp/findme/notes.txt']
          - gpu.files[0].mode == '0600' and gpu.files[0].pw_name == 'root'
          - "'/tmp/not-here' in gpu.skipped_paths"
          - dirs.files | map(attribute='path') | sort == ['/tmp/findme/.cache', '/tmp/findme/sub']
"#;

/// Files the test made inside the host, with names, ages and sizes that
/// each `find` task tells apart.
fn make_find_tree(host: &IsolatedHost) {
    let root = host.path("/tmp/findme");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join(".cache")).unwrap();
    for name in [
        "a.log",
        "odd name 'q'.log",
        "sub/deep.log",
        ".hidden.log",
        "x.txt",
    ] {
        std::fs::write(root.join(name), "line\n").unwrap();
    }
    let old = std::fs::File::create(root.join("old.log")).unwrap();
    let ten_days = std::time::Duration::from_secs(10 * 86_400);
    old.set_modified(std::time::SystemTime::now() - ten_days)
        .unwrap();
    std::fs::File::create(root.join("big.log"))
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    std::fs::write(root.join("notes.txt"), "# node\nGPU=8\n").unwrap();
    std::fs::set_permissions(
        root.join("notes.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
}

#[test]
fn find_chooses_files_the_host_holds_in_one_probe() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    make_find_tree(&host);
    std::fs::write(host.path("/root/find.yml"), FIND_PLAYBOOK).unwrap();
    for cmd in ["check", "apply"] {
        let (code, doc) = run_json(
            &host,
            &[
                BIN,
                cmd,
                "/root/find.yml",
                "-c",
                "local",
                "--format",
                "json",
            ],
        );
        assert_eq!(code, 0, "{doc:#}");
        assert_eq!(statuses(&doc), ["ok"; 7], "{doc:#}");
        assert_eq!(doc["hosts"][0]["round_trips"], 1, "{doc:#}");
    }
    assert_machine_unchanged(&before);
}

/// Every checksum `stat` offers, as Ansible names them.
const ALGORITHMS: [&str; 6] = ["sha1", "sha224", "sha256", "sha384", "sha512", "md5"];

/// `<alg>sum`'s digest of a file of the developer machine.
fn sum_of(alg: &str, path: &std::path::Path) -> String {
    let out = std::process::Command::new(format!("{alg}sum"))
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{alg}sum {}", path.display());
    let line = String::from_utf8(out.stdout).unwrap();
    line.split(' ').next().unwrap().to_string()
}

/// Bytes that are not UTF-8 text reach `slurp` and `stat` as the file
/// holds them, and a file too large to read is checksummed on the host.
#[test]
fn slurp_and_stat_see_a_binary_file_byte_for_byte() {
    use base64::Engine;
    let before = machine_digest();
    let host = IsolatedHost::new();
    let small: Vec<u8> = (0..=255u8).collect();
    let large: Vec<u8> = (0..(2 << 20) + 3).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(host.path("/root/bytes.bin"), &small).unwrap();
    std::fs::write(host.path("/root/large.bin"), &large).unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&small);
    let mut tasks = format!(
        "    - slurp: {{src: /root/bytes.bin}}\n      register: bin\n\
         \x20   - assert: {{that: [\"bin.content == '{encoded}'\"]}}\n"
    );
    for (name, path) in [("bytes", "/root/bytes.bin"), ("large", "/root/large.bin")] {
        for alg in ALGORITHMS {
            let want = sum_of(alg, &host.path(path));
            tasks.push_str(&format!(
                "    - stat: {{path: {path}, checksum_algorithm: {alg}}}\n      register: st\n\
                 \x20   - assert: {{that: [\"st.stat.checksum == '{want}'\"], fail_msg: '{name} {alg}'}}\n"
            ));
        }
        let sha1 = sum_of("sha1", &host.path(path));
        tasks.push_str(&format!(
            "    - stat: {{path: {path}}}\n      register: st\n\
             \x20   - assert: {{that: [\"st.stat.checksum == '{sha1}'\"], fail_msg: '{name} default'}}\n"
        ));
    }
    let playbook = format!("- hosts: all\n  tasks:\n{tasks}");
    std::fs::write(host.path("/root/bin.yml"), playbook).unwrap();
    for cmd in ["check", "apply"] {
        let (code, doc) = run_json(
            &host,
            &[BIN, cmd, "/root/bin.yml", "-c", "local", "--format", "json"],
        );
        assert_eq!(code, 0, "{doc:#}");
        assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc:#}");
        assert_eq!(doc["hosts"][0]["round_trips"], 1, "{doc:#}");
    }
    assert_eq!(std::fs::read(host.path("/root/bytes.bin")).unwrap(), small);
    assert_machine_unchanged(&before);
}

const STAT_PLAYBOOK: &str = r#"- hosts: all
  tasks:
    - name: written earlier
      copy:
        content: "gpu=8\n"
        dest: /root/st/conf
        mode: "0640"
    - stat:
        path: /root/st/conf
      register: conf
    - stat:
        path: /root/st/conf
        get_checksum: false
      register: nosum
    - stat:
        path: /root/st
      register: dir
    - stat:
        path: /root/st/missing
      register: missing
    - stat:
        path: /root/st/link
        follow: false
      register: link
    - stat:
        path: /root/st/rel
        follow: false
      register: rel
    - name: all described
      assert:
        that:
          - conf.stat.exists and conf.stat.isreg and not conf.stat.isdir and not conf.stat.islnk
          - conf.stat.mode == '0640' and conf.stat.size == 6 and conf.stat.pw_name == 'root'
          - conf.stat.checksum == '60975fb83a49d070692eab9333be659f0cae08dc'
          - nosum.stat.exists and nosum.stat.size == 6 and nosum.stat.checksum is not defined
          - dir.stat.exists and dir.stat.isdir and not dir.stat.isreg and dir.stat.mode == '0750'
          - dir.stat.checksum is not defined
          - not missing.stat.exists and missing.stat.isdir is not defined
          - link.stat.exists and link.stat.islnk and not link.stat.isreg
          - link.stat.lnk_target == '/root/st/conf' and link.stat.checksum is not defined
          - link.stat.lnk_source == '/root/st/conf'
          - rel.stat.islnk and rel.stat.lnk_target == 'link'
          - rel.stat.lnk_source == '/root/st/conf'
"#;

/// `stat` on a file an earlier task writes, a folder, a missing path, a
/// link and a relative link to that link (not followed: its text as
/// written, its source resolved through both) registers what a later
/// `assert` reads, in check (the file as predicted) and in apply, and
/// changes nothing itself.
#[test]
fn stat_describes_each_kind_of_path_for_later_tasks() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir(host.path("/root/st")).unwrap();
    std::fs::set_permissions(
        host.path("/root/st"),
        std::os::unix::fs::PermissionsExt::from_mode(0o750),
    )
    .unwrap();
    std::os::unix::fs::symlink("/root/st/conf", host.path("/root/st/link")).unwrap();
    std::os::unix::fs::symlink("link", host.path("/root/st/rel")).unwrap();
    std::fs::write(host.path("/root/stat.yml"), STAT_PLAYBOOK).unwrap();
    let run = |cmd: &str| {
        let argv = [
            BIN,
            cmd,
            "/root/stat.yml",
            "-c",
            "local",
            "--format",
            "json",
        ];
        run_json(&host, &argv)
    };
    let (code, check) = run("check");
    assert_eq!(code, 2, "{check:#}");
    assert_eq!(
        statuses(&check),
        ["drift", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
        "{check:#}"
    );
    assert!(!host.path("/root/st/conf").exists());
    for want in ["changed", "ok"] {
        let (code, apply) = run("apply");
        assert_eq!(code, 0, "{apply:#}");
        assert_eq!(
            statuses(&apply),
            [want, "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
            "{apply:#}"
        );
    }
    assert_machine_unchanged(&before);
}
