//! `gpu_smoke`: the GPU smoke test as a task (or a play's `validate:` step).
//! Its tier scripts are read-only, so they ride in the batched probe like
//! any other fact; a failing check fails the task.

use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{ParamError, Params};
use crate::remote::probe::Probe;
use crate::smoke::{self, SmokeOptions, TierScript, Verdict};

pub const GPU_SMOKE: ModuleSpec = ModuleSpec {
    name: "gpu_smoke",
    aliases: &[],
    params: smoke::PARAMS,
    required: &[],
    free_form: None,
    build,
};

struct GpuSmoke {
    opts: SmokeOptions,
    scripts: Vec<TierScript>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let mut map = serde_json::Map::new();
    for key in smoke::PARAMS {
        if let Some(v) = p.raw(key) {
            map.insert(key.to_string(), v.clone());
        }
    }
    let opts = SmokeOptions::from_params(&map).map_err(|e| p.error(&e.key, e.message))?;
    let scripts = (0..=opts.tier.min(2))
        .map(|t| smoke::tier_script(t, &opts))
        .collect();
    Ok(Box::new(GpuSmoke { opts, scripts }))
}

fn key(tier: usize, script: &TierScript) -> String {
    format!("gpu_smoke:{tier}:{}", script.token)
}

impl Module for GpuSmoke {
    fn probes(&self) -> Vec<Probe> {
        self.scripts
            .iter()
            .enumerate()
            .map(|(t, s)| Probe::new(key(t, s), s.body.clone()))
            .collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut missing = None;
        let result = smoke::evaluate("", &self.opts, |tier| {
            let script = &self.scripts[usize::from(tier)];
            let r = facts.get(&key(tier.into(), script)).map_err(|e| {
                missing = Some(e.to_string());
                smoke::Check::new("remote", Verdict::Fail, "not probed", "tier script runs")
            })?;
            smoke::decode_tier(script, tier, r.stdout.as_bytes(), &r.stderr, r.rc)
                .map_err(|msg| smoke::Check::new("remote", Verdict::Fail, msg, "tier script runs"))
        });
        if let Some(e) = missing {
            return Err(ModuleError::Fact {
                key: "gpu_smoke".into(),
                detail: e,
            });
        }
        let line = |c: &smoke::Check| {
            format!(
                "{} {}: {} (expected {})",
                c.verdict.label(),
                c.name,
                c.measured,
                c.expected
            )
        };
        if result.failed() {
            let failures: Vec<String> = result
                .checks
                .iter()
                .filter(|c| c.verdict == Verdict::Fail)
                .map(line)
                .collect();
            return Err(ModuleError::Host(format!(
                "GPU smoke test failed: {}",
                failures.join("; ")
            )));
        }
        let mut plan = Plan::noop();
        plan.notes = result.checks.iter().map(line).collect();
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }
}
