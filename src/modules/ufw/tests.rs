use super::*;
use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of, settled};
use serde_json::{json, Value};

/// `ufw show added` of a real ufw 0.36 after the commands of `CANONICAL`
/// were run on it (inactive, so in its files only), as the probe prints it.
const RECORDED: &str = "inactive\n\
    policy incoming DROP\npolicy outgoing ACCEPT\npolicy routed DROP\nlogging low\n\
    rule ufw allow 22/tcp\n\
    rule ufw allow from 10.0.0.0/8 to any port 80 proto tcp comment 'web $(x)'\n\
    rule ufw deny out on lo to 192.168.1.5 port 53 proto udp\n\
    rule ufw limit 2222\n\
    rule ufw reject in on lo from any port 123 to 10.1.0.0/16\n\
    rule ufw allow out 25\n\
    rule ufw allow from 10.2.0.0/16\n\
    rule ufw allow in on lo\n\
    rule ufw allow 80,443/tcp\n\
    rule ufw allow 6000:6007/tcp\n\
    rule ufw allow OpenSSH\n\
    rule ufw allow from 1.2.3.4 port 1234\n\
    rule ufw deny to any proto udp\n\
    rule ufw allow in on lo to any port 22\n\
    rule ufw allow out on lo\n\
    rule ufw allow log 8080/tcp\n\
    rule ufw allow 'WWW Full'\n\
    rule ufw allow from 10.0.0.0/8 to any app OpenSSH\n\
    rule ufw allow in on lo from 10.0.0.0/8 to any app 'WWW Full'\n\
    rule ufw allow from 10.0.0.0/8 proto tcp\n\
    rule ufw deny from 10.0.0.1 proto esp\n\
    rule ufw allow to 10.0.0.1 port 22 proto tcp\n\
    rule ufw allow 5000/tcp\n\
    rule ufw allow to any\n\
    rule ufw allow from 2001:db8::/32 to any port 443 proto tcp\n\
    rule ufw allow from 2001:db8::1\n\
    rule ufw allow from 2001:db8::1/64 to any port 9\n";

/// Task parameters, each with the line ufw printed for the same rule
/// (given to ufw in other words, as its comments in `RECORDED` show).
fn canonical() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"rule": "allow", "to_port": "22", "proto": "tcp"}),
            "ufw allow 22/tcp",
        ),
        (
            json!({"rule": "allow", "from_ip": "10.0.0.0/8", "to_port": "80", "proto": "tcp", "comment": "web $(x)"}),
            "ufw allow from 10.0.0.0/8 to any port 80 proto tcp comment 'web $(x)'",
        ),
        (
            json!({"rule": "deny", "direction": "out", "interface": "lo", "to_ip": "192.168.1.5/32", "to_port": "53", "proto": "udp"}),
            "ufw deny out on lo to 192.168.1.5 port 53 proto udp",
        ),
        (
            json!({"rule": "limit", "to_port": "2222"}),
            "ufw limit 2222",
        ),
        (
            json!({"rule": "reject", "direction": "in", "interface": "lo", "from_port": "123", "to_ip": "10.1.0.0/255.255.0.0"}),
            "ufw reject in on lo from any port 123 to 10.1.0.0/16",
        ),
        (
            json!({"rule": "allow", "direction": "out", "to_port": "25"}),
            "ufw allow out 25",
        ),
        (
            json!({"rule": "allow", "from_ip": "10.2.0.0/16"}),
            "ufw allow from 10.2.0.0/16",
        ),
        (
            json!({"rule": "allow", "direction": "in", "interface": "lo"}),
            "ufw allow in on lo",
        ),
        (
            json!({"rule": "allow", "to_port": "80,443", "proto": "tcp"}),
            "ufw allow 80,443/tcp",
        ),
        (
            json!({"rule": "allow", "to_port": "6000:6007", "proto": "tcp"}),
            "ufw allow 6000:6007/tcp",
        ),
        (
            json!({"rule": "allow", "name": "OpenSSH"}),
            "ufw allow OpenSSH",
        ),
        (
            json!({"rule": "allow", "proto": "any", "from_ip": "1.2.3.4", "from_port": "1234"}),
            "ufw allow from 1.2.3.4 port 1234",
        ),
        (
            json!({"rule": "deny", "proto": "udp"}),
            "ufw deny to any proto udp",
        ),
        (
            json!({"rule": "allow", "interface": "lo", "to_port": "22"}),
            "ufw allow in on lo to any port 22",
        ),
        (
            json!({"rule": "allow", "direction": "out", "interface": "lo"}),
            "ufw allow out on lo",
        ),
        (
            json!({"rule": "allow", "log": true, "to_port": "8080", "proto": "tcp"}),
            "ufw allow log 8080/tcp",
        ),
        (
            json!({"rule": "allow", "name": "WWW Full"}),
            "ufw allow 'WWW Full'",
        ),
        (
            json!({"rule": "allow", "from_ip": "10.0.0.0/8", "name": "OpenSSH"}),
            "ufw allow from 10.0.0.0/8 to any app OpenSSH",
        ),
        (
            json!({"rule": "allow", "interface": "lo", "from_ip": "10.0.0.0/8", "name": "WWW Full"}),
            "ufw allow in on lo from 10.0.0.0/8 to any app 'WWW Full'",
        ),
        (
            json!({"rule": "allow", "from_ip": "10.9.9.9/8", "proto": "tcp"}),
            "ufw allow from 10.0.0.0/8 proto tcp",
        ),
        (
            json!({"rule": "deny", "proto": "esp", "from_ip": "10.0.0.1"}),
            "ufw deny from 10.0.0.1 proto esp",
        ),
        (
            json!({"rule": "allow", "to_ip": "10.0.0.1", "proto": "tcp", "to_port": "22"}),
            "ufw allow to 10.0.0.1 port 22 proto tcp",
        ),
        (
            json!({"rule": "allow", "from_ip": "any", "to_ip": "any", "to_port": "5000", "proto": "tcp"}),
            "ufw allow 5000/tcp",
        ),
        (
            json!({"rule": "allow", "direction": "in", "from_ip": "any", "to_ip": "any"}),
            "ufw allow to any",
        ),
        (
            json!({"rule": "allow", "proto": "tcp", "from_ip": "2001:db8::/32", "to_port": "443"}),
            "ufw allow from 2001:db8::/32 to any port 443 proto tcp",
        ),
        (
            json!({"rule": "allow", "from_ip": "2001:DB8:0::1/128"}),
            "ufw allow from 2001:db8::1",
        ),
        (
            json!({"rule": "allow", "from_ip": "2001:db8::1/64", "to_port": "9"}),
            "ufw allow from 2001:db8::1/64 to any port 9",
        ),
    ]
}

fn plan_on(params: Value, answer: &str) -> Plan {
    let m = build_test(&UFW, params).unwrap();
    let facts = facts_of(&[(&UfwFact::key(&()), answer)]);
    let plan = m.plan(&facts).unwrap();
    assert_sh_syntax(&*m, &plan);
    if !plan.steps.is_empty() && !m.is_command() {
        let again = m.plan(&settled(&facts, &plan)).unwrap();
        assert!(
            again.changes.is_empty() && again.steps.is_empty(),
            "{again:?}"
        );
    }
    plan
}

fn changes(plan: &Plan) -> Vec<String> {
    plan.changes.iter().map(ToString::to_string).collect()
}

/// The answer with one more rule line.
fn with_rule(line: &str) -> String {
    format!("{RECORDED}rule {line}\n")
}

#[test]
fn every_rule_ufw_recorded_is_found_as_it_printed_it() {
    for (params, line) in canonical() {
        let plan = plan_on(params.clone(), RECORDED);
        assert_eq!(plan, Plan::noop(), "{params}");
        let empty = plan_on(params.clone(), "inactive\n");
        assert_eq!(empty.changes[0].after.as_deref(), Some(line), "{params}");
    }
}

#[test]
fn a_missing_rule_is_added_with_the_line_expected_and_what_was_found() {
    let plan = plan_on(
        json!({"rule": "allow", "to_port": "443", "proto": "tcp"}),
        RECORDED,
    );
    assert_eq!(
        changes(&plan),
        ["ufw rule: allow 443/tcp: (none) → ufw allow 443/tcp"]
    );
    assert_eq!(
        plan.changes[0].evidence.as_deref(),
        Some("ufw show added: no such line among 27 rules")
    );
    assert!(
        plan.steps[0].starts_with("ufw allow 443/tcp || "),
        "{plan:?}"
    );
    let inserted = plan_on(
        json!({"rule": "deny", "from_ip": "10.9.0.0/16", "insert": 1}),
        RECORDED,
    );
    assert!(inserted.steps[0].starts_with("ufw insert 1 deny from 10.9.0.0/16 || "));
}

#[test]
fn another_comment_is_a_change_of_that_line() {
    let plan = plan_on(
        json!({"rule": "allow", "to_port": "22", "proto": "tcp", "comment": "ssh"}),
        RECORDED,
    );
    assert_eq!(
        changes(&plan),
        ["ufw rule: allow 22/tcp: ufw allow 22/tcp → ufw allow 22/tcp comment 'ssh'"]
    );
    assert_eq!(
        plan.changes[0].evidence.as_deref(),
        Some("ufw show added: ufw allow 22/tcp")
    );
    // ufw replaces a rule's comment when the rule is added again.
    assert!(plan.steps[0].starts_with("ufw allow 22/tcp comment ssh || "));
}

#[test]
fn delete_removes_a_present_rule_and_leaves_an_absent_one() {
    let params = json!({"rule": "allow", "to_port": "80", "proto": "tcp", "from_ip": "10.0.0.0/8", "delete": true});
    let plan = plan_on(params, RECORDED);
    assert_eq!(
        changes(&plan),
        ["ufw rule: allow from 10.0.0.0/8 to any port 80 proto tcp: ufw allow from 10.0.0.0/8 to any port 80 proto tcp comment 'web $(x)' → (none)"]
    );
    assert!(
        plan.steps[0].starts_with("ufw delete allow from 10.0.0.0/8 to any port 80 proto tcp || ")
    );
    let absent = json!({"rule": "allow", "to_port": "443", "proto": "tcp", "delete": true});
    assert_eq!(plan_on(absent, RECORDED), Plan::noop());
    // With a comment, ufw deletes only the rule with that comment.
    let other =
        json!({"rule": "allow", "to_port": "22", "proto": "tcp", "comment": "x", "delete": true});
    assert_eq!(plan_on(other, RECORDED), Plan::noop());
}

#[test]
fn hostile_values_are_quoted_or_refused() {
    let comment = "a; reboot $(id) `id` \"x\" \\ *";
    let plan = plan_on(
        json!({"rule": "allow", "to_port": "22", "proto": "tcp", "comment": comment}),
        "active\n",
    );
    assert_eq!(
        plan.steps[0],
        "ufw allow 22/tcp comment 'a; reboot $(id) `id` \"x\" \\ *' || { echo 'ufw allow 22/tcp comment '\\''a; reboot $(id) `id` \"x\" \\ *'\\'' failed' >&2; exit 1; }"
    );
    let line = format!("ufw allow 22/tcp comment '{comment}'");
    assert_eq!(
        plan_on(
            json!({"rule": "allow", "to_port": "22", "proto": "tcp", "comment": comment}),
            &with_rule(&line)
        ),
        Plan::noop()
    );
    for (key, value, says) in [
        ("comment", "it's", "single quote"),
        ("comment", "two\nlines", "control character"),
        ("name", "a'b", "single quote"),
        ("interface", "eth0;reboot", "no interface name"),
        ("from_ip", "10.0.0.1; reboot", "not an IPv4 or IPv6"),
        ("to_ip", "10.0.0.0/33", "not an IPv4 or IPv6"),
        ("to_port", "22;id", "must be a number"),
        ("to_port", "ssh", "must be a number"),
    ] {
        let err = build_error(&UFW, json!({"rule": "allow", key: value}));
        assert!(err.contains(says), "{key}={value:?}: {err}");
    }
}

#[test]
fn what_ufw_would_refuse_or_nodeprov_does_not_do_is_refused_at_load() {
    for (params, says) in [
        (
            json!({"rule": "allow", "to_port": "80,443"}),
            "only with proto tcp or udp",
        ),
        (
            json!({"rule": "allow", "direction": "incoming"}),
            "direction must be in or out",
        ),
        (
            json!({"default": "deny", "direction": "in"}),
            "incoming, outgoing or routed",
        ),
        (json!({"to_port": "22"}), "belongs to a rule"),
        (
            json!({"rule": "allow", "from_ip": "10.0.0.0/8", "to_ip": "::1"}),
            "must both be IPv4 or both IPv6",
        ),
        (
            json!({"rule": "allow", "name": "OpenSSH", "proto": "tcp"}),
            "brings its own ports",
        ),
        (
            json!({"rule": "allow", "to_port": "22", "delete": true, "insert": 1}),
            "do not go together",
        ),
        (
            json!({"rule": "allow", "route": true}),
            "route is not supported",
        ),
        (
            json!({"rule": "allow", "interface_in": "eth0"}),
            "interface_in is not supported",
        ),
        (
            json!({"rule": "allow", "insert": 2, "insert_relative_to": "last-ipv4"}),
            "insert_relative_to is not supported",
        ),
        (
            json!({"state": "reset", "rule": "allow"}),
            "task of its own",
        ),
        (json!({}), "one of state, default, rule or logging"),
    ] {
        let err = build_error(&UFW, params.clone());
        assert!(err.contains(says), "{params}: {err}");
    }
}

#[test]
fn default_policies_and_logging_are_read_from_ufws_files() {
    assert_eq!(plan_on(json!({"default": "deny"}), RECORDED), Plan::noop());
    assert_eq!(plan_on(json!({"logging": "on"}), RECORDED), Plan::noop());
    let plan = plan_on(
        json!({"default": "reject", "direction": "outgoing", "logging": "off"}),
        RECORDED,
    );
    assert_eq!(
        changes(&plan),
        [
            "ufw default outgoing: allow → reject",
            "ufw logging: low → off"
        ]
    );
    assert_eq!(
        plan.changes[0].evidence.as_deref(),
        Some("/etc/default/ufw DEFAULT_OUTPUT_POLICY")
    );
    assert!(plan.steps[0].starts_with("ufw default reject outgoing || "));
    assert!(plan.steps[1].starts_with("ufw logging off || "));
    let off = RECORDED.replace("logging low", "logging off");
    assert_eq!(
        changes(&plan_on(json!({"logging": "on"}), &off)),
        ["ufw logging: off → low"]
    );
}

#[test]
fn state_and_a_rule_go_in_ansibles_order() {
    let plan = plan_on(
        json!({"state": "enabled", "rule": "limit", "to_port": "22", "proto": "tcp"}),
        RECORDED,
    );
    assert_eq!(
        changes(&plan),
        [
            "ufw: inactive → active",
            "ufw rule: limit 22/tcp: (none) → ufw limit 22/tcp"
        ]
    );
    assert!(plan.steps[0].starts_with("ufw --force enable ||"));
    assert_eq!(
        plan_on(json!({"state": "disabled"}), RECORDED),
        Plan::noop()
    );
    let m = build_test(&UFW, json!({"state": "reloaded"})).unwrap();
    assert!(m.is_command());
    let reloaded = plan_on(json!({"state": "reloaded"}), RECORDED);
    assert!(reloaded.steps[0].starts_with("ufw reload ||"));
}

#[test]
fn a_host_without_ufw_fails_saying_so() {
    let m = build_test(&UFW, json!({"state": "enabled"})).unwrap();
    let err = m.plan(&facts_of(&[(&UfwFact::key(&()), "missing\n")]));
    assert!(matches!(err, Err(ModuleError::Absent(m)) if m.contains("not installed")));
}

/// The probe's shell over files like ufw's, with a stand-in `ufw`.
#[test]
fn the_probe_reads_ufws_files_as_the_fact_parses_them() {
    let dir = tempfile::tempdir().unwrap();
    let (default, conf) = (dir.path().join("default"), dir.path().join("ufw.conf"));
    std::fs::write(&default, "IPV6=yes\nDEFAULT_INPUT_POLICY=\"DROP\"\nDEFAULT_OUTPUT_POLICY=\"ACCEPT\"\nDEFAULT_FORWARD_POLICY=\"REJECT\"\n").unwrap();
    std::fs::write(&conf, "ENABLED=no\nLOGLEVEL=medium\n").unwrap();
    let script = UfwFact::script(&())
        .replace("/etc/default/ufw", default.to_str().unwrap())
        .replace("/etc/ufw/ufw.conf", conf.to_str().unwrap());
    let stand_in = "ufw() { case $1 in status) echo 'Status: inactive';; \
        *) printf \"Added user rules (see 'ufw status' for running firewall):\\nufw allow 22/tcp\\n\";; esac; }\n";
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("{stand_in}{script}")])
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        answer,
        "inactive\npolicy incoming DROP\npolicy outgoing ACCEPT\npolicy routed REJECT\nlogging medium\nrule ufw allow 22/tcp\n"
    );
    let state =
        UfwFact::parse(&(), &crate::remote::probe::ProbeResult::ok(answer.as_ref())).unwrap();
    assert_eq!(state.policies["routed"], "reject");
}
