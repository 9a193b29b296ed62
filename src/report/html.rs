//! The fleet view of a compliance report: one self-contained HTML file
//! (inline CSS and JS, no external assets) that works offline and prints.
//!
//! It reads the JSON document rather than the run's structs so a saved
//! report can be rendered again later, and it tolerates fields that older
//! or newer documents lack (`control`, `expected`/`actual`, `observed_by`,
//! `observed_at`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::Value;

use super::fleet::host_ranges;
use super::printable;
use crate::smoke::{fleet_outliers, HostSmoke};

const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

/// Statuses in the order the summary shows them, worst first.
const STATUSES: &[&str] = &[
    "unreachable",
    "failed",
    "drift",
    "unknown",
    "changed",
    "ok",
    "skipped",
];

pub fn render(doc: &Value) -> String {
    let hosts: Vec<&Value> = array(&doc["hosts"]).iter().collect();
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width\">");
    let _ = write!(
        out,
        "<title>nodeprov {} report: {}</title><style>{STYLE}</style></head><body>",
        esc(text(&doc["mode"])),
        esc(text(&doc["playbook"]))
    );
    out.push_str(&summary(doc, &hosts));
    out.push_str(&filters(&hosts));
    out.push_str(&findings(&hosts));
    out.push_str(&gpu_section(&hosts));
    out.push_str("<h2>Hosts</h2>");
    let mut ordered = hosts.clone();
    ordered.sort_by_key(|h| rank(host_status(h)));
    for h in ordered {
        out.push_str(&host_section(h));
    }
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out
}

/// Text from the document made safe for HTML text and attribute values:
/// control characters shown as `\x1b`-style escapes, markup escaped.
fn esc(raw: &str) -> String {
    markup_escaped(&printable(raw, false))
}

/// Like `esc`, keeping line breaks and tabs, for diff bodies inside `<pre>`.
fn esc_block(raw: &str) -> String {
    raw.split('\n')
        .map(|line| markup_escaped(&printable(line, true)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn markup_escaped(shown: &str) -> String {
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn rank(status: &str) -> usize {
    STATUSES
        .iter()
        .position(|s| *s == status)
        .unwrap_or(STATUSES.len())
}

/// A task's status as the recap counts it: a failure tolerated by
/// `ignore_errors` is `ok`.
fn task_status(t: &Value) -> &str {
    match text(&t["status"]) {
        "failed" if t["ignored"].as_bool().unwrap_or(false) => "ok",
        s => s,
    }
}

/// One word per host, the worst thing that happened to it; `unknown` counts
/// as drift, as it does for the exit code.
fn host_status(h: &Value) -> &'static str {
    if !h["unreachable"].is_null() {
        return "unreachable";
    }
    let worst = array(&h["tasks"])
        .iter()
        .map(task_status)
        .min_by_key(|s| rank(s))
        .unwrap_or("ok");
    match worst {
        "unreachable" => "unreachable",
        "failed" => "failed",
        "drift" | "unknown" => "drift",
        "changed" => "changed",
        _ => "ok",
    }
}

/// The exit code with what it means; a document without one says so rather
/// than passing for compliant.
fn exit_cell(doc: &Value) -> String {
    let Some(code) = doc["exit_code"].as_u64() else {
        return "<dd class=\"exit\">not recorded</dd>".into();
    };
    let meaning = match code {
        0 => "compliant",
        2 => "drift found",
        4 => "a host failed",
        6 => "drift found and a host failed",
        _ => "usage or input error",
    };
    format!("<dd class=\"exit exit-{code}\" data-exit=\"{code}\">{code} ({meaning})</dd>")
}

/// When the hosts were observed: the document's own time, else the range
/// of the hosts' `observed_at`.
fn observed_when(doc: &Value, hosts: &[&Value]) -> String {
    for key in ["generated_at", "observed_at", "when"] {
        if let Some(t) = doc[key].as_str() {
            return t.to_string();
        }
    }
    let times: BTreeSet<&str> = hosts.iter().flat_map(|h| host_times(h)).collect();
    match (times.first(), times.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a} – {b}"),
        _ => "not recorded in this report".into(),
    }
}

/// When a host was observed: its own `observed_at`, else those of the
/// probes it answered.
fn host_times(h: &Value) -> BTreeSet<&str> {
    let own = h["observed_at"].as_str();
    let probes = array(&h["probes"])
        .iter()
        .filter_map(|p| p["observed_at"].as_str());
    own.into_iter().chain(probes).collect()
}

/// Hosts by their worst status and tasks by theirs.
fn counts_table(hosts: &[&Value]) -> String {
    let mut host_counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut task_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for h in hosts {
        *host_counts.entry(host_status(h)).or_default() += 1;
        for t in array(&h["tasks"]) {
            *task_counts.entry(task_status(t)).or_default() += 1;
        }
    }
    let mut out = String::from("<table class=\"counts\"><tr><th></th>");
    for s in STATUSES {
        let _ = write!(out, "<th class=\"st-{s}\">{s}</th>");
    }
    for (row, counts) in [("hosts", &host_counts), ("tasks", &task_counts)] {
        let _ = write!(out, "</tr><tr><th>{row}</th>");
        for s in STATUSES {
            let n = counts.get(s).copied().unwrap_or(0);
            let _ = write!(out, "<td data-summary=\"{row}-{s}\">{n}</td>");
        }
    }
    out.push_str("</tr></table>");
    out
}

fn summary(doc: &Value, hosts: &[&Value]) -> String {
    let mut out = String::from("<header id=\"summary\"><h1>nodeprov ");
    let _ = write!(
        out,
        "{} report</h1><dl class=\"facts\"><dt>Playbook</dt><dd>{}</dd><dt>Mode</dt><dd>{}</dd>\
         <dt>When</dt><dd>{}</dd><dt>Exit code</dt>{}<dt>Hosts</dt><dd data-summary=\"hosts\">{}</dd></dl>",
        esc(text(&doc["mode"])),
        esc(text(&doc["playbook"])),
        esc(text(&doc["mode"])),
        esc(&observed_when(doc, hosts)),
        exit_cell(doc),
        hosts.len()
    );
    out.push_str(&counts_table(hosts));
    if let Some(halted) = doc["halted"].as_str() {
        let _ = write!(out, "<p class=\"alert\">Run halted: {}</p>", esc(halted));
    }
    let never = array(&doc["never_touched"]);
    if !never.is_empty() {
        let names: Vec<&str> = never.iter().map(text).collect();
        let _ = write!(
            out,
            "<p class=\"alert\">Never touched: {}</p>",
            esc(&host_ranges(&names))
        );
    }
    out.push_str("</header>");
    out
}

fn tags(task: &Value) -> Vec<&str> {
    let listed = if task["control"]["tags"].is_array() {
        &task["control"]["tags"]
    } else {
        &task["tags"]
    };
    array(listed).iter().filter_map(Value::as_str).collect()
}

fn filters(hosts: &[&Value]) -> String {
    let all_tags: BTreeSet<&str> = hosts
        .iter()
        .flat_map(|h| array(&h["tasks"]))
        .flat_map(tags)
        .collect();
    let mut out = String::from(
        "<form id=\"filters\" class=\"noprint\"><label>Status <select name=\"status\"><option value=\"\">all</option>",
    );
    for s in STATUSES {
        let _ = write!(out, "<option>{s}</option>");
    }
    out.push_str(
        "</select></label> <label>Tag <select name=\"tag\"><option value=\"\">all</option>",
    );
    for t in all_tags {
        let _ = write!(out, "<option>{}</option>", esc(t));
    }
    out.push_str(
        "</select></label> <label>Host <input name=\"host\" placeholder=\"name or part of it\"></label> \
         <span id=\"shown\"></span></form>",
    );
    out
}

/// A drift or failure seen on one or more hosts: the same task, subject and
/// values (or the same message) is one finding.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct FindingKey {
    status: String,
    task: String,
    what: String,
}

fn findings(hosts: &[&Value]) -> String {
    let mut groups: BTreeMap<FindingKey, (Vec<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for h in hosts {
        let name = text(&h["host"]);
        for (key, task) in host_findings(h) {
            let entry = groups.entry(key).or_default();
            entry.0.push(name);
            entry.1.extend(task.map(tags).unwrap_or_default());
        }
    }
    if groups.is_empty() {
        return "<h2>Findings</h2><p class=\"none\">No drift and no failures.</p>".into();
    }
    let mut ordered: Vec<_> = groups.into_iter().collect();
    ordered.sort_by(|(a, (ha, _)), (b, (hb, _))| {
        (rank(&a.status), hb.len(), a).cmp(&(rank(&b.status), ha.len(), b))
    });
    let mut out = String::from("<h2>Findings</h2><ul id=\"findings\">");
    for (key, (names, tag_set)) in ordered {
        let n = names.len();
        let _ = write!(
            out,
            "<li class=\"finding st-{status}\" data-row data-status=\"{status}\" data-hosts=\"{hosts}\" data-tags=\"{tags}\">\
             <span class=\"badge st-{status}\">{status}</span> <b>{what}</b> on {n} host{s}: <code>{range}</code>{task}</li>",
            status = esc(&key.status),
            hosts = esc(&names.join(" ")),
            tags = esc(&tag_set.into_iter().collect::<Vec<_>>().join(" ")),
            what = esc(&key.what),
            s = if n == 1 { "" } else { "s" },
            range = esc(&host_ranges(&names)),
            task = if key.task.is_empty() {
                String::new()
            } else {
                format!(" <span class=\"task\">({})</span>", esc(&key.task))
            },
        );
    }
    out.push_str("</ul>");
    out
}

fn host_findings(h: &Value) -> Vec<(FindingKey, Option<&Value>)> {
    if let Some(why) = h["unreachable"].as_str() {
        let key = FindingKey {
            status: "unreachable".into(),
            task: String::new(),
            what: why.to_string(),
        };
        return vec![(key, None)];
    }
    let mut out = Vec::new();
    for t in array(&h["tasks"]) {
        let status = text(&t["status"]);
        let key = |what: String| FindingKey {
            status: status.to_string(),
            task: text(&t["task"]).to_string(),
            what,
        };
        match status {
            "drift" | "unknown" | "changed" => {
                for c in array(&t["changes"]) {
                    out.push((key(change_line(c)), Some(t)));
                }
                if array(&t["changes"]).is_empty() {
                    out.push((key(text(&t["task"]).to_string()), Some(t)));
                }
            }
            "failed" if !t["ignored"].as_bool().unwrap_or(false) => {
                out.push((key(text(&t["message"]).to_string()), Some(t)));
            }
            _ => {}
        }
    }
    out
}

/// The value on the host and the value wanted: schema 2's `actual` and
/// `expected` where present, else `before` and `after`.
fn actual_expected(c: &Value) -> (String, String) {
    let pick = |a: &str, b: &str| {
        c.get(a)
            .or_else(|| c.get(b))
            .and_then(Value::as_str)
            .unwrap_or("(none)")
            .to_string()
    };
    (pick("actual", "before"), pick("expected", "after"))
}

fn change_line(c: &Value) -> String {
    let (actual, expected) = actual_expected(c);
    format!("{} {actual} → {expected}", text(&c["subject"]))
}

/// Per-host GPU results read back from the `gpu_smoke` task's lines
/// (`PASS bf16_throughput: 730.8 TFLOP/s (expected …)`).
fn host_smoke(h: &Value) -> Option<(HostSmoke, Vec<String>)> {
    let mut lines = Vec::new();
    for t in array(&h["tasks"])
        .iter()
        .filter(|t| t["module"] == crate::modules::gpu_smoke::GPU_SMOKE.name)
    {
        lines.extend(array(&t["notes"]).iter().map(|n| text(n).to_string()));
        if let Some(failed) = t["message"].as_str() {
            let detail = failed.trim_start_matches("GPU smoke test failed: ");
            lines.extend(detail.split("; ").map(str::to_string));
        }
    }
    if lines.is_empty() {
        return None;
    }
    let measured = |check: &str| {
        lines.iter().find_map(|l| {
            let rest = l.split_once(&format!(" {check}: "))?.1;
            Some(rest.split(" (expected").next().unwrap_or(rest).to_string())
        })
    };
    let model = measured("gpu_model").map(|m| match m.split_once("x ") {
        Some((n, name)) if n.chars().all(|c| c.is_ascii_digit()) => name.to_string(),
        _ => m,
    });
    let bf16_tflops = measured("bf16_throughput")
        .and_then(|m| m.trim_end_matches(" TFLOP/s").trim().parse::<f64>().ok());
    let smoke = HostSmoke {
        host: text(&h["host"]).to_string(),
        model,
        checks: Vec::new(),
        bf16_tflops,
    };
    Some((smoke, lines))
}

fn gpu_section(hosts: &[&Value]) -> String {
    let smoke: Vec<(HostSmoke, Vec<String>)> = hosts.iter().filter_map(|h| host_smoke(h)).collect();
    if smoke.is_empty() {
        return String::new();
    }
    let measured: Vec<HostSmoke> = smoke.iter().map(|(s, _)| s.clone()).collect();
    let outliers: BTreeMap<String, String> = fleet_outliers(&measured).into_iter().collect();
    let mut out = String::from(
        "<h2>GPU smoke test</h2><table id=\"gpu\"><tr><th>host</th><th>model</th>\
         <th>bf16 TFLOP/s</th><th>fleet</th><th>checks</th></tr>",
    );
    for (s, lines) in &smoke {
        let outlier = outliers.get(&s.host);
        let failing = lines.iter().any(|l| l.starts_with("FAIL"));
        let status = if failing || outlier.is_some() {
            "failed"
        } else {
            "ok"
        };
        let _ = write!(
            out,
            "<tr class=\"st-{status}\" data-row data-status=\"{status}\" data-host=\"{host}\"{flag}>\
             <td>{host}</td><td>{model}</td><td>{tflops}</td><td>{fleet}</td><td><ul class=\"lines\">",
            host = esc(&s.host),
            flag = if outlier.is_some() { " data-outlier" } else { "" },
            model = esc(s.model.as_deref().unwrap_or("not reported")),
            tflops = s
                .bf16_tflops
                .map_or_else(|| "not measured".into(), |t| format!("{t:.1}")),
            fleet = esc(match (outlier, s.bf16_tflops) {
                (Some(why), _) => why.as_str(),
                (None, Some(_)) => "within 10% of its peers' median",
                (None, None) => "not compared: no throughput measured",
            }),
        );
        for l in lines {
            let _ = write!(out, "<li>{}</li>", esc(l));
        }
        out.push_str("</ul></td></tr>");
    }
    out.push_str("</table>");
    out
}

fn host_section(h: &Value) -> String {
    let status = host_status(h);
    let name = esc(text(&h["host"]));
    let mut out = String::new();
    let _ = write!(
        out,
        "<section class=\"host st-{status}\" data-row data-host=\"{name}\" data-status=\"{status}\">\
         <h3><span class=\"badge st-{status}\">{status}</span> {name} <small>{play}</small></h3>",
        play = esc(text(&h["play"])),
    );
    if let Some(why) = h["unreachable"].as_str() {
        let _ = write!(out, "<p class=\"alert\">Unreachable: {}</p>", esc(why));
    }
    let times = host_times(h);
    if let (Some(first), Some(last)) = (times.first(), times.last()) {
        let span = if first == last {
            first.to_string()
        } else {
            format!("{first} – {last}")
        };
        let _ = write!(out, "<p class=\"observed\">Observed at {}</p>", esc(&span));
    }
    let tasks = array(&h["tasks"]);
    if !tasks.is_empty() {
        out.push_str(
            "<table class=\"tasks\"><tr><th>status</th><th>task</th><th>evidence</th></tr>",
        );
        for t in tasks {
            out.push_str(&task_row(&name, t));
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
    out
}

/// Where the task is written down: schema 2's `control`, else `location`.
fn control_location(t: &Value) -> String {
    let c = &t["control"];
    if let Some(loc) = c["location"].as_str().or_else(|| c.as_str()) {
        return loc.to_string();
    }
    match (c["file"].as_str(), c["line"].as_u64()) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => text(&t["location"]).to_string(),
    }
}

fn task_row(host: &str, t: &Value) -> String {
    let status = esc(text(&t["status"]));
    let tag_list = tags(t);
    let mut out = String::new();
    let _ = write!(
        out,
        "<tr class=\"task st-{status}\" data-row data-host=\"{host}\" data-status=\"{status}\" data-tags=\"{tags}\">\
         <td><span class=\"badge st-{status}\">{status}</span>{ignored}</td><td>{task}<div class=\"where\">{module} · {loc}{item}{tag_text}</div></td><td>",
        tags = esc(&tag_list.join(" ")),
        ignored = if t["ignored"].as_bool().unwrap_or(false) { " <small>ignored</small>" } else { "" },
        task = esc(text(&t["task"])),
        module = esc(text(&t["module"])),
        loc = esc(&control_location(t)),
        item = t["item"].as_str().map_or(String::new(), |i| format!(" · item {}", esc(i))),
        tag_text = if tag_list.is_empty() { String::new() } else { format!(" · tags {}", esc(&tag_list.join(", "))) },
    );
    if let Some(m) = t["message"].as_str() {
        let _ = write!(out, "<p class=\"message\">{}</p>", esc(m));
    }
    for c in array(&t["changes"]) {
        out.push_str(&change_evidence(c));
    }
    for n in array(&t["notes"]) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(text(n)));
    }
    out.push_str("</td></tr>");
    out
}

fn change_evidence(c: &Value) -> String {
    let (actual, expected) = actual_expected(c);
    let mut out = String::new();
    let _ = write!(
        out,
        "<dl class=\"change\"><dt>{}</dt><dd>expected <b>{}</b>, actual <b>{}</b></dd>",
        esc(text(&c["subject"])),
        esc(&expected),
        esc(&actual)
    );
    if let Some(v) = c["evidence"].as_str() {
        let _ = write!(
            out,
            "<dd class=\"evidence\">evidence: <code>{}</code></dd>",
            esc(v)
        );
    }
    let probes = array(&c["observed_by"]);
    if !probes.is_empty() {
        let keys: Vec<String> = probes.iter().map(|p| esc(text(&p["key"]))).collect();
        let _ = write!(
            out,
            "<dd class=\"probe\"><details><summary>observed by <code>{}</code></summary>",
            keys.join("</code>, <code>")
        );
        for p in probes {
            let _ = write!(out, "<pre>{}</pre>", esc_block(text(&p["command"])));
        }
        out.push_str("</details></dd>");
    }
    if let Some(diff) = c["diff"].as_str() {
        let _ = write!(
            out,
            "<dd><pre class=\"diff\">{}</pre></dd>",
            esc_block(diff)
        );
    }
    out.push_str("</dl>");
    out
}

#[cfg(test)]
mod tests;
