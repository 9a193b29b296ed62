use serde_json::json;

use super::*;
use crate::base::diag::Span;
use crate::modules::kit::files::{FileFact, FileState};
use crate::modules::kit::plan::Effect;
use crate::modules::params::{BuildCtx, Sources};
use crate::template::Templates;

const OURS: &str = "/etc/sysctl.d/90-gpu-node.conf";

fn parse_params(v: Value) -> Result<Sysctl, ParamError> {
    let templates = Templates::new();
    let sources = Sources::default();
    let ctx = BuildCtx::new(&templates, &Value::Null, &[], &sources, None);
    let entries = v
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), Span::synthetic("play.yml")))
        .collect();
    from_params(&Params::new(
        "sysctl",
        Span::synthetic("play.yml"),
        entries,
        &ctx,
    ))
}

fn map_form(settings: Value) -> Sysctl {
    parse_params(json!({"settings": settings, "file": OURS})).unwrap()
}

fn owned(lines: &str) -> String {
    format!("{HEADER}{lines}")
}

fn file(path: &str, content: &str) -> ConfFile {
    ConfFile::new(path, None, Some(content))
}

fn sysctl_conf_link(content: &str) -> Vec<ConfFile> {
    vec![
        ConfFile::new(
            "/etc/sysctl.d/99-sysctl.conf",
            Some("../sysctl.conf"),
            Some(content),
        ),
        file(config::SYSCTL_CONF, content),
    ]
}

/// Facts for a host with these sysctl files, tuned files and live values;
/// a key missing from `live` is one the kernel lacks.
fn facts(m: &Sysctl, conf: &[ConfFile], tuned: &[ConfFile], live: &[(&str, &str)]) -> Facts {
    let mut f = Facts::default();
    let ours = conf.iter().find(|c| c.path == m.file && c.link.is_none());
    f.insert(
        FileFact::key(&m.file),
        FileFact::render(
            &ours.map(|c| FileState::written(c.content.as_deref().unwrap(), 0o644, "root", "root")),
        ),
    );
    f.insert(SysctlFiles::key(""), SysctlFiles::render(&conf.to_vec()));
    f.insert(TunedProfile::key(""), SysctlFiles::render(&tuned.to_vec()));
    let values = m
        .settings
        .iter()
        .map(|(k, _)| {
            let value = live.iter().find(|(l, _)| l == k);
            let v = value.map_or(Live::Missing, |(_, v)| Live::Value(v.to_string()));
            (k.clone(), v)
        })
        .collect();
    f.insert(LiveValues::key(&m.live_all()), LiveValues::render(&values));
    f
}

fn tuned_profile(profile: &str, sysctl: &str, reapply: &str) -> Vec<ConfFile> {
    vec![
        file("/etc/tuned/active_profile", &format!("{profile}\n")),
        file(
            "/etc/tuned/tuned-main.conf",
            &format!("reapply_sysctl = {reapply}\n"),
        ),
        file(
            &format!("/usr/lib/tuned/{profile}/tuned.conf"),
            &format!("[main]\nsummary=x\n\n[sysctl]\n{sysctl}"),
        ),
    ]
}

fn subjects(plan: &Plan) -> Vec<&str> {
    plan.changes.iter().map(|c| c.subject.as_str()).collect()
}

fn predicted(plan: &Plan, key: &str) -> ProbeResult {
    plan.effects
        .iter()
        .find_map(|e| match e {
            Effect::Predict(k, r) if k == key => Some(r.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no prediction for {key}: {:?}", plan.effects))
}

#[test]
fn keys_and_values_normalize() {
    assert_eq!(normalize_key("vm/swappiness"), "vm.swappiness");
    assert_eq!(normalize_key("-vm.swappiness"), "vm.swappiness");
    assert_eq!(
        normalize_key("net/ipv4/conf/eth0.100/rp_filter"),
        "net/ipv4/conf/eth0.100/rp_filter"
    );
    assert_eq!(
        normalize_key("net.ipv4.conf.eth0/100.rp_filter"),
        "net/ipv4/conf/eth0.100/rp_filter"
    );
    assert_eq!(
        proc_path("net.ipv4.conf.eth0/100.rp_filter"),
        "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"
    );
    assert_eq!(
        proc_path("net.ipv4.tcp_rmem"),
        "/proc/sys/net/ipv4/tcp_rmem"
    );
    assert!(same_value("4096\t87380  6291456", "4096 87380 6291456"));
}

#[test]
fn map_form_writes_the_whole_file_in_the_given_order() {
    let m = map_form(
        json!({"vm.swappiness": 10, "vm/overcommit_memory": 1, "net.ipv4.tcp_rmem": [4096, 87380, 6291456]}),
    );
    let plan = m
        .plan(&facts(
            &m,
            &[],
            &[],
            &[
                ("vm.swappiness", "10"),
                ("vm.overcommit_memory", "1"),
                ("net.ipv4.tcp_rmem", "4096\t87380\t6291456"),
            ],
        ))
        .unwrap();
    let st = FileFact::parse(OURS, &predicted(&plan, &FileFact::key(OURS)))
        .unwrap()
        .unwrap();
    assert_eq!(
        st.content.as_deref().unwrap(),
        "# Managed by nodeprov: this file is rewritten as a whole, edits here are lost.\n\
         vm.swappiness = 10\nvm.overcommit_memory = 1\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n"
    );
    // Live values already match: only the file and the boot values change.
    assert_eq!(
        subjects(&plan),
        [
            OURS,
            "vm.swappiness at boot",
            "vm.overcommit_memory at boot",
            "net.ipv4.tcp_rmem at boot"
        ]
    );
    assert_eq!(plan.steps.len(), 1);
}

#[test]
fn noop_reports_the_three_facts() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [file(OURS, &owned("vm.swappiness = 10\n"))];
    let tuned = tuned_profile("throughput-performance", "vm.swappiness=10\n", "1");
    let plan = m
        .plan(&facts(&m, &conf, &tuned, &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(plan.changes.is_empty() && plan.steps.is_empty() && plan.effects.is_empty());
    assert_eq!(
        plan.notes,
        ["vm.swappiness = 10 (live 10; at boot 10 from /etc/sysctl.d/90-gpu-node.conf:2; \
          tuned profile 'throughput-performance' sets 10, /etc and /run files win (reapply_sysctl=1))"]
    );
}

#[test]
fn change_writes_file_sets_live_and_predicts_everything() {
    let m = map_form(json!({"vm.swappiness": 10, "vm.overcommit_memory": 1}));
    let f = facts(
        &m,
        &[],
        &[],
        &[("vm.swappiness", "60"), ("vm.overcommit_memory", "1")],
    );
    let plan = m.plan(&f).unwrap();
    assert_eq!(
        subjects(&plan),
        [
            OURS,
            "vm.swappiness",
            "vm.swappiness at boot",
            "vm.overcommit_memory at boot"
        ]
    );
    assert_eq!(
        plan.changes[1].evidence.as_deref(),
        Some("live 60; at boot unset (kernel default); no tuned profile active")
    );
    assert_eq!(plan.steps.len(), 2);
    assert!(plan.steps[0].contains("mv -f"));
    // Only the key that differs live is written live; nothing is reloaded.
    assert_eq!(plan.steps[1], "printf '%s\\n' 10 > /proc/sys/vm/swappiness");
    assert_eq!(
        predicted(&plan, "sysctl:vm.swappiness"),
        ProbeResult::ok("r\nvm/swappiness\x0010\n")
    );

    // A later task planning against the predictions sees a compliant host.
    let mut after = f.clone();
    for e in &plan.effects {
        if let Effect::Predict(k, r) = e {
            after.insert(k.clone(), r.clone());
        }
    }
    let again = m.plan(&after).unwrap();
    assert!(again.changes.is_empty(), "{:?}", again.changes);
    assert!(again.notes[0].contains("at boot 10 from /etc/sysctl.d/90-gpu-node.conf:2"));
}

#[test]
fn live_only_drift_is_fixed_live_only() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [file(OURS, &owned("vm.swappiness = 10\n"))];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "60")]))
        .unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness"]);
    assert_eq!(plan.changes[0].before.as_deref(), Some("60"));
    assert_eq!(plan.steps, ["printf '%s\\n' 10 > /proc/sys/vm/swappiness"]);
}

#[test]
fn boot_only_drift_rewrites_the_file_without_live_steps() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [file(OURS, &owned("vm.swappiness = 30\n"))];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), [OURS, "vm.swappiness at boot"]);
    assert_eq!(plan.changes[1].before.as_deref(), Some("30"));
    assert_eq!(
        plan.changes[1].evidence.as_deref(),
        Some("live 10; at boot 30 from /etc/sysctl.d/90-gpu-node.conf:2; no tuned profile active")
    );
    assert_eq!(plan.steps.len(), 1);
    let conf = SysctlFiles::parse("", &predicted(&plan, &SysctlFiles::key(""))).unwrap();
    assert_eq!(
        config::boot("vm.swappiness", &conf, None).unwrap().value,
        "10"
    );
}

#[test]
fn shadowed_by_sysctl_conf_link_stays_drift_and_suggests_a_later_name() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let mut conf = sysctl_conf_link("# admin\nvm.swappiness = 60\n");
    conf.push(file(OURS, &owned("vm.swappiness = 10\n")));
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness at boot"]);
    assert!(
        plan.steps.is_empty(),
        "no step can fix it: {:?}",
        plan.steps
    );
    let why = "/etc/sysctl.d/90-gpu-node.conf is shadowed: /etc/sysctl.conf:2 (via /etc/sysctl.d/99-sysctl.conf) \
               still sets 60 at boot; name the drop-in /etc/sysctl.d/99-zz-nodeprov.conf so that it sorts last";
    assert_eq!(plan.notes, [format!("vm.swappiness: {why}")]);
    assert!(plan.changes[0]
        .evidence
        .as_deref()
        .unwrap()
        .ends_with(&format!("after this change {why}")));
}

#[test]
fn etc_beats_run_for_one_basename_and_later_basenames_win() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [
        file(OURS, &owned("vm.swappiness = 10\n")),
        file("/run/sysctl.d/90-gpu-node.conf", "vm.swappiness = 1\n"),
        file("/usr/lib/sysctl.d/50-default.conf", "vm.swappiness = 60\n"),
    ];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(plan.changes.is_empty());
    assert!(
        plan.notes[0].contains("at boot 10 from /etc/sysctl.d/90-gpu-node.conf:2"),
        "{:?}",
        plan.notes
    );

    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [
        file(OURS, &owned("vm.swappiness = 10\n")),
        file("/run/sysctl.d/95-x.conf", "vm.swappiness = 1\n"),
    ];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(
        plan.notes[0].contains("/run/sysctl.d/95-x.conf:1 still sets 1"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn link_to_dev_null_masks_a_shipped_file() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [
        file("/usr/lib/sysctl.d/99-vendor.conf", "vm.swappiness = 60\n"),
        file(OURS, &owned("vm.swappiness = 10\n")),
    ];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness at boot"]);

    let mut masked = conf.to_vec();
    masked.push(ConfFile::new(
        "/etc/sysctl.d/99-vendor.conf",
        Some("/dev/null"),
        Some(""),
    ));
    let plan = m
        .plan(&facts(&m, &masked, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
}

#[test]
fn tuned_loses_to_etc_files_with_reapply_and_wins_without() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let conf = [file(OURS, &owned("vm.swappiness = 10\n"))];
    let tuned = tuned_profile("virtual-guest", "vm.swappiness = 30\n", "1");
    let plan = m
        .plan(&facts(&m, &conf, &tuned, &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(plan.changes.is_empty());
    assert!(plan.notes[0].ends_with(
        "tuned profile 'virtual-guest' sets 30, /etc and /run files win (reapply_sysctl=1))"
    ));

    let tuned = tuned_profile("virtual-guest", "vm.swappiness = 30\n", "0");
    let plan = m
        .plan(&facts(&m, &conf, &tuned, &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness at boot"]);
    assert_eq!(plan.changes[0].before.as_deref(), Some("30"));
    assert!(plan.notes[0]
        .contains("tuned profile 'virtual-guest' still sets 30 at boot and wins over files"));
}

#[test]
fn a_selected_tuned_profile_is_switched_to_and_counts_at_boot() {
    let m = parse_params(json!({
        "settings": {"vm.swappiness": 10},
        "file": OURS,
        "tuned_profile": "throughput-performance",
    }))
    .unwrap();
    let conf = [file(OURS, &owned("vm.swappiness = 10\n"))];
    let active = tuned_profile("virtual-guest", "vm.swappiness = 30\n", "0");
    let target = tuned_profile("throughput-performance", "vm.swappiness=10\n", "0");
    let mut f = facts(&m, &conf, &active, &[("vm.swappiness", "10")]);
    let q = (String::new(), "throughput-performance".to_string());
    f.insert(TunedCandidate::key(&q), SysctlFiles::render(&target));
    let plan = m.plan(&f).unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness at boot", "tuned profile"]);
    assert_eq!(plan.changes[1].before.as_deref(), Some("virtual-guest"));
    assert_eq!(
        plan.steps,
        ["tuned-adm profile throughput-performance || { echo 'tuned-adm profile failed' >&2; exit 1; }"]
    );
    assert!(
        plan.notes.is_empty(),
        "the new profile's 10 wins at boot: {:?}",
        plan.notes
    );
    let after = TunedProfile::parse("", &predicted(&plan, &TunedProfile::key(""))).unwrap();
    assert_eq!(after.unwrap().profile, "throughput-performance");

    // Once active: nothing to do, and the report names the profile.
    let mut f = facts(&m, &conf, &target, &[("vm.swappiness", "10")]);
    f.insert(TunedCandidate::key(&q), SysctlFiles::render(&target));
    let plan = m.plan(&f).unwrap();
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
    assert!(plan.notes[0].contains("tuned profile 'throughput-performance' sets 10 and wins"));

    // A profile tuned does not have is a host error, not a silent no-op.
    let mut f = facts(&m, &conf, &active, &[("vm.swappiness", "10")]);
    f.insert(TunedCandidate::key(&q), SysctlFiles::render(&Vec::new()));
    assert!(
        matches!(m.plan(&f), Err(ModuleError::Absent(msg)) if msg.contains("no profile 'throughput-performance'"))
    );
    assert!(parse_params(
        json!({"name": "vm.swappiness", "value": 1, "tuned_profile": "x;reboot"})
    )
    .is_err());
}

#[test]
fn tuned_reapply_skips_usr_lib_files() {
    let m = map_form(json!({"vm.swappiness": 10}));
    let m = Sysctl {
        file: "/usr/lib/sysctl.d/90-gpu.conf".into(),
        ..m
    };
    let conf = [file(
        "/usr/lib/sysctl.d/90-gpu.conf",
        &owned("vm.swappiness = 10\n"),
    )];
    let tuned = tuned_profile("throughput-performance", "vm.swappiness=5\n", "1");
    let plan = m
        .plan(&facts(&m, &conf, &tuned, &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(plan.changes[0].before.as_deref(), Some("5"));
}

#[test]
fn duplicate_keys_in_one_file_last_wins() {
    let m =
        parse_params(json!({"name": "vm.swappiness", "value": 10, "sysctl_file": OURS})).unwrap();
    let conf = [file(OURS, "vm.swappiness = 10\nvm.swappiness = 60\n")];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), [OURS, "vm.swappiness at boot"]);
    assert!(plan.changes[1]
        .evidence
        .as_deref()
        .unwrap()
        .contains("at boot 60 from /etc/sysctl.d/90-gpu-node.conf:2"));
    let st = FileFact::parse(OURS, &predicted(&plan, &FileFact::key(OURS)))
        .unwrap()
        .unwrap();
    assert_eq!(
        st.content.as_deref(),
        Some("vm.swappiness = 10\nvm.swappiness = 10\n")
    );
}

#[test]
fn slash_form_is_the_same_key_everywhere() {
    let m =
        parse_params(json!({"name": "vm/swappiness", "value": 10, "sysctl_file": OURS})).unwrap();
    assert_eq!(
        m.settings,
        [("vm.swappiness".to_string(), "10".to_string())]
    );
    let conf = [file(OURS, "# keep\nvm/swappiness=10\n")];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
}

#[test]
fn tabs_in_tcp_rmem_are_not_drift() {
    let m = parse_params(
        json!({"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456", "sysctl_file": OURS}),
    )
    .unwrap();
    let conf = [file(OURS, "net.ipv4.tcp_rmem =\t4096\t87380  6291456\n")];
    let plan = m
        .plan(&facts(
            &m,
            &conf,
            &[],
            &[("net.ipv4.tcp_rmem", "4096\t87380\t6291456")],
        ))
        .unwrap();
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
}

#[test]
fn ansible_form_edits_only_its_lines() {
    let text = "# keep me\nvm.swappiness = 60\nkernel.pid_max = 1\nvm/swappiness=30\n";
    assert_eq!(
        edit(text, "vm.swappiness", Some("10")),
        "# keep me\nvm.swappiness = 10\nkernel.pid_max = 1\nvm.swappiness = 10\n"
    );
    assert_eq!(
        edit(text, "vm.swappiness", None),
        "# keep me\nkernel.pid_max = 1\n"
    );
    assert_eq!(edit("a = 1", "b", Some("2")), "a = 1\nb = 2\n");

    let m = parse_params(json!({"name": "vm.swappiness", "state": "absent", "sysctl_file": OURS}))
        .unwrap();
    assert!(m.probes().len() == 2 && m.settings.is_empty());
    let plan = m.plan(&facts(&m, &[file(OURS, text)], &[], &[])).unwrap();
    assert_eq!(subjects(&plan), [OURS]);
}

#[test]
fn ansible_form_defaults_to_sysctl_conf_read_through_the_link() {
    let m = parse_params(json!({"name": "vm.swappiness", "value": "10"})).unwrap();
    assert_eq!(m.file, "/etc/sysctl.conf");
    let conf = sysctl_conf_link("vm.swappiness = 60\n");
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(
        subjects(&plan),
        ["/etc/sysctl.conf", "vm.swappiness at boot"]
    );
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    let after = SysctlFiles::parse("", &predicted(&plan, &SysctlFiles::key(""))).unwrap();
    assert_eq!(after[0].content.as_deref(), Some("vm.swappiness = 10\n"));
}

#[test]
fn sysctl_conf_unread_at_boot_is_explained() {
    let m = parse_params(json!({"name": "vm.swappiness", "value": "10"})).unwrap();
    let conf = [file(config::SYSCTL_CONF, "vm.swappiness = 10\n")];
    let plan = m
        .plan(&facts(&m, &conf, &[], &[("vm.swappiness", "10")]))
        .unwrap();
    assert_eq!(subjects(&plan), ["vm.swappiness at boot"]);
    assert!(
        plan.notes[0].contains("/etc/sysctl.conf is not read at boot"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn unknown_key_is_a_clear_error_unless_ignored() {
    let m = map_form(json!({"net.bridge.bridge-nf-call-iptables": 1}));
    let f = facts(&m, &[], &[], &[]);
    let err = m.plan(&f).unwrap_err();
    assert!(
        matches!(&err, ModuleError::Absent(msg) if msg.contains("unknown sysctl key net.bridge.bridge-nf-call-iptables")),
        "{err:?}"
    );
    let m = parse_params(json!({"settings": {"net.bridge.bridge-nf-call-iptables": 1}, "file": OURS, "ignoreerrors": true})).unwrap();
    let plan = m.plan(&f).unwrap();
    assert_eq!(subjects(&plan), [OURS]);
    assert_eq!(
        plan.notes,
        ["net.bridge.bridge-nf-call-iptables: not available on this kernel (ignored)"]
    );
}

#[test]
fn invalid_params_are_param_errors() {
    let cases = [
        (
            json!({"settings": ["vm.swappiness=10"], "file": OURS}),
            "must be a mapping",
        ),
        (json!({"settings": {}, "file": OURS}), "at least one key"),
        (json!({"settings": {"vm.swappiness": 10}}), "needs 'file'"),
        (
            json!({"settings": {"vm.swappiness": 10}, "file": OURS, "name": "x"}),
            "cannot be combined",
        ),
        (
            json!({"settings": {"net.ipv4.conf.*.rp_filter": 1}, "file": OURS}),
            "glob keys",
        ),
        (
            json!({"settings": {"../../etc/passwd": 1}, "file": OURS}),
            "'..' part",
        ),
        (
            json!({"settings": {"vm.swappiness": "10\nkernel.x = 1"}, "file": OURS}),
            "one non-empty line",
        ),
        (
            json!({"settings": {"vm.swappiness": {"a": 1}}, "file": OURS}),
            "scalar values",
        ),
        (
            json!({"settings": {"vm.swappiness": 1}, "file": "rel.conf"}),
            "absolute",
        ),
        (
            json!({"settings": {"vm.swappiness": 1}, "file": OURS, "reload": "sometimes"}),
            "boolean or 'system'",
        ),
        (json!({"value": 1}), "missing required parameter 'name'"),
        (json!({"name": "vm.swappiness"}), "needs 'value'"),
        (
            json!({"name": "vm.swappiness", "value": 1, "file": OURS}),
            "use 'sysctl_file'",
        ),
    ];
    for (params, want) in cases {
        let err = parse_params(params.clone())
            .err()
            .unwrap_or_else(|| panic!("{params} accepted"));
        assert!(err.message.contains(want), "{params}: {}", err.message);
    }
}

#[test]
fn reload_system_runs_once_after_the_file_and_before_live_keys() {
    let m =
        parse_params(json!({"settings": {"vm.swappiness": 10}, "file": OURS, "reload": "system"}))
            .unwrap();
    let plan = m
        .plan(&facts(&m, &[], &[], &[("vm.swappiness", "60")]))
        .unwrap();
    assert_eq!(plan.steps.len(), 3);
    assert_eq!(plan.steps[1], SYSTEM_RELOAD);
    let noop = m.plan(&facts(
        &m,
        &[file(OURS, &owned("vm.swappiness = 10\n"))],
        &[],
        &[("vm.swappiness", "10")],
    ));
    assert!(noop.unwrap().steps.is_empty());

    let m = parse_params(
        json!({"name": "vm.swappiness", "value": 10, "reload": false, "sysctl_file": OURS}),
    )
    .unwrap();
    assert_eq!(m.reload, Reload::None);
    let plan = m
        .plan(&facts(
            &m,
            &[file(OURS, "vm.swappiness = 10\n")],
            &[],
            &[("vm.swappiness", "60")],
        ))
        .unwrap();
    assert!(
        plan.changes.is_empty() && plan.notes[0].contains("live 60"),
        "{:?}",
        plan
    );
}

#[test]
fn hostile_values_are_quoted() {
    let m = map_form(json!({"kernel.core_pattern": "|/bin/x '$(reboot)' a  b"}));
    let plan = m
        .plan(&facts(&m, &[], &[], &[("kernel.core_pattern", "core")]))
        .unwrap();
    assert_eq!(
        plan.steps[1],
        r"printf '%s\n' '|/bin/x '\''$(reboot)'\'' a b' > /proc/sys/kernel/core_pattern"
    );
    assert_eq!(
        crate::base::shell::split(&plan.steps[1])[2],
        "|/bin/x '$(reboot)' a b"
    );
}

#[test]
fn a_link_to_sysctl_conf_is_written_through_and_other_links_are_refused() {
    let m = parse_params(json!({"name": "vm.swappiness", "value": 10, "sysctl_file": "/etc/sysctl.d/99-sysctl.conf"})).unwrap();
    let conf = sysctl_conf_link("# EL's sysctl.conf\nvm.swappiness = 60\n");
    let link = |target: &str| FileState {
        kind: files::Kind::Link,
        link_target: Some(target.into()),
        content: None,
        ..FileState::written("", 0o777, "root", "root")
    };
    let mut f = facts(&m, &conf, &[], &[("vm.swappiness", "10")]);
    f.insert(
        FileFact::key(&m.file),
        FileFact::render(&Some(link("../sysctl.conf"))),
    );
    f.insert(
        FileFact::key(config::SYSCTL_CONF),
        FileFact::render(&Some(FileState::written(
            "# EL's sysctl.conf\nvm.swappiness = 60\n",
            0o644,
            "root",
            "root",
        ))),
    );
    let plan = m.plan(&f).unwrap();
    assert_eq!(
        subjects(&plan),
        ["/etc/sysctl.conf", "vm.swappiness at boot"]
    );
    assert!(
        plan.steps[0].contains("/etc/sysctl.conf") && !plan.steps[0].contains("99-sysctl.conf"),
        "the target is replaced, the link stays: {}",
        plan.steps[0]
    );
    let after = SysctlFiles::parse("", &predicted(&plan, &SysctlFiles::key(""))).unwrap();
    let read = |p: &str| after.iter().find(|c| c.path == p).unwrap().content.clone();
    assert_eq!(
        read("/etc/sysctl.conf").as_deref(),
        Some("# EL's sysctl.conf\nvm.swappiness = 10\n")
    );
    assert_eq!(
        read("/etc/sysctl.d/99-sysctl.conf"),
        read("/etc/sysctl.conf")
    );

    f.insert(
        FileFact::key(&m.file),
        FileFact::render(&Some(link("/opt/elsewhere.conf"))),
    );
    let err = m.plan(&f).unwrap_err();
    assert!(
        matches!(&err, ModuleError::Refused(msg) if msg.contains("is a symlink to /opt/elsewhere.conf")),
        "{err:?}"
    );
}

/// The real probe scripts, run by /bin/sh against a temp folder standing in for `/`.
#[test]
fn probes_read_a_host_tree() {
    use crate::remote::probe::{build_script, parse_frames};
    use crate::remote::{local::LocalTransport, Purpose, Script, Transport};
    use std::fs;
    use std::os::unix::fs::symlink;

    let root = tempfile::tempdir().unwrap();
    let r = |p: &str| root.path().join(p.trim_start_matches('/'));
    for d in [
        "etc/sysctl.d",
        "usr/lib/sysctl.d",
        "run/sysctl.d",
        "proc/sys/vm",
        "etc/tuned",
        "usr/lib/tuned/virtual-guest",
        "usr/lib/tuned/throughput-performance",
    ] {
        fs::create_dir_all(r(d)).unwrap();
    }
    // Merged /usr: /lib/sysctl.d is /usr/lib/sysctl.d, read once.
    symlink("usr/lib", r("/lib")).unwrap();
    fs::write(r("/etc/sysctl.conf"), "vm.swappiness = 60\n").unwrap();
    symlink("../sysctl.conf", r("/etc/sysctl.d/99-sysctl.conf")).unwrap();
    symlink("/dev/null", r("/etc/sysctl.d/50-masked.conf")).unwrap();
    fs::write(r("/etc/extra.conf"), "# read through a link\n").unwrap();
    symlink("../../etc/extra.conf", r("/run/sysctl.d/70-extra.conf")).unwrap();
    fs::write(r("/usr/lib/sysctl.d/50-masked.conf"), "vm.swappiness = 1\n").unwrap();
    fs::write(r("/run/sysctl.d/a b.conf"), "@@SYSCTL f 1 1 1\n").unwrap();
    fs::write(r("/usr/lib/sysctl.d/ignored.txt"), "vm.swappiness = 2\n").unwrap();
    fs::write(r("/proc/sys/vm/swappiness"), "60\n").unwrap();
    fs::write(r("/etc/tuned/active_profile"), "virtual-guest\n").unwrap();
    fs::write(r("/etc/tuned/tuned-main.conf"), "reapply_sysctl = 0\n").unwrap();
    fs::write(
        r("/usr/lib/tuned/virtual-guest/tuned.conf"),
        "[main]\ninclude=throughput-performance\n",
    )
    .unwrap();
    fs::write(
        r("/usr/lib/tuned/throughput-performance/tuned.conf"),
        "[sysctl]\nvm.swappiness=10\n",
    )
    .unwrap();

    let mut m = map_form(json!({"vm.swappiness": 10}));
    m.root = root.path().to_str().unwrap().to_string();
    let units: Vec<(String, String)> = m.probes().into_iter().map(|p| (p.key, p.script)).collect();
    let ids: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
    let out = LocalTransport
        .run(&Script {
            purpose: Purpose::Probe,
            body: build_script("t", &units, false, &[]),
            become_user: None,
            become_flags: None,
        })
        .unwrap();
    let results = parse_frames("t", &out.stdout, &ids).unwrap();

    let conf = SysctlFiles::parse("", &results[&SysctlFiles::key("")]).unwrap();
    let paths: Vec<&str> = conf.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/etc/sysctl.d/50-masked.conf",
            "/etc/sysctl.d/99-sysctl.conf",
            "/run/sysctl.d/70-extra.conf",
            "/run/sysctl.d/a b.conf",
            "/usr/lib/sysctl.d/50-masked.conf",
            "/etc/sysctl.conf"
        ]
    );
    // Links to /etc/sysctl.conf and /dev/null are told by `-ef`, not read.
    assert_eq!(conf[0].link.as_deref(), Some("/dev/null"));
    assert_eq!(conf[1].link.as_deref(), Some("/etc/sysctl.conf"));
    assert_eq!(conf[2].link.as_deref(), Some("../../etc/extra.conf"));
    assert_eq!(conf[2].content.as_deref(), Some("# read through a link\n"));
    assert_eq!(conf[3].content.as_deref(), Some("@@SYSCTL f 1 1 1\n"));
    let t = TunedProfile::parse("", &results[&TunedProfile::key("")])
        .unwrap()
        .unwrap();
    assert_eq!((t.value("vm.swappiness"), t.reapply), (Some("10"), false));

    let facts = Facts::new(results);
    let plan = m.plan(&facts).unwrap();
    assert_eq!(
        subjects(&plan),
        [r(OURS).to_str().unwrap(), "vm.swappiness"]
    );
    assert!(plan.changes[1].evidence.as_deref().unwrap().starts_with(
        "live 60; at boot 10 from tuned profile 'virtual-guest'; tuned profile 'virtual-guest' sets 10 and wins"
    ));

    // The write step, run for real into the temp tree, yields the predicted file.
    let out = LocalTransport
        .run(&Script {
            purpose: Purpose::Mutate,
            body: plan.steps[0].clone(),
            become_user: None,
            become_flags: None,
        })
        .unwrap();
    assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        fs::read_to_string(r(OURS)).unwrap(),
        owned("vm.swappiness = 10\n")
    );
    let p = SysctlFiles::probe(&m.root);
    let out = LocalTransport
        .run(&Script {
            purpose: Purpose::Probe,
            body: build_script("u", &[(p.key.clone(), p.script)], false, &[]),
            become_user: None,
            become_flags: None,
        })
        .unwrap();
    let reprobed = parse_frames("u", &out.stdout, std::slice::from_ref(&p.key)).unwrap();
    let mut want = SysctlFiles::parse("", &predicted(&plan, &SysctlFiles::key(""))).unwrap();
    let mut got = SysctlFiles::parse("", &reprobed[&SysctlFiles::key("")]).unwrap();
    want.sort_by(|a, b| a.path.cmp(&b.path));
    got.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(got, want);
}

/// The live probe over the real procfs, read only: one `grep` for every
/// key, multi-word values kept whole, a write-only key told apart from a
/// missing one, an empty value from an unreadable one.
#[test]
fn live_values_read_real_procfs_in_one_probe() {
    use crate::remote::local::LocalTransport;
    use crate::remote::{Purpose, Script, Transport};

    let keys = [
        "kernel.ostype",
        "net.ipv4.tcp_rmem",
        "net.ipv4.route.flush",
        "vm.no_such_key",
        "net/ipv4/ip_local_reserved_ports",
    ]
    .map(String::from);
    let q = live_query("", keys);
    let out = LocalTransport
        .run(&Script {
            purpose: Purpose::Probe,
            body: LiveValues::script(&q),
            become_user: None,
            become_flags: None,
        })
        .unwrap();
    let r = ProbeResult {
        rc: out.status,
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    let live = LiveValues::parse(&q, &r).unwrap();
    assert_eq!(live["kernel.ostype"], Live::Value("Linux".into()));
    let Live::Value(rmem) = &live["net.ipv4.tcp_rmem"] else {
        panic!("{live:?}")
    };
    assert_eq!(rmem.split('\t').count(), 3, "{rmem:?}");
    assert_eq!(live["net.ipv4.route.flush"], Live::WriteOnly);
    assert_eq!(live["vm.no_such_key"], Live::Missing);
    let Live::Value(ports) = &live["net.ipv4.ip_local_reserved_ports"] else {
        panic!("{live:?}")
    };
    assert!(!ports.contains('\n'), "{ports:?}");
}

#[test]
fn live_answer_is_parsed_per_key() {
    let q = live_query("", ["vm.a", "vm.b", "vm.c", "vm.d"].map(String::from));
    let r = ProbeResult {
        rc: 2,
        stdout: "rrmr\nvm/a\0x\ty z\nvm/a\0second\n".into(),
        stderr: "grep: vm/d: Input/output error\n".into(),
    };
    let live = LiveValues::parse(&q, &r).unwrap();
    assert_eq!(live["vm.a"], Live::Value("x\ty z\nsecond".into()));
    assert_eq!(live["vm.b"], Live::Value(String::new()));
    assert_eq!(live["vm.c"], Live::Missing);
    assert_eq!(live["vm.d"], Live::Unreadable("Input/output error".into()));
    let other = ProbeResult {
        stderr: "grep: invalid option -- 'Z'\n".into(),
        ..r.clone()
    };
    assert!(LiveValues::parse(&q, &other).is_err());
    let stray = ProbeResult::ok("rrmr\nvm/c\0x\n");
    assert!(LiveValues::parse(&q, &stray).is_err());
}

#[test]
fn a_write_only_key_is_reported_as_such() {
    let m = map_form(json!({"net.ipv4.route.flush": 1}));
    let mut f = facts(&m, &[], &[], &[]);
    let values = [("net.ipv4.route.flush".to_string(), Live::WriteOnly)].into();
    f.insert(LiveValues::key(&m.live_all()), LiveValues::render(&values));
    let err = m.plan(&f).unwrap_err().to_string();
    assert!(err.contains("is write-only"), "{err}");
}

/// A map-form task reads all its keys from one probe, but what is known
/// of a key alone (an earlier task's prediction) wins.
#[test]
fn one_probe_for_all_keys_and_predictions_per_key() {
    let m = map_form(json!({"vm.swappiness": 10, "vm.overcommit_memory": 1}));
    assert_eq!(
        m.probes()
            .iter()
            .filter(|p| p.key.starts_with("sysctl:vm"))
            .map(|p| p.key.as_str())
            .collect::<Vec<_>>(),
        ["sysctl:vm.overcommit_memory vm.swappiness"]
    );
    let conf = [file(
        OURS,
        &owned("vm.swappiness = 10\nvm.overcommit_memory = 1\n"),
    )];
    let mut f = facts(
        &m,
        &conf,
        &[],
        &[("vm.swappiness", "60"), ("vm.overcommit_memory", "1")],
    );
    assert_eq!(subjects(&m.plan(&f).unwrap()), ["vm.swappiness"]);
    let earlier = [("vm.swappiness".to_string(), Live::Value("10".into()))].into();
    f.insert(
        LiveValues::key(&m.live("vm.swappiness")),
        LiveValues::render(&earlier),
    );
    assert!(m.plan(&f).unwrap().changes.is_empty());
}

/// Live values asked by several tasks are read by one unit, and each task
/// gets what its own probe would have read.
#[test]
fn live_values_of_several_tasks_are_read_together() {
    use crate::remote::joint::Batch;
    use crate::remote::local::LocalTransport;
    use crate::remote::probe::{build_script, parse_frames};
    use crate::remote::{Purpose, Script, Transport};

    let root = tempfile::tempdir().unwrap();
    let vm = root.path().join("proc/sys/vm");
    std::fs::create_dir_all(&vm).unwrap();
    std::fs::write(vm.join("swappiness"), "60\n").unwrap();
    std::fs::write(vm.join("overcommit_memory"), "1\n").unwrap();
    let run = |probes: Vec<Probe>| {
        let batch = Batch::new(probes, true);
        let ids: Vec<String> = batch.units.iter().map(|u| u.0.clone()).collect();
        let body = build_script("t", &batch.units, false, &[]);
        let script = Script {
            purpose: Purpose::Probe,
            body,
            become_user: None,
            become_flags: None,
        };
        let out = LocalTransport.run(&script).unwrap();
        (
            batch.units.len(),
            batch.answers(parse_frames("t", &out.stdout, &ids).unwrap()),
        )
    };
    let at = root.path().to_str().unwrap();
    let queries = [
        live_query(at, ["vm.swappiness".to_string()]),
        live_query(at, ["vm.overcommit_memory", "vm.missing"].map(String::from)),
    ];
    let probes: Vec<Probe> = queries.iter().map(LiveValues::probe).collect();
    let (units, together) = run(probes.clone());
    assert_eq!(units, 1);
    for (q, p) in queries.iter().zip(probes) {
        let key = p.key.clone();
        let (_, alone) = run(vec![p]);
        let read = LiveValues::parse(q, &together[&key]).unwrap();
        assert_eq!(read, LiveValues::parse(q, &alone[&key]).unwrap());
    }
    let second = LiveValues::parse(&queries[1], &together[&LiveValues::key(&queries[1])]).unwrap();
    assert_eq!(
        second,
        [
            ("vm.missing".to_string(), Live::Missing),
            ("vm.overcommit_memory".to_string(), Live::Value("1".into())),
        ]
        .into()
    );
}
