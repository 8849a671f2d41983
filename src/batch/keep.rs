//! Keeping an answer: a paid one cached first (its sync shared with a group of others),
//! then read into its files' answers and written to their result files; a cached one read
//! and written. Every path that has an answer — a realtime call, a batch-API result, a
//! cache hit, another run's claim — keeps it here.

use std::sync::Arc;

use super::answers::{self, UnitAnswers};
use super::job::{JobContext, JobFailure, JobOutcome};
use crate::cache::{ArtifactRef, CacheEntry, CacheKey, ClaimGuard};
use crate::exec;
use crate::request::Rendered;
use crate::unit::WorkUnit;

/// Keeps an answer just paid for — a realtime call's or a batch-API result's: cached first
/// (fsynced; a claim on its key is let go once it is), then read into its files' answers
/// and written to their result files.
pub(super) async fn keep_paid(
    ctx: Arc<JobContext>,
    unit: WorkUnit,
    rendered: Rendered,
    text: String,
    mut outcome: JobOutcome,
    claim: Option<ClaimGuard>,
) -> JobOutcome {
    let entry = cache_entry(&ctx, rendered.key.clone(), &unit, &text, &outcome);
    // Journaled (one append, which survives a kill -9): the slot is handed back now, and
    // the cache entry is written while the next call runs. On this worker, not the
    // blocking pool: one small append to an open file takes microseconds, while a hand-off
    // to a blocking thread and back would sit between this answer and the next call.
    let mut journaled = false;
    if let (Some(journal), true) = (&ctx.journal, outcome.slot.is_some()) {
        if journal.append(&entry).is_ok() {
            journaled = true;
            hand_back(&ctx, &unit, &mut outcome);
        }
    }
    // What the dispatcher must still hear if the blocking task below is lost (a panic).
    let (meta, usage, batch_usage, attempts) = (
        outcome.meta.clone(),
        outcome.usage,
        outcome.batch_usage,
        outcome.attempts,
    );
    // The rest is disk work, done in one trip to the blocking pool (each trip is a thread
    // hand-off both ways, which thousands of calls feel on a small machine): the cache
    // entry put in place, the slot handed back if the journal did not already, the fsync,
    // then the answer read and its result file written.
    let done = tokio::task::spawn_blocking(move || {
        let in_place = ctx.cache.put_unsynced(&entry);
        // In the cache (or not): whoever waits for this key reads it now.
        drop(claim);
        let (persisted, (read, written)) = match in_place {
            Ok(unsynced) => {
                // In place: the dispatcher counts its cost and frees the slot while this
                // job waits for the disk (the answer counts once that is done), with the
                // answers of other calls: one sync for a group of them.
                hand_back(&ctx, &unit, &mut outcome);
                let durable = ctx.syncer.submit(unsynced);
                let kept = read_and_write(&ctx, &unit, &rendered, &text, true);
                let synced = durable.wait().map_err(|e| {
                    ctx.call.limiter.halt();
                    uncached(&ctx, &entry, &unit.label, Some(&unit.result_name), &e)
                });
                if let (Ok(()), Some(journal), true) = (&synced, &ctx.journal, journaled) {
                    journal.cached();
                }
                (synced, kept)
            }
            Err(e) => {
                // No call starts after a failed cache write (see `persist`): the slots are
                // halted at once, not when the dispatcher hears of it behind the answers
                // that came meanwhile, each of which handed its slot back.
                ctx.call.limiter.halt();
                (
                    Err(uncached(&ctx, &entry, &unit.label, Some(&unit.result_name), &e)),
                    read_and_write(&ctx, &unit, &rendered, &text, true),
                )
            }
        };
        if let Err(e) = persisted {
            outcome.write_error = Some(e);
        }
        (outcome, read, written, unit.result_name)
    })
    .await;
    match done {
        Ok((outcome, read, written, result_name)) => kept(outcome, read, written, result_name),
        Err(e) => {
            // The task panicked, its outcome with it: the unit fails, with what it cost.
            let e = format!("internal error while keeping the answer: {e}");
            let mut outcome = JobOutcome::new(meta);
            (outcome.usage, outcome.batch_usage, outcome.attempts) = (usage, batch_usage, attempts);
            outcome.write_error = Some(e.clone());
            outcome.failure = Some(JobFailure::Unit { kind: None, reason: e });
            outcome
        }
    }
}

/// Writes a paid answer's cache entry off the async workers; the error to stop the run
/// with when the cache did not take it (the answer is then kept in the run directory).
pub(super) async fn persist(
    ctx: &Arc<JobContext>,
    entry: CacheEntry,
    label: &str,
    result_name: Option<String>,
    claim: Option<ClaimGuard>,
) -> Option<String> {
    let persisted = {
        let ctx = ctx.clone();
        let label = label.to_string();
        tokio::task::spawn_blocking(move || {
            let put = ctx.cache.put(&entry);
            if put.is_err() {
                // No call starts after a failed cache write: the slots are halted here, at
                // once, not when the dispatcher hears of it behind the calls that ended
                // meanwhile (each of which could have let another start).
                ctx.call.limiter.halt();
            }
            // Cached (or not): whoever waits for this key reads the cache now.
            drop(claim);
            put.map_err(|e| uncached(&ctx, &entry, &label, result_name.as_deref(), &e))
        })
        .await
    };
    match persisted {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(format!("internal error while caching the answer: {e}")),
    }
}

/// Tells the dispatcher the unit's calls are paid for and hands its slot back, when it
/// still holds one.
fn hand_back(ctx: &JobContext, unit: &WorkUnit, outcome: &mut JobOutcome) {
    if let Some(slot) = outcome.slot.take() {
        let paid = exec::Paid {
            unit: unit.id.clone(),
            usage: outcome.usage,
            slot,
        };
        if let Err(unsent) = ctx.paid.send(paid) {
            outcome.slot = Some(unsent.0.slot);
        }
    }
}

/// Reads an answer into its files' answers and writes their result files.
pub(super) async fn keep(
    ctx: Arc<JobContext>,
    unit: WorkUnit,
    rendered: Rendered,
    text: String,
    mut outcome: JobOutcome,
) -> JobOutcome {
    let written = tokio::task::spawn_blocking(move || {
        let (read, written) = read_and_write(&ctx, &unit, &rendered, &text, false);
        (read, written, unit.result_name)
    })
    .await;
    match written {
        Ok((read, written, result_name)) => kept(outcome, read, written, result_name),
        Err(e) => {
            let e = format!("internal error while writing the answer: {e}");
            outcome.write_error = Some(e.clone());
            outcome.failure = Some(JobFailure::Unit { kind: None, reason: e });
            outcome
        }
    }
}

/// Reads an answer into its files' answers and writes their result files (blocking).
fn read_and_write(
    ctx: &JobContext,
    unit: &WorkUnit,
    rendered: &Rendered,
    text: &str,
    fresh: bool,
) -> (UnitAnswers, std::io::Result<()>) {
    let read = answers::read(unit, text, rendered.expect, ctx.requests.schema.as_ref());
    let cached = answers::Cached {
        cache: &ctx.cache,
        key: &rendered.key,
        fresh,
    };
    let written = answers::write(&ctx.run_dir, Some(cached), unit, text, &read);
    (read, written)
}

/// The outcome of a unit whose answer was read and (or not) written to its result file.
fn kept(mut outcome: JobOutcome, read: UnitAnswers, written: std::io::Result<()>, result_name: String) -> JobOutcome {
    match written {
        Ok(()) => {
            outcome.result_file = Some(result_name);
            outcome.answers = Some(read);
        }
        Err(e) => {
            let e = if outcome.cached {
                format!("cannot write its result file: {e}")
            } else {
                format!("the answer is cached, but its result file cannot be written: {e}")
            };
            outcome.answers = Some(read);
            outcome.write_error = Some(e.clone());
            outcome.failure = Some(JobFailure::Unit { kind: None, reason: e });
        }
    }
    outcome
}

/// An answer the cache did not take: kept in the run directory, and the message says
/// exactly where (and that `rlm resume` uses it without paying again).
fn uncached(ctx: &JobContext, entry: &CacheEntry, label: &str, result: Option<&str>, e: &std::io::Error) -> String {
    // No call starts from now on: the dispatcher hears of this only when the job ends, after
    // its result file is written, and slots freed meanwhile must not pay into a full disk.
    ctx.call.limiter.halt();
    let label = crate::escape::name(label);
    let result = result.map_or(String::new(), |r| format!(" and {}", ctx.run_dir.dir.join(r).display()));
    match super::pending::keep(&ctx.run_dir.dir, entry) {
        Ok(kept) => format!(
            "the answer for {label} was paid for but cannot be cached ({e}); it is kept in {}{result}, and rlm resume \
             caches it from there without paying again",
            kept.display()
        ),
        Err(k) => format!(
            "the answer for {label} was paid for but can be neither cached ({e}) nor kept in the run directory ({k})"
        ),
    }
}

/// The cache entry at `key` (or an answer kept by an earlier attempt), looked up off the
/// async workers.
pub(super) async fn lookup(ctx: &Arc<JobContext>, key: &CacheKey) -> Result<Option<CacheEntry>, String> {
    if let Some(entry) = ctx.pending.get(key.as_str()) {
        return Ok(Some(entry.clone()));
    }
    let (cache, key, max) = (ctx.cache.clone(), key.clone(), ctx.requests.max_tokens);
    match tokio::task::spawn_blocking(move || cache.get(&key, max)).await {
        Ok(Ok(entry)) => Ok(entry),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("internal error while reading the cache: {e}")),
    }
}

fn cache_entry(ctx: &JobContext, key: CacheKey, unit: &WorkUnit, text: &str, outcome: &JobOutcome) -> CacheEntry {
    CacheEntry {
        inputs: unit
            .inputs
            .iter()
            .map(|i| ArtifactRef {
                artifact_id: i.artifact_id(),
                content_hash: i.content_hash.to_string(),
            })
            .collect(),
        ..cache_entry_text(ctx, key, text, outcome)
    }
}

pub(super) fn cache_entry_text(ctx: &JobContext, key: CacheKey, text: &str, outcome: &JobOutcome) -> CacheEntry {
    // What producing the answer used, by whatever route it was paid for.
    let mut usage = outcome.usage;
    usage.add(outcome.batch_usage);
    CacheEntry {
        key: key.0,
        model: ctx.requests.model.clone(),
        inputs: Vec::new(),
        text: text.to_string(),
        usage,
        truncated: outcome.truncated,
        max_tokens: ctx.requests.max_tokens,
        created_unix: jiff::Timestamp::now().as_second().max(0) as u64,
    }
}
