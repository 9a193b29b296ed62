//! JUnit XML for CI: one `<testsuite>` per host and play, one `<testcase>`
//! per task result, built from the JSON document so both always agree.

use std::fmt::Write;

use serde_json::Value;

use crate::modules::params::scalar_text;

/// Renders the run report (`json::document`) as JUnit XML. Drift (and a
/// result check mode cannot predict) is a failure carrying its evidence;
/// a failed task or an unreachable host is an error.
pub fn render(doc: &Value) -> String {
    let hosts = list(&doc["hosts"]);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let suites: Vec<Suite> = hosts.iter().map(|h| suite(doc, h)).collect();
    let total = |f: fn(&Suite) -> usize| suites.iter().map(f).sum::<usize>();
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        attr(&format!(
            "nodeprov {} {}",
            scalar_text(&doc["mode"]),
            scalar_text(&doc["playbook"])
        )),
        total(|s| s.cases.len()),
        total(|s| s.count(Outcome::is_failure)),
        total(|s| s.count(Outcome::is_error)),
    );
    for s in &suites {
        s.write(&mut out);
    }
    out.push_str("</testsuites>\n");
    out
}

enum Outcome {
    Pass,
    Skipped,
    Failure { message: String, body: String },
    Error { message: String, body: String },
}

impl Outcome {
    fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failure { .. })
    }
    fn is_error(&self) -> bool {
        matches!(self, Outcome::Error { .. })
    }
    fn is_skipped(&self) -> bool {
        matches!(self, Outcome::Skipped)
    }
}

struct Case {
    classname: String,
    name: String,
    time_ms: u64,
    outcome: Outcome,
}

struct Suite {
    host: String,
    time_ms: u64,
    cases: Vec<Case>,
}

impl Suite {
    fn count(&self, f: fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" hostname=\"{0}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">",
            attr(&self.host),
            self.cases.len(),
            self.count(Outcome::is_failure),
            self.count(Outcome::is_error),
            self.count(Outcome::is_skipped),
            seconds(self.time_ms),
        );
        for c in &self.cases {
            let open = format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
                attr(&c.classname),
                attr(&c.name),
                seconds(c.time_ms)
            );
            let _ = match &c.outcome {
                Outcome::Pass => writeln!(out, "{open}/>"),
                Outcome::Skipped => writeln!(out, "{open}>\n      <skipped/>\n    </testcase>"),
                Outcome::Failure { message, body } => {
                    writeln!(out, "{open}>\n      <failure message=\"{}\" type=\"drift\">{}</failure>\n    </testcase>", attr(message), body_text(body))
                }
                Outcome::Error { message, body } => {
                    writeln!(out, "{open}>\n      <error message=\"{}\" type=\"failed\">{}</error>\n    </testcase>", attr(message), body_text(body))
                }
            };
        }
        out.push_str("  </testsuite>\n");
    }
}

fn suite(doc: &Value, host: &Value) -> Suite {
    let play = scalar_text(&host["play"]);
    let classname = if play.is_empty() {
        scalar_text(&doc["playbook"])
    } else {
        play
    };
    let mut cases: Vec<Case> = list(&host["tasks"])
        .iter()
        .map(|t| Case {
            classname: classname.clone(),
            name: match t["item"].as_str() {
                Some(item) => format!("{} ({item})", scalar_text(&t["task"])),
                None => scalar_text(&t["task"]),
            },
            time_ms: t["duration_ms"].as_u64().unwrap_or(0),
            outcome: outcome(t),
        })
        .collect();
    if let Some(why) = host["unreachable"].as_str() {
        cases.push(Case {
            classname,
            name: "host reachable".into(),
            time_ms: 0,
            outcome: Outcome::Error {
                message: format!("unreachable: {}", one_line(why)),
                body: why.to_string(),
            },
        });
    }
    Suite {
        host: scalar_text(&host["host"]),
        time_ms: host["duration_ms"].as_u64().unwrap_or(0),
        cases,
    }
}

fn outcome(t: &Value) -> Outcome {
    let message = t["message"].as_str().map(one_line);
    match t["status"].as_str().unwrap_or_default() {
        "skipped" => Outcome::Skipped,
        "drift" | "unknown" => Outcome::Failure {
            message: finding(t).or(message).unwrap_or_default(),
            body: evidence(t),
        },
        "failed" if t["ignored"] != Value::Bool(true) => Outcome::Error {
            message: message.unwrap_or_else(|| "failed".into()),
            body: evidence(t),
        },
        "unreachable" => Outcome::Error {
            message: message.unwrap_or_else(|| "host lost during the step".into()),
            body: evidence(t),
        },
        _ => Outcome::Pass,
    }
}

/// `subject: actual → expected` for every change, on one line.
fn finding(t: &Value) -> Option<String> {
    let changes = list(&t["changes"]);
    (!changes.is_empty()).then(|| {
        changes
            .iter()
            .map(|c| {
                format!(
                    "{}: {} → {}",
                    scalar_text(&c["subject"]),
                    shown(&c["actual"]),
                    shown(&c["expected"])
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// What an auditor needs to trust the finding: the control, each change
/// with where its value comes from, and the probe that read it.
fn evidence(t: &Value) -> String {
    let mut out = format!("control: {}", scalar_text(&t["location"]));
    let tags = list(&t["control"]["tags"]);
    if !tags.is_empty() {
        let tags: Vec<String> = tags.iter().map(scalar_text).collect();
        let _ = write!(out, " [{}]", tags.join(", "));
    }
    if let Some(m) = t["message"].as_str() {
        let _ = write!(out, "\nmessage: {m}");
    }
    for c in list(&t["changes"]) {
        let _ = write!(
            out,
            "\n{}: expected {}, actual {}",
            scalar_text(&c["subject"]),
            shown(&c["expected"]),
            shown(&c["actual"])
        );
        if let Some(ev) = c["evidence"].as_str() {
            let _ = write!(out, "\n  evidence: {ev}");
        }
        if let Some(at) = c["observed_at"].as_str() {
            let _ = write!(out, "\n  observed at: {at}");
        }
        for p in list(&c["observed_by"]) {
            let _ = write!(
                out,
                "\n  observed by {}: {}",
                scalar_text(&p["key"]),
                scalar_text(&p["command"])
            );
        }
    }
    out
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn shown(v: &Value) -> String {
    match v {
        Value::Null => "(none)".into(),
        other => scalar_text(other),
    }
}

fn one_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// XML 1.0 allows no control character but tab, newline and carriage
/// return, not even as a reference: the others are dropped. Escaping `>`
/// everywhere also keeps any `]]>` from a host inert.
fn escape(s: &str, in_attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attr => out.push_str("&quot;"),
            // An attribute's line breaks and tabs would be normalized to spaces.
            '\n' | '\r' | '\t' if in_attr => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            '\n' | '\r' | '\t' => out.push(c),
            '\u{FFFE}' | '\u{FFFF}' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn attr(s: &str) -> String {
    escape(s, true)
}

fn body_text(s: &str) -> String {
    escape(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "mode": "check",
            "playbook": "site.yml",
            "hosts": [
                {
                    "host": "gpu-01",
                    "play": "GPU node",
                    "duration_ms": 1500,
                    "tasks": [
                        {
                            "task": "swappiness",
                            "location": "site.yml:9:7",
                            "status": "drift",
                            "duration_ms": 2,
                            "control": {"tags": ["sysctl"]},
                            "changes": [{
                                "subject": "vm.swappiness",
                                "expected": "10",
                                "actual": "60",
                                "evidence": "live value in /proc/sys/vm/swappiness",
                                "observed_at": "2026-11-30T16:00:00Z",
                                "observed_by": [{"key": "sysctl:vm.swappiness", "command": "cat /proc/sys/vm/swappiness"}]
                            }]
                        },
                        {"task": "motd", "item": "a<b", "location": "site.yml:12:7", "status": "ok", "duration_ms": 0},
                        {"task": "elsewhere", "location": "site.yml:14:7", "status": "skipped", "duration_ms": 0},
                        {"task": "required", "location": "site.yml:16:7", "status": "failed", "duration_ms": 0,
                         "message": "/etc/x does not exist\nsecond line"}
                    ]
                },
                {"host": "gpu-02", "play": "", "duration_ms": 0, "tasks": [], "unreachable": "connection refused"}
            ]
        })
    }

    #[test]
    fn snapshot_of_a_small_report() {
        assert_eq!(
            render(&doc()),
            r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nodeprov check site.yml" tests="5" failures="1" errors="2">
  <testsuite name="gpu-01" hostname="gpu-01" tests="4" failures="1" errors="1" skipped="1" time="1.500">
    <testcase classname="GPU node" name="swappiness" time="0.002">
      <failure message="vm.swappiness: 60 → 10" type="drift">control: site.yml:9:7 [sysctl]
vm.swappiness: expected 10, actual 60
  evidence: live value in /proc/sys/vm/swappiness
  observed at: 2026-11-30T16:00:00Z
  observed by sysctl:vm.swappiness: cat /proc/sys/vm/swappiness</failure>
    </testcase>
    <testcase classname="GPU node" name="motd (a&lt;b)" time="0.000"/>
    <testcase classname="GPU node" name="elsewhere" time="0.000">
      <skipped/>
    </testcase>
    <testcase classname="GPU node" name="required" time="0.000">
      <error message="/etc/x does not exist" type="failed">control: site.yml:16:7
message: /etc/x does not exist
second line</error>
    </testcase>
  </testsuite>
  <testsuite name="gpu-02" hostname="gpu-02" tests="1" failures="0" errors="1" skipped="0" time="0.000">
    <testcase classname="site.yml" name="host reachable" time="0.000">
      <error message="unreachable: connection refused" type="failed">connection refused</error>
    </testcase>
  </testsuite>
</testsuites>
"#
        );
    }

    #[test]
    fn host_bytes_cannot_break_the_xml() {
        let hostile = "a]]>b<c>&\"d\x1b[2J\x07e\u{FFFE}\tf\ng";
        assert_eq!(
            escape(hostile, false),
            "a]]&gt;b&lt;c&gt;&amp;\"d[2Je\tf\ng"
        );
        assert_eq!(
            attr(hostile),
            "a]]&gt;b&lt;c&gt;&amp;&quot;d[2Je&#9;f&#10;g"
        );
    }
}
