//! Running a playbook: hosts in rolling batches (`serial`), each host in
//! its own worker, at most `--forks` at once; a batch that fails more than
//! `max_fail_percentage` halts the rollout.

mod built;
mod host;
mod instance;
mod once;
mod outcome;
#[cfg(test)]
mod play_tests;
pub mod pool;
mod prepared;
#[cfg(test)]
mod reboot_tests;
pub mod result;
mod run_inventory;
#[cfg(test)]
mod run_tests;
mod task_user;
mod throttle;
pub(crate) mod vars;
mod wire;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::base::diag::Diagnostic;
use crate::base::fd_limit;
use crate::load::inventory::{Inventory, PatternError};
use crate::load::playbook::{BatchSize, Play, Playbook};
use crate::modules::params::Sources;
use crate::remote::deferred::Deferred;
use crate::remote::{Transport, TransportError};
use crate::template::{HostVars, Kept, Templates};
use host::HostRun;
pub use prepared::RunOptions;
use prepared::{PlayCtx, PreparedPlay};
use result::HostReport;
use run_inventory::RunInventory;
use vars::{PlayVars, VarLayers};

/// Opens the transport to a host from its merged inventory variables.
pub type Connector =
    dyn Fn(&str, &Map<String, Value>) -> Result<Box<dyn Transport>, TransportError> + Sync;

/// Opens the transport to a host a task is delegated to, by its name (or
/// the controller's own, when asked).
pub(crate) type Opener<'a> =
    dyn Fn(&str, bool) -> Result<Box<dyn Transport>, TransportError> + Sync + 'a;

pub struct RunRequest<'a> {
    pub playbook: &'a Playbook,
    pub inventory: &'a Inventory,
    pub limit: Option<&'a str>,
    /// `--shard`: only these hosts, whatever the plays select.
    pub shard: Option<&'a HashSet<String>>,
    pub opts: RunOptions,
    pub extra_vars: Map<String, Value>,
    pub forks: usize,
    pub connect: &'a Connector,
}

#[derive(Default)]
pub struct RunOutcome {
    pub reports: Vec<HostReport>,
    /// Hosts a halted rollout never reached.
    pub never_touched: Vec<String>,
    pub halted: Option<String>,
}

/// What a run tells its reporter while it goes.
pub enum Event<'a> {
    /// A rolling batch starts: `number` of `of`, with these hosts.
    Batch {
        play: &'a str,
        number: usize,
        of: usize,
        hosts: &'a [String],
    },
    /// A host finished a play.
    Host(&'a HostReport),
}

/// Runs every play; reports each host as soon as it finishes a play.
pub fn run_playbook(
    req: &RunRequest,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<RunOutcome, Vec<Diagnostic>> {
    let base = req
        .playbook
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    // The inventory as the plays so far left it (`group_by`), and the
    // templates that see it, made again only when a play changed it.
    // Borrowed until a play changed it: a fleet's inventory is copied once
    // at the start, into the run inventory.
    let mut inventory = std::borrow::Cow::Borrowed(req.inventory);
    let run_inventory = Arc::new(RunInventory::new(req.inventory.clone()));
    let run_opts = &req.opts;
    let kept = Arc::new(Kept::default());
    let run = (&kept, &run_inventory);
    let (mut run_wide, mut run_wide_lenient) = run_templates(&base, &inventory, run_opts, run);
    let playbook_folder = crate::modules::params::playbook_folder(&req.playbook.path);
    let sources = Sources::default();
    let sessions = Sessions::default();
    let mut rollout = Rollout::default();
    for (p, play) in req.playbook.plays.iter().enumerate() {
        let req = &RunRequest {
            inventory: &inventory,
            extra_vars: req.extra_vars.clone(),
            opts: req.opts.clone(),
            ..*req
        };
        let templates = run_wide.for_play(play.dir());
        let lenient = run_wide_lenient.for_play(play.dir());
        let play_vars = PlayVars::load(play, play.dir(), &templates, &req.extra_vars)
            .map(Arc::new)
            .map_err(|d| vec![d])?;
        let pattern = vars::host_pattern(play, &templates, &play_vars.known(), &req.extra_vars)
            .map_err(|d| vec![d])?;
        let hosts = select_hosts(req, p, &pattern, &rollout.failed_hosts)?;
        let later = hosts_of_later_plays(req, p, &templates);
        let prepared = PreparedPlay::new(play, &templates, &req.opts);
        let open_delegate = |target: &str, controller: bool| {
            open_delegate(req, play, &run_inventory, target, controller)
        };
        let ctx = PlayCtx {
            play,
            prepared: &prepared,
            templates: &templates,
            lenient: &lenient,
            playbook_folder: &playbook_folder,
            sources: &sources,
            opts: &req.opts,
            open_delegate: &open_delegate,
            inventory: &run_inventory,
        };
        let keep = Keep {
            sessions: &sessions,
            later: &later,
        };
        let halted = rollout.play(req, &ctx, &play_vars, &hosts, &keep, on_event);
        if halted {
            break;
        }
        if let Some(changed) = run_inventory.settled() {
            inventory = std::borrow::Cow::Owned(changed);
            (run_wide, run_wide_lenient) = run_templates(&base, &inventory, run_opts, run);
        }
    }
    Ok(rollout.outcome)
}

/// Templates that see every host's variables in the inventory as it is
/// now and what the run kept of each, and their lenient twin. A host a
/// task adds (`add_host`) is in `hostvars` from then on.
fn run_templates(
    base: &Path,
    inventory: &Inventory,
    opts: &RunOptions,
    (kept, run_inventory): (&Arc<Kept>, &Arc<RunInventory>),
) -> (Templates, Templates) {
    let snapshot = inventory.clone();
    let live = run_inventory.clone();
    let hostvars = HostVars::new(
        inventory.hosts(),
        move |h: &str| snapshot.host_vars(h),
        kept.clone(),
    )
    .with_added(move |h: &str| live.host_vars(h));
    let hostvars = Arc::new(hostvars);
    let managed = opts.ansible_managed.as_deref();
    let groups = inventory.groups_var();
    let templates = Templates::new()
        .with_run(base, hostvars.clone(), groups)
        .with_managed(managed);
    let lenient = Templates::new()
        .with_run(base, hostvars, groups)
        .with_managed(managed)
        .into_lenient();
    (templates, lenient)
}

/// What the plays so far came to.
#[derive(Default)]
struct Rollout {
    outcome: RunOutcome,
    /// Later plays leave these hosts out.
    failed_hosts: Vec<String>,
}

impl Rollout {
    /// Runs one play's batches in turn; true when the rollout halts.
    fn play(
        &mut self,
        req: &RunRequest,
        ctx: &PlayCtx,
        play_vars: &Arc<PlayVars>,
        hosts: &[String],
        keep: &Keep,
        on_event: &(dyn Fn(Event) + Sync),
    ) -> bool {
        let play = ctx.play;
        let batches = batches(hosts, &play.serial);
        let run = (&req.opts, req.forks, req.limit);
        let magic = vars::play_magic(run, (&play.name, &play.roles));
        for (n, batch) in batches.iter().enumerate() {
            on_event(Event::Batch {
                play: &play.name,
                number: n + 1,
                of: batches.len(),
                hosts: batch,
            });
            let failed: HashSet<&String> = self.failed_hosts.iter().collect();
            let active: Vec<String> = hosts
                .iter()
                .filter(|h| !failed.contains(h))
                .cloned()
                .collect();
            let templates = ctx.templates.for_batch(hosts, &active, batch);
            let lenient = ctx.lenient.for_batch(hosts, &active, batch);
            let ctx = &PlayCtx {
                templates: &templates,
                lenient: &lenient,
                ..*ctx
            };
            let reports = run_batch(req, ctx, (play_vars, &magic), batch, keep, on_event);
            let failed: Vec<String> = reports
                .iter()
                .filter(|r| r.failed())
                .map(|r| r.host.clone())
                .collect();
            let failed_count = failed.len();
            self.failed_hosts.extend(failed);
            self.outcome.reports.extend(reports);
            if let Some(why) = halt_reason(play, batch.len(), failed_count) {
                self.outcome.never_touched = batches[n + 1..].iter().flatten().cloned().collect();
                self.outcome.halted = Some(format!("play '{}': {why}", play.name));
                return true;
            }
        }
        false
    }
}

/// Every host a play after `p` may select (before failures narrow it):
/// only their connections are worth keeping open.
fn hosts_of_later_plays(req: &RunRequest, p: usize, templates: &Templates) -> HashSet<String> {
    req.playbook.plays[p + 1..]
        .iter()
        .filter_map(|play| vars::host_pattern(play, templates, &play.vars, &req.extra_vars).ok())
        .flat_map(|pattern| req.inventory.select(&pattern).unwrap_or_default())
        .collect()
}

fn select_hosts(
    req: &RunRequest,
    p: usize,
    pattern: &str,
    failed: &[String],
) -> Result<Vec<String>, Vec<Diagnostic>> {
    let play = &req.playbook.plays[p];
    let pattern_error = |span: &crate::base::diag::Span| {
        let span = span.clone();
        move |e: PatternError| vec![Diagnostic::new(&span, e.to_string())]
    };
    let mut hosts = match req.inventory.select(pattern) {
        // A group an earlier group_by did not make after all: Ansible
        // skips the play too.
        Err(PatternError::NoMatch { .. }) if req.playbook.groups_made_before(p) => Vec::new(),
        other => other.map_err(pattern_error(&play.span))?,
    };
    if let Some(limit) = req.limit {
        // A bad --limit is the command line's fault, not the play's.
        let at = crate::base::diag::Span::synthetic("--limit");
        let allowed = req.inventory.select(limit).map_err(pattern_error(&at))?;
        hosts.retain(|h| allowed.contains(h));
    }
    hosts.retain(|h| !failed.contains(h) && req.shard.is_none_or(|s| s.contains(h)));
    play.order.arrange(&mut hosts);
    Ok(hosts)
}

/// Why the rollout stops after a batch, if it does.
fn halt_reason(play: &Play, size: usize, failed: usize) -> Option<String> {
    if failed == 0 {
        return None;
    }
    if play.any_errors_fatal {
        return Some(format!(
            "{failed} host(s) failed and any_errors_fatal is set"
        ));
    }
    let pct = 100.0 * failed as f64 / size as f64;
    match play.max_fail_percentage {
        Some(max) if pct > max => Some(format!(
            "{pct:.0}% of the batch failed, more than max_fail_percentage {max}%"
        )),
        None if failed == size && !play.serial.is_empty() => {
            Some("every host of the batch failed".into())
        }
        _ => None,
    }
}

/// Splits hosts as `serial` asks; the last size repeats, as in Ansible.
fn batches(hosts: &[String], serial: &[BatchSize]) -> Vec<Vec<String>> {
    if serial.is_empty() {
        return vec![hosts.to_vec()];
    }
    let total = hosts.len();
    let mut out = Vec::new();
    let mut rest = hosts;
    let mut i = 0;
    while !rest.is_empty() {
        let n = match &serial[i.min(serial.len() - 1)] {
            BatchSize::Count(n) => *n,
            BatchSize::Percent(p) => ((total as f64 * p / 100.0) as usize).max(1),
        }
        .clamp(1, rest.len());
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// The play's variables, and the magic ones of the batch.
type BatchVars<'a> = (&'a Arc<PlayVars>, &'a Map<String, Value>);

fn run_batch(
    req: &RunRequest,
    ctx: &PlayCtx,
    play_vars: BatchVars,
    batch: &[String],
    keep: &Keep,
    on_event: &(dyn Fn(Event) + Sync),
) -> Vec<HostReport> {
    let once = once::Once::new(batch);
    pool::in_parallel(batch, req.forks, |host| {
        let report = run_host(req, ctx, play_vars, host, keep, &once);
        once.leave(host);
        on_event(Event::Host(&report));
        report
    })
}

/// Connections kept open between plays for hosts a later play selects.
/// A host's connection is otherwise closed as soon as it is done with the
/// play, so open files grow with `--forks`, not with the fleet.
#[derive(Default)]
struct Sessions(Mutex<HashMap<String, Box<dyn Transport>>>);

/// How one play treats the connections of its hosts.
struct Keep<'a> {
    sessions: &'a Sessions,
    later: &'a HashSet<String>,
}

impl Keep<'_> {
    fn take(&self, host: &str) -> Option<Box<dyn Transport>> {
        self.sessions.0.lock().unwrap().remove(host)
    }

    /// Keeps the connection while kept ones use at most half the open-file
    /// limit, leaving the rest to the workers; beyond that a later play
    /// connects again.
    fn keep(&self, host: &str, transport: Box<dyn Transport>) {
        let mut open = self.sessions.0.lock().unwrap();
        let room = fd_limit::soft() / 2 > fd_limit::in_use();
        if self.later.contains(host) && room {
            open.insert(host.to_string(), transport);
        }
    }
}

/// A host's connection variables: its inventory's, with the play's
/// keywords where the inventory says nothing, as in Ansible.
fn connection_vars(req: &RunRequest, play: &Play, host: &str) -> Map<String, Value> {
    with_play_keywords(req.inventory.run_vars(host), play)
}

/// A host's variables with the play's `remote_user` and `connection` where
/// they name none.
fn with_play_keywords(mut vars: Map<String, Value>, play: &Play) -> Map<String, Value> {
    let keywords = [
        ("ansible_user", &play.remote_user),
        ("ansible_connection", &play.connection),
    ];
    for (name, value) in keywords {
        if let Some(v) = value {
            vars.entry(name).or_insert(v.as_str().into());
        }
    }
    vars
}

/// A delegated task's target: an inventory host as the inventory says
/// (one an earlier task added with `add_host` too), the controller itself
/// (Ansible's implicit localhost) when not in it or when the task's
/// connection is local, any other name as an address with the play's
/// settings.
fn open_delegate(
    req: &RunRequest,
    play: &Play,
    run_inventory: &RunInventory,
    target: &str,
    controller: bool,
) -> Result<Box<dyn Transport>, TransportError> {
    let (listed, vars) = run_inventory.run_vars(target);
    let implicit = !listed && matches!(target, "localhost" | "127.0.0.1" | "::1");
    if controller || implicit {
        return Ok(Box::new(crate::remote::local::LocalTransport));
    }
    (req.connect)(target, &with_play_keywords(vars, play))
}

fn run_host(
    req: &RunRequest,
    ctx: &PlayCtx,
    (play_vars, magic): BatchVars,
    host: &str,
    keep: &Keep,
    once: &once::Once,
) -> HostReport {
    let inventory = connection_vars(req, ctx.play, host);
    let mut with_magic = req.inventory.run_vars(host);
    with_magic.extend(magic.clone());
    // Ansible's play context names the connection the host is reached by.
    let connection = inventory.get("ansible_connection").cloned();
    with_magic
        .entry("ansible_connection")
        .or_insert(connection.unwrap_or_else(|| "ssh".into()));
    // What the host's earlier plays gathered and set.
    let kept = ctx.templates.kept().map(|k| k.of(host)).unwrap_or_default();
    let layers = VarLayers {
        inventory: with_magic,
        facts: kept.facts,
        play: play_vars.known(),
        registered: kept.set,
        extra: req.extra_vars.clone(),
        play_files: play_vars.per_host().then(|| play_vars.clone()),
        roles: ctx.play.roles.clone(),
    };
    let transport = match keep.take(host) {
        Some(t) => Ok(t),
        None => (req.connect)(host, &inventory),
    };
    match transport {
        Ok(mut transport) => {
            let report = HostRun::new(ctx, host, layers, transport.as_mut(), once).run();
            if report.unreachable.is_none() {
                keep.keep(host, transport);
            }
            report
        }
        Err(_) if ctx.prepared.waits_first(ctx.play) => {
            let mut deferred = Deferred::new(|| (req.connect)(host, &inventory));
            let report = HostRun::new(ctx, host, layers, &mut deferred, once).run();
            if let (None, Some(transport)) = (&report.unreachable, deferred.into_inner()) {
                keep.keep(host, transport);
            }
            report
        }
        Err(e) => HostReport {
            host: host.to_string(),
            play: ctx.play.name.clone(),
            unreachable: Some(e.to_string()),
            tasks: Vec::new(),
            round_trips: 0,
            duration_ms: 0,
            probes: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h{i}")).collect()
    }

    #[test]
    fn serial_list_repeats_last_size() {
        let b = batches(&names(10), &[BatchSize::Count(1), BatchSize::Percent(30.0)]);
        let sizes: Vec<usize> = b.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1, 3, 3, 3]);
        assert_eq!(batches(&names(3), &[]), vec![names(3)]);
    }
}
