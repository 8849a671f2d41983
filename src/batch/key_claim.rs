//! Claiming a cache key before paying for it — the one step every realtime call takes,
//! whoever asks for it (a unit, a summary, a job phase's batch of items): a second rlm on
//! the same answers waits for the first one's instead of paying again (issues 17 and 24).
//!
//! Two kinds of claim are asked, in order: the cache's `flock` (a realtime call in flight
//! in any rlm; the kernel lets go when its holder dies), then, under it, the store's claim
//! of a provider batch ([`crate::store::KeyClaim`], which outlives its process as the
//! batch does). A job that must wait gives up its place in the limiter's queue while it
//! waits, so the jobs behind it are not held up (and two jobs of one run with one key
//! cannot wait for each other), and queues anew. The wait ends at once when the run stops
//! dispatching (Ctrl-C, SIGTERM, a fatal stop).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cache::{Cache, CacheEntry, CacheKey, ClaimGuard, Claimed};
use crate::exec::{Limiter, Place};
use crate::store::{KeyHolder, RunId, StoreError, TaskStore};

/// How a run claims keys: its cache, the store's batch claims, and its own run id.
pub struct KeyClaims {
    cache: Cache,
    /// The store, asked whether another run's provider batch holds a key; `None` without
    /// a store (then only the cache's claims are taken).
    store: Option<Arc<Mutex<TaskStore>>>,
    /// This run's id: its own batches' claims are its own.
    run: String,
    /// False under `--no-cache`: the run wants its own answers, and claims nothing.
    enabled: bool,
    /// The run's `max_tokens` (a cached answer cut off at a lower limit is not served).
    max_tokens: u32,
}

/// What claiming a key came to.
#[derive(Debug)]
pub enum KeyClaim {
    /// Another job (of this rlm or another one sharing the cache) paid for it meanwhile.
    Served(CacheEntry),
    /// This job pays: it holds the claim (`None` when claims cannot be taken here) and its
    /// place in the limiter's queue.
    Held(Option<ClaimGuard>, Place),
    /// The run stopped dispatching while this job waited for another's claim: it is not
    /// run (it paid nothing, and waits for nothing).
    Halted,
    /// A provider batch of a run whose rlm is gone holds the key: its answer will be paid
    /// for there, so it is not paid again here (why, and which run to resume).
    Elsewhere(String),
}

impl KeyClaims {
    /// The claims of run `run` on `cache`, with the store at `store` (if it opens).
    pub fn new(cache: Cache, store: Option<TaskStore>, run: &str, enabled: bool, max_tokens: u32) -> Self {
        KeyClaims {
            cache,
            store: store.map(|s| Arc::new(Mutex::new(s))),
            run: run.to_string(),
            enabled,
            max_tokens,
        }
    }

    /// Claims `key` before paying for it (see the module doc).
    pub async fn claim(&self, key: &CacheKey, place: Place, limiter: &Arc<Limiter>) -> KeyClaim {
        if !self.enabled {
            return KeyClaim::Held(None, place);
        }
        let mut place = Some(place);
        let mut looks = 0u32;
        loop {
            let place_now = place.take().unwrap_or_else(|| limiter.place());
            let (claimed, asked, place_now) = match self.flock(key, place_now, limiter).await {
                Ok(taken) => taken,
                Err(claim) => return claim,
            };
            let guard = match claimed {
                Claimed::Cached(entry) => return KeyClaim::Served(entry),
                Claimed::Mine(guard) => guard,
            };
            // Under the flock, a provider batch of another run may still hold the key.
            let holder = match asked {
                Some(holder) => holder,
                None => self.batch_holder(key).await,
            };
            let holder = holder.filter(|h| h.run.as_str() != self.run);
            let Some(holder) = holder else {
                return KeyClaim::Held(Some(guard), place_now);
            };
            drop(guard);
            if !holder.alive {
                return KeyClaim::Elsewhere(format!("not paid again: its answer is {}", holder.describe()));
            }
            // Its batch is being collected: wait for the answer (the place is given up).
            drop(place_now);
            let wait = Duration::from_millis(250 * u64::from(1 + looks.min(7)));
            looks += 1;
            tokio::select! {
                biased;
                () = limiter.halted() => return KeyClaim::Halted,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Takes `key`'s flock (waiting, place given up, while another job holds it) and reads
    /// the cache again under it; `Err` with what the job comes to when it cannot. A flock
    /// taken at once comes with the store's answer to whether a provider batch holds the key
    /// (`Some`), asked in the same trip off the async workers: one thread hand-off a call,
    /// not two.
    #[allow(clippy::type_complexity)] // the claim, the store's answer if asked, the place
    async fn flock(
        &self,
        key: &CacheKey,
        place: Place,
        limiter: &Arc<Limiter>,
    ) -> Result<(Claimed, Option<Option<KeyHolder>>, Place), KeyClaim> {
        let (cache, max, store) = (self.cache.clone(), self.max_tokens, self.store.clone());
        let first = {
            let key = key.clone();
            tokio::task::spawn_blocking(move || {
                let claimed = cache.try_claim_miss(&key, max)?;
                let asked = match &claimed {
                    Some(Claimed::Mine(_)) => Some(holder_in(store.as_deref(), &key.0)),
                    _ => None,
                };
                Ok::<_, std::io::Error>(claimed.map(|c| (c, asked)))
            })
            .await
        };
        match first {
            Ok(Ok(Some((claimed, asked)))) => Ok((claimed, asked, place)),
            Ok(Ok(None)) => {
                drop(place);
                let halted = limiter.clone();
                match self
                    .cache
                    .claim_miss_unless(key, max, async move { halted.halted().await })
                    .await
                {
                    Ok(Some(claimed)) => Ok((claimed, None, limiter.place())),
                    Ok(None) => Err(KeyClaim::Halted),
                    Err(e) => Err(unclaimed(&e.to_string(), limiter.place())),
                }
            }
            Ok(Err(e)) => Err(unclaimed(&e.to_string(), place)),
            Err(e) => Err(unclaimed(&e.to_string(), place)),
        }
    }

    /// The run whose provider batch holds `key`, if one does (asked off the async workers).
    async fn batch_holder(&self, key: &CacheKey) -> Option<KeyHolder> {
        let store = self.store.clone()?;
        let key = key.0.clone();
        let asked = tokio::task::spawn_blocking(move || holder_in(Some(&store), &key)).await;
        asked.ok().flatten()
    }
}

/// The run whose provider batch holds `key` in `store`, if one does (blocking).
fn holder_in(store: Option<&Mutex<TaskStore>>, key: &str) -> Option<KeyHolder> {
    let store = store?.lock().ok()?;
    store.key_holder(key).ok().flatten()
}

/// Keys claimed for a submission in one store transaction (see [`claim_for_submission`]).
pub const CLAIM_CHUNK: usize = 256;

/// What a key is to a provider batch about to be submitted (see [`claim_for_submission`]).
#[derive(Debug)]
pub enum ForSubmission {
    /// This run's to submit: claimed in the store for its batch.
    Mine,
    /// A realtime call holds its flock (in this rlm or another): it is being paid for now.
    Running,
    /// Answered meanwhile: the cache has it.
    Cached(Box<CacheEntry>),
    /// Another run's provider batch holds it.
    Held(KeyHolder),
}

/// Claims `keys` for run `run`'s next submission at `server` — the one way a key goes into
/// a provider batch, on every path (`rlm batch --batch-api`, `rlm job --batch-api`). Each key
/// is claimed in the store first (the claim outlives this process, as the batch does); then
/// the cache's `flock` of a realtime call in flight is looked at (never taken); then the cache
/// is read again. A realtime call takes its flock first, looks at the store second, and
/// caches its answer before letting go: in whichever order two runs meet, one of them sees
/// the other, so no answer is paid twice. A store that cannot claim (`store_failed` hears
/// why) leaves every key `Mine`, as before claims existed: only the flocks are looked at.
///
/// The caller lets go (`TaskStore::release_claims`) of the keys it does not submit.
pub async fn claim_for_submission(
    store: &mut TaskStore,
    run: &RunId,
    server: &str,
    (cache, max_tokens): (&Cache, u32),
    keys: &[String],
    store_failed: &mut dyn FnMut(StoreError),
) -> Vec<ForSubmission> {
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let claims = store.claim_keys(run, server, &refs).unwrap_or_else(|e| {
        store_failed(e);
        vec![crate::store::KeyClaim::Mine; keys.len()]
    });
    let mine: Vec<(usize, CacheKey)> = claims
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, crate::store::KeyClaim::Mine))
        .map(|(i, _)| (i, CacheKey(keys[i].clone())))
        .collect();
    // Off the async workers: a flock look and a cache read per key.
    let cache = cache.clone();
    let looked: Vec<(usize, Option<ForSubmission>)> = tokio::task::spawn_blocking(move || {
        mine.into_iter()
            .map(|(i, key)| {
                let seen = if cache.is_claimed(&key) {
                    Some(ForSubmission::Running)
                } else {
                    cache
                        .get(&key, max_tokens)
                        .ok()
                        .flatten()
                        .map(|entry| ForSubmission::Cached(Box::new(entry)))
                };
                (i, seen)
            })
            .collect()
    })
    .await
    .unwrap_or_default();
    let mut verdicts: Vec<ForSubmission> = claims
        .into_iter()
        .map(|c| match c {
            crate::store::KeyClaim::Mine => ForSubmission::Mine,
            crate::store::KeyClaim::Held(holder) => ForSubmission::Held(holder),
        })
        .collect();
    for (i, seen) in looked {
        if let Some(seen) = seen {
            verdicts[i] = seen;
        }
    }
    verdicts
}

/// A claim that could not be taken does not stop the unit: it pays as it would have
/// before claims existed.
fn unclaimed(why: &str, place: Place) -> KeyClaim {
    tracing::debug!("cannot claim a cache key ({why}): calling without a claim");
    KeyClaim::Held(None, place)
}
