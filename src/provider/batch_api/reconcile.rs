//! Finding a batch whose creation reply was lost: the create request was sent and the
//! connection broke, it timed out, the server answered 5xx, or rlm was killed before the
//! reply came. The provider may have created the batch, and it runs, and is billed, whether
//! rlm knows of it or not; sending the requests again would pay for them twice. So the
//! provider's listing of batches (newest first) is read back to the time the intent was
//! recorded, before the create request was sent.
//!
//! Every custom id of a submission carries its token ([`super::stamped_custom_id`]): no
//! other submission, of this run, of another run over the same files or of another program,
//! has requests with those ids. So:
//!
//! - A batch tagged with the submission's token (OpenAI keeps `metadata`) is it.
//! - Otherwise (Anthropic's batches carry no metadata) a candidate is a batch created since
//!   the intent (less [`CLOCK_SKEW_MS`]), not excluded (known to the run store, or ruled out
//!   before), of the same number of requests. An ended candidate is confirmed by its
//!   results: the first result read carries the token, or it is not this submission (a
//!   results file that leaves requests out still tells; the requests it leaves out are sent
//!   again when it is collected). A candidate that has not ended is never taken: the caller
//!   waits for it ([`Reconciled::Running`]) and looks again.
//! - Only a listing read back past the intent in which no candidate can be it shows that no
//!   batch was created, and only then may the requests be sent again.

use std::collections::HashSet;

use super::{BatchApi, BatchError, BatchState, BatchStatus, ItemResult, SubmissionTag};

/// How far the provider's clock may be behind ours: a batch created up to this long
/// before the intent was recorded (by our clock) is still a candidate.
pub const CLOCK_SKEW_MS: i64 = 5 * 60 * 1000;

/// How many pages of the listing are read at most before giving up on telling.
const MOST_PAGES: usize = 50;

/// How often one page is asked for when the listing fails for a reason that may pass.
const PAGE_ATTEMPTS: u32 = 3;

/// The submission looked for.
#[derive(Debug, Clone)]
pub struct Intent<'a> {
    pub tag: &'a SubmissionTag,
    /// When the intent was recorded (before the create request was sent), Unix ms.
    pub recorded_at_ms: i64,
    /// Its requests' custom ids, as sent.
    pub custom_ids: &'a [String],
    /// Batch ids that are not it: recorded in the run store, or ruled out by an earlier
    /// look (each look adds the candidates it rules out).
    pub excluded: HashSet<String>,
}

/// What the listing showed.
#[derive(Debug, Clone)]
pub enum Reconciled {
    /// The batch, and how it was told.
    Found { state: BatchState, how: &'static str },
    /// The listing, read back to `since_ms` (the provider's clock, Unix ms), shows no batch
    /// that can be it.
    NotCreated { since_ms: i64 },
    /// These batches may be it and have not ended: once they have, their results tell.
    Running(Vec<String>),
    /// These ended batches may be it and their results tell nothing (none could be read),
    /// or (none) the listing was too long to read back to the intent.
    Unsure(Vec<String>),
}

/// How an ended candidate's results were read.
enum Verdict {
    Ours,
    NotOurs,
    /// No result could be read.
    Untold,
}

/// Looks for `intent`'s batch in the provider's listing (see the module doc). Candidates
/// ruled out are added to `intent.excluded`, so a later look does not read them again.
pub async fn reconcile(api: &dyn BatchApi, intent: &mut Intent<'_>) -> Result<Reconciled, BatchError> {
    let earliest = intent.recorded_at_ms - CLOCK_SKEW_MS;
    let total = intent.custom_ids.len() as u64;
    let mut running: Vec<String> = Vec::new();
    let mut ended: Vec<BatchState> = Vec::new();
    let mut after: Option<String> = None;
    let mut read_back = false;
    for _ in 0..MOST_PAGES {
        let page = page(api, after.as_deref()).await?;
        for listed in page.batches {
            if listed.token.as_deref() == Some(intent.tag.token.as_str()) {
                return Ok(Reconciled::Found {
                    state: listed.state,
                    how: "by the token in its metadata",
                });
            }
            if listed.created_at_ms < earliest {
                read_back = true;
                continue;
            }
            let id = &listed.state.batch_id;
            if listed.tagged || intent.excluded.contains(id) || listed.state.counts.total() != total {
                continue;
            }
            if listed.state.has_ended() {
                ended.push(listed.state);
            } else {
                running.push(listed.state.batch_id);
            }
        }
        match page.next {
            Some(next) if !read_back => after = Some(next),
            _ => {
                read_back = true;
                break;
            }
        }
    }
    let mut untold = Vec::new();
    for state in ended {
        match verdict(api, &state, intent).await? {
            Verdict::Ours => {
                return Ok(Reconciled::Found {
                    state,
                    how: "by its results, whose custom ids carry this submission's token",
                })
            }
            Verdict::NotOurs => {
                intent.excluded.insert(state.batch_id);
            }
            Verdict::Untold => untold.push(state.batch_id),
        }
    }
    Ok(if !untold.is_empty() || !read_back {
        untold.extend(running);
        Reconciled::Unsure(untold)
    } else if !running.is_empty() {
        Reconciled::Running(running)
    } else {
        Reconciled::NotCreated { since_ms: earliest }
    })
}

/// One page of the listing, asked for again when it fails for a reason that may pass.
async fn page(api: &dyn BatchApi, after: Option<&str>) -> Result<super::BatchPage, BatchError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match api.list_page(after).await {
            Err(e) if e.is_retryable() && attempt < PAGE_ATTEMPTS => {
                let wait = e
                    .retry_after()
                    .unwrap_or(std::time::Duration::from_millis(500 * u64::from(attempt)));
                tokio::time::sleep(wait.min(std::time::Duration::from_secs(10))).await;
            }
            other => return other,
        }
    }
}

/// Whether ended batch `state` is `intent`'s, by its results. The custom ids of a submission
/// carry its token, so the first result read tells. (An intent recorded before custom ids
/// carried a token is told only by results that answer each of its requests, and no other.)
async fn verdict(api: &dyn BatchApi, state: &BatchState, intent: &Intent<'_>) -> Result<Verdict, BatchError> {
    if state.status == BatchStatus::Failed {
        // OpenAI refused it whole (its input did not validate): nothing of it ran or is
        // billed, so sending the requests again pays nothing twice.
        return Ok(Verdict::NotOurs);
    }
    let mut stream = match api.results(state).await {
        Ok(stream) => stream,
        Err(BatchError::Failed { .. }) => return Ok(Verdict::NotOurs),
        Err(e) => return Err(e),
    };
    let stamp = super::stamp_of(&intent.tag.token);
    let stamped = intent.custom_ids.iter().all(|c| super::carries_stamp(c, &stamp));
    let wanted: HashSet<&str> = intent.custom_ids.iter().map(String::as_str).collect();
    let mut seen: HashSet<String> = HashSet::with_capacity(if stamped { 1 } else { wanted.len() });
    while let Some(next) = stream.next().await {
        match next {
            Ok(ItemResult { custom_id, .. }) => {
                if !wanted.contains(custom_id.as_str()) {
                    return Ok(Verdict::NotOurs);
                }
                if stamped {
                    return Ok(Verdict::Ours);
                }
                seen.insert(custom_id);
            }
            Err(BatchError::Malformed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(match seen.len() {
        0 => Verdict::Untold,
        n if n == wanted.len() => Verdict::Ours,
        // Some of its requests, and none of another's: it may be it, short of lines.
        _ => Verdict::Untold,
    })
}
