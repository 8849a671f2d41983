//! Answers paid for but not cached: kept in the run directory until the cache takes them.
//!
//! When the cache cannot take an answer (a full disk, a broken cache directory), the answer
//! is written to `pending-cache/<key>.json` in the run directory — the cache entry as it
//! would have been stored — beside its result file, and dispatching stops. `rlm resume`
//! reads these first: each is moved into the cache once there is room, and served as a hit
//! either way, so an answer is never paid for twice because the cache failed once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::cache::{Cache, CacheEntry};
use crate::fs_atomic::{write_atomic, Durability};

/// The directory in a run directory that holds answers the cache did not take.
pub const PENDING_DIR: &str = "pending-cache";

/// Keeps `entry` in the run directory `dir` (durably: it may be the only copy of a paid
/// answer); returns where.
pub fn keep(dir: &Path, entry: &CacheEntry) -> std::io::Result<PathBuf> {
    let pending = dir.join(PENDING_DIR);
    fs_err::create_dir_all(&pending)?;
    let path = pending.join(format!("{}.json", entry.key));
    let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    write_atomic(&path, &bytes, Durability::Synced)?;
    Ok(path)
}

/// The answers kept in the run directory `dir`, by cache key (none when there are none, or
/// the directory cannot be read: a missing answer is paid for again, never invented).
pub fn load(dir: &Path) -> HashMap<String, CacheEntry> {
    let Ok(entries) = std::fs::read_dir(dir.join(PENDING_DIR)) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
            Some((entry.key.clone(), entry))
        })
        .collect()
}

/// Moves the kept answers of run directory `dir` into the cache; returns how many moved and
/// the first error of those that could not (they stay kept, and still serve as hits).
pub fn settle(dir: &Path, cache: &Cache) -> (usize, Option<String>) {
    let mut moved = 0;
    let mut error = None;
    for (key, entry) in load(dir) {
        match cache.put(&entry) {
            Ok(()) => {
                moved += 1;
                let _ = std::fs::remove_file(dir.join(PENDING_DIR).join(format!("{key}.json")));
            }
            Err(e) => {
                error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    (moved, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str) -> CacheEntry {
        CacheEntry {
            key: key.into(),
            model: "m".into(),
            inputs: Vec::new(),
            text: format!("answer {key}"),
            usage: Default::default(),
            truncated: false,
            max_tokens: 10,
            created_unix: 1,
        }
    }

    #[test]
    fn kept_answers_are_loaded_and_settled_into_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        fs_err::create_dir_all(&run).unwrap();
        let key = "ab".repeat(32);
        keep(&run, &entry(&key)).unwrap();
        let loaded = load(&run);
        assert_eq!(loaded[&key].text, format!("answer {key}"));
        let cache = Cache::new(&dir.path().join("rlm"));
        assert_eq!(settle(&run, &cache), (1, None));
        assert!(load(&run).is_empty(), "moved, not copied");
        let got = cache.get(&crate::cache::CacheKey(key.clone()), 10).unwrap().unwrap();
        assert_eq!(got.text, format!("answer {key}"));
    }
}
