//! `firewalld` (ansible.posix): one service, port, source, interface or
//! masquerading in a zone, on or off, or a zone itself present or absent.
//! Both layers of the zone are read in one probe, so check mode says which
//! of them drifts: the running firewall, the permanent configuration, or
//! both. Without a running daemon the permanent configuration is edited
//! with `firewall-offline-cmd`, as Ansible's `offline: true` does; a daemon
//! in the FAILED state runs its stock zones, not the host's, so it is
//! refused unless `offline: true` (Ansible would edit through it).
//!
//! **`firewalld`** reads the zone in both layers in one probe: the running
//! firewall (`firewall-cmd`) and the permanent configuration
//! (`firewall-cmd --permanent`), one `--list-all` each, since every
//! `firewall-cmd` is a Python start and a D-Bus call (0.3 s against the real
//! daemon; a no-op run of six tasks over two zones took 7.1 s with a
//! command per list, 3.7 s so). As in Ansible, a task without `permanent`
//! changes the running firewall only, `permanent: true` the permanent
//! configuration only, and `permanent: true` with `immediate: true` both; each
//! layer that differs is a change of its own, named with its layer and the
//! listing that showed it, so check mode says exactly which layer drifts. An
//! interface or source is bound with `--change-interface`/`--change-source`,
//! which moves it from another zone. The probe tells four states apart by
//! `firewall-cmd --state`'s exit code (firewall-cmd(1)): running (0), not
//! running (252, NOT_RUNNING, or no `firewall-cmd`), FAILED (251,
//! RUNNING_BUT_FAILED: the daemon failed to load the host's configuration
//! and runs its failsafe stock one) and not installed (neither
//! `firewall-cmd` nor `firewall-offline-cmd`). When the daemon does not run,
//! `offline: true` edits the permanent configuration with
//! `firewall-offline-cmd` (a runtime change asked for is said in a note);
//! without it the task fails. A daemon in the FAILED state fails the task
//! with a message naming the state (`firewalld is installed but its daemon
//! is in the FAILED state …`) unless `offline: true`, which then edits the
//! host's files with `firewall-offline-cmd` as when the daemon does not run.
//! Here nodeprov differs from Ansible on purpose: `ansible.posix.firewalld`
//! (its `module_utils/firewalld.py`) only asks whether the daemon answers
//! on D-Bus, which a FAILED daemon does, so it edits through the daemon,
//! whose zones are then its stock ones, not the host's. Without
//! `firewall-offline-cmd` a daemon that is not running or FAILED leaves the
//! task failing with the state named and that command missing. Rich rules, ICMP blocks, port forwards,
//! protocols, forwarding, zone targets and timed rules are refused. What is
//! proven how: both paths end to end by isolated-host tests
//! (`tests/pip_and_firewalld.rs`) running the binary with `-c local` and the
//! real firewalld. Installing the `firewalld` package on the test machine
//! would enable its unit there, so `scripts/test.sh` unpacks its packages
//! (with the daemon's Python D-Bus and GObject bindings, `nft` and the
//! iptables save commands) into `target/firewalld-offline` instead. The
//! offline path: the real `firewall-offline-cmd` edits the host's
//! `/etc/firewalld`. The running daemon: a host made with
//! `IsolatedHost::with_network()` has a network namespace of its own, in
//! which the test starts a private system bus (`dbus-daemon` with its own
//! configuration, at `/run/dbus/system_bus_socket` of the host's private
//! `/run`) and the real `firewalld --nofork --nopid` on the host's
//! `/etc/firewalld`, with its nftables backend; the daemon must log no
//! error. Ports, services, an interface, a source and masquerading are
//! enabled (and a service disabled) with `immediate: true, permanent: true`:
//! each layer is its own change, `firewall-cmd --list-ports` and
//! `firewall-cmd --permanent --list-ports` agree with the play, the
//! namespace's ruleset has the rule and its `ip_forward` is on, and a second
//! apply changes nothing. A port removed by hand from the
//! running firewall is drift of the runtime layer only, named with
//! `firewall-cmd --zone=public --list-all` as its evidence and exit code 2,
//! and `check` leaves it removed. The FAILED state: a direct rule iptables
//! refuses in the host's `/etc/firewalld/direct.xml` makes the real daemon
//! fall back to its stock configuration (`firewall-cmd --state` prints
//! `failed`, on stderr); a task is refused naming the state, and with
//! `offline: true` `firewall-offline-cmd` adds a port to the host's zone
//! file once. (A zone naming an unknown service also makes the daemon fail,
//! but `firewall-offline-cmd` checks the whole configuration on each write
//! and refuses as well, with the daemon's reason as the task's message:
//! seen by hand, not kept as a test.) A task without `permanent` changes the
//! running firewall only, and `permanent: true` without `immediate` the
//! permanent configuration only (a new zone too): `firewall-cmd --reload`
//! then rebuilds the running firewall from the latter. The machine's own
//! `nft list ruleset`, `iptables-save` (nft and legacy, IPv4 and IPv6) and
//! forwarding switches are compared before and after each test, as is its
//! `/etc`. Planning tests on recorded `firewall-cmd` answers cover the
//! rest (a zone absent from the layer a task changes, an interface or
//! source moved from another zone, each daemon state with and without
//! `firewall-offline-cmd`), and the probe's script is run against stand-in
//! commands exiting 0, 251 and 252.
//!
//! # Example
//!
//! ```yaml
//! - name: Open slurmd's port on the compute nodes, now and at boot
//!   firewalld:
//!     port: 6818/tcp
//!     zone: public
//!     state: enabled
//!     permanent: true
//!     immediate: true
//! - name: Trust the InfiniBand network the NCCL traffic uses
//!   firewalld:
//!     source: 10.10.0.0/16
//!     zone: trusted
//!     state: enabled
//!     permanent: true
//!     immediate: true
//! ```

mod facts;

use facts::{Daemon, Firewall, FirewalldZone, Layer, ZoneConf};

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const FIREWALLD: ModuleSpec = ModuleSpec {
    name: "firewalld",
    source: file!(),
    aliases: &["ansible.posix.firewalld"],
    params: &FirewalldArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum State {
        Enabled = "enabled",
        Disabled = "disabled",
        Present = "present",
        Absent = "absent",
    }
}

module_params! {
    struct FirewalldArgs {
        /// a service firewalld defines (`ssh`, `http`)
        service: Option<String>,
        /// a port or range with its protocol (`8080/tcp`, `6000-6010/udp`)
        port: Option<String>,
        /// a source address or network bound to the zone
        source: Option<String>,
        /// an interface bound to the zone
        interface: Option<String>,
        /// masquerading in the zone (`state` turns it on or off)
        masquerade: Option<bool>,
        /// the zone; firewalld's default zone when unset
        zone: Option<String>,
        /// enabled or disabled for an item; present or absent for the zone itself (in the permanent configuration)
        state: State,
        /// change the permanent configuration
        permanent: bool = false,
        /// with `permanent`, change the running firewall too
        immediate: bool = false,
        /// without a running daemon, edit the permanent configuration with firewall-offline-cmd
        offline: bool = false,
        /// not supported
        rich_rule: Option<serde_json::Value>,
        /// not supported
        icmp_block: Option<serde_json::Value>,
        /// not supported
        icmp_block_inversion: Option<serde_json::Value>,
        /// not supported
        port_forward: Option<serde_json::Value>,
        /// not supported
        protocol: Option<serde_json::Value>,
        /// not supported
        forward: Option<serde_json::Value>,
        /// not supported
        target: Option<serde_json::Value>,
        /// not supported
        timeout: Option<serde_json::Value>,
    }
}

/// What a task turns on or off in its zone.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    Service(String),
    Port(String),
    Source(String),
    Interface(String),
    Masquerade,
    /// `state: present|absent` acts on the zone itself.
    Zone,
}

struct Firewalld {
    item: Item,
    zone: Option<String>,
    /// On (enabled, present) or off.
    on: bool,
    layers: Vec<Layer>,
    offline: bool,
}

/// The first parameter set that nodeprov does not implement.
fn refused(a: &FirewalldArgs) -> Option<&'static str> {
    [
        ("rich_rule", &a.rich_rule),
        ("icmp_block", &a.icmp_block),
        ("icmp_block_inversion", &a.icmp_block_inversion),
        ("port_forward", &a.port_forward),
        ("protocol", &a.protocol),
        ("forward", &a.forward),
        ("target", &a.target),
        ("timeout", &a.timeout),
    ]
    .into_iter()
    .find_map(|(key, value)| value.is_some().then_some(key))
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FirewalldArgs::read(p)?;
    if let Some(key) = refused(&a) {
        return Err(p.unsupported(
            key,
            format!("{key} is not supported by nodeprov: only service, port, source, interface, masquerade and zones are"),
        ));
    }
    let item = item(p, &a)?;
    let on = matches!(a.state, State::Enabled | State::Present);
    if (item == Item::Zone) != matches!(a.state, State::Present | State::Absent) {
        return Err(p.error(
            "state",
            "present and absent act on a zone alone; enabled and disabled on one service, port, source, interface or masquerade",
        ));
    }
    if item == Item::Zone && (a.zone.is_none() || !a.permanent || a.immediate) {
        return Err(p.error(
            "state",
            "a zone is added or removed with zone and permanent: true, without immediate",
        ));
    }
    check_word(p, "zone", a.zone.as_deref())?;
    let layers = match (a.permanent, a.immediate) {
        (true, true) => vec![Layer::Runtime, Layer::Permanent],
        (true, false) => vec![Layer::Permanent],
        // Ansible: neither permanent nor immediate means the running firewall.
        (false, _) => vec![Layer::Runtime],
    };
    Ok(Box::new(Firewalld {
        item,
        zone: a.zone,
        on,
        layers,
        offline: a.offline,
    }))
}

/// The one item the task names (Ansible takes them one at a time).
fn item(p: &Params, a: &FirewalldArgs) -> Result<Item, ParamError> {
    let named: Vec<(&str, Item)> = [
        ("service", a.service.clone().map(Item::Service)),
        ("port", a.port.clone().map(Item::Port)),
        ("source", a.source.clone().map(Item::Source)),
        ("interface", a.interface.clone().map(Item::Interface)),
        ("masquerade", a.masquerade.map(|_| Item::Masquerade)),
    ]
    .into_iter()
    .filter_map(|(k, i)| Some((k, i?)))
    .collect();
    let (key, item) = match &named[..] {
        [] => return Ok(Item::Zone),
        [one] => one.clone(),
        [_, (second, _), ..] => {
            return Err(p.error(
                second,
                "service, port, source, interface and masquerade are mutually exclusive",
            ))
        }
    };
    match &item {
        Item::Port(port) if !valid_port(port) => Err(p.error(
            key,
            format!(
                "port '{port}' must be PORT/PROTOCOL or FROM-TO/PROTOCOL (tcp, udp, sctp, dccp)"
            ),
        )),
        Item::Service(v) | Item::Source(v) | Item::Interface(v) => {
            check_word(p, key, Some(v)).map(|_| item.clone())
        }
        _ => Ok(item),
    }
}

fn valid_port(port: &str) -> bool {
    let Some((range, proto)) = port.split_once('/') else {
        return false;
    };
    let number = |n: &str| n.parse::<u16>().is_ok_and(|n| n > 0);
    let ports_ok = match range.split_once('-') {
        Some((from, to)) => number(from) && number(to),
        None => number(range),
    };
    ports_ok && ["tcp", "udp", "sctp", "dccp"].contains(&proto)
}

/// firewalld prints its lists separated by blanks: a name with one would
/// never be found in them.
fn check_word(p: &Params, key: &str, value: Option<&str>) -> Result<(), ParamError> {
    match value {
        Some(v) if v.is_empty() || v.chars().any(char::is_whitespace) => {
            Err(p.error(key, format!("{key} '{v}' must be one word")))
        }
        _ => Ok(()),
    }
}

impl Module for Firewalld {
    fn probes(&self) -> Vec<Probe> {
        vec![FirewalldZone::probe(&self.zone)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut fw = FirewalldZone::read(facts, &self.zone)?;
        let mut plan = Plan::noop();
        let layers = self.layers_for(&fw, &mut plan)?;
        for layer in layers {
            let conf = fw.layers.get(&layer).cloned().flatten();
            let (is, after) = match &self.item {
                Item::Zone => (conf.is_some(), self.on.then(ZoneConf::default)),
                _ => {
                    let mut conf = conf.ok_or_else(|| {
                        ModuleError::Missing(format!(
                            "zone {} does not exist in the {} configuration",
                            fw.zone,
                            layer.name()
                        ))
                    })?;
                    let is = self.holds(&conf);
                    self.set(&mut conf);
                    (is, Some(conf))
                }
            };
            if is == self.on {
                continue;
            }
            plan.changes.push(self.change(&fw, layer, is));
            plan.steps.push(self.step(&fw, layer));
            fw.layers.insert(layer, after);
        }
        if !plan.steps.is_empty() {
            plan.effects.push(FirewalldZone::predict(&self.zone, &fw));
        }
        Ok(plan)
    }
}

impl Firewalld {
    /// The layers this host lets the task change: without a daemon, or with
    /// one in the FAILED state, only the permanent one, and only with
    /// `offline: true`.
    fn layers_for(&self, fw: &Firewall, plan: &mut Plan) -> Result<Vec<Layer>, ModuleError> {
        match fw.daemon {
            Daemon::Running => Ok(self.layers.clone()),
            Daemon::Missing => Err(ModuleError::Missing(
                "firewalld is not installed on this host (no firewall-cmd or firewall-offline-cmd)"
                    .into(),
            )),
            Daemon::Failed if !self.offline => Err(ModuleError::Missing(facts::FAILED.into())),
            Daemon::Offline if !self.offline => Err(ModuleError::Missing(
                "firewalld is not running; offline: true edits its permanent configuration with firewall-offline-cmd".into(),
            )),
            _ if !fw.offline_cmd => Err(ModuleError::Missing(format!(
                "firewalld's daemon is {}, and firewall-offline-cmd, which offline: true needs, is not installed",
                fw.daemon.state()
            ))),
            Daemon::Offline | Daemon::Failed => {
                if self.layers.contains(&Layer::Runtime) {
                    plan.notes.push(format!(
                        "firewalld is {}: only its permanent configuration is changed",
                        fw.daemon.state()
                    ));
                }
                Ok(vec![Layer::Permanent])
            }
        }
    }

    fn holds(&self, conf: &ZoneConf) -> bool {
        match &self.item {
            Item::Service(s) => conf.services.contains(s),
            Item::Port(s) => conf.ports.contains(s),
            Item::Source(s) => conf.sources.contains(s),
            Item::Interface(s) => conf.interfaces.contains(s),
            Item::Masquerade => conf.masquerade,
            Item::Zone => true,
        }
    }

    /// `conf` as the task leaves it.
    fn set(&self, conf: &mut ZoneConf) {
        let (set, value) = match &self.item {
            Item::Service(s) => (&mut conf.services, s),
            Item::Port(s) => (&mut conf.ports, s),
            Item::Source(s) => (&mut conf.sources, s),
            Item::Interface(s) => (&mut conf.interfaces, s),
            Item::Masquerade => {
                conf.masquerade = self.on;
                return;
            }
            Item::Zone => return,
        };
        if self.on {
            set.insert(value.clone());
        } else {
            set.remove(value);
        }
    }

    /// What the item is called in a report and in the firewall's options.
    fn noun(&self) -> (&'static str, Option<&str>) {
        match &self.item {
            Item::Service(s) => ("service", Some(s)),
            Item::Port(s) => ("port", Some(s)),
            Item::Source(s) => ("source", Some(s)),
            Item::Interface(s) => ("interface", Some(s)),
            Item::Masquerade => ("masquerade", None),
            Item::Zone => ("zone", None),
        }
    }

    fn change(&self, fw: &Firewall, layer: Layer, is: bool) -> Change {
        let (noun, value) = self.noun();
        let (yes, no) = match self.item {
            Item::Zone => ("present", "absent"),
            _ => ("enabled", "disabled"),
        };
        let word = |b: bool| Some((if b { yes } else { no }).to_string());
        let subject = match value {
            Some(v) => format!("firewalld zone {} {noun} {v} ({})", fw.zone, layer.name()),
            None if self.item == Item::Zone => {
                format!("firewalld zone {} ({})", fw.zone, layer.name())
            }
            None => format!("firewalld zone {} {noun} ({})", fw.zone, layer.name()),
        };
        let listed = match self.item {
            Item::Zone => "--get-zones".to_string(),
            _ => format!("--zone={} --list-all", fw.zone),
        };
        Change::new(subject, word(is), word(self.on))
            .with_evidence(format!("{} {listed}", fw.command(layer)))
    }

    fn step(&self, fw: &Firewall, layer: Layer) -> String {
        let (noun, value) = self.noun();
        let option = match (&self.item, self.on) {
            (Item::Zone, true) => format!("--new-zone={}", quote(&fw.zone)),
            (Item::Zone, false) => format!("--delete-zone={}", quote(&fw.zone)),
            // `change` moves an interface or source bound to another zone,
            // where `add` would fail on it.
            (Item::Interface(_) | Item::Source(_), true) => format!("--change-{noun}"),
            // firewall-offline-cmd keeps --remove-service for lokkit's meaning.
            (Item::Service(_), false) if fw.daemon != Daemon::Running => {
                "--remove-service-from-zone".into()
            }
            (_, true) => format!("--add-{noun}"),
            (_, false) => format!("--remove-{noun}"),
        };
        let option = match value {
            Some(v) => format!("--zone={} {option}={}", quote(&fw.zone), quote(v)),
            None if self.item == Item::Masquerade => {
                format!("--zone={} {option}", quote(&fw.zone))
            }
            None => option,
        };
        let cmd = format!("{} {option}", fw.command(layer));
        format!(
            "{cmd} >/dev/null || {{ echo {} >&2; exit 1; }}",
            quote(&format!("{cmd} failed"))
        )
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    facts::fact_samples(rt);
}

#[cfg(test)]
mod tests;
