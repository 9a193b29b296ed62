//! Requirement specifiers (`torch==2.3.0`, `numpy>=1.26,<2`) and the PEP 440
//! versions they are compared with, so an installed set is judged on the
//! controller without asking pip.

use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;

/// A project name as pip compares it: lowercase, runs of `-`, `_` and `.`
/// as one `-` (PEP 503).
pub(crate) fn normalize(name: &str) -> String {
    static SEP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[-_.]+").unwrap());
    SEP.replace_all(&name.to_ascii_lowercase(), "-")
        .into_owned()
}

/// One requirement: a name, its extras and what its version must satisfy.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Requirement {
    /// As written, for pip's command line and reports.
    pub text: String,
    /// Normalized, as `pip list` is matched.
    pub name: String,
    pub specs: Vec<Spec>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    op: Op,
    version: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Arbitrary,
    Eq,
    Ne,
    Le,
    Ge,
    Lt,
    Gt,
    Compatible,
}

impl Requirement {
    /// Reads `name[extras] op version, …`; anything else (URLs, paths,
    /// environment markers) is `None`: its outcome cannot be planned.
    pub(crate) fn parse(text: &str) -> Option<Requirement> {
        static REQ: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[A-Za-z0-9._,\s-]*\])?\s*(.*)$")
                .unwrap()
        });
        let text = text.trim();
        let c = REQ.captures(text)?;
        let rest = c[2].trim();
        let specs = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(',').map(Spec::parse).collect::<Option<_>>()?
        };
        Some(Requirement {
            text: text.to_string(),
            name: normalize(&c[1]),
            specs,
        })
    }

    /// Whether an installed `version` satisfies every specifier.
    pub(crate) fn allows(&self, version: &str) -> bool {
        self.specs.iter().all(|s| s.allows(version))
    }

    /// The one version an exact pin installs, for predictions.
    pub(crate) fn pinned(&self) -> Option<&str> {
        match &self.specs[..] {
            [Spec {
                op: Op::Eq,
                version,
            }] if !version.ends_with(".*") => Some(version),
            _ => None,
        }
    }
}

impl Spec {
    fn parse(text: &str) -> Option<Spec> {
        static SPEC: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"^\s*(===|==|!=|<=|>=|~=|<|>)\s*([A-Za-z0-9.*+!_-]+)\s*$").unwrap()
        });
        let c = SPEC.captures(text)?;
        let op = match &c[1] {
            "===" => Op::Arbitrary,
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<=" => Op::Le,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            ">" => Op::Gt,
            _ => Op::Compatible,
        };
        let version = c[2].to_string();
        let wildcard = version.strip_suffix(".*").unwrap_or(&version);
        let valid = Version::parse(wildcard).is_some()
            && (!version.ends_with(".*") || matches!(op, Op::Eq | Op::Ne));
        (valid || op == Op::Arbitrary).then_some(Spec { op, version })
    }

    fn allows(&self, installed: &str) -> bool {
        if self.op == Op::Arbitrary {
            return installed.eq_ignore_ascii_case(&self.version);
        }
        let Some(have) = Version::parse(installed) else {
            return false;
        };
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let want = Version::parse(prefix).expect("checked when parsed");
            return (self.op == Op::Eq) == have.starts_with(&want);
        }
        let want = Version::parse(&self.version).expect("checked when parsed");
        // A pin without a local label (`+cu121`) matches any local build of it.
        let have = if want.local.is_none() {
            have.public()
        } else {
            have
        };
        let ord = have.cmp(&want);
        match self.op {
            Op::Eq => ord == Ordering::Equal,
            Op::Ne => ord != Ordering::Equal,
            Op::Le => ord != Ordering::Greater,
            Op::Ge => ord != Ordering::Less,
            Op::Lt => ord == Ordering::Less,
            Op::Gt => ord == Ordering::Greater,
            _ => ord != Ordering::Less && have.starts_with(&want.compatible_prefix()),
        }
    }
}

/// Epoch, release without trailing zeros, pre-release phase, post-release
/// and dev-release, compared in that order.
type SortKey = (u64, Vec<u64>, (i8, u64), i64, (u8, u64));

/// A PEP 440 version: epoch, release numbers, pre-, post- and
/// development-release, local label.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Version {
    epoch: u64,
    release: Vec<u64>,
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Option<String>,
}

impl Version {
    fn parse(text: &str) -> Option<Version> {
        static V: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(concat!(
                r"^v?(?:(\d+)!)?(\d+(?:\.\d+)*)",
                r"(?:[-_.]?(a|alpha|b|beta|rc|c|pre|preview)[-_.]?(\d*))?",
                r"(?:[-_.]?(?:post|rev|r)[-_.]?(\d*)|-(\d+))?",
                r"(?:[-_.]?dev[-_.]?(\d*))?",
                r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$"
            ))
            .unwrap()
        });
        let text = text.trim().to_ascii_lowercase();
        let c = V.captures(&text)?;
        let num = |i: usize| c.get(i).map(|m| m.as_str().parse().unwrap_or(0));
        let phase = c.get(3).map(|m| match m.as_str() {
            "a" | "alpha" => 0,
            "b" | "beta" => 1,
            _ => 2,
        });
        Some(Version {
            epoch: num(1).unwrap_or(0),
            release: c[2].split('.').map(|n| n.parse().unwrap_or(0)).collect(),
            pre: phase.map(|p| (p, num(4).unwrap_or(0))),
            post: num(5).or(num(6)),
            dev: num(7),
            local: c.get(8).map(|m| m.as_str().replace(['-', '_'], ".")),
        })
    }

    fn public(mut self) -> Version {
        self.local = None;
        self
    }

    /// Whether this version's release begins with `prefix`'s (zeros padded).
    fn starts_with(&self, prefix: &Version) -> bool {
        self.epoch == prefix.epoch
            && prefix
                .release
                .iter()
                .enumerate()
                .all(|(i, n)| self.release.get(i).copied().unwrap_or(0) == *n)
    }

    /// `~=1.4.5` also needs `==1.4.*`.
    fn compatible_prefix(&self) -> Version {
        let keep = self.release.len().saturating_sub(1).max(1);
        Version {
            epoch: self.epoch,
            release: self.release[..keep].to_vec(),
            pre: None,
            post: None,
            dev: None,
            local: None,
        }
    }

    /// The order PEP 440 gives: a bare dev release before its pre-releases,
    /// those before the final release, then post-releases.
    fn key(&self) -> SortKey {
        let mut release = self.release.clone();
        while release.len() > 1 && release.last() == Some(&0) {
            release.pop();
        }
        let pre = match (self.pre, self.post, self.dev) {
            (Some((p, n)), _, _) => (p as i8, n),
            (None, None, Some(_)) => (-1, 0),
            _ => (3, 0),
        };
        let post = self.post.map_or(-1, |p| p as i64);
        let dev = self.dev.map_or((1, 0), |d| (0, d));
        (self.epoch, release, pre, post, dev)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key()
            .cmp(&other.key())
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(req: &str, version: &str) -> bool {
        Requirement::parse(req).unwrap().allows(version)
    }

    #[test]
    fn specifiers_judge_installed_versions_as_pip_does() {
        assert!(allows("torch==2.3.0", "2.3.0+cu121"));
        assert!(allows("torch==2.3", "2.3.0"));
        assert!(!allows("torch==2.3.0+cu118", "2.3.0+cu121"));
        assert!(allows("numpy>=1.26", "1.26.4"));
        assert!(!allows("numpy>=1.26", "1.25.2"));
        assert!(allows("numpy>=1.26,<2", "1.26.4"));
        assert!(!allows("numpy>=1.26,<2", "2.0.0"));
        assert!(allows("numpy==1.26.*", "1.26.4"));
        assert!(!allows("numpy!=1.26.*", "1.26.4"));
        assert!(allows("pkg~=1.4.5", "1.4.9"));
        assert!(!allows("pkg~=1.4.5", "1.5.0"));
        assert!(allows("pkg~=1.4", "1.9"));
        assert!(!allows("pkg>=1.0", "1.0rc1"));
        assert!(allows("pkg>1.0rc1", "1.0"));
        assert!(allows("pkg<1.0", "1.0.dev3"));
        assert!(allows("pkg>1.0", "1.0.post1"));
        assert!(allows("pkg===1.0-weird", "1.0-weird"));
        assert!(allows("Pkg[extra]", "0.1"));
    }

    #[test]
    fn names_are_normalized_and_unplannable_requirements_refused() {
        let r = Requirement::parse("Foo_Bar.baz [cuda] >= 1.0").unwrap();
        assert_eq!(r.name, "foo-bar-baz");
        assert_eq!(r.pinned(), None);
        assert_eq!(
            Requirement::parse("torch==2.3.0").unwrap().pinned(),
            Some("2.3.0")
        );
        for bad in [
            "git+https://github.com/x/y",
            "./local.whl",
            "pkg; python_version<'3.9'",
            "pkg>=",
            "pkg>=1.*",
            "-r other.txt",
            "$(reboot)",
        ] {
            assert_eq!(Requirement::parse(bad), None, "{bad}");
        }
    }
}
