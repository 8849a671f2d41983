//! Wait, the second step of a phase: the phase's batches (and those of an earlier attempt
//! that hold its requests) are polled on a backing-off schedule, each poll recorded, and each
//! batch collected as it ends. The wait shows done / errored / total, the time waited and the
//! next poll; Ctrl-C or `--deadline` ends it and leaves the batches running at the provider.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::collect::Collected;
use super::host::{Host, Request, Stage};
use super::phase::Phase;
use super::BatchApiRun;
use crate::batch::execution::Pause;
use crate::duration::format_duration;
use crate::exec::Event;
use crate::printer::{Printer, ProgressStyleKind};
use crate::provider::batch_api::{BatchCounts, BatchError, BatchStatus};

/// How often the progress bar's text (time waited, next poll) is refreshed on a terminal.
const BAR_TICK: Duration = Duration::from_secs(1);
/// The longest `rlm cancel` waits between two polls of a batch it canceled.
const CANCEL_POLL_MOST: Duration = Duration::from_secs(15);

impl BatchApiRun {
    /// The batches of an earlier attempt that hold requests of this phase: waited for
    /// (polled at once), their requests not sent again.
    pub(super) fn take_earlier<W: Request>(&mut self, p: &mut Phase<W>) {
        let now = Instant::now();
        let mut kept = Vec::new();
        for e in std::mem::take(&mut self.earlier) {
            // Told by the unit ids recorded with the batch (its custom ids carry the token
            // of its submission).
            let ours: Vec<(String, usize)> = if e.phase == p.name {
                e.requests
                    .iter()
                    .filter_map(|(c, unit)| p.unit_index(unit).map(|i| (c.clone(), i)))
                    .collect()
            } else {
                Vec::new()
            };
            // A request sent under another key than its unit's now (its file was edited
            // since) answers the old text: its answer is not this unit's, which is sent
            // again with the new text. Told by the claims the batch holds, key by key.
            let sent_keys: HashMap<String, String> = if ours.is_empty() {
                HashMap::new()
            } else {
                self.store
                    .batch_claims(&e.batch_id)
                    .unwrap_or_default()
                    .into_iter()
                    .collect()
            };
            let (ours, stale): (Vec<_>, Vec<_>) = ours
                .into_iter()
                .partition(|(c, i)| sent_keys.get(c).is_none_or(|key| *key == p.keys[*i]));
            for (_, i) in &stale {
                self.printer.warn(&format!(
                    "{}: changed since its request was sent in batch {}; that request's answer is not used, and \
                     the new text is sent",
                    p.work[*i].label(),
                    e.batch_id
                ));
            }
            if ours.is_empty() {
                kept.push(e);
                continue;
            }
            for (c, i) in &ours {
                p.in_flight[*i] = true;
                p.track(c, *i);
            }
            // (The stale requests ride along untracked: their results are passed over, and
            // the batch is marked collected once it is read.)
            let ours: Vec<String> = ours.into_iter().chain(stale).map(|(c, _)| c).collect();
            tracing::debug!(batch = %e.batch_id, requests = ours.len(), "waiting for a batch of an earlier attempt");
            p.batches.push(Waiting {
                batch_id: e.batch_id,
                custom_ids: ours,
                polls: 0,
                next_poll: now,
                submitted: now,
                counts: BatchCounts::default(),
                cancel_requested: e.cancel_requested,
                owner: None,
            });
        }
        self.earlier = kept;
    }

    /// Waits for the phase's batches, collecting each as it ends. Returns the requests to
    /// send again (errored or expired, within the retry budget), or `Stopped` when the wait
    /// ended early (Ctrl-C, `--deadline`, a refused key, an answer that could not be kept).
    pub(super) async fn wait<W: Request, H: Host<W>>(&mut self, exec: &mut H, p: &mut Phase<W>) -> Waited {
        let started = Instant::now();
        let mut display = WaitDisplay::new(&self.printer, started, self.wait_line);
        let mut retry = Vec::new();
        // `rlm cancel` waits for its canceled batches on a bound of its own (the run's
        // `--deadline` does not apply to it).
        let give_up = self.cancel.then(|| started + self.cancel_wait);
        while !p.batches.is_empty() {
            let next = p.batches.iter().map(|b| b.next_poll).min().unwrap_or_else(Instant::now);
            display.show(p, next);
            // The display is refreshed between polls (the bar's clock every second, a line
            // a minute without a terminal), however far apart the polls are.
            let wake = display.next_refresh().map_or(next, |at| at.min(next));
            let wake = give_up.map_or(wake, |at| at.min(wake));
            match exec.pause(wake).await {
                Pause::Elapsed if give_up.is_some_and(|at| Instant::now() >= at) => {
                    self.leave(exec, p, Left::CancelWait);
                    return Waited::Stopped;
                }
                Pause::Elapsed => {}
                Pause::Interrupted => {
                    self.leave(exec, p, Left::Interrupted);
                    return Waited::Stopped;
                }
                Pause::DeadlinePassed => {
                    self.leave(exec, p, Left::Deadline);
                    return Waited::Stopped;
                }
            }
            if Instant::now() < next {
                continue;
            }
            let now = Instant::now();
            let mut i = 0;
            while i < p.batches.len() {
                if p.batches[i].next_poll > now {
                    i += 1;
                    continue;
                }
                let polled = self.api.poll(&p.batches[i].batch_id).await;
                match polled {
                    Ok(state) => {
                        let by = p.batches[i].recorded_by(&self.run).clone();
                        self.store_write(|s, _| s.record_batch_poll(&by, &state));
                        exec.emit(Event::BatchPolled {
                            batch_id: state.batch_id.clone(),
                            status: state.status,
                            counts: state.counts,
                        });
                        let b = &mut p.batches[i];
                        b.counts = state.counts;
                        if state.has_ended() {
                            let b = p.batches.remove(i);
                            display.ended(&b.batch_id, state.status);
                            let collected = self.collect(exec, p, b, state, &mut retry).await;
                            // The batch's results file and replies are freed.
                            crate::memory::release_free();
                            if collected == Collected::Stopped {
                                self.leave(exec, p, Left::Stopped);
                                return Waited::Stopped;
                            }
                            continue;
                        }
                        b.polls += 1;
                        let delay = self.schedule.delay(b.polls);
                        // A canceled batch ends soon: `rlm cancel` polls it often.
                        let delay = if self.cancel {
                            delay.min(CANCEL_POLL_MOST)
                        } else {
                            delay
                        };
                        b.next_poll = now + delay;
                    }
                    Err(e) if e.is_retryable() => {
                        tracing::debug!(batch = %p.batches[i].batch_id, "poll failed, trying again later: {e}");
                        let b = &mut p.batches[i];
                        b.polls += 1;
                        b.next_poll = now + e.retry_after().unwrap_or_else(|| self.schedule.delay(b.polls));
                    }
                    Err(e @ BatchError::UnknownBatch { .. }) if self.forget => {
                        let b = p.batches.remove(i);
                        self.give_up(exec, &b.batch_id, &b.custom_ids, &e.to_string());
                        for c in &b.custom_ids {
                            if let Some(k) = p.sent_index(c) {
                                self.cancelled(
                                    exec,
                                    p,
                                    k,
                                    "not run: its batch was given up (rlm cancel --forget); rlm resume sends it",
                                );
                            }
                        }
                        continue;
                    }
                    Err(e @ BatchError::UnknownBatch { .. }) => {
                        // Deleted, or another key's: its requests may be running, and paid
                        // for, under that key. They are never sent again unasked.
                        self.unknown(exec, &e);
                        self.leave(exec, p, Left::Stopped);
                        return Waited::Stopped;
                    }
                    Err(e) => {
                        exec.halt(format!("--batch-api: {e}"));
                        self.leave(exec, p, Left::Stopped);
                        return Waited::Stopped;
                    }
                }
                i += 1;
            }
        }
        Waited::Done(retry)
    }

    /// A recorded batch the server does not know: the run stops, naming the batch and the
    /// server, and says how to give it up.
    fn unknown(&mut self, exec: &mut impl Stage, e: &BatchError) {
        self.refused = true;
        let (run, resume) = (&self.run, &self.resume);
        let give_up = if self.forgettable {
            format!(
                ", or give it up with `rlm cancel {run} --forget` (then `{resume}` sends them again, and pays again)"
            )
        } else {
            String::new()
        };
        exec.halt(format!(
            "--batch-api: {e}. rlm does not send its requests again (they may be running, and paid for, under that \
             key): use the API key it was submitted with{give_up}"
        ));
    }

    /// The wait ended early: the batches keep running at the provider, and the run says
    /// how to collect them.
    fn leave<W: Request, H: Host<W>>(&mut self, exec: &mut H, p: &mut Phase<W>, why: Left) {
        let (run, resume) = (self.run.clone(), self.resume.clone());
        let keeps =
            format!("the batch keeps running at the provider; `{resume}` collects it, `rlm cancel {run}` cancels it");
        match why {
            Left::Interrupted => self.printer.important(&keeps),
            Left::Deadline => self
                .printer
                .important(&format!("rlm: the --deadline passed while waiting: {keeps}")),
            Left::Stopped if !p.batches.is_empty() => self.printer.important(&format!(
                "rlm: the batches not collected stay at the provider: `{resume}` collects them, `rlm cancel {run}` \
                 cancels them"
            )),
            Left::Stopped => {}
            Left::CancelWait => self.printer.important(&format!(
                "rlm: the canceled batches have not ended within {}: `rlm cancel {run}` again, or `{resume}`, \
                 collects what they had finished",
                format_duration(u64::try_from(self.cancel_wait.as_millis()).unwrap_or(u64::MAX))
            )),
        }
        let batches = std::mem::take(&mut p.batches);
        for b in batches {
            let reason = format!(
                "waiting in batch {} at the provider: `{resume}` collects it",
                b.batch_id
            );
            for c in &b.custom_ids {
                if let Some(i) = p.sent_index(c) {
                    self.cancelled(exec, p, i, &reason);
                }
            }
        }
    }
}

/// A batch being waited for.
pub(super) struct Waiting {
    pub(super) batch_id: String,
    /// The custom ids of this phase's requests in it.
    pub(super) custom_ids: Vec<String>,
    pub(super) polls: u32,
    pub(super) next_poll: Instant,
    /// When this attempt started waiting for it.
    pub(super) submitted: Instant,
    /// At the last poll.
    pub(super) counts: BatchCounts,
    pub(super) cancel_requested: bool,
    /// Another run's batch, collected here because its rlm is gone (see [`super::claims`]):
    /// that run, and whether this run collects every request in it (then it is marked
    /// collected for that run too).
    pub(super) owner: Option<(crate::store::RunId, bool)>,
}

impl Waiting {
    /// The run whose store records the batch: this one's, or its dead owner's.
    pub(super) fn recorded_by<'r>(&'r self, run: &'r crate::store::RunId) -> &'r crate::store::RunId {
        self.owner.as_ref().map_or(run, |(owner, _)| owner)
    }
}

/// How a wait ended.
pub(super) enum Waited {
    /// Every batch was collected; these requests are to be sent again.
    Done(Vec<usize>),
    Stopped,
}

/// Why the wait was left.
#[derive(Debug, Clone, Copy)]
enum Left {
    Interrupted,
    Deadline,
    Stopped,
    /// `rlm cancel`'s canceled batches did not end within its own wait.
    CancelWait,
}

/// What the wait shows: a bar on a terminal (its text refreshed every [`BAR_TICK`]), a line
/// every `line_every` (a minute) without one.
struct WaitDisplay {
    printer: Printer,
    kind: ProgressStyleKind,
    started: Instant,
    line_every: Duration,
    last_line: Option<Instant>,
}

impl WaitDisplay {
    fn new(printer: &Printer, started: Instant, line_every: Duration) -> Self {
        WaitDisplay {
            printer: printer.clone(),
            kind: printer.progress_kind(),
            started,
            line_every,
            last_line: None,
        }
    }

    /// When the display is next due to change, if it ever changes between polls.
    fn next_refresh(&self) -> Option<Instant> {
        match self.kind {
            ProgressStyleKind::Bar => Some(Instant::now() + BAR_TICK),
            ProgressStyleKind::Lines => Some(self.last_line.map_or_else(Instant::now, |at| at + self.line_every)),
            ProgressStyleKind::Off => None,
        }
    }

    fn show<W: Request>(&mut self, p: &Phase<W>, next: Instant) {
        let (mut done, mut errored, mut total) = (0, 0, 0);
        for b in &p.batches {
            let in_batch = b.custom_ids.len() as u64;
            total += in_batch;
            done += b.counts.done().min(in_batch);
            errored += b.counts.errored + b.counts.expired;
        }
        let now = Instant::now();
        let waited = format_duration(u64::try_from(now.duration_since(self.started).as_millis()).unwrap_or(0));
        let next_in = format_duration(u64::try_from(next.saturating_duration_since(now).as_millis()).unwrap_or(0));
        let batches = match p.batches.len() {
            1 => "1 batch".to_string(),
            n => format!("{n} batches"),
        };
        match self.kind {
            ProgressStyleKind::Bar => self.printer.update_bar(
                done,
                total,
                format!("{batches} at the provider · {errored} errored · waited {waited} · next poll in {next_in}"),
            ),
            ProgressStyleKind::Lines => {
                if self
                    .last_line
                    .is_some_and(|at| now.duration_since(at) < self.line_every)
                {
                    return;
                }
                self.last_line = Some(now);
                self.printer.progress(&format!(
                    "waiting for {batches} at the provider: {done}/{total} done, {errored} errored · waited {waited} \
                     · next poll in {next_in}"
                ));
            }
            ProgressStyleKind::Off => {}
        }
    }

    /// A batch has ended: its results are read now.
    fn ended(&self, batch_id: &str, status: BatchStatus) {
        if self.kind == ProgressStyleKind::Lines {
            let waited = format_duration(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0));
            self.printer.progress(&format!(
                "batch {batch_id} is {status} after {waited} of waiting: collecting its results"
            ));
        }
    }
}
