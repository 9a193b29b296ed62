//! `uri`: an HTTP GET or HEAD from the host, whose answer is registered
//! (`status`, `content`, `json`) and whose status must be one expected.
//!
//! Asking changes nothing, so the request runs as the task's probe, in
//! check mode too, and after every earlier change of the run (the usual
//! use is "is the service I just configured answering?"). Methods that
//! change the server (POST, PUT, DELETE…) are refused.

use serde_json::Value;

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};
use crate::remote::shell::quote;

pub(crate) const URI: ModuleSpec = ModuleSpec {
    name: "uri",
    aliases: &["ansible.builtin.uri"],
    params: &UriArgs::SPEC,
    free_form: None,
    build,
};

const STATUS_MARK: &str = "\n@@nodeprov-status ";

choices! {
    enum Method {
        Get = "GET" | "get",
        Head = "HEAD" | "head",
    }
}

module_params! {
    struct UriArgs {
        /// http or https URL, asked from the host
        url: String,
        /// GET or HEAD (methods that change the server are refused)
        method: Method = Method::Get,
        /// the statuses that count as success (default 200)
        status_code: Vec<String>,
        /// return the body as `content`
        return_content: bool = false,
        /// request headers
        headers: Option<serde_json::Map<String, Value>>,
        /// false: accept any TLS certificate
        validate_certs: bool = true,
        /// follow redirects
        follow_redirects: bool = true,
        /// seconds the whole request may take
        timeout: Option<i64>,
    }
}

/// What the probe asks: curl's options (quoted) and the URL.
struct Request {
    options: String,
    url: String,
}

/// What the host was answered.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    /// 0 when no HTTP answer came (connection refused, timeout).
    status: u16,
    /// The final URL, after redirects.
    url: String,
    body: String,
    /// Why no answer came.
    error: String,
}

struct UriFact;

impl Fact for UriFact {
    type Query = Request;
    type Value = Answer;

    fn key(q: &Request) -> String {
        format!("uri:{} {}", q.options, q.url)
    }

    fn script(q: &Request) -> String {
        format!(
            "command -v curl >/dev/null 2>&1 || {{ echo 'uri needs curl on the host' >&2; exit 127; }}\n\
             curl{} -w {} -- {}; exit 0",
            q.options,
            quote(&format!("{STATUS_MARK}%{{http_code}} %{{url_effective}}")),
            quote(&q.url)
        )
    }

    fn parse(q: &Request, r: &ProbeResult) -> Result<Answer, ModuleError> {
        let bad = |d: &str| fact::bad(Self::key(q), format!("{d}: {}", r.stderr.trim()));
        if r.rc != 0 {
            return Err(bad("cannot ask"));
        }
        let (body, tail) = r
            .stdout
            .rsplit_once(STATUS_MARK)
            .ok_or_else(|| bad("no status"))?;
        let (status, url) = tail
            .trim_end()
            .split_once(' ')
            .unwrap_or((tail.trim_end(), ""));
        Ok(Answer {
            status: status.parse().map_err(|_| bad("bad status"))?,
            url: url.to_string(),
            body: body.to_string(),
            error: r.stderr.trim().to_string(),
        })
    }

    fn render(a: &Answer) -> ProbeResult {
        ProbeResult {
            stderr: a.error.clone(),
            ..ProbeResult::ok(format!("{}{STATUS_MARK}{:03} {}", a.body, a.status, a.url))
        }
    }
}

struct Uri {
    url: String,
    request: Request,
    expect: Vec<u16>,
    return_content: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UriArgs::read(p)?;
    if !(a.url.starts_with("http://") || a.url.starts_with("https://")) {
        return Err(p.error("url", format!("'{}' is not an http or https URL", a.url)));
    }
    let expect = if a.status_code.is_empty() {
        vec![200]
    } else {
        a.status_code
            .iter()
            .map(|s| s.trim().parse::<u16>())
            .collect::<Result<_, _>>()
            .map_err(|_| p.error("status_code", "status_code must be HTTP status numbers"))?
    };
    let timeout = a.timeout.unwrap_or(30);
    if timeout <= 0 {
        return Err(p.error("timeout", "timeout must be a positive number of seconds"));
    }
    let mut command = format!(" -sS --max-time {timeout}");
    if a.method == Method::Head {
        command.push_str(" -I");
    }
    if !a.validate_certs {
        command.push_str(" --insecure");
    }
    if a.follow_redirects {
        command.push_str(" -L");
    }
    for (name, value) in a.headers.iter().flatten() {
        let value = match value {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        command.push_str(&format!(" -H {}", quote(&format!("{name}: {value}"))));
    }
    Ok(Box::new(Uri {
        request: Request {
            options: command,
            url: a.url.clone(),
        },
        url: a.url,
        expect,
        return_content: a.return_content,
    }))
}

impl Module for Uri {
    fn probes(&self) -> Vec<Probe> {
        vec![UriFact::probe(&self.request)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let a = UriFact::read(facts, &self.request)?;
        if !self.expect.contains(&a.status) {
            let why = if a.status == 0 {
                format!("no answer: {}", a.error)
            } else {
                format!("status {}", a.status)
            };
            let want: Vec<String> = self.expect.iter().map(u16::to_string).collect();
            return Err(ModuleError::Asserted(format!(
                "{}: {why}, expected {}",
                self.url,
                want.join(" or ")
            )));
        }
        let mut plan = Plan::noop();
        let r = &mut plan.returns;
        r.insert("status".into(), a.status.into());
        r.insert("url".into(), a.url.clone().into());
        r.insert("msg".into(), format!("OK ({} bytes)", a.body.len()).into());
        if let Ok(json) = serde_json::from_str::<Value>(&a.body) {
            if json.is_object() || json.is_array() {
                r.insert("json".into(), json);
            }
        }
        if self.return_content {
            r.insert("content".into(), a.body.into());
        }
        Ok(plan)
    }

    /// The question is only worth asking once earlier tasks have run.
    fn reads_everything(&self) -> bool {
        true
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = Request {
        options: " -sS".into(),
        url: "http://h/".into(),
    };
    rt.check::<UriFact>(
        &q,
        Answer {
            status: 200,
            url: "http://h/".into(),
            body: "{\"ok\": true}\n".into(),
            error: String::new(),
        },
    );
    rt.check::<UriFact>(
        &q,
        Answer {
            status: 0,
            url: "http://h/".into(),
            body: String::new(),
            error: "curl: (7) Failed to connect".into(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test, facts_of};
    use serde_json::json;

    fn plan_on(params: Value, stdout: &str, stderr: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&URI, params).unwrap();
        let probe = m.probes().pop().unwrap();
        let mut facts = facts_of(&[]);
        facts.insert(
            probe.key,
            ProbeResult {
                stderr: stderr.into(),
                ..ProbeResult::ok(stdout)
            },
        );
        m.plan(&facts)
    }

    #[test]
    fn the_request_is_one_quoted_curl_in_the_probe() {
        let m = build_test(
            &URI,
            json!({"url": "https://api:6443/healthz", "validate_certs": false,
                   "headers": {"Authorization": "Bearer $(x)"}, "timeout": 5}),
        )
        .unwrap();
        let p = m.probes().pop().unwrap();
        assert!(
            p.script
                .contains("curl -sS --max-time 5 --insecure -L -H 'Authorization: Bearer $(x)' -w"),
            "{}",
            p.script
        );
        assert!(p.script.ends_with(" -- https://api:6443/healthz; exit 0"));
        assert!(m.reads_everything());
        assert!(
            build_error(&URI, json!({"url": "https://h/", "method": "POST"}))
                .contains("not a valid method")
        );
        assert!(build_error(&URI, json!({"url": "ftp://h/"})).contains("not an http"));
        assert!(
            build_error(&URI, json!({"url": "http://h/", "status_code": "ok"}))
                .contains("status numbers")
        );
    }

    #[test]
    fn the_answer_is_returned_and_its_status_checked() {
        let body = "{\"ok\": true}";
        let out = format!("{body}{STATUS_MARK}200 http://h/x");
        let plan = plan_on(
            json!({"url": "http://h/x", "return_content": true}),
            &out,
            "",
        )
        .unwrap();
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        assert_eq!(plan.returns["status"], 200);
        assert_eq!(plan.returns["content"], body);
        assert_eq!(plan.returns["json"], json!({"ok": true}));
        let plan = plan_on(json!({"url": "http://h/x"}), &out, "").unwrap();
        assert!(!plan.returns.contains_key("content"));
        let err = plan_on(
            json!({"url": "http://h/x", "status_code": [200, 204]}),
            &format!("{STATUS_MARK}503 http://h/x"),
            "",
        )
        .unwrap_err();
        assert_eq!(
            err,
            ModuleError::Asserted("http://h/x: status 503, expected 200 or 204".into())
        );
        let err = plan_on(
            json!({"url": "http://h/x"}),
            &format!("{STATUS_MARK}000 http://h/x"),
            "curl: (7) Failed to connect",
        )
        .unwrap_err();
        assert!(matches!(err, ModuleError::Asserted(m) if m.contains("no answer: curl: (7)")));
    }
}
