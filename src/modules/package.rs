//! `package` (and `dnf`, `yum`, `apt`): packages installed or removed with
//! whichever of dnf, yum or apt-get the host has.

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};
use crate::remote::shell::quote;

pub(crate) const PACKAGE: ModuleSpec = ModuleSpec {
    name: "package",
    aliases: &[
        "ansible.builtin.package",
        "dnf",
        "ansible.builtin.dnf",
        "yum",
        "ansible.builtin.yum",
        "apt",
        "ansible.builtin.apt",
    ],
    params: &PackageArgs::SPEC,
    free_form: None,
    build,
};

choices! {
    enum Want {
        Present = "present" | "installed",
        Absent = "absent" | "removed",
        Latest = "latest",
    }
}

module_params! {
    struct PackageArgs {
        /// one package or a list
        name: Vec<String> [required],
        /// installed, removed, or at the newest version the repositories have
        state: Want = Want::Present,
        /// refresh the package lists first
        update_cache: bool = false,
    }
}

struct Package {
    names: Vec<String>,
    want: Want,
    update_cache: bool,
}

/// Package names as rpm and dpkg spell them (`name`, `name.arch`, `lib:amd64`).
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with('-')
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+:~@-".contains(&b))
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = PackageArgs::read(p)?;
    if a.name.is_empty() {
        return Err(p.error("name", "missing required parameter 'name'"));
    }
    if let Some(bad) = a.name.iter().find(|n| !valid_name(n)) {
        return Err(p.error("name", format!("'{bad}' is not a package name")));
    }
    Ok(Box::new(Package {
        names: a.name,
        want: a.state,
        update_cache: a.update_cache,
    }))
}

/// What a host's package manager says about some packages.
#[derive(Clone, Debug, PartialEq)]
struct Installed {
    /// `dnf`, `yum` or `apt`.
    manager: String,
    /// Each name asked about, with its version when installed.
    packages: Vec<(String, Option<String>)>,
}

/// The package manager, then `name installed VERSION` or `name absent`
/// for each name, in order; `None` without a package manager.
struct Packages;

impl Fact for Packages {
    type Query = [String];
    type Value = Option<Installed>;

    fn key(names: &[String]) -> String {
        format!("pkg:{}", names.join(" "))
    }

    fn script(names: &[String]) -> String {
        let args = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(" ");
        format!(
            r#"if command -v dnf >/dev/null 2>&1; then m=dnf; elif command -v yum >/dev/null 2>&1; then m=yum; elif command -v apt-get >/dev/null 2>&1; then m=apt; else echo none; exit 0; fi
echo "$m"
for n in {args}; do
  if [ "$m" = apt ]; then
    s=$(dpkg-query -W -f='${{Status}} ${{Version}}' "$n" 2>/dev/null)
    case "$s" in "install ok installed "*) echo "$n installed ${{s#install ok installed }}" ;; *) echo "$n absent" ;; esac
  elif v=$(rpm -q --qf '%{{VERSION}}-%{{RELEASE}} ' "$n" 2>/dev/null); then echo "$n installed $v"
  else echo "$n absent"; fi
done"#
        )
    }

    fn parse(names: &[String], r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        let mut lines = r.stdout.lines();
        let manager = lines.next().unwrap_or("none");
        if manager == "none" {
            return Ok(None);
        }
        let packages: Vec<(String, Option<String>)> = lines
            .filter_map(|l| {
                let mut f = l.splitn(3, ' ');
                let name = f.next()?.to_string();
                let version =
                    (f.next()? == "installed").then(|| f.next().unwrap_or("").trim().to_string());
                Some((name, version))
            })
            .collect();
        if packages.len() != names.len() {
            return Err(fact::bad(
                Self::key(names),
                format!("expected {} packages in: {}", names.len(), r.stdout),
            ));
        }
        Ok(Some(Installed {
            manager: manager.to_string(),
            packages,
        }))
    }

    fn render(v: &Self::Value) -> ProbeResult {
        let Some(i) = v else {
            return ProbeResult::ok("none\n");
        };
        let mut out = format!("{}\n", i.manager);
        for (name, version) in &i.packages {
            match version {
                Some(v) => out.push_str(&format!("{name} installed {v}\n")),
                None => out.push_str(&format!("{name} absent\n")),
            }
        }
        ProbeResult::ok(out)
    }
}

impl Module for Package {
    fn probes(&self) -> Vec<Probe> {
        vec![Packages::probe(&self.names)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let Some(Installed { manager, packages }) = Packages::read(facts, &self.names)? else {
            return Err(ModuleError::Missing(
                "no supported package manager on this host (dnf, yum or apt-get)".into(),
            ));
        };
        let manager = manager.as_str();
        let mut plan = Plan::noop();
        let mut todo = Vec::new();
        for (name, version) in &packages {
            let (before, after) = match (self.want, version) {
                (Want::Present, Some(_)) | (Want::Absent, None) => continue,
                (Want::Present | Want::Latest, None) => ("absent".to_string(), "installed"),
                (Want::Absent, Some(v)) => (v.clone(), "absent"),
                (Want::Latest, Some(v)) => (v.clone(), "latest"),
            };
            plan.changes.push(
                Change::new(format!("package {name}"), Some(before), Some(after.into()))
                    .with_evidence(if manager == "apt" {
                        "dpkg-query -W"
                    } else {
                        "rpm -q"
                    }),
            );
            todo.push(name.as_str());
        }
        if !todo.is_empty() {
            plan.steps.push(self.step(manager, &todo));
            plan.effects.push(Packages::invalidate(&self.names));
        }
        Ok(plan)
    }

    /// Whether `latest` holds is only known by asking the repositories, so
    /// it runs like a command instead of being verified.
    fn is_command(&self) -> bool {
        self.want == Want::Latest
    }
}

impl Package {
    fn step(&self, manager: &str, names: &[&str]) -> String {
        let args = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(" ");
        let what = quote(&format!(
            "package {} failed for: {}",
            self.verb(),
            names.join(" ")
        ));
        let cmd = if manager == "apt" {
            let update = if self.update_cache && self.want != Want::Absent {
                "apt-get update -q || exit 1\n"
            } else {
                ""
            };
            let verb = match self.want {
                Want::Absent => "remove",
                _ => "install",
            };
            let upgrade = if self.want == Want::Latest {
                " --only-upgrade"
            } else {
                ""
            };
            format!(
                "{update}DEBIAN_FRONTEND=noninteractive apt-get {verb} -y -q{upgrade} -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold -- {args}"
            )
        } else {
            let verb = match self.want {
                Want::Absent => "remove",
                Want::Present => "install",
                Want::Latest => "upgrade",
            };
            format!("{manager} -y {verb} -- {args}")
        };
        format!("{cmd} || {{ echo {what} >&2; exit 1; }}")
    }

    fn verb(&self) -> &'static str {
        match self.want {
            Want::Absent => "removal",
            Want::Present => "installation",
            Want::Latest => "upgrade",
        }
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let names = ["curl".to_string(), "lib+x:amd64".to_string()];
    rt.check::<Packages>(&names, None);
    rt.check::<Packages>(
        &names,
        Some(Installed {
            manager: "apt".into(),
            packages: vec![
                ("curl".into(), Some("8.5.0-2ubuntu10.6".into())),
                ("lib+x:amd64".into(), None),
            ],
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    fn plan_on(params: serde_json::Value, answer: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&PACKAGE, params).unwrap();
        let key = m.probes()[0].key.clone();
        let plan = m.plan(&facts_of(&[(&key, answer)]));
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    #[test]
    fn installed_packages_are_a_noop() {
        let plan = plan_on(
            json!({"name": ["nvidia-driver", "dcgm"]}),
            "dnf\nnvidia-driver installed 580.159.04-1.el9 \ndcgm installed 4.2.3-1 \n",
        )
        .unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn missing_packages_are_installed_with_the_hosts_manager() {
        let plan = plan_on(
            json!({"name": "tmux, htop"}),
            "dnf\ntmux installed 3.2a-4.el9 \nhtop absent\n",
        )
        .unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].subject, "package htop");
        assert!(plan.steps[0].starts_with("dnf -y install -- htop ||"));
        let plan = plan_on(
            json!({"name": "htop", "update_cache": true}),
            "apt\nhtop absent\n",
        )
        .unwrap();
        assert!(plan.steps[0].starts_with(
            "apt-get update -q || exit 1\nDEBIAN_FRONTEND=noninteractive apt-get install -y -q"
        ));
    }

    #[test]
    fn removal_and_latest() {
        let plan = plan_on(
            json!({"name": "telnet", "state": "absent"}),
            "yum\ntelnet installed 0.17-65 \n",
        )
        .unwrap();
        assert_eq!(plan.changes[0].before.as_deref(), Some("0.17-65"));
        assert!(plan.steps[0].starts_with("yum -y remove -- telnet"));
        let latest = build_test(&PACKAGE, json!({"name": "x", "state": "latest"})).unwrap();
        assert!(latest.is_command());
        let plan = plan_on(
            json!({"name": "x", "state": "latest"}),
            "apt\nx installed 1.0\n",
        )
        .unwrap();
        assert!(plan.steps[0].contains("install -y -q --only-upgrade"));
    }

    #[test]
    fn errors_are_clear() {
        assert!(build_error(&PACKAGE, json!({"name": "$(reboot)"})).contains("not a package name"));
        assert!(build_error(&PACKAGE, json!({"name": "-y"})).contains("not a package name"));
        assert!(
            build_error(&PACKAGE, json!({"name": "x", "state": "newest"}))
                .contains("not a valid state")
        );
        let err = plan_on(json!({"name": "x"}), "none\n").unwrap_err();
        assert!(
            matches!(err, ModuleError::Missing(m) if m.contains("no supported package manager"))
        );
    }

    #[test]
    fn probe_quotes_names() {
        let p = Packages::probe(&["lib+x:amd64".into()]);
        assert!(
            p.script.contains("for n in lib+x:amd64; do"),
            "{}",
            p.script
        );
        let p = Packages::probe(&["a~b".into()]);
        assert!(p.script.contains("for n in 'a~b'; do"), "{}", p.script);
    }
}
