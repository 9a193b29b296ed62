//! Probes answered together: probes of one group in a batch share one unit,
//! so several tasks' questions of one kind cost one process on the host
//! (every sysctl task's live values, one `grep`), and each probe still gets
//! the answer it would have got alone.

use std::collections::BTreeMap;

use crate::remote::probe::{Probe, ProbeResult};

/// How a probe joins others of its group.
#[derive(Clone, Debug)]
pub struct Joint {
    /// Probes with the same group share a unit.
    pub group: String,
    /// This probe's question, as `script` and `split` take it.
    pub query: String,
    /// The script that answers several queries at once.
    pub script: fn(&[&str]) -> String,
    /// Each query's answer, in order, from the answer of `script`.
    pub split: fn(&[&str], &ProbeResult) -> Vec<ProbeResult>,
}

/// Joints compare by what they ask, not by their functions.
impl PartialEq for Joint {
    fn eq(&self, other: &Self) -> bool {
        (&self.group, &self.query) == (&other.group, &other.query)
    }
}

impl Eq for Joint {}

impl PartialOrd for Joint {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Joint {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.group, &self.query).cmp(&(&other.group, &other.query))
    }
}

/// Probes as the units of one script: a probe alone, or a group of two or
/// more joined probes as one unit.
pub struct Batch {
    /// `(id, script)` per unit, for [`crate::remote::probe::build_script`].
    pub units: Vec<(String, String)>,
    /// Each probe's key and the script that answered it.
    pub ran: Vec<(String, String)>,
    joined: Vec<Joined>,
}

/// A unit that answers several probes.
struct Joined {
    unit: String,
    keys: Vec<String>,
    queries: Vec<String>,
    split: fn(&[&str], &ProbeResult) -> Vec<ProbeResult>,
}

impl Batch {
    /// With `join` false every probe is a unit of its own.
    pub fn new(probes: Vec<Probe>, join: bool) -> Batch {
        let mut groups: BTreeMap<String, Vec<Probe>> = BTreeMap::new();
        let mut batch = Batch {
            units: Vec::new(),
            ran: Vec::new(),
            joined: Vec::new(),
        };
        for p in probes {
            match p.joint.as_ref().filter(|_| join) {
                Some(j) => groups.entry(j.group.clone()).or_default().push(p),
                None => batch.alone(p),
            }
        }
        for (group, members) in groups {
            match members.len() {
                1 => members.into_iter().for_each(|p| batch.alone(p)),
                _ => batch.join(group, members),
            }
        }
        batch
    }

    fn alone(&mut self, p: Probe) {
        self.ran.push((p.key.clone(), p.script.clone()));
        self.units.push((p.key, p.script));
    }

    fn join(&mut self, group: String, members: Vec<Probe>) {
        let joints: Vec<Joint> = members.iter().filter_map(|p| p.joint.clone()).collect();
        let queries: Vec<String> = joints.iter().map(|j| j.query.clone()).collect();
        let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
        let script = (joints[0].script)(&refs);
        let unit = format!("joint:{group}");
        let keys: Vec<String> = members.into_iter().map(|p| p.key).collect();
        self.ran
            .extend(keys.iter().map(|k| (k.clone(), script.clone())));
        self.units.push((unit.clone(), script));
        self.joined.push(Joined {
            unit,
            keys,
            queries,
            split: joints[0].split,
        });
    }

    /// The answers by probe key, from the answers by unit.
    pub fn answers(
        &self,
        mut by_unit: BTreeMap<String, ProbeResult>,
    ) -> BTreeMap<String, ProbeResult> {
        for j in &self.joined {
            let Some(r) = by_unit.remove(&j.unit) else {
                continue;
            };
            let refs: Vec<&str> = j.queries.iter().map(String::as_str).collect();
            by_unit.extend(j.keys.iter().cloned().zip((j.split)(&refs, &r)));
        }
        by_unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(queries: &[&str]) -> String {
        format!("echo {}", queries.join(" "))
    }

    /// Each query's word of the joint answer.
    fn split(queries: &[&str], r: &ProbeResult) -> Vec<ProbeResult> {
        let words: Vec<&str> = r.stdout.split_whitespace().collect();
        let found = |q: &&str| words.contains(q).then(|| q.to_string());
        queries
            .iter()
            .map(|q| ProbeResult::ok(found(q).unwrap_or_default()))
            .collect()
    }

    fn joined(key: &str, group: &str) -> Probe {
        Probe::new(key, format!("echo {key} alone")).with_joint(Joint {
            group: group.into(),
            query: key.into(),
            script,
            split,
        })
    }

    #[test]
    fn probes_of_one_group_share_a_unit_and_get_their_own_answers() {
        let probes = vec![
            joined("a", "g"),
            Probe::new("plain", "true"),
            joined("b", "g"),
            joined("c", "lonely"),
        ];
        assert_eq!(Batch::new(probes.clone(), false).units.len(), 4);
        let batch = Batch::new(probes, true);
        let units: Vec<(&str, &str)> = batch
            .units
            .iter()
            .map(|(id, s)| (id.as_str(), s.as_str()))
            .collect();
        assert_eq!(
            units,
            [
                ("plain", "true"),
                ("joint:g", "echo a b"),
                ("c", "echo c alone")
            ]
        );
        assert_eq!(batch.ran[1], ("a".to_string(), "echo a b".to_string()));
        let by_unit = [
            ("plain".to_string(), ProbeResult::ok("")),
            ("joint:g".to_string(), ProbeResult::ok("a b\n")),
        ];
        let answers = batch.answers(by_unit.into());
        assert_eq!(answers["a"].stdout, "a");
        assert_eq!(answers["b"].stdout, "b");
        assert!(!answers.contains_key("joint:g") && !answers.contains_key("c"));
    }
}
