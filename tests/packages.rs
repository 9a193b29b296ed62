//! The package module with the real dnf/rpm and apt/dpkg, inside isolated
//! hosts whose package state is their own: a Rocky-like EL host with a
//! local rpm repository built by rpmbuild and createrepo_c, and a Debian
//! host with a flat apt repository built by dpkg-deb and dpkg-scanpackages.
//! Packages install files only under /etc, which is the host's. A hand
//! change after a converged run is drift that `check` names and leaves.

mod support;

use support::{
    assert_machine_unchanged, drift_on, machine_digest, run_json, task_statuses as statuses,
    IsolatedHost,
};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// Builds `npdemo` 1.0 and 1.1 and `npapp` 1.0 (which requires npdemo)
/// as noarch rpms inside the host and makes /tmp/repo a repository of them.
const BUILD_RPMS: &str = r#"set -eu
mkdir -p /root/spec
cat >/root/spec/pkg.spec <<'SPEC'
Name: %{pkg}
Version: %{ver}
Release: 1
Summary: nodeprov test package
License: MIT
BuildArch: noarch
%{?dep:Requires: %{dep}}
%description
nodeprov test package
%install
mkdir -p %{buildroot}/etc/nodeprov-pkg
echo %{version} >%{buildroot}/etc/nodeprov-pkg/%{name}
%files
/etc/nodeprov-pkg/%{name}
SPEC
# Build scripts go to the host's /tmp, not the machine's /var/tmp.
build() { rpmbuild -bb --quiet --define "_topdir /root/rpmbuild" --define "_tmppath /tmp" "$@" /root/spec/pkg.spec; }
build --define 'pkg npdemo' --define 'ver 1.0'
build --define 'pkg npdemo' --define 'ver 1.1'
build --define 'pkg npapp' --define 'ver 1.0' --define 'dep npdemo'
cp /root/rpmbuild/RPMS/noarch/*.rpm /tmp/repo/
createrepo_c -q /tmp/repo
"#;

/// Runs `tasks` (a YAML task list) with `cmd` (apply or check) on the host.
fn play(host: &IsolatedHost, cmd: &str, tasks: &str) -> serde_json::Value {
    let (code, doc) = run_play(host, cmd, tasks);
    assert!(code == 0 || code == 2, "exit {code}: {doc:#}");
    doc
}

/// As `play`, for a run that fails a task.
fn play_failing(host: &IsolatedHost, cmd: &str, tasks: &str) -> serde_json::Value {
    let (code, doc) = run_play(host, cmd, tasks);
    assert_ne!(code, 0, "{doc:#}");
    assert_ne!(code, 2, "{doc:#}");
    doc
}

fn run_play(host: &IsolatedHost, cmd: &str, tasks: &str) -> (i32, serde_json::Value) {
    let book = format!("- hosts: localhost\n  become: true\n  tasks:\n{tasks}");
    std::fs::write(host.path("/root/site.yml"), book).unwrap();
    run_json(
        host,
        &[
            BIN,
            cmd,
            "/root/site.yml",
            "-c",
            "local",
            "--format",
            "json",
        ],
    )
}

fn changes(doc: &serde_json::Value, task: usize) -> Vec<String> {
    doc["hosts"][0]["tasks"][task]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c["subject"].as_str().unwrap(),
                c["before"],
                c["after"]
            )
        })
        .collect()
}

/// Makes a signing key in the host's /root/gnupg, exports it armored to
/// /tmp/key.asc and returns its short id.
fn make_key(host: &IsolatedHost) -> String {
    host.sh(
        "export GNUPGHOME=/root/gnupg; mkdir -m 700 $GNUPGHOME
        gpg -q --batch --passphrase '' --quick-gen-key 'nodeprov test <test@example.com>' ed25519 sign never
        gpg -q --armor --export >/tmp/key.asc",
    );
    let id = host.sh(
        "GNUPGHOME=/root/gnupg gpg --with-colons -k | awk -F: '$1 == \"pub\" { print tolower(substr($5, 9)) }'",
    );
    id.trim().to_string()
}

#[test]
fn dnf_pins_upgrades_and_removes_real_rpms() {
    let before = machine_digest();
    let host = IsolatedHost::el();
    host.sh(BUILD_RPMS);

    let pin = "    - dnf: {name: npdemo-1.0, update_cache: true}\n";
    let check = play(&host, "check", pin);
    assert_eq!(statuses(&check), ["drift"], "{check:#}");
    assert_eq!(
        changes(&check, 0)[0],
        r#"package npdemo: "absent" -> "1.0""#
    );
    assert_eq!(
        host.rpm_version("npdemo"),
        "package npdemo is not installed"
    );
    let first = play(&host, "apply", pin);
    assert_eq!(statuses(&first), ["changed"], "{first:#}");
    assert_eq!(host.rpm_version("npdemo"), "1.0-1");
    assert_eq!(statuses(&play(&host, "apply", pin)), ["ok"]);

    // Upgraded by hand: check names the version it found and leaves it.
    host.sh("rpm -U --quiet /tmp/repo/npdemo-1.1-1.noarch.rpm");
    let (code, drift) = run_play(&host, "check", pin);
    let c = drift_on(code, &drift, 0, "package npdemo");
    assert_eq!(
        [&c["before"], &c["after"], &c["evidence"]],
        ["1.1-1", "1.0", "rpm -qa"],
        "{drift:#}"
    );
    assert_eq!(host.rpm_version("npdemo"), "1.1-1");
    host.sh("rpm -U --oldpackage --quiet /tmp/repo/npdemo-1.0-1.noarch.rpm");

    // Every installed package to its newest: Ansible's `name: "*"`.
    let everything = "    - dnf: {name: '*', state: latest}\n";
    let check = play(&host, "check", everything);
    assert_eq!(
        changes(&check, 0),
        [r#"package npdemo: "1.0-1" -> "1.1-1""#],
        "{check:#}"
    );
    assert_eq!(statuses(&play(&host, "apply", everything)), ["changed"]);
    assert_eq!(host.rpm_version("npdemo"), "1.1-1");
    assert_eq!(statuses(&play(&host, "apply", everything)), ["ok"]);
    host.sh("rpm -U --oldpackage --quiet /tmp/repo/npdemo-1.0-1.noarch.rpm");

    let latest = "    - package: {name: npdemo, state: latest}\n";
    let check = play(&host, "check", latest);
    assert_eq!(
        changes(&check, 0),
        [r#"package npdemo: "1.0-1" -> "1.1-1""#],
        "{check:#}"
    );
    assert_eq!(statuses(&play(&host, "apply", latest)), ["changed"]);
    assert_eq!(host.rpm_version("npdemo"), "1.1-1");
    assert_eq!(
        std::fs::read_to_string(host.path("/etc/nodeprov-pkg/npdemo")).unwrap(),
        "1.1\n"
    );
    assert_eq!(statuses(&play(&host, "apply", latest)), ["ok"]);

    // Two package tasks read the installed packages once, in the one probe.
    let both = "    - yum: {name: [npapp], disable_gpg_check: true, disablerepo: nothere-*}\n    - dnf: {name: npdemo-1.1-1}\n";
    let doc = play(&host, "apply", both);
    assert_eq!(statuses(&doc), ["changed", "ok"], "{doc:#}");
    assert_eq!(host.rpm_version("npapp"), "1.0-1");
    let doc = play(&host, "check", both);
    assert_eq!(statuses(&doc), ["ok", "ok"]);
    assert_eq!(doc["hosts"][0]["round_trips"], 1, "{doc:#}");

    let gone = "    - dnf: {name: [npapp, npdemo], state: absent, autoremove: true}\n";
    assert_eq!(statuses(&play(&host, "apply", gone)), ["changed"]);
    assert_eq!(host.rpm_version("npapp"), "package npapp is not installed");
    assert_eq!(
        host.rpm_version("npdemo"),
        "package npdemo is not installed"
    );
    assert_eq!(statuses(&play(&host, "apply", gone)), ["ok"]);

    // A refresh alone is reported unchanged, as Ansible's dnf and yum do
    // ("Cache updated"); apply runs it, check does not.
    let refresh = "    - dnf: {update_cache: true}\n    - yum: {update_cache: true}\n";
    let cached = |host: &IsolatedHost| {
        let argv = ["dnf", "-C", "-q", "list", "--available", "npdemo"];
        host.run(&argv).status.success()
    };
    host.sh("dnf -q clean all");
    assert!(!cached(&host));
    assert_eq!(statuses(&play(&host, "check", refresh)), ["ok", "ok"]);
    assert!(!cached(&host), "check refreshed the cache");
    assert_eq!(statuses(&play(&host, "apply", refresh)), ["ok", "ok"]);
    assert!(cached(&host), "apply did not refresh the cache");
    assert_machine_unchanged(&before);
}

/// Builds `npdemo` 1.0 and 1.1, `npextra` 1.0 and `npapp` 1.0 (which
/// depends on npdemo and recommends npextra) as .debs inside the host, makes
/// /tmp/repo a flat repository of all but npdemo 1.1, and leaves npdemo 1.1
/// at /tmp/npdemo_1.1_all.deb.
const BUILD_DEBS: &str = r#"set -eu
build() {
	d=/root/deb/$1-$2
	mkdir -p "$d/DEBIAN" "$d/etc/nodeprov-pkg"
	echo "$2" >"$d/etc/nodeprov-pkg/$1"
	printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: nodeprov <test@example.com>\nDescription: nodeprov test package\n%s' "$1" "$2" "$3" >"$d/DEBIAN/control"
	dpkg-deb -Zgzip --build "$d" "$4/$1_$2_all.deb" >/dev/null
}
build npdemo 1.0 '' /tmp/repo
build npextra 1.0 '' /tmp/repo
build npapp 1.0 'Depends: npdemo
Recommends: npextra
' /tmp/repo
build npdemo 1.1 '' /tmp
cd /tmp/repo && dpkg-scanpackages -m . /dev/null 2>/dev/null >Packages
"#;

/// Installs npextra 1.0 and puts 1.1 in the repository, its lists refreshed.
const ADD_NPEXTRA_1_1: &str = r#"set -eu
d=/root/deb/npextra-1.1
mkdir -p "$d/DEBIAN" "$d/etc/nodeprov-pkg"
echo 1.1 >"$d/etc/nodeprov-pkg/npextra"
printf 'Package: npextra\nVersion: 1.1\nArchitecture: all\nMaintainer: nodeprov <test@example.com>\nDescription: nodeprov test package\n' >"$d/DEBIAN/control"
dpkg-deb -Zgzip --build "$d" /tmp/repo/npextra_1.1_all.deb >/dev/null
dpkg -i /tmp/repo/npextra_1.0_all.deb >/dev/null
cd /tmp/repo && dpkg-scanpackages -m . /dev/null 2>/dev/null >Packages
apt-get update -q >/dev/null
"#;

#[test]
fn apt_pins_local_debs_and_cleanup_with_real_dpkg() {
    let before = machine_digest();
    let host = IsolatedHost::apt();
    host.sh(BUILD_DEBS);

    let refresh = "    - apt: {update_cache: true, cache_valid_time: 3600}\n";
    assert_eq!(statuses(&play(&host, "apply", refresh)), ["changed"]);
    assert_eq!(statuses(&play(&host, "apply", refresh)), ["ok"]);

    let pin = "    - apt: {name: 'npdemo=1.*', install_recommends: false}\n    - apt: {name: npapp, install_recommends: false}\n";
    let check = play(&host, "check", pin);
    assert_eq!(
        changes(&check, 0),
        [r#"package npdemo: "absent" -> "1.0""#],
        "{check:#}"
    );
    assert_eq!(statuses(&play(&host, "apply", pin)), ["changed", "changed"]);
    assert_eq!(host.dpkg_status("npdemo"), "ii 1.0");
    assert_eq!(host.dpkg_status("npapp"), "ii 1.0");
    assert!(
        !host.dpkg_status("npextra").starts_with("ii"),
        "recommends were not to be installed"
    );
    assert_eq!(statuses(&play(&host, "apply", pin)), ["ok", "ok"]);

    // Removed by hand: check names the package as absent and leaves it so.
    host.sh("dpkg -r --force-depends npdemo >/dev/null 2>&1");
    let (code, drift) = run_play(&host, "check", pin);
    let c = drift_on(code, &drift, 0, "package npdemo");
    assert_eq!(
        [&c["before"], &c["after"], &c["evidence"]],
        ["absent", "1.0", "dpkg-query -W"],
        "{drift:#}"
    );
    assert_eq!(statuses(&drift), ["drift", "ok"], "{drift:#}");
    assert!(!host.dpkg_status("npdemo").starts_with("ii"));
    let doc = play(&host, "apply", pin);
    assert_eq!(statuses(&doc), ["changed", "ok"], "{doc:#}");
    assert_eq!(host.dpkg_status("npdemo"), "ii 1.0");

    let deb = "    - apt: {deb: /tmp/npdemo_1.1_all.deb}\n";
    let check = play(&host, "check", deb);
    assert_eq!(
        changes(&check, 0),
        [r#"package npdemo: "1.0" -> "1.1""#],
        "{check:#}"
    );
    assert_eq!(statuses(&play(&host, "apply", deb)), ["changed"]);
    assert_eq!(host.dpkg_status("npdemo"), "ii 1.1");
    assert_eq!(statuses(&play(&host, "apply", deb)), ["ok"]);

    // Every installed package to its newest (Ansible's `name: "*"`), read
    // from a simulated upgrade: asking the lists about `*` takes minutes.
    host.sh(ADD_NPEXTRA_1_1);
    let everything = "    - apt: {name: '*', state: latest}\n";
    let check = play(&host, "check", everything);
    assert_eq!(
        changes(&check, 0),
        [r#"package npextra: "1.0" -> "1.1""#],
        "{check:#}"
    );
    assert_eq!(statuses(&play(&host, "apply", everything)), ["changed"]);
    assert_eq!(host.dpkg_status("npextra"), "ii 1.1");
    assert_eq!(statuses(&play(&host, "apply", everything)), ["ok"]);

    // npdemo came in as npapp's dependency the second time, so once npapp
    // is purged, autoremove takes it too.
    host.sh("apt-mark auto npdemo >/dev/null");
    let gone =
        "    - apt: {name: npapp, state: absent, purge: true, autoremove: true, clean: true}\n";
    assert_eq!(statuses(&play(&host, "apply", gone)), ["changed"]);
    // Purged: not even configuration files ("rc") are left.
    for gone in ["npapp", "npdemo"] {
        let status = host.dpkg_status(gone);
        assert!(
            !status.starts_with("ii") && !status.starts_with("rc"),
            "{gone}: {status}"
        );
    }
    assert_eq!(statuses(&play(&host, "apply", gone)), ["ok"]);
    assert_machine_unchanged(&before);
}

#[test]
fn repository_files_and_rpm_keys_on_an_el_host() {
    let before = machine_digest();
    let host = IsolatedHost::el();
    host.sh(BUILD_RPMS);
    let id = make_key(&host);
    let tasks = "    - yum_repository: {name: extra, description: Extra, baseurl: 'file:///tmp/repo', enabled: false, gpgcheck: true, gpgkey: 'file:///tmp/key.asc'}
    - rpm_key: {key: /tmp/key.asc}
    - dnf: {name: npdemo, enablerepo: extra, disablerepo: local, disable_gpg_check: true}
";
    let check = play(&host, "check", tasks);
    assert_eq!(statuses(&check), ["drift", "drift", "drift"], "{check:#}");
    assert!(!host.path("/etc/yum.repos.d/extra.repo").exists());
    let doc = play(&host, "apply", tasks);
    assert_eq!(statuses(&doc), ["changed", "changed", "changed"], "{doc:#}");
    assert_eq!(
        std::fs::read_to_string(host.path("/etc/yum.repos.d/extra.repo")).unwrap(),
        "[extra]\nbaseurl = file:///tmp/repo\nenabled = 0\ngpgcheck = 1\ngpgkey = file:///tmp/key.asc\nname = Extra\n\n"
    );
    let keys = host.sh("rpm -q gpg-pubkey --qf '%{VERSION} %{SUMMARY}\\n'");
    assert!(
        keys.starts_with(&format!("{id} ")) && keys.contains("nodeprov test"),
        "{keys}"
    );
    assert_eq!(host.rpm_version("npdemo"), "1.1-1");
    assert_eq!(statuses(&play(&host, "apply", tasks)), ["ok", "ok", "ok"]);

    // The repository enabled and the key removed by hand: check names
    // both and leaves them.
    let repo = "/etc/yum.repos.d/extra.repo";
    host.sh(&format!(
        "sed -i 's/^enabled = 0$/enabled = 1/' {repo} && rpm -e gpg-pubkey-{id}"
    ));
    let (code, drift) = run_play(&host, "check", tasks);
    let file = drift_on(code, &drift, 0, repo);
    let diff = file["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("-enabled = 1\n+enabled = 0\n"), "{drift:#}");
    let key = drift_on(code, &drift, 1, &format!("rpm key {id}"));
    assert_eq!(
        [&key["before"], &key["evidence"]],
        ["absent", "rpm -q gpg-pubkey"]
    );
    assert_eq!(statuses(&drift)[2], "ok", "{drift:#}");
    assert!(std::fs::read_to_string(host.path(repo))
        .unwrap()
        .contains("enabled = 1\n"));
    assert_eq!(
        host.sh("rpm -q gpg-pubkey >/dev/null || echo none"),
        "none\n"
    );
    let doc = play(&host, "apply", tasks);
    assert_eq!(statuses(&doc), ["changed", "changed", "ok"], "{doc:#}");

    let gone = "    - rpm_key: {key: /tmp/key.asc, state: absent}\n    - yum_repository: {name: extra, state: absent}\n";
    assert_eq!(
        statuses(&play(&host, "apply", gone)),
        ["changed", "changed"]
    );
    assert_eq!(
        host.sh("rpm -q gpg-pubkey >/dev/null || echo none"),
        "none\n"
    );
    assert!(!host.path("/etc/yum.repos.d/extra.repo").exists());
    assert_eq!(statuses(&play(&host, "apply", gone)), ["ok", "ok"]);
    assert_machine_unchanged(&before);
}

#[test]
fn apt_keys_and_repository_lines_on_a_debian_host() {
    let before = machine_digest();
    let host = IsolatedHost::apt();
    host.sh(BUILD_DEBS);
    let id = make_key(&host);
    let tasks = "    - apt_key: {file: /tmp/key.asc, keyring: /etc/apt/keyrings/np.gpg}
    - apt_repository: {repo: 'deb [trusted=yes] file:/tmp/repo ./', filename: second}
";
    let check = play(&host, "check", tasks);
    assert_eq!(statuses(&check), ["drift", "drift"], "{check:#}");
    assert_eq!(
        changes(&check, 0),
        [format!(
            r#"apt key {id}: "absent" -> "/etc/apt/keyrings/np.gpg""#
        )]
    );
    let doc = play(&host, "apply", tasks);
    assert_eq!(statuses(&doc), ["changed", "changed"], "{doc:#}");
    let listed =
        host.sh("GNUPGHOME=$(mktemp -d) gpg --with-colons --show-keys /etc/apt/keyrings/np.gpg");
    assert!(listed.contains("nodeprov test"), "{listed}");
    assert_eq!(
        std::fs::read_to_string(host.path("/etc/apt/sources.list.d/second.list")).unwrap(),
        "deb [trusted=yes] file:/tmp/repo ./\n"
    );
    // update_cache ran: the lists know the repository.
    assert!(host
        .sh("apt-cache policy npdemo")
        .contains("Candidate: 1.0"));
    assert_eq!(statuses(&play(&host, "apply", tasks)), ["ok", "ok"]);

    // The keyring removed and the list emptied by hand: check names both
    // and leaves them.
    let list = "/etc/apt/sources.list.d/second.list";
    host.sh(&format!("rm /etc/apt/keyrings/np.gpg && : >{list}"));
    let (code, drift) = run_play(&host, "check", tasks);
    let key = drift_on(code, &drift, 0, &format!("apt key {id}"));
    assert_eq!(
        [&key["before"], &key["after"]],
        ["absent", "/etc/apt/keyrings/np.gpg"]
    );
    let file = drift_on(code, &drift, 1, list);
    let diff = file["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("+deb [trusted=yes] file:/tmp/repo ./\n"),
        "{drift:#}"
    );
    assert!(!host.path("/etc/apt/keyrings/np.gpg").exists());
    assert_eq!(std::fs::read_to_string(host.path(list)).unwrap(), "");
    let doc = play(&host, "apply", tasks);
    assert_eq!(statuses(&doc), ["changed", "changed"], "{doc:#}");

    let gone = format!(
        "    - apt_key: {{id: '{id}', keyring: /etc/apt/keyrings/np.gpg, state: absent}}\n    - apt_repository: {{repo: 'deb [trusted=yes] file:/tmp/repo ./', filename: second, state: absent}}\n"
    );
    assert_eq!(
        statuses(&play(&host, "apply", &gone)),
        ["changed", "changed"]
    );
    assert!(!host.path("/etc/apt/keyrings/np.gpg").exists());
    assert!(!host.path("/etc/apt/sources.list.d/second.list").exists());
    assert_eq!(statuses(&play(&host, "apply", &gone)), ["ok", "ok"]);
    assert_machine_unchanged(&before);
}

#[test]
fn a_ppa_is_planned_for_the_ubuntu_release_and_needs_its_key() {
    let before = machine_digest();
    let host = IsolatedHost::ubuntu();
    let list = "/etc/apt/sources.list.d/ppa_graphics_drivers_ppa_jammy.list";
    let line = "deb https://ppa.launchpadcontent.net/graphics-drivers/ppa/ubuntu jammy main";
    // No network here: the cache refresh would fail on Launchpad.
    let tasks = "    - apt_repository: {repo: 'ppa:graphics-drivers/ppa', update_cache: false}\n";

    let check = play(&host, "check", tasks);
    assert_eq!(statuses(&check), ["drift"], "{check:#}");
    assert_eq!(
        changes(&check, 0),
        [format!(r#"{list}: "no line" -> "{line}""#)]
    );
    let note = check["hosts"][0]["tasks"][0]["notes"][0].to_string();
    assert!(note.contains("signing key is not installed"), "{check:#}");
    let refused = play_failing(&host, "apply", tasks);
    assert_eq!(statuses(&refused), ["failed"], "{refused:#}");
    assert!(
        refused.to_string().contains("nodeprov does not"),
        "{refused:#}"
    );
    assert!(!host.path(list).exists());

    host.sh(
        "mkdir -p /etc/apt/trusted.gpg.d && : > /etc/apt/trusted.gpg.d/graphics-drivers-ubuntu-ppa.gpg",
    );
    let check = play(&host, "check", tasks);
    assert_eq!(statuses(&check), ["drift"], "{check:#}");
    assert!(check["hosts"][0]["tasks"][0]["notes"]
        .as_array()
        .is_none_or(Vec::is_empty));
    let doc = play(&host, "apply", tasks);
    assert_eq!(statuses(&doc), ["changed"], "{doc:#}");
    assert_eq!(
        std::fs::read_to_string(host.path(list)).unwrap(),
        format!("{line}\n")
    );
    assert_eq!(statuses(&play(&host, "apply", tasks)), ["ok"]);

    let debian = IsolatedHost::apt();
    let doc = play_failing(&debian, "check", tasks);
    assert_eq!(statuses(&doc), ["failed"], "{doc:#}");
    assert!(
        doc.to_string().contains("PPAs are built for Ubuntu"),
        "{doc:#}"
    );
    assert_machine_unchanged(&before);
}

/// A modular repository: stream `stable` of module `npmod`, whose default
/// profile installs npdemo.
const MODULES_YAML: &str = r#"---
document: modulemd
version: 2
data:
  name: npmod
  stream: stable
  version: 1
  context: c0ffee42
  arch: noarch
  summary: nodeprov test module
  description: nodeprov test module
  license:
    module: [MIT]
  profiles:
    default:
      rpms: [npdemo]
  artifacts:
    rpms:
      - npdemo-0:1.0-1.noarch
      - npdemo-0:1.1-1.noarch
...
---
document: modulemd-defaults
version: 1
data:
  module: npmod
  stream: stable
  profiles:
    stable: [default]
...
"#;

#[test]
fn dnf_module_streams_from_a_modular_repository() {
    let before = machine_digest();
    let host = IsolatedHost::el();
    host.sh(BUILD_RPMS);
    std::fs::write(host.path("/tmp/modules.yaml"), MODULES_YAML).unwrap();
    host.sh("modifyrepo_c --mdtype=modules /tmp/modules.yaml /tmp/repo/repodata >/dev/null");
    let stream = "    - dnf: {name: '@npmod:stable/default', update_cache: true}\n";
    let check = play(&host, "check", stream);
    assert_eq!(
        changes(&check, 0)[0],
        r#"module npmod: "not enabled" -> "stable""#,
        "{check:#}"
    );
    let doc = play(&host, "apply", stream);
    assert_eq!(statuses(&doc), ["changed"], "{doc:#}");
    assert!(host
        .sh("dnf -C -q module list --enabled npmod")
        .contains("[e]"));
    assert_ne!(
        host.rpm_version("npdemo"),
        "package npdemo is not installed"
    );
    assert_eq!(statuses(&play(&host, "apply", stream)), ["ok"]);
    assert_machine_unchanged(&before);
}

/// `package_facts` after an install earlier in the run: the package is
/// listed, read again after the change; a rerun changes nothing and reads
/// everything in one probe.
fn lists_installed(host: &IsolatedHost, install: &str, that: &[&str]) {
    let tasks = format!(
        "{install}    - package_facts:\n    - assert:\n        that:\n{}",
        that.iter()
            .map(|t| format!("          - \"{t}\"\n"))
            .collect::<String>()
    );
    let first = play(host, "apply", &tasks);
    assert_eq!(statuses(&first), ["changed", "ok", "ok"], "{first:#}");
    let again = play(host, "apply", &tasks);
    assert_eq!(statuses(&again), ["ok", "ok", "ok"], "{again:#}");
    assert_eq!(again["hosts"][0]["round_trips"], 1, "{again:#}");
}

#[test]
fn package_facts_read_real_dpkg_and_rpm_databases() {
    let before = machine_digest();
    let deb = IsolatedHost::apt();
    deb.sh(BUILD_DEBS);
    lists_installed(
        &deb,
        "    - apt: {name: npdemo, update_cache: true, install_recommends: false}\n",
        &[
            "ansible_facts.packages.npdemo == [{'name': 'npdemo', 'version': '1.0', 'arch': 'all', 'source': 'apt'}]",
            "packages['npapp'] is not defined",
        ],
    );
    let el = IsolatedHost::el();
    el.sh(BUILD_RPMS);
    lists_installed(
        &el,
        "    - dnf: {name: npdemo-1.0, update_cache: true}\n",
        &[
            "ansible_facts.packages.npdemo | length == 1",
            "packages.npdemo[0].version == '1.0' and packages.npdemo[0].release == '1'",
            "packages.npdemo[0].epoch is none and packages.npdemo[0].arch == 'noarch'",
            "packages.npdemo[0].source == 'rpm' and 'npapp' not in packages",
        ],
    );
    assert_machine_unchanged(&before);
}
