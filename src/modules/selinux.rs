//! `selinux` (ansible.posix): the SELinux mode and policy, in
//! `/etc/selinux/config` for boot and, where the kernel runs SELinux, now.
//!
//! What cannot change without a reboot (enabling SELinux from disabled,
//! disabling it, another policy) is written to the config and reported
//! as needing a reboot (registered as `reboot_required`, with a note), not as
//! drift: nothing short of a reboot would make
//! the host comply, so a second run changes nothing.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep SELinux permissive on the GPU nodes
//!   selinux:
//!     state: permissive
//!     policy: targeted
//! ```

use serde_json::json;

use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, Choice, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const SELINUX: ModuleSpec = ModuleSpec {
    name: "selinux",
    source: file!(),
    aliases: &["ansible.posix.selinux"],
    params: &SelinuxArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

const ENFORCE: &str = "/sys/fs/selinux/enforce";

choices! {
    enum Mode {
        Enforcing = "enforcing",
        Permissive = "permissive",
        Disabled = "disabled",
    }
}

module_params! {
    struct SelinuxArgs {
        /// the mode at boot, and now where SELinux runs
        state: Mode,
        /// the policy (SELINUXTYPE), such as targeted; needed unless disabled
        policy: Option<String>,
        /// the config file (default /etc/selinux/config)
        #[aliases("conf", "file")]
        configfile: String = "/etc/selinux/config".into(),
        /// not supported: the kernel command line is left alone
        update_kernel_param: bool = false,
    }
}

struct Selinux {
    state: Mode,
    policy: Option<String>,
    conf: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = SelinuxArgs::read(p)?;
    if a.update_kernel_param {
        return Err(p.error(
            "update_kernel_param",
            "update_kernel_param: true is not supported; set selinux= on the kernel command line yourself",
        ));
    }
    if a.state != Mode::Disabled && a.policy.is_none() {
        return Err(p.error("policy", "policy is required unless state is disabled"));
    }
    if let Some(bad) = a.policy.as_ref().filter(|p| {
        p.is_empty()
            || !p
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    }) {
        return Err(p.error("policy", format!("'{bad}' is not a policy name")));
    }
    p.destructive_path("configfile", &a.configfile)?;
    Ok(Box::new(Selinux {
        state: a.state,
        policy: a.policy,
        conf: a.configfile,
    }))
}

/// The mode the running kernel enforces; `Disabled` without selinuxfs.
struct RuntimeMode;

impl Fact for RuntimeMode {
    type Query = ();
    type Value = Mode;

    fn key(_: &()) -> String {
        "selinux:runtime".into()
    }

    fn script(_: &()) -> String {
        format!("if [ -f {ENFORCE} ]; then cat {ENFORCE}; echo; else echo disabled; fi")
    }

    fn parse(_: &(), r: &ProbeResult) -> Result<Mode, ModuleError> {
        match r.stdout.trim() {
            "1" => Ok(Mode::Enforcing),
            "0" => Ok(Mode::Permissive),
            "disabled" => Ok(Mode::Disabled),
            other => Err(fact::bad(
                Self::key(&()),
                format!("unexpected '{other}' {}", r.stderr.trim()),
            )),
        }
    }

    fn render(m: &Mode) -> ProbeResult {
        ProbeResult::ok(match m {
            Mode::Enforcing => "1\n",
            Mode::Permissive => "0\n",
            Mode::Disabled => "disabled\n",
        })
    }
}

/// `text` with `key=value` on every line that sets `key`, or appended.
fn set_key(text: &str, key: &str, value: &str) -> String {
    let mut found = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix(key) {
            Some(rest) if rest.trim_start().starts_with('=') => {
                found = true;
                format!("{key}={value}")
            }
            _ => l.to_string(),
        })
        .collect();
    if !found {
        out.push(format!("{key}={value}"));
    }
    out.join("\n") + "\n"
}

/// The value `key=` has in `text`, as SELinux reads it (the last one).
fn value_of<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .rev()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')
        })
        .map(str::trim)
}

impl Module for Selinux {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.conf), RuntimeMode::probe(&())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let runtime = RuntimeMode::read(facts, &())?;
        let Some(current) = FileFact::read(facts, &self.conf)? else {
            if self.state == Mode::Disabled && runtime == Mode::Disabled {
                let mut plan = Plan::noop();
                plan.notes.push(format!(
                    "SELinux is not installed on this host ({} does not exist): it counts as disabled",
                    self.conf
                ));
                return Ok(plan);
            }
            return Err(ModuleError::Absent(format!(
                "SELinux is not installed on this host: {} does not exist",
                self.conf
            )));
        };
        let text = files::text_to_edit(&self.conf, Some(&current), files::WhenMissing::Missing)?
            .unwrap_or_default();
        let state = self.state.name();
        let mut want = set_key(&text, "SELINUX", state);
        if let Some(policy) = &self.policy {
            want = set_key(&want, "SELINUXTYPE", policy);
        }
        let mut reboot = false;
        let mut plan = Plan::noop();
        if value_of(&text, "SELINUXTYPE") != self.policy.as_deref() && self.policy.is_some() {
            reboot = runtime != Mode::Disabled;
        }
        if want != text {
            plan.absorb(files::plan_content(
                &self.conf,
                Some(&current),
                &want,
                &WriteOpts::default(),
                true,
            )?);
        }
        match (runtime, self.state) {
            (now, want) if now == want => {}
            (Mode::Disabled, _) | (_, Mode::Disabled) => reboot = true,
            (now, want) => {
                plan.changes.push(
                    Change::new(
                        "selinux mode",
                        Some(now.name().into()),
                        Some(want.name().into()),
                    )
                    .with_evidence(ENFORCE),
                );
                let flag = if want == Mode::Enforcing { 1 } else { 0 };
                plan.steps.push(format!(
                    "setenforce {flag} || {{ echo 'setenforce {flag} failed' >&2; exit 1; }}"
                ));
                plan.effects.push(RuntimeMode::predict(&(), &want));
            }
        }
        // Disabling from enforcing: permissive now, disabled after the reboot.
        if runtime == Mode::Enforcing && self.state == Mode::Disabled {
            plan.changes.push(
                Change::new(
                    "selinux mode",
                    Some("enforcing".into()),
                    Some("permissive".into()),
                )
                .with_evidence(ENFORCE),
            );
            plan.steps
                .push("setenforce 0 || { echo 'setenforce 0 failed' >&2; exit 1; }".into());
            plan.effects
                .push(RuntimeMode::predict(&(), &Mode::Permissive));
        }
        if reboot {
            plan.notes.push(format!(
                "SELinux runs {} now; {} {state} takes a reboot",
                runtime.name(),
                self.policy
                    .as_deref()
                    .map(|p| format!("policy {p},"))
                    .unwrap_or_default()
            ));
        }
        plan.returns.insert("reboot_required".into(), json!(reboot));
        plan.returns.insert("state".into(), json!(state));
        plan.returns.insert("policy".into(), json!(self.policy));
        plan.returns.insert("configfile".into(), json!(self.conf));
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    for m in [Mode::Enforcing, Mode::Permissive, Mode::Disabled] {
        rt.check::<RuntimeMode>(&(), m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, file_content, file_facts, settled,
    };

    const CONF: &str = "# SELinux config\nSELINUX=enforcing\nSELINUXTYPE=targeted\n";

    fn plan_on(
        params: serde_json::Value,
        conf: Option<&str>,
        runtime: Mode,
    ) -> (Box<dyn Module>, Facts, Result<Plan, ModuleError>) {
        let m = build_test(&SELINUX, params).unwrap();
        let mut facts = file_facts("/etc/selinux/config", conf, 0o644);
        facts.insert(RuntimeMode::key(&()), RuntimeMode::render(&runtime));
        let plan = m.plan(&facts);
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        (m, facts, plan)
    }

    #[test]
    fn parameters_are_checked() {
        assert!(build_error(&SELINUX, json!({"state": "enforcing"})).contains("policy is required"));
        assert!(
            build_error(&SELINUX, json!({"state": "permissive", "policy": "a b"}))
                .contains("not a policy")
        );
        assert!(build_error(
            &SELINUX,
            json!({"state": "disabled", "update_kernel_param": true})
        )
        .contains("not supported"));
    }

    #[test]
    fn ansible_spellings_of_the_config_file() {
        for alias in ["conf", "file"] {
            assert_eq!(SELINUX.params.canonical(alias), Some("configfile"));
        }
        assert_eq!(SELINUX.params.canonical("configfile"), None);
        let params = json!({"state": "disabled", "configfile": "/etc/selinux/other"});
        let m = build_test(&SELINUX, params).unwrap();
        assert_eq!(m.probes()[0].key, FileFact::key("/etc/selinux/other"));
    }

    #[test]
    fn permissive_now_and_at_boot_then_compliant() {
        let params = json!({"state": "permissive", "policy": "targeted"});
        let (m, facts, plan) = plan_on(params, Some(CONF), Mode::Enforcing);
        let plan = plan.unwrap();
        let summary: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            summary,
            [
                "/etc/selinux/config: old content → new content",
                "selinux mode: enforcing → permissive"
            ]
        );
        assert_eq!(plan.changes[1].evidence.as_deref(), Some(ENFORCE));
        assert!(plan.steps[1].starts_with("setenforce 0"));
        assert_eq!(plan.returns["reboot_required"], false);
        let after = settled(&facts, &plan);
        assert_eq!(
            file_content(&after, "/etc/selinux/config"),
            "# SELinux config\nSELINUX=permissive\nSELINUXTYPE=targeted\n"
        );
        assert_eq!(m.plan(&after).unwrap().changes, vec![]);
    }

    #[test]
    fn disabling_is_config_and_permissive_until_a_reboot() {
        let params = json!({"state": "disabled"});
        let (m, facts, plan) = plan_on(params, Some(CONF), Mode::Enforcing);
        let plan = plan.unwrap();
        assert_eq!(plan.returns["reboot_required"], true);
        assert!(plan.notes[0].contains("takes a reboot"), "{:?}", plan.notes);
        assert!(plan.steps.iter().any(|s| s.starts_with("setenforce 0")));
        let after = settled(&facts, &plan);
        assert!(file_content(&after, "/etc/selinux/config").contains("SELINUX=disabled\n"));
        let again = m.plan(&after).unwrap();
        assert!(again.changes.is_empty() && again.returns["reboot_required"] == true);
    }

    #[test]
    fn hosts_without_selinux() {
        let (_, _, plan) = plan_on(json!({"state": "disabled"}), None, Mode::Disabled);
        assert!(plan.unwrap().notes[0].contains("not installed"));
        let (_, _, err) = plan_on(
            json!({"state": "enforcing", "policy": "targeted"}),
            None,
            Mode::Disabled,
        );
        assert!(matches!(err, Err(ModuleError::Absent(m)) if m.contains("not installed")));
        let (_, _, plan) = plan_on(
            json!({"state": "enforcing", "policy": "targeted"}),
            Some("SELINUX=disabled\n"),
            Mode::Disabled,
        );
        let plan = plan.unwrap();
        assert_eq!(plan.returns["reboot_required"], true);
        assert_eq!(plan.changes.len(), 1, "only the config changes now");
    }
}
