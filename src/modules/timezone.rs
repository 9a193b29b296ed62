//! `timezone` (community.general): the system time zone, as `timedatectl
//! set-timezone` leaves it: `/etc/localtime` a link to the zone's file
//! under `/usr/share/zoneinfo`, and `/etc/timezone` (Debian's) naming it
//! where that file exists. Done with files rather than timedatectl, so it
//! works the same with or without systemd.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep every node on UTC, so Slurm's job times line up
//!   timezone:
//!     name: UTC
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, Kind, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const TIMEZONE: ModuleSpec = ModuleSpec {
    name: "timezone",
    source: file!(),
    aliases: &["community.general.timezone"],
    params: &TimezoneArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

const ZONEINFO: &str = "/usr/share/zoneinfo";
const LOCALTIME: &str = "/etc/localtime";
const DEBIAN_NAME: &str = "/etc/timezone";

module_params! {
    struct TimezoneArgs {
        /// the zone, such as Europe/Paris or UTC
        name: String,
        /// not supported: the hardware clock is left alone
        hwclock: Option<String>,
    }
}

struct Timezone {
    name: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = TimezoneArgs::read(p)?;
    if a.hwclock.is_some() {
        return Err(p.error(
            "hwclock",
            "hwclock is not supported; the hardware clock is left as it is",
        ));
    }
    let valid = !a.name.is_empty()
        && !a.name.starts_with('/')
        && !a
            .name
            .split('/')
            .any(|part| part == ".." || part.is_empty())
        && a.name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b));
    if !valid {
        return Err(p.error("name", format!("'{}' is not a time zone name", a.name)));
    }
    Ok(Box::new(Timezone { name: a.name }))
}

/// Where `/etc/localtime` leads, and whether the zone's file exists.
#[derive(Clone, Debug, PartialEq)]
struct Zone {
    /// The zone file's real path; empty when it does not exist.
    zone_file: String,
    /// `/etc/localtime`'s link target as written, and its real path
    /// (both empty when it is missing).
    link: String,
    resolved: String,
}

struct ZoneFact;

impl Fact for ZoneFact {
    type Query = str;
    type Value = Zone;

    fn key(name: &str) -> String {
        format!("timezone:{name}")
    }

    fn script(name: &str) -> String {
        format!(
            "z={}; [ -f \"$z\" ] && readlink -f -- \"$z\" || echo\n\
             readlink -- {LOCALTIME} || echo\nreadlink -f -- {LOCALTIME} || echo",
            quote(&format!("{ZONEINFO}/{name}"))
        )
    }

    fn parse(name: &str, r: &ProbeResult) -> Result<Zone, ModuleError> {
        let lines: Vec<&str> = r.stdout.lines().collect();
        let [zone_file, link, resolved] = lines[..] else {
            return Err(fact::bad(
                Self::key(name),
                format!("expected 3 lines: {}", r.stderr.trim()),
            ));
        };
        Ok(Zone {
            zone_file: zone_file.into(),
            link: link.into(),
            resolved: resolved.into(),
        })
    }

    fn render(z: &Zone) -> ProbeResult {
        ProbeResult::ok(format!("{}\n{}\n{}\n", z.zone_file, z.link, z.resolved))
    }
}

impl Module for Timezone {
    fn probes(&self) -> Vec<Probe> {
        vec![ZoneFact::probe(&self.name), FileFact::probe(DEBIAN_NAME)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let zone = ZoneFact::read(facts, &self.name)?;
        if zone.zone_file.is_empty() {
            return Err(ModuleError::Absent(format!(
                "unknown time zone {}: {ZONEINFO}/{} does not exist (is tzdata installed?)",
                self.name, self.name
            )));
        }
        let mut plan = Plan::noop();
        if zone.resolved != zone.zone_file {
            let target = format!("{ZONEINFO}/{}", self.name);
            let before = if zone.link.is_empty() {
                "not a link".to_string()
            } else {
                zone.link.clone()
            };
            plan.changes.push(
                Change::new(LOCALTIME, Some(before), Some(target.clone()))
                    .with_evidence(format!("readlink -f {LOCALTIME}")),
            );
            // A new link renamed over the old one: never a moment without.
            plan.steps.push(format!(
                "ln -sfn {t} {LOCALTIME}.nodeprov && mv -fT {LOCALTIME}.nodeprov {LOCALTIME} \
                 || {{ rm -f {LOCALTIME}.nodeprov; echo 'cannot link {LOCALTIME}' >&2; exit 1; }}",
                t = quote(&target)
            ));
            let after = Zone {
                link: target,
                resolved: zone.zone_file.clone(),
                ..zone
            };
            plan.effects.push(ZoneFact::predict(&self.name, &after));
        }
        // Debian's name file is kept in step where it exists; EL has none.
        if let Some(st) = FileFact::read(facts, DEBIAN_NAME)?.filter(|s| s.kind == Kind::File) {
            plan.absorb(files::plan_content(
                DEBIAN_NAME,
                Some(&st),
                &format!("{}\n", self.name),
                &WriteOpts::default(),
                true,
            )?);
        }
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<ZoneFact>(
        "Europe/Paris",
        Zone {
            zone_file: "/usr/share/zoneinfo/Europe/Paris".into(),
            link: "/usr/share/zoneinfo/Etc/UTC".into(),
            resolved: "/usr/share/zoneinfo/Etc/UTC".into(),
        },
    );
    rt.check::<ZoneFact>(
        "Nowhere/Else",
        Zone {
            zone_file: String::new(),
            link: String::new(),
            resolved: String::new(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
    };
    use serde_json::json;

    fn facts(zone: &str, link: &str, debian: Option<&str>) -> Facts {
        let mut f = file_facts(DEBIAN_NAME, debian, 0o644);
        let z = Zone {
            zone_file: zone.into(),
            link: link.into(),
            resolved: link.into(),
        };
        f.insert(ZoneFact::key("Europe/Paris"), ZoneFact::render(&z));
        f
    }

    #[test]
    fn names_are_checked() {
        for bad in ["../../etc/shadow", "/etc/x", "a b", "Europe//Paris"] {
            assert!(build_error(&TIMEZONE, json!({"name": bad})).contains("not a time zone"));
        }
        assert!(
            build_error(&TIMEZONE, json!({"name": "UTC", "hwclock": "UTC"}))
                .contains("not supported")
        );
    }

    #[test]
    fn the_link_and_debians_name_file_are_set_then_compliant() {
        let m = build_test(&TIMEZONE, json!({"name": "Europe/Paris"})).unwrap();
        let paris = "/usr/share/zoneinfo/Europe/Paris";
        let before = facts(paris, "/usr/share/zoneinfo/Etc/UTC", Some("Etc/UTC\n"));
        let plan = m.plan(&before).unwrap();
        assert_sh_syntax(&*m, &plan);
        let summary: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            summary,
            [
                "/etc/localtime: /usr/share/zoneinfo/Etc/UTC → /usr/share/zoneinfo/Europe/Paris",
                "/etc/timezone: old content → new content"
            ]
        );
        assert!(plan.steps[0].starts_with(
            "ln -sfn /usr/share/zoneinfo/Europe/Paris /etc/localtime.nodeprov && mv -fT"
        ));
        let after = settled(&before, &plan);
        assert_eq!(file_content(&after, DEBIAN_NAME), "Europe/Paris\n");
        assert_eq!(m.plan(&after).unwrap().changes, vec![]);
        let el = facts(paris, paris, None);
        assert_eq!(m.plan(&el).unwrap(), Plan::noop());
        let unknown = facts("", paris, None);
        assert!(matches!(m.plan(&unknown), Err(ModuleError::Absent(m)) if m.contains("tzdata")));
    }
}
