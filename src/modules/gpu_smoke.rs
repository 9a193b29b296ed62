//! `gpu_smoke`: the GPU smoke test as a task (or a play's `validate:` step).
//! Its tier scripts are read-only, so they ride in the batched probe like
//! any other fact; a failing check fails the task.
//!
//! # Example
//!
//! ```yaml
//! - name: Check the GPUs, the CUDA toolkit and PyTorch on every node
//!   gpu_smoke:
//!     tier: 1
//!     gpus: 8
//!     min_driver: "550.54"
//!     cuda_home: /usr/local/cuda-12.4
//!     torch: true
//!     floors: {H100: 400, H200: 600}
//! ```

use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use serde_json::Value;

use crate::modules::params::{module_params, ParamError, ParamValue, Params};
use crate::remote::probe::Probe;
use crate::smoke::{self, SmokeOptions, TierScript, Verdict};

pub(crate) const GPU_SMOKE: ModuleSpec = ModuleSpec {
    name: "gpu_smoke",
    source: file!(),
    aliases: &[],
    params: &SmokeArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct SmokeArgs {
        /// the highest tier run: 0 inventory and health, 1 toolkit and compute, 2 DCGM
        tier: Option<Tier>,
        /// how many GPUs the host must have
        #[aliases("expect_gpus")]
        gpus: Option<Count>,
        /// the oldest driver accepted, such as 535.104
        min_driver: Option<DriverVersion>,
        /// the CUDA toolkit tier 1 checks (default /usr/local/cuda)
        cuda_home: Option<AbsolutePath>,
        /// run the PyTorch checks (tier 1)
        torch: Option<bool>,
        /// compile and run a CUDA kernel with nvcc (tier 1)
        compile: Option<bool>,
        /// GiB allocated on each GPU (default 8)
        alloc_gib: Option<Positive>,
        /// the bf16 TFLOP/s every GPU must reach
        bf16_tflops_floor: Option<Positive>,
        /// bf16 TFLOP/s floors by GPU model, such as {H200: 600}
        floors: Option<Floors>,
        /// the interpreter with PyTorch (default python3)
        python: Option<Python>,
        /// the `dcgmi diag -r` level of tier 2, 1 or 2
        dcgm_level: Option<DcgmLevel>,
        /// seconds each long-running remote command may take (default 300)
        timeout: Option<Seconds>,
    }
}

/// A value of a type of its own, read from YAML or from rendered text (a
/// templated `tier: "{{ smoke_tier }}"` renders to `"1"`), with an error
/// that says what was expected and what came.
macro_rules! judged {
    ($(#[$m:meta])* $ty:ident($inner:ty), $what:literal, $parse:expr) => {
        $(#[$m])*
        struct $ty($inner);

        impl ParamValue for Option<$ty> {
            fn read(p: &Params, key: &str) -> Result<Self, ParamError> {
                let parse: fn(&Value) -> Option<$inner> = $parse;
                p.raw(key)
                    .map(|v| {
                        parse(v).map($ty).ok_or_else(|| {
                            p.error(key, format!("parameter '{key}' must be {}, got {v}", $what))
                        })
                    })
                    .transpose()
            }
            fn read_or(p: &Params, key: &str, default: Self) -> Result<Self, ParamError> {
                Ok(Self::read(p, key)?.or(default))
            }
        }
    };
}

judged!(Tier(u8), "0, 1 or 2", |v| small_int(v, 0..=2));
judged!(Count(usize), "a whole number", whole);
judged!(
    /// Accepts numbers too, because YAML reads `min_driver: 535` as one.
    DriverVersion(String),
    "a version like 535.104",
    |v| {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        smoke::parse_version(&s).map(|_| s)
    }
);
judged!(AbsolutePath(String), "an absolute path", |v| v
    .as_str()
    .filter(|s| s.starts_with('/'))
    .map(str::to_string));
judged!(Positive(f64), "a positive number", positive);
judged!(
    Floors(Vec<(String, f64)>),
    "a map of model to TFLOP/s",
    |v| v
        .as_object()?
        .iter()
        .map(|(model, floor)| Some((model.clone(), positive(floor)?)))
        .collect()
);
judged!(Python(String), "a string", |v| v
    .as_str()
    .filter(|s| !s.is_empty())
    .map(str::to_string));
judged!(DcgmLevel(u8), "1 or 2", |v| small_int(v, 1..=2));
judged!(Seconds(u64), "seconds > 0", |v| whole(v)
    .filter(|&t| t > 0)
    .map(|t| t as u64));

fn small_int(v: &Value, range: std::ops::RangeInclusive<u8>) -> Option<u8> {
    let n = u8::try_from(whole(v)?).ok()?;
    range.contains(&n).then_some(n)
}

fn whole(v: &Value) -> Option<usize> {
    match v {
        Value::Number(n) => usize::try_from(n.as_u64()?).ok(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn positive(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.filter(|f| *f > 0.0 && f.is_finite())
}

struct GpuSmoke {
    opts: SmokeOptions,
    scripts: Vec<TierScript>,
}

fn options(p: &Params) -> Result<SmokeOptions, ParamError> {
    let a = SmokeArgs::read(p)?;
    let d = SmokeOptions::default();
    let opts = SmokeOptions {
        tier: a.tier.map_or(d.tier, |t| t.0),
        expect_gpus: a.gpus.map(|c| c.0),
        min_driver: a.min_driver.map(|v| v.0),
        cuda_home: a.cuda_home.map_or(d.cuda_home, |c| c.0),
        torch: a.torch.unwrap_or(d.torch),
        compile: a.compile.unwrap_or(d.compile),
        alloc_gib: a.alloc_gib.map_or(d.alloc_gib, |g| g.0),
        bf16_tflops_floor: a.bf16_tflops_floor.map(|f| f.0),
        bf16_floors: a.floors.map_or(d.bf16_floors, |f| f.0),
        python: a.python.map_or(d.python, |py| py.0),
        dcgm_level: a.dcgm_level.map_or(d.dcgm_level, |l| l.0),
        timeout_s: a.timeout.map_or(d.timeout_s, |t| t.0),
    };
    if opts.tier == 0 && (opts.torch || opts.compile) {
        let key = if opts.torch { "torch" } else { "compile" };
        return Err(p.error(key, format!("{key} checks run in tier 1: set tier: 1")));
    }
    Ok(opts)
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let opts = options(p)?;
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
            return Err(ModuleError::SmokeFailed(failures));
        }
        let mut plan = Plan::noop();
        plan.notes = result.checks.iter().map(line).collect();
        Ok(plan)
    }

    fn reads_everything(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, with_params};
    use serde_json::json;

    fn read(v: Value) -> Result<SmokeOptions, String> {
        with_params(&GPU_SMOKE, v, options).map_err(|e| e.message)
    }

    #[test]
    fn options_from_params() {
        let o = read(json!({
            "tier": 1, "gpus": 8, "min_driver": 550, "cuda_home": "/opt/cuda", "torch": true,
            "compile": true, "alloc_gib": 4, "floors": {"H200": 600, "H100": 550}, "timeout": 60,
            "python": "/opt/torch/.venv/bin/python3"
        }))
        .unwrap();
        assert_eq!(
            (o.tier, o.expect_gpus, o.min_driver.as_deref()),
            (1, Some(8), Some("550"))
        );
        assert_eq!(
            (o.cuda_home.as_str(), o.alloc_gib, o.timeout_s),
            ("/opt/cuda", 4.0, 60)
        );
        assert_eq!(
            o.bf16_floors,
            [("H200".to_string(), 600.0), ("H100".to_string(), 550.0)]
        );
        assert_eq!(o.python, "/opt/torch/.venv/bin/python3");
        assert_eq!(read(json!({})).unwrap(), SmokeOptions::default());
    }

    #[test]
    fn bad_params_are_refused_at_the_parameter() {
        let err = |v: Value| build_error(&GPU_SMOKE, v);
        assert_eq!(
            err(json!({"tier": 3})),
            "gpu_smoke: parameter 'tier' must be 0, 1 or 2, got 3"
        );
        assert_eq!(
            err(json!({"torch": true})),
            "gpu_smoke: torch checks run in tier 1: set tier: 1"
        );
        assert_eq!(
            err(json!({"tier": 0, "compile": "yes"})),
            "gpu_smoke: compile checks run in tier 1: set tier: 1"
        );
        assert!(err(json!({"cuda_home": "cuda"})).contains("absolute path"));
        assert!(err(json!({"alloc_gib": -1})).contains("'alloc_gib' must be a positive number"));
        assert!(err(json!({"min_driver": "r550"})).contains("535.104"));
        assert!(err(json!({"tier": "one"})).contains("'tier'"));
        assert_eq!(
            err(json!({"torch": "maybe", "tier": 1})),
            "gpu_smoke: parameter 'torch' must be a boolean (yes/no)"
        );
    }

    /// `tier: "{{ smoke_tier }}"` with `-e smoke_tier=1` arrives as "1", and
    /// booleans take every spelling the other modules take.
    #[test]
    fn rendered_text_reads_like_other_modules() {
        let o = read(json!({
            "tier": "1", "gpus": " 8 ", "torch": "yes", "compile": "off",
            "alloc_gib": "2.5", "timeout": "90", "dcgm_level": "2"
        }))
        .unwrap();
        assert_eq!(
            (o.tier, o.expect_gpus, o.torch, o.compile),
            (1, Some(8), true, false)
        );
        assert_eq!((o.alloc_gib, o.timeout_s, o.dcgm_level), (2.5, 90, 2));
        assert!(read(json!({"tier": 1, "torch": 1})).unwrap().torch);
    }
}
