//! Verdicts: pure functions from captured command output to checks.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::nvidia_smi::{self, Gpu, SmiLog};
use super::remote::TierOutput;
use super::triangle::{version_triangle, Corners, TorchCuda};
use super::{Check, SmokeOptions, Verdict};
use crate::remote::probe::ProbeResult;

const NOT_FOUND: i32 = 127;
const TIMED_OUT: i32 = 124;

// ---------------------------------------------------------------- tier 0

pub fn tier0(out: &TierOutput, opts: &SmokeOptions) -> (Vec<Check>, Option<SmiLog>) {
    let ms = out.ms("smi");
    let smi = match read_smi(out.get("smi"), out.get("driver"), opts.timeout_s) {
        Ok(log) => log,
        Err(msg) => {
            let check = Check::new("nvidia_smi", Verdict::Fail, msg, "nvidia-smi answering");
            return (vec![check.timed(ms)], None);
        }
    };
    let checks = vec![
        smi_answered(out.get("smi")),
        gpu_count(&smi, opts.expect_gpus),
        gpu_model(&smi),
        driver_version(&smi, opts.min_driver.as_deref()),
        cuda_driver_version(&smi),
        persistence_mode(&smi),
        ecc_mode(&smi),
        ecc_errors(&smi),
        memory_repair(&smi),
        pcie_link(&smi),
        clock_events(&smi),
        gpu_processes(&smi),
    ];
    let mut checks: Vec<Check> = checks.into_iter().map(|c| c.timed(ms)).collect();
    checks.push(xid(out.get("xid")).timed(out.ms("xid")));
    (checks, Some(smi))
}

/// Reads the XML, or explains why there is none. The driver's /proc entry
/// tells "no driver" apart from "driver loaded but nvidia-smi broken".
fn read_smi(
    smi: Option<&ProbeResult>,
    driver: Option<&ProbeResult>,
    timeout_s: u64,
) -> Result<SmiLog, String> {
    let smi = smi.ok_or("nvidia-smi did not run")?;
    let driver_loaded = driver.is_some_and(|d| d.rc == 0 && d.stdout.contains("NVRM"));
    if let Ok(log) = nvidia_smi::parse(&smi.stdout) {
        return Ok(log);
    }
    let said = first_line(&smi.stdout, &smi.stderr);
    Err(match (smi.rc, driver_loaded) {
        (TIMED_OUT, _) => format!("nvidia-smi timed out after {timeout_s} s"),
        (NOT_FOUND, false) => {
            "no NVIDIA driver (nvidia-smi not found, /proc/driver/nvidia absent)".into()
        }
        (NOT_FOUND, true) => "nvidia-smi not found, though the NVIDIA driver is loaded".into(),
        (_, false) => format!("no NVIDIA driver: {said}"),
        (rc, true) => format!("nvidia-smi failed (rc {rc}): {said}"),
    })
}

/// nvidia-smi still prints XML when one GPU cannot be queried, but exits
/// non-zero: worth a look even when everything else passes.
fn smi_answered(unit: Option<&ProbeResult>) -> Check {
    const EXPECTED: &str = "nvidia-smi answering";
    match unit.filter(|u| u.rc != 0) {
        Some(u) => {
            let msg = format!("answered with rc {}: {}", u.rc, last_line(&u.stderr));
            Check::new("nvidia_smi", Verdict::Warn, msg, EXPECTED)
        }
        None => Check::new("nvidia_smi", Verdict::Pass, "answering", EXPECTED),
    }
}

fn gpu_count(smi: &SmiLog, expect: Option<usize>) -> Check {
    let n = smi.gpus.len();
    let (verdict, expected) = match expect {
        Some(e) => (verdict_if(n == e, Verdict::Fail), e.to_string()),
        None => (verdict_if(n > 0, Verdict::Fail), ">= 1".to_string()),
    };
    Check::new("gpu_count", verdict, n.to_string(), expected)
}

fn gpu_model(smi: &SmiLog) -> Check {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for gpu in &smi.gpus {
        *counts.entry(gpu.name.as_str()).or_default() += 1;
    }
    let measured = counts
        .iter()
        .map(|(name, n)| format!("{n}x {name}"))
        .collect::<Vec<_>>()
        .join(", ");
    Check::new(
        "gpu_model",
        verdict_if(counts.len() <= 1, Verdict::Warn),
        measured,
        "one model",
    )
}

fn driver_version(smi: &SmiLog, min: Option<&str>) -> Check {
    let have = &smi.driver_version;
    let Some(min) = min else {
        return Check::new("driver_version", Verdict::Pass, have, "any");
    };
    let ok = matches!((parse_version(have), parse_version(min)), (Some(h), Some(m)) if h >= m);
    Check::new(
        "driver_version",
        verdict_if(ok, Verdict::Fail),
        have,
        format!(">= {min}"),
    )
}

fn cuda_driver_version(smi: &SmiLog) -> Check {
    let v = &smi.cuda_version;
    let verdict = verdict_if(cuda_version(v).is_some(), Verdict::Warn);
    Check::new("cuda_driver_version", verdict, or_none(v), "reported")
}

fn persistence_mode(smi: &SmiLog) -> Check {
    let off = gpus_where(smi, |g| g.persistence == Some(false));
    let (verdict, measured) = if off.is_empty() {
        (Verdict::Pass, "enabled".to_string())
    } else {
        (Verdict::Warn, format!("disabled on {}", off.join(", ")))
    };
    Check::new("persistence_mode", verdict, measured, "enabled")
}

fn ecc_mode(smi: &SmiLog) -> Check {
    let off = gpus_where(smi, |g| g.ecc_enabled == Some(false));
    let (verdict, measured) = if smi.gpus.iter().all(|g| g.ecc_enabled.is_none()) {
        (Verdict::Skip, "not supported".to_string())
    } else if off.is_empty() {
        (Verdict::Pass, "enabled".to_string())
    } else {
        (Verdict::Warn, format!("disabled on {}", off.join(", ")))
    };
    Check::new("ecc_mode", verdict, measured, "enabled")
}

fn ecc_errors(smi: &SmiLog) -> Check {
    let bad = describe_gpus(smi, |g| {
        (g.ecc_volatile_uncorrected > 0).then(|| g.ecc_volatile_uncorrected.to_string())
    });
    let (verdict, measured) = if bad.is_empty() {
        (Verdict::Pass, "0".to_string())
    } else {
        (Verdict::Fail, bad.join(", "))
    };
    Check::new("ecc_errors", verdict, measured, "0 volatile uncorrectable")
}

fn memory_repair(smi: &SmiLog) -> Check {
    let bad = describe_gpus(smi, |g| {
        (!g.memory_repair_issues.is_empty()).then(|| g.memory_repair_issues.join(", "))
    });
    let (verdict, measured) = if bad.is_empty() {
        (Verdict::Pass, "none".to_string())
    } else {
        (Verdict::Fail, bad.join("; "))
    };
    Check::new(
        "memory_repair",
        verdict,
        measured,
        "no pending or failed retirement/remapping",
    )
}

/// Width is compared strictly; generation only warns, because idle GPUs
/// downshift their link to save power.
fn pcie_link(smi: &SmiLog) -> Check {
    let mut verdict = Verdict::Pass;
    let mut notes = Vec::new();
    let mut links = Vec::new();
    for (i, gpu) in smi.gpus.iter().enumerate() {
        let p = &gpu.pcie;
        let (Some(gen), Some(width)) = (p.gen_current, p.width_current) else {
            continue;
        };
        links.push(format!("gen{gen} x{width}"));
        if let Some(max) = p.width_max.filter(|&m| width < m) {
            verdict = verdict.worst(Verdict::Fail);
            notes.push(format!("GPU{i} x{width} of x{max}"));
        }
        if let (Some(link), Some(dev)) = (p.gen_max, p.gen_device_max) {
            if link < dev {
                verdict = verdict.worst(Verdict::Warn);
                notes.push(format!("GPU{i} slot limits gen{link} of gen{dev}"));
            }
        }
        let idle = gpu.active_clock_events.iter().any(|e| e == "gpu_idle");
        if let Some(max) = p.gen_max.filter(|&m| gen < m && !idle) {
            verdict = verdict.worst(Verdict::Warn);
            notes.push(format!("GPU{i} gen{gen} of gen{max} while busy"));
        }
    }
    links.dedup();
    let measured = match (links.is_empty(), notes.is_empty()) {
        (true, _) => return Check::new("pcie_link", Verdict::Skip, "not reported", "max width"),
        (false, true) if links.len() == 1 => links[0].clone(),
        (false, true) => links.join(", "),
        (false, false) => notes.join("; "),
    };
    Check::new(
        "pcie_link",
        verdict,
        measured,
        "max width (gen may drop at idle)",
    )
}

const HW_SLOWDOWNS: &[&str] = &[
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
];
const SW_SLOWDOWNS: &[&str] = &["sw_thermal_slowdown", "sw_power_cap"];

fn clock_events(smi: &SmiLog) -> Check {
    let mut verdict = Verdict::Pass;
    let mut notes = Vec::new();
    for (i, gpu) in smi.gpus.iter().enumerate() {
        for event in &gpu.active_clock_events {
            let v = if HW_SLOWDOWNS.contains(&event.as_str()) {
                Verdict::Fail
            } else if SW_SLOWDOWNS.contains(&event.as_str()) {
                Verdict::Warn
            } else {
                continue;
            };
            verdict = verdict.worst(v);
            notes.push(format!("GPU{i} {event}"));
        }
    }
    let measured = if notes.is_empty() {
        "none".to_string()
    } else {
        notes.join(", ")
    };
    Check::new(
        "clock_events",
        verdict,
        measured,
        "no HW slowdown, thermal or power brake",
    )
}

fn gpu_processes(smi: &SmiLog) -> Check {
    let procs = describe_gpus(smi, |g| {
        let list: Vec<String> = g
            .processes
            .iter()
            .map(|p| format!("pid {} {} {} MiB", p.pid, p.name, p.used_mib))
            .collect();
        (!list.is_empty()).then(|| list.join(", "))
    });
    let (verdict, measured) = if procs.is_empty() {
        (Verdict::Pass, "none".to_string())
    } else {
        (Verdict::Warn, procs.join("; "))
    };
    Check::new(
        "gpu_processes",
        verdict,
        measured,
        "no process holds GPU memory",
    )
}

/// Xids that mean broken hardware or a wedged GPU rather than a faulting
/// application: double-bit ECC, row-remap failure, NVLink, fallen off the
/// bus, uncontained ECC, GSP timeouts.
const FATAL_XIDS: &[u32] = &[48, 62, 64, 74, 79, 94, 95, 119, 120, 140];

pub fn xid(unit: Option<&ProbeResult>) -> Check {
    const EXPECTED: &str = "no Xid since boot";
    let Some(unit) = unit.filter(|u| u.rc == 0) else {
        return Check::new("xid", Verdict::Skip, "kernel log not readable", EXPECTED);
    };
    static XID: OnceLock<Regex> = OnceLock::new();
    let re = XID.get_or_init(|| Regex::new(r"(?m)^\s*(\d+) NVRM: Xid \([^)]*\): (\d+)").unwrap());
    let mut codes: BTreeMap<u32, u64> = BTreeMap::new();
    for caps in re.captures_iter(&unit.stdout) {
        let n: u64 = caps[1].parse().unwrap_or(1);
        *codes.entry(caps[2].parse().unwrap_or(0)).or_default() += n;
    }
    if codes.is_empty() {
        return Check::new("xid", Verdict::Pass, "none", EXPECTED);
    }
    let fatal = codes.keys().any(|c| FATAL_XIDS.contains(c));
    let measured = codes
        .iter()
        .map(|(code, n)| format!("Xid {code} x{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let verdict = if fatal { Verdict::Fail } else { Verdict::Warn };
    Check::new("xid", verdict, measured, EXPECTED)
}

// ---------------------------------------------------------------- tier 1

pub fn tier1(
    out: &TierOutput,
    opts: &SmokeOptions,
    smi: &SmiLog,
    floor: Option<f64>,
) -> (Vec<Check>, Option<f64>) {
    let nvcc_unit = out.get("nvcc");
    let toolkit = nvcc_unit
        .filter(|u| u.rc == 0)
        .and_then(|u| nvcc_release(&u.stdout));
    let torch = opts.torch.then(|| {
        let expect = opts.expect_gpus.unwrap_or(smi.gpus.len());
        let mut torch = torch_checks(out.get("torch"), expect, floor, opts.timeout_s);
        // The probe times its own checks; the rest of the unit's time is
        // interpreter start, import and CUDA init, charged to torch_cuda.
        let probe_ms: u64 = torch.checks.iter().map(|c| c.duration_ms).sum();
        torch.checks[0].duration_ms = out.ms("torch").saturating_sub(probe_ms);
        torch
    });
    let torch_cuda = match &torch {
        None => TorchCuda::NotChecked,
        Some(t) => t
            .cuda_runtime
            .as_deref()
            .map_or(TorchCuda::Unknown, TorchCuda::Cuda),
    };
    let triangle = version_triangle(&Corners {
        driver: &smi.driver_version,
        driver_cuda: &smi.cuda_version,
        toolkit: toolkit.as_deref(),
        torch: torch_cuda,
    });
    let mut checks = vec![
        nvcc(nvcc_unit, toolkit.as_deref(), &opts.cuda_home).timed(out.ms("nvcc")),
        triangle,
        ldconfig_cuda(out.get("ldconfig"), &smi.cuda_version).timed(out.ms("ldconfig")),
    ];
    let mut bf16 = None;
    if let Some(torch) = torch {
        checks.extend(torch.checks);
        bf16 = torch.bf16_tflops;
    }
    if opts.compile {
        checks.push(compile(out.get("compile"), opts.timeout_s).timed(out.ms("compile")));
    }
    (checks, bf16)
}

fn nvcc(unit: Option<&ProbeResult>, release: Option<&str>, cuda_home: &str) -> Check {
    let expected = format!("{}/bin/nvcc", cuda_home.trim_end_matches('/'));
    match (unit, release) {
        (_, Some(r)) => Check::new("nvcc", Verdict::Pass, r, expected),
        (Some(u), None) if u.rc == NOT_FOUND => {
            Check::new("nvcc", Verdict::Warn, "not found", expected)
        }
        (Some(u), None) => Check::new(
            "nvcc",
            Verdict::Fail,
            first_line(&u.stdout, &u.stderr),
            expected,
        ),
        (None, None) => Check::new("nvcc", Verdict::Fail, "did not run", expected),
    }
}

/// The `X.Y` of `Cuda compilation tools, release X.Y, VX.Y.Z`.
pub fn nvcc_release(version_output: &str) -> Option<String> {
    static RELEASE: OnceLock<Regex> = OnceLock::new();
    let re = RELEASE.get_or_init(|| Regex::new(r"release (\d+\.\d+)").unwrap());
    Some(re.captures(version_output)?[1].to_string())
}

/// The linker cache must resolve libcuda, and libcudart to one CUDA major no
/// newer than the driver's: a second major shadows the first at random.
fn ldconfig_cuda(unit: Option<&ProbeResult>, driver_cuda: &str) -> Check {
    const EXPECTED: &str = "libcuda.so.1, one libcudart major <= driver";
    let Some(unit) = unit.filter(|u| u.rc == 0) else {
        return Check::new(
            "ldconfig_cuda",
            Verdict::Skip,
            "ldconfig -p failed",
            EXPECTED,
        );
    };
    let majors = cudart_majors(&unit.stdout);
    let has_libcuda = unit
        .stdout
        .lines()
        .any(|l| l.trim_start().starts_with("libcuda.so.1 "));
    let driver_major = cuda_version(driver_cuda).map(|v| v.0);
    let list = majors
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let (verdict, measured) = if !has_libcuda {
        (
            Verdict::Fail,
            "libcuda.so.1 not in linker cache".to_string(),
        )
    } else if majors.len() > 1 {
        (Verdict::Fail, format!("mixed libcudart majors: {list}"))
    } else if let (Some(&m), Some(d)) = (majors.first(), driver_major) {
        (
            verdict_if(m <= d, Verdict::Fail),
            format!("libcudart {m}, libcuda.so.1"),
        )
    } else {
        (
            Verdict::Pass,
            "libcuda.so.1, no libcudart registered".to_string(),
        )
    };
    Check::new("ldconfig_cuda", verdict, measured, EXPECTED)
}

/// CUDA majors of registered libcudart copies, from the soname
/// (`libcudart.so.12`) or the install path (`/usr/local/cuda-12.4/`).
pub fn cudart_majors(ldconfig: &str) -> Vec<u32> {
    static SONAME: OnceLock<Regex> = OnceLock::new();
    static PATH: OnceLock<Regex> = OnceLock::new();
    let soname = SONAME.get_or_init(|| Regex::new(r"^libcudart\.so\.(\d+)").unwrap());
    let path = PATH.get_or_init(|| Regex::new(r"/cuda-(\d+)").unwrap());
    let mut majors: Vec<u32> = Vec::new();
    for line in ldconfig.lines().map(str::trim) {
        if !line.starts_with("libcudart.so") {
            continue;
        }
        let target = line.split("=>").nth(1).unwrap_or_default();
        for caps in soname
            .captures(line)
            .into_iter()
            .chain(path.captures(target))
        {
            majors.extend(caps[1].parse::<u32>().ok());
        }
    }
    majors.sort_unstable();
    majors.dedup();
    majors
}

/// Decides one GPU's record of a torch check and describes it.
type Judge = fn(&Value) -> (Verdict, String);

struct TorchChecks {
    checks: Vec<Check>,
    bf16_tflops: Option<f64>,
    /// `torch.version.cuda`, when the probe got that far and torch has CUDA.
    cuda_runtime: Option<String>,
}

/// Largest relative error against the fp64 reference per dtype: loose
/// enough for TF32 and input rounding, tight enough to catch wrong results.
const MATMUL_TOLERANCE: &[(&str, f64)] = &[("fp32", 1e-3), ("fp16", 5e-3), ("bf16", 3e-2)];

fn torch_checks(
    unit: Option<&ProbeResult>,
    expect_gpus: usize,
    floor: Option<f64>,
    timeout_s: u64,
) -> TorchChecks {
    let single = |check: Check| TorchChecks {
        checks: vec![check],
        bf16_tflops: None,
        cuda_runtime: None,
    };
    const EXPECTED: &str = "PyTorch sees the GPUs";
    let Some(unit) = unit else {
        return single(Check::new(
            "torch_cuda",
            Verdict::Fail,
            "did not run",
            EXPECTED,
        ));
    };
    if unit.rc == NOT_FOUND {
        return single(Check::new(
            "torch_cuda",
            Verdict::Skip,
            "python3 not found",
            EXPECTED,
        ));
    }
    if unit.rc == TIMED_OUT {
        return single(Check::new(
            "torch_cuda",
            Verdict::Fail,
            format!("timed out after {timeout_s} s"),
            EXPECTED,
        ));
    }
    let Some(report) = last_json_line(&unit.stdout) else {
        let msg = format!("no result (rc {}): {}", unit.rc, last_line(&unit.stderr));
        return single(Check::new("torch_cuda", Verdict::Fail, msg, EXPECTED));
    };
    parse_torch_report(&report, expect_gpus, floor)
}

/// Turns torch_probe.py's JSON into checks, one per kind of measurement
/// with the worst GPU deciding the verdict.
fn parse_torch_report(report: &Value, expect_gpus: usize, floor: Option<f64>) -> TorchChecks {
    let Some(version) = report["torch"].as_str() else {
        let why = report["error"].as_str().unwrap_or("unknown error");
        let check = Check::new(
            "torch_cuda",
            Verdict::Skip,
            format!("PyTorch not importable: {why}"),
            "PyTorch sees the GPUs",
        );
        return TorchChecks {
            checks: vec![check],
            bf16_tflops: None,
            cuda_runtime: None,
        };
    };
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let mut checks = vec![torch_cuda(report, version, expect_gpus)];
    let kinds: [(&str, Judge, String); 4] = [
        ("matmul_accuracy", matmul_verdict, tolerance_text()),
        ("amp_step", amp_verdict, "loss falls".into()),
        ("alloc", alloc_verdict, "allocates and reads back".into()),
        ("d2d_bandwidth", d2d_verdict, "reported".into()),
    ];
    for (kind, judge, expected) in kinds {
        if let Some(check) = aggregate(&results, kind, judge, expected) {
            checks.push(check);
        }
    }
    let tflops = min_per_gpu(&results, "bf16_throughput", "tflops");
    let floor_verdict = move |r: &Value| {
        let t = r["tflops"].as_f64().unwrap_or(0.0);
        let ok = floor.is_none_or(|f| t >= f);
        (verdict_if(ok, Verdict::Fail), format!("{t:.1} TFLOP/s"))
    };
    let expected = floor.map_or("reported".into(), |f| format!(">= {f} TFLOP/s"));
    checks.extend(aggregate(
        &results,
        "bf16_throughput",
        floor_verdict,
        expected,
    ));
    TorchChecks {
        checks,
        bf16_tflops: tflops,
        cuda_runtime: report["cuda_runtime"].as_str().map(str::to_string),
    }
}

fn torch_cuda(report: &Value, version: &str, expect_gpus: usize) -> Check {
    let available = report["cuda_available"].as_bool().unwrap_or(false);
    let count = report["device_count"].as_u64().unwrap_or(0) as usize;
    let runtime = report["cuda_runtime"].as_str().unwrap_or("none");
    let measured = format!("torch {version}, CUDA {runtime}, {count} device(s)");
    let verdict = verdict_if(available && count == expect_gpus, Verdict::Fail);
    let expected = format!("cuda available, {expect_gpus} device(s)");
    Check::new("torch_cuda", verdict, measured, expected)
}

/// Folds one kind of per-GPU record into a check: an error on any GPU
/// fails it, otherwise `judge` decides per GPU and the worst wins.
fn aggregate(
    results: &[Value],
    kind: &str,
    judge: impl Fn(&Value) -> (Verdict, String),
    expected: String,
) -> Option<Check> {
    let records: Vec<&Value> = results.iter().filter(|r| r["check"] == kind).collect();
    if records.is_empty() {
        return None;
    }
    let mut verdict = Verdict::Pass;
    let mut notes = Vec::new();
    for r in &records {
        let (v, note) = match r["error"].as_str() {
            Some(err) => (Verdict::Fail, err.to_string()),
            None => judge(r),
        };
        verdict = verdict.worst(v);
        let label = if records.len() > 1 {
            format!("GPU{} {note}", r["device"])
        } else {
            note
        };
        notes.push((v, label));
    }
    // With many GPUs only the ones that need attention are listed.
    let shown: Vec<String> = if verdict == Verdict::Pass || records.len() == 1 {
        notes.into_iter().map(|(_, n)| n).collect()
    } else {
        notes
            .into_iter()
            .filter(|(v, _)| *v == verdict)
            .map(|(_, n)| n)
            .collect()
    };
    let ms = records.iter().filter_map(|r| r["ms"].as_u64()).sum();
    Some(Check::new(kind, verdict, shown.join(", "), expected).timed(ms))
}

fn min_per_gpu(results: &[Value], kind: &str, field: &str) -> Option<f64> {
    results
        .iter()
        .filter(|r| r["check"] == kind)
        .filter_map(|r| r[field].as_f64())
        .min_by(f64::total_cmp)
}

fn tolerance_text() -> String {
    let parts: Vec<String> = MATMUL_TOLERANCE
        .iter()
        .map(|(d, t)| format!("{d} <= {t:.0e}"))
        .collect();
    format!("rel. err {}", parts.join(", "))
}

fn matmul_verdict(r: &Value) -> (Verdict, String) {
    let mut ok = true;
    let mut parts = Vec::new();
    for (dtype, tol) in MATMUL_TOLERANCE {
        let err = r["relerr"][dtype].as_f64().unwrap_or(f64::NAN);
        // NaN compares false, so a missing or NaN error fails too.
        ok &= err <= *tol;
        parts.push(format!("{dtype} {err:.1e}"));
    }
    (verdict_if(ok, Verdict::Fail), parts.join(", "))
}

fn amp_verdict(r: &Value) -> (Verdict, String) {
    let first = r["loss_first"].as_f64().unwrap_or(f64::NAN);
    let last = r["loss_last"].as_f64().unwrap_or(f64::NAN);
    (
        verdict_if(last < first, Verdict::Fail),
        format!("loss {first:.2} -> {last:.2}"),
    )
}

fn alloc_verdict(r: &Value) -> (Verdict, String) {
    (Verdict::Pass, format!("{} GiB", r["gib"]))
}

fn d2d_verdict(r: &Value) -> (Verdict, String) {
    let gbps = r["gb_per_s"].as_f64().unwrap_or(0.0);
    (Verdict::Pass, format!("{gbps:.0} GB/s"))
}

fn compile(unit: Option<&ProbeResult>, timeout_s: u64) -> Check {
    const EXPECTED: &str = "vector add compiles and runs";
    let (verdict, measured) = match unit {
        None => (Verdict::Fail, "did not run".to_string()),
        Some(u) if u.rc == NOT_FOUND => (Verdict::Fail, "nvcc not found".to_string()),
        Some(u) if u.rc == TIMED_OUT => (Verdict::Fail, format!("timed out after {timeout_s} s")),
        Some(u) if u.rc == 0 && u.stdout.contains("bad=0") => {
            (Verdict::Pass, u.stdout.trim().to_string())
        }
        Some(u) => (
            Verdict::Fail,
            format!("rc {}: {}", u.rc, first_line(&u.stdout, &u.stderr)),
        ),
    };
    Check::new("nvcc_compile", verdict, measured, EXPECTED)
}

// ---------------------------------------------------------------- tier 2

pub fn tier2(out: &TierOutput, opts: &SmokeOptions) -> Check {
    let expected = format!("dcgmi diag -r {} passes", opts.dcgm_level);
    let ms = out.ms("dcgmi");
    let check = match out.get("dcgmi") {
        None => Check::new("dcgm_diag", Verdict::Fail, "did not run", expected),
        Some(u) if u.rc == NOT_FOUND => {
            Check::new("dcgm_diag", Verdict::Skip, "DCGM not installed", expected)
        }
        Some(u) if u.rc == TIMED_OUT => Check::new(
            "dcgm_diag",
            Verdict::Fail,
            format!("timed out after {} s", opts.timeout_s),
            expected,
        ),
        Some(u) => dcgm_diag(u, expected),
    };
    check.timed(ms)
}

fn dcgm_diag(unit: &ProbeResult, expected: String) -> Check {
    let rows = parse_dcgmi_diag(&unit.stdout);
    if rows.is_empty() {
        let msg = format!(
            "dcgmi could not run (rc {}): {}",
            unit.rc,
            first_line(&unit.stdout, &unit.stderr)
        );
        return Check::new("dcgm_diag", Verdict::Fail, msg, expected);
    }
    let worst = rows.iter().fold(Verdict::Pass, |v, r| v.worst(r.verdict));
    let passed = rows.iter().filter(|r| r.verdict == Verdict::Pass).count();
    let problems: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Fail | Verdict::Warn))
        .map(|r| match &r.detail {
            Some(d) => format!("{} {} ({d})", r.test, r.verdict.label()),
            None => format!("{} {}", r.test, r.verdict.label()),
        })
        .collect();
    let mut measured = format!("{passed}/{} tests pass", rows.len());
    if !problems.is_empty() {
        measured = format!("{measured}; {}", problems.join("; "));
    }
    Check::new("dcgm_diag", worst, measured, expected)
}

#[derive(Debug, PartialEq)]
pub struct DcgmRow {
    pub test: String,
    pub verdict: Verdict,
    pub detail: Option<String>,
}

/// Reads the result table of `dcgmi diag`: `| Test | Pass |` rows, with
/// continuation rows (empty first cell) carrying warnings for the row above.
pub fn parse_dcgmi_diag(text: &str) -> Vec<DcgmRow> {
    let mut rows: Vec<DcgmRow> = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, test, result, _] = cells[..] else {
            continue;
        };
        if test.is_empty() {
            if let Some(last) = rows
                .last_mut()
                .filter(|r| r.verdict != Verdict::Pass && !result.is_empty())
            {
                last.detail.get_or_insert_with(String::new).push_str(result);
            }
            continue;
        }
        let word = result
            .split([' ', '-'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let verdict = match word.as_str() {
            "pass" => Verdict::Pass,
            "warn" | "warning" => Verdict::Warn,
            "fail" => Verdict::Fail,
            "skip" => Verdict::Skip,
            _ => continue,
        };
        rows.push(DcgmRow {
            test: test.to_string(),
            verdict,
            detail: None,
        });
    }
    rows
}

// ---------------------------------------------------------------- helpers

/// Dotted numeric version, compared component-wise (`580.159.04`).
pub fn parse_version(s: &str) -> Option<Vec<u64>> {
    s.trim().split('.').map(|p| p.parse().ok()).collect()
}

/// `(major, minor)` of a CUDA version such as `13.0`.
pub(super) fn cuda_version(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn verdict_if(ok: bool, otherwise: Verdict) -> Verdict {
    if ok {
        Verdict::Pass
    } else {
        otherwise
    }
}

fn gpus_where(smi: &SmiLog, pred: impl Fn(&Gpu) -> bool) -> Vec<String> {
    describe_gpus(smi, |g| pred(g).then(String::new))
}

/// `GPU<i>` plus a description for each GPU that `describe` has one for.
fn describe_gpus(smi: &SmiLog, describe: impl Fn(&Gpu) -> Option<String>) -> Vec<String> {
    smi.gpus
        .iter()
        .enumerate()
        .filter_map(|(i, g)| describe(g).map(|d| format!("GPU{i} {d}").trim_end().to_string()))
        .collect()
}

fn or_none(s: &str) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s.into()
    }
}

fn first_line(stdout: &str, stderr: &str) -> String {
    [stdout, stderr]
        .iter()
        .flat_map(|s| s.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}

fn last_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("no output")
}

/// The probe prints one JSON line last; anything a library printed before
/// it (warnings on stdout) is ignored.
fn last_json_line(stdout: &str) -> Option<Value> {
    stdout.lines().rev().find_map(|l| {
        serde_json::from_str::<Value>(l.trim())
            .ok()
            .filter(Value::is_object)
    })
}
