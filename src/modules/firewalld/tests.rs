use super::*;
use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of, settled};
use serde_json::json;

/// What the probe prints for a running firewalld whose public zone has ssh
/// at runtime and ssh plus http in the permanent configuration.
const RUNNING: &str = "daemon running\ndefault public\nzone public\n\
    layer runtime\nservices dhcpv6-client ssh\nports 8080/tcp\nsources \ninterfaces eth0\nmasquerade no\n\
    layer permanent\nservices dhcpv6-client http ssh\nports \nsources \ninterfaces \nmasquerade no\n";

const OFFLINE: &str = "offline-cmd\ndaemon offline\ndefault public\nzone trusted\n\
    layer permanent\nservices \nports 6000-6010/udp\nsources \ninterfaces \nmasquerade yes\n";

fn plan_on(
    params: serde_json::Value,
    answer: &str,
) -> (Box<dyn Module>, Result<Plan, ModuleError>) {
    let m = build_test(&FIREWALLD, params).unwrap();
    let key = m.probes()[0].key.clone();
    let facts = facts_of(&[(&key, answer)]);
    let plan = m.plan(&facts);
    if let Ok(p) = &plan {
        assert_sh_syntax(&*m, p);
        if !p.steps.is_empty() {
            let again = m.plan(&settled(&facts, p)).unwrap();
            assert!(
                again.changes.is_empty() && again.steps.is_empty(),
                "{again:?}"
            );
        }
    }
    (m, plan)
}

fn changes(plan: &Plan) -> Vec<String> {
    plan.changes.iter().map(|c| c.to_string()).collect()
}

#[test]
fn an_enabled_service_is_a_noop() {
    let (m, plan) = plan_on(json!({"service": "ssh", "state": "enabled"}), RUNNING);
    assert_eq!(plan.unwrap(), Plan::noop());
    assert_eq!(m.probes()[0].key, "firewalld:default");
    let both = json!({"service": "ssh", "state": "enabled", "permanent": true, "immediate": true});
    assert_eq!(plan_on(both, RUNNING).1.unwrap(), Plan::noop());
}

#[test]
fn only_the_layer_that_drifts_is_reported_and_changed() {
    let params =
        json!({"service": "http", "state": "enabled", "permanent": true, "immediate": true});
    let plan = plan_on(params, RUNNING).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone public service http (runtime): disabled → enabled"]
    );
    assert_eq!(
        plan.changes[0].evidence.as_deref(),
        Some("firewall-cmd --zone=public --list-all")
    );
    assert_eq!(
        plan.steps,
        ["firewall-cmd --zone=public --add-service=http >/dev/null || { echo 'firewall-cmd --zone=public --add-service=http failed' >&2; exit 1; }"]
    );
}

#[test]
fn permanent_without_immediate_leaves_the_running_firewall_alone() {
    let params = json!({"port": "8080/tcp", "state": "enabled", "permanent": true});
    let plan = plan_on(params, RUNNING).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone public port 8080/tcp (permanent): disabled → enabled"]
    );
    assert!(
        plan.steps[0].starts_with("firewall-cmd --permanent --zone=public --add-port=8080/tcp ")
    );
    let runtime = json!({"port": "8080/tcp", "state": "disabled"});
    let plan = plan_on(runtime, RUNNING).1.unwrap();
    assert!(plan.steps[0].starts_with("firewall-cmd --zone=public --remove-port=8080/tcp "));
}

#[test]
fn interfaces_and_sources_move_from_other_zones() {
    let params = json!({"interface": "ib0", "zone": "trusted", "state": "enabled", "offline": true,
        "permanent": true});
    let plan = plan_on(params, OFFLINE).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone trusted interface ib0 (permanent): disabled → enabled"]
    );
    assert!(
        plan.steps[0].starts_with("firewall-offline-cmd --zone=trusted --change-interface=ib0 ")
    );
}

#[test]
fn offline_edits_only_the_permanent_configuration() {
    let params =
        json!({"masquerade": true, "zone": "trusted", "state": "disabled", "offline": true});
    let plan = plan_on(params, OFFLINE).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone trusted masquerade (permanent): enabled → disabled"]
    );
    assert!(plan.steps[0].starts_with("firewall-offline-cmd --zone=trusted --remove-masquerade "));
    assert!(plan.notes[0].contains("only its permanent configuration"));
    let refused = json!({"port": "6000-6010/udp", "zone": "trusted", "state": "enabled"});
    let err = plan_on(refused, OFFLINE).1.unwrap_err().to_string();
    assert!(err.contains("offline: true"), "{err}");
    let service = json!({"service": "ssh", "zone": "trusted", "state": "disabled", "offline": true,
        "permanent": true});
    let plan = plan_on(service, &OFFLINE.replace("services ", "services ssh"))
        .1
        .unwrap();
    assert!(plan.steps[0]
        .starts_with("firewall-offline-cmd --zone=trusted --remove-service-from-zone=ssh "));
    let missing = json!({"service": "ssh", "state": "enabled"});
    let err = plan_on(missing, "daemon missing\n")
        .1
        .unwrap_err()
        .to_string();
    assert!(err.contains("not installed"), "{err}");
}

#[test]
fn zones_are_added_and_removed_in_the_permanent_configuration() {
    let params = json!({"zone": "gpu", "state": "present", "permanent": true});
    let answer = RUNNING.replace("zone public", "zone gpu").replace(
        "layer permanent\nservices dhcpv6-client http ssh\nports \nsources \ninterfaces \nmasquerade no\n",
        "layer permanent\nabsent\n",
    );
    let plan = plan_on(params, &answer).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone gpu (permanent): absent → present"]
    );
    assert!(plan.steps[0].starts_with("firewall-cmd --permanent --new-zone=gpu "));
    let item = json!({"zone": "gpu", "service": "ssh", "state": "enabled", "permanent": true});
    let err = plan_on(item, &answer).1.unwrap_err().to_string();
    assert!(
        err.contains("zone gpu does not exist in the permanent configuration"),
        "{err}"
    );
}

#[test]
fn hostile_values_are_quoted() {
    let params = json!({"source": "10.0.0.0/8';reboot;'", "zone": "$(id)", "state": "enabled",
        "permanent": true, "immediate": true});
    let answer = RUNNING.replace("zone public", "zone $(id)");
    let plan = plan_on(params, &answer).1.unwrap();
    assert_eq!(plan.steps.len(), 2);
    assert!(plan.steps[0].contains("--zone='$(id)' --change-source='10.0.0.0/8'\\'';reboot;'\\'''"));
    let m = build_test(
        &FIREWALLD,
        json!({"service": "ssh", "zone": "$(id)", "state": "enabled"}),
    )
    .unwrap();
    assert!(m.probes()[0].script.contains("z='$(id)'"));
}

#[test]
fn what_is_not_implemented_is_refused() {
    let err = |p| build_error(&FIREWALLD, p);
    let refused = [
        "rich_rule",
        "icmp_block",
        "icmp_block_inversion",
        "port_forward",
        "protocol",
        "forward",
        "target",
        "timeout",
    ];
    for key in refused {
        let e = err(json!({key: "x", "state": "enabled"}));
        assert!(e.contains("not supported by nodeprov"), "{e}");
    }
    assert!(
        err(json!({"service": "ssh", "port": "22/tcp", "state": "enabled"}))
            .contains("mutually exclusive")
    );
    assert!(err(json!({"port": "22", "state": "enabled"})).contains("PORT/PROTOCOL"));
    assert!(err(json!({"port": "70000/tcp", "state": "enabled"})).contains("PORT/PROTOCOL"));
    assert!(err(json!({"service": "ssh", "state": "present"})).contains("zone alone"));
    assert!(err(json!({"zone": "gpu", "state": "present"})).contains("permanent: true"));
    assert!(err(json!({"service": "a b", "state": "enabled"})).contains("one word"));
}

/// `firewall-cmd --zone=public --list-all` of firewalld 1.3 with a port
/// forward and a rich rule, whose lines must not be read as lists.
const LIST_ALL: &str = "public (active)
  target: default
  icmp-block-inversion: no
  interfaces: eth0
  sources: 
  services: dhcpv6-client ssh
  ports: 8080/tcp 6000-6010/udp
  protocols: 
  forward: yes
  masquerade: yes
  forward-ports: 
\tport=80:proto=tcp:toport=8080:toaddr=
  source-ports: 53/udp
  icmp-blocks: 
  rich rules: 
\trule family=\"ipv4\" source address=\"10.0.0.0/8\" accept";

/// A `firewall-cmd` of a running daemon whose public zone lists LIST_ALL at
/// runtime (from the environment) and less in the permanent configuration.
const FAKE_FIREWALL_CMD: &str = r#"#!/bin/sh
case "$*" in
  --state) echo running ;;
  --get-default-zone) echo public ;;
  *--get-zones) echo 'block public trusted' ;;
  '--zone=public --list-all') printf '%s\n' "$LIST_ALL" ;;
  '--permanent --zone=public --list-all')
    printf 'public\n  services: ssh\n  ports: \n  sources: 10.0.0.0/8\n  interfaces: \n  masquerade: no\n' ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
"#;

#[test]
fn the_probe_keeps_the_lists_of_list_all_and_nothing_else() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("firewall-cmd");
    std::fs::write(&fake, FAKE_FIREWALL_CMD).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = build_test(&FIREWALLD, json!({"service": "ssh", "state": "enabled"})).unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", &m.probes()[0].script])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .env("LIST_ALL", LIST_ALL)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "daemon running\ndefault public\nzone public\n\
         layer runtime\ninterfaces eth0\nsources \nservices dhcpv6-client ssh\n\
         ports 8080/tcp 6000-6010/udp\nmasquerade yes\n\
         layer permanent\nservices ssh\nports \nsources 10.0.0.0/8\ninterfaces \nmasquerade no\n"
    );
}

#[test]
fn a_listing_without_one_of_its_lists_is_an_error_not_an_empty_list() {
    let short = RUNNING.replacen("masquerade no\n", "", 1);
    let params = json!({"service": "ssh", "state": "enabled"});
    let err = plan_on(params, &short).1.unwrap_err().to_string();
    assert!(err.contains("without all of its lists"), "{err}");
}

/// What the probe prints when the daemon failed to load the host's
/// configuration and runs its failsafe one (`firewall-cmd --state` exits 251).
const FAILED: &str = "offline-cmd\ndaemon failed\ndefault public\nzone public\n\
    layer permanent\nservices ssh\nports \nsources \ninterfaces \nmasquerade no\n";

#[test]
fn a_failed_daemon_is_named_and_refused_unless_offline() {
    let params = json!({"service": "http", "state": "enabled", "permanent": true});
    let err = plan_on(params.clone(), FAILED).1.unwrap_err().to_string();
    assert!(
        err.contains("installed but its daemon is in the FAILED state")
            && err.contains("offline: true"),
        "{err}"
    );
    let mut offline = params;
    offline["offline"] = json!(true);
    offline["immediate"] = json!(true);
    let plan = plan_on(offline, FAILED).1.unwrap();
    assert_eq!(
        changes(&plan),
        ["firewalld zone public service http (permanent): disabled → enabled"]
    );
    assert!(plan.steps[0].starts_with("firewall-offline-cmd --zone=public --add-service=http"));
    assert!(
        plan.notes[0].contains("FAILED state: only its permanent"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn a_failed_configuration_read_still_names_the_failed_state() {
    let m = build_test(&FIREWALLD, json!({"service": "ssh", "state": "enabled"})).unwrap();
    let key = m.probes()[0].key.clone();
    let mut facts = facts_of(&[]);
    let read = crate::remote::probe::ProbeResult {
        rc: 1,
        stdout: "offline-cmd\ndaemon failed\n".into(),
        stderr: "bad zone".into(),
    };
    facts.insert(key, read);
    let err = m.plan(&facts).unwrap_err().to_string();
    assert!(err.contains("FAILED state"), "{err}");
}

#[test]
fn each_daemon_state_without_firewall_offline_cmd_says_which() {
    for (answer, says) in [
        ("daemon missing\n", "not installed"),
        ("daemon offline\n", "offline: true edits"),
        ("daemon failed\n", "FAILED state"),
    ] {
        let params = json!({"service": "ssh", "state": "enabled"});
        let err = plan_on(params, answer).1.unwrap_err().to_string();
        assert!(err.contains(says), "{answer}: {err}");
        let offline = json!({"service": "ssh", "state": "enabled", "offline": true});
        let err = plan_on(offline, answer).1.unwrap_err().to_string();
        let want = if answer.contains("missing") {
            "not installed"
        } else {
            "firewall-offline-cmd, which"
        };
        assert!(err.contains(want), "{answer}: {err}");
    }
}

/// The probe's first lines with `firewall-cmd --state` exiting `state`
/// (`None`: no firewall-cmd) and firewall-offline-cmd installed or not.
fn probe_head(state: Option<u8>, offline_cmd: bool) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let mut fakes = vec![(
        "firewall-offline-cmd",
        "#!/bin/sh\ncase \"$*\" in --get-default-zone) echo public ;; --get-zones) echo public ;; \
         *) printf 'public\\n  services: ssh\\n' ;; esac\n"
            .to_string(),
    )];
    if !offline_cmd {
        fakes.clear();
    }
    if let Some(rc) = state {
        fakes.push((
            "firewall-cmd",
            format!("#!/bin/sh\n[ \"$*\" = --state ] && exit {rc}\nexit 9\n"),
        ));
    }
    for (name, text) in fakes {
        let path = bin.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let m = build_test(&FIREWALLD, json!({"service": "ssh", "state": "enabled"})).unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", &m.probes()[0].script])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().take(3).collect::<Vec<_>>().join("|")
}

#[test]
fn the_probe_tells_the_four_states_apart_by_firewall_cmd_state_exit_code() {
    // 251 is RUNNING_BUT_FAILED and 252 NOT_RUNNING in firewall-cmd(1).
    assert_eq!(
        probe_head(Some(251), true),
        "offline-cmd|daemon failed|default public"
    );
    assert_eq!(
        probe_head(Some(252), true),
        "offline-cmd|daemon offline|default public"
    );
    assert_eq!(
        probe_head(None, true),
        "offline-cmd|daemon offline|default public"
    );
    assert_eq!(probe_head(Some(251), false), "daemon failed");
    assert_eq!(probe_head(Some(252), false), "daemon offline");
    assert_eq!(probe_head(None, false), "daemon missing");
}
