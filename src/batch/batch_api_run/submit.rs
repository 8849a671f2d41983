//! Submit, the first step of a phase: each request is rendered by the one renderer as the
//! submission is written, submissions are cut at the provider's limits (each stamped with
//! its own token), and each batch is recorded in the run store before anything waits for
//! it. A submission whose reply was lost and whose batch may still be running is settled
//! ([`super::settle`]) before its requests go again; requests too large for any batch (or a
//! server without a batch API under `--batch-api auto`) go as realtime calls instead.

use std::collections::HashSet;

use tokio::time::Instant;

use super::host::{Host, Request};
use super::phase::Phase;
use super::recorder::RunRecorder;
use super::settle::{Lost, Settled};
use super::wait::Waiting;
use super::BatchApiRun;
use crate::batch::execution::Pause;
use crate::exec::Event;
use crate::provider::batch_api::{submit_all_within, BatchError, LostSubmission};
use crate::provider::ErrorKind;

impl BatchApiRun {
    /// Submits the requests `send` (indexes into the phase's work) in as many batches as the
    /// limits need, each recorded before the next. Returns the requests that must go
    /// realtime instead (too large for any batch, or a server without a batch API under
    /// `--batch-api auto`).
    pub(super) async fn submit<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        send: Vec<usize>,
    ) -> Vec<usize> {
        for &i in &send {
            p.announce(exec, i);
        }
        let left = self.within_budget(exec, p, send);
        let mut left = self.claim(exec, p, left).await;
        let mut attempt = 0;
        loop {
            let request = |c: &str| {
                p.stamped_index(c)
                    .map(|i| (p.work[i].id().to_string(), p.keys[i].clone()))
            };
            let mut recorder = RunRecorder {
                store: &mut self.store,
                run: &self.run,
                failure: &mut self.store_failure,
                provider: self.api.kind().name(),
                server: self.api.server().to_string(),
                phase: &p.name,
                request: &request,
                submissions: &mut self.submissions,
                recorded: Vec::new(),
                notices: Vec::new(),
            };
            // A unit whose file changed since it was planned is not sent (its text is read
            // again as its request is written).
            let mut unsendable: Vec<(usize, String)> = Vec::new();
            let result = {
                let host = &*exec;
                let items = left.iter().filter_map(|&i| {
                    host.item(p.work[i], &p.unit_parts[i])
                        .map_err(|why| unsendable.push((i, why)))
                        .ok()
                });
                submit_all_within(self.api.as_ref(), items, p.max_requests, &mut recorder).await
            };
            let RunRecorder { recorded, notices, .. } = recorder;
            for (i, why) in unsendable {
                left.retain(|&l| l != i);
                self.fail(exec, p, i, why);
            }
            for message in notices {
                exec.emit(Event::Warning { message });
            }
            // The submissions' bodies (up to 16 MB each) are freed.
            crate::memory::release_free();
            let mut sent: HashSet<usize> = HashSet::new();
            for s in recorded {
                let delay = self.schedule.delay(0);
                sent.extend(self.wait_for(exec, p, s.batch_id, s.custom_ids, s.state.counts, delay));
            }
            left.retain(|i| !sent.contains(i));
            match result {
                Ok(report) => {
                    let mut realtime = Vec::new();
                    for (unit_part, e) in report.rejected {
                        let Some(i) = p.stamped_index(&unit_part) else {
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
                    exec.emit(Event::Warning {
                        message: format!("{e}: --batch-api auto makes realtime calls instead"),
                    });
                    return left;
                }
                Err(BatchError::Unreconciled(lost)) => {
                    // Its requests may be running, and paid for, at the provider: never sent
                    // again blindly. The others go on.
                    let held = self.lost_in_flight(exec, p, *lost).await;
                    for &i in &left {
                        if let Some(reason) = held.get(&i) {
                            self.cancelled(exec, p, i, reason);
                        }
                    }
                    // (A batch found for it is waited for: its requests are in flight.)
                    left.retain(|&i| !held.contains_key(&i) && !p.in_flight[i]);
                    if left.is_empty() || !exec.may_submit() {
                        return Vec::new();
                    }
                }
                Err(e) if e.is_retryable() && attempt < self.retries && !left.is_empty() => {
                    attempt += 1;
                    let wait = e.retry_after().unwrap_or_else(|| exec.backoff(attempt));
                    tracing::debug!(attempt, ?wait, "submitting a batch again: {e}");
                    match exec.pause(Instant::now() + wait).await {
                        Pause::Elapsed => continue,
                        Pause::Interrupted | Pause::DeadlinePassed => return Vec::new(),
                    }
                }
                Err(e) => {
                    if e.is_unsupported() {
                        exec.no_batch_api(&e);
                    } else if matches!(&e, BatchError::Call { error, .. } if error.kind == ErrorKind::Fatal) {
                        exec.halt(format!("--batch-api: {e}"));
                    }
                    for i in left {
                        self.fail(exec, p, i, format!("the batch could not be submitted: {e}"));
                    }
                    return Vec::new();
                }
            }
        }
    }

    /// Under `--max-cost`, the requests of `send` (in order) whose worst case fits in what is
    /// left of the budget once the batches still at the provider are counted at theirs: a
    /// batch is paid for whole, so the estimate alone cannot hold the cap. The others are
    /// not sent; the run ends BUDGET_EXCEEDED, and `rlm resume --max-cost` with more sends
    /// them.
    fn within_budget<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        send: Vec<usize>,
    ) -> Vec<usize> {
        let Some(mut left) = exec.budget_left() else {
            return send;
        };
        let worst = |p: &Phase<W>, i: usize| exec.worst_cost(p.work[i]);
        for i in 0..p.work.len() {
            if p.in_flight[i] && !p.done[i] {
                if p.worst[i] == 0.0 {
                    p.worst[i] = worst(p, i);
                }
                left -= p.worst[i];
            }
        }
        let costs: Vec<f64> = send.iter().map(|&i| worst(p, i)).collect();
        let taken = submitted_within(left, costs.iter().copied());
        let mut fits = send;
        let over = fits.split_off(taken);
        for (&i, &cost) in fits.iter().zip(&costs) {
            left -= cost;
            p.worst[i] = cost;
        }
        if over.is_empty() {
            return fits;
        }
        let reason = format!(
            "--max-cost: {} not submitted, as their batch could cost more than the {} left of the budget (each \
             counted at its worst: its input, and max_tokens of output, at the batch price); `{} --max-cost USD` \
             with a higher budget sends them",
            match over.len() {
                1 => "1 request was".to_string(),
                n => format!("{n} requests were"),
            },
            crate::money::usd(left.max(0.0) + fits.iter().map(|&i| p.worst[i]).sum::<f64>()),
            self.resume
        );
        for i in over {
            self.cancelled(exec, p, i, &format!("not run: {reason}"));
        }
        exec.stop_for_budget(reason);
        fits
    }

    /// Batch `batch_id`, holding the requests `custom_ids` (as sent), is waited for: each
    /// request is tracked by its custom id and counted as sent. Returns the requests.
    fn wait_for<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        batch_id: String,
        custom_ids: Vec<String>,
        counts: crate::provider::batch_api::BatchCounts,
        first_poll: std::time::Duration,
    ) -> Vec<usize> {
        exec.emit(Event::BatchSubmitted {
            batch_id: batch_id.clone(),
            phase: p.name.clone(),
            requests: custom_ids.len(),
        });
        let mut indexes = Vec::with_capacity(custom_ids.len());
        for c in &custom_ids {
            if let Some(i) = p.stamped_index(c) {
                *self.sent.entry(p.work[i].id().clone()).or_default() += 1;
                p.in_flight[i] = true;
                p.track(c, i);
                indexes.push(i);
            }
        }
        let now = Instant::now();
        p.batches.push(Waiting {
            batch_id,
            custom_ids,
            polls: 0,
            next_poll: now + first_poll,
            submitted: now,
            counts,
            cancel_requested: false,
            owner: None,
        });
        indexes
    }

    /// A submission of this attempt whose reply was lost and whose batch the listing could
    /// not tell at once: its candidates that have not ended are waited for (within the
    /// run's `--deadline`) and their results tell. Found, its batch is waited for with the
    /// phase's; not created, its requests go again with the others. Returns the requests
    /// held (not sent, not run), with why.
    async fn lost_in_flight<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        lost: LostSubmission,
    ) -> std::collections::HashMap<usize, String> {
        let message = lost.to_string();
        let LostSubmission {
            reason,
            running,
            token,
            recorded_at_ms,
            custom_ids,
            ..
        } = lost;
        let requests: Vec<(String, String)> = custom_ids
            .iter()
            .filter_map(|c| p.stamped_index(c).map(|i| (c.clone(), p.work[i].id().to_string())))
            .collect();
        let indexes: Vec<usize> = custom_ids.iter().filter_map(|c| p.stamped_index(c)).collect();
        let resume = self.resume.clone();
        let reason = if running {
            let lost = Lost {
                token: &token,
                recorded_at_ms,
                requests: &requests,
                phase: &p.name,
                what: format!(
                    "the reply to the submission of {} requests was lost ({reason})",
                    custom_ids.len()
                ),
            };
            match self.settle(exec, &lost).await {
                Settled::Found(state) => {
                    self.wait_for(
                        exec,
                        p,
                        state.batch_id,
                        custom_ids,
                        state.counts,
                        std::time::Duration::ZERO,
                    );
                    return std::collections::HashMap::new();
                }
                Settled::NotCreated => return std::collections::HashMap::new(),
                Settled::Held { why, .. } => format!("not run: {why} (`{resume}` looks for its batch again)"),
            }
        } else {
            // (The message already says that a resume looks again.)
            exec.emit(Event::Warning {
                message: message.clone(),
            });
            format!("not run: {message}")
        };
        indexes.into_iter().map(|i| (i, reason.clone())).collect()
    }

    /// Runs the requests `indexes` as realtime calls, through the pool, each within what
    /// `--retries` has left after its batch sends (the realtime fallback shares the budget:
    /// a unit sent once in a batch gets one realtime call and `--retries` minus one retries
    /// of it).
    pub(super) async fn run_realtime<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        indexes: Vec<usize>,
    ) {
        let mut by_budget: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
        for i in indexes {
            let sent = self.sent.get(p.work[i].id().as_str()).copied().unwrap_or(0);
            // `again_or_fail` sends nothing again past the budget: `sent <= retries`.
            by_budget.entry(self.retries.saturating_sub(sent)).or_default().push(i);
        }
        for (retries, indexes) in by_budget.into_iter().rev() {
            let mut ws = Vec::with_capacity(indexes.len());
            for i in indexes {
                if std::mem::replace(&mut p.done[i], true) {
                    continue;
                }
                p.announce(exec, i);
                ws.push(p.work[i]);
            }
            if !ws.is_empty() {
                exec.run_realtime(ws, retries).await;
            }
        }
    }
}

/// How many of the requests whose worst cases are `worst` (in the order they are sent) a
/// phase submits with `left` of `--max-cost`: each while it fits, and none after the first
/// that does not. The run ([`BatchApiRun::submit`]) and its dry run both count with this.
pub fn submitted_within(left: f64, worst: impl IntoIterator<Item = f64>) -> usize {
    let (mut taken, mut total) = (0, 0.0);
    for cost in worst {
        if total + cost > left {
            break;
        }
        total += cost;
        taken += 1;
    }
    taken
}
