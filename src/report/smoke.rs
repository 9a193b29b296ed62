//! Human and JSON renderings of GPU smoke results (`nodeprov smoke`).

use serde_json::{json, Value};

use crate::report::printable;
use crate::smoke::{fleet_outliers, Check, HostSmoke, Verdict};

/// Longer measurements are cut in the table, except a warning's or a
/// failure's, which may carry the fix; the JSON report keeps them whole.
const MEASURED_WIDTH: usize = 72;

/// One compact table per host, then the fleet outliers.
pub fn render_human(hosts: &[HostSmoke]) -> String {
    let mut out = String::new();
    for host in hosts {
        out.push_str(&host_header(host));
        out.push_str(&host_table(&host.checks));
    }
    let outliers = fleet_outliers(hosts);
    if !outliers.is_empty() {
        out.push_str("fleet outliers:\n");
        for (host, reason) in outliers {
            out.push_str(&format!("  {host}: {}\n", printable(&reason, false)));
        }
    }
    out
}

fn host_header(host: &HostSmoke) -> String {
    let count = |v: Verdict| host.checks.iter().filter(|c| c.verdict == v).count();
    let overall = if host.failed() { "FAIL" } else { "ok" };
    format!(
        "{} ({}): {overall}, {} pass, {} warn, {} fail, {} skip\n",
        host.host,
        printable(host.model.as_deref().unwrap_or("no GPU model"), false),
        count(Verdict::Pass),
        count(Verdict::Warn),
        count(Verdict::Fail),
        count(Verdict::Skip)
    )
}

fn host_table(checks: &[Check]) -> String {
    let measured: Vec<String> = checks
        .iter()
        .map(|c| {
            let m = printable(&c.measured, false);
            match c.verdict {
                Verdict::Warn | Verdict::Fail => m.into_owned(),
                Verdict::Pass | Verdict::Skip => cut(&m, MEASURED_WIDTH),
            }
        })
        .collect();
    let name_w = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    // A warning or failure too long for the column runs past it rather
    // than widen it.
    let measured_w = measured
        .iter()
        .map(|m| m.chars().count())
        .filter(|&n| n <= MEASURED_WIDTH)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (c, m) in checks.iter().zip(&measured) {
        let line = format!(
            "  {} T{} {:name_w$}  {:measured_w$}  (expected {}) {} ms",
            c.verdict.label(),
            c.tier,
            c.name,
            m,
            c.expected,
            c.duration_ms
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let head: String = s.chars().take(width - 3).collect();
    format!("{head}...")
}

/// The machine-readable report; `schema_version` changes only when fields
/// are removed or change meaning.
pub fn report_json(hosts: &[HostSmoke]) -> Value {
    let hosts_json: Vec<Value> = hosts
        .iter()
        .map(|h| {
            let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
            v["failed"] = Value::Bool(h.failed());
            v
        })
        .collect();
    let outliers: Vec<Value> = fleet_outliers(hosts)
        .into_iter()
        .map(|(host, reason)| json!({ "host": host, "reason": reason }))
        .collect();
    json!({ "schema_version": 1, "kind": "smoke", "hosts": hosts_json, "outliers": outliers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_hosts_report_cannot_drive_the_terminal() {
        let host = |name: &str, tflops| HostSmoke {
            host: name.into(),
            model: Some("H200\x1b]0;owned\x07".into()),
            checks: vec![Check::new(
                "nvidia-smi",
                Verdict::Pass,
                "\x1b[2Jok",
                "answers",
            )],
            bf16_tflops: Some(tflops),
        };
        let text = render_human(&[host("a", 600.0), host("b", 600.0), host("c", 300.0)]);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(text.contains("a (H200\\x1b]0;owned\\x07): ok"), "{text}");
        assert!(text.contains("\\x1b[2Jok"), "{text}");
        assert!(text.contains("c: bf16 300.0 TFLOP/s"), "{text}");
    }
}
