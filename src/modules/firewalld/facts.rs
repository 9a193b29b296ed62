//! One zone of firewalld as both of its layers hold it: the running
//! firewall (`firewall-cmd`) and the permanent configuration
//! (`firewall-cmd --permanent`, or `firewall-offline-cmd` when the daemon
//! does not run), read in one probe.

use std::collections::{BTreeMap, BTreeSet};

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;
use crate::remote::shell::quote;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layer {
    Runtime,
    Permanent,
}

impl Layer {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layer::Runtime => "runtime",
            Layer::Permanent => "permanent",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Daemon {
    Running,
    /// Not running; `firewall-offline-cmd` edits the permanent configuration.
    Offline,
    /// Neither command is installed.
    Missing,
}

/// What a zone holds in one layer.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ZoneConf {
    pub services: BTreeSet<String>,
    pub ports: BTreeSet<String>,
    pub sources: BTreeSet<String>,
    pub interfaces: BTreeSet<String>,
    pub masquerade: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Firewall {
    pub daemon: Daemon,
    pub default_zone: String,
    /// The zone asked about, the default one resolved.
    pub zone: String,
    /// Each layer the daemon's state lets us read; `None`: no such zone there.
    pub layers: BTreeMap<Layer, Option<ZoneConf>>,
}

impl Firewall {
    /// The command that edits `layer`, as the daemon's state allows.
    pub(crate) fn command(&self, layer: Layer) -> &'static str {
        match (self.daemon, layer) {
            (Daemon::Running, Layer::Runtime) => "firewall-cmd",
            (Daemon::Running, Layer::Permanent) => "firewall-cmd --permanent",
            _ => "firewall-offline-cmd",
        }
    }
}

/// The lists read for a layer, in the order the probe prints them.
const LISTS: [&str; 4] = ["services", "ports", "sources", "interfaces"];

/// The lines of `--list-all` the probe keeps: the lists, then masquerade.
const KEPT: [&str; 5] = ["services", "ports", "sources", "interfaces", "masquerade"];

pub(crate) struct FirewalldZone;

impl Fact for FirewalldZone {
    /// The zone; `None` for the default zone.
    type Query = Option<String>;
    type Value = Firewall;

    fn key(zone: &Option<String>) -> String {
        match zone {
            Some(z) => format!("firewalld:zone:{z}"),
            None => "firewalld:default".into(),
        }
    }

    fn script(zone: &Option<String>) -> String {
        let z = zone.as_deref().map_or("\"$d\"".into(), quote);
        // One `--list-all` per layer rather than a command per list: each
        // firewall-cmd is a Python start and a D-Bus round trip (0.3 s on
        // the daemon the tests run).
        let kept: String = KEPT
            .iter()
            .map(|k| format!(" -e 's/^ *{k}: */{k} /p'"))
            .collect();
        format!(
            r#"if command -v firewall-cmd >/dev/null 2>&1 && firewall-cmd --state >/dev/null 2>&1; then
  echo daemon running; layers='runtime permanent'; off=
elif command -v firewall-offline-cmd >/dev/null 2>&1; then
  echo daemon offline; layers=permanent; off=1
else
  echo daemon missing; exit 0
fi
fw() {{
  if [ -n "$off" ]; then firewall-offline-cmd "$@"
  elif [ "$layer" = permanent ]; then firewall-cmd --permanent "$@"
  else firewall-cmd "$@"; fi
}}
layer=runtime
d=$(fw --get-default-zone) || exit 1
z={z}
echo "default $d"; echo "zone $z"
for layer in $layers; do
  echo "layer $layer"
  zones=$(fw --get-zones) || exit 1
  case " $zones " in *" $z "*) ;; *) echo absent; continue ;; esac
  all=$(fw --zone="$z" --list-all) || exit 1
  printf '%s\n' "$all" | sed -n{kept}
done"#
        )
    }

    fn parse(zone: &Option<String>, r: &ProbeResult) -> Result<Firewall, ModuleError> {
        let bad = |detail: &str| {
            fact::bad(
                Self::key(zone),
                format!("{detail}: {}{}", r.stdout.trim(), r.stderr.trim()),
            )
        };
        if r.rc != 0 {
            return Err(bad("firewalld could not be read"));
        }
        let mut fw = Firewall {
            daemon: Daemon::Missing,
            default_zone: String::new(),
            zone: zone.clone().unwrap_or_default(),
            layers: BTreeMap::new(),
        };
        // Each layer read, with how many of its KEPT lines were seen: a
        // firewalld whose `--list-all` lacks one must not read as empty.
        let mut read: Vec<(Layer, Option<(ZoneConf, usize)>)> = Vec::new();
        for line in r.stdout.lines() {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "daemon" => {
                    fw.daemon = match rest {
                        "running" => Daemon::Running,
                        "offline" => Daemon::Offline,
                        "missing" => Daemon::Missing,
                        _ => return Err(bad("unknown daemon state")),
                    }
                }
                "default" => fw.default_zone = rest.to_string(),
                "zone" => fw.zone = rest.to_string(),
                "layer" => {
                    let l = match rest {
                        "runtime" => Layer::Runtime,
                        "permanent" => Layer::Permanent,
                        _ => return Err(bad("unknown layer")),
                    };
                    read.push((l, Some((ZoneConf::default(), 0))));
                }
                "absent" => match read.last_mut() {
                    Some((_, conf @ Some((_, 0)))) => *conf = None,
                    _ => return Err(bad("absent outside a layer")),
                },
                _ => {
                    let Some((_, Some((conf, seen)))) = read.last_mut() else {
                        return Err(bad("a list outside a layer"));
                    };
                    read_list(conf, word, rest).ok_or_else(|| bad("unknown line"))?;
                    *seen += 1;
                }
            }
        }
        for (l, conf) in read {
            let conf = match conf {
                Some((_, seen)) if seen != KEPT.len() => {
                    return Err(bad("a zone listing without all of its lists"))
                }
                conf => conf.map(|(conf, _)| conf),
            };
            fw.layers.insert(l, conf);
        }
        Ok(fw)
    }

    fn render(fw: &Firewall) -> ProbeResult {
        let daemon = match fw.daemon {
            Daemon::Running => "running",
            Daemon::Offline => "offline",
            Daemon::Missing => return ProbeResult::ok("daemon missing\n"),
        };
        let mut out = format!(
            "daemon {daemon}\ndefault {}\nzone {}\n",
            fw.default_zone, fw.zone
        );
        for (layer, conf) in &fw.layers {
            out.push_str(&format!("layer {}\n", layer.name()));
            let Some(c) = conf else {
                out.push_str("absent\n");
                continue;
            };
            for (name, set) in LISTS
                .iter()
                .zip([&c.services, &c.ports, &c.sources, &c.interfaces])
            {
                let items: Vec<&str> = set.iter().map(String::as_str).collect();
                out.push_str(&format!("{name} {}\n", items.join(" ")));
            }
            let masq = if c.masquerade { "yes" } else { "no" };
            out.push_str(&format!("masquerade {masq}\n"));
        }
        ProbeResult::ok(out)
    }
}

/// One `services …`-style line into `conf`; `None` for a line it is not.
fn read_list(conf: &mut ZoneConf, word: &str, rest: &str) -> Option<()> {
    let set = match word {
        "services" => &mut conf.services,
        "ports" => &mut conf.ports,
        "sources" => &mut conf.sources,
        "interfaces" => &mut conf.interfaces,
        "masquerade" => {
            conf.masquerade = rest == "yes";
            return Some(());
        }
        _ => return None,
    };
    *set = rest.split_whitespace().map(String::from).collect();
    Some(())
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let conf = ZoneConf {
        services: ["ssh".to_string(), "dhcpv6-client".to_string()].into(),
        ports: ["6000-6010/udp".to_string()].into(),
        sources: BTreeSet::new(),
        interfaces: ["eth0".to_string()].into(),
        masquerade: true,
    };
    let fw = |daemon, layers| Firewall {
        daemon,
        default_zone: "public".into(),
        zone: "public".into(),
        layers,
    };
    rt.check::<FirewalldZone>(
        &None,
        fw(
            Daemon::Running,
            BTreeMap::from([
                (Layer::Runtime, Some(conf.clone())),
                (Layer::Permanent, None),
            ]),
        ),
    );
    rt.check::<FirewalldZone>(
        &None,
        fw(
            Daemon::Offline,
            BTreeMap::from([(Layer::Permanent, Some(ZoneConf::default()))]),
        ),
    );
    rt.check::<FirewalldZone>(
        &None,
        Firewall {
            daemon: Daemon::Missing,
            default_zone: String::new(),
            zone: String::new(),
            layers: BTreeMap::new(),
        },
    );
}
