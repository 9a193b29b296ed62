//! `getent`: entries of a name service database (passwd, group, shadow,
//! hosts…) as the `getent_<database>` fact (also under `ansible_facts`): each key
//! maps to the rest of its fields. Read after every earlier change of the run, so a user an
//! earlier task created is there.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the slurm account, which must exist on every node
//!   getent:
//!     database: passwd
//!     key: slurm
//! - name: Read the munge group, if there is one
//!   getent:
//!     database: group
//!     key: munge
//!     fail_key: false
//! ```

use serde_json::{Map, Value};

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{known_facts, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const GETENT: ModuleSpec = ModuleSpec {
    name: "getent",
    source: file!(),
    aliases: &["ansible.builtin.getent"],
    params: &GetentArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

/// The databases whose fields are colon-separated.
const COLON_DATABASES: &[&str] = &["passwd", "group", "shadow", "gshadow"];

module_params! {
    struct GetentArgs {
        /// the database: passwd, group, shadow, hosts, services…
        database: String,
        /// one entry only
        key: Option<String>,
        /// the field separator (default `:` for passwd, group, shadow, gshadow; else blanks)
        split: Option<String>,
        /// a missing key fails the task
        fail_key: bool = true,
        /// the name service to ask (`getent -s`), instead of nsswitch.conf's
        service: Option<String>,
    }
}

struct Getent {
    database: String,
    key: Option<String>,
    service: Option<String>,
    split: Option<String>,
    fail_key: bool,
    /// The host's facts when the task was built, which the new one joins.
    facts: Map<String, Value>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = GetentArgs::read(p)?;
    let valid = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    };
    if !valid(&a.database) {
        return Err(p.error(
            "database",
            format!("'{}' is not a database name", a.database),
        ));
    }
    if a.split.as_deref() == Some("") {
        return Err(p.error(
            "split",
            "Invalid split value. The value must be a non-empty string",
        ));
    }
    let split = a.split.or_else(|| {
        COLON_DATABASES
            .contains(&a.database.as_str())
            .then(|| ":".to_string())
    });
    let facts = known_facts(p);
    Ok(Box::new(Getent {
        database: a.database,
        key: a.key,
        service: a.service,
        split,
        fail_key: a.fail_key,
        facts,
    }))
}

/// What `getent` printed; `None` when the key is not there (exit 2).
struct Entries;

/// A database, perhaps one key of it, perhaps from one service.
type Lookup = (String, Option<String>, Option<String>);

impl Fact for Entries {
    type Query = Lookup;
    type Value = Option<String>;

    fn key((db, key, service): &Lookup) -> String {
        let key = key.as_deref().unwrap_or("");
        match service {
            Some(s) => format!("getent:{db}:{key}:{s}"),
            None => format!("getent:{db}:{key}"),
        }
    }

    fn script((db, key, service): &Lookup) -> String {
        let key = key.as_ref().map(|k| format!(" -- {}", quote(k)));
        let service = service.as_ref().map(|s| format!(" -s {}", quote(s)));
        format!(
            "getent{} {}{}; rc=$?; [ $rc = 2 ] && {{ echo '@@missing'; exit 0; }}; exit $rc",
            service.unwrap_or_default(),
            quote(db),
            key.unwrap_or_default()
        )
    }

    fn parse(q: &Lookup, r: &ProbeResult) -> Result<Option<String>, ModuleError> {
        if r.rc != 0 {
            let why = match r.rc {
                1 => "missing arguments, or the database is unknown".to_string(),
                3 => "enumeration is not supported on this database".to_string(),
                _ => r.stderr.trim().to_string(),
            };
            return Err(fact::bad(Self::key(q), why));
        }
        Ok((r.stdout.trim_end() != "@@missing").then(|| r.stdout.clone()))
    }

    fn render(v: &Option<String>) -> ProbeResult {
        ProbeResult::ok(v.clone().unwrap_or_else(|| "@@missing\n".into()))
    }
}

impl Getent {
    fn query(&self) -> Lookup {
        (
            self.database.clone(),
            self.key.clone(),
            self.service.clone(),
        )
    }

    /// `root:x:0:0::/root:/bin/sh` → `root: ["x", "0", "0", "", "/root", "/bin/sh"]`.
    fn entries(&self, text: &str) -> Map<String, Value> {
        let mut out = Map::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let fields: Vec<&str> = match &self.split {
                Some(sep) => line.split(sep.as_str()).collect(),
                None => line.split_whitespace().collect(),
            };
            let Some((key, rest)) = fields.split_first() else {
                continue;
            };
            // Ansible keeps the first entry of a key listed twice.
            out.entry(key.to_string()).or_insert_with(|| {
                Value::Array(rest.iter().map(|f| Value::String(f.to_string())).collect())
            });
        }
        out
    }
}

impl Module for Getent {
    fn probes(&self) -> Vec<Probe> {
        vec![Entries::probe(&self.query())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let name = format!("getent_{}", self.database);
        let mut plan = Plan::noop();
        let found = match Entries::read(facts, &self.query())? {
            Some(text) => self.entries(&text),
            None => {
                let key = self.key.as_deref().unwrap_or_default();
                if self.fail_key {
                    return Err(ModuleError::Absent(format!(
                        "one or more supplied key could not be found in the database: {key} in {}",
                        self.database
                    )));
                }
                plan.notes
                    .push(format!("{key} is not in {}", self.database));
                let mut m = Map::new();
                m.insert(key.to_string(), Value::Null);
                m
            }
        };
        plan.set_fact(&self.facts, &name, Value::Object(found));
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = ("passwd".to_string(), Some("root".to_string()), None);
    rt.check::<Entries>(&q, None);
    rt.check::<Entries>(&q, Some("root:x:0:0:root:/root:/bin/bash\n".into()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test, facts_of};
    use serde_json::json;

    #[test]
    fn entries_become_the_getent_fact_beside_the_others() {
        let m = build_test(&GETENT, json!({"database": "passwd"})).unwrap();
        let probe = m.probes().pop().unwrap();
        assert!(probe.script.starts_with("getent passwd; rc=$?"));
        let out = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n";
        let plan = m.plan(&facts_of(&[(&probe.key, out)])).unwrap();
        let want = json!({
            "root": ["x", "0", "0", "root", "/root", "/bin/bash"],
            "nobody": ["x", "65534", "65534", "", "/nonexistent", "/usr/sbin/nologin"],
        });
        assert_eq!(plan.sets["getent_passwd"], want);
        assert_eq!(plan.sets["ansible_facts"]["getent_passwd"], want);
        assert_eq!(plan.returns["ansible_facts"]["getent_passwd"], want);
        assert!(m.reads_everything() && plan.steps.is_empty());
    }

    #[test]
    fn a_missing_key_fails_unless_told_not_to() {
        let params = json!({"database": "hosts", "key": "gpu01", "fail_key": false});
        let m = build_test(&GETENT, params).unwrap();
        let probe = m.probes().pop().unwrap();
        assert!(probe.script.starts_with("getent hosts -- gpu01;"));
        let plan = m.plan(&facts_of(&[(&probe.key, "@@missing\n")])).unwrap();
        assert_eq!(plan.sets["getent_hosts"], json!({"gpu01": null}));
        let m = build_test(&GETENT, json!({"database": "hosts", "key": "gpu01"})).unwrap();
        assert!(matches!(
            m.plan(&facts_of(&[(&probe.key, "@@missing\n")])),
            Err(ModuleError::Absent(_))
        ));
        let plan = m
            .plan(&facts_of(&[(
                &probe.key,
                "10.0.0.1   gpu01 gpu01.cluster\n",
            )]))
            .unwrap();
        assert_eq!(
            plan.sets["getent_hosts"],
            json!({"10.0.0.1": ["gpu01", "gpu01.cluster"]})
        );
        assert!(build_error(&GETENT, json!({"database": "$(x)"})).contains("not a database"));
    }

    #[test]
    fn a_service_is_asked_alone_and_an_empty_split_is_refused() {
        let params = json!({"database": "passwd", "key": "root", "service": "files"});
        let m = build_test(&GETENT, params).unwrap();
        let probe = m.probes().pop().unwrap();
        assert!(probe.script.starts_with("getent -s files passwd -- root;"));
        assert_eq!(probe.key, "getent:passwd:root:files");
        let bad = build_error(&GETENT, json!({"database": "group", "split": ""}));
        assert!(bad.contains("Invalid split value"), "{bad}");
    }
}
