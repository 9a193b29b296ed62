//! Parser for `nvidia-smi -q -x`. The XML schema drifts between driver
//! branches (throttle reasons became "clock event" reasons, ECC counters
//! were regrouped), so lookups accept the old and the new element names.

use roxmltree::{Document, Node, ParsingOptions};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmiLog {
    pub driver_version: String,
    pub cuda_version: String,
    pub gpus: Vec<Gpu>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gpu {
    pub bus_id: String,
    pub name: String,
    pub persistence: Option<bool>,
    pub ecc_enabled: Option<bool>,
    pub ecc_volatile_uncorrected: u64,
    /// Problems that need a reset or an RMA: pending retirement or row
    /// remapping, remapping failure, pending repairs.
    pub memory_repair_issues: Vec<String>,
    pub pcie: Pcie,
    /// Clock event (throttle) reasons that are active, short names such as
    /// `hw_slowdown` or `gpu_idle`.
    pub active_clock_events: Vec<String>,
    pub processes: Vec<GpuProcess>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pcie {
    pub gen_current: Option<u32>,
    pub gen_max: Option<u32>,
    pub gen_device_max: Option<u32>,
    pub width_current: Option<u32>,
    pub width_max: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuProcess {
    pub pid: String,
    pub name: String,
    pub used_mib: u64,
}

pub fn parse(xml: &str) -> Result<SmiLog, String> {
    // nvidia-smi emits a DOCTYPE line; without allow_dtd roxmltree refuses it.
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml, opts)
        .map_err(|e| format!("unreadable nvidia-smi XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "nvidia_smi_log" {
        return Err(format!("unexpected XML root <{}>", root.tag_name().name()));
    }
    Ok(SmiLog {
        driver_version: text(root, &["driver_version"]).unwrap_or_default(),
        cuda_version: text(root, &["cuda_version"]).unwrap_or_default(),
        gpus: children(root, "gpu").map(parse_gpu).collect(),
    })
}

fn parse_gpu(gpu: Node) -> Gpu {
    Gpu {
        bus_id: gpu.attribute("id").unwrap_or_default().to_string(),
        name: text(gpu, &["product_name"]).unwrap_or_default(),
        persistence: text(gpu, &["persistence_mode"]).map(|s| s == "Enabled"),
        ecc_enabled: text(gpu, &["ecc_mode", "current_ecc"]).and_then(|s| match s.as_str() {
            "Enabled" => Some(true),
            "Disabled" => Some(false),
            _ => None,
        }),
        ecc_volatile_uncorrected: volatile_uncorrected(gpu),
        memory_repair_issues: memory_repair_issues(gpu),
        pcie: parse_pcie(gpu),
        active_clock_events: active_clock_events(gpu),
        processes: parse_processes(gpu),
    }
}

/// Sums volatile uncorrectable ECC counters: `*uncorrectable*` leaves in
/// current drivers, `double_bit/total` in older ones.
fn volatile_uncorrected(gpu: Node) -> u64 {
    let Some(volatile) = find(gpu, &["ecc_errors", "volatile"]) else {
        return 0;
    };
    let new_style: u64 = volatile
        .children()
        .filter(|n| n.is_element() && n.tag_name().name().contains("uncorrectable"))
        .filter_map(|n| number(n.text()?))
        .sum();
    let old_style = text(volatile, &["double_bit", "total"])
        .and_then(|s| number(&s))
        .unwrap_or(0);
    new_style + old_style
}

fn memory_repair_issues(gpu: Node) -> Vec<String> {
    let flags = [
        (
            &["retired_pages", "pending_retirement"][..],
            "page retirement pending",
        ),
        (
            &["retired_pages", "pending_blacklist"][..],
            "page retirement pending",
        ),
        (
            &["remapped_rows", "remapped_row_pending"][..],
            "row remapping pending",
        ),
        (
            &["remapped_rows", "remapped_row_failure"][..],
            "row remapping failed",
        ),
        (
            &["ecc_errors", "channel_repair_pending"][..],
            "channel repair pending",
        ),
        (
            &["ecc_errors", "tpc_repair_pending"][..],
            "TPC repair pending",
        ),
        (
            &["ecc_errors", "unrepairable_memory"][..],
            "unrepairable memory",
        ),
    ];
    let mut issues: Vec<String> = Vec::new();
    for (path, issue) in flags {
        if text(gpu, path).is_some_and(|v| v == "Yes") && !issues.iter().any(|i| i == issue) {
            issues.push(issue.to_string());
        }
    }
    issues
}

fn parse_pcie(gpu: Node) -> Pcie {
    let link = |path: &[&str]| {
        let mut full = vec!["pci", "pci_gpu_link_info"];
        full.extend_from_slice(path);
        text(gpu, &full).and_then(|s| s.trim_end_matches('x').parse().ok())
    };
    Pcie {
        gen_current: link(&["pcie_gen", "current_link_gen"]),
        gen_max: link(&["pcie_gen", "max_link_gen"]),
        gen_device_max: link(&["pcie_gen", "max_device_link_gen"]),
        width_current: link(&["link_widths", "current_link_width"]),
        width_max: link(&["link_widths", "max_link_width"]),
    }
}

fn active_clock_events(gpu: Node) -> Vec<String> {
    let reasons =
        find(gpu, &["clocks_event_reasons"]).or_else(|| find(gpu, &["clocks_throttle_reasons"]));
    let Some(reasons) = reasons else {
        return Vec::new();
    };
    reasons
        .children()
        .filter(|n| n.is_element() && n.text().is_some_and(|t| t.trim() == "Active"))
        .map(|n| {
            let tag = n.tag_name().name();
            let short = tag
                .strip_prefix("clocks_event_reason_")
                .or_else(|| tag.strip_prefix("clocks_throttle_reason_"))
                .unwrap_or(tag);
            short.to_string()
        })
        .collect()
}

fn parse_processes(gpu: Node) -> Vec<GpuProcess> {
    let Some(procs) = find(gpu, &["processes"]) else {
        return Vec::new();
    };
    children(procs, "process_info")
        .map(|p| GpuProcess {
            pid: text(p, &["pid"]).unwrap_or_default(),
            name: text(p, &["process_name"]).unwrap_or_default(),
            used_mib: text(p, &["used_memory"])
                .and_then(|s| number(&s))
                .unwrap_or(0),
        })
        .collect()
}

fn children<'a, 'i>(node: Node<'a, 'i>, name: &'static str) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(move |n| n.has_tag_name(name))
}

fn find<'a, 'i>(node: Node<'a, 'i>, path: &[&str]) -> Option<Node<'a, 'i>> {
    path.iter()
        .try_fold(node, |n, name| n.children().find(|c| c.has_tag_name(*name)))
}

/// The trimmed text at `path`, with nvidia-smi's "N/A" read as absent.
fn text(node: Node, path: &[&str]) -> Option<String> {
    let t = find(node, path)?.text()?.trim();
    (!t.is_empty() && t != "N/A").then(|| t.to_string())
}

/// The leading integer of values such as `143771 MiB` or `0`.
fn number(s: &str) -> Option<u64> {
    s.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const H200_XML: &str =
        include_str!("../../tests/fixtures/gpu-h200/nvidia-smi-q.xml");

    #[test]
    fn smoke_parses_real_h200_capture() {
        let log = parse(H200_XML).unwrap();
        assert_eq!(log.driver_version, "580.159.04");
        assert_eq!(log.cuda_version, "13.0");
        assert_eq!(log.gpus.len(), 1);
        let gpu = &log.gpus[0];
        assert_eq!(gpu.bus_id, "00000000:00:06.0");
        assert_eq!(gpu.name, "NVIDIA H200");
        assert_eq!(gpu.persistence, Some(true));
        assert_eq!(gpu.ecc_enabled, Some(true));
        assert_eq!(gpu.ecc_volatile_uncorrected, 0);
        assert!(gpu.memory_repair_issues.is_empty());
        let pcie = Pcie {
            gen_current: Some(5),
            gen_max: Some(5),
            gen_device_max: Some(5),
            width_current: Some(16),
            width_max: Some(16),
        };
        assert_eq!(gpu.pcie, pcie);
        assert_eq!(gpu.active_clock_events, ["gpu_idle"]);
        assert!(gpu.processes.is_empty());
    }

    #[test]
    fn smoke_parses_old_style_throttle_and_ecc_names() {
        let xml = r#"<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>470.1</driver_version><cuda_version>11.4</cuda_version>
<gpu id="0"><product_name>Tesla V100</product_name>
<clocks_throttle_reasons><clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown></clocks_throttle_reasons>
<ecc_errors><volatile><double_bit><total>3</total></double_bit></volatile></ecc_errors>
<processes><process_info><pid>42</pid><process_name>python</process_name><used_memory>1024 MiB</used_memory></process_info></processes>
</gpu></nvidia_smi_log>"#;
        let gpu = &parse(xml).unwrap().gpus[0];
        assert_eq!(gpu.active_clock_events, ["hw_slowdown"]);
        assert_eq!(gpu.ecc_volatile_uncorrected, 3);
        assert_eq!(gpu.processes[0].used_mib, 1024);
        assert_eq!(gpu.ecc_enabled, None);
    }

    #[test]
    fn smoke_rejects_non_xml() {
        assert!(parse("NVIDIA-SMI has failed").is_err());
    }
}
