//! Finding a batch whose creation reply was lost: the create request was sent and the
//! connection broke, it timed out, the server answered 5xx, or rlm was killed before the
//! reply came. The provider may have created the batch, and it runs, and is billed, whether
//! rlm knows of it or not; sending the requests again would pay for them twice. So the
//! provider's listing of batches (newest first) is read back to the time the intent was
//! recorded, before the create request was sent:
//!
//! - A batch tagged with the submission's token (OpenAI keeps `metadata`) is it.
//! - Anthropic's batches carry no metadata: a candidate is a batch created since the intent
//!   (less [`CLOCK_SKEW`]), not known to the run store, of the same number of requests. An
//!   ended candidate is confirmed, or ruled out, by its results' custom ids; a lone
//!   candidate that has not ended is taken (its results are matched by custom id when it is
//!   collected: requests it does not answer are sent again then). Several that have not
//!   ended cannot be told apart yet: nothing is sent again, and a later resume looks again.
//! - No candidate in a listing read back past the intent: no batch was created, and only
//!   then may the requests be sent again.

use std::collections::HashSet;

use super::{BatchApi, BatchError, BatchState, ItemResult, SubmissionTag};

/// How far the provider's clock may be behind ours: a batch created up to this long
/// before the intent was recorded (by our clock) is still a candidate.
pub const CLOCK_SKEW_MS: i64 = 5 * 60 * 1000;

/// How many pages of the listing are read at most before giving up on telling.
const MOST_PAGES: usize = 50;

/// How often one page is asked for when the listing fails for a reason that may pass.
const PAGE_ATTEMPTS: u32 = 3;

/// The submission looked for.
#[derive(Debug, Clone, Copy)]
pub struct Intent<'a> {
    pub tag: &'a SubmissionTag,
    /// When the intent was recorded (before the create request was sent), Unix ms.
    pub recorded_at_ms: i64,
    /// Its requests' custom ids.
    pub custom_ids: &'a [String],
    /// Batch ids already recorded in the run store (never taken for it).
    pub known: &'a HashSet<String>,
}

/// What the listing showed.
#[derive(Debug, Clone)]
pub enum Reconciled {
    /// The batch, and how it was told.
    Found { state: BatchState, how: &'static str },
    /// The listing, read back past the intent, shows no batch that can be it.
    NotCreated,
    /// These batches may be it and cannot be told apart yet (none: the listing was too long
    /// to read back to the intent).
    Unsure(Vec<String>),
}

/// Looks for `intent`'s batch in the provider's listing (see the module doc).
pub async fn reconcile(api: &dyn BatchApi, intent: &Intent<'_>) -> Result<Reconciled, BatchError> {
    let earliest = intent.recorded_at_ms - CLOCK_SKEW_MS;
    let total = intent.custom_ids.len() as u64;
    let mut running: Vec<BatchState> = Vec::new();
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
            if listed.tagged || intent.known.contains(id) || listed.state.counts.total() != total {
                continue;
            }
            if listed.state.has_ended() {
                ended.push(listed.state);
            } else {
                running.push(listed.state);
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
    let wanted: HashSet<&str> = intent.custom_ids.iter().map(String::as_str).collect();
    for state in ended {
        if answers_exactly(api, &state, &wanted).await? {
            return Ok(Reconciled::Found {
                state,
                how: "by its size, its creation time and its results' custom ids",
            });
        }
    }
    Ok(match running.len() {
        0 if read_back => Reconciled::NotCreated,
        0 => Reconciled::Unsure(Vec::new()),
        1 => Reconciled::Found {
            state: running.remove(0),
            how: "the one batch of its size created since it was sent",
        },
        _ => Reconciled::Unsure(running.into_iter().map(|s| s.batch_id).collect()),
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

/// Whether the results of ended batch `state` are one for each of `wanted`, and no other.
async fn answers_exactly(api: &dyn BatchApi, state: &BatchState, wanted: &HashSet<&str>) -> Result<bool, BatchError> {
    let mut stream = match api.results(state).await {
        Ok(stream) => stream,
        // A batch whose results cannot be had (OpenAI `failed`) is not taken for it.
        Err(BatchError::Failed { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut seen: HashSet<String> = HashSet::with_capacity(wanted.len());
    while let Some(next) = stream.next().await {
        match next {
            Ok(ItemResult { custom_id, .. }) => {
                if !wanted.contains(custom_id.as_str()) {
                    return Ok(false);
                }
                seen.insert(custom_id);
            }
            Err(BatchError::Malformed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(seen.len() == wanted.len())
}
