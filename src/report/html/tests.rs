use serde_json::{json, Value};

use super::*;

fn swappiness_task(before: &str) -> Value {
    json!({
        "task": "Memory sysctls",
        "module": "sysctl",
        "location": "playbooks/gpu-node.yml:33:7",
        "status": "drift",
        "changes": [{
            "subject": "vm.swappiness", "before": before, "after": "10",
            "evidence": "live 60; at boot unset (kernel default)"
        }],
        "duration_ms": 0
    })
}

fn host(name: &str, tasks: Vec<Value>) -> Value {
    let mut recap = json!({"ok": 0, "changed": 0, "drift": 0, "unknown": 0,
        "failed": 0, "skipped": 0, "unreachable": 0});
    for t in &tasks {
        let s = t["status"].as_str().unwrap();
        recap[s] = json!(recap[s].as_u64().unwrap() + 1);
    }
    let failed = recap["failed"] != 0;
    json!({"host": name, "play": "GPU node baseline", "tasks": tasks,
        "round_trips": 1, "duration_ms": 3, "recap": recap, "failed": failed})
}

fn ok_task() -> Value {
    json!({"task": "Services", "module": "systemd_service",
        "location": "playbooks/gpu-node.yml:41:7", "status": "ok", "duration_ms": 0})
}

fn doc(hosts: Vec<Value>, exit_code: u8) -> Value {
    json!({"schema_version": 1, "tool": "nodeprov", "version": "0.1.0", "mode": "check",
        "playbook": "playbooks/gpu-node.yml", "exit_code": exit_code, "halted": null,
        "never_touched": [], "hosts": hosts})
}

/// The text of the first element carrying `attr`.
fn cell<'a>(html: &'a str, attr: &str) -> &'a str {
    let at = html
        .find(attr)
        .unwrap_or_else(|| panic!("no {attr} in {html}"));
    let rest = &html[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest.find('<').unwrap();
    &rest[start..end]
}

#[test]
fn summary_counts_hosts_and_tasks_per_status() {
    let mut down = host("gpu-004", vec![]);
    down["unreachable"] = json!("connection refused");
    down["recap"]["unreachable"] = json!(1);
    down["failed"] = json!(true);
    let failing = json!({"task": "GPUs answer", "module": "gpu_smoke",
        "location": "p.yml:49:7", "status": "failed", "message": "no NVIDIA driver",
        "duration_ms": 0});
    let mut tolerated = failing.clone();
    tolerated["ignored"] = json!(true);
    let mut lost_step = ok_task();
    lost_step["status"] = json!("unreachable");
    let mut lost = host("gpu-005", vec![ok_task(), lost_step]);
    lost["unreachable"] = json!("connection lost");
    let d = doc(
        vec![
            host("gpu-001", vec![swappiness_task("60"), ok_task()]),
            host("gpu-002", vec![ok_task(), tolerated]),
            host("gpu-003", vec![failing, swappiness_task("60")]),
            down,
            lost,
        ],
        6,
    );
    let html = render(&d);
    assert_eq!(cell(&html, "data-summary=\"hosts\""), "5");
    for (status, hosts, tasks) in [
        ("unreachable", "2", "1"),
        ("failed", "1", "1"),
        ("drift", "1", "2"),
        ("ok", "1", "4"),
        ("changed", "0", "0"),
    ] {
        assert_eq!(
            cell(&html, &format!("\"hosts-{status}\"")),
            hosts,
            "{status}"
        );
        assert_eq!(
            cell(&html, &format!("\"tasks-{status}\"")),
            tasks,
            "{status}"
        );
    }
    assert!(html.contains("data-exit=\"6\">6 (drift found and a host failed)"));
    let first_host = html.find("<section class=\"host").unwrap();
    assert!(
        html[first_host..].starts_with("<section class=\"host st-unreachable\""),
        "failed and unreachable hosts come first"
    );
    assert!(html.contains("Unreachable: connection refused"));
    assert!(html.contains("<b>connection refused</b> on 1 host: <code>gpu-004</code></li>"));
    assert!(html.contains(
        "on 2 hosts: <code>gpu-001,gpu-003</code> <span class=\"task\">(Memory sysctls)</span>"
    ));
}

#[test]
fn identical_drift_is_one_finding_with_a_host_range() {
    let mut hosts: Vec<Value> = (1..=37)
        .map(|i| host(&format!("gpu-{i:03}"), vec![swappiness_task("60")]))
        .collect();
    hosts.push(host("gpu-038", vec![swappiness_task("30")]));
    hosts.push(host("gpu-039", vec![ok_task()]));
    let html = render(&doc(hosts, 2));
    assert!(
        html.contains("<b>vm.swappiness 60 → 10</b> on 37 hosts: <code>gpu-[001:037]</code>"),
        "{html}"
    );
    assert!(html.contains("<b>vm.swappiness 30 → 10</b> on 1 host: <code>gpu-038</code>"));
    assert_eq!(html.matches("class=\"finding ").count(), 2);
    let big = html.find("60 → 10</b>").unwrap();
    assert!(
        big < html.find("30 → 10</b>").unwrap(),
        "larger groups first"
    );
}

#[test]
fn schema_two_fields_are_used_when_present() {
    let mut t = swappiness_task("60");
    t["control"] = json!({"tags": ["sysctl", "memory"], "location": "playbooks/gpu-node.yml:33"});
    t["changes"][0]["expected"] = json!("10");
    t["changes"][0]["actual"] = json!("61");
    t["changes"][0]["observed_by"] =
        json!([{"key": "sysctl:vm.swappiness", "command": "cat /proc/sys/vm/swappiness"}]);
    let mut h = host("gpu-001", vec![t]);
    h["probes"] = json!([{"key": "sysctl:vm.swappiness", "command": "cat /proc/sys/vm/swappiness", "observed_at": "2026-11-30T16:00:00Z"}]);
    let html = render(&doc(vec![h], 2));
    assert!(html.contains("vm.swappiness 61 → 10"), "{html}");
    assert!(html.contains(
        "observed by <code>sysctl:vm.swappiness</code></summary><pre>cat /proc/sys/vm/swappiness</pre>"
    ));
    assert!(html.contains("data-tags=\"sysctl memory\""));
    assert!(html.contains("<option>memory</option>"));
    assert!(html.contains("sysctl · playbooks/gpu-node.yml:33 · tags sysctl, memory"));
    assert!(
        html.contains("<dd>2026-11-30T16:00:00Z</dd>"),
        "when, from the host"
    );
}

#[test]
fn today_documents_render_without_the_new_fields() {
    let html = render(&doc(vec![host("gpu-001", vec![swappiness_task("60")])], 2));
    assert!(html.contains("<dd>not recorded in this report</dd>"));
    assert!(html.contains("sysctl · playbooks/gpu-node.yml:33:7</div>"));
    assert!(html.contains("expected <b>10</b>, actual <b>60</b>"));
    assert!(html.contains("evidence: <code>live 60; at boot unset (kernel default)</code>"));
}

#[test]
fn document_text_cannot_inject_markup_or_control_bytes() {
    let mut t = swappiness_task("60");
    t["task"] = json!("<script>alert(1)</script>");
    t["changes"][0]["subject"] = json!("\"><img src=x onerror=alert(2)>\x1b]0;owned\x07");
    t["changes"][0]["diff"] = json!("+<b>bold</b>\n+\ttab & \x1b[2J \\x09");
    let mut h = host("gpu-<i>1</i>", vec![t]);
    h["play"] = json!("it's \x00 here");
    let html = render(&doc(vec![h], 2));
    let body = &html[..html.find("<script>").unwrap()];
    assert!(!body.contains("<script"), "{body}");
    assert!(!html.contains("<img") && !html.contains("<i>") && !html.contains("<b>bold"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;\\x1b]0;owned\\x07"));
    assert!(html.contains("data-host=\"gpu-&lt;i&gt;1&lt;/i&gt;\""));
    assert!(html.contains("+&lt;b&gt;bold&lt;/b&gt;\n+\ttab &amp; \\x1b[2J \\x09</pre>"));
    assert!(html.contains("it&#39;s \\x00 here"));
    assert!(!html.chars().any(|c| c.is_control() && !"\n\t".contains(c)));
    assert_eq!(html.matches("<script>").count(), 1, "only the report's own");
}

fn smoke_host(name: &str, tflops: f64) -> Value {
    let notes = [
        "PASS gpu_model: 8x NVIDIA H200 (expected one model)".to_string(),
        format!("PASS bf16_throughput: {tflops:.1} TFLOP/s (expected >= 600 TFLOP/s)"),
    ];
    host(
        name,
        vec![
            json!({"task": "GPUs answer and compute", "module": "gpu_smoke",
            "location": "p.yml:49:7", "status": "ok", "notes": notes, "duration_ms": 0}),
        ],
    )
}

#[test]
fn gpu_results_flag_hosts_below_their_peers_median() {
    let d = doc(
        vec![
            smoke_host("gpu-001", 790.5),
            smoke_host("gpu-002", 788.0),
            smoke_host("gpu-003", 640.2),
        ],
        0,
    );
    let html = render(&d);
    assert!(
        html.contains("<td>NVIDIA H200</td><td>790.5</td>"),
        "{html}"
    );
    let slow = html.find("data-host=\"gpu-003\" data-outlier").unwrap();
    assert!(html[slow..].contains("bf16 640.2 TFLOP/s is 19% below the median 789.2"));
    assert_eq!(html.matches(" data-outlier>").count(), 1);
    assert!(
        html.contains("<td>790.5</td><td>within 10% of its peers&#39; median</td>"),
        "{html}"
    );
    let mut tier0 = smoke_host("gpu-004", 0.0);
    tier0["tasks"][0]["notes"].as_array_mut().unwrap().pop();
    let alone = render(&doc(vec![tier0], 0));
    assert!(
        alone.contains("<td>not measured</td><td>not compared: no throughput measured</td>"),
        "{alone}"
    );
    let none = render(&doc(vec![host("gpu-001", vec![ok_task()])], 0));
    assert!(!none.contains("GPU smoke test"));
}

#[test]
fn a_bare_document_renders_and_claims_nothing() {
    let html = render(&json!({}));
    assert!(html.contains("<dt>Exit code</dt><dd class=\"exit\">not recorded</dd>"));
    assert!(html.contains("data-summary=\"hosts\">0<"));
    assert!(html.contains("No drift and no failures."));
    let mut halted = doc(vec![host("gpu-001", vec![ok_task()])], 4);
    halted["halted"] = json!("play 'GPU node baseline': 2 of 2 hosts failed");
    halted["never_touched"] = json!(["gpu-002", "gpu-003"]);
    let html = render(&halted);
    assert!(html.contains("Run halted: play &#39;GPU node baseline&#39;: 2 of 2 hosts failed"));
    assert!(html.contains("Never touched: gpu-[002:003]"));
}
