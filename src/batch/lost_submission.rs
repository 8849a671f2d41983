//! Settling a submission whose create reply was lost — in this attempt (a reset, a 5xx) or
//! an earlier one (killed in flight: its intent is still in the run store) — with the
//! provider's listing ([`crate::provider::batch_api::reconcile`]). One way for every path
//! that submits provider batches (`rlm batch --batch-api`, `rlm job --batch-api`):
//! - found, its batch is recorded in the run store, and collected as any batch of the run;
//! - shown not created, its intent is dropped and its requests may be sent again;
//! - a candidate that has not ended is waited for (polled on the run's schedule, within its
//!   Ctrl-C and `--deadline`), and its results tell;
//! - what cannot be told is held: not sent, not run, until a later resume looks again.

use std::collections::HashSet;
use std::future::Future;

use tokio::time::Instant;

use super::execution::Pause;
use crate::provider::batch_api::{
    listing_error, none_since, reconcile, BatchApi, BatchState, Intent, PollSchedule, Reconciled, SubmissionTag,
};
use crate::store::{NewBatchSubmission, RunId, StoreError, TaskStore};

/// A submission whose create reply was lost.
pub struct Lost<'a> {
    pub token: &'a str,
    /// When its intent was recorded, Unix ms (before the create request was sent).
    pub recorded_at_ms: i64,
    /// `(custom_id, unit_id)` of its requests, as sent.
    pub requests: &'a [(String, String)],
    pub phase: &'a str,
    /// How the loss is said: "the reply to … was lost (…)".
    pub what: String,
}

/// What became of a lost submission.
pub enum Settled {
    /// Its batch, found and recorded in the run store: collect it.
    Found(BatchState),
    /// The provider created no batch of it: its intent is dropped and its requests may be
    /// sent again.
    NotCreated,
    /// Cannot be told now: why (without what to do about it, which the caller says), and
    /// the batches that may be it (none when the listing could not tell).
    Held { why: String, candidates: Vec<String> },
}

/// Where a settle speaks, and how it waits: the run's warnings, its Ctrl-C and deadline.
pub trait Host {
    /// A warning for the person running rlm.
    fn say(&mut self, message: String);
    /// A run-store write failed (the caller says it once).
    fn store_failed(&mut self, e: &StoreError);
    /// Sleeps until `until`, or until Ctrl-C or the deadline, whichever comes first.
    fn pause(&mut self, until: Instant) -> impl Future<Output = Pause>;
}

/// What a settle works with.
pub struct Settle<'a> {
    pub api: &'a dyn BatchApi,
    pub store: &'a mut TaskStore,
    pub run: &'a RunId,
    pub schedule: &'a PollSchedule,
    /// Candidates that have not ended are waited for (not by `rlm cancel`, which only
    /// collects).
    pub wait: bool,
}

impl Settle<'_> {
    /// Settles `lost` (see the module doc).
    pub async fn settle(&mut self, host: &mut impl Host, lost: &Lost<'_>) -> Settled {
        let tag = SubmissionTag {
            run: self.run.to_string(),
            token: lost.token.to_string(),
        };
        let custom_ids: Vec<String> = lost.requests.iter().map(|(c, _)| c.clone()).collect();
        let excluded = match self.store.known_batch_ids() {
            Ok(known) => known,
            Err(e) => {
                host.say(format!(
                    "the run store could not list the batches it knows ({e}): each candidate's results tell"
                ));
                HashSet::new()
            }
        };
        let mut intent = Intent {
            tag: &tag,
            recorded_at_ms: lost.recorded_at_ms,
            custom_ids: &custom_ids,
            excluded,
        };
        let server = self.api.server().to_string();
        let what = &lost.what;
        let mut polls = 0;
        let mut waiting_said = false;
        loop {
            // Boxed: the listing and the reading of results make a large future, rarely run.
            let reconciled = Box::pin(reconcile(self.api, &mut intent)).await;
            let (why, candidates) = match reconciled {
                Ok(Reconciled::Found { state, how }) => {
                    let batch = NewBatchSubmission {
                        state: &state,
                        provider: self.api.kind().name(),
                        server: &server,
                        phase: lost.phase,
                        requests: lost.requests,
                        token: Some(lost.token),
                    };
                    if let Err(e) = self.store.record_batch_submission(self.run, &batch) {
                        let why = format!(
                            "{what}; batch {} at {server} is it, and the run store could not record it ({e})",
                            state.batch_id
                        );
                        return Settled::Held {
                            why,
                            candidates: vec![state.batch_id],
                        };
                    }
                    host.say(format!(
                        "{what}; batch {} was found at {server} ({how}): it is collected, not submitted again",
                        state.batch_id
                    ));
                    return Settled::Found(state);
                }
                Ok(Reconciled::NotCreated { since_ms }) => {
                    host.say(format!(
                        "{what}; {}: its requests are sent again",
                        none_since(&server, since_ms)
                    ));
                    if let Err(e) = self.store.drop_batch_intent(self.run, lost.token) {
                        host.store_failed(&e);
                    }
                    return Settled::NotCreated;
                }
                Ok(Reconciled::Running(candidates)) if self.wait => {
                    if !waiting_said {
                        waiting_said = true;
                        let one = candidates.len() == 1;
                        host.say(format!(
                            "{what}; {} may be it and {} not ended: rlm waits for {}, and {} results tell",
                            batches(&candidates),
                            if one { "has" } else { "have" },
                            if one { "it" } else { "them" },
                            if one { "its" } else { "their" },
                        ));
                    }
                    let delay = self.schedule.delay(polls);
                    polls += 1;
                    let stopped = match host.pause(Instant::now() + delay).await {
                        Pause::Elapsed => {
                            // Each is polled as a batch of the run is; the listing read next
                            // shows which have ended, and their results tell.
                            for id in &candidates {
                                if let Err(e) = self.api.poll(id).await {
                                    tracing::debug!(batch = %id, "polling a candidate failed: {e}");
                                }
                            }
                            continue;
                        }
                        Pause::Interrupted => "the run was interrupted",
                        Pause::DeadlinePassed => "the --deadline passed",
                    };
                    let why = format!(
                        "{what}, and {} may be it: {stopped} before {} ended",
                        batches(&candidates),
                        if candidates.len() == 1 { "it" } else { "they" }
                    );
                    (why, candidates)
                }
                Ok(Reconciled::Running(candidates) | Reconciled::Unsure(candidates)) if !candidates.is_empty() => (
                    format!("{what}, and {} may be it and cannot be told yet", batches(&candidates)),
                    candidates,
                ),
                Ok(Reconciled::Running(_) | Reconciled::Unsure(_)) => (
                    format!("{what}, and the provider's listing is too long to tell whether it created a batch"),
                    Vec::new(),
                ),
                Err(e) => (
                    format!(
                        "{what}, and the provider's listing of batches could not be read ({})",
                        listing_error(&e)
                    ),
                    Vec::new(),
                ),
            };
            return Settled::Held { why, candidates };
        }
    }
}

/// "batch b1" or "batches b1, b2".
fn batches(ids: &[String]) -> String {
    match ids {
        [one] => format!("batch {one}"),
        many => format!("batches {}", many.join(", ")),
    }
}
