//! `apt_key`: an OpenPGP key apt trusts, kept as a binary keyring file
//! (what `signed-by=` names, or one file in /etc/apt/trusted.gpg.d) instead
//! of the deprecated `apt-key` store; idempotent by key id.
//!
//! The key comes from one of `url`, `file` and `data` (one is needed unless the
//! key is removed by its `id`), and is kept dearmored in its own keyring file,
//! never through the deprecated apt-key.
//!
//! # Example
//!
//! ```yaml
//! - name: Trust the key NVIDIA signs its CUDA repository for Ubuntu with
//!   apt_key:
//!     url: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub
//!     id: EB693B3035CD5710E231E123A4B469963BF863CC
//!     keyring: /usr/share/keyrings/cuda-archive-keyring.gpg
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::sha256_hex;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub const APT_KEY: ModuleSpec = ModuleSpec {
    name: "apt_key",
    source: file!(),
    aliases: &["ansible.builtin.apt_key"],
    params: &AptKeyArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct AptKeyArgs {
        /// the key's id (required to remove; checked after import when given)
        id: Option<String>,
        /// where to download the key from
        url: Option<String>,
        /// a file on the host holding the key
        file: Option<String>,
        /// the key itself, armored or not
        data: Option<String>,
        /// the keyring file to keep it in (default: /etc/apt/trusted.gpg.d/ID.gpg, or named after the url or file)
        keyring: Option<String>,
        /// trusted or not
        state: Presence = Presence::Present,
    }
}

/// Where the key comes from.
#[derive(Clone, Debug, PartialEq)]
enum Source {
    Url(String),
    File(String),
    Data(String),
    /// Removal by id needs no source.
    None,
}

impl Source {
    /// A shell command printing the key.
    fn read(&self) -> String {
        match self {
            Source::Url(u) => format!("curl -fsSL {}", quote(u)),
            Source::File(f) => format!("cat {}", quote(f)),
            Source::Data(d) => format!("printf '%s\\n' {}", quote(d)),
            Source::None => ":".into(),
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::Url(u) => u.clone(),
            Source::File(f) => f.clone(),
            Source::Data(d) => format!("data:{}", &sha256_hex(d.as_bytes())[..16]),
            Source::None => "none".into(),
        }
    }
}

struct AptKey {
    id: Option<String>,
    source: Source,
    keyring: String,
    present: bool,
}

fn short_id(id: &str) -> Option<String> {
    let hex = id.strip_prefix("0x").unwrap_or(id);
    (hex.len() >= 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hex[hex.len() - 8..].to_ascii_lowercase())
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AptKeyArgs::read(p)?;
    let id = match &a.id {
        Some(i) => {
            Some(short_id(i).ok_or_else(|| p.error("id", format!("'{i}' is not a key id")))?)
        }
        None => None,
    };
    let source = match (a.url, a.file, a.data) {
        (Some(u), None, None) => Source::Url(u),
        (None, Some(f), None) => Source::File(f),
        (None, None, Some(d)) => Source::Data(d),
        (None, None, None) => Source::None,
        _ => return Err(p.error("url", "give only one of url, file and data")),
    };
    let present = a.state == Presence::Present;
    if present && source == Source::None {
        return Err(p.error(
            "url",
            "one of url, file or data is required with state: present",
        ));
    }
    if !present && id.is_none() {
        return Err(p.error("id", "removing a key needs its id"));
    }
    let stem = |s: &str| {
        let base = s.rsplit('/').next().unwrap_or(s);
        let base = base.split('.').next().unwrap_or(base);
        base.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let keyring = match (&a.keyring, &id, &source) {
        (Some(k), _, _) => k.clone(),
        (None, Some(id), _) => format!("/etc/apt/trusted.gpg.d/{id}.gpg"),
        (None, None, Source::Url(s) | Source::File(s)) if !stem(s).is_empty() => {
            format!("/etc/apt/trusted.gpg.d/{}.gpg", stem(s))
        }
        _ => return Err(p.error("keyring", "a key given as data needs an id or a keyring")),
    };
    if !keyring.starts_with('/') {
        return Err(p.error("keyring", "must be an absolute path"));
    }
    p.destructive_path("keyring", &keyring)?;
    Ok(Box::new(AptKey {
        id,
        source,
        keyring,
        present,
    }))
}

/// The short ids in the keyring file and in the key's source.
#[derive(Clone, Debug, Default, PartialEq)]
struct KeyIds {
    in_keyring: Vec<String>,
    in_source: Vec<String>,
    problem: Option<String>,
}

struct Query {
    keyring: String,
    source: Source,
}

/// `have ID` (keyring) and `key ID` (source) lines, and `problem WHY`;
/// gpg runs in a throwaway home.
struct Ids;

const IDS_AWK: &str = "awk -F: '$1 == \"pub\" { print tolower(substr($5, length($5) - 7)) }'";

impl Fact for Ids {
    type Query = Query;
    type Value = KeyIds;

    fn key(q: &Query) -> String {
        format!("aptkey:{}:{}", q.keyring, q.source.describe())
    }

    fn script(q: &Query) -> String {
        format!(
            r#"g=$(mktemp -d) || exit 1
export GNUPGHOME=$g
[ -f {k} ] && gpg --batch --with-colons --show-keys {k} 2>/dev/null | {IDS_AWK} | sed 's/^/have /'
if s=$({read}); then printf '%s\n' "$s" | gpg --batch --with-colons --show-keys 2>/dev/null | {IDS_AWK} | sed 's/^/key /'
else echo 'problem cannot read the key'; fi
rm -rf "$g"
true"#,
            k = quote(&q.keyring),
            read = q.source.read()
        )
    }

    fn parse(q: &Query, r: &ProbeResult) -> Result<KeyIds, ModuleError> {
        let mut v = KeyIds::default();
        for line in r.stdout.lines() {
            match line.split_once(' ') {
                Some(("have", i)) => v.in_keyring.push(i.to_string()),
                Some(("key", i)) => v.in_source.push(i.to_string()),
                Some(("problem", why)) => v.problem = Some(why.to_string()),
                _ => return Err(fact::bad(Self::key(q), format!("unexpected line: {line}"))),
            }
        }
        Ok(v)
    }

    fn render(v: &KeyIds) -> ProbeResult {
        let mut out = String::new();
        for i in &v.in_keyring {
            out.push_str(&format!("have {i}\n"));
        }
        for i in &v.in_source {
            out.push_str(&format!("key {i}\n"));
        }
        if let Some(p) = &v.problem {
            out.push_str(&format!("problem {p}\n"));
        }
        ProbeResult::ok(out)
    }
}

impl AptKey {
    fn query(&self) -> Query {
        Query {
            keyring: self.keyring.clone(),
            source: self.source.clone(),
        }
    }

    /// Writes the key, dearmored, over the keyring file atomically.
    fn install_step(&self) -> String {
        let k = quote(&self.keyring);
        format!(
            r#"d=$(dirname -- {k}); mkdir -p -- "$d" || exit 1
t=$(mktemp "$d/.nodeprov.XXXXXX") && g=$(mktemp -d) || exit 1
if ! {read} >"$t.in"; then rm -rf "$t" "$t.in" "$g"; echo {msg} >&2; exit 1; fi
# An armored key is dearmored; one already binary is kept as it is.
GNUPGHOME=$g gpg --batch --yes --dearmor <"$t.in" >"$t" 2>/dev/null || cp "$t.in" "$t"
rm -rf "$t.in" "$g"; chmod 644 "$t" && mv -f -- "$t" {k} || {{ rm -f "$t"; exit 1; }}"#,
            read = self.source.read(),
            msg = quote(&format!("cannot write the key to {}", self.keyring))
        )
    }
}

impl Module for AptKey {
    fn probes(&self) -> Vec<Probe> {
        vec![Ids::probe(&self.query())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let v = Ids::read(facts, &self.query())?;
        let mut plan = Plan::noop();
        if !self.present {
            let id = self.id.as_deref().expect("checked at build");
            if v.in_keyring.iter().any(|i| i == id) {
                plan.changes.push(Change::new(
                    format!("apt key {id}"),
                    Some(self.keyring.clone()),
                    Some("absent".into()),
                ));
                plan.steps
                    .push(format!("rm -f -- {}", quote(&self.keyring)));
                plan.effects.push(Ids::predict(
                    &self.query(),
                    &KeyIds {
                        in_keyring: vec![],
                        ..v
                    },
                ));
            }
            return Ok(plan);
        }
        if let Some(why) = &v.problem {
            return Err(ModuleError::Missing(format!(
                "{}: {why}",
                self.source.describe()
            )));
        }
        if v.in_source.is_empty() {
            return Err(ModuleError::Missing(format!(
                "{} holds no OpenPGP public key gpg can read",
                self.source.describe()
            )));
        }
        if let Some(id) = self.id.as_ref().filter(|i| !v.in_source.contains(i)) {
            return Err(ModuleError::Refused(format!(
                "{} does not hold key {id} (it holds {})",
                self.source.describe(),
                v.in_source.join(", ")
            )));
        }
        let missing: Vec<&String> = v
            .in_source
            .iter()
            .filter(|i| !v.in_keyring.contains(i))
            .collect();
        if missing.is_empty() {
            return Ok(plan);
        }
        for id in missing {
            plan.changes.push(Change::new(
                format!("apt key {id}"),
                Some("absent".into()),
                Some(self.keyring.clone()),
            ));
        }
        plan.steps.push(self.install_step());
        let after = KeyIds {
            in_keyring: v.in_source.clone(),
            ..v
        };
        plan.effects.push(Ids::predict(&self.query(), &after));
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = Query {
        keyring: "/etc/apt/keyrings/x.gpg".into(),
        source: Source::Data("k".into()),
    };
    rt.check::<Ids>(&q, KeyIds::default());
    rt.check::<Ids>(
        &q,
        KeyIds {
            in_keyring: vec!["a".into()],
            in_source: vec!["a".into(), "b".into()],
            problem: Some("cannot read the key".into()),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, settled,
    };
    use serde_json::json;

    fn plan_on(params: serde_json::Value, answer: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&APT_KEY, params).unwrap();
        let key = m.probes()[0].key.clone();
        let facts = facts_of(&[(&key, answer)]);
        let plan = m.plan(&facts)?;
        assert_sh_syntax(m.as_ref(), &plan);
        assert_eq!(m.plan(&settled(&facts, &plan)).unwrap(), Plan::noop());
        Ok(plan)
    }

    #[test]
    fn writes_a_missing_key_to_its_keyring_once() {
        let url = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub";
        let plan = plan_on(json!({"url": url}), "key 3bf863cc\n").unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "apt key 3bf863cc: absent → /etc/apt/trusted.gpg.d/3bf863cc.gpg"
        );
        assert!(
            plan.steps[0].contains(&format!("curl -fsSL {url} >")),
            "{}",
            plan.steps[0]
        );
        let same = plan_on(
            json!({"url": url, "keyring": "/etc/apt/keyrings/cuda.gpg"}),
            "have 3bf863cc\nkey 3bf863cc\n",
        );
        assert_eq!(same.unwrap(), Plan::noop());
    }

    #[test]
    fn removes_by_id() {
        let plan = plan_on(
            json!({"id": "0xA4B469963BF863CC", "state": "absent"}),
            "have 3bf863cc\n",
        )
        .unwrap();
        assert_eq!(plan.steps, ["rm -f -- /etc/apt/trusted.gpg.d/3bf863cc.gpg"]);
    }

    #[test]
    fn errors_are_clear() {
        let err = plan_on(
            json!({"file": "/k.asc", "id": "DEADBEEF"}),
            "key 3bf863cc\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("does not hold key deadbeef"),
            "{err}"
        );
        assert!(
            build_error(&APT_KEY, json!({"state": "absent", "url": "https://x/k"}))
                .contains("needs its id")
        );
        assert!(build_error(&APT_KEY, json!({"data": "k"})).contains("needs an id or a keyring"));
        assert!(
            build_error(&APT_KEY, json!({"url": "https://x/k", "file": "/k"})).contains("only one")
        );
    }
}
