//! Submit, the first step of a phase: each request is rendered by the one renderer as the
//! submission is written, submissions are cut at the provider's limits, and each batch is
//! recorded in the run store before anything waits for it. Before anything is sent, the
//! submissions of earlier attempts whose batch was never recorded are looked for at the
//! provider ([`BatchApiRun::reconcile_intents`]); requests too large for any batch (or a
//! server without a batch API under `--batch-api auto`) go as realtime calls instead.

use std::collections::HashSet;

use tokio::time::Instant;

use super::phase::{Phase, Work};
use super::recorder::RunRecorder;
use super::wait::Waiting;
use super::{BatchApiRun, Earlier};
use crate::batch::execution::{Execution, Pause};
use crate::batch::job::{self, Job, JobContext};
use crate::exec::Event;
use crate::provider::batch_api::{
    custom_id_for, reconcile, submit_all_within, BatchError, BatchItem, Intent, Reconciled, SubmissionTag,
};
use crate::provider::ErrorKind;
use crate::request;
use crate::store::NewBatchSubmission;

impl BatchApiRun {
    /// The submissions of earlier attempts whose batch was never recorded (killed between
    /// the create request and its reply, or the reply lost): each is looked for at the
    /// provider first. Found, it is recorded and collected as any batch of the run; shown
    /// not created, its requests are sent again; not told apart yet, they are held (not
    /// sent, not run) until a later resume looks again. Runs once, before anything is sent.
    pub(super) async fn reconcile_intents(&mut self, exec: &mut Execution) {
        let known = self.store.known_batch_ids().unwrap_or_default();
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
            let custom_ids: Vec<String> = requests.iter().map(|(c, _)| c.clone()).collect();
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
            let tag = SubmissionTag {
                run: self.run.to_string(),
                token: intent.token.clone(),
            };
            let looked_for = Intent {
                tag: &tag,
                recorded_at_ms: intent.recorded_at.as_millis(),
                custom_ids: &custom_ids,
                known: &known,
            };
            let lost = format!(
                "the reply to submission {} ({} requests, sent by an earlier attempt) was never recorded",
                intent.token, intent.request_count
            );
            match reconcile(self.api.as_ref(), &looked_for).await {
                Ok(Reconciled::Found { state, how }) => {
                    let batch = NewBatchSubmission {
                        state: &state,
                        provider: self.api.kind().name(),
                        server: self.api.server(),
                        phase: &intent.phase,
                        requests: &requests,
                        token: Some(&intent.token),
                    };
                    if let Err(e) = self.store.record_batch_submission(&self.run, &batch) {
                        self.hold(
                            &custom_ids,
                            &format!("{lost}, and its batch {} could not be recorded ({e})", state.batch_id),
                        );
                        continue;
                    }
                    exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "{lost}; batch {} was found at {} ({how}): it is collected, not submitted again",
                            state.batch_id,
                            self.api.server()
                        ),
                    });
                    for (_, unit) in &requests {
                        *self.sent.entry(unit.clone()).or_default() += 1;
                    }
                    self.recorded.push(state.batch_id.clone());
                    self.earlier.push(Earlier {
                        batch_id: state.batch_id,
                        phase: intent.phase,
                        server: intent.server,
                        custom_ids,
                        cancel_requested: false,
                    });
                }
                Ok(Reconciled::NotCreated) => {
                    exec.dispatcher.emit(Event::Warning {
                        message: format!(
                            "{lost}; {} lists no batch that can be it, so none was created: its requests are sent again",
                            self.api.server()
                        ),
                    });
                    self.store_write(|s, run| s.drop_batch_intent(run, &intent.token));
                }
                Ok(Reconciled::Unsure(candidates)) => {
                    let what = match candidates.as_slice() {
                        [] => "the provider's listing is too long to tell whether it created a batch".to_string(),
                        many => format!("batches {} may be it and cannot be told apart yet", many.join(", ")),
                    };
                    let why = format!("{lost}, and {what}");
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{why}; its requests are not sent again (that could pay twice)"),
                    });
                    self.hold(&custom_ids, &why);
                }
                Err(e) => {
                    let why = format!("{lost}, and the provider's listing of batches could not be read ({e})");
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{why}; its requests are not sent again (that could pay twice)"),
                    });
                    self.hold(&custom_ids, &why);
                }
            }
        }
    }

    /// Requests of a submission whose batch cannot be told yet: not sent, not run.
    fn hold(&mut self, custom_ids: &[String], why: &str) {
        let reason = format!("not run: {why} (`rlm resume {}` looks for its batch again)", self.run);
        for c in custom_ids {
            self.held.insert(c.clone(), reason.clone());
        }
    }

    /// Submits the requests `send` (indexes into the phase's work) in as many batches as the
    /// limits need, each recorded before the next. Returns the requests that must go
    /// realtime instead (too large for any batch, or a server without a batch API under
    /// `--batch-api auto`).
    pub(super) async fn submit(&mut self, exec: &mut Execution, p: &mut Phase<'_>, send: Vec<usize>) -> Vec<usize> {
        for &i in &send {
            p.announce(exec, i);
        }
        let ctx = exec.jobs.clone();
        let mut left = send;
        let mut attempt = 0;
        loop {
            let mut recorder = RunRecorder {
                store: &mut self.store,
                run: &self.run,
                failure: &mut self.store_failure,
                provider: self.api.kind().name(),
                server: self.api.server().to_string(),
                phase: p.name,
                work: &p.work,
                by_custom: &p.by_custom,
                submissions: &mut self.submissions,
                recorded: Vec::new(),
                notices: Vec::new(),
            };
            let result = {
                let work = &p.work;
                let items = left.iter().map(|&i| item(&ctx, work[i]));
                submit_all_within(self.api.as_ref(), items, p.max_requests, &mut recorder).await
            };
            let RunRecorder { recorded, notices, .. } = recorder;
            for message in notices {
                exec.dispatcher.emit(Event::Warning { message });
            }
            // The submissions' bodies (up to 32 MB each) are freed.
            crate::memory::release_free();
            let now = Instant::now();
            let mut sent: HashSet<String> = HashSet::new();
            for s in recorded {
                exec.dispatcher.emit(Event::BatchSubmitted {
                    batch_id: s.batch_id.clone(),
                    phase: p.name.to_string(),
                    requests: s.custom_ids.len(),
                });
                for c in &s.custom_ids {
                    if let Some(&i) = p.by_custom.get(c.as_str()) {
                        *self.sent.entry(p.work[i].id().to_string()).or_default() += 1;
                        p.in_flight[i] = true;
                    }
                }
                sent.extend(s.custom_ids.iter().cloned());
                p.batches.push(Waiting {
                    batch_id: s.batch_id,
                    custom_ids: s.custom_ids,
                    polls: 0,
                    next_poll: now + self.schedule.delay(0),
                    submitted: now,
                    counts: s.state.counts,
                    cancel_requested: false,
                });
            }
            left.retain(|&i| !sent.contains(&p.custom_ids[i]));
            match result {
                Ok(report) => {
                    let mut realtime = Vec::new();
                    for (custom_id, e) in report.rejected {
                        let Some(&i) = p.by_custom.get(custom_id.as_str()) else {
                            continue;
                        };
                        match e {
                            BatchError::ItemTooLarge { .. } => realtime.push(i),
                            e => self.fail(exec, p, i, format!("not sent to the batch API: {e}")),
                        }
                    }
                    return realtime;
                }
                Err(e) if e.is_unsupported() && self.auto => {
                    exec.dispatcher.emit(Event::Warning {
                        message: format!("{e}: --batch-api auto makes realtime calls instead"),
                    });
                    return left;
                }
                Err(e @ BatchError::Unreconciled { .. }) => {
                    // Its requests may be running, and paid for, at the provider: never sent
                    // again blindly. The others go on.
                    let message = e.to_string();
                    exec.dispatcher.emit(Event::Warning {
                        message: message.clone(),
                    });
                    let BatchError::Unreconciled { custom_ids, .. } = e else {
                        return Vec::new();
                    };
                    let held: HashSet<&str> = custom_ids.iter().map(String::as_str).collect();
                    let reason = format!(
                        "not run: {message} (`rlm resume {}` looks for its batch again)",
                        self.run
                    );
                    for &i in &left {
                        if held.contains(p.custom_ids[i].as_str()) {
                            self.cancelled(exec, p, i, &reason);
                        }
                    }
                    left.retain(|&i| !held.contains(p.custom_ids[i].as_str()));
                    if left.is_empty() || !exec.may_call() {
                        return Vec::new();
                    }
                }
                Err(e) if e.is_retryable() && attempt < self.retries && !left.is_empty() => {
                    attempt += 1;
                    let wait = e
                        .retry_after()
                        .unwrap_or_else(|| exec.jobs.call.policy.backoff(attempt));
                    tracing::debug!(attempt, ?wait, "submitting a batch again: {e}");
                    match exec.pause(Instant::now() + wait).await {
                        Pause::Elapsed => continue,
                        Pause::Interrupted | Pause::DeadlinePassed => return Vec::new(),
                    }
                }
                Err(e) => {
                    let fatal = e.is_unsupported()
                        || matches!(&e, BatchError::Call { error, .. } if error.kind == ErrorKind::Fatal);
                    if fatal {
                        exec.dispatcher
                            .halt(crate::batch::dispatcher::StopReason::Fatal(format!("--batch-api: {e}")));
                    }
                    for i in left {
                        self.fail(exec, p, i, format!("the batch could not be submitted: {e}"));
                    }
                    return Vec::new();
                }
            }
        }
    }

    /// Runs the requests `indexes` as realtime calls, through the pool, each within what
    /// `--retries` has left after its batch sends (the realtime fallback shares the budget:
    /// a unit sent once in a batch gets one realtime call and `--retries` minus one retries
    /// of it).
    pub(super) async fn run_realtime(&mut self, exec: &mut Execution, p: &mut Phase<'_>, indexes: Vec<usize>) {
        let mut by_budget: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
        for i in indexes {
            let sent = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(0);
            // `again_or_fail` sends nothing again past the budget: `sent <= retries`.
            by_budget.entry(self.retries.saturating_sub(sent)).or_default().push(i);
        }
        for (retries, indexes) in by_budget.into_iter().rev() {
            let jobs = Self::realtime_jobs(exec, p, indexes);
            if !jobs.is_empty() {
                exec.run_announced_with_retries(jobs, retries).await;
            }
        }
    }

    /// The realtime jobs of the requests `indexes`, announced to the reporters.
    fn realtime_jobs(exec: &mut Execution, p: &mut Phase<'_>, indexes: Vec<usize>) -> Vec<Job> {
        let mut jobs = Vec::with_capacity(indexes.len());
        for i in indexes {
            if p.done[i] {
                continue;
            }
            p.done[i] = true;
            if !p.queued[i] {
                p.queued[i] = true;
                let meta = p.work[i].meta();
                exec.dispatcher.emit(Event::Queued {
                    unit: meta.unit,
                    label: meta.label,
                    kind: meta.kind,
                });
            }
            jobs.push(p.work[i].job());
        }
        jobs
    }
}

/// One request of a batch, rendered now (and, for a unit, its prompt kept in the run
/// directory as a realtime call keeps it).
fn item(ctx: &JobContext, work: Work<'_>) -> BatchItem {
    let request = match work {
        Work::Unit(unit) => {
            let rendered = request::render(unit, &ctx.requests);
            job::keep_prompt(ctx, unit, &rendered.request);
            rendered.request
        }
        Work::Summary(s) => job::summary_call(ctx, s).request,
    };
    BatchItem {
        custom_id: custom_id_for(work.id().as_str()),
        request,
    }
}
