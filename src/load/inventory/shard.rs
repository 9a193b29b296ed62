//! `--shard I/N`: one of N disjoint, balanced parts of the hosts a playbook
//! targets, so N controllers can split a fleet without talking to each other.
//!
//! The rule, stable across runs and machines because it depends only on the
//! host names: take every host any play of the playbook selects (after
//! `--limit`), sort the names bytewise, and deal them out in turn: the k-th
//! name (from 0) belongs to shard `k mod N + 1`. Shard sizes differ by at most
//! one, and a host is in the same shard for every play, so a host's plays
//! still run in order on one controller. Adding or removing hosts moves others
//! between shards; every shard of one run must therefore see the same
//! inventory.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::str::FromStr;

use super::{Inventory, PatternError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1-based, as Slurm array tasks and Kubernetes indices are turned into.
    pub index: usize,
    pub count: usize,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("shard must be I/N with 1 <= I <= N, got '{0}'")]
pub struct ShardSyntax(String);

impl FromStr for Shard {
    type Err = ShardSyntax;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ShardSyntax(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// This shard's part of `hosts` (any order, duplicates allowed).
    pub fn pick<I: IntoIterator<Item = String>>(&self, hosts: I) -> HashSet<String> {
        let sorted: BTreeSet<String> = hosts.into_iter().collect();
        sorted
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % self.count == self.index - 1)
            .map(|(_, h)| h)
            .collect()
    }

    /// This shard's part of every host the `patterns` (one per play) select
    /// within `limit`.
    pub fn hosts(
        &self,
        inventory: &Inventory,
        patterns: &[&str],
        limit: Option<&str>,
    ) -> Result<HashSet<String>, PatternError> {
        let allowed: Option<HashSet<String>> = match limit {
            Some(l) => Some(inventory.select(l)?.into_iter().collect()),
            None => None,
        };
        let mut targeted = Vec::new();
        for pattern in patterns {
            targeted.extend(
                inventory
                    .select(pattern)?
                    .into_iter()
                    .filter(|h| allowed.as_ref().is_none_or(|a| a.contains(h))),
            );
        }
        Ok(self.pick(targeted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("gpu-{i:04}")).collect()
    }

    #[test]
    fn shards_are_disjoint_cover_every_host_and_differ_by_at_most_one() {
        let hosts = names(1003);
        let parts: Vec<HashSet<String>> = (1..=4)
            .map(|index| Shard { index, count: 4 }.pick(hosts.iter().cloned()))
            .collect();
        let sizes: Vec<usize> = parts.iter().map(HashSet::len).collect();
        assert_eq!(sizes, [251, 251, 251, 250]);
        let mut all: Vec<&String> = parts.iter().flatten().collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 1003);
    }

    #[test]
    fn the_part_depends_on_names_only_not_on_their_order() {
        let shard: Shard = "2/3".parse().unwrap();
        let mut reversed = names(10);
        reversed.reverse();
        reversed.push("gpu-0001".into());
        assert_eq!(shard.pick(reversed), shard.pick(names(10)));
        let mut got: Vec<String> = shard.pick(names(10)).into_iter().collect();
        got.sort();
        assert_eq!(got, ["gpu-0002", "gpu-0005", "gpu-0008"]);
    }

    #[test]
    fn a_host_of_several_plays_stays_in_one_shard() {
        let inv = Inventory::from_host_list("a,b,c,d,e");
        let one = Shard { index: 1, count: 2 };
        let picked = one.hosts(&inv, &["a:b:c", "c:d:e"], None).unwrap();
        let mut got: Vec<_> = picked.into_iter().collect();
        got.sort();
        assert_eq!(got, ["a", "c", "e"]);
        let limited = one.hosts(&inv, &["all"], Some("b:d:e")).unwrap();
        let mut got: Vec<_> = limited.into_iter().collect();
        got.sort();
        assert_eq!(got, ["b", "e"]);
    }

    #[test]
    fn bad_shards_are_refused() {
        for bad in ["0/4", "5/4", "1", "a/2", "1/0", "/", "1/2/3"] {
            assert_eq!(bad.parse::<Shard>(), Err(ShardSyntax(bad.into())), "{bad}");
        }
        assert_eq!("4/4".parse(), Ok(Shard { index: 4, count: 4 }));
        assert_eq!(Shard { index: 3, count: 8 }.to_string(), "3/8");
    }
}
