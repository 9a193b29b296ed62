//! `modprobe`: a kernel module loaded or unloaded now, and (with
//! `persistent`) loaded at boot with its options.
//!
//! **`modprobe`** reads the running kernel in the probe: a module is loaded when
//! `/proc/modules` lists it (`-` and `_` are one), or when it is built in (a
//! `/sys/module` entry without a `/proc/modules` line, or in
//! `modules.builtin`). It loads with `modprobe -- NAME PARAMS…` and unloads with
//! `modprobe -r`, each parameter a quoted word; unloading a built-in module is an
//! error. A module already loaded is never reloaded to change its `params`
//! (that would take its devices away): the probe reads the running values from
//! `/sys/module/NAME/parameters` (a bool shows as `Y`/`N`), and a value that
//! differs or is not shown there is a note naming it, not drift. `persistent: present`
//! writes `/etc/modules-load.d/NAME.conf` (the name) and, when `params` are
//! given, `/etc/modprobe.d/NAME.conf` (`options NAME PARAMS`); `absent` removes
//! those two files; `disabled` (the default) leaves them alone. Unlike Ansible,
//! nodeprov does not comment the module out of other files in those folders. A
//! name other than letters, digits, `_` and `-` is refused. What is proven
//! how: the persistent files by the isolated-host test (`tests/conf_modules.rs`,
//! against a built-in module of the test machine's kernel, so nothing is
//! loaded there); loading and unloading on the real kernel of the test VM
//! (`tests/vm_e2e.rs`, the swap-file test's reboot step): `dummy` with
//! `persistent: present` is loaded, loaded again by systemd at the next boot,
//! and a second run changes nothing; `state: absent, persistent: absent`
//! unloads it and removes its files once, and a hand `modprobe dummy` is
//! drift that `check` names and leaves loaded. The `params` that reach the
//! kernel at boot are not read back there (`dummy`'s are not shown in sysfs).
//!
//! # Example
//!
//! ```yaml
//! - name: Load nvidia_peermem for GPUDirect RDMA, now and at every boot
//!   modprobe:
//!     name: nvidia_peermem
//!     persistent: present
//! - name: Load nvidia_drm with kernel modesetting
//!   modprobe:
//!     name: nvidia_drm
//!     params: modeset=1
//!     persistent: present
//! ```

use std::collections::BTreeMap;

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub const MODPROBE: ModuleSpec = ModuleSpec {
    name: "modprobe",
    source: file!(),
    aliases: &["community.general.modprobe"],
    params: &ModprobeArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum Persistent {
        Present = "present",
        Absent = "absent",
        Disabled = "disabled",
    }
}

module_params! {
    struct ModprobeArgs {
        /// the kernel module
        name: String,
        /// whether it is loaded now
        state: Presence = Presence::Present,
        /// its parameters, as `modprobe` takes them after the name (`NVreg_EnableGpuFirmware=0`)
        params: String = String::new(),
        /// whether boot loads it (`/etc/modules-load.d/NAME.conf`, options in `/etc/modprobe.d/NAME.conf`); disabled leaves those files alone
        persistent: Persistent = Persistent::Disabled,
    }
}

/// Whether a kernel module is in the running kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Live {
    /// Listed in `/proc/modules`.
    Loaded,
    /// Built into the kernel: always there, never unloadable.
    Builtin,
    Absent,
}

/// A module's live state by its kernel name (`-` spelled `_`): in
/// `/proc/modules`, or built in (a `/sys/module` entry without a
/// `/proc/modules` line, or listed in `modules.builtin`).
pub struct KmodFact;

impl Fact for KmodFact {
    type Query = str;
    type Value = Live;

    fn key(name: &str) -> String {
        format!("kmod:{name}")
    }

    fn script(name: &str) -> String {
        format!(
            r#"n={n}
if [ -r /proc/modules ] && grep -q "^$n " /proc/modules; then echo loaded
elif [ -d "/sys/module/$n" ]; then echo builtin
elif b="/lib/modules/$(uname -r)/modules.builtin"; [ -r "$b" ] && tr - _ < "$b" | grep -q "/$n\.ko"; then echo builtin
else echo absent; fi"#,
            n = quote(name)
        )
    }

    fn parse(name: &str, r: &ProbeResult) -> Result<Live, ModuleError> {
        match (r.rc, r.stdout.trim()) {
            (0, "loaded") => Ok(Live::Loaded),
            (0, "builtin") => Ok(Live::Builtin),
            (0, "absent") => Ok(Live::Absent),
            _ => Err(fact::bad(
                Self::key(name),
                format!("{:?} {}", r.stdout, r.stderr.trim()),
            )),
        }
    }

    fn render(v: &Live) -> ProbeResult {
        ProbeResult::ok(match v {
            Live::Loaded => "loaded\n",
            Live::Builtin => "builtin\n",
            Live::Absent => "absent\n",
        })
    }
}

/// A loaded module's parameters, as `/sys/module/NAME/parameters` shows them.
pub struct ParamsQuery {
    /// The kernel name.
    pub name: String,
    pub keys: Vec<String>,
}

/// The running values of some parameters of a module; `None` for one that
/// sysfs does not show (not exposed, or the module is not loaded).
pub struct KmodParams;

impl Fact for KmodParams {
    type Query = ParamsQuery;
    type Value = BTreeMap<String, Option<String>>;

    fn key(q: &ParamsQuery) -> String {
        format!("kmod-params:{}:{}", q.name, q.keys.join(","))
    }

    fn script(q: &ParamsQuery) -> String {
        let mut s = format!("d=/sys/module/{}/parameters\n", quote(&q.name));
        for k in &q.keys {
            let k = quote(k);
            s.push_str(&format!(
                "if [ -r \"$d\"/{k} ]; then printf '%s\\t%s\\n' {k} \"$(cat -- \"$d\"/{k})\"; else printf '%s\\n' {k}; fi\n"
            ));
        }
        s
    }

    fn parse(q: &ParamsQuery, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        if r.rc != 0 {
            return Err(fact::bad(Self::key(q), r.stderr.trim()));
        }
        Ok(r.stdout
            .lines()
            .map(|l| match l.split_once('\t') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (l.to_string(), None),
            })
            .collect())
    }

    fn render(v: &Self::Value) -> ProbeResult {
        ProbeResult::ok(
            v.iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("{k}\t{v}\n"),
                    None => format!("{k}\n"),
                })
                .collect::<String>(),
        )
    }
}

/// Whether a running value `have` is what `want` sets: sysfs shows a bool
/// as `Y`/`N` whichever of the kernel's spellings set it.
fn same_param(have: &str, want: &str) -> bool {
    let truth = |v: &str| match v {
        "y" | "Y" | "1" | "on" => Some(true),
        "n" | "N" | "0" | "off" => Some(false),
        _ => None,
    };
    have == want || (matches!(have, "Y" | "N") && truth(have) == truth(want))
}

struct Modprobe {
    /// As the task names it, for modprobe and file names.
    name: String,
    /// As the kernel lists it.
    kernel_name: String,
    load: bool,
    params: Vec<String>,
    persistent: Persistent,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = ModprobeArgs::read(p)?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if a.name.is_empty() || !a.name.chars().all(valid) {
        return Err(p.error(
            "name",
            format!(
                "'{}' is not a kernel module name (letters, digits, '_' and '-')",
                a.name
            ),
        ));
    }
    Ok(Box::new(Modprobe {
        kernel_name: a.name.replace('-', "_"),
        name: a.name,
        load: a.state == Presence::Present,
        params: a.params.split_whitespace().map(str::to_string).collect(),
        persistent: a.persistent,
    }))
}

impl Module for Modprobe {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![KmodFact::probe(&self.kernel_name)];
        if self.load && !self.params.is_empty() {
            probes.push(KmodParams::probe(&self.params_query()));
        }
        if self.persistent != Persistent::Disabled {
            probes.push(FileFact::probe(&self.load_file()));
            probes.push(FileFact::probe(&self.options_file()));
        }
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = self.plan_live(facts, KmodFact::read(facts, &self.kernel_name)?)?;
        match self.persistent {
            Persistent::Disabled => {}
            Persistent::Present => {
                plan.absorb(self.plan_file(facts, &self.load_file(), Some(&self.load_line()))?);
                if !self.params.is_empty() {
                    let options = format!("options {} {}\n", self.name, self.params.join(" "));
                    plan.absorb(self.plan_file(facts, &self.options_file(), Some(&options))?);
                }
            }
            Persistent::Absent => {
                plan.absorb(self.plan_file(facts, &self.load_file(), None)?);
                plan.absorb(self.plan_file(facts, &self.options_file(), None)?);
            }
        }
        Ok(plan)
    }
}

impl Modprobe {
    fn load_file(&self) -> String {
        format!("/etc/modules-load.d/{}.conf", self.name)
    }

    fn options_file(&self) -> String {
        format!("/etc/modprobe.d/{}.conf", self.name)
    }

    fn load_line(&self) -> String {
        format!("{}\n", self.name)
    }

    /// The parameters as `key → value` (a bare flag is `1`, as the kernel takes it).
    fn wanted_params(&self) -> BTreeMap<String, Option<String>> {
        self.params
            .iter()
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, "1"));
                (k.to_string(), Some(v.to_string()))
            })
            .collect()
    }

    fn params_query(&self) -> ParamsQuery {
        ParamsQuery {
            name: self.kernel_name.clone(),
            keys: self.wanted_params().into_keys().collect(),
        }
    }

    /// A loaded module is never reloaded to change its parameters (that
    /// would take its devices away): running values that differ, or that
    /// sysfs does not show, are a note with the evidence.
    fn params_note(&self, facts: &Facts) -> Result<Option<String>, ModuleError> {
        let running = KmodParams::read(facts, &self.params_query())?;
        let odd: Vec<String> = self
            .wanted_params()
            .iter()
            .filter_map(|(k, want)| {
                let want = want.as_deref().unwrap_or_default();
                match running.get(k).cloned().flatten() {
                    Some(have) if same_param(&have, want) => None,
                    Some(have) => Some(format!("{k}={have} (wanted {want})")),
                    None => Some(format!("{k} not shown in sysfs (wanted {want})")),
                }
            })
            .collect();
        Ok((!odd.is_empty()).then(|| {
            format!(
                "kernel module {} is loaded with {} (/sys/module/{}/parameters): params apply at its next load or boot",
                self.name,
                odd.join(", "),
                self.kernel_name
            )
        }))
    }

    fn plan_live(&self, facts: &Facts, live: Live) -> Result<Plan, ModuleError> {
        let mut plan = Plan::noop();
        let subject = format!("kernel module {}", self.name);
        let (after, step) = match (self.load, live) {
            (true, Live::Absent) => {
                let args: Vec<String> = self.params.iter().map(|a| quote(a)).collect();
                let args = args.iter().map(|a| format!(" {a}")).collect::<String>();
                (
                    Live::Loaded,
                    format!("modprobe -- {}{args}", quote(&self.name)),
                )
            }
            (false, Live::Loaded) => (
                Live::Absent,
                format!("modprobe -r -- {}", quote(&self.name)),
            ),
            (false, Live::Builtin) => {
                return Err(ModuleError::Unsupported(format!(
                    "{subject} is built into the kernel and cannot be unloaded"
                )))
            }
            (true, _) => {
                if !self.params.is_empty() {
                    plan.notes.extend(self.params_note(facts)?);
                }
                return Ok(plan);
            }
            (false, Live::Absent) => return Ok(plan),
        };
        let name = |l: Live| match l {
            Live::Loaded | Live::Builtin => "loaded",
            Live::Absent => "not loaded",
        };
        plan.changes.push(
            Change::new(subject, Some(name(live).into()), Some(name(after).into()))
                .with_evidence("/proc/modules"),
        );
        plan.steps.push(step);
        plan.effects
            .push(KmodFact::predict(&self.kernel_name, &after));
        if after == Live::Loaded && !self.params.is_empty() {
            plan.effects.push(KmodParams::predict(
                &self.params_query(),
                &self.wanted_params(),
            ));
        }
        Ok(plan)
    }

    /// `path` holding exactly `content`, or gone when `content` is `None`.
    fn plan_file(
        &self,
        facts: &Facts,
        path: &str,
        content: Option<&str>,
    ) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, path)?;
        match (content, &current) {
            (Some(text), _) => {
                files::plan_content(path, current.as_ref(), text, &WriteOpts::default(), true)
            }
            (None, None) => Ok(Plan::noop()),
            (None, Some(_)) => {
                let mut plan = Plan::noop();
                plan.changes.push(Change::new(
                    path,
                    Some("present".into()),
                    Some("absent".into()),
                ));
                plan.steps.push(format!("rm -f -- {}", quote(path)));
                plan.effects.push(FileFact::predict(path, &None));
                Ok(plan)
            }
        }
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    for v in [Live::Loaded, Live::Builtin, Live::Absent] {
        rt.check::<KmodFact>("nvidia_peermem", v);
    }
    let q = ParamsQuery {
        name: "nvidia".into(),
        keys: vec!["NVreg_A".into(), "NVreg_B".into()],
    };
    rt.check::<KmodParams>(
        &q,
        [
            ("NVreg_A".to_string(), Some("1 2".to_string())),
            ("NVreg_B".to_string(), None),
        ]
        .into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, settled,
    };
    use serde_json::json;

    const LOAD: &str = "/etc/modules-load.d/nvidia-peermem.conf";
    const OPTIONS: &str = "/etc/modprobe.d/nvidia-peermem.conf";

    fn file(content: Option<&str>) -> String {
        let state = content.map(|c| files::FileState::written(c, 0o644, "root", "root"));
        FileFact::render(&state).stdout
    }

    fn facts(live: &str, load: Option<&str>, options: Option<&str>) -> Facts {
        facts_of(&[
            ("kmod:nvidia_peermem", live),
            (&format!("file:{LOAD}"), &file(load)),
            (&format!("file:{OPTIONS}"), &file(options)),
        ])
    }

    fn modprobe(params: serde_json::Value) -> Box<dyn Module> {
        let mut p = json!({"name": "nvidia-peermem"});
        p.as_object_mut()
            .unwrap()
            .extend(params.as_object().unwrap().clone());
        build_test(&MODPROBE, p).unwrap()
    }

    #[test]
    fn a_garbled_live_answer_is_an_error() {
        let garbled = ProbeResult::ok("maybe\n");
        assert!(KmodFact::parse("x", &garbled).is_err());
    }

    #[test]
    fn loads_an_absent_module_with_quoted_params_and_writes_boot_files() {
        let m = modprobe(
            json!({"params": "peerdirect_support=1  persistence_mode=$(reboot)", "persistent": "present"}),
        );
        let mut f = facts("absent\n", None, Some("options nvidia-peermem old=1\n"));
        let params_key = "kmod-params:nvidia_peermem:peerdirect_support,persistence_mode";
        f.insert(
            params_key.into(),
            ProbeResult::ok("peerdirect_support\npersistence_mode\n"),
        );
        assert_eq!(
            m.probes().iter().map(|p| p.key.clone()).collect::<Vec<_>>(),
            [
                "kmod:nvidia_peermem",
                params_key,
                &format!("file:{LOAD}"),
                &format!("file:{OPTIONS}")
            ]
        );
        let plan = m.plan(&f).unwrap();
        assert_eq!(
            plan.steps[0],
            "modprobe -- nvidia-peermem peerdirect_support=1 'persistence_mode=$(reboot)'"
        );
        let subjects: Vec<&str> = plan.changes.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["kernel module nvidia-peermem", LOAD, OPTIONS]);
        assert_eq!(plan.changes[0].before.as_deref(), Some("not loaded"));
        assert_sh_syntax(m.as_ref(), &plan);
        let after = settled(&f, &plan);
        let read = |p: &str| FileFact::read(&after, p).unwrap().unwrap().content.unwrap();
        assert_eq!(read(LOAD), "nvidia-peermem\n");
        assert_eq!(
            read(OPTIONS),
            "options nvidia-peermem peerdirect_support=1 persistence_mode=$(reboot)\n"
        );
        assert_eq!(m.plan(&after).unwrap(), Plan::noop());
    }

    #[test]
    fn loaded_and_builtin_modules_need_nothing_live() {
        let m = modprobe(json!({}));
        assert_eq!(m.probes().len(), 1, "persistent: disabled reads no files");
        for live in ["loaded\n", "builtin\n"] {
            assert_eq!(m.plan(&facts(live, None, None)).unwrap(), Plan::noop());
        }
        let with_params = modprobe(json!({"params": "enable=1 mode=fast debug"}));
        let running = |answer: &str| {
            let mut f = facts("loaded\n", None, None);
            f.insert(
                "kmod-params:nvidia_peermem:debug,enable,mode".into(),
                ProbeResult::ok(answer),
            );
            with_params.plan(&f).unwrap()
        };
        // sysfs shows bools as Y/N
        assert_eq!(running("debug\tY\nenable\tY\nmode\tfast\n"), Plan::noop());
        let plan = running("debug\tN\nenable\tY\nmode\n");
        assert!(plan.changes.is_empty() && plan.steps.is_empty());
        assert_eq!(
            plan.notes,
            ["kernel module nvidia-peermem is loaded with debug=N (wanted 1), mode not shown in sysfs (wanted fast) (/sys/module/nvidia_peermem/parameters): params apply at its next load or boot"]
        );
    }

    #[test]
    fn absent_unloads_and_removes_boot_files_but_refuses_a_builtin() {
        let m = modprobe(json!({"state": "absent", "persistent": "absent"}));
        let f = facts("loaded\n", Some("nvidia-peermem\n"), None);
        let plan = m.plan(&f).unwrap();
        assert_eq!(
            plan.steps,
            [
                "modprobe -r -- nvidia-peermem".to_string(),
                format!("rm -f -- {LOAD}")
            ]
        );
        assert_eq!(
            plan.changes[1].to_string(),
            format!("{LOAD}: present → absent")
        );
        assert_sh_syntax(m.as_ref(), &plan);
        assert_eq!(m.plan(&settled(&f, &plan)).unwrap(), Plan::noop());
        let err = m.plan(&facts("builtin\n", None, None)).unwrap_err();
        assert!(err.to_string().contains("built into the kernel"), "{err}");
    }

    #[test]
    fn names_that_are_not_kernel_modules_are_refused() {
        for bad in ["$(reboot)", "a b", "../../etc/passwd", ""] {
            let err = build_error(&MODPROBE, json!({"name": bad}));
            assert!(err.contains("not a kernel module name"), "{bad}: {err}");
        }
        let err = build_error(&MODPROBE, json!({"name": "x", "persistent": "yes"}));
        assert!(err.contains("not a valid persistent"), "{err}");
    }

    #[test]
    fn the_probe_script_is_valid_sh_and_quotes_the_name() {
        let script = KmodFact::script("nvidia_peermem");
        assert!(script.starts_with("n=nvidia_peermem\n"), "{script}");
        let out = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
}
