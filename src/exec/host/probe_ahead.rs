//! What to ask a host before planning: every probe the tasks left are
//! likely to need that is not answered yet, so that one script asks them
//! all. It renders each task's guess and sends nothing; the schedule sends
//! the script.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::exec::built::Built;
use crate::exec::instance::{Items, Resolution, Resolver};
use crate::exec::prepared::{PlayCtx, PreparedTask};
use crate::exec::vars::VarLayers;
use crate::modules::Facts;
use crate::remote::host_facts;
use crate::remote::probe::Probe;

/// Probes by key, and the keys a `no_log` task needs, whose answers stay
/// out of every report.
#[derive(Default)]
pub(super) struct Wanted {
    pub probes: BTreeMap<String, Probe>,
    pub secret: Vec<String>,
}

impl Wanted {
    /// What each item of `spec` needs that `facts` lacks; returns the
    /// variables it would set (`set_fact`, `include_vars`).
    pub fn add_task(
        &mut self,
        resolver: &Resolver,
        facts: &Facts,
        check: bool,
        spec: &PreparedTask,
    ) -> Map<String, Value> {
        let mut sets = Map::new();
        let Ok(Items { list, contexts }) = resolver.items(spec) else {
            return sets;
        };
        for item in list {
            let Some(module) = resolver.guess(spec, contexts.as_ref(), item.as_ref()) else {
                continue;
            };
            if module.probes().is_empty() {
                sets.extend(module.plan(facts).map(|p| p.sets).unwrap_or_default());
            }
            let query = module.query_probe().filter(|_| spec.may_query(check));
            for p in module.probes().into_iter().chain(query) {
                if spec.task.no_log {
                    self.secret.push(p.key.clone());
                }
                if !facts.contains(&p.key) {
                    self.probes.insert(p.key.clone(), p);
                }
            }
        }
        sets
    }
}

/// What `tasks` need, up to the first that replaces the session (a reboot,
/// a wait for the host: nothing past it may hold after, and a host being
/// waited for cannot answer yet), with the facts when the play gathers
/// them; when nothing cuts the list, the play's handlers and validations
/// too, so that a compliant host needs no other trip. Variables that
/// earlier tasks will set are guessed along, so the tasks after them probe
/// the right paths; `vars` is as it was on return.
pub(super) fn wanted<'p>(
    ctx: &PlayCtx<'p>,
    vars: &mut VarLayers,
    facts: &Facts,
    built: &Built,
    tasks: &[&'p PreparedTask<'p>],
) -> Wanted {
    let mut wanted = Wanted::default();
    if ctx.play.gather_facts && !facts.contains(host_facts::KEY) {
        let p = host_facts::probe();
        wanted.probes.insert(p.key.clone(), p);
    }
    let cut = {
        let resolver = Resolver { ctx, vars, built };
        // One whose `when:` is already known to be false (a role left out)
        // is no cut.
        (tasks.iter()).position(|t| t.replaces_session() && !known_skipped(&resolver, t))
    };
    let mut ahead = tasks[..cut.unwrap_or(tasks.len())].to_vec();
    if cut.is_none() {
        ahead.extend(ctx.prepared.handlers.iter().chain(&ctx.prepared.validate));
    }
    let registered = vars.registered.clone();
    // A delegated task is probed on its delegate, when it runs.
    let here = |s: &&PreparedTask| s.selected && s.task.delegate_to.is_none();
    for spec in ahead.into_iter().filter(here) {
        let resolver = Resolver { ctx, vars, built };
        let sets = wanted.add_task(&resolver, facts, ctx.opts.check, spec);
        vars.registered.extend(sets);
    }
    vars.registered = registered;
    wanted
}

/// Every item of the task is known to be skipped (`when:` false) already.
pub(super) fn known_skipped(resolver: &Resolver, spec: &PreparedTask) -> bool {
    let Ok(Items { list, contexts }) = resolver.items(spec) else {
        return false;
    };
    list.into_iter().all(|item| {
        matches!(
            resolver.resolve(spec, contexts.as_ref(), item),
            Resolution::Skip(_)
        )
    })
}
