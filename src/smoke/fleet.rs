//! Comparisons across hosts: a GPU that passes every check on its own can
//! still be the one that slows the whole job down.

use std::collections::BTreeMap;

use super::HostSmoke;

/// How far below its peers' median a host's bf16 throughput may fall.
const OUTLIER_FRACTION: f64 = 0.10;

/// Hosts whose bf16 throughput is more than 10% below the median of the
/// other hosts with the same GPU model, with the reason.
pub fn fleet_outliers(hosts: &[HostSmoke]) -> Vec<(String, String)> {
    let mut by_model: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
    for h in hosts {
        if let (Some(model), Some(t)) = (&h.model, h.bf16_tflops) {
            by_model.entry(model).or_default().push((&h.host, t));
        }
    }
    let mut outliers = Vec::new();
    for (model, members) in by_model {
        for (i, (host, tflops)) in members.iter().enumerate() {
            let peers: Vec<f64> = members
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, (_, t))| *t)
                .collect();
            let Some(median) = median(peers.clone()) else {
                continue;
            };
            if *tflops < median * (1.0 - OUTLIER_FRACTION) {
                let below = (1.0 - tflops / median) * 100.0;
                let reason = format!(
                    "bf16 {tflops:.1} TFLOP/s is {below:.0}% below the median {median:.1} of {} {model} peer(s)",
                    peers.len()
                );
                outliers.push((host.to_string(), reason));
            }
        }
    }
    outliers
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}
