//! The driver / toolkit / PyTorch version triangle, judged pair by pair
//! from the compatibility tables the `nvidia_gpu` role reads too.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use yaml_rust2::{Yaml, YamlLoader};

use super::checks::{cuda_version, parse_version};
use super::{Check, Verdict};

/// One file for the role and the smoke test, so a new PyTorch or CUDA
/// release is one line that both pick up.
const VARS: &str = include_str!("../../playbooks/roles/nvidia_gpu/vars/main.yml");

/// A CUDA version as `(major, minor)`.
type Cuda = (u32, u32);

#[derive(Debug)]
pub(super) struct Compat {
    /// PyTorch release -> the CUDA versions it ships builds for.
    pub torch_cuda: BTreeMap<Cuda, Vec<Cuda>>,
    /// CUDA toolkit -> the oldest driver that runs all of it.
    pub min_driver: BTreeMap<Cuda, String>,
    /// CUDA major -> the oldest driver that runs any toolkit of that major
    /// by minor-version compatibility.
    pub minor_compat: BTreeMap<u32, String>,
}

impl Compat {
    pub fn parse(text: &str) -> Result<Compat, String> {
        let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
        let doc = docs.first().ok_or("empty document")?;
        let torch_cuda = entries(doc, "nvidia_torch_cuda", |v| {
            v.as_vec()?
                .iter()
                .map(|c| cuda_version(&scalar(c)?))
                .collect()
        })?;
        let min_driver = entries(doc, "nvidia_cuda_min_driver", driver)?;
        let minor_compat = table(doc, "nvidia_cuda_minor_compat_driver")?
            .into_iter()
            .map(|(k, v)| match (k.trim().parse(), driver(v)) {
                (Ok(major), Some(d)) => Ok((major, d)),
                _ => Err(format!(
                    "nvidia_cuda_minor_compat_driver: bad entry {k}: {v:?}"
                )),
            })
            .collect::<Result<_, String>>()?;
        Ok(Compat {
            torch_cuda,
            min_driver,
            minor_compat,
        })
    }

    /// The tables of the embedded vars file, read once.
    pub fn embedded() -> Result<&'static Compat, &'static str> {
        static COMPAT: OnceLock<Result<Compat, String>> = OnceLock::new();
        COMPAT
            .get_or_init(|| Compat::parse(VARS))
            .as_ref()
            .map_err(String::as_str)
    }

    /// PyTorch releases that ship a build for `cuda`, as `torch 2.7, 2.8`.
    fn torch_releases_for(&self, cuda: Cuda) -> Option<String> {
        let releases: Vec<String> = self
            .torch_cuda
            .iter()
            .filter(|(_, builds)| builds.contains(&cuda))
            .map(|((major, minor), _)| format!("{major}.{minor}"))
            .collect();
        (!releases.is_empty()).then(|| format!("torch {}", releases.join(", ")))
    }

    /// The newest CUDA in the table that `driver` runs in full.
    fn newest_cuda_for(&self, driver: &[u64]) -> Option<Cuda> {
        self.min_driver
            .iter()
            .filter(|(_, min)| at_least(driver, min))
            .map(|(cuda, _)| *cuda)
            .next_back()
    }
}

/// The mapping under `key` with its keys read as `X.Y` and its values by
/// `value`.
fn entries<T>(
    doc: &Yaml,
    key: &str,
    value: impl Fn(&Yaml) -> Option<T>,
) -> Result<BTreeMap<Cuda, T>, String> {
    table(doc, key)?
        .into_iter()
        .map(|(k, v)| match (cuda_version(&k), value(v)) {
            (Some(c), Some(t)) => Ok((c, t)),
            _ => Err(format!("{key}: bad entry {k}: {v:?}")),
        })
        .collect()
}

fn table<'y>(doc: &'y Yaml, key: &str) -> Result<Vec<(String, &'y Yaml)>, String> {
    let hash = doc[key]
        .as_hash()
        .ok_or_else(|| format!("{key}: missing or not a mapping"))?;
    hash.iter()
        .map(|(k, v)| Ok((scalar(k).ok_or_else(|| format!("{key}: key {k:?}"))?, v)))
        .collect()
}

/// A version written with or without quotes: YAML reads an unquoted
/// `12.8` as a float, kept here as its text.
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

fn driver(y: &Yaml) -> Option<String> {
    scalar(y).filter(|s| parse_version(s).is_some())
}

/// `have >= min` for dotted versions, missing fields counting as 0.
fn at_least(have: &[u64], min: &str) -> bool {
    let Some(min) = parse_version(min) else {
        return false;
    };
    let len = have.len().max(min.len());
    let pad = |v: &[u64]| {
        let mut v = v.to_vec();
        v.resize(len, 0);
        v
    };
    pad(have) >= pad(&min)
}

/// The driver branch of a driver version: `570` of `570.26`.
fn branch(driver: &str) -> &str {
    driver.split('.').next().unwrap_or(driver)
}

/// What the smoke test learned about PyTorch's CUDA.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TorchCuda<'a> {
    /// The PyTorch checks were not asked for.
    NotChecked,
    /// The probe ran but gave no CUDA version: no torch, a CPU-only build,
    /// or a probe that failed.
    Unknown,
    /// `torch.version.cuda`.
    Cuda(&'a str),
}

/// The three corners: the driver and the CUDA version nvidia-smi reports
/// for it, the toolkit's nvcc release, and PyTorch's CUDA.
pub(super) struct Corners<'a> {
    pub driver: &'a str,
    pub driver_cuda: &'a str,
    pub toolkit: Option<&'a str>,
    pub torch: TorchCuda<'a>,
}

/// One pair's verdict and, unless it passed or was skipped, the move that
/// fixes it.
struct Pair {
    name: &'static str,
    verdict: Verdict,
    fix: Option<String>,
}

impl Pair {
    fn new(name: &'static str, (verdict, fix): (Verdict, Option<String>)) -> Pair {
        Pair { name, verdict, fix }
    }
}

/// Judges each pair of corners by NVIDIA's and PyTorch's documented rules;
/// the worst pair decides, and a missing corner skips only its own pairs.
///
/// * Driver vs a CUDA version C (the toolkit's, or the one torch was built
///   with): the driver runs C in full when it is at least C's minimum
///   driver ("CUDA Toolkit and Corresponding Driver Versions"), or, for a
///   C the table does not know, when C is no newer than the CUDA version
///   the driver reports. Below that, a driver at or above the
///   minor-version-compatibility floor of C's major still runs C's code
///   ("CUDA Minor Version Compatibility"), except what needs the newer
///   driver, such as JIT-compiling PTX newer than the driver: a warning
///   that names the driver to upgrade to. Below the floor nothing of C
///   runs: a failure naming the driver upgrade, or the newest CUDA the
///   driver does run.
/// * Toolkit vs torch: PyTorch's `cpp_extension` builds extensions with
///   nvcc and compares its release with `torch.version.cuda`: another
///   minor only warns, another major raises. Either way the fix is the
///   toolkit torch was built for, or a torch built for the toolkit.
pub(super) fn version_triangle(corners: &Corners) -> Check {
    let torch_checked = corners.torch != TorchCuda::NotChecked;
    let expected = if torch_checked {
        "driver runs toolkit and torch, toolkit matches torch"
    } else {
        "driver runs toolkit"
    };
    let compat = match Compat::embedded() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("compatibility tables unreadable: {e}");
            return Check::new("version_triangle", Verdict::Skip, msg, expected);
        }
    };
    let driver = Some(corners.driver).filter(|d| parse_version(d).is_some());
    let torch = match corners.torch {
        TorchCuda::Cuda(v) => Some(v),
        _ => None,
    };
    let mut pairs = vec![Pair::new(
        "driver/toolkit",
        match (driver, corners.toolkit) {
            (Some(d), Some(t)) => driver_runs(compat, d, corners.driver_cuda, t),
            _ => (Verdict::Skip, None),
        },
    )];
    if torch_checked {
        pairs.push(Pair::new(
            "driver/torch",
            match (driver, torch) {
                (Some(d), Some(t)) => driver_runs(compat, d, corners.driver_cuda, t),
                _ => (Verdict::Skip, None),
            },
        ));
        pairs.push(Pair::new(
            "toolkit/torch",
            match (corners.toolkit, torch) {
                (Some(tk), Some(t)) => toolkit_runs_torch(compat, tk, t),
                _ => (Verdict::Skip, None),
            },
        ));
    }
    let verdict = pairs.iter().fold(Verdict::Skip, |v, p| v.worst(p.verdict));
    let judged: Vec<String> = pairs
        .iter()
        .map(|p| format!("{} {}", p.name, verdict_word(p.verdict)))
        .collect();
    let mut measured = format!("{}: {}", corner_text(corners), judged.join(", "));
    let mut fixes: Vec<&str> = Vec::new();
    for fix in pairs.iter().filter_map(|p| p.fix.as_deref()) {
        if !fixes.contains(&fix) {
            fixes.push(fix);
        }
    }
    for fix in fixes {
        measured.push_str(". ");
        measured.push_str(fix);
    }
    Check::new("version_triangle", verdict, measured, expected)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "ok",
        Verdict::Warn => "warn",
        Verdict::Fail => "fail",
        Verdict::Skip => "skip",
    }
}

/// `driver 580.95.05 (CUDA 13.0), toolkit 12.8, torch CUDA 12.8`.
fn corner_text(c: &Corners) -> String {
    let driver = match (c.driver, c.driver_cuda) {
        ("", _) => "driver unknown".to_string(),
        (d, "") => format!("driver {d}"),
        (d, cuda) => format!("driver {d} (CUDA {cuda})"),
    };
    let toolkit = c
        .toolkit
        .map_or("toolkit unknown".to_string(), |t| format!("toolkit {t}"));
    let torch = match c.torch {
        TorchCuda::NotChecked => "torch not checked".to_string(),
        TorchCuda::Unknown => "torch CUDA unknown".to_string(),
        TorchCuda::Cuda(v) => format!("torch CUDA {v}"),
    };
    format!("{driver}, {toolkit}, {torch}")
}

/// Whether `driver` (reporting `driver_cuda`) runs code built for `cuda`.
fn driver_runs(
    compat: &Compat,
    driver: &str,
    driver_cuda: &str,
    cuda: &str,
) -> (Verdict, Option<String>) {
    let (Some(have), Some(c)) = (parse_version(driver), cuda_version(cuda)) else {
        return (Verdict::Skip, None);
    };
    let reported = cuda_version(driver_cuda);
    let min = compat.min_driver.get(&c);
    let runs = match (min, reported) {
        (Some(min), _) => at_least(&have, min),
        (None, Some(r)) => c <= r,
        // Neither the table nor the driver says what it runs.
        (None, None) => return (Verdict::Skip, None),
    };
    if runs {
        return (Verdict::Pass, None);
    }
    let upgrade = match min {
        Some(min) => format!("upgrade the driver to >= {min} (branch {})", branch(min)),
        None => format!("upgrade the driver to one for CUDA {cuda}"),
    };
    if compat
        .minor_compat
        .get(&c.0)
        .is_some_and(|floor| at_least(&have, floor))
    {
        let fix = format!(
            "driver {driver} runs CUDA {cuda} only by minor-version compatibility, \
             features that need a newer driver (PTX JIT of newer PTX) fail: {upgrade}"
        );
        return (Verdict::Warn, Some(fix));
    }
    let newest = reported
        .or_else(|| compat.newest_cuda_for(&have))
        .map(|(major, minor)| format!(" or use CUDA <= {major}.{minor}"))
        .unwrap_or_default();
    let fix = format!("driver {driver} cannot run CUDA {cuda}: {upgrade}{newest}");
    (Verdict::Fail, Some(fix))
}

/// Whether extensions built with the toolkit load into torch.
fn toolkit_runs_torch(compat: &Compat, toolkit: &str, torch: &str) -> (Verdict, Option<String>) {
    let (Some(tk), Some(t)) = (cuda_version(toolkit), cuda_version(torch)) else {
        return (Verdict::Skip, None);
    };
    if tk == t {
        return (Verdict::Pass, None);
    }
    let install = format!(
        "install cuda-toolkit-{}-{} to build extensions for torch's CUDA {torch}",
        t.0, t.1
    );
    if tk.0 == t.0 {
        let fix = format!(
            "toolkit {toolkit} and torch CUDA {torch} differ in minor version, \
             which PyTorch's cpp_extension warns about: {install}"
        );
        return (Verdict::Warn, Some(fix));
    }
    let releases = compat
        .torch_releases_for(tk)
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let fix = format!(
        "toolkit {toolkit} and torch CUDA {torch} differ in major version, \
         which PyTorch's cpp_extension refuses: {install}, or torch built for cu{}{}{releases}",
        tk.0, tk.1
    );
    (Verdict::Fail, Some(fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_tables_parse_and_cover_every_torch_build() {
        let compat = Compat::embedded().unwrap();
        assert_eq!(compat.min_driver[&(12, 8)], "570.26");
        assert_eq!(compat.minor_compat[&12], "525.60.13");
        assert_eq!(compat.torch_cuda[&(2, 7)], [(11, 8), (12, 6), (12, 8)]);
        for (torch, builds) in &compat.torch_cuda {
            for cuda in builds {
                assert!(
                    compat.min_driver.contains_key(cuda),
                    "torch {torch:?} ships CUDA {cuda:?}, which has no minimum driver"
                );
            }
        }
        for major in compat.min_driver.keys().map(|c| c.0) {
            assert!(compat.minor_compat.contains_key(&major), "CUDA {major}");
        }
    }

    #[test]
    fn unquoted_and_broken_tables() {
        let ok = "nvidia_torch_cuda: {2.7: [12.8]}\nnvidia_cuda_min_driver: {12.8: 570.26}\n\
                  nvidia_cuda_minor_compat_driver: {12: 525.60.13}\n";
        let compat = Compat::parse(ok).unwrap();
        assert_eq!(compat.min_driver[&(12, 8)], "570.26");
        let err = Compat::parse("nvidia_torch_cuda: {}\n").unwrap_err();
        assert_eq!(err, "nvidia_cuda_min_driver: missing or not a mapping");
        assert!(Compat::parse(&ok.replace("570.26", "soon")).is_err());
    }

    #[test]
    fn driver_versions_compare_by_field() {
        let have = parse_version("570.26").unwrap();
        assert!(at_least(&have, "570.26.0"));
        assert!(!at_least(&have, "570.124.06"));
        assert!(at_least(&parse_version("580.95.05").unwrap(), "580.65.06"));
    }
}
