use serde_json::{json, Value};

use super::listing::{sample_entry, Entry, Found, Listing};
use super::*;
use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test};
use crate::remote::probe::ProbeResult;

const NOW: f64 = 1_700_000_000.0;

fn entry(rel: &str, kind: char, size: u64, age: f64) -> Entry {
    Entry {
        rel: rel.into(),
        kind,
        size,
        mtime: NOW - age,
        ..sample_entry(rel, None)
    }
}

/// What the task registers for `listing`, as the probe would answer it.
fn run(params: Value, entries: Vec<Entry>) -> Plan {
    let m = build_test(&FIND, params).unwrap();
    let probe = m.probes().remove(0);
    let listing = Listing {
        now: NOW,
        skipped: Vec::new(),
        entries,
    };
    let mut facts = Facts::default();
    facts.insert(probe.key, Found::render(&listing));
    let plan = m.plan(&facts).unwrap();
    assert_sh_syntax(&*m, &plan);
    assert!(plan.changes.is_empty() && plan.steps.is_empty());
    plan
}

fn paths(plan: &Plan) -> Vec<String> {
    plan.returns["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

fn tree() -> Vec<Entry> {
    vec![
        entry("a b.log", 'f', 100, 3600.0),
        entry("new\nline 'q\".log", 'f', 20_000, 60.0),
        entry(".hidden.log", 'f', 10, 60.0),
        entry("sub", 'd', 4096, 60.0),
        entry("sub/old.log.1", 'f', 5, 30.0 * 86_400.0),
        entry("link.log", 'l', 7, 60.0),
        entry("notes.txt", 'f', 1, 60.0),
    ]
}

#[test]
fn globs_match_basenames_and_excludes_cull() {
    let plan = run(
        json!({"paths": "/var/log", "patterns": ["*.log", "*.log.*"], "excludes": "a *", "recurse": true}),
        tree(),
    );
    assert_eq!(
        paths(&plan),
        ["/var/log/new\nline 'q\".log", "/var/log/sub/old.log.1"]
    );
    assert_eq!(plan.returns["matched"], 2);
    assert_eq!(plan.returns["examined"], 7);
    assert_eq!(plan.returns["skipped_paths"], json!({}));
    assert_eq!(plan.returns["msg"], "All paths examined");
    let all = run(
        json!({"paths": "/var/log", "hidden": true, "recurse": true}),
        tree(),
    );
    assert_eq!(all.returns["matched"], 5, "{:?}", paths(&all));
}

#[test]
fn types_age_and_size_choose_as_ansible_does() {
    let dirs = run(
        json!({"paths": "/var/log", "file_type": "directory"}),
        tree(),
    );
    assert_eq!(paths(&dirs), ["/var/log/sub"]);
    let links = run(json!({"paths": "/var/log", "file_type": "link"}), tree());
    assert_eq!(paths(&links), ["/var/log/link.log"]);
    let any = run(
        json!({"paths": "/var/log", "file_type": "any", "size": "1k"}),
        tree(),
    );
    assert_eq!(
        paths(&any),
        [
            "/var/log/new\nline 'q\".log",
            "/var/log/link.log",
            "/var/log/sub"
        ],
        "a folder's files first, then its folders, as os.walk meets them"
    );
    let old = run(
        json!({"paths": "/var/log", "age": "2w", "recurse": true}),
        tree(),
    );
    assert_eq!(paths(&old), ["/var/log/sub/old.log.1"]);
    let recent = run(
        json!({"paths": "/var/log", "age": "-2H", "size": "-100b"}),
        tree(),
    );
    assert_eq!(paths(&recent), ["/var/log/a b.log", "/var/log/notes.txt"]);
    let by_mtime = run(
        json!({"paths": "/var/log", "age": "10m", "recurse": true}),
        tree(),
    );
    assert_eq!(by_mtime.returns["matched"], 2);
    let by_atime = run(
        json!({"paths": "/var/log", "age": "10m", "age_stamp": "atime", "recurse": true}),
        tree(),
    );
    assert_eq!(
        by_atime.returns["matched"], 4,
        "every sample was read 999s ago"
    );
}

#[test]
fn depth_and_limit_bound_what_is_returned_not_what_is_examined() {
    let m = build_test(
        &FIND,
        json!({"paths": "/var/log", "recurse": true, "depth": 1}),
    )
    .unwrap();
    assert!(
        m.probes()[0].script.contains("-maxdepth 2"),
        "one level more, counted as Ansible counts it"
    );
    let shallow = run(
        json!({"paths": "/var/log", "recurse": true, "depth": 1}),
        tree(),
    );
    assert_eq!(
        paths(&shallow),
        [
            "/var/log/a b.log",
            "/var/log/new\nline 'q\".log",
            "/var/log/notes.txt"
        ]
    );
    assert_eq!(shallow.returns["examined"], 7);
    let first = run(json!({"paths": "/var/log", "limit": 2}), tree());
    assert_eq!(first.returns["matched"], 2);
    assert_eq!(first.returns["msg"], "Limit of matches reached");
    let folders = build_test(
        &FIND,
        json!({"paths": "/x", "contains": "x", "file_type": "directory"}),
    )
    .unwrap();
    assert!(
        !folders.probes()[0].script.contains("grep"),
        "content is a file's only"
    );
}

#[test]
fn regexes_match_at_the_start_of_a_name() {
    let plan = run(
        json!({"paths": "/var/log", "patterns": "a|no", "use_regex": true, "excludes": ".*txt$"}),
        tree(),
    );
    assert_eq!(paths(&plan), ["/var/log/a b.log"]);
    let e = build_error(
        &FIND,
        json!({"paths": "/x", "patterns": "(", "use_regex": true}),
    );
    assert!(e.contains("invalid regular expression '('"), "{e}");
}

#[test]
fn a_file_is_described_as_ansible_describes_it() {
    let plan = run(json!({"paths": "/var/log/"}), vec![sample_entry("x", None)]);
    let f = &plan.returns["files"][0];
    assert_eq!(f["path"], "/var/log/x");
    assert_eq!(f["mode"], "0644");
    assert_eq!(
        (f["isreg"].clone(), f["isdir"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(
        (f["uid"].clone(), f["gr_name"].clone()),
        (json!(0), json!("adm"))
    );
    assert_eq!(
        (f["rusr"].clone(), f["woth"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(f["size"], 2048);
    let nameless = Entry {
        user: "1234".into(),
        uid: 1234,
        ..sample_entry("y", None)
    };
    let plan = run(json!({"paths": "/var/log"}), vec![nameless]);
    assert_eq!(plan.returns["files"][0]["pw_name"], "");
}

#[test]
fn contained_text_is_searched_by_the_probe_and_read_from_its_mark() {
    let m = build_test(
        &FIND,
        json!({"paths": ["/etc/it's here", "/opt/$(reboot)"], "contains": "^x'; rm -rf /", "recurse": true, "depth": 2}),
    )
    .unwrap();
    let script = &m.probes()[0].script;
    assert!(
        script.contains("-maxdepth 3") && script.contains("-exec grep -qsP"),
        "{script}"
    );
    assert!(script.contains(r"'/opt/$(reboot)'"), "{script}");
    assert_sh_syntax(&*m, &Plan::noop());
    let hit = Entry {
        content: Some(true),
        ..sample_entry("hit", None)
    };
    let miss = Entry {
        content: Some(false),
        ..sample_entry("miss", None)
    };
    let plan = run(
        json!({"paths": "/var/log", "contains": "x"}),
        vec![hit, miss],
    );
    assert_eq!(paths(&plan), ["/var/log/hit"]);
}

#[test]
fn paths_not_walked_are_reported_as_skipped() {
    let m = build_test(&FIND, json!({"paths": "/nope,/var/log"})).unwrap();
    let probe = m.probes().remove(0);
    let answer = "now\x001700000000.5\x00skip\x00/nope\x00'/nope' is not a directory\x00\
                  skip\x00/var/log/private\x00Permission denied\x00";
    let mut facts = Facts::default();
    facts.insert(probe.key, ProbeResult::ok(answer));
    let plan = m.plan(&facts).unwrap();
    assert_eq!(
        plan.returns["skipped_paths"],
        json!({"/nope": "'/nope' is not a directory",
               "/var/log/private": "[Errno 13] Permission denied: '/var/log/private'"})
    );
    assert_eq!(plan.returns["matched"], 0);
    assert!(plan.returns["msg"].as_str().unwrap().starts_with("Not all"));
    assert_eq!(plan.notes.len(), 2);
    assert!(m.reads_everything());
}

#[test]
fn unsupported_and_bad_parameters_are_refused() {
    let err = |p: Value| build_error(&FIND, p);
    assert!(err(json!({"paths": "etc"})).contains("not supported by nodeprov"));
    assert!(
        err(json!({"paths": "/etc", "get_checksum": true})).contains("not supported by nodeprov")
    );
    let e = err(json!({"paths": "/etc", "limit": 0}));
    assert!(e.contains("limit cannot be 0"), "{e}");
    assert!(err(json!({"paths": "/etc", "age": "2 days"})).contains("failed to process age"));
    assert!(err(json!({"paths": "/etc", "size": "1x"})).contains("failed to process size"));
    assert!(err(json!({"paths": "/etc", "recurse": true, "depth": -1})).contains("depth"));
    assert!(err(json!({"paths": "/etc", "patterns": "[z-a]"})).contains("invalid pattern"));
    assert_eq!(FIND.params.required, ["paths"]);
}

/// Plans `params` on what its probe, run for real here, answers.
fn run_for_real(params: Value) -> Plan {
    let m = build_test(&FIND, params).unwrap();
    let probe = m.probes().remove(0);
    let out = std::process::Command::new("sh")
        .args(["-c", &probe.script])
        .output()
        .unwrap();
    let answer = ProbeResult {
        rc: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    let mut facts = Facts::default();
    facts.insert(probe.key, answer);
    m.plan(&facts).unwrap()
}

/// The probe run for real on a folder of hostile names: what find prints
/// is what the parser reads.
#[test]
fn the_probe_lists_a_real_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("with space");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("new\nline 'q\".conf"), "key = 1\n").unwrap();
    std::fs::write(root.join("sub/deep.conf"), "other\nkey=2\n").unwrap();
    std::fs::write(root.join("sub/no.conf"), "other key\n").unwrap();
    std::fs::write(root.join(".hidden.conf"), "key\n").unwrap();
    let top = root.to_str().unwrap();
    let plan = run_for_real(
        json!({"paths": [top, "/nonexistent-dir"], "patterns": "*.conf", "contains": "key", "recurse": true}),
    );
    let mut found = paths(&plan);
    found.sort();
    assert_eq!(
        found,
        [
            format!("{top}/new\nline 'q\".conf"),
            format!("{top}/sub/deep.conf")
        ]
    );
    assert_eq!(plan.returns["examined"], 5);
    assert_eq!(
        plan.returns["skipped_paths"],
        json!({"/nonexistent-dir": "'/nonexistent-dir' is not a directory"})
    );
    let anywhere = run_for_real(
        json!({"paths": top, "patterns": "*.conf", "contains": "ther k", "read_whole_file": true, "recurse": true}),
    );
    assert_eq!(paths(&anywhere), [format!("{top}/sub/no.conf")]);
}

#[test]
fn follow_descends_into_links_and_reports_loops() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("real/f.conf"), "").unwrap();
    std::os::unix::fs::symlink("real", root.join("link")).unwrap();
    std::os::unix::fs::symlink("..", root.join("d/loop")).unwrap();
    let top = root.to_str().unwrap();
    let plan =
        run_for_real(json!({"paths": top, "patterns": "*.conf", "recurse": true, "follow": true}));
    let mut found = paths(&plan);
    found.sort();
    assert_eq!(
        found,
        [format!("{top}/link/f.conf"), format!("{top}/real/f.conf")]
    );
    assert_eq!(
        plan.returns["skipped_paths"],
        json!({format!("{top}/d/loop"): "File system loop detected"})
    );
    let links = run_for_real(json!({"paths": top, "file_type": "link", "recurse": true}));
    assert_eq!(
        links.returns["matched"], 2,
        "without follow the links are links"
    );
}
