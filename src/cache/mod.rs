//! The content-addressed result cache under `.aiwg/rlm/cache/`.
//!
//! Entries live in a versioned bucket (`results-v1/ab/<key>.json`) so a format change never
//! reads old data wrongly. A paid answer is written here first — fsynced, atomically (a
//! temporary file in `results-v1/.tmp/`, then a rename) — before anything else can fail, so
//! a rerun never pays for it again. A corrupt entry is a miss; an entry that exists but
//! cannot be read is an error, never a silent miss that would pay again.
//!
//! Runs that share the cache never pay twice for one key at the same time: a job claims a
//! key it missed before paying for it ([`Cache::claim_miss`], in `claim.rs`).

mod cache_key;
mod claim;

pub use cache_key::{ArtifactRef, CacheKey};
pub use claim::{ClaimGuard, Claimed};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fs_atomic::{sweep_temp_files, write_atomic_in, write_atomic_unsynced_in, Durability, Unsynced};
use crate::tokens::Usage;

/// The bucket name; bump it when [`CacheEntry`] changes incompatibly.
const BUCKET: &str = "results-v1";

/// How the result cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Read hits, write misses (the default).
    ReadWrite,
    /// `--no-cache`: never read, still write.
    WriteOnly,
    /// `--cache-only`: read; any miss is an error and nothing is called.
    ReadOnly,
}

impl CacheMode {
    pub fn reads(self) -> bool {
        self != CacheMode::WriteOnly
    }
}

/// A cached result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheEntry {
    pub key: String,
    pub model: String,
    pub inputs: Vec<ArtifactRef>,
    pub text: String,
    pub usage: Usage,
    pub truncated: bool,
    /// The output limit the answer was produced under: a truncated answer is only reused
    /// by runs that allow no more tokens than that.
    pub max_tokens: u32,
    pub created_unix: u64,
}

/// The cache rooted at `.aiwg/rlm/cache`.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    /// `cache/locks/`: the claims of keys being paid for (see [`Cache::claim_miss`]).
    locks: PathBuf,
    /// Directories this process has made (or found) already: each is made once, not once
    /// per answer.
    made: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

impl Cache {
    pub fn new(rlm_dir: &Path) -> Self {
        Cache {
            root: rlm_dir.join("cache").join(BUCKET),
            locks: rlm_dir.join("cache").join("locks"),
            made: std::sync::Arc::default(),
        }
    }

    /// Makes `dir` (and its parents) unless this process did already. A directory removed
    /// since by someone else is made again when writing into it fails.
    fn make_dir(&self, dir: &Path) -> std::io::Result<()> {
        if self.made_dirs().contains(dir) {
            return Ok(());
        }
        fs_err::create_dir_all(dir)?;
        self.made_dirs().insert(dir.to_path_buf());
        Ok(())
    }

    fn made_dirs(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<PathBuf>> {
        self.made.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `write` into the directories of `path` and `temp`, made first when this process has
    /// not made them yet; made again and tried once more when they were removed since.
    fn in_dirs<T>(&self, path: &Path, temp: &Path, write: impl Fn() -> std::io::Result<T>) -> std::io::Result<T> {
        let dirs = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                self.make_dir(dir)?;
            }
            self.make_dir(temp)
        };
        dirs()?;
        match write() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.made_dirs().clear();
                dirs()?;
                write()
            }
            other => other,
        }
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.root.join(&key.0[..2]).join(format!("{}.json", key.0))
    }

    fn temp_dir(&self) -> PathBuf {
        self.root.join(".tmp")
    }

    /// The entry for `key` if present and usable under `max_tokens`. A missing or corrupt
    /// entry is `Ok(None)`; one that exists but cannot be read is an error naming it.
    pub fn get(&self, key: &CacheKey, max_tokens: u32) -> std::io::Result<Option<CacheEntry>> {
        let path = self.path(key);
        let bytes = match fs_err::read(&path) {
            Ok(bytes) => bytes,
            // Not there (or a path component is not a directory: nothing can be there).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None)
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot read the cache entry: {e}"),
                ))
            }
        };
        let Ok(entry) = serde_json::from_slice::<CacheEntry>(&bytes) else {
            tracing::debug!(path = %path.display(), "corrupt cache entry: a miss");
            return Ok(None);
        };
        Ok((entry.key == key.0 && (!entry.truncated || max_tokens <= entry.max_tokens)).then_some(entry))
    }

    /// Stores an entry atomically and durably (it may be the only copy of a paid answer).
    pub fn put(&self, entry: &CacheEntry) -> std::io::Result<()> {
        let key = CacheKey(entry.key.clone());
        let path = self.path(&key);
        let temp = self.temp_dir();
        let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        self.in_dirs(&path, &temp, || {
            write_atomic_in(&path, &bytes, Durability::Synced, &temp)
        })
    }

    /// `<key>.answer` beside the entry: the answer's text as a file of its own, so that a
    /// run's result file can be a hard link to it rather than a new file (a fully cached
    /// rerun of thousands of files was mostly the file system allocating their inodes). It
    /// is no part of the entry: it is made from a result file ([`Cache::adopt_answer_file`]),
    /// never fsynced, and a result file linked to it is checked to hold exactly the answer
    /// (see [`crate::run_dir::RunDir::link_result`]).
    pub fn answer_file(&self, key: &CacheKey) -> PathBuf {
        self.root.join(&key.0[..2]).join(format!("{}.answer", key.0))
    }

    /// `<key>.<member>.answer`: as [`Cache::answer_file`], the part of a batch's answer
    /// about its `member`-th file, so that each file's result file of a cached batch is a
    /// link too (a fully cached rerun of 100,000 small files packed in batches otherwise
    /// makes 100,000 new files).
    pub fn member_answer_file(&self, key: &CacheKey, member: usize) -> PathBuf {
        self.root.join(&key.0[..2]).join(format!("{}.{member}.answer", key.0))
    }

    /// Makes `result` — a result file holding exactly the text of `key`'s answer — the
    /// answer file of `key`, by a hard link (a stale one is replaced atomically). Best
    /// effort: without it, the next rerun writes its result file instead of linking it.
    pub fn adopt_answer_file(&self, key: &CacheKey, result: &Path) {
        self.adopt_as(&self.answer_file(key), &key.0, result);
    }

    /// [`Cache::adopt_answer_file`] for the part of `key`'s answer about its `member`-th
    /// file ([`Cache::member_answer_file`]).
    pub fn adopt_member_answer_file(&self, key: &CacheKey, member: usize, result: &Path) {
        self.adopt_as(
            &self.member_answer_file(key, member),
            &format!("{}.{member}", key.0),
            result,
        );
    }

    /// Links `result` as `target` (named `name` in the temporary directory on its way).
    fn adopt_as(&self, target: &Path, name: &str, result: &Path) {
        let linked = match fs_err::hard_link(result, target) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if same_file(result, target) {
                    return;
                }
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let temp = self.temp_dir().join(format!(
                    "{}{}-{n}-{name}.answer",
                    crate::fs_atomic::TEMP_PREFIX,
                    std::process::id(),
                ));
                fs_err::hard_link(result, &temp).and_then(|()| {
                    fs_err::rename(&temp, target).inspect_err(|_| {
                        let _ = fs_err::remove_file(&temp);
                    })
                })
            }
            other => other,
        };
        if let Err(e) = linked {
            tracing::debug!("cannot keep the answer file: {e}");
        }
    }

    /// [`Cache::put`] in two steps: the entry is in place when this returns (other runs
    /// read it; it outlives this process) and durable once the returned
    /// [`Unsynced::sync`] has returned — only then does the answer count.
    pub fn put_unsynced(&self, entry: &CacheEntry) -> std::io::Result<Unsynced> {
        let key = CacheKey(entry.key.clone());
        let path = self.path(&key);
        let temp = self.temp_dir();
        let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        self.in_dirs(&path, &temp, || write_atomic_unsynced_in(&path, &bytes, &temp))
    }

    /// Makes sure entries can be written, before any call is paid for: writes a probe the
    /// size of a large entry ([`PROBE_BYTES`], synced, then removed) where entries are
    /// written. An empty file would do on a full disk too — it needs no block — and the run
    /// would then pay for answers it cannot cache. Also sweeps temporary files that a killed
    /// process left (older than an hour: another rlm may be writing).
    pub fn prepare(&self) -> std::io::Result<()> {
        let temp = self.temp_dir();
        fs_err::create_dir_all(&temp)?;
        sweep_temp_files(&temp, Duration::from_secs(3600));
        let failed = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("cannot write in the cache {}: {e}", temp.display()))
        };
        let mut probe = tempfile::Builder::new()
            .prefix(crate::fs_atomic::TEMP_PREFIX)
            .tempfile_in(&temp)
            .map_err(failed)?;
        probe
            .write_all(&probe_bytes())
            .and_then(|()| probe.as_file().sync_data())
            .map_err(failed)
        // The probe is removed as it is dropped.
    }
}

/// How much [`Cache::prepare`] writes: the entry of an answer of about 16,000 tokens.
pub const PROBE_BYTES: usize = 64 * 1024;

/// Bytes that no file system compresses to nothing (a compressing one would store zeros in
/// no space at all, and the probe would prove nothing).
fn probe_bytes() -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..PROBE_BYTES)
        .map(|_| {
            // xorshift64: cheap, and as incompressible as a probe needs.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

impl Cache {
    /// Whether an earlier [`Cache::prepare`] left nothing behind (for tests).
    #[cfg(test)]
    fn temp_files(&self) -> usize {
        fs_err::read_dir(self.temp_dir()).map_or(0, Iterator::count)
    }
}

/// Whether two paths name one file (hard links of each other).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs_err::metadata(a), fs_err::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_truncation_rule_and_unreadable_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        cache.prepare().unwrap();
        let artifact = ArtifactRef {
            artifact_id: "a".into(),
            content_hash: "1".into(),
        };
        let key = CacheKey::new(std::slice::from_ref(&artifact), "q", "p", "m", None, None);
        assert!(cache.get(&key, 100).unwrap().is_none());
        let entry = CacheEntry {
            key: key.0.clone(),
            model: "m".into(),
            inputs: vec![artifact],
            text: "result".into(),
            usage: Usage::default(),
            truncated: true,
            max_tokens: 100,
            created_unix: 0,
        };
        cache.put_unsynced(&entry).unwrap().sync().unwrap();
        assert_eq!(cache.get(&key, 100).unwrap().unwrap().text, "result");
        cache.put(&entry).unwrap();
        assert_eq!(cache.get(&key, 100).unwrap().unwrap().text, "result");
        assert!(
            cache.get(&key, 200).unwrap().is_none(),
            "a truncated answer must not satisfy a larger limit"
        );
        // Corrupt: a miss. Unreadable (a directory in its place): an error.
        fs_err::write(cache.path(&key), b"{not json").unwrap();
        assert!(cache.get(&key, 100).unwrap().is_none());
        fs_err::remove_file(cache.path(&key)).unwrap();
        fs_err::create_dir(cache.path(&key)).unwrap();
        assert!(cache.get(&key, 100).is_err());
    }

    #[test]
    fn prepare_writes_a_real_probe_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        cache.prepare().unwrap();
        assert_eq!(cache.temp_files(), 0, "the probe is removed");
        let bytes = probe_bytes();
        assert_eq!(bytes.len(), PROBE_BYTES);
        let distinct: std::collections::HashSet<u8> = bytes.iter().copied().collect();
        assert!(
            distinct.len() > 200,
            "not a run of one byte a file system could compress away"
        );
        // A cache whose temporary directory is a file cannot be written.
        let broken = Cache::new(&dir.path().join("broken"));
        fs_err::create_dir_all(broken.root.clone()).unwrap();
        fs_err::write(broken.temp_dir(), "not a directory").unwrap();
        assert!(broken.prepare().is_err());
    }

    #[test]
    fn an_answer_file_is_adopted_by_a_link_and_a_stale_one_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("rlm"));
        cache.prepare().unwrap();
        let key = CacheKey("ab".repeat(32));
        fs_err::create_dir_all(cache.answer_file(&key).parent().unwrap()).unwrap();
        let first = dir.path().join("first.result.md");
        fs_err::write(&first, "one").unwrap();
        cache.adopt_answer_file(&key, &first);
        assert!(same_file(&first, &cache.answer_file(&key)));
        cache.adopt_answer_file(&key, &first);
        // Another answer for the key (paid again): its result file replaces the old one.
        let second = dir.path().join("second.result.md");
        fs_err::write(&second, "two").unwrap();
        cache.adopt_answer_file(&key, &second);
        assert_eq!(fs_err::read_to_string(cache.answer_file(&key)).unwrap(), "two");
        assert!(!same_file(&first, &cache.answer_file(&key)));
        assert_eq!(
            fs_err::read_to_string(&first).unwrap(),
            "one",
            "the old result file is untouched"
        );
        let leftovers = fs_err::read_dir(cache.temp_dir()).unwrap().count();
        assert_eq!(leftovers, 0, "no temporary link is left behind");
    }
}
