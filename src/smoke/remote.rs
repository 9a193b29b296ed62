//! The shell side of the smoke test: one framed script per tier, built from
//! units whose output [`crate::remote::probe::parse_frames`] splits apart again.
//!
//! Non-interactive SSH sessions do not read /etc/profile.d, so every tool is
//! found by `command -v` with absolute fallbacks, never by a login PATH.

use std::collections::BTreeMap;

use super::SmokeOptions;
use crate::base::shell::quote;
use crate::remote::probe::{build_script, ProbeResult};

pub const TORCH_PROBE: &str = include_str!("torch_probe.py");
const VECADD: &str = include_str!("vecadd.cu");

/// Runs `timeout` only where it exists: minimal images may lack coreutils.
const TIMEOUT_FN: &str =
    "np_to() { if command -v timeout >/dev/null 2>&1; then timeout \"$@\"; else shift; \"$@\"; fi; }\n";

/// One tier's script and what is needed to read its answer.
pub struct TierScript {
    pub token: String,
    pub body: String,
    /// Unit ids in execution order, clock units excluded.
    pub units: Vec<String>,
    /// Every unit id as framed, clock units included.
    pub framed_ids: Vec<String>,
}

pub fn tier0(opts: &SmokeOptions) -> TierScript {
    let smi = format!(
        "{TIMEOUT_FN}{}np_to {} \"$np_bin\" -q -x",
        find_tool(
            "nvidia-smi",
            &["/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin"]
        ),
        opts.timeout_s
    );
    tier_script(vec![
        ("smi", smi),
        ("driver", "cat /proc/driver/nvidia/version".into()),
        ("xid", format!("{XID}{XID_COUNT}")),
    ])
}

pub fn tier1(opts: &SmokeOptions) -> TierScript {
    let nvcc = format!("{}/bin/nvcc", opts.cuda_home.trim_end_matches('/'));
    let mut units = vec![
        ("nvcc", format!("{}\"$np_bin\" --version", at_path(&nvcc))),
        ("ldconfig", LDCONFIG.into()),
    ];
    if opts.torch {
        units.push(("torch", torch_unit(opts)));
    }
    if opts.compile {
        units.push(("compile", compile_unit(&nvcc, opts.timeout_s)));
    }
    tier_script(units)
}

pub fn tier2(opts: &SmokeOptions) -> TierScript {
    let dcgmi = format!(
        "{TIMEOUT_FN}{}np_to {} \"$np_bin\" diag -r {}",
        find_tool("dcgmi", &["/usr/bin", "/usr/local/bin"]),
        opts.timeout_s,
        opts.dcgm_level
    );
    tier_script(vec![("dcgmi", dcgmi)])
}

/// ldconfig lives in sbin, which a non-root PATH often lacks; only the CUDA
/// lines come back, the whole cache is tens of KiB.
const LDCONFIG: &str = r#"PATH="$PATH:/sbin:/usr/sbin" ldconfig -p >"$np_t/l" || exit
grep -E 'lib(cuda|cudart)\.so' "$np_t/l" || true"#;

/// Prefers the kernel journal (it keeps the whole boot) over the dmesg ring
/// buffer; exits 3 when neither is readable so "no Xid" stays distinct from
/// "could not look". Counted on the host: a failing GPU logs thousands.
const XID: &str = r#"if command -v journalctl >/dev/null 2>&1 && journalctl -k -b -q --no-pager >"$np_t/k" 2>/dev/null && [ -s "$np_t/k" ]; then echo source=journalctl
elif dmesg >"$np_t/k" 2>/dev/null && [ -s "$np_t/k" ]; then echo source=dmesg
else echo "kernel log not readable" >&2; exit 3; fi
"#;

/// Counts Xid events per GPU and code in the log saved at `$np_t/k`.
pub const XID_COUNT: &str = r#"grep -o 'NVRM: Xid ([^)]*): [0-9]*' "$np_t/k" | sort | uniq -c"#;

fn torch_unit(opts: &SmokeOptions) -> String {
    let cfg = serde_json::json!({ "alloc_gib": opts.alloc_gib }).to_string();
    format!(
        "{TIMEOUT_FN}{}np_to {} \"$np_bin\" - {} <<'NP_TORCH_PROBE'\n{TORCH_PROBE}NP_TORCH_PROBE",
        find_tool(&opts.python, &["/usr/bin", "/usr/local/bin"]),
        opts.timeout_s,
        quote(&cfg)
    )
}

fn compile_unit(nvcc: &str, timeout_s: u64) -> String {
    format!(
        "{TIMEOUT_FN}{}cat >\"$np_t/vecadd.cu\" <<'NP_VECADD'\n{VECADD}NP_VECADD\n\
         np_to {timeout_s} \"$np_bin\" -o \"$np_t/vecadd\" \"$np_t/vecadd.cu\" || exit\n\
         np_to {timeout_s} \"$np_t/vecadd\"",
        at_path(nvcc)
    )
}

/// Sets `np_bin` to `name` from PATH or the first fallback directory that has
/// it; exits 127 (the shell's own "not found") otherwise. An absolute `name`
/// is used as is.
fn find_tool(name: &str, dirs: &[&str]) -> String {
    if name.starts_with('/') {
        return at_path(name);
    }
    let fallbacks: Vec<String> = dirs.iter().map(|d| quote(&format!("{d}/{name}"))).collect();
    format!(
        "np_bin=$(command -v {n} 2>/dev/null) || np_bin=\n\
         for p in {f}; do [ -z \"$np_bin\" ] && [ -x \"$p\" ] && np_bin=$p; done\n\
         [ -n \"$np_bin\" ] || {{ echo {n} not found >&2; exit 127; }}\n",
        n = quote(name),
        f = fallbacks.join(" ")
    )
}

fn at_path(path: &str) -> String {
    format!(
        "np_bin={p}\n[ -x \"$np_bin\" ] || {{ echo {p} not found >&2; exit 127; }}\n",
        p = quote(path)
    )
}

/// Wraps every unit between clock units so each one's duration can be read
/// from the host's own clock, not from the single round trip.
fn tier_script(units: Vec<(&str, String)>) -> TierScript {
    let mut framed = vec![clock(0)];
    for (i, (id, body)) in units.iter().enumerate() {
        framed.push((id.to_string(), body.clone()));
        framed.push(clock(i + 1));
    }
    let token = token(&framed);
    TierScript {
        body: build_script(&token, &framed, false, &[]),
        framed_ids: framed.iter().map(|(id, _)| id.clone()).collect(),
        token,
        units: units.into_iter().map(|(id, _)| id.to_string()).collect(),
    }
}

fn clock(i: usize) -> (String, String) {
    (format!("clock.{i}"), "date +%s%N".into())
}

/// Derived from the script itself, so the same checks always make the same
/// script (a task's probe is recognised when the task is planned), while no
/// output can guess it.
fn token(units: &[(String, String)]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    units.hash(&mut h);
    format!("smoke{:016x}", h.finish())
}

/// A tier's answers by unit id, with each unit's duration in ms.
#[derive(Debug, Default)]
pub struct TierOutput {
    pub results: BTreeMap<String, ProbeResult>,
    pub ms: BTreeMap<String, u64>,
}

impl TierOutput {
    pub fn new(units: &[String], mut frames: BTreeMap<String, ProbeResult>) -> Self {
        let clock_ns = |frames: &BTreeMap<String, ProbeResult>, i: usize| {
            frames
                .get(&format!("clock.{i}"))
                .and_then(|r| r.stdout.trim().parse::<u128>().ok())
        };
        let mut ms = BTreeMap::new();
        for (i, id) in units.iter().enumerate() {
            // Hosts whose `date` lacks %N leave the duration at zero.
            let elapsed = match (clock_ns(&frames, i), clock_ns(&frames, i + 1)) {
                (Some(a), Some(b)) => (b.saturating_sub(a) / 1_000_000) as u64,
                _ => 0,
            };
            ms.insert(id.clone(), elapsed);
        }
        frames.retain(|id, _| !id.starts_with("clock."));
        TierOutput {
            results: frames,
            ms,
        }
    }

    pub fn get(&self, id: &str) -> Option<&ProbeResult> {
        self.results.get(id)
    }

    pub fn ms(&self, id: &str) -> u64 {
        self.ms.get(id).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::local::LocalTransport;
    use crate::remote::probe::parse_frames;
    use crate::remote::{Purpose, Script, Transport};

    fn run_local(script: &TierScript) -> TierOutput {
        let out = LocalTransport
            .run(&Script {
                purpose: Purpose::Probe,
                body: script.body.clone(),
                become_user: None,
                become_flags: None,
            })
            .unwrap();
        TierOutput::new(
            &script.units,
            parse_frames(&script.token, &out.stdout, &script.framed_ids).unwrap(),
        )
    }

    #[test]
    fn smoke_missing_tools_exit_127_locally() {
        let opts = SmokeOptions {
            cuda_home: "/nonexistent/cuda".into(),
            python: "/nonexistent/python3".into(),
            torch: true,
            compile: true,
            ..SmokeOptions::default()
        };
        let out = run_local(&tier1(&opts));
        for id in ["nvcc", "torch", "compile"] {
            assert_eq!(out.get(id).unwrap().rc, 127, "{id}: {:?}", out.get(id));
        }
        assert!(out
            .get("nvcc")
            .unwrap()
            .stderr
            .contains("/nonexistent/cuda/bin/nvcc not found"));
    }

    #[test]
    fn smoke_torch_probe_heredoc_reaches_python() {
        // Runs the embedded script with whatever python3 this machine has; the
        // JSON must come back whole whether or not PyTorch is installed.
        let opts = SmokeOptions {
            torch: true,
            ..SmokeOptions::default()
        };
        let out = run_local(&tier1(&opts));
        let torch = out.get("torch").unwrap();
        if torch.rc == 127 {
            return;
        }
        let v: serde_json::Value = serde_json::from_str(torch.stdout.trim()).unwrap();
        assert!(v.get("torch").is_some(), "{v}");
    }

    #[test]
    fn smoke_units_are_timed_by_clock_frames() {
        let frames: BTreeMap<String, ProbeResult> = [
            ("clock.0", "1000000000"),
            ("a", "x"),
            ("clock.1", "1250000000"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ProbeResult::ok(v)))
        .collect();
        let out = TierOutput::new(&["a".to_string()], frames);
        assert_eq!(out.ms("a"), 250);
        assert!(out.get("clock.0").is_none());
    }
}
