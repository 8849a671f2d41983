//! Answers paid for but not cached: kept in the run directory until the cache takes them.
//!
//! Every answer first goes into the run's journal (`answers.journal`: one JSON cache entry
//! per line, appended by one write while the call still holds its slot): a written line
//! survives a `kill -9`, and appending to an open file costs microseconds where creating
//! the cache's file costs a file system's inode allocation, so the slot is handed back
//! sooner. The cache entry is written (and fsynced) after. A journal whose every line was
//! cached is removed when the run ends; `rlm resume` serves what a killed attempt left in
//! it, like the answers below.
//!
//! When the cache cannot take an answer (a full disk, a broken cache directory), the answer
//! is written to `pending-cache/<key>.json` in the run directory — the cache entry as it
//! would have been stored — beside its result file, dispatching stops, and the unit is
//! marked uncached in the task store. A run reads such answers before it pays for anything
//! ([`gather`]: a resumed run's, those of its `-o` directory, and those the store marks in
//! any run directory) and serves them as hits; then [`ready`] moves them into the cache, or
//! refuses the run while the cache cannot take them. An answer is never paid for twice
//! because the cache failed once.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::cache::{Cache, CacheEntry, CacheMode};
use crate::error::{CacheFailure, RlmError};
use crate::fs_atomic::{write_atomic, Durability};
use crate::run_dir::RunLock;
use crate::settings::BatchSettings;

/// The directory in a run directory that holds answers the cache did not take.
pub const PENDING_DIR: &str = crate::run_dir::PENDING_CACHE_DIR;

/// The run's journal of answers (see the module doc).
pub const JOURNAL: &str = "answers.journal";

/// The open journal of a run.
#[derive(Debug)]
pub struct Journal {
    file: Mutex<fs_err::File>,
    path: PathBuf,
    /// Lines appended, and lines whose cache entry was then written and fsynced.
    appended: AtomicU64,
    cached: AtomicU64,
    /// It held lines of an earlier attempt that could not be cached: never removed here.
    earlier: bool,
}

impl Journal {
    /// Opens (or creates) the journal of run directory `dir` for appending.
    pub fn open(dir: &Path) -> std::io::Result<Journal> {
        let path = dir.join(JOURNAL);
        let file = fs_err::OpenOptions::new().create(true).append(true).open(&path)?;
        let earlier = file.metadata().map(|m| m.len() > 0).unwrap_or(true);
        Ok(Journal {
            file: Mutex::new(file),
            path,
            appended: AtomicU64::new(0),
            cached: AtomicU64::new(0),
            earlier,
        })
    }

    /// Appends `entry` as one line, with one write (a torn last line is skipped on load).
    pub fn append(&self, entry: &CacheEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("the journal's lock is poisoned"))?;
        file.write_all(&line)?;
        self.appended.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// An appended answer is now in the cache, fsynced.
    pub fn cached(&self) {
        self.cached.fetch_add(1, Ordering::Relaxed);
    }

    /// At the end of the run: the journal goes when every line it holds is cached (an
    /// earlier attempt's lines were cached by `settle` before this attempt started).
    pub fn retire(&self) {
        if !self.earlier && self.appended.load(Ordering::Relaxed) == self.cached.load(Ordering::Relaxed) {
            let _ = fs_err::remove_file(&self.path);
        }
    }
}

/// The answers of the journal of run directory `dir` (a torn or unreadable line skipped).
fn journal_entries(dir: &Path) -> Vec<CacheEntry> {
    let Ok(bytes) = fs_err::read(dir.join(JOURNAL)) else {
        return Vec::new();
    };
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<CacheEntry>(line).ok())
        .collect()
}

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
    let mut kept: HashMap<String, CacheEntry> = journal_entries(dir)
        .into_iter()
        .map(|entry| (entry.key.clone(), entry))
        .collect();
    let Ok(entries) = fs_err::read_dir(dir.join(PENDING_DIR)) else {
        return kept;
    };
    kept.extend(entries.flatten().filter_map(|e| {
        let bytes = fs_err::read(e.path()).ok()?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        Some((entry.key.clone(), entry))
    }));
    kept
}

/// What [`settle`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Answers moved into the cache.
    pub moved: usize,
    /// Answers the cache held already (a journal's lines, mostly): nothing to move.
    pub already: usize,
    /// Answers the cache did not take (still kept, still served as hits).
    pub left: usize,
    /// Of those, the ones only the journal holds (not in `pending-cache/`).
    pub left_in_journal: usize,
    /// The first error of those.
    pub error: Option<String>,
}

/// Moves the kept answers of run directory `dir` into the cache; those it holds already
/// are not written again (on a full disk, rewriting them would fail too, and they would be
/// counted as answers the cache cannot take).
pub fn settle(dir: &Path, cache: &Cache) -> Settled {
    let mut settled = Settled::default();
    let pending = dir.join(PENDING_DIR);
    for (key, entry) in load(dir) {
        let kept = pending.join(format!("{key}.json"));
        let cache_key = crate::cache::CacheKey(key.clone());
        let written = match cache.get(&cache_key, entry.max_tokens) {
            Ok(Some(_)) => {
                settled.already += 1;
                Ok(())
            }
            _ => cache.put(&entry).map(|()| settled.moved += 1),
        };
        match written {
            Ok(()) => {
                let _ = fs_err::remove_file(&kept);
            }
            Err(e) => {
                settled.left += 1;
                if !kept.exists() {
                    settled.left_in_journal += 1;
                }
                settled.error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    if settled.error.is_none() {
        // Every line of the journal is cached now.
        let _ = fs_err::remove_file(dir.join(JOURNAL));
    }
    settled
}

/// Whether run directory `dir` holds answers that are not (known to be) in the cache.
fn holds_answers(dir: &Path) -> bool {
    dir.join(JOURNAL).exists()
        || fs_err::read_dir(dir.join(PENDING_DIR)).is_ok_and(|mut entries| entries.next().is_some())
}

/// The output directories the task store marks as holding answers the cache did not take
/// (`rlm status` says "uncached"), without creating a store where there is none.
fn marked_dirs(rlm_dir: &Path) -> Vec<PathBuf> {
    if !rlm_dir.join(crate::store::STORE_FILE).exists() {
        return Vec::new();
    }
    match crate::store::TaskStore::open(rlm_dir).and_then(|store| store.dirs_with_uncached_answers()) {
        Ok(dirs) => dirs,
        Err(e) => {
            tracing::debug!("cannot ask the task store for uncached answers: {e}");
            Vec::new()
        }
    }
}

/// The answers a run takes from run directories instead of paying for them again: a
/// resumed run's own, or those an earlier run in the same `-o` directory left (killed, or
/// refused by the cache); and, unless the cache is not read (`--no-cache`), those the store
/// marks as kept in any run directory because the cache could not take them — a plain
/// rerun in a new directory pays nothing for them either.
pub fn gather(settings: &BatchSettings) -> HashMap<String, CacheEntry> {
    let reads = settings.exec.cache_mode.reads();
    let mut dirs = match (&settings.resume, &settings.output.output_dir) {
        (Some(target), _) => vec![target.output_dir.clone()],
        (None, Some(dir)) if reads => vec![settings.cwd.join(dir)],
        (None, _) => Vec::new(),
    };
    if reads {
        dirs.extend(marked_dirs(&settings.rlm_dir()));
    }
    let mut kept = HashMap::new();
    for dir in dirs {
        kept.extend(load(&dir));
    }
    kept
}

/// Makes the cache ready before anything is paid for, for a run working in `dir`: the
/// answers kept there (and in the run directories the store marks) are moved into the
/// cache, and a realistic write is tried ([`Cache::prepare`]). A cache that cannot take
/// them refuses the run (exit 2): paying into a full disk would only keep more answers out
/// of it. `--cache-only` writes nothing and is not checked.
pub fn ready(settings: &BatchSettings, cache: &Cache, dir: &Path) -> Result<(), RlmError> {
    if settings.exec.cache_mode == CacheMode::ReadOnly {
        return Ok(());
    }
    let rlm_dir = settings.rlm_dir();
    let own = std::iter::once(dir.to_path_buf());
    let marked = if settings.exec.cache_mode.reads() {
        marked_dirs(&rlm_dir)
    } else {
        Vec::new()
    };
    let mut cached_dirs = Vec::new();
    for kept_in in own.chain(marked.into_iter().filter(|d| d.as_path() != dir)) {
        if !holds_answers(&kept_in) {
            cached_dirs.push(kept_in);
            continue;
        }
        // Another run's directory is left alone while an rlm works in it.
        let _lock = if kept_in.as_path() == dir {
            None
        } else {
            match RunLock::try_for_resume(&kept_in) {
                Ok(Ok(lock)) => Some(lock),
                _ => continue,
            }
        };
        let settled = settle(&kept_in, cache);
        tracing::debug!(dir = %kept_in.display(), ?settled, "kept answers settled");
        if let Some(e) = &settled.error {
            return Err(CacheFailure::KeptUntaken {
                kept: what_is_kept(&settled, &kept_in),
                reason: e.clone(),
                cache: rlm_dir.join("cache"),
            }
            .into());
        }
        cached_dirs.push(kept_in);
    }
    cache.prepare().map_err(CacheFailure::UnwritableBeforePaying)?;
    // The store's marks follow the answers into the cache.
    if rlm_dir.join(crate::store::STORE_FILE).exists() {
        let cleared = crate::store::TaskStore::open(&rlm_dir)
            .and_then(|mut store| cached_dirs.iter().try_for_each(|d| store.clear_uncached(d)));
        if let Err(e) = cleared {
            tracing::debug!("cannot clear the store's marks of uncached answers: {e}");
        }
    }
    Ok(())
}

/// `3 answers kept in out/pending-cache`: the answers the cache did not take, named where
/// they are (`pending-cache/`, or the journal of a killed attempt).
fn what_is_kept(settled: &Settled, dir: &Path) -> String {
    let answers = |n: usize| format!("{n} {}", if n == 1 { "answer" } else { "answers" });
    let pending = dir.join(PENDING_DIR);
    let journal = dir.join(JOURNAL);
    match (settled.left - settled.left_in_journal, settled.left_in_journal) {
        (n, 0) => format!("{} kept in {}", answers(n), pending.display()),
        (0, n) => format!("{} kept in {}", answers(n), journal.display()),
        (n, m) => format!(
            "{} kept in {} and {m} in {}",
            answers(n),
            pending.display(),
            journal.display()
        ),
    }
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
        assert_eq!(
            settle(&run, &cache),
            Settled {
                moved: 1,
                ..Settled::default()
            }
        );
        assert!(load(&run).is_empty(), "moved, not copied");
        let got = cache.get(&crate::cache::CacheKey(key.clone()), 10).unwrap().unwrap();
        assert_eq!(got.text, format!("answer {key}"));
    }

    #[test]
    fn journaled_answers_are_served_a_torn_line_skipped_and_settled_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        fs_err::create_dir_all(&run).unwrap();
        let (a, b) = ("cd".repeat(32), "ef".repeat(32));
        let journal = Journal::open(&run).unwrap();
        journal.append(&entry(&a)).unwrap();
        journal.append(&entry(&b)).unwrap();
        drop(journal);
        // A kill -9 in the middle of a write leaves a torn last line.
        let mut file = fs_err::OpenOptions::new().append(true).open(run.join(JOURNAL)).unwrap();
        file.write_all(b"{\"key\":\"torn").unwrap();
        let loaded = load(&run);
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[&b].text, format!("answer {b}"));
        // An attempt that finds earlier lines never removes them itself.
        let again = Journal::open(&run).unwrap();
        again.retire();
        assert!(run.join(JOURNAL).exists());
        let cache = Cache::new(&dir.path().join("rlm"));
        assert_eq!(settle(&run, &cache).moved, 2);
        assert!(!run.join(JOURNAL).exists(), "every line is cached: the journal goes");
        assert!(cache.get(&crate::cache::CacheKey(a.clone()), 10).unwrap().is_some());
    }

    #[test]
    fn a_journal_is_retired_only_when_every_line_was_cached() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        journal.append(&entry(&"01".repeat(32))).unwrap();
        journal.retire();
        assert!(dir.path().join(JOURNAL).exists(), "one line is not cached yet");
        journal.cached();
        journal.retire();
        assert!(!dir.path().join(JOURNAL).exists());
    }
}
