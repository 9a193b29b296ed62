//! `sysctl`: kernel parameters, live and at the next boot.
//!
//! Two forms. Ansible's (`name`, `value`, `sysctl_file`) edits only the
//! lines of one key in a file, keeping comments, order and other keys. The
//! map form (`settings`, `file`) owns one drop-in and writes all of it.
//!
//! Either way a key complies only when its live value and the value it gets
//! at the next boot both match. The boot value follows systemd-sysctl's
//! precedence over every sysctl.d folder, the `99-sysctl.conf` link to
//! `/etc/sysctl.conf`, globs and `-` prefixes, and the active tuned profile,
//! so a drop-in that a later file shadows is reported instead of trusted.
//!
//! **`sysctl`** takes Ansible's single-key form (`name`, `value`, `state`,
//! `sysctl_file`, `reload`, `sysctl_set`, `ignoreerrors`) or a map form that owns
//! one drop-in file:
//!
//! ```yaml
//! - sysctl:
//!     settings: {vm.swappiness: 10, vm.overcommit_memory: 1}
//!     file: /etc/sysctl.d/90-gpu-node.conf
//! ```
//!
//! * Editing a file it was pointed at touches only that key's lines: comments,
//!   order and other keys stay. EL's `/etc/sysctl.d/99-sysctl.conf`, a link to
//!   `../sysctl.conf`, is written through (the link stays, `/etc/sysctl.conf`
//!   is replaced atomically), as Ansible does; any other link is refused. The map form rewrites its own file atomically.
//! * `vm.swappiness` and `vm/swappiness` are one key; values compare token-wise
//!   (tabs in `net.ipv4.tcp_rmem` are not drift); a key the kernel does not have
//!   is an error unless `ignoreerrors`, and so is a write-only key
//!   (`net.ipv4.route.flush`), reported as write-only.
//! * It computes the value **effective at next boot** with systemd-sysctl/procps
//!   precedence (`/etc`, `/run`, `/usr/local/lib`, `/usr/lib` `sysctl.d`, same
//!   basename shadowing, basename order, `/etc/sysctl.conf` via the
//!   `99-sysctl.conf` link, links to `/dev/null`), and reports three facts per
//!   key: the live value, the file:line that wins at boot, and whether the active
//!   tuned profile sets it (and wins, with `reapply_sysctl=0`). Drift when either
//!   the live or the boot value differs; when our file would be shadowed it says
//!   by which file and suggests a name that sorts last.
//! * Only changed keys are set live; `reload: system` asks for `sysctl --system`.
//! * `tuned_profile: throughput-performance` (names as `tuned-adm` takes them)
//!   makes that profile active with `tuned-adm profile` when another one is;
//!   the boot value is then computed with the new profile and its `include=`
//!   chain (read from `/etc/tuned` and `/usr/lib/tuned` in the same probe), so
//!   a profile that would override the task's value is reported before it is
//!   switched to. A profile tuned does not have fails the task.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep the GPU nodes' memory settings
//!   sysctl:
//!     settings: {vm.swappiness: 10, vm.max_map_count: 1048576, kernel.numa_balancing: 0}
//!     file: /etc/sysctl.d/90-gpu-node.conf
//! - name: Raise the socket receive buffer for NCCL over TCP
//!   sysctl:
//!     name: net.core.rmem_max
//!     value: 134217728
//!     sysctl_file: /etc/sysctl.d/91-nccl.conf
//!     reload: true
//! ```

mod config;
mod tuned;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::base::shell::quote;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::FileFact;
use crate::modules::kit::files::{self, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::scalar_text;
use crate::modules::params::{module_params, ParamError, ParamValue, Params, Presence};
use crate::remote::probe::{Joint, Probe, ProbeResult};
use config::{ConfFile, SysctlFiles, Winner};
use tuned::{Tuned, TunedCandidate, TunedProfile};

pub(crate) const SYSCTL: ModuleSpec = ModuleSpec {
    name: "sysctl",
    source: file!(),
    aliases: &["ansible.posix.sysctl"],
    params: &SysctlArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    /// The first five belong to Ansible's single-key form only.
    struct SysctlArgs {
        /// the key, such as vm.swappiness (single-key form)
        #[aliases("key")]
        name: Option<String>,
        /// its value
        #[aliases("val")]
        value: Option<Value>,
        /// whether the key is set in `sysctl_file`
        state: Presence = Presence::Present,
        /// the file edited (default /etc/sysctl.conf)
        sysctl_file: Option<String>,
        /// set the live value even with reload false
        sysctl_set: bool = false,
        /// true: set changed keys live; false: only files; `system`: also run sysctl --system
        reload: Option<Reload>,
        /// a key this kernel lacks is skipped rather than an error
        ignoreerrors: bool = false,
        /// keys and values of the drop-in nodeprov owns (map form)
        settings: Option<serde_json::Map<String, Value>>,
        /// the drop-in the map form writes as a whole
        file: Option<String>,
        /// the tuned profile (or several, space-separated) made active with tuned-adm; its settings then count at boot
        tuned_profile: Option<String>,
    }
}

const SINGLE_KEY_ONLY: &[&str] = SysctlArgs::SPEC.names.split_at(5).0;

const HEADER: &str =
    "# Managed by nodeprov: this file is rewritten as a whole, edits here are lost.\n";

/// The parts of a key. sysctl.d(5): the first separator decides; in a
/// dotted key a `/` stands for a dot inside one part (VLAN `eth0.100`).
fn components(key: &str) -> Vec<String> {
    let key = key.trim().trim_start_matches('-');
    match key.find(['.', '/']) {
        Some(i) if key.as_bytes()[i] == b'/' => key.split('/').map(String::from).collect(),
        _ => key.split('.').map(|c| c.replace('/', ".")).collect(),
    }
}

/// `vm/swappiness` → `vm.swappiness`; a key whose parts contain dots (VLAN
/// interfaces) keeps the slash form, which is unambiguous.
pub(crate) fn normalize_key(key: &str) -> String {
    let parts = components(key);
    if parts.iter().any(|p| p.contains('.')) {
        parts.join("/")
    } else {
        parts.join(".")
    }
}

/// The file under /proc/sys that holds a key.
pub(crate) fn proc_path(key: &str) -> String {
    format!("/proc/sys/{}", components(key).join("/"))
}

/// Values are lists of whitespace-separated tokens.
pub(crate) fn same_value(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// What /proc/sys holds for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Live {
    Value(String),
    /// No such file: the kernel lacks the key.
    Missing,
    /// The file cannot be opened for reading (mode 0200, such as
    /// net.ipv4.route.flush).
    WriteOnly,
    /// It opens but reading it fails; grep's message.
    Unreadable(String),
}

/// The live values of a task's keys, read by one process however many
/// keys there are. The query is the root prefix of /proc/sys (`""`; only
/// tests point it elsewhere) and the normalized keys, sorted (see
/// [`live_query`]), which is the order of the answer.
struct LiveValues;

type LiveQuery = (String, Vec<String>);

fn live_query(root: &str, keys: impl IntoIterator<Item = String>) -> LiveQuery {
    let mut keys: Vec<String> = keys.into_iter().map(|k| normalize_key(&k)).collect();
    keys.sort();
    keys.dedup();
    (root.to_string(), keys)
}

/// A key's file, relative to /proc/sys: how the probe names it.
fn proc_rel(key: &str) -> String {
    components(key).join("/")
}

impl Fact for LiveValues {
    type Query = LiveQuery;
    type Value = std::collections::BTreeMap<String, Live>;

    fn key((_, keys): &LiveQuery) -> String {
        format!("sysctl:{}", keys.join(" "))
    }

    /// Every sysctl task of a host reads its live values in one `grep`.
    fn probe(q: &LiveQuery) -> Probe {
        Probe::new(Self::key(q), Self::script(q)).with_joint(Joint {
            group: format!("sysctl-live:{}", q.0),
            query: format!("{}\n{}", q.0, q.1.join(" ")),
            script: |queries| LiveValues::script(&joint_query(queries)),
            split: split_live,
        })
    }

    /// A status letter per key from shell builtins (`true <file` opens it
    /// in the shell), then one `grep` of the readable ones, which prints
    /// every line as `FILE\0LINE`. Not the shell's `read` (dash reads one
    /// byte at a time, and procfs answers a read past offset 0 with end of
    /// file, so `read` would see "1" of "10"), and not `wc` (procfs files
    /// have size 0).
    fn script((root, keys): &LiveQuery) -> String {
        let files: Vec<String> = keys.iter().map(|k| quote(&proc_rel(k))).collect();
        format!(
            r#"R={root}
LC_ALL=C; export LC_ALL
s=; set --
for f in {files}; do
  if ! [ -f "$R/proc/sys/$f" ]; then s=${{s}}m
  elif true 2>/dev/null <"$R/proc/sys/$f"; then s=${{s}}r; set -- "$@" "$f"
  else s=${{s}}w
  fi
done
printf '%s\n' "$s"
[ "$#" -gt 0 ] || exit 0
cd -- "$R/proc/sys" && exec grep -a -H -Z '' -- "$@""#,
            root = quote(root),
            files = files.join(" ")
        )
    }

    fn parse(q: &LiveQuery, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        parse_live(&q.1, r).map_err(|d| crate::modules::kit::fact::bad(Self::key(q), d))
    }

    fn render(values: &Self::Value) -> ProbeResult {
        let mut r = ProbeResult::default();
        let mut status = String::new();
        for (key, live) in values {
            let file = proc_rel(key);
            status.push(match live {
                Live::Missing => 'm',
                Live::WriteOnly => 'w',
                Live::Value(_) | Live::Unreadable(_) => 'r',
            });
            match live {
                Live::Value(v) => {
                    for line in v.lines() {
                        r.stdout.push_str(&format!("{file}\0{line}\n"));
                    }
                }
                Live::Unreadable(why) => {
                    r.rc = 2;
                    r.stderr.push_str(&format!("grep: {file}: {why}\n"));
                }
                Live::Missing | Live::WriteOnly => {}
            }
        }
        r.stdout.insert_str(0, &format!("{status}\n"));
        r
    }
}

/// The query of a joint probe: the root and every key of the queries
/// (`root\nkey key...`, as [`LiveValues::probe`] writes them), which share
/// their root.
fn joint_query(queries: &[&str]) -> LiveQuery {
    let root = queries
        .first()
        .and_then(|q| q.split_once('\n'))
        .map_or("", |(r, _)| r);
    let keys = queries
        .iter()
        .flat_map(|q| q.split_once('\n').map_or("", |(_, k)| k).split(' '));
    live_query(root, keys.filter(|k| !k.is_empty()).map(String::from))
}

/// Each query's answer, as its own probe would have given it, from the
/// joint one; when that cannot be read, each gets it as it is, to fail alike.
fn split_live(queries: &[&str], r: &ProbeResult) -> Vec<ProbeResult> {
    let all = joint_query(queries);
    let Ok(values) = parse_live(&all.1, r) else {
        return vec![r.clone(); queries.len()];
    };
    let own = |q: &&str| {
        let (_, keys) = joint_query(&[q]);
        let mine = values.iter().filter(|(k, _)| keys.contains(k));
        LiveValues::render(&mine.map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    queries.iter().map(own).collect()
}

/// [`LiveValues::script`]'s answer, by key. A read error is grep's
/// `grep: FILE: message`; anything else on a failed grep is an error.
fn parse_live(keys: &[String], r: &ProbeResult) -> Result<BTreeMap<String, Live>, String> {
    if !matches!(r.rc, 0..=2) {
        return Err(format!("exit {}: {}", r.rc, r.stderr.trim()));
    }
    let (status, lines) = r.stdout.split_once('\n').ok_or("no status line")?;
    if status.len() != keys.len() {
        return Err(format!("status {status:?} for {} keys", keys.len()));
    }
    let files: Vec<String> = keys.iter().map(|k| proc_rel(k)).collect();
    let readable = |f: &str| {
        let i = files.iter().position(|x| x == f)?;
        (status.as_bytes()[i] == b'r').then_some(i)
    };
    let mut read: Vec<Vec<&str>> = vec![Vec::new(); keys.len()];
    for line in lines.lines() {
        let i = line
            .split_once('\0')
            .and_then(|(f, text)| Some((readable(f)?, text)));
        let (i, text) = i.ok_or_else(|| format!("unexpected output: {line:?}"))?;
        read[i].push(text);
    }
    let mut failed: Vec<Option<&str>> = vec![None; keys.len()];
    if r.rc == 2 {
        for line in r.stderr.lines() {
            let error = line.strip_prefix("grep: ").and_then(|l| {
                let (file, why) = l.split_once(": ")?;
                Some((readable(file)?, why))
            });
            let (i, why) = error.ok_or_else(|| format!("grep failed: {}", r.stderr.trim()))?;
            failed[i] = Some(why);
        }
    }
    let mut out = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        let live = match (status.as_bytes()[i], failed[i]) {
            (b'm', _) => Live::Missing,
            (b'w', _) => Live::WriteOnly,
            (b'r', Some(why)) => Live::Unreadable(why.to_string()),
            (b'r', None) => Live::Value(read[i].join("\n").trim().to_string()),
            _ => return Err(format!("bad status {status:?}")),
        };
        out.insert(key.clone(), live);
    }
    Ok(out)
}

/// The step that sets one key live, without reloading anything else.
pub(crate) fn live_step(key: &str, value: &str) -> String {
    let v = value.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("printf '%s\\n' {} > {}", quote(&v), quote(&proc_path(key)))
}

/// The key a `key = value` line of a sysctl file assigns, if any.
pub(crate) fn line_key(line: &str) -> Option<(String, &str)> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
        return None;
    }
    let (k, v) = t.split_once('=')?;
    Some((normalize_key(k), v.trim()))
}

/// Applies every sysctl file, as `reload: system` asks.
const SYSTEM_RELOAD: &str =
    "if [ -x /usr/sbin/sysctl ]; then s=/usr/sbin/sysctl; else s=/sbin/sysctl; fi; \"$s\" --system";

#[derive(Clone, Debug, PartialEq)]
enum Form {
    /// nodeprov writes the whole file.
    Owned,
    /// Only the lines of this key change; no `settings` means state=absent.
    Lines { key: String },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reload {
    None,
    /// Write the changed keys to /proc/sys.
    Keys,
    /// Also run `sysctl --system`.
    System,
}

/// `reload`: a boolean, or `system` for `sysctl --system`.
impl ParamValue for Option<Reload> {
    fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
        if matches!(p.raw(key), Some(Value::String(s)) if s == "system") {
            return Ok(Some(Reload::System));
        }
        match p.bool(key) {
            Ok(b) => Ok(b.map(|on| if on { Reload::Keys } else { Reload::None })),
            Err(_) => Err(p.error(
                key,
                format!("parameter '{key}' must be a boolean or 'system'"),
            )),
        }
    }
    fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
        Ok(Self::read(p, key)?.or(default))
    }
}

struct Sysctl {
    file: String,
    form: Form,
    /// Wanted values in the order given.
    settings: Vec<(String, String)>,
    reload: Reload,
    ignore_errors: bool,
    /// The tuned profile this task makes active, names space-separated.
    tuned_profile: Option<String>,
    /// Prefix for every host path; only tests point it at a temp folder.
    root: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    Ok(Box::new(from_params(p)?))
}

fn from_params(p: &Params) -> Result<Sysctl, ParamError> {
    if p.has("settings") {
        for other in SINGLE_KEY_ONLY {
            if p.has(other) {
                return Err(p.error(
                    other,
                    format!("'{other}' cannot be combined with 'settings'"),
                ));
            }
        }
    }
    let a = SysctlArgs::read(p)?;
    let tuned_profile = checked_profile(p, a.tuned_profile.as_deref())?;
    let mut s = match a.settings {
        Some(ref map) => build_map(p, map, &a),
        None => build_ansible(p, a),
    }?;
    s.tuned_profile = tuned_profile;
    Ok(s)
}

/// Profile names as tuned-adm takes them: words of letters, digits, `-`, `_` and `.`.
fn checked_profile(p: &Params, names: Option<&str>) -> Result<Option<String>, ParamError> {
    let Some(names) = names else {
        return Ok(None);
    };
    let words: Vec<&str> = names.split_whitespace().collect();
    let bad = |w: &&str| {
        w.starts_with(['-', '.'])
            || !w
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if words.is_empty() || words.iter().any(bad) {
        return Err(p.error(
            "tuned_profile",
            format!("'{names}' is not a tuned profile name (letters, digits, '-', '_', '.')"),
        ));
    }
    Ok(Some(words.join(" ")))
}

fn build_map(
    p: &Params,
    map: &serde_json::Map<String, Value>,
    a: &SysctlArgs,
) -> Result<Sysctl, ParamError> {
    if map.is_empty() {
        return Err(p.error("settings", "'settings' must name at least one key"));
    }
    let mut settings: Vec<(String, String)> = Vec::new();
    for (k, v) in map {
        let key = checked_key(p, "settings", k)?;
        if settings.iter().any(|(s, _)| *s == key) {
            return Err(p.error("settings", format!("key {key} is given twice")));
        }
        settings.push((key, checked_value(p, "settings", v)?));
    }
    let file = a.file.clone().ok_or_else(|| {
        let mut e = p.error(
            "file",
            "the 'settings' form needs 'file', the drop-in nodeprov owns",
        );
        e.hint = Some("e.g. file: /etc/sysctl.d/99-zz-nodeprov.conf".into());
        e
    })?;
    Ok(Sysctl {
        file: checked_path(p, "file", file)?,
        form: Form::Owned,
        settings,
        reload: a.reload.unwrap_or(Reload::Keys),
        ignore_errors: a.ignoreerrors,
        tuned_profile: None,
        root: String::new(),
    })
}

fn build_ansible(p: &Params, a: SysctlArgs) -> Result<Sysctl, ParamError> {
    if a.file.is_some() {
        return Err(p.error(
            "file",
            "'file' goes with 'settings'; with 'name' use 'sysctl_file'",
        ));
    }
    let Some(raw) = a.name else {
        return Err(p.error("name", "missing required parameter 'name' (or 'settings')"));
    };
    let key = checked_key(p, "name", &raw)?;
    let present = a.state == Presence::Present;
    let value = match &a.value {
        Some(v) => Some(checked_value(p, "value", v)?),
        None => None,
    };
    let settings = match value {
        Some(v) if present => vec![(key.clone(), v)],
        None if present => return Err(p.error("value", "state=present needs 'value'")),
        _ => Vec::new(),
    };
    // Ansible sets the live value on `reload` (default) or `sysctl_set`.
    let reload = match a.reload.unwrap_or(Reload::Keys) {
        Reload::None if a.sysctl_set => Reload::Keys,
        r => r,
    };
    let file = a.sysctl_file.unwrap_or_else(|| config::SYSCTL_CONF.into());
    Ok(Sysctl {
        file: checked_path(p, "sysctl_file", file)?,
        form: Form::Lines { key },
        settings,
        reload,
        ignore_errors: a.ignoreerrors,
        tuned_profile: None,
        root: String::new(),
    })
}

/// A key that names one file under /proc/sys: no globs (they cannot be set
/// live), no `..`, nothing that would break a `key = value` line.
fn checked_key(p: &Params, param: &str, raw: &str) -> Result<String, ParamError> {
    let key = normalize_key(raw);
    let bad = |why: &str| Err(p.error(param, format!("invalid sysctl key '{raw}': {why}")));
    if key.contains(['*', '?', '[']) {
        return bad("glob keys can only be written to files by hand");
    }
    if key.contains(|c: char| c.is_whitespace() || c.is_control() || c == '=') {
        return bad("it contains whitespace or '='");
    }
    if components(&key)
        .iter()
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return bad("it has an empty, '.' or '..' part");
    }
    Ok(key)
}

/// Text as `/proc` prints it: booleans as 1/0, lists joined by spaces; one line.
fn checked_value(p: &Params, param: &str, v: &Value) -> Result<String, ParamError> {
    let text = match v {
        Value::Bool(b) => if *b { "1" } else { "0" }.to_string(),
        Value::Array(items) if items.iter().all(|i| i.is_string() || i.is_number()) => {
            items.iter().map(scalar_text).collect::<Vec<_>>().join(" ")
        }
        Value::String(_) | Value::Number(_) => scalar_text(v),
        _ => return Err(p.error(param, format!("parameter '{param}' needs scalar values"))),
    };
    if text.contains(['\n', '\r']) || text.trim().is_empty() {
        return Err(p.error(
            param,
            format!("invalid sysctl value {text:?}: must be one non-empty line"),
        ));
    }
    Ok(text.trim().to_string())
}

fn checked_path(p: &Params, param: &str, path: String) -> Result<String, ParamError> {
    if !path.starts_with('/') || path.ends_with('/') {
        return Err(p.error(param, format!("'{path}' must be an absolute file path")));
    }
    Ok(path)
}

impl Module for Sysctl {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![FileFact::probe(&self.host_path(&self.file))];
        if self.file != config::SYSCTL_CONF {
            // What EL's `99-sysctl.conf` link writes through to, in the same probe.
            probes.push(FileFact::probe(&self.host_path(config::SYSCTL_CONF)));
        }
        if !self.settings.is_empty() {
            probes.push(SysctlFiles::probe(&self.root));
            probes.push(LiveValues::probe(&self.live_all()));
        }
        if !self.settings.is_empty() || self.tuned_profile.is_some() {
            probes.push(TunedProfile::probe(&self.root));
        }
        if let Some(profile) = &self.tuned_profile {
            probes.push(TunedCandidate::probe(&(self.root.clone(), profile.clone())));
        }
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let file = self.target(facts)?;
        let path = self.host_path(&file);
        let current = FileFact::read(facts, &path)?;
        // A file it cannot read as text is refused, never taken for empty.
        let text = files::text_to_edit(&path, current.as_ref(), files::WhenMissing::Create)?
            .unwrap_or_default();
        let new_text = self.render(&text);
        let mut plan = if current.is_none() && new_text.is_empty() {
            Plan::noop()
        } else {
            files::plan_content(
                &path,
                current.as_ref(),
                &new_text,
                &WriteOpts::default(),
                true,
            )?
        };
        let switch = self.tuned_switch(facts)?;
        if !self.settings.is_empty() {
            self.plan_keys(facts, &file, &text, &new_text, switch.as_ref(), &mut plan)?;
        } else if let Some(to) = &switch {
            self.push_switch(
                TunedProfile::read(facts, &self.root)?.as_ref(),
                to,
                &mut plan,
            );
        }
        Ok(plan)
    }
}

/// The sysctl configuration now, after this task's file is written, and
/// the tuned profile active now and after this task.
struct Host {
    now: Vec<ConfFile>,
    after: Vec<ConfFile>,
    tuned: Option<Tuned>,
    tuned_after: Option<Tuned>,
}

/// What is known about one key, for evidence and notes.
struct KeyFacts<'a> {
    live: &'a str,
    boot: Option<&'a Winner>,
    tuned: Option<&'a Tuned>,
    key: &'a str,
}

impl std::fmt::Display for KeyFacts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "live {}; ", self.live)?;
        match self.boot {
            Some(w) => write!(f, "at boot {} from {}", w.value, w.origin)?,
            None => write!(f, "at boot unset (kernel default)")?,
        }
        let Some(t) = self.tuned else {
            return write!(f, "; no tuned profile active");
        };
        match (t.value(self.key), t.reapply) {
            (None, _) => write!(f, "; tuned profile '{}' does not set it", t.profile),
            (Some(v), true) => write!(
                f,
                "; tuned profile '{}' sets {v}, /etc and /run files win (reapply_sysctl=1)",
                t.profile
            ),
            (Some(v), false) => write!(
                f,
                "; tuned profile '{}' sets {v} and wins over files (reapply_sysctl=0)",
                t.profile
            ),
        }
    }
}

impl Sysctl {
    /// The file to write: `file` itself, or `/etc/sysctl.conf` when `file` is
    /// a link to it (EL's `/etc/sysctl.d/99-sysctl.conf`), written through as
    /// Ansible does, so the link stays. Any other link is refused.
    fn target(&self, facts: &Facts) -> Result<String, ModuleError> {
        let current = FileFact::read(facts, &self.host_path(&self.file))?;
        let Some(link) = current.as_ref().and_then(|s| s.link_target.as_ref()) else {
            return Ok(self.file.clone());
        };
        let real = ConfFile::new(&self.file, Some(link), None).real();
        if real == config::SYSCTL_CONF {
            return Ok(real);
        }
        Err(ModuleError::Refused(format!(
            "{} is a symlink to {link}; writing it would replace the link (and whatever reads through it), so name the target file instead",
            self.file
        )))
    }

    /// The profile this task makes active, when it is not active yet.
    fn tuned_switch(&self, facts: &Facts) -> Result<Option<Tuned>, ModuleError> {
        let Some(want) = &self.tuned_profile else {
            return Ok(None);
        };
        let now = TunedProfile::read(facts, &self.root)?;
        if now.is_some_and(|t| t.profile == *want) {
            return Ok(None);
        }
        let to = TunedCandidate::read(facts, &(self.root.clone(), want.clone()))?;
        to.map(Some).ok_or_else(|| {
            ModuleError::Absent(format!(
                "tuned has no profile '{want}' (looked in /etc/tuned and /usr/lib/tuned)"
            ))
        })
    }

    /// `tuned-adm profile`, which writes /etc/tuned/active_profile and
    /// (re)starts tuned to apply it.
    fn push_switch(&self, now: Option<&Tuned>, to: &Tuned, plan: &mut Plan) {
        let before = now.map_or("none".to_string(), |t| t.profile.clone());
        plan.changes.push(
            Change::new("tuned profile", Some(before), Some(to.profile.clone()))
                .with_evidence("/etc/tuned/active_profile"),
        );
        let names: Vec<String> = to.profile.split_whitespace().map(quote).collect();
        plan.steps.push(format!(
            "tuned-adm profile {} || {{ echo 'tuned-adm profile failed' >&2; exit 1; }}",
            names.join(" ")
        ));
        plan.effects
            .push(TunedProfile::predict(&self.root, &Some(to.clone())));
    }

    /// Every key of the task, read by one probe.
    fn live_all(&self) -> LiveQuery {
        live_query(&self.root, self.settings.iter().map(|(k, _)| k.clone()))
    }

    /// One key alone: where its predicted value goes, and where a probe
    /// for it alone (another task's) put what it read.
    fn live(&self, key: &str) -> LiveQuery {
        live_query(&self.root, [key.to_string()])
    }

    fn host_path(&self, path: &str) -> String {
        format!("{}{path}", self.root)
    }

    /// The file as it should be.
    fn render(&self, text: &str) -> String {
        match &self.form {
            Form::Owned => {
                let lines: String = self
                    .settings
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}\n"))
                    .collect();
                format!("{HEADER}{lines}")
            }
            Form::Lines { key } => edit(text, key, self.settings.first().map(|(_, v)| v.as_str())),
        }
    }

    fn plan_keys(
        &self,
        facts: &Facts,
        file: &str,
        text: &str,
        new_text: &str,
        switch: Option<&Tuned>,
        plan: &mut Plan,
    ) -> Result<(), ModuleError> {
        let now = SysctlFiles::read(facts, &self.root)?;
        let tuned = TunedProfile::read(facts, &self.root)?;
        let host = Host {
            after: config::with_file(&now, file, new_text),
            now,
            tuned_after: switch.cloned().or_else(|| tuned.clone()),
            tuned,
        };
        let mut live_steps = Vec::new();
        for (key, want) in &self.settings {
            if let Some(live) = self.live_value(facts, key, plan)? {
                live_steps.extend(self.plan_key(key, want, &live, &host, plan));
            }
        }
        if self.reload == Reload::System && !plan.changes.is_empty() {
            plan.steps.push(SYSTEM_RELOAD.to_string());
        }
        if let Some(to) = switch {
            self.push_switch(host.tuned.as_ref(), to, plan);
        }
        plan.steps.extend(live_steps);
        if new_text != text {
            plan.effects
                .push(SysctlFiles::predict(&self.root, &host.after));
        }
        Ok(())
    }

    /// Drift, evidence and notes for one key; returns its live step, if any.
    fn plan_key(
        &self,
        key: &str,
        want: &str,
        live: &str,
        host: &Host,
        plan: &mut Plan,
    ) -> Option<String> {
        let tuned = host.tuned.as_ref();
        let now = config::boot(key, &host.now, tuned);
        let next = config::boot(key, &host.after, host.tuned_after.as_ref());
        let known = KeyFacts {
            live,
            boot: now.as_ref(),
            tuned,
            key,
        }
        .to_string();
        let mut evidence = known.clone();
        if !next.as_ref().is_some_and(|w| same_value(&w.value, want)) {
            let why = self.shadowed(key, next.as_ref(), &host.after);
            evidence.push_str(&format!("; after this change {why}"));
            plan.notes.push(format!("{key}: {why}"));
        } else if let Some(w) = config::procps_override(key, &host.after, next.as_ref()) {
            plan.notes.push(format!(
                "{key}: {} sets {}; systemd-sysctl does not read it at boot, but `sysctl --system` applies it last",
                w.origin, w.value
            ));
        }
        let live_drift = self.reload != Reload::None && !same_value(live, want);
        let boot_drift = !now.as_ref().is_some_and(|w| same_value(&w.value, want));
        if live_drift {
            plan.changes.push(
                Change::new(key, Some(live.into()), Some(want.into())).with_evidence(&evidence),
            );
            plan.effects.push(LiveValues::predict(
                &self.live(key),
                &[(key.to_string(), Live::Value(want.to_string()))].into(),
            ));
        }
        if boot_drift {
            let before = now.map_or("unset".to_string(), |w| w.value);
            plan.changes.push(
                Change::new(format!("{key} at boot"), Some(before), Some(want.into()))
                    .with_evidence(evidence),
            );
        }
        if !live_drift && !boot_drift {
            plan.notes.push(format!("{key} = {want} ({known})"));
        }
        live_drift.then(|| live_step(key, want))
    }

    /// The live value, or `None` for a key this kernel lacks (when ignored).
    fn live_value(
        &self,
        facts: &Facts,
        key: &str,
        plan: &mut Plan,
    ) -> Result<Option<String>, ModuleError> {
        // What is known of the key alone (a prediction, another task's
        // probe) is as new as this task's probe of all its keys, or newer.
        let alone = self.live(key);
        let query = match facts.contains(&LiveValues::key(&alone)) {
            true => alone,
            false => self.live_all(),
        };
        let path = proc_path(key);
        let (note, error) = match LiveValues::read(facts, &query)?.remove(key) {
            Some(Live::Value(v)) => return Ok(Some(v)),
            Some(Live::Missing) => (
                "not available on this kernel".to_string(),
                format!("unknown sysctl key {key} on this kernel ({path} missing; its module may not be loaded)"),
            ),
            Some(Live::WriteOnly) => {
                let why = format!("write-only ({path} cannot be read, so its value cannot be compared)");
                (why.clone(), format!("sysctl key {key} is {why}"))
            }
            Some(Live::Unreadable(e)) => {
                let why = format!("unreadable ({path}: {e})");
                (why.clone(), format!("sysctl key {key} is {why}"))
            }
            None => {
                return Err(ModuleError::Fact {
                    key: LiveValues::key(&query),
                    detail: format!("no answer for {key}"),
                })
            }
        };
        if self.ignore_errors {
            plan.notes.push(format!("{key}: {note} (ignored)"));
            return Ok(None);
        }
        Err(ModuleError::Absent(format!(
            "{error}; set ignoreerrors: true to skip it"
        )))
    }

    /// Why our file does not decide `key` at boot, and what would.
    fn shadowed(&self, key: &str, w: Option<&Winner>, after: &[ConfFile]) -> String {
        let later = config::later_name(key, after);
        let Some(w) = w else {
            return format!(
                "{} is not read at boot (systemd-sysctl reads only sysctl.d folders); use /etc/sysctl.d/{later}",
                self.file
            );
        };
        match &w.origin {
            config::Origin::Tuned { profile } => format!(
                "tuned profile '{profile}' still sets {} at boot and wins over files (reapply_sysctl=0); set the value in the profile or reapply_sysctl=1 in /etc/tuned/tuned-main.conf",
                w.value
            ),
            origin => format!(
                "{} is shadowed: {origin} still sets {} at boot; name the drop-in /etc/sysctl.d/{later} so that it sorts last",
                self.file, w.value
            ),
        }
    }
}

/// `text` with `key` set to `value` (or removed): its lines are replaced in
/// place, everything else stays.
fn edit(text: &str, key: &str, value: Option<&str>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut found = false;
    for line in text.lines() {
        match line_key(line) {
            Some((k, v)) if k == key => {
                found = true;
                match value {
                    Some(want) if same_value(v, want) => out.push(line.to_string()),
                    Some(want) => out.push(format!("{key} = {want}")),
                    None => {}
                }
            }
            _ => out.push(line.to_string()),
        }
    }
    if let (Some(want), false) = (value, found) {
        out.push(format!("{key} = {want}"));
    }
    if out.iter().map(String::as_str).eq(text.lines()) {
        return text.to_string();
    }
    out.iter().map(|l| format!("{l}\n")).collect()
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    let live = live_query("", ["net.ipv4.tcp_rmem".to_string()]);
    rt.check::<LiveValues>(&live, [("net.ipv4.tcp_rmem".into(), Live::Missing)].into());
    rt.check::<LiveValues>(
        &live,
        [(
            "net.ipv4.tcp_rmem".into(),
            Live::Value("4096 87380 6291456".into()),
        )]
        .into(),
    );
    let keys = ["vm.a", "vm.b", "vm.c", "vm.d", "vm.e"].map(String::from);
    rt.check::<LiveValues>(
        &live_query("", keys.clone()),
        keys.into_iter()
            .zip([
                Live::Value("1\t2".into()),
                Live::Value(String::new()),
                Live::Missing,
                Live::WriteOnly,
                Live::Unreadable("Input/output error".into()),
            ])
            .collect(),
    );
    rt.check::<SysctlFiles>("", Vec::new());
    rt.check::<SysctlFiles>(
        "",
        vec![
            ConfFile::new(
                "/etc/sysctl.d/90-gpu.conf",
                None,
                Some("vm.swappiness = 10\n"),
            ),
            ConfFile::new(
                "/etc/sysctl.d/99-sysctl.conf",
                Some("../sysctl.conf"),
                Some(""),
            ),
            ConfFile::new("/etc/sysctl.d/50-x.conf", Some("/dev/null"), None),
        ],
    );
    rt.check::<TunedProfile>("", None);
    let candidate = (String::new(), "virtual-guest".to_string());
    rt.check::<TunedCandidate>(&candidate, None);
    rt.check::<TunedCandidate>(
        &candidate,
        Some(Tuned {
            profile: "virtual-guest".into(),
            sysctl: [("vm.dirty_ratio".to_string(), "30".to_string())].into(),
            reapply: true,
        }),
    );
    rt.check::<TunedProfile>(
        "",
        Some(Tuned {
            profile: "throughput-performance virtual-guest".into(),
            sysctl: [("vm.swappiness".to_string(), "30".to_string())].into(),
            reapply: false,
        }),
    );
}

#[cfg(test)]
mod tests;
