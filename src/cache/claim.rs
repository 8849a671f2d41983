//! Claims on cache keys: while one job — of this rlm or of another one sharing the cache —
//! pays for a key's answer, every other job that needs the same key waits for that answer
//! and reads it from the cache instead of paying again (issue 17: two runs at once paid
//! twice for 88 of 100 units).
//!
//! A claim is a lock the kernel releases when its holder ends (see [`crate::file_lock`]), so
//! a claim whose holder is killed never blocks anyone. On Linux it is one byte of
//! `cache/locks/keys.lock` (the byte named by the key's first 16 hex digits): no file is
//! made or removed per claim. Elsewhere it is an `flock` on `cache/locks/<key>.lock`,
//! which the holder removes when it lets go (while still holding it), so locks do not pile
//! up; a waiter that then finds itself holding a removed file takes the lock again on the
//! file now at that path.
//!
//! A run waits for another's claim by polling it ([`Cache::claim_miss_unless`]), not in a
//! blocking `flock`: a thread blocked there cannot be let go, so an interrupted run would
//! wait out the other run's call (or its whole grace period) although it paid nothing for
//! that key.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Cache, CacheEntry, CacheKey};
#[cfg(not(target_os = "linux"))]
use crate::file_lock::FileLock;
#[cfg(target_os = "linux")]
use crate::file_lock::RangeLock;

/// This job's claim on a key: it pays for the answer; others wait. Released when dropped —
/// hold it until the answer is in the cache.
#[derive(Debug)]
pub struct ClaimGuard {
    #[cfg(target_os = "linux")]
    _lock: RangeLock,
    #[cfg(not(target_os = "linux"))]
    lock: Option<FileLock>,
}

#[cfg(not(target_os = "linux"))]
impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            // Removed while still held: nobody can take a lock on it in between.
            let _ = fs_err::remove_file(lock.path());
            drop(lock);
        }
    }
}

/// The byte of `cache/locks/keys.lock` that claims `key`: its first 16 hex digits (keys
/// are sha256 hex, so two keys share a byte once in 2^63).
#[cfg(target_os = "linux")]
fn byte_of(key: &CacheKey) -> u64 {
    let first = |hex: &str| hex.get(..16).and_then(|d| u64::from_str_radix(d, 16).ok());
    let n = first(&key.0)
        .or_else(|| first(&crate::hash::sha256_hex(key.0.as_bytes())))
        .unwrap_or_default();
    // Within `off_t`.
    n >> 1
}

/// What claiming a key after a cache miss came to.
#[derive(Debug)]
pub enum Claimed {
    /// Another job paid for it meanwhile: here is its answer.
    Cached(CacheEntry),
    /// Still missing, and now this job's to pay for.
    Mine(ClaimGuard),
}

impl Cache {
    /// The file that holds the claims' locks.
    #[cfg(target_os = "linux")]
    fn keys_lock(&self) -> PathBuf {
        self.locks.join("keys.lock")
    }

    /// Where the lock of `key` lives.
    #[cfg(not(target_os = "linux"))]
    fn lock_path(&self, key: &CacheKey) -> PathBuf {
        self.locks.join(format!("{}.lock", key.0))
    }

    /// Claims `key` after a cache miss without waiting: `None` while another job holds it.
    /// With the claim, the cache is read again (the holder may have just finished).
    pub fn try_claim_miss(&self, key: &CacheKey, max_tokens: u32) -> io::Result<Option<Claimed>> {
        self.make_dir(&self.locks)?;
        #[cfg(target_os = "linux")]
        {
            let Some(lock) = RangeLock::try_exclusive(&self.keys_lock(), byte_of(key))? else {
                return Ok(None);
            };
            self.recheck(key, max_tokens, ClaimGuard { _lock: lock }).map(Some)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let path = self.lock_path(key);
            loop {
                let Some(lock) = FileLock::try_exclusive(&path)? else {
                    return Ok(None);
                };
                if lock.is_current()? {
                    return self.recheck(key, max_tokens, ClaimGuard { lock: Some(lock) }).map(Some);
                }
            }
        }
    }

    /// Claims `key` after a cache miss, waiting while another job holds it; then reads the
    /// cache again: the answer the holder paid for is served, or the key is this job's.
    /// Blocks the thread: call it off the async workers.
    pub fn claim_miss(&self, key: &CacheKey, max_tokens: u32) -> io::Result<Claimed> {
        self.make_dir(&self.locks)?;
        #[cfg(target_os = "linux")]
        {
            let lock = RangeLock::exclusive(&self.keys_lock(), byte_of(key))?;
            self.recheck(key, max_tokens, ClaimGuard { _lock: lock })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let path = self.lock_path(key);
            loop {
                let lock = FileLock::exclusive(&path)?;
                if lock.is_current()? {
                    return self.recheck(key, max_tokens, ClaimGuard { lock: Some(lock) });
                }
            }
        }
    }

    /// [`Cache::claim_miss`] that gives up as soon as `stop` completes (the run stopped
    /// dispatching: nothing was paid for this key by this run, so there is nothing to wait
    /// for): `Ok(None)`. The lock is tried off the async workers, every 20 ms at first and
    /// at most every 250 ms while another job holds it.
    pub async fn claim_miss_unless(
        &self,
        key: &CacheKey,
        max_tokens: u32,
        stop: impl std::future::Future<Output = ()>,
    ) -> io::Result<Option<Claimed>> {
        const FIRST_POLL: Duration = Duration::from_millis(20);
        const LONGEST_POLL: Duration = Duration::from_millis(250);
        tokio::pin!(stop);
        let mut poll = FIRST_POLL;
        loop {
            let (cache, key) = (self.clone(), key.clone());
            let tried = tokio::task::spawn_blocking(move || cache.try_claim_miss(&key, max_tokens))
                .await
                .map_err(io::Error::other)??;
            if let Some(claimed) = tried {
                return Ok(Some(claimed));
            }
            tokio::select! {
                biased;
                () = &mut stop => return Ok(None),
                () = tokio::time::sleep(poll) => {}
            }
            poll = (poll * 2).min(LONGEST_POLL);
        }
    }

    fn recheck(&self, key: &CacheKey, max_tokens: u32, guard: ClaimGuard) -> io::Result<Claimed> {
        Ok(match self.get(key, max_tokens)? {
            Some(entry) => Claimed::Cached(entry),
            None => Claimed::Mine(guard),
        })
    }

    /// Whether a job holds the claim on `key` now (looked at, never taken: nothing is
    /// created).
    pub fn is_claimed(&self, key: &CacheKey) -> bool {
        #[cfg(target_os = "linux")]
        let held = RangeLock::is_held(&self.keys_lock(), byte_of(key));
        #[cfg(not(target_os = "linux"))]
        let held = FileLock::is_held(&self.lock_path(key));
        held == Some(true)
    }

    /// The directory of the claims' lock files.
    pub fn locks_dir(&self) -> &Path {
        &self.locks
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::cache::ArtifactRef;
    use crate::tokens::Usage;

    fn key() -> CacheKey {
        let artifact = ArtifactRef {
            artifact_id: "a.ts".into(),
            content_hash: "1".into(),
        };
        CacheKey::new(&[artifact], "q", "p", "m", None, None)
    }

    fn entry(key: &CacheKey) -> CacheEntry {
        CacheEntry {
            key: key.0.clone(),
            model: "m".into(),
            inputs: Vec::new(),
            text: "paid once".into(),
            usage: Usage::default(),
            truncated: false,
            max_tokens: 100,
            created_unix: 0,
        }
    }

    #[test]
    fn a_second_claimant_waits_for_the_first_answer_and_is_served_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        cache.prepare().unwrap();
        let key = key();
        let Claimed::Mine(guard) = cache.claim_miss(&key, 100).unwrap() else {
            panic!("the first claimant pays")
        };
        assert!(cache.try_claim_miss(&key, 100).unwrap().is_none(), "claimed");
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let (cache, key) = (cache.clone(), key.clone());
            std::thread::spawn(move || {
                let claimed = cache.claim_miss(&key, 100).unwrap();
                tx.send(()).unwrap();
                claimed
            })
        };
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "it waits");
        cache.put(&entry(&key)).unwrap();
        drop(guard);
        match waiter.join().unwrap() {
            Claimed::Cached(e) => assert_eq!(e.text, "paid once"),
            Claimed::Mine(_) => panic!("the second claimant would pay again"),
        }
        let left: Vec<_> = fs_err::read_dir(cache.locks_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "keys.lock")
            .collect();
        assert!(left.is_empty(), "no lock file is left behind: {left:?}");
    }

    #[tokio::test]
    async fn waiting_for_a_claim_ends_when_told_to_stop_and_is_served_once_the_holder_answers() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        cache.prepare().unwrap();
        let key = key();
        let Claimed::Mine(guard) = cache.claim_miss(&key, 100).unwrap() else {
            panic!("the first claimant pays")
        };
        let stopped = cache
            .claim_miss_unless(&key, 100, tokio::time::sleep(Duration::from_millis(60)))
            .await
            .unwrap();
        assert!(stopped.is_none(), "gave up when told, while the claim was held");
        let waiter = tokio::spawn({
            let (cache, key) = (cache.clone(), key.clone());
            async move { cache.claim_miss_unless(&key, 100, std::future::pending()).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "it waits");
        cache.put(&entry(&key)).unwrap();
        drop(guard);
        match waiter.await.unwrap().unwrap() {
            Some(Claimed::Cached(e)) => assert_eq!(e.text, "paid once"),
            other => panic!("not served the holder's answer: {other:?}"),
        }
    }

    #[test]
    fn a_claim_let_go_without_an_answer_passes_to_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = key();
        let first = cache.claim_miss(&key, 100).unwrap();
        let waiter = {
            let (cache, key) = (cache.clone(), key.clone());
            std::thread::spawn(move || cache.claim_miss(&key, 100).unwrap())
        };
        // The first holder's call failed: nothing cached, the next one pays.
        drop(first);
        assert!(matches!(waiter.join().unwrap(), Claimed::Mine(_)));
    }
}
