//! `uri`: an HTTP request from the host, whose answer is registered
//! (`status`, `content`, `json`) and whose status must be one expected.
//!
//! Asking (GET, HEAD) changes nothing, so that request runs as the task's
//! probe, in check mode too, and after every earlier change of the run
//! (the usual use is "is the service I just configured answering?").
//! A method that may change the server (POST, PUT, PATCH, DELETE, OPTIONS)
//! runs as a step, like a command: never in check mode, and changed when
//! it ran. Headers, credentials and bodies reach curl on its standard input
//! (`kit::http`).
//!
//! **`uri`** asks from the host, with curl. A GET or HEAD is asked in the
//! task's probe: asking changes nothing, so it runs in check mode too, and
//! after every earlier change of the run. A method that may change the server
//! (POST, PUT, PATCH, DELETE, OPTIONS) is sent as a step in apply, like a
//! command: it reports changed, and in check mode it is not sent and reports
//! unknown with the reason (Ansible's `uri` does not support check mode for
//! them either); it follows redirects only with `follow_redirects: true`
//! given, as Ansible's default does. `body` is sent as text (`raw`), as JSON
//! (`json`, with `Content-Type: application/json` unless a header sets one) or
//! as a form (`form-urlencoded`, from a mapping); the body, headers and
//! credentials reach curl on its standard input, as for `get_url`. `creates`
//! and `removes` skip the request as they skip a command. It registers
//! `status`, `url` (after redirects), `msg`, `json` (a JSON body) and, with
//! `return_content`, `content`, from the probe or from the step that sent the
//! request. A status not in `status_code` (or no answer) fails the task.
//! `form-multipart` bodies and `dest` are not supported.
//!
//! # Example
//!
//! ```yaml
//! - name: Wait until the DCGM exporter serves the GPU metrics
//!   uri:
//!     url: http://localhost:9400/metrics
//!     return_content: true
//!     timeout: 10
//!   register: dcgm_metrics
//!   retries: 10
//!   delay: 6
//!   until: dcgm_metrics.status == 200
//! ```

use serde_json::Value;

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::FileFact;
use crate::modules::kit::http::{
    config_line, curl_line, form_urlencoded, shown_url, Auth, AuthArgs,
};
use crate::modules::kit::module::{AnsiblePlugin, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, scalar_text, Choice, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const URI: ModuleSpec = ModuleSpec {
    name: "uri",
    source: file!(),
    aliases: &["ansible.builtin.uri"],
    params: &UriArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[("src", false), ("remote_src", true)],
        writes_files: false,
        lacks: &[(
            "src",
            "a controller file sent as the body is not supported natively; give it as `body`",
        )],
    }),
    controller_file: None,
    build,
};

const STATUS_MARK: &str = "\n@@nodeprov-status ";

choices! {
    enum Method {
        Get = "GET" | "get",
        Head = "HEAD" | "head",
        Post = "POST" | "post",
        Put = "PUT" | "put",
        Patch = "PATCH" | "patch",
        Delete = "DELETE" | "delete",
        Options = "OPTIONS" | "options",
    }
}

choices! {
    enum BodyFormat {
        Raw = "raw",
        Json = "json",
        Form = "form-urlencoded",
        Multipart = "form-multipart",
    }
}

module_params! {
    struct UriArgs {
        /// http or https URL, asked from the host
        url: String,
        /// the request's method: GET and HEAD are asked in the probe, the others sent in apply only
        method: Method = Method::Get,
        /// the request body: text, or a mapping or list for json and form-urlencoded
        body: Option<Value>,
        /// how a body that is not text is encoded (form-multipart is refused)
        body_format: BodyFormat = BodyFormat::Raw,
        /// the statuses that count as success (default 200)
        status_code: Vec<String>,
        /// return the body as `content`
        return_content: bool = false,
        /// skip the request when this path exists on the host
        creates: Option<String>,
        /// skip the request unless this path exists on the host
        removes: Option<String>,
        /// false: accept any TLS certificate
        validate_certs: bool = true,
        /// follow redirects (for methods other than GET and HEAD only when given)
        follow_redirects: bool = true,
        /// seconds the whole request may take
        timeout: Option<i64>,
        ..auth: AuthArgs
    }
}

/// One request: curl's options (quoted, no secret), the URL, and the
/// config lines curl reads on its standard input.
struct Request {
    options: String,
    url: String,
    config: Vec<String>,
    /// What the key shows of the URL, headers and credentials.
    shown: String,
}

impl Request {
    /// curl asking, its answer's status and final URL appended to the body.
    fn curl(&self, redirect: &str) -> String {
        let format = quote(&format!("{STATUS_MARK}%{{http_code}} %{{url_effective}}"));
        curl_line(
            &format!("curl{} -w {format}{redirect}", self.options),
            &self.url,
            &self.config,
        )
    }
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

/// The answer in curl's output; `None` without the status line.
fn answer_of(stdout: &str, stderr: &str) -> Option<Answer> {
    let (body, tail) = stdout.rsplit_once(STATUS_MARK)?;
    let (status, url) = tail
        .trim_end()
        .split_once(' ')
        .unwrap_or((tail.trim_end(), ""));
    Some(Answer {
        status: status.parse().ok()?,
        url: url.to_string(),
        body: body.to_string(),
        error: stderr.trim().to_string(),
    })
}

const NEEDS_CURL: &str =
    "command -v curl >/dev/null 2>&1 || { echo 'uri needs curl on the host' >&2; exit 127; }\n";

struct UriFact;

impl Fact for UriFact {
    type Query = Request;
    type Value = Answer;

    fn key(q: &Request) -> String {
        format!("uri:{} {}", q.options, q.shown)
    }

    fn script(q: &Request) -> String {
        format!("{NEEDS_CURL}{}exit 0", q.curl(""))
    }

    fn parse(q: &Request, r: &ProbeResult) -> Result<Answer, ModuleError> {
        let bad = |d: &str| fact::bad(Self::key(q), format!("{d}: {}", r.stderr.trim()));
        if r.rc != 0 {
            return Err(bad("cannot ask"));
        }
        answer_of(&r.stdout, &r.stderr).ok_or_else(|| bad("no status"))
    }

    fn render(a: &Answer) -> ProbeResult {
        ProbeResult {
            stderr: a.error.clone(),
            ..ProbeResult::ok(format!("{}{STATUS_MARK}{:03} {}", a.body, a.status, a.url))
        }
    }
}

struct Uri {
    /// The URL as reports show it.
    shown: String,
    method: Method,
    request: Request,
    expect: Vec<u16>,
    return_content: bool,
    creates: Option<String>,
    removes: Option<String>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UriArgs::read(p)?;
    if !(a.url.starts_with("http://") || a.url.starts_with("https://")) {
        let url = shown_url(&a.url);
        return Err(p.error("url", format!("'{url}' is not an http or https URL")));
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
    let reads = matches!(a.method, Method::Get | Method::Head);
    let mut options = format!(" -sS --max-time {timeout}");
    match a.method {
        Method::Get => {}
        Method::Head => options.push_str(" -I"),
        m => options.push_str(&format!(" -X {}", m.name())),
    }
    if !a.validate_certs {
        options.push_str(" --insecure");
    }
    // Ansible's default follows redirects only for GET and HEAD.
    if a.follow_redirects && (reads || p.has("follow_redirects")) {
        options.push_str(" -L");
    }
    let auth = Auth::read(p, a.auth)?;
    let mut config = auth.config();
    let key = auth.key_of(&a.url);
    if let Some(body) = body_of(p, a.body, a.body_format, reads)? {
        let kind = match a.body_format {
            BodyFormat::Json => Some("application/json"),
            BodyFormat::Form => Some("application/x-www-form-urlencoded"),
            _ => None,
        };
        if let Some(kind) = kind.filter(|_| !auth.has_header("Content-Type")) {
            config.push(config_line("header", &format!("Content-Type: {kind}")));
        }
        // `data-raw`: a body starting with '@' is text, not a file to read.
        config.push(config_line("data-raw", &body));
    }
    Ok(Box::new(Uri {
        shown: shown_url(&a.url),
        request: Request {
            options,
            url: a.url,
            shown: key,
            config,
        },
        method: a.method,
        expect,
        return_content: a.return_content,
        creates: a.creates,
        removes: a.removes,
    }))
}

/// The body as sent, encoded as `body_format` says.
fn body_of(
    p: &Params,
    body: Option<Value>,
    format: BodyFormat,
    reads: bool,
) -> Result<Option<String>, ParamError> {
    if format == BodyFormat::Multipart {
        return Err(p.unsupported(
            "body_format",
            "not supported by nodeprov: body_format form-multipart",
        ));
    }
    let Some(body) = body else {
        return Ok(None);
    };
    if reads {
        return Err(p.unsupported("body", "not supported by nodeprov: a body with GET or HEAD"));
    }
    Ok(Some(match (body, format) {
        (Value::String(text), _) => text,
        (v, BodyFormat::Json) => v.to_string(),
        (Value::Object(fields), BodyFormat::Form) => form_urlencoded(&fields),
        (_, BodyFormat::Form) => {
            return Err(p.error("body", "a form-urlencoded body is a mapping or text"))
        }
        (v, _) => scalar_text(&v),
    }))
}

impl Uri {
    /// A method other than GET and HEAD may change the server.
    fn sends(&self) -> bool {
        !matches!(self.method, Method::Get | Method::Head)
    }

    /// Why the request is skipped, when `creates` or `removes` says so.
    fn skipped(&self, facts: &Facts) -> Result<Option<String>, ModuleError> {
        if let Some(c) = &self.creates {
            if FileFact::read(facts, c)?.is_some() {
                return Ok(Some(format!("skipped: {c} exists")));
            }
        }
        if let Some(r) = &self.removes {
            if FileFact::read(facts, r)?.is_none() {
                return Ok(Some(format!("skipped: {r} does not exist")));
            }
        }
        Ok(None)
    }

    fn expected_text(&self) -> String {
        let want: Vec<String> = self.expect.iter().map(u16::to_string).collect();
        want.join(" or ")
    }

    /// Sends the request, prints the answer as the probe does, and fails
    /// on a status not expected.
    fn send_step(&self) -> String {
        let ok: Vec<String> = self.expect.iter().map(u16::to_string).collect();
        let msg = quote(&format!(
            "{}: expected status {}, got ",
            self.shown,
            self.expected_text()
        ));
        format!(
            "{NEEDS_CURL}o=$(mktemp) || exit 1\n{}\
             s=$(tail -n 1 \"$o\"); cat \"$o\"; rm -f \"$o\"; s=${{s#@@nodeprov-status }}; s=${{s%% *}}\n\
             case $s in {}) ;; *) echo {msg}\"$s\" >&2; exit 1 ;; esac",
            self.request.curl(" >\"$o\""),
            ok.join("|")
        )
    }

    /// Ansible's return values for an answer.
    fn returns(&self, a: &Answer) -> serde_json::Map<String, Value> {
        let mut r = serde_json::Map::new();
        r.insert("status".into(), a.status.into());
        r.insert("url".into(), a.url.clone().into());
        r.insert("msg".into(), format!("OK ({} bytes)", a.body.len()).into());
        if let Ok(json) = serde_json::from_str::<Value>(&a.body) {
            if json.is_object() || json.is_array() {
                r.insert("json".into(), json);
            }
        }
        if self.return_content {
            r.insert("content".into(), a.body.clone().into());
        }
        r
    }

    fn plan_send(&self) -> Plan {
        let mut plan = Plan::noop();
        let method = self.method.name();
        plan.changes.push(Change::new(
            self.shown.clone(),
            None,
            Some(format!("{method} sent")),
        ));
        plan.steps.push(self.send_step());
        plan.unknown = Some(format!(
            "a {method} may change the server: it is sent in apply only, not in check mode"
        ));
        plan
    }
}

impl Module for Uri {
    fn probes(&self) -> Vec<Probe> {
        let files = self.creates.iter().chain(self.removes.iter());
        let ask = (!self.sends()).then(|| UriFact::probe(&self.request));
        files.map(|p| FileFact::probe(p)).chain(ask).collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        if let Some(why) = self.skipped(facts)? {
            let mut plan = Plan::noop();
            plan.notes.push(why.clone());
            plan.returns.insert("msg".into(), why.into());
            return Ok(plan);
        }
        if self.sends() {
            return Ok(self.plan_send());
        }
        let a = UriFact::read(facts, &self.request)?;
        if !self.expect.contains(&a.status) {
            let why = if a.status == 0 {
                format!("no answer: {}", a.error)
            } else {
                format!("status {}", a.status)
            };
            return Err(ModuleError::Asserted(format!(
                "{}: {why}, expected {}",
                self.shown,
                self.expected_text()
            )));
        }
        let mut plan = Plan::noop();
        plan.returns = self.returns(&a);
        Ok(plan)
    }

    fn is_command(&self) -> bool {
        self.sends()
    }

    fn command_returns(&self, output: &ProbeResult) -> serde_json::Map<String, Value> {
        answer_of(&output.stdout, &output.stderr)
            .map(|a| self.returns(&a))
            .unwrap_or_default()
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
        config: Vec::new(),
        shown: "http://h/".into(),
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
    use crate::base::shell::mask_secrets;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
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
            p.script.contains("curl -sS --max-time 5 --insecure -L -w"),
            "{}",
            p.script
        );
        assert!(
            p.script.ends_with(
                " --config - <<'NODEPROV_SECRET'\n\
                 header = \"Authorization: Bearer $(x)\"\n\
                 url = \"https://api:6443/healthz\"\nNODEPROV_SECRET\nexit 0"
            ),
            "{}",
            p.script
        );
        assert!(!p.key.contains("Bearer"), "{}", p.key);
        assert!(!mask_secrets(&p.script).contains("Bearer"));
        let url = "https://bob:pw-7@api/v1?access_token=tk-7";
        let p = build_test(&URI, json!({"url": url}))
            .unwrap()
            .probes()
            .pop()
            .unwrap();
        assert!(p
            .script
            .contains(&format!("url = \"{url}\"\nNODEPROV_SECRET")));
        for shown in [&p.key, &mask_secrets(&p.script)] {
            assert!(
                !shown.contains("pw-7") && !shown.contains("tk-7"),
                "{shown}"
            );
        }
        assert!(
            p.key.contains(" https://api/v1?… (credentials "),
            "{}",
            p.key
        );
        assert!(m.reads_everything() && !m.is_command());
        assert!(
            build_error(&URI, json!({"url": "https://h/", "method": "TRACE"}))
                .contains("not a valid method")
        );
        assert!(build_error(
            &URI,
            json!({"url": "https://h/", "method": "POST",
                                     "body_format": "form-multipart", "body": {"a": 1}})
        )
        .contains("not supported by nodeprov: body_format form-multipart"));
        assert!(build_error(&URI, json!({"url": "https://h/", "body": "x"}))
            .contains("not supported by nodeprov: a body with GET"));
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

    fn send_plan(params: Value) -> (Box<dyn Module>, Plan) {
        let m = build_test(&URI, params).unwrap();
        let plan = m.plan(&facts_of(&[])).unwrap();
        assert_sh_syntax(&*m, &plan);
        (m, plan)
    }

    #[test]
    fn a_post_is_a_step_never_a_probe_and_its_secrets_stay_on_stdin() {
        let (m, plan) = send_plan(json!({
            "url": "http://h/api", "method": "post", "body_format": "json",
            "body": {"name": "it's $(reboot)"}, "status_code": [200, 201],
            "url_username": "admin", "url_password": "s3cr'et", "force_basic_auth": true}));
        assert!(m.probes().is_empty(), "nothing is sent in the probe");
        assert!(m.is_command());
        assert!(plan
            .unknown
            .as_deref()
            .unwrap()
            .contains("not in check mode"));
        assert_eq!(
            plan.changes[0].to_string(),
            "http://h/api: (none) → POST sent"
        );
        let step = &plan.steps[0];
        assert!(
            step.contains("curl -sS --max-time 30 -X POST -w "),
            "a POST follows no redirect unless asked: {step}"
        );
        assert!(step.contains("user = \"admin:s3cr'et\"\nbasic\n"), "{step}");
        assert!(
            step.contains("header = \"Content-Type: application/json\"\n"),
            "{step}"
        );
        assert!(
            step.contains(r#"data-raw = "{\"name\":\"it's $(reboot)\"}""#),
            "{step}"
        );
        assert!(step.contains("case $s in 200|201) ;;"), "{step}");
        let shown = mask_secrets(step);
        assert!(
            !shown.contains("s3cr") && !shown.contains("reboot"),
            "{shown}"
        );
        let text = format!("{:?}{:?}{:?}", plan.changes, plan.notes, plan.unknown);
        assert!(!text.contains("s3cr"), "{text}");

        let out = ProbeResult::ok(format!("{{\"id\": 7}}{STATUS_MARK}201 http://h/api"));
        let r = m.command_returns(&out);
        assert_eq!((&r["status"], &r["json"]), (&json!(201), &json!({"id": 7})));
    }

    #[test]
    fn bodies_are_encoded_as_body_format_says() {
        let step = |params: Value| send_plan(params).1.steps.remove(0);
        let form = step(
            json!({"url": "http://h/", "method": "PUT", "body_format": "form-urlencoded",
                               "body": {"a": "x y", "b": "&"}, "follow_redirects": true}),
        );
        assert!(form.contains("-X PUT -L -w"), "{form}");
        assert!(form.contains("data-raw = \"a=x+y&b=%26\""), "{form}");
        assert!(form.contains("Content-Type: application/x-www-form-urlencoded"));
        let raw = step(
            json!({"url": "http://h/", "method": "DELETE", "body": "@/etc/shadow",
                              "headers": {"content-type": "text/plain"}}),
        );
        assert!(raw.contains("data-raw = \"@/etc/shadow\""), "{raw}");
        assert!(!raw.contains("Content-Type"), "{raw}");
        let options = step(json!({"url": "http://h/", "method": "OPTIONS"}));
        assert!(!options.contains("data-raw"), "{options}");
    }

    #[test]
    fn creates_and_removes_skip_the_request() {
        use crate::modules::kit::files::FileState;
        let m = build_test(
            &URI,
            json!({"url": "http://h/", "method": "POST",
                                        "creates": "/etc/done", "removes": "/etc/todo"}),
        )
        .unwrap();
        let keys: Vec<String> = m.probes().into_iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [FileFact::key("/etc/done"), FileFact::key("/etc/todo")]
        );
        let file = Some(FileState::written("", 0o644, "root", "root"));
        let mut facts = facts_of(&[]);
        facts.insert(FileFact::key("/etc/done"), FileFact::render(&file));
        facts.insert(FileFact::key("/etc/todo"), FileFact::render(&file));
        let plan = m.plan(&facts).unwrap();
        assert!(plan.steps.is_empty());
        assert_eq!(plan.notes, ["skipped: /etc/done exists"]);
        facts.insert(FileFact::key("/etc/done"), FileFact::render(&None));
        assert_eq!(m.plan(&facts).unwrap().steps.len(), 1);
        facts.insert(FileFact::key("/etc/todo"), FileFact::render(&None));
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.notes, ["skipped: /etc/todo does not exist"]);
    }
}
