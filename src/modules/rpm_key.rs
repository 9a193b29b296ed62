//! `rpm_key`: an OpenPGP key in the rpm database, imported from a URL or a
//! file on the host, or removed; idempotent by key id, as rpm names a key
//! `gpg-pubkey-<last 8 hex digits of its id>`; the id is read from the key
//! with gpg on the host.
//!
//! # Example
//!
//! ```yaml
//! - name: Trust the key NVIDIA signs its CUDA repository for RHEL 9 with
//!   rpm_key:
//!     key: https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub
//! - name: Trust EPEL's key, for the dkms the driver builds with
//!   rpm_key:
//!     key: https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9
//!     fingerprint: FF8A D134 4597 106E CE81 3B91 8A38 72BF 3228 467C
//! ```

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub const RPM_KEY: ModuleSpec = ModuleSpec {
    name: "rpm_key",
    source: file!(),
    aliases: &["ansible.builtin.rpm_key"],
    params: &RpmKeyArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct RpmKeyArgs {
        /// a URL or a file on the host holding the key, or (to remove) its id
        key: String,
        /// imported or not
        state: Presence = Presence::Present,
        /// fingerprints the key must have, one or a list, checked before import
        fingerprint: Vec<String>,
    }
}

struct RpmKey {
    key: String,
    present: bool,
    fingerprints: Vec<String>,
}

/// A key id as given (`0xDEADBEEF`, 16 hex digits), if `key` is one.
fn key_id(key: &str) -> Option<String> {
    let hex = key.strip_prefix("0x").unwrap_or(key);
    ((hex.len() == 8 || hex.len() == 16) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = RpmKeyArgs::read(p)?;
    // file:// as Ansible's fetch_url takes it: a mirror on a shared mount.
    let is_url = ["http://", "https://", "file://"]
        .iter()
        .any(|scheme| a.key.starts_with(scheme));
    if !(is_url || a.key.starts_with('/') || key_id(&a.key).is_some()) {
        return Err(p.error(
            "key",
            format!(
                "'{}' is neither a URL, an absolute path nor a key id",
                a.key
            ),
        ));
    }
    if a.state == Presence::Present && key_id(&a.key).is_some() {
        return Err(p.error(
            "key",
            "a key id can only be removed; import needs a URL or a file",
        ));
    }
    Ok(Box::new(RpmKey {
        key: a.key,
        present: a.state == Presence::Present,
        fingerprints: a
            .fingerprint
            .iter()
            .map(|f| f.replace(' ', "").to_ascii_uppercase())
            .collect(),
    }))
}

/// What rpm has and what the key is.
#[derive(Clone, Debug, Default, PartialEq)]
struct KeyState {
    /// Versions of the installed `gpg-pubkey` packages (short key ids).
    installed: Vec<String>,
    /// The key's own short ids and fingerprints; empty for a key id.
    ids: Vec<String>,
    fingerprints: Vec<String>,
    /// Why the key could not be read (`missing`, `unreadable`).
    problem: Option<String>,
}

/// `have ID`, `key ID`, `fpr FINGERPRINT` and `problem WHY` lines. The key
/// is read with gpg in a throwaway home, so probing leaves nothing behind.
struct Keys;

impl Fact for Keys {
    type Query = str;
    type Value = KeyState;

    fn key(k: &str) -> String {
        format!("rpmkey:{k}")
    }

    fn script(k: &str) -> String {
        let read = if key_id(k).is_some() {
            ":".to_string()
        } else if k.starts_with('/') {
            format!(
                "if [ -f {q} ]; then cat {q}; else echo 'problem missing' >&3; fi",
                q = quote(k)
            )
        } else {
            format!(
                "curl -fsSL {q} || echo 'problem unreachable' >&3",
                q = quote(k)
            )
        };
        format!(
            r#"rpm -q gpg-pubkey --qf 'have %{{VERSION}}\n' 2>/dev/null | grep '^have '
{{ g=$(mktemp -d) && ( {read} ) | GNUPGHOME=$g gpg --batch --with-colons --show-keys 2>/dev/null \
  | awk -F: '$1 == "pub" {{ print "key", tolower(substr($5, length($5) - 7)) }} $1 == "fpr" {{ print "fpr", $10 }}'
  rm -rf "$g"; }} 3>&1
true"#
        )
    }

    fn parse(k: &str, r: &ProbeResult) -> Result<KeyState, ModuleError> {
        let mut s = KeyState::default();
        for line in r.stdout.lines() {
            match line.split_once(' ') {
                Some(("have", v)) => s.installed.push(v.to_string()),
                Some(("key", v)) => s.ids.push(v.to_string()),
                Some(("fpr", v)) => s.fingerprints.push(v.to_string()),
                Some(("problem", v)) => s.problem = Some(v.to_string()),
                _ => return Err(fact::bad(Self::key(k), format!("unexpected line: {line}"))),
            }
        }
        Ok(s)
    }

    fn render(v: &KeyState) -> ProbeResult {
        let mut out = String::new();
        let lines = [
            ("have", &v.installed),
            ("key", &v.ids),
            ("fpr", &v.fingerprints),
        ];
        for (tag, values) in lines {
            for value in values {
                out.push_str(&format!("{tag} {value}\n"));
            }
        }
        if let Some(p) = &v.problem {
            out.push_str(&format!("problem {p}\n"));
        }
        ProbeResult::ok(out)
    }
}

impl Module for RpmKey {
    fn probes(&self) -> Vec<Probe> {
        vec![Keys::probe(&self.key)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let s = Keys::read(facts, &self.key)?;
        let ids = match key_id(&self.key) {
            Some(id) => vec![id[id.len() - 8..].to_string()],
            None => s.ids.clone(),
        };
        let mut plan = Plan::noop();
        if self.present || key_id(&self.key).is_none() {
            if let Some(why) = &s.problem {
                return Err(ModuleError::Missing(format!("key {}: {why}", self.key)));
            }
            if ids.is_empty() {
                return Err(ModuleError::Missing(format!(
                    "{} holds no OpenPGP public key gpg can read",
                    self.key
                )));
            }
        }
        if let Some(f) = self
            .fingerprints
            .iter()
            .find(|f| !s.fingerprints.contains(f))
        {
            return Err(ModuleError::Refused(format!(
                "{} does not have fingerprint {f} (it has {})",
                self.key,
                s.fingerprints.join(", ")
            )));
        }
        let evidence = "rpm -q gpg-pubkey";
        if self.present {
            let missing: Vec<&String> = ids.iter().filter(|i| !s.installed.contains(i)).collect();
            if missing.is_empty() {
                return Ok(plan);
            }
            for id in &missing {
                plan.changes.push(
                    Change::new(
                        format!("rpm key {id}"),
                        Some("absent".into()),
                        Some("imported".into()),
                    )
                    .with_evidence(evidence),
                );
            }
            plan.steps.push(format!(
                "rpm --import {k} || {{ echo {msg} >&2; exit 1; }}",
                k = quote(&self.key),
                msg = quote(&format!("cannot import key {}", self.key))
            ));
        } else {
            for id in ids.iter().filter(|i| s.installed.contains(i)) {
                plan.changes.push(
                    Change::new(
                        format!("rpm key {id}"),
                        Some("imported".into()),
                        Some("absent".into()),
                    )
                    .with_evidence(evidence),
                );
                plan.steps.push(format!(
                    "rpm -e --allmatches gpg-pubkey-{id} || {{ echo 'cannot remove key {id}' >&2; exit 1; }}"
                ));
            }
        }
        if !plan.changes.is_empty() {
            let mut after = s.clone();
            after.installed.retain(|i| !ids.contains(i));
            if self.present {
                after.installed.extend(ids);
            }
            plan.effects.push(Keys::predict(&self.key, &after));
        }
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<Keys>("/tmp/k.asc", KeyState::default());
    rt.check::<Keys>(
        "/tmp/k.asc",
        KeyState {
            installed: vec!["fd431d51".into()],
            ids: vec!["5a6340b3".into()],
            fingerprints: vec!["ABC".into()],
            problem: Some("missing".into()),
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

    const KEY: &str = "https://repo.example/RPM-GPG-KEY";

    fn plan_on(params: serde_json::Value, answer: &str) -> Result<(Plan, Facts), ModuleError> {
        let m = build_test(&RPM_KEY, params).unwrap();
        let key = m.probes()[0].key.clone();
        let facts = facts_of(&[(&key, answer)]);
        let plan = m.plan(&facts)?;
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&facts, &plan);
        assert_eq!(m.plan(&after).unwrap(), Plan::noop(), "replans to a noop");
        Ok((plan, facts))
    }

    #[test]
    fn imports_a_missing_key_once() {
        let (plan, _) = plan_on(
            json!({"key": KEY}),
            "have fd431d51\nkey 5a6340b3\nfpr 1234\n",
        )
        .unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "rpm key 5a6340b3: absent → imported"
        );
        assert_eq!(
            plan.steps,
            ["rpm --import https://repo.example/RPM-GPG-KEY || { echo 'cannot import key https://repo.example/RPM-GPG-KEY' >&2; exit 1; }"]
        );
        let (plan, _) = plan_on(json!({"key": KEY}), "have 5a6340b3\nkey 5a6340b3\n").unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn removes_by_file_or_id() {
        let (plan, _) = plan_on(
            json!({"key": "0xDEADBEEF5A6340B3", "state": "absent"}),
            "have 5a6340b3\n",
        )
        .unwrap();
        assert!(plan.steps[0].starts_with("rpm -e --allmatches gpg-pubkey-5a6340b3 ||"));
        let (plan, _) = plan_on(
            json!({"key": "/etc/k.asc", "state": "absent"}),
            "key 5a6340b3\n",
        )
        .unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn errors_are_clear() {
        let err = plan_on(json!({"key": "/etc/k.asc"}), "problem missing\n").unwrap_err();
        assert_eq!(err.to_string(), "key /etc/k.asc: missing");
        let err = plan_on(
            json!({"key": KEY, "fingerprint": "99 99"}),
            "key 5a6340b3\nfpr 1234\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("does not have fingerprint 9999"),
            "{err}"
        );
        assert!(build_error(&RPM_KEY, json!({"key": "k.asc"})).contains("neither a URL"));
        assert!(build_error(&RPM_KEY, json!({"key": "DEADBEEF"})).contains("can only be removed"));
    }
}
