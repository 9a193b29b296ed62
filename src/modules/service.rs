//! `systemd_service` (and `systemd`, `service`): units started or stopped,
//! enabled or disabled, masked or not.
//!
//! Compliance follows what systemd does rather than what `is-enabled`
//! returns: `static` and `generated` units cannot be disabled (only masked),
//! `indirect` is not enabled, an alias is acted on through its real unit,
//! and a socket, timer or path unit that can start a "disabled" service is
//! drift. Everything comes from one `systemctl show` for all named units.
//! A `name` alone returns the unit's status (every property `systemctl show`
//! gives), as Ansible's query does.
//!
//! **`systemd_service`** reads `LoadState`, `UnitFileState`, `ActiveState` and
//! triggering units of all named units with one `systemctl show`. "Disabled"
//! means not found (compliant unless `missing_ok: false`), or disabled/masked and
//! not active. `static` units cannot be disabled (the report says to set
//! `masked: true`), `indirect` is not "enabled", aliases act on the real unit, and
//! an active socket/timer/path unit that would restart a disabled service is
//! drift and is stopped too. On hosts without systemd as PID 1 a service that
//! should be off is compliant with a note; one that should run fails.
//!
//! # Example
//!
//! ```yaml
//! - name: Start slurmd now and at boot, after its unit file changed
//!   systemd_service:
//!     name: slurmd
//!     state: started
//!     enabled: true
//!     daemon_reload: true
//! - name: Keep the NVIDIA persistence daemon running
//!   service:
//!     name: nvidia-persistenced
//!     state: started
//!     enabled: true
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const SERVICE: ModuleSpec = ModuleSpec {
    name: "systemd_service",
    source: file!(),
    aliases: &[
        "ansible.builtin.systemd_service",
        "systemd",
        "ansible.builtin.systemd",
        "service",
        "ansible.builtin.service",
    ],
    params: &ServiceArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

const PROPS: &str = "Id,LoadState,UnitFileState,ActiveState,TriggeredBy,NeedDaemonReload";
const TRIGGERS_MARK: &str = "@@triggers";
const UNIT_TYPES: &[&str] = &[
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
    "slice",
    "scope",
];

choices! {
    enum State {
        Started = "started",
        Stopped = "stopped",
        Restarted = "restarted",
        Reloaded = "reloaded",
    }
}

choices! {
    /// Which service manager: the system's, or the connecting user's.
    enum Scope {
        System = "system",
        User = "user",
        Global = "global",
    }
}

module_params! {
    struct ServiceArgs {
        /// one unit or a list (`.service` when no type is given)
        name: Vec<String>,
        /// running, stopped, or restarted or reloaded now
        state: Option<State>,
        /// started at boot
        enabled: Option<bool>,
        /// masked, so nothing can start it
        masked: Option<bool>,
        /// reload systemd's unit files first
        #[aliases("daemon-reload")]
        daemon_reload: bool = false,
        /// re-execute systemd first (it reloads unit files too)
        #[aliases("daemon-reexec")]
        daemon_reexec: bool = false,
        /// the system's manager or the connecting user's (`global` is refused)
        scope: Scope = Scope::System,
        /// queue start and stop jobs without waiting for them
        no_block: bool = false,
        /// false: a unit that does not exist is an error
        missing_ok: bool = true,
        /// the service manager (Ansible's `use`): automatic or systemd, the one nodeprov drives; another is refused
        #[aliases("use")]
        init_system: Option<String>,
    }
}

struct Service {
    units: Vec<String>,
    state: Option<State>,
    enabled: Option<bool>,
    masked: Option<bool>,
    /// `daemon-reload` or `daemon-reexec`, run before anything else.
    manager: Option<&'static str>,
    /// `--user` for the user's manager; empty for the system's.
    scope: &'static str,
    no_block: bool,
    missing_ok: bool,
    /// Only a name was given: the unit's status is returned, nothing changed.
    query: bool,
}

/// `nginx` → `nginx.service`, as systemctl completes it.
fn unit_name(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((_, t)) if UNIT_TYPES.contains(&t) => name.to_string(),
        _ => format!("{name}.service"),
    }
}

/// systemd.unit(5): names are ASCII letters, digits and `:-_.\@`.
fn valid_unit(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":-_.\\@".contains(&b))
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ServiceArgs::read(p)?;
    if let Some(other) = a
        .init_system
        .as_deref()
        .filter(|s| !matches!(*s, "auto" | "systemd" | "ansible.builtin.systemd"))
    {
        return Err(p.error(
            "init_system",
            format!("use: '{other}' is not a service manager nodeprov drives (systemd)"),
        ));
    }
    let names = a.name;
    if let Some(bad) = names.iter().find(|n| !valid_unit(n)) {
        return Err(p.error("name", format!("'{bad}' is not a valid systemd unit name")));
    }
    let (state, enabled, masked) = (a.state, a.enabled, a.masked);
    let manager = match (a.daemon_reexec, a.daemon_reload) {
        (true, _) => Some("daemon-reexec"),
        (false, true) => Some("daemon-reload"),
        (false, false) => None,
    };
    let daemon_reload = manager.is_some();
    let scope = match a.scope {
        Scope::System => "",
        Scope::User => "--user ",
        // `systemctl --global` edits the user units' defaults and has no
        // manager to ask about their state, so nothing here could be probed.
        Scope::Global => {
            return Err(p.error(
                "scope",
                "scope: global is not supported (use system, or user for the connecting user's manager)",
            ))
        }
    };
    if names.is_empty()
        && !(daemon_reload && state.is_none() && enabled.is_none() && masked.is_none())
    {
        return Err(p.error("name", "missing required parameter 'name'"));
    }
    // Only a name: Ansible's query of the unit, its `status` returned.
    let query = !names.is_empty()
        && state.is_none()
        && enabled.is_none()
        && masked.is_none()
        && !daemon_reload;
    if query && names.len() > 1 {
        return Err(p.error(
            "name",
            "a query of a unit's status (a name and nothing to change) takes one unit",
        ));
    }
    if masked == Some(true) && (enabled == Some(true) || state.is_some_and(|s| s != State::Stopped))
    {
        return Err(p.error(
            "masked",
            "a masked unit cannot be enabled or started; drop 'masked: true' or the other setting",
        ));
    }
    Ok(Box::new(Service {
        units: names.iter().map(|n| unit_name(n)).collect(),
        state,
        enabled,
        masked,
        manager,
        scope,
        no_block: a.no_block,
        missing_ok: a.missing_ok,
        query,
    }))
}

/// Whether systemd runs this host (PID 1).
struct Systemd;

impl Fact for Systemd {
    type Query = ();
    type Value = bool;

    fn key(_: &()) -> String {
        "init:systemd".into()
    }

    fn script(_: &()) -> String {
        "[ -d /run/systemd/system ] && echo yes || echo no".into()
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<bool, ModuleError> {
        Ok(r.stdout.trim() == "yes")
    }

    fn render(running: &bool) -> ProbeResult {
        ProbeResult::ok(if *running { "yes\n" } else { "no\n" })
    }
}

/// Every property `systemctl show` gives one unit, as Ansible's `status`.
struct UnitStatus;

impl Fact for UnitStatus {
    type Query = Shown;
    type Value = serde_json::Map<String, serde_json::Value>;

    fn key(q: &Shown) -> String {
        format!("systemd:status:{}{}", q.scope, q.units.join(" "))
    }

    fn script(q: &Shown) -> String {
        let unit = q.units.first().map(|u| quote(u)).unwrap_or_default();
        format!(
            "[ -d /run/systemd/system ] || exit 0
systemctl {}show --no-pager -- {unit}",
            q.scope
        )
    }

    fn parse(_: &Shown, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        Ok(r.stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
            .collect())
    }

    fn render(status: &Self::Value) -> ProbeResult {
        let lines: String = status
            .iter()
            .map(|(k, v)| format!("{k}={}\n", v.as_str().unwrap_or_default()))
            .collect();
        ProbeResult::ok(lines)
    }
}

/// Units as one manager (the system's or the user's) knows them.
struct Shown {
    /// `--user ` or empty, as systemctl takes it.
    scope: &'static str,
    units: Vec<String>,
}

/// The named units, in order, and the units that can trigger them.
struct ShownUnits;

impl Fact for ShownUnits {
    type Query = Shown;
    type Value = (Vec<Unit>, Vec<Unit>);

    fn key(q: &Shown) -> String {
        format!("systemd:show:{}{}", q.scope, q.units.join(" "))
    }

    fn script(q: &Shown) -> String {
        let args = q
            .units
            .iter()
            .map(|u| quote(u))
            .collect::<Vec<_>>()
            .join(" ");
        let show = format!("systemctl {}show -p", q.scope);
        format!(
            "[ -d /run/systemd/system ] || exit 0\n\
             {show} {PROPS} --no-pager -- {args} || exit 1\n\
             t=$({show} TriggeredBy --no-pager -- {args} | sed -n 's/^TriggeredBy=//p' | tr ' ' '\\n' | sort -u | grep .)\n\
             [ -z \"$t\" ] || {{ echo; echo {TRIGGERS_MARK}; {show} {PROPS} --no-pager -- $t; }}"
        )
    }

    fn parse(q: &Shown, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        let units = &q.units;
        let (named, triggers) = r
            .stdout
            .split_once(TRIGGERS_MARK)
            .unwrap_or((&r.stdout, ""));
        let named = blocks(named);
        if r.rc != 0 || named.len() != units.len() {
            return Err(fact::bad(
                Self::key(q),
                format!("expected {} units: {}", units.len(), r.stderr.trim()),
            ));
        }
        Ok((named, blocks(triggers)))
    }

    fn render((named, triggers): &Self::Value) -> ProbeResult {
        let show = |units: &[Unit]| {
            units
                .iter()
                .map(Unit::render)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut out = show(named);
        if !triggers.is_empty() {
            out.push_str(&format!("\n{TRIGGERS_MARK}\n{}", show(triggers)));
        }
        ProbeResult::ok(out)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Unit {
    id: String,
    load: String,
    file_state: String,
    active: String,
    triggered_by: Vec<String>,
    need_reload: bool,
}

impl Unit {
    fn parse(block: &str) -> Unit {
        let mut u = Unit::default();
        for (k, v) in block.lines().filter_map(|l| l.split_once('=')) {
            match k {
                "Id" => u.id = v.to_string(),
                "LoadState" => u.load = v.to_string(),
                "UnitFileState" => u.file_state = v.to_string(),
                "ActiveState" => u.active = v.to_string(),
                "TriggeredBy" => {
                    u.triggered_by = v.split_whitespace().map(str::to_string).collect()
                }
                "NeedDaemonReload" => u.need_reload = v == "yes",
                _ => {}
            }
        }
        u
    }

    /// The block `systemctl show` prints for it.
    fn render(&self) -> String {
        format!(
            "Id={}\nLoadState={}\nUnitFileState={}\nActiveState={}\nTriggeredBy={}\nNeedDaemonReload={}\n",
            self.id,
            self.load,
            self.file_state,
            self.active,
            self.triggered_by.join(" "),
            if self.need_reload { "yes" } else { "no" }
        )
    }

    fn running(&self) -> bool {
        matches!(self.active.as_str(), "active" | "reloading" | "activating")
    }

    fn masked(&self) -> bool {
        self.load == "masked" || self.file_state.starts_with("masked")
    }

    /// Enabled in some way that `systemctl disable` undoes.
    fn enabled(&self) -> bool {
        matches!(
            self.file_state.as_str(),
            "enabled" | "enabled-runtime" | "linked" | "linked-runtime" | "alias"
        )
    }
}

fn blocks(text: &str) -> Vec<Unit> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(Unit::parse)
        .collect()
}

fn change(subject: String, before: &str, after: &str) -> Change {
    Change::new(subject, Some(before.to_string()), Some(after.to_string()))
        .with_evidence("systemctl show")
}

impl Module for Service {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![Systemd::probe(&())];
        if self.query {
            probes.push(UnitStatus::probe(&self.shown()));
        } else if !self.units.is_empty() {
            probes.push(ShownUnits::probe(&self.shown()));
        }
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        if !Systemd::read(facts, &())? {
            return self.plan_without_systemd();
        }
        let mut plan = Plan::noop();
        if self.query {
            let status = UnitStatus::read(facts, &self.shown())?;
            plan.returns
                .insert("name".into(), self.units[0].clone().into());
            plan.returns.insert("status".into(), status.into());
            return Ok(plan);
        }
        if self.units.is_empty() {
            if let Some(verb) = self.manager {
                plan.changes
                    .push(Change::new("systemd", None, Some(verb.into())));
                plan.steps.push(self.manager_step(verb));
            }
            return Ok(plan);
        }
        let shown = self.shown();
        let (named, triggers) = ShownUnits::read(facts, &shown)?;
        for (name, unit) in self.units.iter().zip(&named) {
            self.plan_unit(name, unit, &triggers, &mut plan)?;
        }
        let stale = named.iter().any(|u| u.need_reload);
        if let Some(verb) = self.manager.filter(|_| stale || !plan.steps.is_empty()) {
            if stale && plan.changes.is_empty() {
                plan.changes
                    .push(change("systemd".into(), "unit files changed on disk", verb));
            }
            plan.steps.insert(0, self.manager_step(verb));
        }
        if !plan.steps.is_empty() {
            plan.effects.push(ShownUnits::invalidate(&shown));
        }
        Ok(plan)
    }

    /// A restart or reload is an action, not a state: nothing can show
    /// afterwards that it happened, so it is run and reported like a
    /// command rather than verified (verify would re-plan the restart and
    /// call it non-convergence). Other settings of the same task are then
    /// not verified either.
    fn is_command(&self) -> bool {
        matches!(self.state, Some(State::Restarted | State::Reloaded))
            || (self.units.is_empty() && self.manager.is_some())
    }
}

impl Service {
    fn shown(&self) -> Shown {
        Shown {
            scope: self.scope,
            units: self.units.clone(),
        }
    }

    fn manager_step(&self, verb: &str) -> String {
        format!("systemctl {}{verb} || exit 1", self.scope)
    }

    /// A systemctl call on one unit that says what failed; with `no_block`
    /// jobs are queued, not waited for.
    fn systemctl(&self, verb: &str, unit: &str) -> String {
        let queue = matches!(verb, "start" | "stop" | "restart" | "reload") && self.no_block;
        format!(
            "systemctl {}{verb}{} -- {} || {{ echo {} >&2; exit 1; }}",
            self.scope,
            if queue { " --no-block" } else { "" },
            quote(unit),
            quote(&format!("systemctl {verb} {unit} failed"))
        )
    }

    /// Nothing runs units here: stopped and disabled hold, started cannot.
    fn plan_without_systemd(&self) -> Result<Plan, ModuleError> {
        let wants_running =
            self.state.is_some_and(|s| s != State::Stopped) || self.enabled == Some(true);
        let what = if self.units.is_empty() {
            "systemd".to_string()
        } else {
            self.units.join(", ")
        };
        if wants_running {
            return Err(ModuleError::Missing(format!(
                "no systemd on this host (PID 1 is not systemd, /run/systemd/system is absent): cannot start or enable {what}"
            )));
        }
        let mut plan = Plan::noop();
        plan.notes.push(format!(
            "no systemd on this host (PID 1 is not systemd): {what} cannot run here and counts as stopped and disabled"
        ));
        Ok(plan)
    }

    fn plan_unit(
        &self,
        name: &str,
        u: &Unit,
        triggers: &[Unit],
        plan: &mut Plan,
    ) -> Result<(), ModuleError> {
        let id = if u.id.is_empty() { name } else { &u.id };
        if u.load == "not-found" && self.masked != Some(true) {
            return self.plan_missing(id, plan);
        }
        if self.masked == Some(false) && u.masked() {
            plan.changes
                .push(change(format!("{id} masked"), &u.file_state, "unmasked"));
            plan.steps.push(self.systemctl("unmask", id));
        }
        let masked_after = (u.masked() && self.masked != Some(false)) || self.masked == Some(true);
        if masked_after
            && (self.enabled == Some(true) || self.state.is_some_and(|s| s != State::Stopped))
        {
            return Err(ModuleError::Refused(format!(
                "{id} is masked; set masked: false to enable or start it"
            )));
        }
        if self.masked != Some(true) {
            self.plan_triggers(id, u, triggers, plan);
        }
        if let Some(want) = self.enabled.filter(|_| !masked_after) {
            self.plan_enabled(id, u, want, plan)?;
        }
        self.plan_state(id, u, plan);
        if self.masked == Some(true) && u.file_state != "masked" {
            let before = if u.load == "not-found" {
                "not-found"
            } else {
                &u.file_state
            };
            plan.changes
                .push(change(format!("{id} masked"), before, "masked"));
            plan.steps.push(self.systemctl("mask", id));
        }
        Ok(())
    }

    fn plan_missing(&self, id: &str, plan: &mut Plan) -> Result<(), ModuleError> {
        let needs_unit =
            self.enabled == Some(true) || self.state.is_some_and(|s| s != State::Stopped);
        if needs_unit || !self.missing_ok {
            return Err(ModuleError::Absent(format!(
                "unit {id} not found on this host{}",
                if needs_unit {
                    ""
                } else {
                    " (set missing_ok: true to accept that)"
                }
            )));
        }
        plan.notes.push(format!(
            "{id} is not installed: it counts as stopped and disabled"
        ));
        Ok(())
    }

    /// Sockets, timers and paths that would start a unit meant to be off.
    fn plan_triggers(&self, id: &str, u: &Unit, triggers: &[Unit], plan: &mut Plan) {
        let stop = self.state == Some(State::Stopped);
        let disable = self.enabled == Some(false);
        for t in triggers.iter().filter(|t| u.triggered_by.contains(&t.id)) {
            let subject = format!("{} (starts {id})", t.id);
            if stop && t.running() {
                plan.changes
                    .push(change(subject.clone(), &t.active, "stopped"));
                plan.steps.push(self.systemctl("stop", &t.id));
            }
            if disable && t.enabled() {
                plan.changes
                    .push(change(subject, &t.file_state, "disabled"));
                plan.steps.push(self.systemctl("disable", &t.id));
            }
        }
    }

    fn plan_enabled(
        &self,
        id: &str,
        u: &Unit,
        want: bool,
        plan: &mut Plan,
    ) -> Result<(), ModuleError> {
        let fs = u.file_state.as_str();
        match (fs, want) {
            ("enabled" | "alias", true) | ("disabled" | "masked" | "masked-runtime", false) => {}
            ("enabled-runtime" | "linked" | "linked-runtime" | "disabled", true) => {
                plan.changes.push(change(format!("{id} enabled"), fs, "enabled"));
                plan.steps.push(self.systemctl("enable", id));
            }
            (_, false) if u.enabled() => {
                plan.changes.push(change(format!("{id} enabled"), fs, "disabled"));
                plan.steps.push(self.systemctl("disable", id));
            }
            ("static" | "generated" | "transient", true) => plan.notes.push(format!(
                "{id} is {fs}: it has no [Install] section to enable; it starts when another unit pulls it in"
            )),
            ("static" | "generated" | "transient", false) => {
                plan.notes.push(format!(
                    "{id} is {fs}: systemctl disable does nothing to it; only masked: true stops it from being started"
                ));
                plan.changes.push(change(format!("{id} enabled"), fs, "disabled (needs masked: true)"));
                plan.steps.push(format!(
                    "echo {} >&2; exit 1",
                    quote(&format!("{id} is {fs} and cannot be disabled; set masked: true"))
                ));
            }
            ("indirect", _) => plan.notes.push(format!(
                "{id} is indirect: not enabled itself, it is started through the units naming it in Also= or as a template instance"
            )),
            _ => {
                return Err(ModuleError::Unsupported(format!(
                    "{id}: cannot {} a unit whose file state is '{fs}'",
                    if want { "enable" } else { "disable" }
                )))
            }
        }
        Ok(())
    }

    fn plan_state(&self, id: &str, u: &Unit, plan: &mut Plan) {
        let (verb, after) = match (self.state, u.running()) {
            (Some(State::Started), false) => ("start", "started"),
            (Some(State::Stopped), true) => ("stop", "stopped"),
            (Some(State::Restarted), _) => ("restart", "restarted"),
            (Some(State::Reloaded), true) => ("reload", "reloaded"),
            // Ansible's `reloaded` starts a unit that is not running.
            (Some(State::Reloaded), false) => ("start", "started"),
            _ => return,
        };
        plan.changes
            .push(change(format!("{id} state"), &u.active, after));
        plan.steps.push(self.systemctl(verb, id));
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let one = Shown {
        scope: "",
        units: vec!["docker.service".to_string()],
    };
    let mut status = serde_json::Map::new();
    status.insert("ActiveState".into(), "active".into());
    status.insert(
        "FragmentPath".into(),
        "/usr/lib/systemd/system/docker.service".into(),
    );
    rt.check::<UnitStatus>(&one, status);
    rt.check::<Systemd>(&(), true);
    rt.check::<Systemd>(&(), false);
    let unit = |id: &str, triggered_by: &[&str]| Unit {
        id: id.into(),
        load: "loaded".into(),
        file_state: "enabled".into(),
        active: "active".into(),
        triggered_by: triggered_by.iter().map(|t| t.to_string()).collect(),
        need_reload: id.starts_with('b'),
    };
    let units = Shown {
        scope: "",
        units: vec!["a.service".to_string(), "b.service".to_string()],
    };
    rt.check::<ShownUnits>(
        &units,
        (
            vec![unit("a.service", &[]), unit("b.service", &[])],
            Vec::new(),
        ),
    );
    rt.check::<ShownUnits>(
        &units,
        (
            vec![
                unit("a.service", &["a.socket", "a.timer"]),
                unit("b.service", &[]),
            ],
            vec![unit("a.socket", &[]), unit("a.timer", &[])],
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    fn block(id: &str, load: &str, fs: &str, active: &str, triggered_by: &str) -> String {
        format!(
            "Id={id}\nLoadState={load}\nActiveState={active}\nUnitFileState={fs}\nTriggeredBy={triggered_by}\nNeedDaemonReload=no\n"
        )
    }

    fn plan_on(params: serde_json::Value, show: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&SERVICE, params).unwrap();
        let units = m
            .probes()
            .into_iter()
            .find(|p| p.key.starts_with("systemd:show:"))
            .unwrap();
        let plan = m.plan(&facts_of(&[
            (&Systemd::key(&()), "yes\n"),
            (&units.key, show),
        ]));
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    fn summary(plan: &Plan) -> Vec<String> {
        plan.changes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_name_alone_returns_the_units_status_and_changes_nothing() {
        let m = build_test(&SERVICE, json!({"name": "docker"})).unwrap();
        let key = m
            .probes()
            .into_iter()
            .find(|p| p.key.starts_with("systemd:status:"))
            .unwrap()
            .key;
        let plan = m
            .plan(&facts_of(&[
                (&Systemd::key(&()), "yes\n"),
                (
                    &key,
                    "Id=docker.service\nFragmentPath=/lib/systemd/system/docker.service\n",
                ),
            ]))
            .unwrap();
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        assert_eq!(
            plan.returns["status"]["FragmentPath"],
            "/lib/systemd/system/docker.service"
        );
        assert_eq!(plan.returns["name"], "docker.service");
    }

    #[test]
    fn names_and_params_are_checked() {
        assert_eq!(unit_name("nginx"), "nginx.service");
        assert_eq!(unit_name("cockpit.socket"), "cockpit.socket");
        assert_eq!(unit_name("getty@tty1"), "getty@tty1.service");
        assert!(
            build_error(&SERVICE, json!({"name": "$(reboot)", "state": "stopped"}))
                .contains("not a valid")
        );
        assert!(
            build_error(&SERVICE, json!({"name": "x", "state": "running"}))
                .contains("not a valid state")
        );
        assert!(build_error(&SERVICE, json!({"name": ["x", "y"]})).contains("takes one unit"));
        assert!(build_error(
            &SERVICE,
            json!({"name": "x", "masked": true, "enabled": true})
        )
        .contains("masked"));
        assert!(build_error(&SERVICE, json!({"state": "started"})).contains("'name'"));
        assert!(build_test(&SERVICE, json!({"daemon_reload": true})).is_ok());
    }

    #[test]
    fn one_probe_reads_all_units_quoted() {
        let m = build_test(
            &SERVICE,
            json!({"name": ["a", "b\\x2dc@1"], "state": "stopped"}),
        )
        .unwrap();
        let p = ShownUnits::probe(&Shown {
            scope: "",
            units: vec!["a.service".into(), "b\\x2dc@1.service".into()],
        });
        assert!(m.probes().contains(&p));
        assert!(
            p.script
                .contains("--no-pager -- a.service 'b\\x2dc@1.service'"),
            "{}",
            p.script
        );
    }

    #[test]
    fn ansible_spellings_and_manager_options() {
        assert_eq!(
            SERVICE.params.canonical("daemon-reload"),
            Some("daemon_reload")
        );
        assert_eq!(
            SERVICE.params.canonical("daemon-reexec"),
            Some("daemon_reexec")
        );
        assert_eq!(SERVICE.params.canonical("daemon_reload"), None);
        let m = build_test(&SERVICE, json!({"daemon_reexec": true})).unwrap();
        assert!(m.is_command());
        let plan = m.plan(&facts_of(&[(&Systemd::key(&()), "yes\n")])).unwrap();
        assert_eq!(plan.steps, ["systemctl daemon-reexec || exit 1"]);
        assert!(build_error(
            &SERVICE,
            json!({"name": "x", "state": "started", "scope": "global"})
        )
        .contains("global is not supported"));
        let show = block("nginx.service", "loaded", "disabled", "inactive", "");
        let plan = plan_on(
            json!({"name": "nginx", "state": "started", "enabled": true, "scope": "user",
                   "no_block": true, "daemon_reload": true}),
            &show,
        )
        .unwrap();
        assert_eq!(plan.steps[0], "systemctl --user daemon-reload || exit 1");
        assert!(plan.steps[1].starts_with("systemctl --user enable -- nginx.service ||"));
        assert!(plan.steps[2].starts_with("systemctl --user start --no-block -- nginx.service ||"));
        let m = build_test(
            &SERVICE,
            json!({"name": "nginx", "enabled": true, "scope": "user"}),
        )
        .unwrap();
        let probe = m.probes().pop().unwrap();
        assert_eq!(probe.key, "systemd:show:--user nginx.service");
        assert!(
            probe.script.contains("systemctl --user show -p Id,"),
            "{}",
            probe.script
        );
    }

    #[test]
    fn compliant_units_are_a_noop() {
        let show = format!(
            "{}\n{}",
            block("nginx.service", "loaded", "enabled", "active", ""),
            block("cups.service", "loaded", "enabled", "active", "")
        );
        let plan = plan_on(
            json!({"name": ["nginx", "cups"], "state": "started", "enabled": true}),
            &show,
        )
        .unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn start_and_enable_in_order() {
        let show = block("nginx.service", "loaded", "disabled", "inactive", "");
        let plan = plan_on(
            json!({"name": "nginx", "state": "started", "enabled": true, "daemon_reload": true}),
            &show,
        )
        .unwrap();
        assert_eq!(
            summary(&plan),
            [
                "nginx.service enabled: disabled → enabled",
                "nginx.service state: inactive → started"
            ]
        );
        assert_eq!(plan.steps[0], "systemctl daemon-reload || exit 1");
        assert!(plan.steps[1].starts_with("systemctl enable -- nginx.service ||"));
        assert!(plan.steps[2].starts_with("systemctl start -- nginx.service ||"));
    }

    #[test]
    fn daemon_reload_is_drift_only_when_unit_files_changed() {
        let show = block("nginx.service", "loaded", "enabled", "active", "");
        let params = json!({"name": "nginx", "enabled": true, "daemon_reload": true});
        assert_eq!(plan_on(params.clone(), &show).unwrap(), Plan::noop());
        let stale = show.replace("NeedDaemonReload=no", "NeedDaemonReload=yes");
        assert_eq!(
            plan_on(params, &stale).unwrap().steps,
            ["systemctl daemon-reload || exit 1"]
        );
    }

    #[test]
    fn static_unit_needs_mask_to_be_disabled() {
        let show = block("systemd-x.service", "loaded", "static", "inactive", "");
        let plan = plan_on(json!({"name": "systemd-x", "enabled": false}), &show).unwrap();
        assert_eq!(
            summary(&plan),
            ["systemd-x.service enabled: static → disabled (needs masked: true)"]
        );
        assert!(plan.notes[0].contains("only masked: true"));
        assert!(plan.steps[0].ends_with("exit 1") && plan.steps[0].contains("set masked: true"));
        let plan = plan_on(
            json!({"name": "systemd-x", "enabled": false, "masked": true}),
            &show,
        )
        .unwrap();
        assert_eq!(
            summary(&plan),
            ["systemd-x.service masked: static → masked"]
        );
        assert!(plan.steps[0].starts_with("systemctl mask -- systemd-x.service"));
        let masked = block("systemd-x.service", "masked", "masked", "inactive", "");
        assert_eq!(
            plan_on(
                json!({"name": "systemd-x", "enabled": false, "masked": true}),
                &masked
            )
            .unwrap(),
            Plan::noop()
        );
    }

    #[test]
    fn indirect_is_not_enabled() {
        let show = block("x.service", "loaded", "indirect", "inactive", "");
        let plan = plan_on(json!({"name": "x", "enabled": false}), &show).unwrap();
        assert!(plan.changes.is_empty());
        assert!(plan.notes[0].contains("indirect: not enabled"));
    }

    #[test]
    fn masked_unit_cannot_be_started_unless_unmasked() {
        let show = block("x.service", "masked", "masked", "inactive", "");
        let err = plan_on(json!({"name": "x", "state": "started"}), &show).unwrap_err();
        assert!(matches!(err, ModuleError::Refused(m) if m.contains("set masked: false")));
        let plan = plan_on(
            json!({"name": "x", "state": "started", "masked": false}),
            &show,
        )
        .unwrap();
        assert_eq!(
            summary(&plan),
            [
                "x.service masked: masked → unmasked",
                "x.service state: inactive → started"
            ]
        );
    }

    #[test]
    fn missing_unit_is_compliant_when_off_and_an_error_when_needed() {
        let show = block("telnet.service", "not-found", "", "inactive", "");
        let plan = plan_on(
            json!({"name": "telnet", "state": "stopped", "enabled": false}),
            &show,
        )
        .unwrap();
        assert!(plan.changes.is_empty());
        assert!(plan.notes[0].contains("not installed"));
        let err = plan_on(
            json!({"name": "telnet", "enabled": false, "missing_ok": false}),
            &show,
        )
        .unwrap_err();
        assert!(matches!(err, ModuleError::Absent(m) if m.contains("not found")));
        assert!(plan_on(json!({"name": "telnet", "state": "started"}), &show).is_err());
        let plan = plan_on(json!({"name": "telnet", "masked": true}), &show).unwrap();
        assert_eq!(
            summary(&plan),
            ["telnet.service masked: not-found → masked"]
        );
    }

    #[test]
    fn active_socket_trigger_is_drift_and_stopped_first() {
        let show = format!(
            "{}\n{TRIGGERS_MARK}\n{}",
            block(
                "cockpit.service",
                "loaded",
                "static",
                "inactive",
                "cockpit.socket"
            ),
            block("cockpit.socket", "loaded", "enabled", "active", "")
        );
        let plan = plan_on(json!({"name": "cockpit", "state": "stopped"}), &show).unwrap();
        assert_eq!(
            summary(&plan),
            ["cockpit.socket (starts cockpit.service): active → stopped"]
        );
        assert!(plan.steps[0].starts_with("systemctl stop -- cockpit.socket"));
        let show = show.replace("static", "disabled");
        let plan = plan_on(
            json!({"name": "cockpit", "state": "stopped", "enabled": false}),
            &show,
        )
        .unwrap();
        assert_eq!(
            summary(&plan),
            [
                "cockpit.socket (starts cockpit.service): active → stopped",
                "cockpit.socket (starts cockpit.service): enabled → disabled"
            ]
        );
    }

    /// `systemctl show -p Id,LoadState,UnitFileState,ActiveState,TriggeredBy,NeedDaemonReload`
    /// as EL7's systemd 219 prints it: every property exists there (its
    /// `bus_unit_vtable`, redhat-plumbers/systemd-rhel7 src/core/dbus-unit.c),
    /// but they come in that table's order, not the order asked, and empty
    /// ones are left out (no `TriggeredBy=` on an untriggered unit, no
    /// `UnitFileState=` on a unit that is not installed).
    const EL7_SHOW: &str = "Id=httpd.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\nNeedDaemonReload=no\n\nId=mysqld.service\nLoadState=not-found\nActiveState=inactive\nNeedDaemonReload=no\n\nId=cups.service\nTriggeredBy=cups.socket cups.path\nLoadState=loaded\nActiveState=inactive\nUnitFileState=enabled\nNeedDaemonReload=no\n\n@@triggers\nId=cups.socket\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\nNeedDaemonReload=no\n\nId=cups.path\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\nNeedDaemonReload=no\n";

    #[test]
    fn systemd_219_output_of_el7_reads_the_same() {
        let plan = plan_on(
            json!({"name": ["httpd", "mysqld", "cups"], "state": "stopped", "enabled": false}),
            EL7_SHOW,
        )
        .unwrap();
        assert_eq!(
            summary(&plan),
            [
                "httpd.service enabled: enabled → disabled",
                "httpd.service state: active → stopped",
                "cups.socket (starts cups.service): active → stopped",
                "cups.socket (starts cups.service): enabled → disabled",
                "cups.path (starts cups.service): active → stopped",
                "cups.path (starts cups.service): enabled → disabled",
                "cups.service enabled: enabled → disabled",
            ]
        );
        assert!(
            plan.notes
                .iter()
                .any(|n| n.contains("mysqld.service") && n.contains("not installed")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn alias_is_acted_on_through_its_real_unit() {
        let show = block("ssh.service", "loaded", "enabled", "active", "");
        let plan = plan_on(
            json!({"name": "sshd", "state": "stopped", "enabled": false}),
            &show,
        )
        .unwrap();
        assert!(plan.steps[0].starts_with("systemctl disable -- ssh.service"));
        assert!(plan.steps[1].starts_with("systemctl stop -- ssh.service"));
    }

    #[test]
    fn restart_is_always_a_change_run_like_a_command() {
        let show = block("nginx.service", "loaded", "enabled", "active", "");
        let params = json!({"name": "nginx", "state": "restarted"});
        let plan = plan_on(params.clone(), &show).unwrap();
        assert_eq!(summary(&plan), ["nginx.service state: active → restarted"]);
        assert!(plan.unknown.is_none());
        assert!(build_test(&SERVICE, params).unwrap().is_command());
        let stopped = block("nginx.service", "loaded", "enabled", "inactive", "");
        let plan = plan_on(json!({"name": "nginx", "state": "reloaded"}), &stopped).unwrap();
        assert!(
            plan.steps[0].starts_with("systemctl start --"),
            "reloaded starts a stopped unit"
        );
    }

    #[test]
    fn no_systemd_host_is_compliant_for_off_and_fails_for_on() {
        let facts = facts_of(&[(&Systemd::key(&()), "no\n")]);
        let off = build_test(
            &SERVICE,
            json!({"name": "nginx", "state": "stopped", "enabled": false}),
        )
        .unwrap();
        let plan = off.plan(&facts).unwrap();
        assert!(plan.changes.is_empty());
        assert!(plan.notes[0].starts_with("no systemd on this host"));
        let on = build_test(&SERVICE, json!({"name": "nginx", "state": "started"})).unwrap();
        assert!(
            matches!(on.plan(&facts), Err(ModuleError::Missing(m)) if m.starts_with("no systemd on this host"))
        );
    }
}
