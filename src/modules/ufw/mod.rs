//! `ufw` (community.general): the firewall on or off, reloaded or reset,
//! its default policies, its log level and its rules. One probe reads all
//! of it (see `facts`); a rule is present when the line `ufw show added`
//! would print for it is there (see `rule`), so a second run changes
//! nothing and check mode names the line it expected and the one it found.
//! The steps are ufw's own commands: when ufw is inactive they change its
//! rule files only, as ufw does; when it is active they take effect too. A
//! host without ufw fails the task with that said.
//!
//! **`ufw`** reads everything it compares in one probe: `ufw status`
//! (active or not), the default policies in `/etc/default/ufw`, the log level
//! in `/etc/ufw/ufw.conf` and the rules as `ufw show added` lists them (from
//! ufw's own rule files, so the same whether ufw runs or not). Planning writes
//! the task's rule as ufw itself would print it, normalised as ufw normalises
//! it (`10.9.9.9/8` is `10.0.0.0/8`, `/32` and `/128` are dropped, a dotted
//! mask becomes a prefix, the short form `allow 22/tcp` where it fits), and
//! the rule is present when that line is listed: a second run changes
//! nothing, and check mode reports drift with the line expected and the line
//! found (the same rule with another comment, which ufw replaces when the rule
//! is added again) or how many rules it looked through. Community.general
//! compares `ufw status verbose` and `ufw show added` before and after running
//! ufw, and asks `ufw --dry-run` in check mode; the outcome is the same, known
//! without running ufw. Apply runs `ufw` itself: when ufw is inactive its files
//! change only, as with ufw on the command line; when active the rule takes
//! effect at once. `delete` removes the rule whatever its comment unless a
//! comment is given (as ufw does); `insert` places a missing rule, an existing
//! one is left where it is. Ports are numbers, ranges and lists (service names
//! are refused: ufw stores what they resolve to); a comment or application
//! name with a single quote or a control character, an interface name that is
//! none, an address that does not parse and a source and destination of two
//! IP versions are refused at load; everything
//! else reaches ufw shell-quoted. Route rules (`route`, `interface_in`,
//! `interface_out`) and positions relative to the first or last IPv4 or IPv6
//! rule (`insert_relative_to`) are not supported and refused at load, as are
//! rule parameters without `rule` and `state: reset` together with anything
//! else. What is proven how: the normalisation by planning tests on the lines
//! a real ufw 0.36 printed for 27 rules written in other words (each task is
//! a no-op against that recording and adds exactly that line on an empty
//! ufw), change, delete and hostile values by planning tests; end to end by
//! `tests/ufw.rs`, where the real ufw runs inside an isolated host with a
//! network namespace of its own (`IsolatedHost::with_network`): `check`
//! first reports all eight tasks (in Ansible's spellings, one comment holding
//! `$(…)` and backquotes) as drift and leaves ufw's files as they were; they
//! apply, ufw is turned on in that namespace and
//! `iptables -S` there shows the rules, a second apply changes nothing, a rule
//! deleted by hand is drift (`check` exits 2, naming the line expected), and
//! the machine's `/etc` (its ufw stays `ENABLED=no`) and its
//! `iptables-save`/`ip6tables-save`/`nft list ruleset` are the same before and
//! after.
//!
//! # Example
//!
//! ```yaml
//! - name: Let the login nodes reach slurmd
//!   ufw:
//!     rule: allow
//!     from_ip: 10.0.0.0/24
//!     to_port: "6818"
//!     proto: tcp
//!     comment: slurmd
//! - name: Deny the rest of the incoming traffic
//!   ufw:
//!     default: deny
//!     direction: incoming
//! - name: Turn the firewall on
//!   ufw:
//!     state: enabled
//! ```

mod facts;
mod rule;
#[cfg(test)]
mod tests;

use facts::{Found, Ufw as UfwFact, UfwState, POLICY_KEYS};
use rule::{check_interface, check_port, check_text, normalize_address, Action, Proto, Rule};

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const UFW: ModuleSpec = ModuleSpec {
    name: "ufw",
    source: file!(),
    aliases: &["community.general.ufw"],
    params: &UfwArgs::SPEC,
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
        Reloaded = "reloaded",
        Reset = "reset",
    }
}

choices! {
    enum Direction {
        In = "in",
        Out = "out",
        Incoming = "incoming",
        Outgoing = "outgoing",
        Routed = "routed",
    }
}

choices! {
    enum Policy {
        Allow = "allow",
        Deny = "deny",
        Reject = "reject",
    }
}

choices! {
    enum Level {
        On = "on",
        Off = "off",
        Low = "low",
        Medium = "medium",
        High = "high",
        Full = "full",
    }
}

module_params! {
    struct UfwArgs {
        /// on or off at boot and now; reloaded or reset now
        state: Option<State>,
        /// a default policy, for `direction` (incoming when unset)
        #[aliases("policy")]
        default: Option<Policy>,
        /// ufw's log level
        logging: Option<Level>,
        /// a rule's action
        rule: Option<Action>,
        /// the destination port: a number, a range A:B or a comma list
        #[aliases("port")]
        to_port: Option<String>,
        /// the source port, as `to_port`
        from_port: Option<String>,
        /// the source address or network
        #[aliases("from", "src")]
        from_ip: Option<String>,
        /// the destination address or network
        #[aliases("to", "dest")]
        to_ip: Option<String>,
        /// the protocol (any when unset)
        #[aliases("protocol")]
        proto: Option<Proto>,
        /// in or out for a rule; incoming, outgoing or routed for a default policy
        direction: Option<Direction>,
        /// the interface a rule applies to
        #[aliases("if")]
        interface: Option<String>,
        /// an application profile in place of the destination port
        #[aliases("app")]
        name: Option<String>,
        /// the rule's comment
        comment: Option<String>,
        /// log the connections the rule matches
        log: bool = false,
        /// remove the rule instead of adding it
        delete: bool = false,
        /// add the rule at this position (1 is the first) when it is missing
        insert: Option<i64>,
        /// not supported
        route: Option<serde_json::Value>,
        /// not supported
        #[aliases("if_in")]
        interface_in: Option<serde_json::Value>,
        /// not supported
        #[aliases("if_out")]
        interface_out: Option<serde_json::Value>,
        /// only `zero` (the default) is supported
        insert_relative_to: Option<String>,
    }
}

/// The rule a task adds or deletes.
struct RuleTask {
    rule: Rule,
    delete: bool,
    insert: Option<i64>,
}

struct Ufw {
    state: Option<State>,
    /// The direction word `ufw default` takes, with the policy.
    default: Option<(&'static str, Policy)>,
    rule: Option<RuleTask>,
    logging: Option<Level>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UfwArgs::read(p)?;
    refuse_unsupported(p, &a)?;
    let rule = rule_task(p, &a)?;
    let default = default_policy(p, &a)?;
    if a.state.is_none() && default.is_none() && rule.is_none() && a.logging.is_none() {
        return Err(p.error(
            "state",
            "one of state, default, rule or logging is required",
        ));
    }
    let alone = default.is_none() && rule.is_none() && a.logging.is_none();
    if a.state == Some(State::Reset) && !alone {
        return Err(p.error(
            "state",
            "state: reset goes in a task of its own: it removes every rule and policy",
        ));
    }
    Ok(Box::new(Ufw {
        state: a.state,
        default,
        rule,
        logging: a.logging,
    }))
}

/// Parameters nodeprov does not implement are refused rather than ignored.
fn refuse_unsupported(p: &Params, a: &UfwArgs) -> Result<(), ParamError> {
    let set = [
        ("route", a.route.is_some()),
        ("interface_in", a.interface_in.is_some()),
        ("interface_out", a.interface_out.is_some()),
        (
            "insert_relative_to",
            a.insert_relative_to.as_deref().is_some_and(|r| r != "zero"),
        ),
    ];
    match set.into_iter().find(|(_, on)| *on) {
        Some((key, _)) => Err(p.unsupported(
            key,
            format!("{key} is not supported by nodeprov: route rules, interface_in/interface_out and insert positions relative to anything but zero are not"),
        )),
        None => Ok(()),
    }
}

fn default_policy(p: &Params, a: &UfwArgs) -> Result<Option<(&'static str, Policy)>, ParamError> {
    let Some(policy) = a.default else {
        return Ok(None);
    };
    let dir = match a.direction {
        None | Some(Direction::Incoming) => "incoming",
        Some(Direction::Outgoing) => "outgoing",
        Some(Direction::Routed) => "routed",
        Some(_) => {
            return Err(p.error(
                "direction",
                "for default, direction must be incoming, outgoing or routed",
            ))
        }
    };
    Ok(Some((dir, policy)))
}

fn rule_task(p: &Params, a: &UfwArgs) -> Result<Option<RuleTask>, ParamError> {
    let Some(action) = a.rule else {
        return refuse_rule_words(p, a).map(|()| None);
    };
    let out = match a.direction {
        None | Some(Direction::In) => false,
        Some(Direction::Out) => true,
        Some(_) => return Err(p.error("direction", "for rules, direction must be in or out")),
    };
    let proto = a.proto.unwrap_or(Proto::Any);
    let address = |key: &str, v: &Option<String>| {
        v.as_deref()
            .map(normalize_address)
            .transpose()
            .map(Option::flatten)
            .map_err(|e| p.error(key, e))
    };
    let port = |key: &str, v: &Option<String>| match v {
        Some(port) => check_port(port, proto)
            .map(|()| Some(port.clone()))
            .map_err(|e| p.error(key, e)),
        None => Ok(None),
    };
    let text =
        |key: &str, v: &Option<String>, check: fn(&str) -> Result<(), String>| match v.as_deref() {
            None | Some("") => Ok(None),
            Some(t) => check(t)
                .map(|()| Some(t.to_string()))
                .map_err(|e| p.error(key, e)),
        };
    let rule = Rule {
        action,
        out,
        log: a.log,
        interface: text("interface", &a.interface, check_interface)?,
        from: address("from_ip", &a.from_ip)?,
        from_port: port("from_port", &a.from_port)?,
        to: address("to_ip", &a.to_ip)?,
        to_port: port("to_port", &a.to_port)?,
        proto,
        app: text("name", &a.name, |t| check_text("name", t))?,
        comment: text("comment", &a.comment, |t| check_text("comment", t))?,
    };
    check_rule_shape(p, a, &rule)?;
    Ok(Some(RuleTask {
        rule,
        delete: a.delete,
        insert: a.insert,
    }))
}

/// Combinations ufw itself would refuse, refused when the task is loaded.
fn check_rule_shape(p: &Params, a: &UfwArgs, rule: &Rule) -> Result<(), ParamError> {
    if rule.app.is_some() && (rule.to_port.is_some() || a.proto.is_some()) {
        return Err(p.error("name", "an application profile brings its own ports and protocol: give neither to_port nor proto with name"));
    }
    if let (Some(from), Some(to)) = (&rule.from, &rule.to) {
        if from.contains(':') != to.contains(':') {
            return Err(p.error("to_ip", "from_ip and to_ip must both be IPv4 or both IPv6"));
        }
    }
    if a.delete && a.insert.is_some() {
        return Err(p.error("insert", "insert and delete do not go together"));
    }
    if a.insert.is_some_and(|n| n < 1) {
        return Err(p.error("insert", "insert counts from 1"));
    }
    Ok(())
}

/// Rule parameters without `rule` would be ignored by Ansible; here they
/// are a mistake said at load.
fn refuse_rule_words(p: &Params, a: &UfwArgs) -> Result<(), ParamError> {
    let set = [
        ("to_port", a.to_port.is_some()),
        ("from_port", a.from_port.is_some()),
        ("from_ip", a.from_ip.is_some()),
        ("to_ip", a.to_ip.is_some()),
        ("proto", a.proto.is_some()),
        ("interface", a.interface.is_some()),
        ("name", a.name.is_some()),
        ("comment", a.comment.is_some()),
        ("insert", a.insert.is_some()),
        ("delete", a.delete),
        ("log", a.log),
    ];
    match set.into_iter().find(|(_, on)| *on) {
        Some((key, _)) => Err(p.error(
            key,
            format!("{key} belongs to a rule: set rule (allow, deny, limit or reject) too"),
        )),
        None => Ok(()),
    }
}

impl Module for Ufw {
    fn probes(&self) -> Vec<Probe> {
        vec![UfwFact::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let found = UfwFact::read(facts, &())?;
        if found.found == Found::Missing {
            return Err(ModuleError::Absent(
                "ufw is not installed on this host".into(),
            ));
        }
        let mut now = found.clone();
        let mut plan = Plan::noop();
        let known = self
            .state
            .is_none_or(|s| plan_state(s, &mut now, &mut plan));
        if let Some((dir, policy)) = self.default {
            plan_default(dir, policy, &mut now, &mut plan);
        }
        if let Some(t) = &self.rule {
            plan_rule(t, &mut now, &mut plan);
        }
        if let Some(level) = self.logging {
            plan_logging(level, &mut now, &mut plan);
        }
        if !plan.steps.is_empty() {
            plan.effects.push(match known {
                true => UfwFact::predict(&(), &now),
                false => UfwFact::invalidate(&()),
            });
        }
        Ok(plan)
    }

    /// Reloading and resetting are actions: nothing shows afterwards that
    /// they happened.
    fn is_command(&self) -> bool {
        matches!(self.state, Some(State::Reloaded | State::Reset))
    }
}

/// A step that says which ufw command failed.
fn step(command: String) -> String {
    let failed = quote(&format!("{command} failed"));
    format!("{command} || {{ echo {failed} >&2; exit 1; }}")
}

/// Returns whether what ufw holds afterwards is still known (not after a reset).
fn plan_state(state: State, now: &mut UfwState, plan: &mut Plan) -> bool {
    let (after, command, found) = match (state, now.found) {
        (State::Enabled, Found::Inactive) => ("active", "ufw --force enable", Found::Active),
        (State::Disabled, Found::Active) => ("inactive", "ufw disable", Found::Inactive),
        (State::Reloaded, f) => ("reloaded", "ufw reload", f),
        (State::Reset, _) => ("reset", "ufw --force reset", Found::Inactive),
        _ => return true,
    };
    plan.changes.push(
        Change::new("ufw", Some(now.found.word().into()), Some(after.into()))
            .with_evidence("ufw status"),
    );
    plan.steps.push(step(command.into()));
    now.found = found;
    state != State::Reset
}

fn plan_default(dir: &str, policy: Policy, now: &mut UfwState, plan: &mut Plan) {
    let want = policy.name();
    let current = now.policies.get(dir).cloned();
    if current.as_deref() == Some(want) {
        return;
    }
    let key = POLICY_KEYS
        .iter()
        .find(|(d, _)| *d == dir)
        .map_or("", |(_, k)| k);
    plan.changes.push(
        Change::new(format!("ufw default {dir}"), current, Some(want.into()))
            .with_evidence(format!("/etc/default/ufw {key}")),
    );
    plan.steps.push(step(format!("ufw default {want} {dir}")));
    now.policies.insert(dir.into(), want.into());
}

fn plan_logging(level: Level, now: &mut UfwState, plan: &mut Plan) {
    let current = now.logging.clone();
    let logging = current.as_deref().filter(|l| *l != "off");
    // `on` keeps a level already set, or turns on `low`, as ufw does.
    let want = match (level, logging) {
        (Level::On, Some(l)) => l.to_string(),
        (Level::On, None) => "low".into(),
        (l, _) => l.name().into(),
    };
    if current.as_deref() == Some(want.as_str()) {
        return;
    }
    plan.changes.push(
        Change::new("ufw logging", current, Some(want.clone()))
            .with_evidence("/etc/ufw/ufw.conf LOGLEVEL"),
    );
    plan.steps
        .push(step(format!("ufw logging {}", level.name())));
    now.logging = Some(want);
}

/// The line of `rules` that is this rule, whatever its comment.
fn same_rule(rules: &[String], rule: &Rule) -> Option<usize> {
    let bare = rule.line_without_comment();
    let strip = |l: &str| l.split_once(" comment '").map_or(l, |(r, _)| r).to_string();
    rules.iter().position(|l| strip(l) == bare)
}

/// Where `rules` holds a task's rule: with its comment, or with another.
struct Held {
    exact: Option<usize>,
    same: Option<usize>,
}

impl Held {
    fn find(rules: &[String], rule: &Rule) -> Self {
        let exact = rules.iter().position(|l| *l == rule.line());
        Held {
            exact,
            same: exact.or_else(|| same_rule(rules, rule)),
        }
    }
}

/// The change for a rule line, with the listing's line as evidence.
fn rule_change(
    t: &RuleTask,
    rules: &[String],
    found: Option<usize>,
    after: Option<String>,
) -> Change {
    let subject = format!(
        "ufw rule: {}",
        &t.rule.line_without_comment()["ufw ".len()..]
    );
    let evidence = match found {
        Some(i) => format!("ufw show added: {}", rules[i]),
        None => format!("ufw show added: no such line among {} rules", rules.len()),
    };
    Change::new(subject, found.map(|i| rules[i].clone()), after).with_evidence(evidence)
}

fn plan_rule(t: &RuleTask, now: &mut UfwState, plan: &mut Plan) {
    let held = Held::find(&now.rules, &t.rule);
    if t.delete {
        plan_delete(t, &held, now, plan);
        return;
    }
    if held.exact.is_some() {
        return;
    }
    let want = t.rule.line();
    plan.changes
        .push(rule_change(t, &now.rules, held.same, Some(want.clone())));
    let insert = t.insert.map(|n| format!("insert {n} ")).unwrap_or_default();
    plan.steps
        .push(step(format!("ufw {insert}{}", t.rule.args(true))));
    match (held.same, t.insert) {
        // ufw replaces the comment of a rule added again, in its place.
        (Some(i), _) => now.rules[i] = want,
        (None, Some(n)) => now
            .rules
            .insert((n as usize - 1).min(now.rules.len()), want),
        (None, None) => now.rules.push(want),
    }
}

fn plan_delete(t: &RuleTask, held: &Held, now: &mut UfwState, plan: &mut Plan) {
    // ufw deletes a rule by its comment only when one is given.
    let found = held
        .exact
        .or(held.same.filter(|_| t.rule.comment.is_none()));
    let Some(i) = found else {
        return;
    };
    plan.changes.push(rule_change(t, &now.rules, found, None));
    plan.steps
        .push(step(format!("ufw delete {}", t.rule.args(false))));
    now.rules.remove(i);
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    rt.check::<UfwFact>(&(), UfwState::missing());
    for found in [Found::Active, Found::Inactive] {
        let state = UfwState {
            found,
            policies: [
                ("incoming", "deny"),
                ("outgoing", "allow"),
                ("routed", "reject"),
            ]
            .map(|(d, p)| (d.to_string(), p.to_string()))
            .into(),
            logging: Some("low".into()),
            rules: vec![
                "ufw allow 22/tcp".into(),
                "ufw allow from 10.0.0.0/8 to any port 80 proto tcp comment 'web $(x)'".into(),
            ],
        };
        rt.check::<UfwFact>(&(), state);
    }
}
