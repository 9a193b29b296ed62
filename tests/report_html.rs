//! The HTML fleet view in a real headless Chromium: a report built from real
//! `check --format json` documents of isolated hosts (one compliant, three
//! drifted, one of those failing), loaded from a file with and without a
//! filter in its URL fragment. The page and its screenshot are kept under
//! `target/test-artifacts/` (`report.html`, `report.png`) for a person to
//! look at.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::{run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
/// Relative, as a user in the repository would type it (cargo runs tests in
/// the package root, and isolated hosts keep the working directory), so the
/// report shows the paths a user would see.
const PLAYBOOK: &str = "playbooks/gpu-node.yml";
/// Swap is global to the kernel, so isolated hosts leave it out (as in
/// tests/gpu_node.rs), and the smoke step needs a GPU.
const SKIP: [&str; 6] = [
    "--skip-tags",
    "swap",
    "-e",
    "gpu_validate=false",
    "-e",
    "nvidia_install=false",
];
const HOSTILE_TASK: &str = "<script>alert(1)</script>";

fn nodeprov(host: &IsolatedHost, cmd: &str) -> (i32, Value) {
    let mut argv = vec![BIN, cmd, PLAYBOOK, "-c", "local", "--format", "json"];
    argv.extend(["-e", "cuda_home=/root/cuda"]);
    argv.extend(SKIP);
    run_json(host, &argv)
}

/// A host whose CUDA toolkit is where the playbook expects it, so only
/// the sysctls can drift.
fn host_with_toolkit() -> IsolatedHost {
    let host = IsolatedHost::new();
    for dir in ["/root/cuda/bin", "/root/cuda/lib64"] {
        std::fs::create_dir_all(host.path(dir)).unwrap();
    }
    let version = include_str!("fixtures/gpu-h200/nvcc-version.txt");
    let nvcc = host.path("/root/cuda/bin/nvcc");
    std::fs::write(&nvcc, format!("#!/bin/sh\ncat <<'EOF'\n{version}EOF\n")).unwrap();
    std::fs::set_permissions(&nvcc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    host
}

/// Four hosts' documents under fleet names: gpu-001 compliant (applied
/// first), gpu-002 and gpu-003 drifted alike, gpu-004 drifted and failing
/// for want of a toolkit, its failed task given a hostile name.
fn fleet_document() -> Value {
    let compliant = host_with_toolkit();
    let (code, applied) = nodeprov(&compliant, "apply");
    assert_eq!(code, 0, "{applied:#}");
    let (code, clean) = nodeprov(&compliant, "check");
    assert_eq!(code, 0, "{clean:#}");
    let (code, drifted) = nodeprov(&host_with_toolkit(), "check");
    assert_eq!(code, 2, "{drifted:#}");
    let (code, failing) = nodeprov(&IsolatedHost::new(), "check");
    assert_eq!(code & 4, 4, "no toolkit fails the host: {failing:#}");
    let named = |doc: &Value, name: &str| {
        let mut h = doc["hosts"][0].clone();
        h["host"] = json!(name);
        h
    };
    let mut marked = named(&failing, "gpu-004");
    marked["tasks"][0]["task"] = json!(HOSTILE_TASK);
    let mut doc = drifted.clone();
    doc["hosts"] = json!([
        named(&clean, "gpu-001"),
        named(&drifted, "gpu-002"),
        named(&drifted, "gpu-003"),
        marked,
    ]);
    doc["exit_code"] = json!(code | 2);
    tag_module(&mut doc, "sysctl");
    doc
}

/// Tags the tasks of `module` as the evidence schema's `control` does, so
/// the tag filter has something to select.
fn tag_module(doc: &mut Value, module: &str) {
    for h in doc["hosts"].as_array_mut().unwrap() {
        for t in h["tasks"].as_array_mut().unwrap() {
            if t["module"] == module {
                t["control"] = json!({ "tags": [module] });
            }
        }
    }
}

/// Chromium with a private profile in `dir`, capped at 60 s, kept off the
/// network: only the file itself is loaded.
fn chromium(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("timeout");
    cmd.arg("60")
        .arg("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .env("HOME", dir);
    let out = cmd
        .output()
        .expect("run chromium (Debian package `chromium`; scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("DOM is UTF-8")
}

/// The opening tags of the elements whose opening tag starts with `start`.
fn tags<'a>(dom: &'a str, start: &str) -> Vec<&'a str> {
    dom.match_indices(start)
        .map(|(at, _)| &dom[at..at + dom[at..].find('>').unwrap()])
        .collect()
}

fn text_of<'a>(dom: &'a str, attr: &str) -> &'a str {
    let at = dom.find(attr).unwrap_or_else(|| panic!("no {attr}: {dom}"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    &dom[start..start + dom[start..].find('<').unwrap()]
}

fn artifact_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn report_opens_in_chromium_with_counts_filters_and_escaping() {
    let doc = fleet_document();
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    let html = nodeprov::report::html::render(&doc);
    std::fs::write(&page, &html).unwrap();
    std::fs::write(artifact_dir().join("report.html"), &html).unwrap();
    let url = format!("file://{}", page.display());

    let dom = chromium(tmp.path(), &["--dump-dom", &url]);
    assert_eq!(text_of(&dom, "data-summary=\"hosts\""), "4");
    for (status, n) in [
        ("ok", "1"),
        ("drift", "2"),
        ("failed", "1"),
        ("unreachable", "0"),
    ] {
        assert_eq!(text_of(&dom, &format!("\"hosts-{status}\"")), n, "{status}");
    }
    assert_eq!(text_of(&dom, "id=\"shown\""), "4 of 4 hosts shown");
    assert!(tags(&dom, "<tr class=\"task ")
        .iter()
        .all(|t| !t.contains(" hidden")));
    assert!(
        dom.contains("<b>vm.swappiness 60 → 10</b> on 3 hosts: <code>gpu-[002:004]</code>"),
        "identical drift grouped: {dom}"
    );
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(dom.matches("<script").count(), 1, "only the report's own");

    let filtered = chromium(tmp.path(), &["--dump-dom", &format!("{url}#status=drift")]);
    let rows = tags(&filtered, "<tr class=\"task ");
    let (drift, other): (Vec<&str>, Vec<&str>) = rows
        .iter()
        .partition(|t| t.contains("data-status=\"drift\""));
    assert!(!drift.is_empty() && !other.is_empty(), "{filtered}");
    assert!(drift.iter().all(|t| !t.contains(" hidden")), "{drift:?}");
    assert!(other.iter().all(|t| t.contains(" hidden")), "{other:?}");
    for section in tags(&filtered, "<section class=\"host ") {
        let compliant = section.contains("data-host=\"gpu-001\"");
        assert_eq!(section.contains(" hidden"), compliant, "{section}");
    }
    assert_eq!(text_of(&filtered, "id=\"shown\""), "3 of 4 hosts shown");

    let one = chromium(
        tmp.path(),
        &["--dump-dom", &format!("{url}#tag=sysctl&host=004")],
    );
    let visible: Vec<&str> = tags(&one, "<tr class=\"task ")
        .into_iter()
        .filter(|t| !t.contains(" hidden"))
        .collect();
    assert_eq!(visible.len(), 1, "{visible:?}");
    assert!(visible[0].contains("data-host=\"gpu-004\" data-status=\"drift\" data-tags=\"sysctl\""));
    assert_eq!(text_of(&one, "id=\"shown\""), "1 of 4 hosts shown");

    let shot = artifact_dir().join("report.png");
    chromium(
        tmp.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600",
            "--hide-scrollbars",
            &url,
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}
