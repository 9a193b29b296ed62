//! What the package manager of a host says besides what is installed
//! (`kit::packages`): what the local package cache offers, what cleanup
//! would remove, and which dnf module streams are enabled.

use std::collections::BTreeMap;

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::packages::DETECT;
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

/// What the host's package cache offers for some names, without refreshing
/// it: for each name its candidate (what an install or upgrade would take)
/// and, for apt, every version (for `name=1.2*` pins).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Offer {
    pub candidate: BTreeMap<String, String>,
    pub versions: BTreeMap<String, Vec<String>>,
    /// The cache could not be read (rpm metadata never downloaded).
    pub unknown: bool,
}

/// `c NAME VERSION` (candidate) and `v NAME VERSION` lines; `unknown`
/// when dnf or yum has no cached metadata. For dnf and yum a candidate is
/// listed only when it upgrades an installed package. The name `*` asks
/// for every installed package that has an upgrade: for apt, what a
/// simulated `upgrade` would install, since asking apt-cache about `*`
/// reads every package of the lists, for minutes.
pub(super) struct Available;

impl Fact for Available {
    type Query = [String];
    type Value = Offer;

    fn key(names: &[String]) -> String {
        format!("pkg:available:{}", names.join(" "))
    }

    fn script(names: &[String]) -> String {
        let args = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(" ");
        let every = names == ["*"];
        format!(
            r#"{DETECT}
if [ "$m" = apt ] && {every}; then
  apt-get -s -q -o Debug::NoLocking=1 upgrade --with-new-pkgs 2>/dev/null | sed -n 's/^Inst \([^ ]*\) \[[^]]*\] (\([^ ]*\) .*/c \1 \2/p'
elif [ "$m" = apt ]; then
  for n in {args}; do
    c=$(apt-cache policy "$n" 2>/dev/null | sed -n 's/^  Candidate: //p')
    [ -n "$c" ] && [ "$c" != "(none)" ] && echo "c $n $c"
    apt-cache show "$n" 2>/dev/null | sed -n "s/^Version: /v $n /p"
  done
elif [ "$m" != none ]; then
  if out=$($m -C -q list updates {args} 2>/dev/null); then
    printf '%s\n' "$out" | awk 'NF == 3 && $1 ~ /\./ {{ n = $1; sub(/\.[^.]*$/, "", n); print "c", n, $2 }}'
  elif $m -C -q list installed >/dev/null 2>&1; then :
  else echo unknown; fi
fi"#
        )
    }

    fn parse(names: &[String], r: &ProbeResult) -> Result<Offer, ModuleError> {
        let mut offer = Offer::default();
        for line in r.stdout.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f.as_slice() {
                ["unknown"] => offer.unknown = true,
                ["c", name, v] => {
                    offer.candidate.insert(name.to_string(), v.to_string());
                }
                ["v", name, v] => offer
                    .versions
                    .entry(name.to_string())
                    .or_default()
                    .push(v.to_string()),
                _ => {
                    return Err(fact::bad(
                        Self::key(names),
                        format!("unexpected line: {line}"),
                    ))
                }
            }
        }
        Ok(offer)
    }

    fn render(v: &Offer) -> ProbeResult {
        let mut out = String::new();
        if v.unknown {
            out.push_str("unknown\n");
        }
        for (name, c) in &v.candidate {
            out.push_str(&format!("c {name} {c}\n"));
        }
        for (name, versions) in &v.versions {
            for version in versions {
                out.push_str(&format!("v {name} {version}\n"));
            }
        }
        ProbeResult::ok(out)
    }
}

/// What `autoremove` and apt's `autoclean` would remove, simulated:
/// `remove NAME` and `clean FILE` lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Leftovers {
    pub unneeded: Vec<String>,
    pub obsolete: Vec<String>,
}

pub(super) struct Cleanup;

impl Fact for Cleanup {
    type Query = ();
    type Value = Leftovers;

    fn key(_: &()) -> String {
        "pkg:cleanup".into()
    }

    fn script(_: &()) -> String {
        format!(
            r#"{DETECT}
if [ "$m" = dnf ]; then
  dnf -C -q repoquery --unneeded --qf 'remove %{{name}}' 2>/dev/null
elif [ "$m" = apt ]; then
  apt-get -s -q autoremove 2>/dev/null | awk '$1 == "Remv" {{ print "remove", $2 }}'
  apt-get -s -q autoclean 2>/dev/null | awk '$1 == "Del" {{ print "clean", $2 }}'
fi"#
        )
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Leftovers, ModuleError> {
        let mut l = Leftovers::default();
        for line in r.stdout.lines() {
            match line.split_once(' ') {
                Some(("remove", n)) => l.unneeded.push(n.to_string()),
                Some(("clean", n)) => l.obsolete.push(n.to_string()),
                _ => {
                    return Err(fact::bad(
                        Self::key(&()),
                        format!("unexpected line: {line}"),
                    ))
                }
            }
        }
        Ok(l)
    }

    fn render(v: &Leftovers) -> ProbeResult {
        let mut out = String::new();
        for n in &v.unneeded {
            out.push_str(&format!("remove {n}\n"));
        }
        for n in &v.obsolete {
            out.push_str(&format!("clean {n}\n"));
        }
        ProbeResult::ok(out)
    }
}

/// The dnf module streams a host has enabled, as `NAME STREAM` lines read
/// from `dnf module list --enabled`, whose enabled stream carries `[e]`
/// (`[d][e]` when it is also the default).
pub(super) struct Streams;

impl Fact for Streams {
    type Query = ();
    type Value = BTreeMap<String, String>;

    fn key(_: &()) -> String {
        "pkg:streams".into()
    }

    fn script(_: &()) -> String {
        "dnf -C -q module list --enabled 2>/dev/null | awk '$3 ~ /\\[e\\]/ { print $1, $2 }'".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        r.stdout
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((n, s)) => Ok((n.to_string(), s.to_string())),
                None => Err(fact::bad(Self::key(&()), format!("unexpected line: {l}"))),
            })
            .collect()
    }

    fn render(v: &Self::Value) -> ProbeResult {
        ProbeResult::ok(
            v.iter()
                .map(|(n, s)| format!("{n} {s}\n"))
                .collect::<String>(),
        )
    }
}

/// The package inside a local `.deb`: `NAME VERSION`, or nothing when the
/// file is missing.
pub(super) struct DebFile;

impl Fact for DebFile {
    type Query = str;
    type Value = Option<(String, String)>;

    fn key(path: &str) -> String {
        format!("pkg:deb:{path}")
    }

    fn script(path: &str) -> String {
        format!(
            "[ -f {p} ] && dpkg-deb -W --showformat='${{Package}} ${{Version}}\\n' {p}",
            p = quote(path)
        )
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        let line = r.stdout.trim();
        if line.is_empty() {
            return Ok(None);
        }
        match line.split_once(' ') {
            Some((n, v)) => Ok(Some((n.to_string(), v.to_string()))),
            None => Err(fact::bad(Self::key(path), format!("unexpected: {line}"))),
        }
    }

    fn render(v: &Self::Value) -> ProbeResult {
        ProbeResult::ok(
            v.as_ref()
                .map(|(n, v)| format!("{n} {v}\n"))
                .unwrap_or_default(),
        )
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let names = ["npdemo".to_string()];
    rt.check::<Available>(&names, Offer::default());
    rt.check::<Available>(
        &names,
        Offer {
            candidate: BTreeMap::from([("npdemo".into(), "1.1-1".into())]),
            versions: BTreeMap::from([("npdemo".into(), vec!["1.1-1".into(), "1.0-1".into()])]),
            unknown: true,
        },
    );
    rt.check::<Cleanup>(
        &(),
        Leftovers {
            unneeded: vec!["libold".into()],
            obsolete: vec!["x_1.0_all.deb".into()],
        },
    );
    rt.check::<Streams>(
        &(),
        BTreeMap::from([("nvidia-driver".into(), "latest-dkms".into())]),
    );
    rt.check::<DebFile>("/tmp/x.deb", None);
    rt.check::<DebFile>("/tmp/x.deb", Some(("x".into(), "1.0".into())));
}
