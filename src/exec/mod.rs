//! Running a playbook: hosts in rolling batches (`serial`), each host in
//! its own worker, at most `--forks` at once; a batch that fails more than
//! `max_fail_percentage` halts the rollout.

mod host;
mod instance;
mod once;
mod outcome;
mod prepared;
pub mod result;
#[cfg(test)]
mod run_tests;
pub(crate) mod vars;
mod wire;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::load::diag::Diagnostic;
use crate::load::inventory::Inventory;
use crate::load::playbook::{BatchSize, Play, Playbook};
use crate::load::yaml::{self, Node};
use crate::modules::params::Sources;
use crate::remote::{fd_limit, Transport, TransportError};
use crate::template::Templates;
use host::HostRun;
pub use prepared::RunOptions;
use prepared::{PlayCtx, PreparedPlay};
use result::HostReport;
use vars::VarLayers;

/// Opens the transport to a host from its merged inventory variables.
pub type Connector =
    dyn Fn(&str, &Map<String, Value>) -> Result<Box<dyn Transport>, TransportError> + Sync;

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
    let templates = Templates::new();
    let lenient = Templates::lenient();
    let base = req
        .playbook
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let search_dirs = crate::modules::params::search_dirs(&req.playbook.path);
    let sources = Sources::default();
    let sessions = Sessions::default();
    let mut rollout = Rollout::default();
    for (p, play) in req.playbook.plays.iter().enumerate() {
        let hosts = select_hosts(req, play, &rollout.failed_hosts)?;
        let later = hosts_of_later_plays(req, p);
        let prepared = PreparedPlay::new(play, &templates, &req.opts);
        let ctx = PlayCtx {
            play,
            prepared: &prepared,
            templates: &templates,
            lenient: &lenient,
            search_dirs: &search_dirs,
            sources: &sources,
            opts: &req.opts,
        };
        let play_vars = play_vars(play, &base, &templates, &req.extra_vars)?;
        let keep = Keep {
            sessions: &sessions,
            later: &later,
        };
        if rollout.play(req, &ctx, &play_vars, &hosts, &keep, on_event) {
            break;
        }
    }
    Ok(rollout.outcome)
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
        play_vars: &Map<String, Value>,
        hosts: &[String],
        keep: &Keep,
        on_event: &(dyn Fn(Event) + Sync),
    ) -> bool {
        let play = ctx.play;
        let batches = batches(hosts, &play.serial);
        for (n, batch) in batches.iter().enumerate() {
            on_event(Event::Batch {
                play: &play.name,
                number: n + 1,
                of: batches.len(),
                hosts: batch,
            });
            let reports = run_batch(req, ctx, play_vars, batch, keep, on_event);
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
fn hosts_of_later_plays(req: &RunRequest, p: usize) -> HashSet<String> {
    req.playbook.plays[p + 1..]
        .iter()
        .flat_map(|play| req.inventory.select(&play.hosts).unwrap_or_default())
        .collect()
}

fn select_hosts(
    req: &RunRequest,
    play: &Play,
    failed: &[String],
) -> Result<Vec<String>, Vec<Diagnostic>> {
    let pattern_error = |span: &crate::load::diag::Span| {
        let span = span.clone();
        move |e: crate::load::inventory::PatternError| vec![Diagnostic::new(&span, e.to_string())]
    };
    let mut hosts = req
        .inventory
        .select(&play.hosts)
        .map_err(pattern_error(&play.span))?;
    if let Some(limit) = req.limit {
        // A bad --limit is the command line's fault, not the play's.
        let at = crate::load::diag::Span::synthetic("--limit");
        let allowed = req.inventory.select(limit).map_err(pattern_error(&at))?;
        hosts.retain(|h| allowed.contains(h));
    }
    hosts.retain(|h| !failed.contains(h) && req.shard.is_none_or(|s| s.contains(h)));
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

fn play_vars(
    play: &Play,
    base: &Path,
    templates: &Templates,
    extra: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<Diagnostic>> {
    let mut vars = play.vars.clone();
    for node in &play.vars_files {
        let name = node.scalar_text().unwrap_or_default();
        let ctx = Value::Object(
            vars.iter()
                .chain(extra.iter())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        let rendered = templates
            .render_str(&name, &ctx)
            .map_err(|e| vec![node.error(format!("vars_files: {e}"))])?;
        vars.extend(load_vars_file(node, &base.join(rendered)).map_err(|d| vec![d])?);
    }
    Ok(vars)
}

/// One `vars_files` entry: a missing file is reported at the entry that
/// names it, a bad one inside the file.
pub(crate) fn load_vars_file(entry: &Node, path: &Path) -> Result<Map<String, Value>, Diagnostic> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(entry.error(format!("vars_files: cannot read {}: {e}", path.display())));
    }
    let loaded = yaml::load_file(path)?;
    match loaded.to_json() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(loaded.error(format!(
            "{} must hold a mapping of variables, found {}",
            path.display(),
            loaded.kind()
        ))),
    }
}

fn run_batch(
    req: &RunRequest,
    ctx: &PlayCtx,
    play_vars: &Map<String, Value>,
    batch: &[String],
    keep: &Keep,
    on_event: &(dyn Fn(Event) + Sync),
) -> Vec<HostReport> {
    let queue = Mutex::new(batch.iter().enumerate());
    let reports = Mutex::new(Vec::new());
    let once = once::Once::new(batch);
    std::thread::scope(|s| {
        for _ in 0..req.forks.clamp(1, batch.len().max(1)) {
            s.spawn(|| loop {
                let Some((i, host)) = queue.lock().unwrap().next() else {
                    break;
                };
                let report = run_host(req, ctx, play_vars, host, keep, &once);
                once.leave(host);
                on_event(Event::Host(&report));
                reports.lock().unwrap().push((i, report));
            });
        }
    });
    let mut reports = reports.into_inner().unwrap();
    reports.sort_by_key(|(i, _)| *i);
    reports.into_iter().map(|(_, r)| r).collect()
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

fn run_host(
    req: &RunRequest,
    ctx: &PlayCtx,
    play_vars: &Map<String, Value>,
    host: &str,
    keep: &Keep,
    once: &once::Once,
) -> HostReport {
    let inventory = req.inventory.host_vars(host);
    let mut magic = inventory.clone();
    magic.insert("ansible_check_mode".into(), Value::Bool(req.opts.check));
    let layers = VarLayers {
        inventory: magic,
        facts: Map::new(),
        play: play_vars.clone(),
        registered: Map::new(),
        extra: req.extra_vars.clone(),
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
