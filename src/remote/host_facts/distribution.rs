//! Ansible's distribution facts, decided the way Ansible's `distribution.py`
//! and the `distro` library it bundles decide them: a first guess from
//! os-release, lsb-release and the distribution's release file, then
//! corrected by the first release file (in Ansible's order) that names the
//! distribution. Reads only what the facts probe printed; the `lsb_release`
//! command and dpkg's tzdata status, which Ansible may also run, are not run.
//!
//! Ansible's release-file rules are followed for the EL family, Fedora,
//! Amazon Linux, SUSE's os-release and the Debian family's Debian, Ubuntu,
//! SteamOS and Mint; any other distribution is os-release's `NAME`, as in
//! Ansible's last rule (Ansible's own rules for Arch, Clear Linux, CoreOS,
//! Flatcar, Kali, Devuan... are not reproduced).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

/// What the probe read: os-release (from /etc, or /usr/lib when /etc has
/// none), /etc/lsb-release, and the first line of each release file.
pub struct Sources<'a> {
    /// os-release lines, `KEY=value` as written (quotes kept).
    pub os_release: Vec<&'a str>,
    /// Whether os-release came from /etc (Ansible's own checks read only that).
    pub os_release_in_etc: bool,
    pub lsb_release: Vec<&'a str>,
    /// `oracle-release` → its first line, for the files that exist and are not empty.
    pub release_files: HashMap<&'a str, &'a str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub name: String,
    pub version: String,
    pub major: String,
    pub release: String,
    pub family: String,
}

/// Ansible's `OS_FAMILY_MAP` for Linux distributions.
const FAMILIES: [(&str, &[&str]); 6] = [
    (
        "RedHat",
        &[
            "RedHat",
            "RHEL",
            "Fedora",
            "CentOS",
            "Scientific",
            "SLC",
            "Ascendos",
            "CloudLinux",
            "PSBM",
            "OracleLinux",
            "OVS",
            "OEL",
            "Amazon",
            "Amzn",
            "Virtuozzo",
            "XenServer",
            "Alibaba",
            "EulerOS",
            "openEuler",
            "AlmaLinux",
            "Rocky",
            "TencentOS",
            "EuroLinux",
            "Kylin Linux Advanced Server",
            "MIRACLE",
        ],
    ),
    (
        "Debian",
        &[
            "Debian",
            "Ubuntu",
            "Raspbian",
            "Neon",
            "KDE neon",
            "Linux Mint",
            "SteamOS",
            "Devuan",
            "Kali",
            "Cumulus Linux",
            "Pop!_OS",
            "Parrot",
            "Pardus GNU/Linux",
            "Uos",
            "Deepin",
            "OSMC",
        ],
    ),
    (
        "Suse",
        &[
            "SuSE",
            "SLES",
            "SLED",
            "openSUSE",
            "openSUSE Tumbleweed",
            "SLES_SAP",
            "SUSE_LINUX",
            "openSUSE Leap",
            "ALP-Dolomite",
            "SL-Micro",
        ],
    ),
    ("Archlinux", &["Archlinux", "Antergos", "Manjaro"]),
    ("Gentoo", &["Gentoo", "Funtoo"]),
    ("Alpine", &["Alpine"]),
];

/// The facts Ansible would report from these files.
pub fn detect(src: &Sources) -> Distribution {
    let os = assignments(&src.os_release);
    let lsb = assignments(&src.lsb_release);
    let distro = Distro {
        os: &os,
        lsb: &lsb,
        release_file: release_file(src),
        debian_version: src.release_files.get("debian_version").copied(),
    };
    let mut d = distro.guess();
    if let Some(found) = from_release_files(src, &os, &d) {
        d = found;
    }
    d.family = FAMILIES
        .iter()
        .find(|(_, names)| names.contains(&d.name.as_str()))
        .map_or(d.name.as_str(), |(family, _)| family)
        .to_string();
    d
}

/// The package manager Ansible reports: yum up to EL7 and dnf from EL8,
/// Fedora from 23 and Amazon Linux from 2022 (Ansible's thresholds).
pub fn pkg_mgr(d: &Distribution) -> &'static str {
    let major: u32 = d.major.parse().unwrap_or(0);
    let dnf_from = match d.name.as_str() {
        "Fedora" => 23,
        "Amazon" => 2022,
        _ => 8,
    };
    match d.family.as_str() {
        "RedHat" if major >= dnf_from => "dnf",
        "RedHat" => "yum",
        "Debian" => "apt",
        "Suse" => "zypper",
        "Archlinux" => "pacman",
        "Gentoo" => "portage",
        "Alpine" => "apk",
        _ => "unknown",
    }
}

/// `KEY=value` lines as a map, shell quotes removed.
fn assignments<'a>(lines: &[&'a str]) -> HashMap<&'a str, String> {
    lines
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim().trim_matches(['"', '\'']).to_string()))
        .collect()
}

/// The release file `distro` reads: the first, by name, of those it knows.
fn release_file<'a>(src: &Sources<'a>) -> Option<(&'a str, &'a str)> {
    ["centos-release", "oracle-release", "redhat-release"]
        .iter()
        .find_map(|f| src.release_files.get(f).map(|line| (*f, *line)))
}

/// `distro`'s reading of one release-file line, "<name> release <version> (<codename>)".
pub(super) fn parse_release_line(line: &str) -> (String, String) {
    static REVERSED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[^)]*\)(.*)\()? *(?:STL )?([\d.+\-a-z]*\d) *(?:esaeler *)?(.+)")
            .expect("valid pattern")
    });
    let reversed: String = line.trim().chars().rev().collect();
    let Some(c) = REVERSED.captures(&reversed) else {
        return (String::new(), String::new());
    };
    let unreverse = |i: usize| {
        c.get(i)
            .map(|m| m.as_str().chars().rev().collect::<String>())
            .unwrap_or_default()
    };
    (unreverse(2), unreverse(1))
}

/// The `distro` library's answers (id, version, codename), as Ansible's
/// `sys_info` asks for them.
struct Distro<'a> {
    os: &'a HashMap<&'a str, String>,
    lsb: &'a HashMap<&'a str, String>,
    release_file: Option<(&'a str, &'a str)>,
    debian_version: Option<&'a str>,
}

impl Distro<'_> {
    fn os(&self, key: &str) -> String {
        self.os.get(key).cloned().unwrap_or_default()
    }

    fn lsb(&self, key: &str) -> String {
        self.lsb.get(key).cloned().unwrap_or_default()
    }

    fn id(&self) -> String {
        let from_file = || {
            let (file, _) = self.release_file?;
            let base = file.trim_end_matches("-release");
            Some(if base == "redhat" { "rhel" } else { base }.to_string())
        };
        [
            self.os("ID"),
            self.lsb("DISTRIB_ID").to_lowercase().replace(' ', "_"),
        ]
        .into_iter()
        .find(|v| !v.is_empty())
        .or_else(from_file)
        .unwrap_or_default()
    }

    /// `distro.version()`, or with `best` the most precise candidate.
    fn version(&self, best: bool) -> String {
        let file = self.release_file.map(|(_, l)| parse_release_line(l).0);
        let mut candidates = vec![
            self.os("VERSION_ID"),
            self.lsb("DISTRIB_RELEASE"),
            file.unwrap_or_default(),
            parse_release_line(&self.os("PRETTY_NAME")).0,
            parse_release_line(&self.lsb("DISTRIB_DESCRIPTION")).0,
        ];
        let id = self.id();
        if id == "debian" || self.os("ID_LIKE").split_whitespace().any(|l| l == "debian") {
            candidates.push(self.debian_version.unwrap_or_default().to_string());
        }
        let dots = |v: &str| v.matches('.').count();
        let mut version = String::new();
        for v in candidates {
            let better = if best {
                version.is_empty() || dots(&v) > dots(&version)
            } else {
                version.is_empty()
            };
            if better {
                version = v;
            }
        }
        version
    }

    /// Ansible's `get_distribution_codename`: os-release's codename fields
    /// (even when empty), Ubuntu's lsb codename, then `distro.codename()`.
    fn codename(&self) -> Option<String> {
        if let Some(c) = self
            .os
            .get("VERSION_CODENAME")
            .or(self.os.get("UBUNTU_CODENAME"))
        {
            return Some(c.clone());
        }
        if self.id() == "ubuntu" {
            if let Some(c) = self.lsb.get("DISTRIB_CODENAME") {
                return Some(c.clone());
            }
        }
        static FROM_VERSION: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\((\D+)\)|,\s*(\D+)").expect("valid pattern"));
        let from_os = FROM_VERSION.captures(&self.os("VERSION")).map(|c| {
            c.get(1)
                .or(c.get(2))
                .map_or(String::new(), |m| m.as_str().to_string())
        });
        let codename = from_os
            .or_else(|| self.lsb.get("DISTRIB_CODENAME").cloned())
            .filter(|c| !c.is_empty())
            .or_else(|| self.release_file.map(|(_, l)| parse_release_line(l).1))
            .unwrap_or_default();
        Some(codename).filter(|c| !c.is_empty())
    }

    /// Ansible's `_guess_distribution`, before any release file is parsed.
    fn guess(&self) -> Distribution {
        let id = self.id();
        let mut name = capitalize(&id);
        match name.as_str() {
            "Amzn" => name = "Amazon".into(),
            "Rhel" => name = "Redhat".into(),
            "" => name = "OtherLinux".into(),
            _ => {}
        }
        let version = match id.as_str() {
            "centos" => self
                .version(true)
                .split('.')
                .take(2)
                .collect::<Vec<_>>()
                .join("."),
            "debian" => self.version(true),
            _ => self.version(false),
        };
        let version = if version.is_empty() {
            "NA".into()
        } else {
            version
        };
        let major = version.split('.').next().filter(|m| !m.is_empty());
        Distribution {
            major: major.unwrap_or("NA").to_string(),
            name,
            version,
            release: self.codename().unwrap_or_else(|| "NA".into()),
            family: String::new(),
        }
    }
}

fn capitalize(s: &str) -> String {
    let lower = s.to_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Ansible's `process_dist_files`: the first release file, in Ansible's
/// order, that names the distribution corrects the guess.
fn from_release_files(
    src: &Sources,
    os: &HashMap<&str, String>,
    guess: &Distribution,
) -> Option<Distribution> {
    let named = |name: &str| Distribution {
        name: name.to_string(),
        ..guess.clone()
    };
    let first_word = |line: &str| {
        let line = line.trim_matches(['\'', '"', '\\']);
        line.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let file = |f: &str| src.release_files.get(f).copied();
    if let Some(line) = file("oracle-release") {
        return Some(named(&if line.contains("Oracle Linux") {
            "OracleLinux".to_string()
        } else {
            first_word(line)
        }));
    }
    if let Some(line) = file("centos-release") {
        if line.contains("CentOS Stream") {
            return Some(Distribution {
                release: "Stream".into(),
                ..named("CentOS")
            });
        }
        if line.contains("TencentOS Server") {
            return Some(named("TencentOS"));
        }
    }
    if let Some(line) = file("redhat-release") {
        return Some(named(&if line.contains("Red Hat") {
            "RedHat".to_string()
        } else {
            first_word(line)
        }));
    }
    let os_text = src.os_release_in_etc.then(|| src.os_release.join("\n"));
    if let Some(text) = os_text.as_deref().filter(|t| t.contains("Amazon")) {
        let mut d = named("Amazon");
        if let Some(v) = quoted_value(text, "VERSION_ID") {
            d.major = v.split('.').next().unwrap_or_default().to_string();
            d.version = v;
        }
        return Some(d);
    }
    if let Some(line) = file("system-release").filter(|l| l.contains("Amazon")) {
        let version = line
            .split_whitespace()
            .find(|w| w.chars().all(|c| c.is_ascii_digit()));
        return Some(Distribution {
            version: version.unwrap_or("NA").to_string(),
            ..named("Amazon")
        });
    }
    if let Some(text) = os_text
        .as_deref()
        .filter(|t| t.to_lowercase().contains("suse"))
    {
        return Some(suse(text, os, guess));
    }
    let lsb_text = (!src.lsb_release.is_empty()).then(|| src.lsb_release.join("\n"));
    let debian_like = [os_text.as_deref(), lsb_text.as_deref()]
        .into_iter()
        .flatten()
        .find_map(|text| debian_family(text, guess));
    if debian_like.is_some() {
        return debian_like;
    }
    os_text.map(|_| Distribution {
        name: os.get("NAME").cloned().unwrap_or_default(),
        version: match guess.version.as_str() {
            "NA" => os.get("VERSION").cloned().unwrap_or_else(|| "NA".into()),
            v => v.to_string(),
        },
        ..guess.clone()
    })
}

/// Ansible's `parse_distribution_file_SUSE` for os-release: the release is
/// the minor version ("0" for a SLES without one, "" for Tumbleweed).
fn suse(text: &str, os: &HashMap<&str, String>, guess: &Distribution) -> Distribution {
    static VERSION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?m)^VERSION_ID="?([0-9]+)\.?([0-9]*)"?"#).expect("valid pattern")
    });
    let mut d = Distribution {
        name: os.get("NAME").cloned().unwrap_or_default(),
        ..guess.clone()
    };
    let lower = text.to_lowercase();
    if let Some(c) = VERSION.captures(text) {
        let (major, minor) = (&c[1], &c[2]);
        d.version = if minor.is_empty() {
            major.to_string()
        } else {
            format!("{major}.{minor}")
        };
        d.major = major.to_string();
        if lower.contains("open") {
            d.release = minor.to_string();
        } else if lower.contains("enterprise") {
            d.release = if minor.is_empty() { "0" } else { minor }.to_string();
        }
    }
    d
}

/// Ansible's `parse_distribution_file_Debian` for the distributions it
/// names from os-release or lsb-release text.
fn debian_family(text: &str, guess: &Distribution) -> Option<Distribution> {
    static PRETTY_CODENAME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"PRETTY_NAME=[^(]+ \(?([^)]+?)\)").expect("valid pattern"));
    let named = |name: &str| Distribution {
        name: name.to_string(),
        ..guess.clone()
    };
    if text.contains("Debian") || text.contains("Raspbian") {
        let mut d = named("Debian");
        if let Some(c) = PRETTY_CODENAME.captures(text) {
            d.release = c[1].to_string();
        }
        return Some(d);
    }
    for name in ["Ubuntu", "SteamOS"] {
        if text.contains(name) {
            return Some(named(name));
        }
    }
    if text.contains("Mint") {
        let mut d = named("Linux Mint");
        if let Some(v) = quoted_value(text, "VERSION_ID") {
            d.major = v.split('.').next().unwrap_or_default().to_string();
            d.version = v;
        }
        return Some(d);
    }
    None
}

/// `KEY="value"` (quoted, as Ansible's patterns require) anywhere in `text`.
fn quoted_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix("=\"")?.strip_suffix('"'))
        .map(str::to_string)
}
