//! Everything a ufw task compares, read in one probe: whether ufw runs
//! (`ufw status`), its default policies (`/etc/default/ufw`), its log level
//! (`/etc/ufw/ufw.conf`) and its rules (`ufw show added`, which reads
//! ufw's own rule files and so is the same whether ufw runs or not). ufw
//! translates its messages, so it answers in the C locale.

use std::collections::BTreeMap;

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Found {
    Missing,
    Active,
    Inactive,
}

impl Found {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Found::Missing => "missing",
            Found::Active => "active",
            Found::Inactive => "inactive",
        }
    }
}

/// The `/etc/default/ufw` key of each direction `ufw default` takes.
pub(crate) const POLICY_KEYS: [(&str, &str); 3] = [
    ("incoming", "DEFAULT_INPUT_POLICY"),
    ("outgoing", "DEFAULT_OUTPUT_POLICY"),
    ("routed", "DEFAULT_FORWARD_POLICY"),
];

/// ufw's policy words and the iptables targets the file holds.
const POLICY_WORDS: [(&str, &str); 3] =
    [("allow", "ACCEPT"), ("deny", "DROP"), ("reject", "REJECT")];

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UfwState {
    pub found: Found,
    /// ufw's policy word (`deny`) by direction (`incoming`).
    pub policies: BTreeMap<String, String>,
    /// `LOGLEVEL` of ufw.conf (`off`, `low`…), when set.
    pub logging: Option<String>,
    /// The lines of `ufw show added`, `ufw ` included, in its order.
    pub rules: Vec<String>,
}

impl UfwState {
    pub(crate) fn missing() -> Self {
        UfwState {
            found: Found::Missing,
            policies: BTreeMap::new(),
            logging: None,
            rules: Vec::new(),
        }
    }
}

pub(crate) struct Ufw;

impl Fact for Ufw {
    type Query = ();
    type Value = UfwState;

    fn key(_: &()) -> String {
        "ufw:state".into()
    }

    fn script(_: &()) -> String {
        let policies: String = POLICY_KEYS
            .iter()
            .map(|(dir, key)| {
                format!(" -e 's/^{key}=\"*\\([A-Z]*\\)\"*[[:space:]]*$/policy {dir} \\1/p'")
            })
            .collect();
        format!(
            "command -v ufw >/dev/null 2>&1 || {{ echo missing; exit 0; }}\n\
             s=$(LC_ALL=C ufw status) || exit 1\n\
             case \"$s\" in 'Status: active'*) echo active ;; *) echo inactive ;; esac\n\
             sed -n{policies} /etc/default/ufw 2>/dev/null\n\
             sed -n 's/^LOGLEVEL=\\([a-z]*\\)[[:space:]]*$/logging \\1/p' /etc/ufw/ufw.conf 2>/dev/null\n\
             a=$(LC_ALL=C ufw show added) || exit 1\n\
             printf '%s\\n' \"$a\" | sed -n 's/^ufw /rule ufw /p'"
        )
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<UfwState, ModuleError> {
        let bad = |detail: String| fact::bad(Self::key(&()), detail);
        if r.rc != 0 {
            return Err(bad(r.stderr.trim().to_string()));
        }
        let mut lines = r.stdout.lines();
        let found = match lines.next() {
            Some("missing") => return Ok(UfwState::missing()),
            Some("active") => Found::Active,
            Some("inactive") => Found::Inactive,
            other => return Err(bad(format!("status line {other:?}"))),
        };
        let mut state = UfwState {
            found,
            ..UfwState::missing()
        };
        for line in lines {
            read_line(&mut state, line).ok_or_else(|| bad(format!("line {line:?}")))?;
        }
        Ok(state)
    }

    fn render(v: &UfwState) -> ProbeResult {
        let mut out = format!("{}\n", v.found.word());
        for (dir, policy) in &v.policies {
            let target = POLICY_WORDS
                .iter()
                .find(|(w, _)| w == policy)
                .map_or(policy.as_str(), |(_, t)| t);
            out.push_str(&format!("policy {dir} {target}\n"));
        }
        if let Some(level) = &v.logging {
            out.push_str(&format!("logging {level}\n"));
        }
        for rule in &v.rules {
            out.push_str(&format!("rule {rule}\n"));
        }
        ProbeResult::ok(&out)
    }
}

/// Takes one line after the status into `state`; `None` if it is not one
/// the probe prints.
fn read_line(state: &mut UfwState, line: &str) -> Option<()> {
    let (kind, rest) = line.split_once(' ')?;
    match kind {
        "policy" => {
            let (dir, target) = rest.split_once(' ')?;
            let (word, _) = POLICY_WORDS.iter().find(|(_, t)| *t == target)?;
            state.policies.insert(dir.to_string(), word.to_string());
        }
        "logging" => state.logging = Some(rest.to_string()),
        "rule" => state.rules.push(rest.to_string()),
        _ => return None,
    }
    Some(())
}
