//! Claims, before a submission (issue 24): a request goes into a batch only once this run
//! holds its cache key, so two runs at once — two `--batch-api` runs, a realtime one and a
//! batch one, any output directories — never pay for one answer twice.
//!
//! Each key is taken the way a realtime call takes it (the cache's `flock`, the cache read
//! again under it), then claimed in the store for the batch ([`crate::store::KeyClaim`]),
//! and the `flock` let go: the store's claim outlives this process, as the batch does.
//! A key another run holds is
//! - waited for while that run's rlm lives (a realtime call in flight, or its batch): its
//!   answer is read from the cache when it lands, and nothing is paid here;
//! - collected here when that run's rlm is gone and its batch is at this server: the batch
//!   is polled and its results kept as this run's own (their cost reported here, once);
//! - otherwise left not run, saying which run to resume.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::phase::{Phase, Work};
use super::wait::Waiting;
use super::BatchApiRun;
use crate::batch::execution::{Execution, Pause};
use crate::batch::job::{self, JobOutcome};
use crate::cache::{CacheEntry, CacheKey, ClaimGuard, Claimed};
use crate::exec::{Event, PoolHandler};
use crate::provider::batch_api::BatchCounts;
use crate::request;
use crate::store::{KeyClaim, KeyHolder, RunId};

/// Keys taken at once (each holds a descriptor while its store claim is written).
const CHUNK: usize = 256;
/// The longest wait between two looks at keys other runs hold.
const LONGEST_LOOK: Duration = Duration::from_secs(5);

impl BatchApiRun {
    /// Of `send`, the requests this run may submit now, each key claimed for it; the others
    /// are served from the cache, waited for (`p.awaiting`), collected from a dead run's
    /// batch, or left not run (see the module doc).
    pub(super) async fn claim(&mut self, exec: &mut Execution, p: &mut Phase<'_>, send: Vec<usize>) -> Vec<usize> {
        if !exec.jobs.read_cache || send.is_empty() {
            // `--no-cache`: this run wants its own answers.
            return send;
        }
        let mut mine = Vec::with_capacity(send.len());
        let mut orphaned: BTreeMap<String, (RunId, Vec<usize>)> = BTreeMap::new();
        for chunk in send.chunks(CHUNK) {
            let taken = self.take_flocks(exec, p, chunk).await;
            let mut held = Vec::with_capacity(taken.len());
            for (i, outcome) in taken {
                match outcome {
                    Taken::Cached(entry) => self.serve(exec, p, i, entry).await,
                    Taken::Busy => p.awaiting.push(i),
                    Taken::Flock(guard) => held.push((i, guard)),
                }
            }
            let keys: Vec<&str> = held.iter().map(|(i, _)| p.keys[*i].as_str()).collect();
            let claims = self.store.claim_keys(&self.run, self.api.server(), &keys);
            match claims {
                Ok(claims) => {
                    for ((i, _), claim) in held.iter().zip(claims) {
                        match claim {
                            KeyClaim::Mine => mine.push(*i),
                            KeyClaim::Held(holder) => self.held_elsewhere(exec, p, *i, holder, &mut orphaned),
                        }
                    }
                }
                Err(e) => {
                    // Without the store, as before claims existed: the flock covered the
                    // realtime runs; another batch run cannot be seen.
                    self.store_write(|_, _| Err(e));
                    mine.extend(held.iter().map(|(i, _)| *i));
                }
            }
            // The store's claims hold the keys now (the flocks are let go here).
            drop(held);
        }
        for (batch_id, (owner, indexes)) in orphaned {
            self.collect_for(exec, p, batch_id, owner, indexes);
        }
        mine
    }

    /// Takes the cache's flock of each key of `chunk` without waiting, reading the cache
    /// again under it.
    async fn take_flocks(&mut self, exec: &Execution, p: &Phase<'_>, chunk: &[usize]) -> Vec<(usize, Taken)> {
        let cache = exec.jobs.cache.clone();
        let max = exec.jobs.requests.max_tokens;
        let keys: Vec<(usize, CacheKey)> = chunk.iter().map(|&i| (i, CacheKey(p.keys[i].clone()))).collect();
        let taken = tokio::task::spawn_blocking(move || {
            keys.into_iter()
                .map(|(i, key)| {
                    let taken = match cache.try_claim_miss(&key, max) {
                        Ok(Some(Claimed::Mine(guard))) => Taken::Flock(Some(guard)),
                        Ok(Some(Claimed::Cached(entry))) => Taken::Cached(Box::new(entry)),
                        Ok(None) => Taken::Busy,
                        Err(e) => {
                            tracing::debug!("cannot claim a cache key ({e}): claimed in the store only");
                            Taken::Flock(None)
                        }
                    };
                    (i, taken)
                })
                .collect::<Vec<_>>()
        })
        .await;
        match taken {
            Ok(taken) => taken,
            Err(e) => {
                tracing::debug!("taking the cache's claims failed ({e}): claimed in the store only");
                chunk.iter().map(|&i| (i, Taken::Flock(None))).collect()
            }
        }
    }

    /// Request `i`'s key is held by another run's batch (see the module doc).
    fn held_elsewhere(
        &mut self,
        exec: &mut Execution,
        p: &mut Phase<'_>,
        i: usize,
        holder: KeyHolder,
        orphaned: &mut BTreeMap<String, (RunId, Vec<usize>)>,
    ) {
        match &holder.batch_id {
            _ if holder.alive => p.awaiting.push(i),
            Some(batch_id) if holder.server == self.api.server() => {
                orphaned
                    .entry(batch_id.clone())
                    .or_insert_with(|| (holder.run.clone(), Vec::new()))
                    .1
                    .push(i);
            }
            _ => self.cancelled(exec, p, i, &format!("not run: its answer is {}", holder.describe())),
        }
    }

    /// Waits for batch `batch_id` of run `owner`, whose rlm is gone, and collects it as this
    /// run's own for the requests `indexes` (its claims tell which of its custom ids they
    /// are): their answers are paid for there, never again here.
    fn collect_for(
        &mut self,
        exec: &mut Execution,
        p: &mut Phase<'_>,
        batch_id: String,
        owner: RunId,
        indexes: Vec<usize>,
    ) {
        let claims = match self.store.batch_claims(&batch_id) {
            Ok(claims) => claims,
            Err(e) => {
                for i in indexes {
                    self.cancelled(
                        exec,
                        p,
                        i,
                        &format!(
                            "not run: its answer is in batch {batch_id} of run {owner}, which cannot be read ({e})"
                        ),
                    );
                }
                return;
            }
        };
        let wanted: std::collections::HashMap<String, usize> =
            indexes.iter().map(|&i| (p.keys[i].clone(), i)).collect();
        let mut custom_ids = Vec::new();
        let mut whole = true;
        for (custom_id, key) in &claims {
            match wanted.get(key.as_str()) {
                Some(&i) if !p.done[i] && !p.in_flight[i] => {
                    p.in_flight[i] = true;
                    p.track(custom_id, i);
                    custom_ids.push(custom_id.clone());
                }
                _ => whole = false,
            }
        }
        exec.dispatcher.emit(Event::Warning {
            message: format!(
                "{} requests are in batch {batch_id} of run {owner}, whose rlm is gone: this run collects it, so they \
                 are not paid again",
                custom_ids.len()
            ),
        });
        let now = Instant::now();
        p.batches.push(Waiting {
            batch_id,
            custom_ids,
            polls: 0,
            next_poll: now,
            submitted: now,
            counts: BatchCounts::default(),
            cancel_requested: false,
            owner: Some((owner, whole)),
        });
    }

    /// Keys other runs hold, looked at again: those answered are served, those let go are
    /// this run's to submit (returned), those of a run now gone are collected here.
    pub(super) async fn look_again(&mut self, exec: &mut Execution, p: &mut Phase<'_>) -> Vec<usize> {
        let waiting = std::mem::take(&mut p.awaiting);
        self.claim(exec, p, waiting).await
    }

    /// Waits until some key other runs hold changes hands (see [`BatchApiRun::look_again`]),
    /// or until Ctrl-C or the deadline: then what still waits is not run. Returns the
    /// requests to submit; `None` when the wait was stopped.
    pub(super) async fn wait_for_others(&mut self, exec: &mut Execution, p: &mut Phase<'_>) -> Option<Vec<usize>> {
        let mut looks = 0;
        while !p.awaiting.is_empty() && p.batches.is_empty() {
            let delay = self.schedule.delay(looks).min(LONGEST_LOOK);
            looks += 1;
            if exec.pause(Instant::now() + delay).await != Pause::Elapsed {
                let reason = format!(
                    "not run: {} before another run's answer to the same request came (`rlm resume {}` reads it \
                     from the cache)",
                    exec.why_stopped(),
                    self.run
                );
                for i in std::mem::take(&mut p.awaiting) {
                    self.cancelled(exec, p, i, &reason);
                }
                return None;
            }
            let send = self.look_again(exec, p).await;
            if !send.is_empty() {
                return Some(send);
            }
        }
        Some(Vec::new())
    }

    /// Request `i`, answered by another run meanwhile: served from the cache, as a hit.
    async fn serve(&mut self, exec: &mut Execution, p: &mut Phase<'_>, i: usize, entry: Box<CacheEntry>) {
        if std::mem::replace(&mut p.done[i], true) {
            return;
        }
        let ctx = exec.jobs.clone();
        let mut outcome = JobOutcome::new(p.work[i].meta());
        outcome.cached = true;
        outcome.saved = entry.usage;
        outcome.truncated = entry.truncated;
        let outcome = match p.work[i] {
            Work::Unit(unit) => {
                let rendered = request::render(unit, &ctx.requests);
                job::keep(ctx, unit.clone(), rendered, entry.text, outcome).await
            }
            Work::Summary(_) => {
                outcome.text = Some(entry.text);
                outcome
            }
        };
        exec.dispatcher.finished(outcome);
    }
}

/// What taking one key's flock came to.
enum Taken {
    /// Held (or, where claims cannot be taken, `None`): claim it in the store next.
    Flock(Option<ClaimGuard>),
    /// Answered meanwhile.
    Cached(Box<CacheEntry>),
    /// Another rlm holds it: a realtime call in flight.
    Busy,
}
