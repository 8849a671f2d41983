//! Collect, the last step of a phase: an ended batch's results are streamed and each outcome
//! settled. A succeeded result is kept as a realtime answer is ([`super::keep`]), a few at a
//! time beside the reader; `errored` (when retryable) and `expired` requests — only they —
//! are tried again within `--retries`; `canceled` ones stay not run. Each outcome is recorded
//! after its answer is cached, and the batch marked collected once every result is kept.

use std::collections::{HashMap, HashSet};

use tokio::task::JoinSet;

use super::host::{Host, Request};
use super::phase::Phase;
use super::wait::Waiting;
use super::BatchApiRun;
use crate::exec::Event;
use crate::provider::batch_api::{BatchState, BatchStatus, ItemOutcome, Results, ResultsEnd};
use crate::store::RequestOutcome;

/// Results kept at once beside the reader (each caches its answer and writes its files).
const KEEPING: usize = 16;
/// Outcomes recorded in the store per transaction.
const OUTCOMES_PER_WRITE: usize = 1000;

impl BatchApiRun {
    /// Reads an ended batch's results and keeps them (see the module doc). Requests to send
    /// again go into `retry`.
    pub(super) async fn collect<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        b: Waiting,
        state: BatchState,
        retry: &mut Vec<usize>,
    ) -> Collected {
        let mut expected: HashSet<usize> = b
            .custom_ids
            .iter()
            .filter_map(|c| p.sent_index(c))
            .filter(|&i| !p.done[i])
            .collect();
        // Each request's custom id in this batch (its outcome is recorded under it).
        let sent_as: HashMap<usize, String> = b
            .custom_ids
            .iter()
            .filter_map(|c| p.sent_index(c).map(|i| (i, c.clone())))
            .collect();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut outcomes: Vec<(String, &'static str, Option<String>)> = Vec::new();
        let mut keeping: JoinSet<(usize, H::Kept)> = JoinSet::new();
        let mut stopped = false;
        let mut unread: Option<String> = None;
        if state.status == BatchStatus::Failed
            && state.over_token_limit
            && (expected.len() > 1 || !p.batches.is_empty())
        {
            self.requeue(exec, p, &b, expected);
            return Collected::Kept;
        }
        let mut results = Results::new(&state);
        'read: while let Some(next) = results.next(self.api.as_ref()).await {
            let result = match next {
                Ok(result) => result,
                Err(ResultsEnd::Refused(reason)) => {
                    // The provider refused the whole batch (its input did not validate).
                    for &i in &expected {
                        if let Some(custom_id) = sent_as.get(&i) {
                            outcomes.push((custom_id.clone(), "errored", Some(reason.clone())));
                        }
                        self.fail(
                            exec,
                            p,
                            i,
                            format!("the provider refused batch {}: {reason}", b.batch_id),
                        );
                    }
                    expected.clear();
                    break 'read;
                }
                Err(ResultsEnd::Unread(e)) => {
                    unread = Some(e);
                    break 'read;
                }
            };
            let Some(i) = p.sent_index(&result.custom_id) else {
                continue;
            };
            if !expected.contains(&i) || !seen.insert(i) {
                continue;
            }
            match result.outcome {
                ItemOutcome::Succeeded(reply) => {
                    let kept = exec.keep(p.work[i], reply, b.submitted, !self.cancel);
                    keeping.spawn(async move { (i, kept.await) });
                    while keeping.len() >= KEEPING {
                        if !self.kept(exec, p, &mut keeping, &mut outcomes, &sent_as).await {
                            stopped = true;
                            break 'read;
                        }
                    }
                }
                ItemOutcome::Errored { reason, retryable } => {
                    outcomes.push((result.custom_id.clone(), "errored", Some(reason.clone())));
                    expected.remove(&i);
                    if retryable {
                        self.again_or_fail(exec, p, i, retry, &format!("errored at the provider: {reason}"));
                    } else {
                        self.fail(exec, p, i, format!("errored at the provider: {reason}"));
                    }
                }
                ItemOutcome::Expired => {
                    outcomes.push((result.custom_id.clone(), "expired", None));
                    expected.remove(&i);
                    self.again_or_fail(exec, p, i, retry, "expired at the provider (not run within 24 hours)");
                }
                ItemOutcome::Canceled if b.cancel_requested && !self.cancel => {
                    // Its cancel was asked for before this attempt (`rlm cancel` while
                    // another rlm waited, or stopped before it collected): it never ran,
                    // and this resume sends it again (nothing was paid for it).
                    outcomes.push((result.custom_id.clone(), "canceled", None));
                    expected.remove(&i);
                    if let Some(n) = self.sent.get_mut(p.work[i].id().as_str()) {
                        *n = n.saturating_sub(1);
                    }
                    p.in_flight[i] = false;
                    retry.push(i);
                }
                ItemOutcome::Canceled => {
                    outcomes.push((result.custom_id.clone(), "canceled", None));
                    expected.remove(&i);
                    self.cancelled(
                        exec,
                        p,
                        i,
                        &format!(
                            "canceled at the provider before it ran: not run (`{}` sends it again)",
                            self.resume
                        ),
                    );
                }
            }
            if outcomes.len() >= OUTCOMES_PER_WRITE {
                self.record_outcomes(&b, &mut outcomes);
            }
        }
        while !keeping.is_empty() {
            if !self.kept(exec, p, &mut keeping, &mut outcomes, &sent_as).await {
                stopped = true;
            }
        }
        for (i, _) in p.work.iter().enumerate() {
            if p.done[i] {
                expected.remove(&i);
            }
        }
        self.record_outcomes(&b, &mut outcomes);
        if stopped {
            return Collected::Stopped;
        }
        if let Some(e) = unread {
            // The results are at the provider, paid for: a later resume reads them.
            exec.results_unread(format!(
                "the results of batch {} cannot be read now ({e}): `{}` reads them later",
                b.batch_id, self.resume
            ));
            let reason = format!(
                "its result in batch {} could not be read: `{}` collects it",
                b.batch_id, self.resume
            );
            for i in expected {
                self.cancelled(exec, p, i, &reason);
            }
            return Collected::Kept;
        }
        // A request the results do not mention has no answer: it is sent again (said, since
        // the provider may count it as succeeded).
        if !expected.is_empty() {
            let what = if self.cancel {
                "they are not run (rlm resume sends them)"
            } else {
                "they are sent again, within --retries"
            };
            exec.emit(Event::Warning {
                message: format!(
                    "the results of batch {} have no entry for {} of its requests (the provider counts {} succeeded): \
                     {what}",
                    b.batch_id,
                    expected.len(),
                    state.counts.succeeded
                ),
            });
        }
        for i in expected {
            self.again_or_fail(exec, p, i, retry, "the batch's results have no entry for it");
        }
        match &b.owner {
            None => self.store_write(|s, run| s.record_batch_collected(run, &b.batch_id)),
            // Another run's: collected for it only when every request in it was kept here
            // (else its own resume collects the rest).
            Some((owner, true)) => self.store_write(|s, _| s.record_batch_collected(owner, &b.batch_id)),
            Some((_, false)) => {}
        }
        if state.status == BatchStatus::Canceled || b.cancel_requested {
            tracing::debug!(batch = %b.batch_id, "a canceled batch collected");
        }
        Collected::Kept
    }

    /// Batch `b` was refused for the account's enqueued-token limit (OpenAI
    /// `token_limit_exceeded`; nothing ran): its requests `expected` are submitted again in
    /// batches half its size, once the phase's other batches have ended. The refused send
    /// does not count against `--retries`. (A single request refused while no other batch
    /// of the phase waits fails as the refusal says.)
    fn requeue<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        b: &Waiting,
        expected: HashSet<usize>,
    ) {
        let half = (expected.len() / 2).max(1);
        p.max_requests = Some(p.max_requests.map_or(half, |n| n.min(half)));
        exec.emit(Event::Warning {
            message: crate::provider::batch_api::token_limit_requeue(
                &b.batch_id,
                self.api.server(),
                expected.len(),
                half,
            ),
        });
        for i in expected {
            if let Some(n) = self.sent.get_mut(p.work[i].id().as_str()) {
                *n = n.saturating_sub(1);
            }
            p.in_flight[i] = false;
            p.requeue.push(i);
        }
        self.store_write(|s, run| s.record_batch_collected(run, &b.batch_id));
    }

    /// Hears the next kept result; false when dispatching must stop (an answer could not be
    /// written, a refused key on a `--schema` retry).
    async fn kept<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        keeping: &mut JoinSet<(usize, H::Kept)>,
        outcomes: &mut Vec<(String, &'static str, Option<String>)>,
        sent_as: &HashMap<usize, String>,
    ) -> bool {
        let Some(joined) = exec.join_heard(keeping).await else {
            return true;
        };
        let (i, outcome) = match joined {
            Ok(kept) => kept,
            Err(e) => {
                tracing::debug!("keeping a batch result failed: {e}");
                // Abandoned by a second Ctrl-C: the batch is not collected (its results stay
                // at the provider for `rlm resume`).
                return !e.is_cancelled();
            }
        };
        p.done[i] = true;
        if let Some(custom_id) = sent_as.get(&i) {
            outcomes.push((custom_id.clone(), "succeeded", None));
        }
        let sends = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(1);
        let heard = exec.kept(outcome, sends);
        if heard.kept {
            self.cancel_summary.kept += 1;
        }
        heard.go_on
    }

    /// Sends request `i` again (when its unit has sends left) or fails it.
    fn again_or_fail<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        i: usize,
        retry: &mut Vec<usize>,
        why: &str,
    ) {
        let sent = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(1);
        if self.cancel {
            self.cancelled(
                exec,
                p,
                i,
                &format!("{why}; not sent again: rlm cancel stopped the run"),
            );
        } else {
            match crate::provider::batch_api::send_again(sent, self.retries, why) {
                Ok(()) => {
                    p.in_flight[i] = false;
                    retry.push(i);
                }
                Err(reason) => self.fail(exec, p, i, reason),
            }
        }
    }

    pub(super) fn fail<W: Request, H: Host<W>>(&mut self, exec: &mut H, p: &mut Phase<W>, i: usize, reason: String) {
        if std::mem::replace(&mut p.done[i], true) {
            return;
        }
        let attempts = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(0);
        exec.fail(p.work[i], attempts, reason);
    }

    pub(super) fn cancelled<W: Request, H: Host<W>>(&mut self, exec: &mut H, p: &mut Phase<W>, i: usize, reason: &str) {
        if std::mem::replace(&mut p.done[i], true) {
            return;
        }
        self.cancel_summary.not_run += 1;
        exec.cancelled(p.work[i], reason);
    }

    fn record_outcomes(&mut self, b: &Waiting, outcomes: &mut Vec<(String, &'static str, Option<String>)>) {
        if outcomes.is_empty() {
            return;
        }
        let taken = std::mem::take(outcomes);
        let rows: Vec<RequestOutcome<'_>> = taken
            .iter()
            .map(|(custom_id, outcome, reason)| RequestOutcome {
                custom_id,
                outcome,
                reason: reason.as_deref(),
            })
            .collect();
        let by = b.recorded_by(&self.run).clone();
        self.store_write(|s, _| s.record_batch_outcomes(&by, &b.batch_id, &rows));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Collected {
    Kept,
    /// Dispatching stopped while collecting.
    Stopped,
}
