//! Distribution facts proven on recorded release files with Ansible's own answers
//! (tests/fixtures/distro, see its README): each fixture's files become an
//! isolated host's release files, and the real binary's `facts` must report
//! what Ansible reported from them.

mod support;

use std::fs;
use std::path::Path;

use serde_json::Value;
use support::{run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/distro");
const FIELDS: [&str; 5] = [
    "distribution",
    "distribution_version",
    "distribution_major_version",
    "distribution_release",
    "os_family",
];

/// Where nodeprov knowingly reports something else than the fixture:
/// (fixture, field, nodeprov's value, why).
const KNOWN_DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    (
        "debian_10",
        "distribution_version",
        "10.7",
        "the fixture's result comes from a recorded `distro` library answer older than \
         distro 1.7; the distro 1.9 Ansible bundles now reads /etc/debian_version (10.7), \
         as nodeprov does",
    ),
    (
        "debian_7.9",
        "distribution_version",
        "7",
        "7.9 came from the `lsb_release` command; the fixture has no /etc/debian_version \
         and nodeprov runs no lsb_release",
    ),
    (
        "debian_stretch_sid",
        "distribution_version",
        "stretch/sid",
        "9.8 is a recorded `distro` answer that none of the fixture's files holds; the \
         distro 1.9 Ansible bundles falls back to /etc/debian_version's line, as nodeprov does",
    ),
    (
        "debian_stretch_sid",
        "distribution_major_version",
        "stretch/sid",
        "follows the version above",
    ),
    (
        "debian_stretch_sid",
        "distribution_release",
        "NA",
        "`stretch` is a recorded `distro` answer that none of the fixture's files holds \
         (Ansible's last resort, dpkg's tzdata status, is a process nodeprov does not run)",
    ),
];

/// The release files a machine's /etc may bring, which would otherwise
/// decide the facts instead of the fixture's.
fn is_release_file(name: &str) -> bool {
    matches!(name, "os-release" | "lsb-release" | "debian_version") || name.ends_with("-release")
}

/// Leaves exactly the fixture's release files in the host's /etc (one host
/// serves every fixture: copying a machine's /etc per fixture is the slow part).
fn install(host: &IsolatedHost, input: &serde_json::Map<String, Value>) {
    for entry in fs::read_dir(host.path("/etc")).unwrap() {
        let entry = entry.unwrap();
        if is_release_file(&entry.file_name().to_string_lossy()) {
            fs::remove_file(entry.path()).unwrap();
        }
    }
    for (path, content) in input {
        let target = if path == "/usr/lib/os-release" {
            "/tmp/usr-lib-os-release"
        } else if path.starts_with("/etc/") {
            path.as_str()
        } else {
            continue;
        };
        let on_machine = host.path(target);
        fs::create_dir_all(on_machine.parent().unwrap()).unwrap();
        fs::write(on_machine, content.as_str().unwrap()).unwrap();
    }
}

/// The facts the binary gathers on `host`, with the fixture's
/// /usr/lib/os-release (or none) mounted over the machine's, in the host's
/// own mount namespace.
fn facts(host: &IsolatedHost, has_usr_lib: bool) -> Value {
    let source = if has_usr_lib {
        "/tmp/usr-lib-os-release"
    } else {
        "/dev/null"
    };
    let script =
        r#"mount -n --bind "$1" /usr/lib/os-release && exec "$2" facts -c local localhost"#;
    let (code, doc) = run_json(host, &["/bin/sh", "-c", script, "sh", source, BIN]);
    assert_eq!(code, 0, "facts failed: {doc}");
    doc["localhost"].clone()
}

/// The package manager Ansible reports for the EL rebuilds, Fedora, Amazon
/// Linux and the Debian and SUSE families; None where the fixture alone does not say.
fn expected_pkg_mgr(result: &Value) -> Option<&'static str> {
    let major: u32 = result["distribution_major_version"]
        .as_str()?
        .parse()
        .ok()?;
    let el = [
        "CentOS",
        "RedHat",
        "Rocky",
        "AlmaLinux",
        "OracleLinux",
        "EuroLinux",
        "MIRACLE",
    ];
    match result["distribution"].as_str()? {
        "Fedora" => Some(if major < 23 { "yum" } else { "dnf" }),
        "Amazon" => Some(if major < 2022 { "yum" } else { "dnf" }),
        d if el.contains(&d) => Some(if major < 8 { "yum" } else { "dnf" }),
        _ if result["os_family"] == "Debian" => Some("apt"),
        _ if result["os_family"] == "Suse" => Some("zypper"),
        _ => None,
    }
}

fn expected<'a>(fixture: &str, field: &str, ansible: &'a Value) -> (&'a str, Option<&'static str>) {
    let known = KNOWN_DIFFERENCES
        .iter()
        .find(|(f, k, _, _)| *f == fixture && *k == field)
        .map(|(_, _, value, _)| *value);
    (ansible.as_str().unwrap_or_default(), known)
}

#[test]
fn distribution_facts_match_ansibles_recorded_release_files() {
    let mut fixtures: Vec<_> = fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 30, "fixtures missing from {FIXTURES}");
    let mut mismatches = Vec::new();
    let host = IsolatedHost::new();
    for path in &fixtures {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let fixture: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        let input = fixture["input"].as_object().unwrap();
        install(&host, input);
        let got = facts(&host, input.contains_key("/usr/lib/os-release"));
        let result = &fixture["result"];
        for field in FIELDS {
            let (ansible, known) = expected(&name, field, &result[field]);
            let want = known.unwrap_or(ansible);
            let have = got[format!("ansible_{field}")]
                .as_str()
                .unwrap_or("<missing>");
            if have != want {
                mismatches.push(format!(
                    "{name}: {field} is {have:?}, expected {want:?} (Ansible's result: {ansible:?})"
                ));
            }
        }
        if let Some(want) = expected_pkg_mgr(result) {
            let have = got["ansible_pkg_mgr"].as_str().unwrap_or("<missing>");
            if have != want {
                mismatches.push(format!("{name}: pkg_mgr is {have:?}, Ansible {want:?}"));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} facts differ, over {} fixtures:\n{}",
        mismatches.len(),
        fixtures.len(),
        mismatches.join("\n")
    );
    let unused: Vec<_> = KNOWN_DIFFERENCES
        .iter()
        .filter(|(f, ..)| !Path::new(FIXTURES).join(format!("{f}.json")).exists())
        .collect();
    assert!(
        unused.is_empty(),
        "differences for missing fixtures: {unused:?}"
    );
}
