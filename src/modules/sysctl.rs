//! `sysctl`: a kernel parameter, live and persisted in a sysctl file.
//!
//! Unlike Ansible's module, editing the file only touches the lines that set
//! this key (comments, order and other keys stay as they are), `vm/swappiness`
//! and `vm.swappiness` are one key, and values compare token-wise so that
//! tabs in `net.ipv4.tcp_rmem` are not drift.

use super::copy::plan_content;
use super::{Change, Effect, Facts, Module, ModuleError, ModuleSpec, ParamError, Params, Plan};
use crate::files::{self, FileState, WriteOpts};
use crate::probe::{Probe, ProbeResult};
use crate::shell::quote;

pub const SYSCTL: ModuleSpec = ModuleSpec {
    name: "sysctl",
    aliases: &["ansible.posix.sysctl"],
    params: &[
        "name",
        "key",
        "value",
        "val",
        "state",
        "sysctl_file",
        "reload",
        "sysctl_set",
        "ignoreerrors",
    ],
    required: &[],
    free_form: None,
    build,
};

/// `vm/swappiness` → `vm.swappiness`; a key whose parts contain dots (VLAN
/// interfaces) keeps the slash form, as sysctl.d(5) specifies.
pub fn normalize_key(key: &str) -> String {
    let key = key.trim().trim_start_matches('-');
    if key.contains('/') && !key.contains('.') {
        key.replace('/', ".")
    } else {
        key.to_string()
    }
}

/// The file under /proc/sys that holds a key.
pub fn proc_path(key: &str) -> String {
    let key = normalize_key(key);
    if key.contains('/') {
        format!("/proc/sys/{key}")
    } else {
        format!("/proc/sys/{}", key.replace('.', "/"))
    }
}

/// Values are lists of whitespace-separated tokens.
pub fn same_value(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

pub fn live_key(key: &str) -> String {
    format!("sysctl:{}", normalize_key(key))
}

pub fn live_probe(key: &str) -> Probe {
    Probe::new(live_key(key), format!("cat {}", quote(&proc_path(key))))
}

/// The step that sets one key live, without reloading anything else.
pub fn live_step(key: &str, value: &str) -> String {
    let v = value.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("printf '%s\\n' {} > {}", quote(&v), quote(&proc_path(key)))
}

/// The key a `key = value` line of a sysctl file assigns, if any.
pub fn line_key(line: &str) -> Option<(String, &str)> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
        return None;
    }
    let (k, v) = t.split_once('=')?;
    Some((normalize_key(k), v.trim()))
}

struct Sysctl {
    key: String,
    value: Option<String>,
    present: bool,
    file: String,
    live: bool,
    ignore_errors: bool,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let key = match (p.str("name")?, p.str("key")?) {
        (Some(k), _) | (None, Some(k)) => normalize_key(&k),
        (None, None) => return Err(p.error("name", "missing required parameter 'name'")),
    };
    let present = p.choice("state", &["present", "absent"], "present")? == "present";
    let value = match p.raw("value").or(p.raw("val")) {
        Some(serde_json::Value::Bool(b)) => Some(if *b { "1" } else { "0" }.to_string()),
        Some(_) => p.str("value")?.or(p.str("val")?),
        None => None,
    };
    if present && value.is_none() {
        return Err(p.error("value", "state=present needs 'value'"));
    }
    Ok(Box::new(Sysctl {
        key,
        value,
        present,
        file: p
            .str("sysctl_file")?
            .unwrap_or_else(|| "/etc/sysctl.conf".into()),
        live: p.bool_or("reload", true)? || p.bool_or("sysctl_set", false)?,
        ignore_errors: p.bool_or("ignoreerrors", false)?,
    }))
}

impl Module for Sysctl {
    fn probes(&self) -> Vec<Probe> {
        vec![files::probe(&self.file), live_probe(&self.key)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileState::parse(&self.file, facts.get(&files::probe_key(&self.file))?)?;
        let text = current
            .as_ref()
            .and_then(|s| s.content.clone())
            .unwrap_or_default();
        let new_text = self.edit(&text);
        let mut plan = if new_text == text && (current.is_some() || !self.present) {
            Plan::noop()
        } else {
            plan_content(
                &self.file,
                current.as_ref(),
                &new_text,
                &WriteOpts::default(),
                true,
            )?
        };
        if self.present && self.live {
            self.plan_live(facts.get(&live_key(&self.key))?, &mut plan)?;
        }
        Ok(plan)
    }
}

impl Sysctl {
    fn edit(&self, text: &str) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut found = false;
        for line in text.lines() {
            match line_key(line) {
                Some((k, v)) if k == self.key => {
                    found = true;
                    match &self.value {
                        Some(want) if self.present && same_value(v, want) => {
                            out.push(line.to_string())
                        }
                        Some(want) if self.present => out.push(format!("{} = {want}", self.key)),
                        _ => {}
                    }
                }
                _ => out.push(line.to_string()),
            }
        }
        if self.present && !found {
            out.push(format!(
                "{} = {}",
                self.key,
                self.value.as_deref().unwrap_or_default()
            ));
        }
        if out.iter().map(String::as_str).eq(text.lines()) {
            return text.to_string();
        }
        out.iter().map(|l| format!("{l}\n")).collect()
    }

    fn plan_live(&self, live: &ProbeResult, plan: &mut Plan) -> Result<(), ModuleError> {
        let want = self.value.as_deref().unwrap_or_default();
        if live.rc != 0 {
            if self.ignore_errors {
                plan.notes.push(format!(
                    "{}: not available on this kernel (ignored)",
                    self.key
                ));
                return Ok(());
            }
            return Err(ModuleError::Host(format!(
                "unknown sysctl key {} on this kernel ({} missing); set ignoreerrors: true to skip it",
                self.key,
                proc_path(&self.key)
            )));
        }
        let have = live.stdout.trim();
        if !same_value(have, want) {
            plan.changes.push(
                Change::new(&self.key, Some(have.to_string()), Some(want.to_string()))
                    .with_evidence(format!("live value in {}", proc_path(&self.key))),
            );
            plan.steps.push(live_step(&self.key, want));
            plan.effects.push(Effect::Predict(
                live_key(&self.key),
                ProbeResult::ok(format!("{want}\n")),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(value: &str) -> Sysctl {
        Sysctl {
            key: "vm.swappiness".into(),
            value: Some(value.into()),
            present: true,
            file: "/etc/sysctl.d/90-gpu.conf".into(),
            live: true,
            ignore_errors: false,
        }
    }

    fn facts(file: Option<&str>, live: ProbeResult) -> Facts {
        let mut f = Facts::default();
        let st = file.map(|c| FileState::written(c, 0o644, "root", "root"));
        f.insert(
            files::probe_key("/etc/sysctl.d/90-gpu.conf"),
            st.map_or_else(files::absent_result, |s| s.to_result()),
        );
        f.insert(live_key("vm.swappiness"), live);
        f
    }

    #[test]
    fn keys_and_values_normalize() {
        assert_eq!(normalize_key("vm/swappiness"), "vm.swappiness");
        assert_eq!(
            normalize_key("net/ipv4/conf/eth0.100/rp_filter"),
            "net/ipv4/conf/eth0.100/rp_filter"
        );
        assert_eq!(
            proc_path("net.ipv4.tcp_rmem"),
            "/proc/sys/net/ipv4/tcp_rmem"
        );
        assert!(same_value("4096\t87380  6291456", "4096 87380 6291456"));
    }

    #[test]
    fn noop_when_file_and_live_match() {
        let plan = module("10")
            .plan(&facts(
                Some("# gpu\nvm.swappiness=10\n"),
                ProbeResult::ok("10\n"),
            ))
            .unwrap();
        assert_eq!(plan, Plan::noop());
    }

    #[test]
    fn live_only_drift_is_reported_and_fixed_live() {
        let plan = module("10")
            .plan(&facts(
                Some("vm.swappiness = 10\n"),
                ProbeResult::ok("60\n"),
            ))
            .unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].before.as_deref(), Some("60"));
        assert_eq!(plan.steps, ["printf '%s\\n' 10 > /proc/sys/vm/swappiness"]);
    }

    #[test]
    fn edit_keeps_comments_and_other_keys_and_fixes_duplicates() {
        let text = "# keep me\nvm.swappiness = 60\nkernel.pid_max = 1\nvm/swappiness=30\n";
        assert_eq!(
            module("10").edit(text),
            "# keep me\nvm.swappiness = 10\nkernel.pid_max = 1\nvm.swappiness = 10\n"
        );
    }

    #[test]
    fn unknown_key_is_a_clear_error_unless_ignored() {
        let mut m = module("10");
        let f = facts(
            Some("vm.swappiness=10\n"),
            ProbeResult {
                rc: 1,
                ..ProbeResult::default()
            },
        );
        assert!(
            matches!(m.plan(&f), Err(ModuleError::Host(msg)) if msg.contains("unknown sysctl key"))
        );
        m.ignore_errors = true;
        assert!(m.plan(&f).unwrap().changes.is_empty());
    }

    #[test]
    fn hostile_value_is_quoted() {
        let plan = module("$(reboot)")
            .plan(&facts(None, ProbeResult::ok("60\n")))
            .unwrap();
        assert!(plan.steps.iter().any(|s| s.contains("'$(reboot)'")));
    }
}
