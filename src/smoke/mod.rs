//! GPU smoke tests: is this node fit to run GPU jobs?
//!
//! Tier 0 reads inventory and health (nvidia-smi, kernel log), tier 1 checks
//! the CUDA toolkit and runs compute through PyTorch or nvcc, tier 2 runs
//! DCGM diagnostics. Each tier is one framed script, one round trip; all
//! judging happens here, in pure functions over the captured output.

mod checks;
mod fleet;
pub mod nvidia_smi;
mod remote;
mod triangle;

use std::time::Instant;

use serde::Serialize;

use crate::remote::probe::parse_frames;
use crate::remote::{Purpose, Script, Transport};
pub(crate) use checks::parse_version;
pub use fleet::fleet_outliers;
pub use remote::{TierOutput, TierScript};

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
    Skip,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }

    /// Orders verdicts by how much attention they need.
    fn severity(self) -> u8 {
        match self {
            Verdict::Skip => 0,
            Verdict::Pass => 1,
            Verdict::Warn => 2,
            Verdict::Fail => 3,
        }
    }

    pub fn worst(self, other: Verdict) -> Verdict {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub measured: String,
    pub expected: String,
    pub duration_ms: u64,
    pub tier: u8,
}

impl Check {
    pub fn new(
        name: &str,
        verdict: Verdict,
        measured: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Check {
            name: name.to_string(),
            verdict,
            measured: measured.into(),
            expected: expected.into(),
            duration_ms: 0,
            tier: 0,
        }
    }

    fn timed(mut self, ms: u64) -> Self {
        self.duration_ms = ms;
        self
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct HostSmoke {
    pub host: String,
    pub model: Option<String>,
    pub checks: Vec<Check>,
    /// The slowest GPU's bf16 matmul throughput: one slow GPU stalls a
    /// synchronous data-parallel job.
    pub bf16_tflops: Option<f64>,
}

impl HostSmoke {
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SmokeOptions {
    /// Highest tier to run: 0 inventory, 1 toolkit and compute, 2 DCGM.
    pub tier: u8,
    pub expect_gpus: Option<usize>,
    pub min_driver: Option<String>,
    pub cuda_home: String,
    pub torch: bool,
    pub compile: bool,
    pub alloc_gib: f64,
    /// Takes precedence over `bf16_floors`.
    pub bf16_tflops_floor: Option<f64>,
    /// Floors keyed by a substring of the GPU model, e.g. ("H200", 600.0).
    pub bf16_floors: Vec<(String, f64)>,
    /// Interpreter with PyTorch: a name looked up on the host, or a path
    /// such as a virtualenv's python3.
    pub python: String,
    /// `dcgmi diag -r` level for tier 2.
    pub dcgm_level: u8,
    /// Limit for each long-running remote command.
    pub timeout_s: u64,
}

impl Default for SmokeOptions {
    fn default() -> Self {
        SmokeOptions {
            tier: 0,
            expect_gpus: None,
            min_driver: None,
            cuda_home: "/usr/local/cuda".into(),
            torch: false,
            compile: false,
            alloc_gib: 8.0,
            bf16_tflops_floor: None,
            bf16_floors: Vec::new(),
            python: "python3".into(),
            dcgm_level: 1,
            timeout_s: 300,
        }
    }
}

impl SmokeOptions {
    /// The bf16 floor that applies to `model`, if any.
    fn bf16_floor(&self, model: Option<&str>) -> Option<f64> {
        self.bf16_tflops_floor.or_else(|| {
            let model = model?;
            self.bf16_floors
                .iter()
                .find(|(key, _)| model.contains(key.as_str()))
                .map(|(_, floor)| *floor)
        })
    }
}

/// Runs the configured tiers on one host, one round trip per tier. Nothing
/// here panics on a bad host: transport and parse errors become failed checks.
pub fn run_smoke(host: &str, transport: &mut dyn Transport, opts: &SmokeOptions) -> HostSmoke {
    evaluate(host, opts, |tier| {
        let script = tier_script(tier, opts);
        let started = Instant::now();
        let out = transport
            .run(&Script {
                purpose: Purpose::Probe,
                body: script.body.clone(),
                become_user: None,
                become_flags: None,
            })
            .map_err(|e| remote_failure(tier, started, e.to_string()))?;
        decode_tier(
            &script,
            tier,
            &out.stdout,
            &String::from_utf8_lossy(&out.stderr),
            out.status,
        )
        .map_err(|msg| remote_failure(tier, started, msg))
    })
}

/// The result for a host that could not be reached at all.
pub fn unreachable(host: &str, why: &str) -> HostSmoke {
    HostSmoke {
        host: host.to_string(),
        model: None,
        checks: vec![Check::new(
            "remote",
            Verdict::Fail,
            why.to_string(),
            "host reachable",
        )],
        bf16_tflops: None,
    }
}

/// The remote script of one tier.
pub fn tier_script(tier: u8, opts: &SmokeOptions) -> TierScript {
    match tier {
        0 => remote::tier0(opts),
        1 => remote::tier1(opts),
        _ => remote::tier2(opts),
    }
}

/// Splits a tier script's output into its units.
pub fn decode_tier(
    script: &TierScript,
    _tier: u8,
    stdout: &[u8],
    stderr: &str,
    status: i32,
) -> Result<TierOutput, String> {
    let frames = parse_frames(&script.token, stdout, &script.framed_ids)
        .map_err(|e| format!("unreadable output (rc {status}): {} {}", e.0, stderr.trim()))?;
    Ok(TierOutput::new(&script.units, frames))
}

fn remote_failure(tier: u8, started: Instant, msg: String) -> Check {
    let ms = started.elapsed().as_millis() as u64;
    with_tier(
        Check::new("remote", Verdict::Fail, msg, "tier script runs").timed(ms),
        tier,
    )
}

/// Turns tier outputs into checks; `tier_output` is asked for each tier in
/// turn, and later tiers are skipped when there is no working driver.
pub fn evaluate(
    host: &str,
    opts: &SmokeOptions,
    mut tier_output: impl FnMut(u8) -> Result<TierOutput, Check>,
) -> HostSmoke {
    let mut smoke = HostSmoke {
        host: host.to_string(),
        model: None,
        checks: Vec::new(),
        bf16_tflops: None,
    };
    let t0 = match tier_output(0) {
        Ok(out) => out,
        Err(check) => {
            smoke.checks.push(check);
            return smoke;
        }
    };
    let (checks, smi) = checks::tier0(&t0, opts);
    smoke.checks.extend(checks);
    // Without a working nvidia-smi every later check would only repeat that.
    let Some(smi) = smi else {
        return smoke;
    };
    smoke.model = smi.gpus.first().map(|g| g.name.clone());
    if opts.tier >= 1 {
        match tier_output(1) {
            Ok(out) => {
                let floor = opts.bf16_floor(smoke.model.as_deref());
                let (checks, bf16) = checks::tier1(&out, opts, &smi, floor);
                smoke
                    .checks
                    .extend(checks.into_iter().map(|c| with_tier(c, 1)));
                smoke.bf16_tflops = bf16;
            }
            Err(check) => smoke.checks.push(check),
        }
    }
    if opts.tier >= 2 {
        match tier_output(2) {
            Ok(out) => smoke.checks.push(with_tier(checks::tier2(&out, opts), 2)),
            Err(check) => smoke.checks.push(check),
        }
    }
    smoke
}

fn with_tier(mut check: Check, tier: u8) -> Check {
    check.tier = tier;
    check
}

#[cfg(test)]
mod tests;
