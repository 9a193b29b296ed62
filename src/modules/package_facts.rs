//! `package_facts`: the installed packages as `ansible_facts.packages`
//! (and the `packages` variable), each name to a list of its installed
//! builds as Ansible shapes them: its name, version, arch and source, for rpm
//! also epoch and release. Read from the same answer the package modules plan
//! from, so it costs no extra query and a package an earlier task installed
//! is listed. A host has one package database, dpkg on the Debian family and
//! rpm elsewhere; a host without apt or rpm fails the task.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the installed packages
//!   package_facts:
//!     manager: auto
//! - name: Stop where no NVIDIA driver package is installed
//!   assert:
//!     that: "'cuda-drivers' in packages or 'nvidia-driver-580' in packages"
//!     fail_msg: no NVIDIA driver package on this node
//! ```

use serde_json::{json, Map, Value};

use crate::modules::kit::fact::Fact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::packages::{Build, Host, Installed, Manager};
use crate::modules::kit::plan::{known_facts, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const PACKAGE_FACTS: ModuleSpec = ModuleSpec {
    name: "package_facts",
    source: file!(),
    aliases: &["ansible.builtin.package_facts"],
    params: &PackageFactsArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum Strategy { First = "first", All = "all" }
}

module_params! {
    struct PackageFactsArgs {
        /// which package databases to read: `auto`, `apt`, `rpm` (or its aliases `dnf`, `dnf5`, `yum`, `zypper`); one or a list; others are refused
        manager: Vec<String>,
        /// the first listed manager the host has, or all of them (the host has one)
        strategy: Strategy = Strategy::First,
    }
}

/// The package databases Ansible can read, by the name its results carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Db {
    Apt,
    Rpm,
}

impl Db {
    fn of(m: Manager) -> Db {
        match m {
            Manager::Apt => Db::Apt,
            Manager::Dnf | Manager::Yum => Db::Rpm,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Db::Apt => "apt",
            Db::Rpm => "rpm",
        }
    }
}

/// Ansible's managers nodeprov does not read.
const OTHER_MANAGERS: &[&str] = &["apk", "portage", "pkg", "pacman", "pkg_info", "openbsd_pkg"];

struct PackageFacts {
    /// The databases asked for; empty for `auto`.
    wanted: Vec<Db>,
    /// The host's facts when the task was built, which the new one joins.
    facts: Map<String, Value>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = PackageFactsArgs::read(p)?;
    // A host has one package database, so the first found is all there are.
    let (Strategy::First | Strategy::All) = a.strategy;
    let mut wanted = Vec::new();
    for m in &a.manager {
        match m.as_str() {
            "auto" => {
                wanted.clear();
                break;
            }
            "apt" => wanted.push(Db::Apt),
            "rpm" | "dnf" | "dnf5" | "yum" | "zypper" => wanted.push(Db::Rpm),
            other if OTHER_MANAGERS.contains(&other) => {
                return Err(p.unsupported(
                    "manager",
                    format!(
                    "manager '{other}' is not supported by nodeprov: it reads apt (dpkg) and rpm"
                ),
                ))
            }
            other => {
                return Err(p.error(
                    "manager",
                    format!("unknown manager '{other}': expected auto, apt or rpm"),
                ))
            }
        }
    }
    Ok(Box::new(PackageFacts {
        wanted,
        facts: known_facts(p),
    }))
}

/// One build as Ansible lists it: rpm's version split into epoch,
/// version and release; apt's version whole.
fn entry(name: &str, db: Db, b: &Build) -> Value {
    let mut e = json!({"name": name, "arch": b.arch, "source": db.name()});
    match db {
        Db::Apt => e["version"] = json!(b.version),
        Db::Rpm => {
            let (epoch, vr) = match b.version.split_once(':') {
                Some((e, vr)) => (e.parse::<u64>().ok(), vr),
                None => (None, b.version.as_str()),
            };
            let (version, release) = vr.rsplit_once('-').unwrap_or((vr, ""));
            e["epoch"] = json!(epoch);
            e["version"] = json!(version);
            e["release"] = json!(release);
        }
    }
    e
}

fn packages(host: &Host, db: Db) -> Map<String, Value> {
    host.installed
        .iter()
        .map(|(name, builds)| {
            let list = builds.iter().map(|b| entry(name, db, b)).collect();
            (name.clone(), Value::Array(list))
        })
        .collect()
}

impl Module for PackageFacts {
    fn probes(&self) -> Vec<Probe> {
        vec![Installed::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let host = Installed::read(facts, &())?.ok_or_else(|| {
            ModuleError::Missing("no supported package manager (apt or rpm) on this host".into())
        })?;
        let db = Db::of(host.manager);
        if !self.wanted.is_empty() && !self.wanted.contains(&db) {
            let asked: Vec<&str> = self.wanted.iter().map(|d| d.name()).collect();
            return Err(ModuleError::Missing(format!(
                "none of the package managers asked for ({}) on this host: it has {}",
                asked.join(", "),
                db.name()
            )));
        }
        let mut plan = Plan::noop();
        plan.set_fact(&self.facts, "packages", Value::Object(packages(&host, db)));
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test, facts_of};

    fn plan_on(params: Value, answer: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&PACKAGE_FACTS, params).unwrap();
        assert_eq!(m.probes(), [Installed::probe(&())]);
        m.plan(&facts_of(&[(&Installed::key(&()), answer)]))
    }

    #[test]
    fn rpm_builds_are_split_as_ansible_splits_them() {
        let answer =
            "manager dnf\ni kernel 5.14.0-427.el9 x86_64\ni kernel 5.14.0-503.el9 x86_64\n\
                      i cuda-drivers 3:550.54.15-1.el9 x86_64\ni npdemo 1.0-1\n";
        let plan = plan_on(json!({}), answer).unwrap();
        let p = &plan.sets["packages"];
        assert_eq!(
            p["cuda-drivers"],
            json!([{"name": "cuda-drivers", "epoch": 3, "version": "550.54.15",
                    "release": "1.el9", "arch": "x86_64", "source": "rpm"}])
        );
        assert_eq!(p["kernel"].as_array().unwrap().len(), 2);
        assert_eq!(p["kernel"][1]["release"], "503.el9");
        assert_eq!(p["kernel"][0]["epoch"], Value::Null);
        assert_eq!(p["npdemo"][0]["arch"], Value::Null);
        assert_eq!(plan.returns["ansible_facts"]["packages"], *p);
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
    }

    #[test]
    fn apt_versions_stay_whole() {
        let answer = "manager apt\ncache 60 0\ni libc6 2.36-9+deb12u4 amd64\nc oldpkg\n";
        let plan = plan_on(json!({"manager": ["apt"]}), answer).unwrap();
        assert_eq!(
            plan.sets["packages"],
            json!({"libc6": [{"name": "libc6", "version": "2.36-9+deb12u4",
                              "arch": "amd64", "source": "apt"}]})
        );
    }

    #[test]
    fn a_manager_the_host_lacks_fails_and_others_are_refused() {
        let deb = "manager apt\ni curl 7.88.1-10 amd64\n";
        let err = plan_on(json!({"manager": "rpm"}), deb).unwrap_err();
        assert!(
            matches!(&err, ModuleError::Missing(m) if m.contains("it has apt")),
            "{err}"
        );
        assert!(plan_on(json!({"manager": "yum,apt", "strategy": "all"}), deb).is_ok());
        assert!(matches!(
            plan_on(json!({}), "none\n"),
            Err(ModuleError::Missing(_))
        ));
        let e = build_error(&PACKAGE_FACTS, json!({"manager": "portage"}));
        assert!(e.contains("not supported by nodeprov"), "{e}");
        let e = build_error(&PACKAGE_FACTS, json!({"manager": "\"; rm -rf /"}));
        assert!(e.contains("unknown manager"), "{e}");
    }
}
