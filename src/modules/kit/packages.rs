//! The packages a host has installed, read once per host whichever task
//! asks (`package` plans from it, `package_facts` reports it).

use std::collections::BTreeMap;

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Manager {
    Dnf,
    Yum,
    Apt,
}

impl Manager {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "dnf" => Some(Manager::Dnf),
            "yum" => Some(Manager::Yum),
            "apt" => Some(Manager::Apt),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Manager::Dnf => "dnf",
            Manager::Yum => "yum",
            Manager::Apt => "apt",
        }
    }
}

/// One installed build of a package.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Build {
    /// `epoch:version-release` (rpm) or the Debian version.
    pub version: String,
    /// Its architecture, when the answer names it.
    pub arch: Option<String>,
}

/// Every package a host has, with its package manager and, for apt, how old
/// the package lists are and whether downloaded archives are cached.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Host {
    pub manager: Manager,
    /// Seconds since the package lists were last refreshed (apt only).
    pub cache_age: Option<u64>,
    /// `.deb` files in apt's archive cache (what `clean` removes).
    pub archives: u64,
    /// Installed builds by name.
    pub installed: BTreeMap<String, Vec<Build>>,
    /// Removed packages whose configuration files remain (dpkg `rc`).
    pub config_only: Vec<String>,
}

impl Host {
    /// The installed versions of `name`, none when it is not installed.
    pub(crate) fn versions(&self, name: &str) -> Vec<String> {
        self.installed
            .get(name)
            .map(|b| b.iter().map(|b| b.version.clone()).collect())
            .unwrap_or_default()
    }
}

/// The host's package state: `manager M`, for apt `cache AGE ARCHIVES`,
/// then `i NAME VERSION ARCH` per installed package and `c NAME` per
/// configuration-only one; `none` without a package manager.
pub(crate) struct Installed;

/// Sets `$m` to the host's package manager, as Ansible's `pkg_mgr` picks
/// it: apt on the Debian family even when dnf is installed too, else dnf,
/// yum, apt-get, or `none`.
pub(crate) const DETECT: &str = r#"if [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; then m=apt
elif command -v dnf >/dev/null 2>&1; then m=dnf
elif command -v yum >/dev/null 2>&1; then m=yum
elif command -v apt-get >/dev/null 2>&1; then m=apt
else m=none; fi"#;

const INSTALLED_SCRIPT: &str = r#"[ "$m" = none ] && { echo none; exit 0; }
echo "manager $m"
if [ "$m" = apt ]; then
  # Lists without any Packages file were never refreshed: as old as can be.
  s=/var/lib/apt/periodic/update-success-stamp; [ -e "$s" ] || s=/var/lib/apt/lists
  [ "$s" = /var/lib/apt/lists ] && ! ls "$s" 2>/dev/null | grep -q '_Packages' && s=/nonexistent
  n=$(ls /var/cache/apt/archives 2>/dev/null | grep -c '\.deb$')
  echo "cache $(( $(date +%s) - $(stat -c %Y "$s" 2>/dev/null || echo 0) )) $n"
  dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version} ${Architecture}\n' | awk '$1 == "ii" { print "i", $2, $3, $4 } $1 == "rc" { print "c", $2 }'
else
  rpm -qa --qf 'i %{NAME} %|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE} %{ARCH}\n'
fi"#;

impl Fact for Installed {
    type Query = ();
    type Value = Option<Host>;

    fn key(_: &()) -> String {
        "pkg:installed".into()
    }

    fn script(_: &()) -> String {
        format!("{DETECT}\n{INSTALLED_SCRIPT}")
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        let bad = |detail: String| fact::bad(Self::key(&()), detail);
        let mut lines = r.stdout.lines();
        let first = lines.next().unwrap_or("none");
        if first == "none" {
            return Ok(None);
        }
        let manager = first
            .strip_prefix("manager ")
            .and_then(Manager::parse)
            .ok_or_else(|| bad(format!("no package manager in: {first}")))?;
        let mut host = Host {
            manager,
            cache_age: None,
            archives: 0,
            installed: BTreeMap::new(),
            config_only: Vec::new(),
        };
        for line in lines {
            let f: Vec<&str> = line.split(' ').collect();
            match f.as_slice() {
                ["cache", age, archives] => {
                    host.cache_age = age.parse().ok();
                    host.archives = archives.parse().unwrap_or(0);
                }
                ["i", name, version, arch @ ..] if arch.len() <= 1 => host
                    .installed
                    .entry(name.to_string())
                    .or_default()
                    .push(Build {
                        version: version.to_string(),
                        arch: arch.first().map(|a| a.to_string()),
                    }),
                ["c", name] => host.config_only.push(name.to_string()),
                _ => return Err(bad(format!("unexpected line: {line}"))),
            }
        }
        Ok(Some(host))
    }

    fn render(v: &Self::Value) -> ProbeResult {
        let Some(h) = v else {
            return ProbeResult::ok("none\n");
        };
        let mut out = format!("manager {}\n", h.manager.name());
        if let Some(age) = h.cache_age {
            out.push_str(&format!("cache {age} {}\n", h.archives));
        }
        for (name, builds) in &h.installed {
            for b in builds {
                match &b.arch {
                    Some(arch) => out.push_str(&format!("i {name} {} {arch}\n", b.version)),
                    None => out.push_str(&format!("i {name} {}\n", b.version)),
                }
            }
        }
        for name in &h.config_only {
            out.push_str(&format!("c {name}\n"));
        }
        ProbeResult::ok(out)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let build = |version: &str, arch: Option<&str>| Build {
        version: version.into(),
        arch: arch.map(Into::into),
    };
    rt.check::<Installed>(&(), None);
    rt.check::<Installed>(
        &(),
        Some(Host {
            manager: Manager::Apt,
            cache_age: Some(120),
            archives: 3,
            installed: BTreeMap::from([
                (
                    "curl".into(),
                    vec![build("8.5.0-2ubuntu10.6", Some("amd64"))],
                ),
                (
                    "linux-image".into(),
                    vec![build("6.1", None), build("6.2", Some("amd64"))],
                ),
            ]),
            config_only: vec!["old".into()],
        }),
    );
}
