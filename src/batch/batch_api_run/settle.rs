//! Settling a submission whose create reply was lost — in this attempt (a reset, a 5xx) or
//! an earlier one (killed in flight: its intent is still in the run store) — with the
//! provider's listing ([`crate::provider::batch_api::reconcile`]). Found, its batch is
//! recorded and collected as any batch of the run; shown not created, its requests may be
//! sent again; a candidate that has not ended is waited for as any batch of the run is
//! (polled on the run's schedule, within its `--deadline`), and its results tell; what
//! cannot be told is held: not sent, not run, and said, until a later resume looks again.

use std::collections::HashSet;

use tokio::time::Instant;

use super::{BatchApiRun, Earlier};
use crate::batch::execution::{Execution, Pause};
use crate::exec::Event;
use crate::provider::batch_api::{listing_error, none_since, reconcile, BatchState, Intent, Reconciled, SubmissionTag};
use crate::store::NewBatchSubmission;

/// A submission whose create reply was lost.
pub(super) struct Lost<'a> {
    pub(super) token: &'a str,
    /// When its intent was recorded, Unix ms (before the create request was sent).
    pub(super) recorded_at_ms: i64,
    /// `(custom_id, unit_id)` of its requests, as sent.
    pub(super) requests: &'a [(String, String)],
    pub(super) phase: &'a str,
    /// How the loss is said: "the reply to … was lost (…)".
    pub(super) what: String,
}

/// What became of a lost submission.
pub(super) enum Settled {
    /// Its batch, found and recorded in the run store: collect it.
    Found(BatchState),
    /// The provider created no batch of it (or `rlm cancel --forget` gave it up): its
    /// requests may be sent again.
    NotCreated,
    /// Cannot be told now (said on stderr): its requests are held, for this reason.
    Held(String),
}

impl BatchApiRun {
    /// The submissions of earlier attempts whose batch was never recorded (killed between
    /// the create request and its reply, or the reply lost), each settled before anything
    /// is sent (see the module doc). Runs once, before anything is sent; each batch found
    /// joins the store's known batches before the next intent is looked for.
    pub(super) async fn reconcile_intents(&mut self, exec: &mut Execution) {
        for intent in std::mem::take(&mut self.intents) {
            let requests = match self.store.batch_intent_requests(&self.run, &intent.token) {
                Ok(requests) => requests,
                Err(e) => {
                    self.printer.warn(&format!(
                        "the run store could not read submission {}: {e}",
                        intent.token
                    ));
                    continue;
                }
            };
            if intent.server != self.api.server() {
                // Only under `--forget` (`start` refused it otherwise).
                exec.dispatcher.emit(Event::Warning {
                    message: format!(
                        "submission {} of {} requests given up (rlm cancel --forget): it was sent to {}, and the \
                         settings point at {}; if it created a batch there, that batch is billed there",
                        intent.token,
                        intent.request_count,
                        intent.server,
                        self.api.server()
                    ),
                });
                self.store_write(|s, run| s.drop_batch_intent(run, &intent.token));
                continue;
            }
            let lost = Lost {
                token: &intent.token,
                recorded_at_ms: intent.recorded_at.as_millis(),
                requests: &requests,
                phase: &intent.phase,
                what: format!(
                    "the reply to submission {} ({} requests, sent by an earlier attempt) was never recorded",
                    intent.token, intent.request_count
                ),
            };
            match self.settle(exec, &lost).await {
                Settled::Found(state) => {
                    for (_, unit) in &requests {
                        *self.sent.entry(crate::unit::UnitId::named(unit.as_str())).or_default() += 1;
                    }
                    self.recorded.push(state.batch_id.clone());
                    self.earlier.push(Earlier {
                        batch_id: state.batch_id,
                        phase: intent.phase,
                        server: intent.server,
                        requests,
                        cancel_requested: false,
                    });
                }
                Settled::NotCreated => {}
                Settled::Held(why) => self.hold(&requests, &why),
            }
        }
    }

    /// Settles lost submission `lost` (see the module doc).
    pub(super) async fn settle(&mut self, exec: &mut Execution, lost: &Lost<'_>) -> Settled {
        let tag = SubmissionTag {
            run: self.run.to_string(),
            token: lost.token.to_string(),
        };
        let custom_ids: Vec<String> = lost.requests.iter().map(|(c, _)| c.clone()).collect();
        let mut intent = Intent {
            tag: &tag,
            recorded_at_ms: lost.recorded_at_ms,
            custom_ids: &custom_ids,
            excluded: self.known_batches(exec),
        };
        let server = self.api.server().to_string();
        let what = &lost.what;
        let mut polls = 0;
        let mut waiting_said = false;
        loop {
            // Boxed: the listing and the reading of results make a large future, rarely run.
            let reconciled = Box::pin(reconcile(self.api.as_ref(), &mut intent)).await;
            let why = match reconciled {
                Ok(Reconciled::Found { state, how }) => {
                    let batch = NewBatchSubmission {
                        state: &state,
                        provider: self.api.kind().name(),
                        server: &server,
                        phase: lost.phase,
                        requests: lost.requests,
                        token: Some(lost.token),
                    };
                    if let Err(e) = self.store.record_batch_submission(&self.run, &batch) {
                        let why = format!(
                            "{what}; batch {} at {server} is it, and the run store could not record it ({e})",
                            state.batch_id
                        );
                        return self.held(exec, why);
                    }
                    exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "{what}; batch {} was found at {server} ({how}): it is collected, not submitted again",
                            state.batch_id
                        ),
                    });
                    return Settled::Found(state);
                }
                Ok(Reconciled::NotCreated { since_ms }) => {
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{what}; {}: its requests are sent again", none_since(&server, since_ms)),
                    });
                    self.store_write(|s, run| s.drop_batch_intent(run, lost.token));
                    return Settled::NotCreated;
                }
                Ok(Reconciled::Running(candidates)) if !self.cancel => {
                    if !waiting_said {
                        waiting_said = true;
                        exec.dispatcher.emit(Event::Warning {
                            message: format!(
                                "{what}; {} may be it and {} not ended: rlm waits for {}, and {} results tell",
                                batches(&candidates),
                                if candidates.len() == 1 { "has" } else { "have" },
                                if candidates.len() == 1 { "it" } else { "them" },
                                if candidates.len() == 1 { "its" } else { "their" },
                            ),
                        });
                    }
                    let delay = self.schedule.delay(polls);
                    polls += 1;
                    match exec.pause(Instant::now() + delay).await {
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
                        Pause::Interrupted | Pause::DeadlinePassed => {
                            let stopped = if exec.deadline_passed() {
                                "the --deadline passed"
                            } else {
                                "the run was interrupted"
                            };
                            self.unresolved.push(candidates.clone());
                            format!(
                                "{what}, and {} may be it: {stopped} before {} ended",
                                batches(&candidates),
                                if candidates.len() == 1 { "it" } else { "they" }
                            )
                        }
                    }
                }
                Ok(Reconciled::Running(candidates) | Reconciled::Unsure(candidates)) if !candidates.is_empty() => {
                    self.unresolved.push(candidates.clone());
                    format!("{what}, and {} may be it and cannot be told yet", batches(&candidates))
                }
                Ok(Reconciled::Running(_) | Reconciled::Unsure(_)) => {
                    self.unresolved.push(Vec::new());
                    format!("{what}, and the provider's listing is too long to tell whether it created a batch")
                }
                Err(e) => {
                    self.unresolved.push(Vec::new());
                    format!(
                        "{what}, and the provider's listing of batches could not be read ({})",
                        listing_error(&e)
                    )
                }
            };
            if self.forget {
                exec.dispatcher.emit(Event::Warning {
                    message: format!(
                        "{why}; given up (rlm cancel --forget): if it created a batch, that batch is billed and \
                         nothing collects it"
                    ),
                });
                self.unresolved.pop();
                self.store_write(|s, run| s.drop_batch_intent(run, lost.token));
                return Settled::NotCreated;
            }
            return self.held(exec, why);
        }
    }

    /// A lost submission that cannot be told now: said, and its requests held.
    fn held(&mut self, exec: &mut Execution, why: String) -> Settled {
        let run = &self.run;
        exec.dispatcher.emit(Event::Warning {
            message: format!(
                "{why}; its requests are not sent again (that could pay twice): `rlm resume {run}` looks again, \
                 `rlm cancel {run} --forget` gives the submission up"
            ),
        });
        Settled::Held(why)
    }

    /// Requests of a submission whose batch cannot be told yet: not sent, not run.
    pub(super) fn hold(&mut self, requests: &[(String, String)], why: &str) {
        let reason = format!("not run: {why} (`rlm resume {}` looks for its batch again)", self.run);
        for (_, unit) in requests {
            self.held.insert(unit.clone(), reason.clone());
        }
    }

    /// The batches every run of the store recorded (none is a lost submission): a store
    /// that cannot say is said, and each candidate's results tell instead.
    fn known_batches(&mut self, exec: &mut Execution) -> HashSet<String> {
        match self.store.known_batch_ids() {
            Ok(known) => known,
            Err(e) => {
                exec.dispatcher.emit(Event::Warning {
                    message: format!(
                        "the run store could not list the batches it knows ({e}): each candidate's results tell"
                    ),
                });
                HashSet::new()
            }
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
