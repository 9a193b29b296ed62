//! What `get_url`, `uri` and `unarchive` send: the URL, headers and
//! credentials (and a request body), handed to curl as a config on its
//! standard input, or the URL alone to wget on its standard input. That
//! text is on no command line another user could read in `ps`, and
//! reports mask it (`shell::secret_stdin`); probe keys and messages show a
//! URL without its user, password and query (`shown_url`).

use serde_json::Value;

use crate::base::shell::{keyed_digest, secret_stdin};
use crate::modules::params::{module_params, scalar_text, ParamError, Params};

module_params! {
    /// Headers and credentials, as `get_url` and `uri` take them.
    pub(crate) struct AuthArgs {
        /// request headers, a mapping
        headers: Option<serde_json::Map<String, Value>>,
        /// user name for HTTP authentication
        url_username: Option<String>,
        /// its password, never shown in reports
        url_password: Option<String>,
        /// send the credentials without waiting for the server to ask
        force_basic_auth: bool = false,
    }
}

/// Headers and credentials of one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Auth {
    headers: Vec<(String, String)>,
    /// `name:password`, as curl's `user` takes it.
    user: Option<String>,
    force_basic_auth: bool,
}

impl Auth {
    /// Checks the parameters: header names and values that stay one line,
    /// a password only with a user name.
    pub(crate) fn read(p: &Params, a: AuthArgs) -> Result<Auth, ParamError> {
        let mut auth = Auth {
            force_basic_auth: a.force_basic_auth,
            ..Auth::default()
        };
        for (name, value) in a.headers.into_iter().flatten() {
            let value = scalar_text(&value);
            if name.is_empty() || name.contains([':', '\r', '\n', ' ']) {
                return Err(p.error("headers", format!("'{name}' is not a header name")));
            }
            if value.contains(['\r', '\n']) {
                return Err(p.error("headers", format!("header {name} has a line break")));
            }
            auth.headers.push((name, value));
        }
        auth.user = match (a.url_username, a.url_password) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(p.error("url_password", "url_password needs url_username"))
            }
            (Some(u), _) if u.contains(':') => {
                return Err(p.error("url_username", "a user name with ':' cannot be sent"))
            }
            (Some(u), pw) => Some(format!("{u}:{}", pw.unwrap_or_default())),
        };
        Ok(auth)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.user.is_none()
    }

    /// Whether a header of this name is set, whatever its case.
    pub(crate) fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// curl config lines. Without `force_basic_auth` curl asks first and
    /// answers the server's challenge (`anyauth`), as Ansible does.
    pub(crate) fn config(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .headers
            .iter()
            .map(|(n, v)| config_line("header", &format!("{n}: {v}")))
            .collect();
        if let Some(user) = &self.user {
            lines.push(config_line("user", user));
            let scheme = if self.force_basic_auth {
                "basic"
            } else {
                "anyauth"
            };
            lines.push(scheme.to_string());
        }
        lines
    }

    /// What a probe key shows of a request for `url`: the URL as
    /// [`shown_url`] shows it and, when anything is left out, a keyed
    /// digest of the whole, which tells apart within one run requests
    /// whose URL, headers or credentials differ without showing them.
    pub(crate) fn key_of(&self, url: &str) -> String {
        let shown = shown_url(url);
        let mut hidden = self.config();
        if shown != url {
            hidden.push(url.to_string());
        }
        if hidden.is_empty() {
            return shown;
        }
        format!("{shown} (credentials {})", keyed_digest(&hidden.join("\n")))
    }
}

/// A URL as reports show it: without the user and password before its
/// host, and with its query and fragment, where tokens travel, cut to `?…`.
pub(crate) fn shown_url(url: &str) -> String {
    split_url(url).1
}

/// Whether a URL carries a user (and password) before its host.
pub(crate) fn has_userinfo(url: &str) -> bool {
    split_url(url).0.is_some()
}

/// A URL's user and password, and the URL as [`shown_url`] shows it.
fn split_url(url: &str) -> (Option<&str>, String) {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (&url[..scheme.len() + 3], rest),
        None => ("", url),
    };
    let (rest, cut) = match rest.find(['?', '#']) {
        Some(i) => (&rest[..i], "?…"),
        None => (rest, ""),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (Some(userinfo), host),
        None => (None, authority),
    };
    (userinfo, format!("{scheme}{host}{path}{cut}"))
}

/// `option = "value"` in curl's config syntax, the value escaped so that
/// it stays on its one line.
pub(crate) fn config_line(option: &str, value: &str) -> String {
    let mut out = format!("{option} = \"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `curl` and its options asking for `url`, reading the URL and `lines`
/// as its config from standard input: no part of the URL (a user, a
/// password, a token in the query) is on its command line. Ends its line.
pub(crate) fn curl_line(curl: &str, url: &str, lines: &[String]) -> String {
    let mut config = lines.to_vec();
    config.push(config_line("url", url));
    secret_stdin(&format!("{curl} --config -"), &config.join("\n"))
}

/// `wget` and its options asking for `url`, which it reads from standard
/// input (`-i -`) as curl reads its config: no part of the URL is on its
/// command line. A line break, which would end the URL there, is sent
/// percent-encoded. Ends its line.
pub(crate) fn wget_line(wget: &str, url: &str) -> String {
    let one_line = url.replace('\r', "%0D").replace('\n', "%0A");
    secret_stdin(&format!("{wget} -i -"), &one_line)
}

/// A mapping as an HTML form sends it (`application/x-www-form-urlencoded`,
/// Python's `urlencode`).
pub(crate) fn form_urlencoded(fields: &serde_json::Map<String, Value>) -> String {
    let encode = |text: &str| {
        let mut out = String::new();
        for b in text.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                b => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(&scalar_text(v))))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(user: &str, force_basic_auth: bool) -> Auth {
        Auth {
            headers: vec![("X-Token".into(), "a\"b\\c".into())],
            user: Some(user.into()),
            force_basic_auth,
        }
    }

    #[test]
    fn config_lines_escape_and_credentials_stay_out_of_the_key() {
        let a = auth("u:p\n\"$(x)", true);
        assert_eq!(
            a.config(),
            [
                r#"header = "X-Token: a\"b\\c""#,
                r#"user = "u:p\n\"$(x)""#,
                "basic"
            ]
        );
        let key = a.key_of("https://h/x");
        assert!(!key.contains("u:p") && !key.contains("a\"b"), "{key}");
        assert!(key.starts_with("https://h/x (credentials "), "{key}");
        assert_eq!(key, a.key_of("https://h/x"));
        let other = auth("u:q", false);
        assert_ne!(other.key_of("https://h/x"), key);
        assert_eq!(other.config()[2], "anyauth");
        assert!(a.has_header("x-token"));
        assert_eq!(Auth::default().key_of("https://h/x"), "https://h/x");
        assert_eq!(
            curl_line("curl -sS", "u v", &[]),
            "curl -sS --config - <<'NODEPROV_SECRET'\nurl = \"u v\"\nNODEPROV_SECRET\n"
        );
        assert_eq!(
            wget_line("wget -q", "u\nNODEPROV_SECRET\r"),
            "wget -q -i - <<'NODEPROV_SECRET'\nu%0ANODEPROV_SECRET%0D\nNODEPROV_SECRET\n"
        );
        let form = serde_json::json!({"name": "a b&c=d", "n": 1, "é": "~"});
        assert_eq!(
            form_urlencoded(form.as_object().unwrap()),
            "name=a+b%26c%3Dd&n=1&%C3%A9=~"
        );
    }

    #[test]
    fn a_shown_url_has_no_user_password_or_query() {
        let url = "https://bob:pa%40ss@h:8443/a/b@c?access_token=t0k#frag";
        assert_eq!(shown_url(url), "https://h:8443/a/b@c?…");
        assert_eq!(shown_url("http://h/x"), "http://h/x");
        assert_eq!(shown_url("http://u@h"), "http://h");
        assert!(has_userinfo(url) && has_userinfo("ftp://u@h"));
        assert!(!has_userinfo("http://h/@scope/pkg?u=a@b"));
        let a = Auth::default();
        let (one, two) = (a.key_of("http://h/x?t=1"), a.key_of("http://h/x?t=2"));
        assert!(
            one.starts_with("http://h/x?… (credentials ") && one != two,
            "{one}"
        );
        assert!(!a.key_of(url).contains("bob") && !a.key_of(url).contains("t0k"));
    }
}
