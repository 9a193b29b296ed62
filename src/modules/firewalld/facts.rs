//! One zone of firewalld as both of its layers hold it: the running
//! firewall (`firewall-cmd`) and the permanent configuration
//! (`firewall-cmd --permanent`, or `firewall-offline-cmd` when the daemon
//! does not run), read in one probe.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

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
    /// Installed but not running (`firewall-cmd --state` exits 252,
    /// NOT_RUNNING, or firewall-cmd is absent).
    Offline,
    /// Running on its failsafe stock configuration after failing to load
    /// the host's (`firewall-cmd --state` prints `failed`, exit 251,
    /// RUNNING_BUT_FAILED); its zones are not the host's.
    Failed,
    /// Neither command is installed.
    Missing,
}

impl Daemon {
    fn word(self) -> &'static str {
        match self {
            Daemon::Running => "running",
            Daemon::Offline => "offline",
            Daemon::Failed => "failed",
            Daemon::Missing => "missing",
        }
    }

    /// How a message names the state.
    pub(crate) fn state(self) -> &'static str {
        match self {
            Daemon::Running => "running",
            Daemon::Offline => "not running",
            Daemon::Failed => "in the FAILED state",
            Daemon::Missing => "not installed",
        }
    }
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
    /// Whether `firewall-offline-cmd` is installed; without it a daemon that
    /// does not run leaves no layer to read.
    pub offline_cmd: bool,
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

/// Why a daemon in the FAILED state stops a task.
pub(crate) const FAILED: &str = "firewalld is installed but its daemon is in the FAILED state \
(firewall-cmd --state: failed, exit 251): it runs its failsafe stock configuration, not this \
host's; fix the configuration (firewall-cmd --check-config) and restart it, or offline: true \
edits the permanent configuration with firewall-offline-cmd";

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
            r#"rc=none; oc=
command -v firewall-cmd >/dev/null 2>&1 && {{ firewall-cmd --state >/dev/null 2>&1; rc=$?; }}
command -v firewall-offline-cmd >/dev/null 2>&1 && oc=1 && echo offline-cmd
layers=permanent; off=1
case $rc/$oc in
  0/*) echo daemon running; layers='runtime permanent'; off= ;;
  251/*) echo daemon failed ;;
  none/) echo daemon missing ;;
  *) echo daemon offline ;;
esac
[ -n "$off" ] && [ -z "$oc" ] && exit 0
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
            // A daemon that failed to load the host's configuration likely
            // failed on a file firewall-offline-cmd cannot read either.
            if r.stdout.lines().any(|l| l == "daemon failed") {
                return Err(bad(FAILED));
            }
            return Err(bad("firewalld could not be read"));
        }
        let mut fw = Firewall {
            daemon: Daemon::Missing,
            offline_cmd: false,
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
                "offline-cmd" => fw.offline_cmd = true,
                "daemon" => {
                    fw.daemon = [
                        Daemon::Running,
                        Daemon::Offline,
                        Daemon::Failed,
                        Daemon::Missing,
                    ]
                    .into_iter()
                    .find(|d| d.word() == rest)
                    .ok_or_else(|| bad("unknown daemon state"))?
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
        let mut out = String::new();
        if fw.offline_cmd {
            out.push_str("offline-cmd\n");
        }
        out.push_str(&format!("daemon {}\n", fw.daemon.word()));
        if fw.daemon != Daemon::Running && !fw.offline_cmd {
            return ProbeResult::ok(out);
        }
        out.push_str(&format!("default {}\nzone {}\n", fw.default_zone, fw.zone));
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
        offline_cmd: true,
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
        fw(
            Daemon::Failed,
            BTreeMap::from([(Layer::Permanent, Some(conf.clone()))]),
        ),
    );
    for daemon in [Daemon::Offline, Daemon::Failed, Daemon::Missing] {
        rt.check::<FirewalldZone>(
            &None,
            Firewall {
                daemon,
                offline_cmd: false,
                default_zone: String::new(),
                zone: String::new(),
                layers: BTreeMap::new(),
            },
        );
    }
}
