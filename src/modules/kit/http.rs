//! What `get_url` and `uri` send besides the URL: headers and credentials
//! (and a request body), handed to curl as a config on its standard input.
//! A config line is on no command line another user could read in `ps`,
//! and reports mask it (`shell::secret_stdin`); probe keys name only what
//! is not secret.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use serde_json::Value;

use crate::modules::params::{module_params, scalar_text, ParamError, Params};
use crate::remote::shell::{quote, secret_stdin};

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

    /// Tells apart, within one run, requests whose headers or credentials
    /// differ, without showing them: a keyed hash whose key is new each run.
    pub(crate) fn key_tag(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
        let mut h = KEY.get_or_init(Default::default).build_hasher();
        h.write(self.config().join("\n").as_bytes());
        format!(" (credentials {:016x})", h.finish())
    }
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

/// `curl` and its options asking for `url`, reading `lines` as its
/// config from standard input when there are any; ends its line.
pub(crate) fn curl_line(curl: &str, url: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return format!("{curl} -- {}\n", quote(url));
    }
    secret_stdin(
        &format!("{curl} --config - -- {}", quote(url)),
        &lines.join("\n"),
    )
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
        let tag = a.key_tag();
        assert!(!tag.contains("u:p") && !tag.contains("a\"b"), "{tag}");
        assert_eq!(tag, a.key_tag());
        let other = auth("u:q", false);
        assert_ne!(other.key_tag(), tag);
        assert_eq!(other.config()[2], "anyauth");
        assert!(a.has_header("x-token"));
        assert_eq!(Auth::default().key_tag(), "");
        assert_eq!(curl_line("curl", "u v", &[]), "curl -- 'u v'\n");
        let form = serde_json::json!({"name": "a b&c=d", "n": 1, "é": "~"});
        assert_eq!(
            form_urlencoded(form.as_object().unwrap()),
            "name=a+b%26c%3Dd&n=1&%C3%A9=~"
        );
    }
}
