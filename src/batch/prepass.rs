//! The cache pre-pass: which units are served from the cache, which must be called, which
//! cannot be sent at all. A cache entry that exists but cannot be read stops the run here,
//! before anything is paid for twice.

use crate::cache::{Cache, CacheEntry, CacheMode};
use crate::error::{CacheFailure, CacheMiss, RlmError};
use crate::unit::WorkUnit;

/// The units sorted by what happens to them (indexes into the plan).
#[derive(Debug, Default)]
pub struct Prepass {
    pub hits: Vec<(usize, CacheEntry)>,
    pub misses: Vec<usize>,
    pub blocked: Vec<(usize, String)>,
}

/// Sorts the units; `pending` are answers an earlier attempt of the run paid for but could
/// not cache (see [`super::pending`]): hits too. `answered` are the units earlier attempts
/// of a resumed run completed: their answers are read from the cache even under
/// `--no-cache`, which the run was started with and which kept it from reading answers of
/// other runs — not its own, which a resume never pays for again.
pub fn run(
    units: &[WorkUnit],
    cache: &Cache,
    pending: &std::collections::HashMap<String, CacheEntry>,
    mode: CacheMode,
    max_tokens: u32,
    answered: &std::collections::HashSet<String>,
) -> Result<Prepass, RlmError> {
    // One open and read a key, on a few threads: a fully cached rerun of thousands of
    // units reads thousands of entries here. Boxed: a miss is then a word, not an empty
    // entry's worth of bytes (100,000 of them were tens of megabytes).
    let lookups = crate::parallel::map(units, crate::parallel::io_threads(), |unit| {
        if unit.blocked.is_some() || !(mode.reads() || answered.contains(unit.id.as_str())) {
            return Ok(None);
        }
        cache.get(&unit.cache_key, max_tokens).map(|e| e.map(Box::new))
    });
    let mut pre = Prepass::default();
    for (i, (unit, lookup)) in units.iter().zip(lookups).enumerate() {
        if let Some(reason) = &unit.blocked {
            pre.blocked.push((i, reason.clone()));
            continue;
        }
        let entry = match lookup {
            Some(Ok(entry)) => entry,
            Some(Err(e)) => return Err(CacheFailure::Unreadable(e).into()),
            None => return Err(CacheFailure::ReaderLost.into()),
        };
        let entry = entry
            .map(|e| *e)
            .or_else(|| pending.get(unit.cache_key.as_str()).cloned());
        match entry {
            Some(entry) => pre.hits.push((i, entry)),
            None => pre.misses.push(i),
        }
    }
    tracing::debug!(
        hits = pre.hits.len(),
        misses = pre.misses.len(),
        blocked = pre.blocked.len(),
        resident_mib = ?crate::memory::resident_mib(),
        "cache pre-pass"
    );
    Ok(pre)
}

/// `--cache-only`'s refusal: the inputs of `units` at `misses` are not in the cache.
pub fn cache_only_misses(units: &[WorkUnit], misses: &[usize]) -> CacheFailure {
    CacheFailure::CacheOnlyMisses {
        misses: misses
            .iter()
            .map(|&i| CacheMiss {
                label: units[i].label.to_string(),
                key: units[i].cache_key.as_str()[..16].to_string(),
            })
            .collect(),
        inputs: units.len(),
    }
}
