use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::checks::{cudart_majors, nvcc_release, parse_dcgmi_diag, xid};
use super::nvidia_smi::tests::H200_XML;
use super::*;
use crate::remote::fake::{count, FakeTransport};
use crate::remote::local::LocalTransport;
use crate::remote::probe::{fake_answer, ProbeResult};
use crate::remote::{Output, TransportError};
use crate::report::smoke::{render_human, report_json};

const NVCC: &str = include_str!("../../tests/fixtures/gpu-h200/nvcc-version.txt");
const LDCONFIG: &str = include_str!("../../tests/fixtures/gpu-h200/ldconfig-p.txt");
const PROC_DRIVER: &str = include_str!("../../tests/fixtures/gpu-h200/proc-driver-version.txt");
const TORCH_JSON: &str = include_str!("../../tests/fixtures/gpu-h200/torch-probe.json");
const DCGMI: &str = include_str!("../../tests/fixtures/gpu-h200/dcgmi-diag-r1-sample.txt");

/// What the captured H200 host answers to each unit.
fn h200() -> BTreeMap<&'static str, ProbeResult> {
    [
        ("smi", ProbeResult::ok(H200_XML)),
        ("driver", ProbeResult::ok(PROC_DRIVER)),
        ("xid", ProbeResult::ok("source=journalctl\n")),
        ("nvcc", ProbeResult::ok(NVCC)),
        ("ldconfig", ProbeResult::ok(LDCONFIG)),
        ("torch", ProbeResult::ok(torch_line(&torch_report()))),
        ("compile", ProbeResult::ok("vecadd err=no error bad=0\n")),
        ("dcgmi", ProbeResult::ok(DCGMI)),
    ]
    .into_iter()
    .collect()
}

fn torch_report() -> Value {
    serde_json::from_str(TORCH_JSON).unwrap()
}

/// The probe prints its JSON on one line.
fn torch_line(report: &Value) -> String {
    format!("{report}\n")
}

fn failed(rc: i32, stdout: &str, stderr: &str) -> ProbeResult {
    ProbeResult {
        rc,
        stdout: stdout.into(),
        stderr: stderr.into(),
    }
}

/// A fake host answering from `answers`; clock units tick 7 ms apart and
/// units it does not know exit 127 like a missing command.
fn fake_host(answers: BTreeMap<&'static str, ProbeResult>) -> FakeTransport {
    FakeTransport::new(move |script| {
        let stdout = fake_answer(&script.body, |id| match id.strip_prefix("clock.") {
            Some(i) => ProbeResult::ok(format!(
                "{}",
                1_700_000_000_000_000_000u128 + i.parse::<u128>().unwrap() * 7_000_000
            )),
            None => answers
                .get(id)
                .cloned()
                .unwrap_or_else(|| failed(127, "", "not found")),
        });
        Ok(Output {
            status: 0,
            stdout,
            stderr: Vec::new(),
        })
    })
}

fn smoke_with(answers: BTreeMap<&'static str, ProbeResult>, opts: &SmokeOptions) -> HostSmoke {
    run_smoke("gpu01", &mut fake_host(answers), opts)
}

fn smoke_xml(xml: &str, opts: &SmokeOptions) -> HostSmoke {
    let mut answers = h200();
    answers.insert("smi", ProbeResult::ok(xml));
    smoke_with(answers, opts)
}

fn check<'a>(smoke: &'a HostSmoke, name: &str) -> &'a Check {
    smoke
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {:#?}", smoke.checks))
}

fn tier1() -> SmokeOptions {
    SmokeOptions {
        tier: 1,
        torch: true,
        compile: true,
        bf16_floors: vec![("H200".into(), 600.0)],
        ..SmokeOptions::default()
    }
}

/// The capture with its one `<gpu>` element repeated `n` times.
fn with_gpus(n: usize) -> String {
    let start = H200_XML.find("\t<gpu id=").unwrap();
    let end = H200_XML.find("</gpu>").unwrap() + "</gpu>\n".len();
    let gpu = &H200_XML[start..end];
    format!(
        "{}{}{}",
        &H200_XML[..start],
        gpu.repeat(n),
        &H200_XML[end..]
    )
}

// ------------------------------------------------------------ tier 0

#[test]
fn smoke_h200_capture_passes_tier0_in_one_round_trip() {
    let opts = SmokeOptions {
        expect_gpus: Some(1),
        min_driver: Some("535.104".into()),
        ..SmokeOptions::default()
    };
    let mut host = fake_host(h200());
    let log = host.log();
    let smoke = run_smoke("gpu01", &mut host, &opts);
    assert_eq!(count(&log, Purpose::Probe), 1);
    assert_eq!(smoke.model.as_deref(), Some("NVIDIA H200"));
    let names: Vec<&str> = smoke.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "nvidia_smi",
            "gpu_count",
            "gpu_model",
            "driver_version",
            "cuda_driver_version",
            "persistence_mode",
            "ecc_mode",
            "ecc_errors",
            "memory_repair",
            "pcie_link",
            "clock_events",
            "gpu_processes",
            "xid"
        ]
    );
    for c in &smoke.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{c:?}");
        assert_eq!((c.tier, c.duration_ms), (0, 7), "{c:?}");
    }
    assert_eq!(check(&smoke, "gpu_model").measured, "1x NVIDIA H200");
    assert_eq!(check(&smoke, "driver_version").measured, "580.159.04");
    assert_eq!(check(&smoke, "cuda_driver_version").measured, "13.0");
    assert_eq!(check(&smoke, "pcie_link").measured, "gen5 x16");
    assert!(!smoke.failed());
}

#[test]
fn smoke_no_driver_is_a_clear_failure() {
    let mut answers = h200();
    answers.insert("smi", failed(127, "", "nvidia-smi not found\n"));
    answers.insert(
        "driver",
        failed(
            1,
            "",
            "cat: /proc/driver/nvidia/version: No such file or directory\n",
        ),
    );
    let mut host = fake_host(answers);
    let log = host.log();
    let smoke = run_smoke("cpu01", &mut host, &SmokeOptions { tier: 2, ..tier1() });
    assert_eq!(count(&log, Purpose::Probe), 1, "later tiers are not sent");
    assert_eq!(smoke.checks.len(), 1);
    let c = &smoke.checks[0];
    assert_eq!((c.name.as_str(), c.verdict), ("nvidia_smi", Verdict::Fail));
    assert!(c.measured.starts_with("no NVIDIA driver"), "{}", c.measured);
    assert!(smoke.failed());
    assert_eq!(smoke.model, None);
}

#[test]
fn smoke_broken_nvidia_smi_is_told_apart_from_no_driver() {
    let msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n";
    let mut answers = h200();
    answers.insert("smi", failed(9, msg, ""));
    let with_driver = smoke_with(answers.clone(), &SmokeOptions::default());
    assert!(check(&with_driver, "nvidia_smi")
        .measured
        .starts_with("nvidia-smi failed (rc 9): NVIDIA-SMI has failed"));
    answers.insert("driver", failed(1, "", ""));
    let without = smoke_with(answers, &SmokeOptions::default());
    assert!(check(&without, "nvidia_smi")
        .measured
        .starts_with("no NVIDIA driver: NVIDIA-SMI has failed"));
}

#[test]
fn smoke_missing_gpu_fails_the_count() {
    let opts = SmokeOptions {
        expect_gpus: Some(8),
        ..SmokeOptions::default()
    };
    assert_eq!(
        check(&smoke_xml(&with_gpus(8), &opts), "gpu_count").verdict,
        Verdict::Pass
    );
    let smoke = smoke_xml(&with_gpus(7), &opts);
    let c = check(&smoke, "gpu_count");
    assert_eq!(
        (c.verdict, c.measured.as_str(), c.expected.as_str()),
        (Verdict::Fail, "7", "8")
    );
    assert_eq!(check(&smoke, "gpu_model").measured, "7x NVIDIA H200");
}

#[test]
fn smoke_ecc_errors_fail() {
    // The volatile block comes first, so this is a volatile error.
    let xml = H200_XML.replacen("<dram_uncorrectable>0<", "<dram_uncorrectable>2<", 1);
    let smoke = smoke_xml(&xml, &SmokeOptions::default());
    let c = check(&smoke, "ecc_errors");
    assert_eq!((c.verdict, c.measured.as_str()), (Verdict::Fail, "GPU0 2"));
}

#[test]
fn smoke_ecc_disabled_warns() {
    let xml = H200_XML.replace("<current_ecc>Enabled<", "<current_ecc>Disabled<");
    let c = check(&smoke_xml(&xml, &SmokeOptions::default()), "ecc_mode").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Warn, "disabled on GPU0")
    );
}

#[test]
fn smoke_pcie_x8_fails() {
    let xml = H200_XML.replace("<current_link_width>16x<", "<current_link_width>8x<");
    let c = check(&smoke_xml(&xml, &SmokeOptions::default()), "pcie_link").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "GPU0 x8 of x16")
    );
}

#[test]
fn smoke_pcie_gen_drop_warns_only_when_busy() {
    let idle = H200_XML.replace("<current_link_gen>5<", "<current_link_gen>3<");
    let c = check(&smoke_xml(&idle, &SmokeOptions::default()), "pcie_link").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Pass, "gen3 x16")
    );
    let busy = idle.replace(
        "<clocks_event_reason_gpu_idle>Active<",
        "<clocks_event_reason_gpu_idle>Not Active<",
    );
    let c = check(&smoke_xml(&busy, &SmokeOptions::default()), "pcie_link").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Warn, "GPU0 gen3 of gen5 while busy")
    );
}

#[test]
fn smoke_remapped_rows_pending_fails() {
    let xml = H200_XML.replace("<remapped_row_pending>No<", "<remapped_row_pending>Yes<");
    let c = check(&smoke_xml(&xml, &SmokeOptions::default()), "memory_repair").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "GPU0 row remapping pending")
    );
}

#[test]
fn smoke_hw_slowdown_fails_and_power_cap_warns() {
    let xml = H200_XML.replace(
        "<clocks_event_reason_hw_slowdown>Not Active<",
        "<clocks_event_reason_hw_slowdown>Active<",
    );
    let c = check(&smoke_xml(&xml, &SmokeOptions::default()), "clock_events").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "GPU0 hw_slowdown")
    );
    let xml = H200_XML.replace(
        "<clocks_event_reason_sw_power_cap>Not Active<",
        "<clocks_event_reason_sw_power_cap>Active<",
    );
    assert_eq!(
        check(&smoke_xml(&xml, &SmokeOptions::default()), "clock_events").verdict,
        Verdict::Warn
    );
}

#[test]
fn smoke_old_driver_and_disabled_persistence() {
    let opts = SmokeOptions {
        min_driver: Some("590".into()),
        ..SmokeOptions::default()
    };
    let xml = H200_XML.replace("<persistence_mode>Enabled<", "<persistence_mode>Disabled<");
    let smoke = smoke_xml(&xml, &opts);
    let c = check(&smoke, "driver_version");
    assert_eq!((c.verdict, c.expected.as_str()), (Verdict::Fail, ">= 590"));
    assert_eq!(check(&smoke, "persistence_mode").verdict, Verdict::Warn);
}

#[test]
fn smoke_gpu_processes_warn() {
    let proc_info = "<processes><process_info><pid>4242</pid><type>C</type>\
        <process_name>python3</process_name><used_memory>20480 MiB</used_memory></process_info>";
    let xml = H200_XML.replace("<processes>", proc_info);
    let c = check(&smoke_xml(&xml, &SmokeOptions::default()), "gpu_processes").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Warn, "GPU0 pid 4242 python3 20480 MiB")
    );
}

/// A kernel log as dmesg prints it, with Xid lines among others.
const KERNEL_LOG: &str = "\
[    4.1] nvidia: loading out-of-tree module taints kernel.
[  812.1] NVRM: Xid (PCI:0000:00:06): 13, pid=77, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 0)
[  812.1] NVRM: Xid (PCI:0000:00:06): 13, pid=77, name=python3, Graphics Exception: ESR 0x504648=0x102000e
[  913.7] NVRM: Xid (PCI:0000:00:06): 79, pid=0, name=, GPU has fallen off the bus.
";

#[test]
fn smoke_xid_counts_on_the_host_and_judges_codes() {
    let script = format!(
        "np_t=$(mktemp -d)\ncat >\"$np_t/k\" <<'EOF'\n{KERNEL_LOG}EOF\n{}\nrm -r \"$np_t\"\n",
        super::remote::XID_COUNT
    );
    let out = LocalTransport
        .run(&crate::remote::Script {
            purpose: Purpose::Probe,
            body: script,
            become_user: None,
            become_flags: None,
        })
        .unwrap();
    let counted = format!("source=dmesg\n{}", String::from_utf8_lossy(&out.stdout));
    let c = xid(Some(&ProbeResult::ok(counted)));
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "Xid 13 x2, Xid 79 x1")
    );

    let app = "source=journalctl\n      2 NVRM: Xid (PCI:0000:00:06): 13\n";
    let c = xid(Some(&ProbeResult::ok(app)));
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Warn, "Xid 13 x2")
    );
    let mut answers = h200();
    answers.insert("xid", failed(3, "", "kernel log not readable"));
    let smoke = smoke_with(answers, &SmokeOptions::default());
    assert_eq!(check(&smoke, "xid").verdict, Verdict::Skip);
}

#[test]
fn smoke_transport_error_becomes_a_failed_check() {
    let mut host = FakeTransport::new(|_| {
        Err(TransportError::Unreachable(
            "gpu09: connection refused".into(),
        ))
    });
    let smoke = run_smoke("gpu09", &mut host, &SmokeOptions::default());
    let c = &smoke.checks[0];
    assert_eq!((c.name.as_str(), c.verdict), ("remote", Verdict::Fail));
    assert!(c.measured.contains("connection refused"));
}

#[test]
fn smoke_local_host_without_gpu_fails_cleanly() {
    let smoke = run_smoke("localhost", &mut LocalTransport, &tier1());
    if std::path::Path::new("/proc/driver/nvidia/version").exists() {
        return;
    }
    let c = check(&smoke, "nvidia_smi");
    assert_eq!(c.verdict, Verdict::Fail);
    assert!(c.measured.contains("no NVIDIA driver"), "{}", c.measured);
}

// ------------------------------------------------------------ tier 1

#[test]
fn smoke_tier1_h200_passes_with_torch_numbers() {
    let mut host = fake_host(h200());
    let log = host.log();
    let smoke = run_smoke("gpu01", &mut host, &tier1());
    assert_eq!(count(&log, Purpose::Probe), 2);
    for c in &smoke.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{c:?}");
    }
    let measured = |name| check(&smoke, name).measured.clone();
    assert_eq!(measured("nvcc"), "13.0");
    assert_eq!(
        measured("version_triangle"),
        "driver 580.159.04 (CUDA 13.0), toolkit 13.0, torch CUDA 13.0: \
         driver/toolkit ok, driver/torch ok, toolkit/torch ok"
    );
    assert_eq!(
        check(&smoke, "version_triangle").expected,
        "driver runs toolkit and torch, toolkit matches torch"
    );
    assert_eq!(measured("ldconfig_cuda"), "libcudart 13, libcuda.so.1");
    assert_eq!(
        measured("torch_cuda"),
        "torch 2.11.0+cu130, CUDA 13.0, 1 device(s)"
    );
    assert_eq!(
        measured("matmul_accuracy"),
        "fp32 5.7e-7, fp16 3.6e-4, bf16 2.9e-3"
    );
    assert_eq!(measured("amp_step"), "loss 2.33 -> 1.81");
    assert_eq!(measured("alloc"), "8.0 GiB");
    assert_eq!(measured("d2d_bandwidth"), "3785 GB/s");
    assert_eq!(measured("bf16_throughput"), "730.8 TFLOP/s");
    assert_eq!(check(&smoke, "bf16_throughput").expected, ">= 600 TFLOP/s");
    assert_eq!(check(&smoke, "amp_step").duration_ms, 4291);
    assert_eq!(check(&smoke, "nvcc_compile").tier, 1);
    assert_eq!(smoke.bf16_tflops, Some(730.8));
}

#[test]
fn smoke_torch_failures_per_check() {
    let mut report = torch_report();
    let results = report["results"].as_array_mut().unwrap();
    results[0]["relerr"]["bf16"] = json!(0.9);
    results[4] = json!({"check": "amp_step", "device": 0, "error": "RuntimeError: CUDA error: an illegal memory access was encountered", "ms": 3});
    let mut answers = h200();
    answers.insert(
        "torch",
        ProbeResult::ok(format!("some library warning\n{}", torch_line(&report))),
    );
    let opts = SmokeOptions {
        bf16_tflops_floor: Some(800.0),
        ..tier1()
    };
    let smoke = smoke_with(answers, &opts);
    assert_eq!(check(&smoke, "matmul_accuracy").verdict, Verdict::Fail);
    let amp = check(&smoke, "amp_step");
    assert_eq!(amp.verdict, Verdict::Fail);
    assert!(amp.measured.starts_with("RuntimeError: CUDA error"));
    let bf16 = check(&smoke, "bf16_throughput");
    assert_eq!(
        (bf16.verdict, bf16.expected.as_str()),
        (Verdict::Fail, ">= 800 TFLOP/s")
    );
}

#[test]
fn smoke_torch_multi_gpu_names_the_bad_one() {
    let mut report = torch_report();
    report["device_count"] = json!(2);
    let results = report["results"].as_array_mut().unwrap();
    let mut slow = results[3].clone();
    slow["device"] = json!(1);
    slow["tflops"] = json!(512.0);
    results.push(slow);
    let mut answers = h200();
    answers.insert("smi", ProbeResult::ok(with_gpus(2)));
    answers.insert("torch", ProbeResult::ok(torch_line(&report)));
    let smoke = smoke_with(answers, &tier1());
    let c = check(&smoke, "bf16_throughput");
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "GPU1 512.0 TFLOP/s")
    );
    assert_eq!(smoke.bf16_tflops, Some(512.0));
    assert_eq!(check(&smoke, "torch_cuda").verdict, Verdict::Pass);
}

#[test]
fn smoke_torch_absent_or_hung() {
    let torch = |result: ProbeResult| {
        let mut answers = h200();
        answers.insert("torch", result);
        check(&smoke_with(answers, &tier1()), "torch_cuda").clone()
    };
    let missing = r#"{"torch": null, "results": [], "error": "ModuleNotFoundError: No module named 'torch'"}"#;
    let c = torch(ProbeResult::ok(missing));
    assert_eq!(c.verdict, Verdict::Skip);
    assert!(c.measured.contains("No module named 'torch'"));
    assert_eq!(torch(failed(127, "", "")).measured, "python3 not found");
    assert_eq!(torch(failed(124, "", "")).verdict, Verdict::Fail);
    let c = torch(failed(139, "", "Segmentation fault\n"));
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "no result (rc 139): Segmentation fault")
    );
}

/// The H200 capture with another driver (and the CUDA version it
/// reports), nvcc release and `torch.version.cuda`; `None` for torch runs
/// without the PyTorch checks.
fn triangle(driver: &str, driver_cuda: &str, toolkit: &str, torch: Option<&str>) -> HostSmoke {
    let xml = H200_XML
        .replace(
            "<driver_version>580.159.04<",
            &format!("<driver_version>{driver}<"),
        )
        .replace(
            "<cuda_version>13.0<",
            &format!("<cuda_version>{driver_cuda}<"),
        );
    let mut report = torch_report();
    report["cuda_runtime"] = json!(torch);
    let mut answers = h200();
    answers.insert("smi", ProbeResult::ok(xml));
    answers.insert(
        "nvcc",
        ProbeResult::ok(NVCC.replace("release 13.0", &format!("release {toolkit}"))),
    );
    answers.insert("torch", ProbeResult::ok(torch_line(&report)));
    let opts = SmokeOptions {
        torch: torch.is_some(),
        ..tier1()
    };
    smoke_with(answers, &opts)
}

fn verdict_and_measured(smoke: &HostSmoke) -> (Verdict, String) {
    let c = check(smoke, "version_triangle");
    (c.verdict, c.measured.clone())
}

#[test]
fn smoke_triangle_driver_too_old_for_the_toolkit_fails() {
    let smoke = triangle("550.54.14", "12.4", "13.0", Some("13.0"));
    assert_eq!(
        verdict_and_measured(&smoke),
        (
            Verdict::Fail,
            "driver 550.54.14 (CUDA 12.4), toolkit 13.0, torch CUDA 13.0: \
             driver/toolkit fail, driver/torch fail, toolkit/torch ok. \
             driver 550.54.14 cannot run CUDA 13.0: upgrade the driver to >= 580.65.06 \
             (branch 580) or use CUDA <= 12.4"
                .into()
        )
    );
    assert_eq!(
        check(&smoke, "ldconfig_cuda").verdict,
        Verdict::Fail,
        "libcudart 13 on a CUDA 12 driver"
    );
    // The table shows the fix whole rather than cut.
    let table = render_human(std::slice::from_ref(&smoke));
    assert!(
        table.contains("or use CUDA <= 12.4  (expected driver runs"),
        "{table}"
    );
}

#[test]
fn smoke_triangle_minor_version_compatibility_warns() {
    let smoke = triangle("550.54.14", "12.4", "12.8", Some("12.8"));
    let (verdict, measured) = verdict_and_measured(&smoke);
    assert_eq!(verdict, Verdict::Warn);
    assert_eq!(
        measured,
        "driver 550.54.14 (CUDA 12.4), toolkit 12.8, torch CUDA 12.8: \
         driver/toolkit warn, driver/torch warn, toolkit/torch ok. \
         driver 550.54.14 runs CUDA 12.8 only by minor-version compatibility, features \
         that need a newer driver (PTX JIT of newer PTX) fail: upgrade the driver to \
         >= 570.26 (branch 570)"
    );

    // A toolkit the table does not know is judged by the driver's CUDA.
    let smoke = triangle("580.159.04", "13.0", "13.9", Some("13.0"));
    let (verdict, measured) = verdict_and_measured(&smoke);
    assert_eq!(verdict, Verdict::Warn);
    assert!(
        measured.contains("driver/toolkit warn, driver/torch ok, toolkit/torch warn"),
        "{measured}"
    );
    assert!(
        measured.contains("fail: upgrade the driver to one for CUDA 13.9"),
        "{measured}"
    );
}

#[test]
fn smoke_triangle_toolkit_and_torch_majors_differ() {
    let smoke = triangle("580.159.04", "13.0", "12.8", Some("13.0"));
    let (verdict, measured) = verdict_and_measured(&smoke);
    assert_eq!(verdict, Verdict::Fail);
    // The releases named grow with the table: the first ones stay.
    assert!(
        measured.starts_with(
            "driver 580.159.04 (CUDA 13.0), toolkit 12.8, torch CUDA 13.0: \
             driver/toolkit ok, driver/torch ok, toolkit/torch fail. \
             toolkit 12.8 and torch CUDA 13.0 differ in major version, which PyTorch's \
             cpp_extension refuses: install cuda-toolkit-13-0 to build extensions for \
             torch's CUDA 13.0, or torch built for cu128 (torch 2.7, 2.8, 2.9"
        ),
        "{measured}"
    );
}

#[test]
fn smoke_triangle_toolkit_and_torch_minors_differ() {
    let smoke = triangle("580.159.04", "13.0", "12.6", Some("12.8"));
    assert_eq!(
        verdict_and_measured(&smoke),
        (
            Verdict::Warn,
            "driver 580.159.04 (CUDA 13.0), toolkit 12.6, torch CUDA 12.8: \
             driver/toolkit ok, driver/torch ok, toolkit/torch warn. \
             toolkit 12.6 and torch CUDA 12.8 differ in minor version, which PyTorch's \
             cpp_extension warns about: install cuda-toolkit-12-8 to build extensions for \
             torch's CUDA 12.8"
                .into()
        )
    );
}

#[test]
fn smoke_triangle_without_torch_has_two_corners() {
    let smoke = triangle("580.159.04", "13.0", "13.0", None);
    let c = check(&smoke, "version_triangle");
    assert_eq!(
        (c.verdict, c.measured.as_str(), c.expected.as_str()),
        (
            Verdict::Pass,
            "driver 580.159.04 (CUDA 13.0), toolkit 13.0, torch not checked: driver/toolkit ok",
            "driver runs toolkit"
        )
    );

    // Checked but not importable: its pairs skip, the rest still counts.
    let mut answers = h200();
    answers.insert(
        "torch",
        ProbeResult::ok(r#"{"torch": null, "results": [], "error": "ModuleNotFoundError"}"#),
    );
    let smoke = smoke_with(answers, &tier1());
    assert_eq!(
        verdict_and_measured(&smoke),
        (
            Verdict::Pass,
            "driver 580.159.04 (CUDA 13.0), toolkit 13.0, torch CUDA unknown: \
             driver/toolkit ok, driver/torch skip, toolkit/torch skip"
                .into()
        )
    );
}

#[test]
fn smoke_mixed_cudart_majors_fail() {
    assert_eq!(cudart_majors(LDCONFIG), [13]);
    let extra = "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12\n";
    let mut answers = h200();
    answers.insert("ldconfig", ProbeResult::ok(format!("{LDCONFIG}{extra}")));
    let c = check(&smoke_with(answers, &tier1()), "ldconfig_cuda").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Fail, "mixed libcudart majors: 12, 13")
    );
}

#[test]
fn smoke_nvcc_missing_warns_and_compile_fails() {
    assert_eq!(nvcc_release(NVCC).as_deref(), Some("13.0"));
    let mut answers = h200();
    answers.insert(
        "nvcc",
        failed(127, "", "/usr/local/cuda/bin/nvcc not found"),
    );
    answers.insert(
        "compile",
        failed(127, "", "/usr/local/cuda/bin/nvcc not found"),
    );
    let smoke = smoke_with(answers, &tier1());
    assert_eq!(check(&smoke, "nvcc").verdict, Verdict::Warn);
    assert_eq!(
        verdict_and_measured(&smoke),
        (
            Verdict::Pass,
            "driver 580.159.04 (CUDA 13.0), toolkit unknown, torch CUDA 13.0: \
             driver/toolkit skip, driver/torch ok, toolkit/torch skip"
                .into()
        )
    );
    assert_eq!(check(&smoke, "nvcc_compile").verdict, Verdict::Fail);
    let no_torch = SmokeOptions {
        torch: false,
        ..tier1()
    };
    let mut answers = h200();
    answers.insert("nvcc", failed(127, "", ""));
    let smoke = smoke_with(answers, &no_torch);
    assert_eq!(check(&smoke, "version_triangle").verdict, Verdict::Skip);
}

// ------------------------------------------------------------ tier 2

#[test]
fn smoke_dcgmi_diag_results() {
    let opts = SmokeOptions {
        tier: 2,
        ..SmokeOptions::default()
    };
    let c = check(&smoke_with(h200(), &opts), "dcgm_diag").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str(), c.tier),
        (Verdict::Pass, "9/9 tests pass", 2)
    );

    let failing = DCGMI.replace(
        "| Persistence Mode          | Pass                                           |",
        "| Persistence Mode          | Fail                                           |\n\
         |                           | Warning: Persistence mode for GPU 0 is disabled. |",
    );
    let rows = parse_dcgmi_diag(&failing);
    assert_eq!(rows.len(), 9);
    let mut answers = h200();
    answers.insert("dcgmi", ProbeResult::ok(failing));
    let c = check(&smoke_with(answers, &opts), "dcgm_diag").clone();
    assert_eq!(c.verdict, Verdict::Fail);
    assert_eq!(
        c.measured,
        "8/9 tests pass; Persistence Mode FAIL (Warning: Persistence mode for GPU 0 is disabled.)"
    );

    let mut answers = h200();
    answers.remove("dcgmi");
    let c = check(&smoke_with(answers, &opts), "dcgm_diag").clone();
    assert_eq!(
        (c.verdict, c.measured.as_str()),
        (Verdict::Skip, "DCGM not installed")
    );
}

// ------------------------------------------------------------ options

#[test]
fn bf16_floor_prefers_the_explicit_floor_then_the_model() {
    let floors = SmokeOptions {
        bf16_floors: vec![("H200".into(), 600.0), ("H100".into(), 550.0)],
        ..SmokeOptions::default()
    };
    assert_eq!(
        floors.bf16_floor(Some("NVIDIA H100 80GB HBM3")),
        Some(550.0)
    );
    assert_eq!(floors.bf16_floor(Some("NVIDIA A100")), None);
    let explicit = SmokeOptions {
        bf16_tflops_floor: Some(700.0),
        ..floors
    };
    assert_eq!(explicit.bf16_floor(Some("NVIDIA H200")), Some(700.0));
}

// ------------------------------------------------------------ fleet and reports

fn host(name: &str, model: &str, tflops: f64) -> HostSmoke {
    HostSmoke {
        host: name.into(),
        model: Some(model.into()),
        checks: vec![Check::new(
            "bf16_throughput",
            Verdict::Pass,
            format!("{tflops:.1} TFLOP/s"),
            "reported",
        )],
        bf16_tflops: Some(tflops),
    }
}

#[test]
fn smoke_fleet_outliers_compare_same_model_only() {
    let hosts = vec![
        host("gpu01", "NVIDIA H200", 790.5),
        host("gpu02", "NVIDIA H200", 785.0),
        host("gpu03", "NVIDIA H200", 640.2),
        host("gpu04", "NVIDIA H200", 792.1),
        host("a100-1", "NVIDIA A100-SXM4-80GB", 280.0),
    ];
    let outliers = fleet_outliers(&hosts);
    assert_eq!(
        outliers,
        [(
            "gpu03".to_string(),
            "bf16 640.2 TFLOP/s is 19% below the median 790.5 of 3 NVIDIA H200 peer(s)".to_string()
        )]
    );
    assert!(fleet_outliers(&hosts[..1]).is_empty());
}

#[test]
fn smoke_render_human_snapshot() {
    let mut ok = host("gpu01", "NVIDIA H200", 790.5);
    ok.checks
        .insert(0, Check::new("gpu_count", Verdict::Pass, "8", "8").timed(7));
    let mut bad = host("gpu02", "NVIDIA H200", 601.0);
    bad.checks[0].tier = 1;
    bad.checks.insert(
        0,
        Check::new("pcie_link", Verdict::Fail, "GPU3 x8 of x16", "max width").timed(7),
    );
    let text = render_human(&[ok, bad]);
    let expected = "\
gpu01 (NVIDIA H200): ok, 2 pass, 0 warn, 0 fail, 0 skip
  PASS T0 gpu_count        8              (expected 8) 7 ms
  PASS T0 bf16_throughput  790.5 TFLOP/s  (expected reported) 0 ms
gpu02 (NVIDIA H200): FAIL, 1 pass, 0 warn, 1 fail, 0 skip
  FAIL T0 pcie_link        GPU3 x8 of x16  (expected max width) 7 ms
  PASS T1 bf16_throughput  601.0 TFLOP/s   (expected reported) 0 ms
fleet outliers:
  gpu02: bf16 601.0 TFLOP/s is 24% below the median 790.5 of 1 NVIDIA H200 peer(s)
";
    assert_eq!(text, expected);
}

#[test]
fn smoke_report_json_shape() {
    let smoke = smoke_with(h200(), &SmokeOptions::default());
    let report = report_json(&[smoke]);
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["kind"], "smoke");
    assert_eq!(report["outliers"], json!([]));
    let h = &report["hosts"][0];
    assert_eq!(
        (h["host"].as_str(), h["failed"].as_bool()),
        (Some("gpu01"), Some(false))
    );
    assert_eq!(h["checks"][0]["verdict"], "pass");
    assert_eq!(h["checks"][0]["duration_ms"], 7);
}
