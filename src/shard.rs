//! Splitting one plan over several machines with no coordinator: `--shard K/N` takes the
//! units whose stable id falls in shard K of N, and [`PlanId`] names the whole plan, so
//! `rlm merge` can tell the shards of one plan from runs of another.
//!
//! A unit's shard is a hash of its id (which derives from its inputs' paths and line
//! ranges), modulo N: the same on every machine and in every run, whatever order the units
//! were planned in, so N machines given the same inputs and `--shard 1/N` … `N/N` split
//! the plan exactly, each unit to one of them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::unit::{UnitId, WorkUnit};

/// The most shards a plan may be split into.
pub const MAX_SHARDS: u32 = 10_000;

/// `--shard K/N`: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the unit `id` belongs to this shard.
    pub fn takes(&self, id: &UnitId) -> bool {
        shard_of(id, self.count) == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N`, with N from 1 to [`MAX_SHARDS`] and K from 1 to N, each written in plain
    /// digits: no sign, no space, no leading zero (a CI matrix that wrote `01/02` or `+1/2`
    /// has a bug worth hearing about).
    fn from_str(s: &str) -> Result<Shard, String> {
        let usage = || {
            format!(
                "'{s}' is not a shard: write K/N in plain digits (no sign, space or leading zero), such as 1/4 for \
                 the first of four shards"
            )
        };
        let (k, n) = s.split_once('/').ok_or_else(usage)?;
        let k = plain_number(k).ok_or_else(usage)?;
        let n = plain_number(n).ok_or_else(usage)?;
        if n == 0 || n > MAX_SHARDS {
            return Err(format!("'{s}': the number of shards N must be from 1 to {MAX_SHARDS}"));
        }
        if k == 0 || k > n {
            return Err(format!("'{s}': the shard K must be from 1 to {n} (1/{n} … {n}/{n})"));
        }
        Ok(Shard { index: k, count: n })
    }
}

/// A number in plain decimal digits, without a leading zero (`0` itself is a number).
fn plain_number(text: &str) -> Option<u32> {
    let plain = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    plain.then(|| text.parse().ok()).flatten()
}

/// The shard (1-based) of `count` that the unit `id` belongs to.
pub fn shard_of(id: &UnitId, count: u32) -> u32 {
    let digest = Sha256::digest(id.as_str().as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(head) % u64::from(count.max(1))) as u32 + 1
}

/// The identity of a whole plan: `p-` and 16 hex digits of the hash of every unit's id and
/// cache key, in plan order. Two runs with the same id planned the same units, each sending
/// the same request: their answers belong to one result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlanId(String);

impl PlanId {
    pub fn of(units: &[WorkUnit]) -> PlanId {
        let mut hasher = Sha256::new();
        for unit in units {
            hasher.update(unit.id.as_str().as_bytes());
            hasher.update([b'\t']);
            hasher.update(unit.cache_key.as_str().as_bytes());
            hasher.update([b'\n']);
        }
        let hex: String = hasher.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect();
        PlanId(format!("p-{hex}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PlanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_with_their_ranges_checked() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse::<Shard>(), Ok(Shard { index: 1, count: 1 }));
        assert!("0/4".parse::<Shard>().unwrap_err().contains("from 1 to 4"));
        assert!("5/4".parse::<Shard>().unwrap_err().contains("from 1 to 4"));
        assert!("1/0".parse::<Shard>().unwrap_err().contains("N must be from 1"));
        assert!("1/10001".parse::<Shard>().unwrap_err().contains("N must be from 1"));
        for bad in [
            "",
            "2",
            "a/b",
            "1/2/3",
            "-1/2",
            "1.5/2",
            " 1/2",
            "1 /2",
            "1/ 2",
            "+1/2",
            "01/02",
            "1/02",
            "1/99999999999",
        ] {
            assert!(bad.parse::<Shard>().unwrap_err().contains("write K/N"), "{bad}");
        }
        assert_eq!(Shard { index: 3, count: 8 }.to_string(), "3/8");
    }

    #[test]
    fn every_unit_falls_in_exactly_one_shard_and_the_shards_are_balanced() {
        let ids: Vec<UnitId> = (0..4000).map(|i| UnitId::named(format!("u-{i:016x}"))).collect();
        let count = 4;
        let mut sizes = [0usize; 4];
        for id in &ids {
            let taken: Vec<u32> = (1..=count).filter(|&k| Shard { index: k, count }.takes(id)).collect();
            assert_eq!(taken.len(), 1, "{id}");
            assert_eq!(taken[0], shard_of(id, count), "stable");
            sizes[taken[0] as usize - 1] += 1;
        }
        assert!(sizes.iter().all(|&n| (850..1150).contains(&n)), "{sizes:?}");
        // One shard takes everything.
        assert!(ids.iter().all(|id| Shard { index: 1, count: 1 }.takes(id)));
    }
}
