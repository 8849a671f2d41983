//! `rlm job --batch-api`: a map phase's worker calls through the provider's batch API, at
//! half the price. Each batch of items is one request of a provider batch.
//!
//! The job's provider batches live in the run store, as a batch run's do (the job is a run
//! of kind `job` there): each request's cache key is claimed before it is submitted, the
//! intent is written before the create request goes out ([`RunRecorder`]), the batch with
//! its custom ids once it exists, each poll as it is made (`rlm status` shows it), and the
//! batch is marked collected — its claims let go — once every result is kept. So
//! - a crash, Ctrl-C or `--deadline` leaves the batch running at the provider, and `rlm
//!   job resume` polls it again, never submitting those requests twice;
//! - another rlm that needs one of its answers meanwhile (a second job of the same file, a
//!   batch run, realtime or batch) waits for it instead of paying again, and when this
//!   job's rlm is gone, a job that needs its answers collects its batch itself;
//! - a request whose key another run's batch holds is left to the realtime workers, whose
//!   claim ([`crate::batch::key_claim`]) waits for that answer, or fails the batch saying
//!   which run to resume.
//!
//! An answer that comes back is checked like a realtime worker's (the schema and the
//! batch: every id once); an accepted answer is cached, then written as the batch's output
//! file, and counts at the batch price. Requests that errored (when another attempt may
//! succeed) or expired, and those the results leave out, are sent again in a follow-up
//! batch within the job's fault retries, as `rlm batch` sends them, then fail their batch; one that errored for good fails at once, as do
//! the requests of a batch refused whole. A batch refused for the account's enqueued-token
//! limit goes again in smaller batches once the others have ended.
//! Answers the check rejects are left to the realtime workers, which ask again with the
//! errors appended, under the phase's `retries`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::batches::{BatchDone, BatchJob};
use super::job_dir::read_json_if_whole;
use super::worker::{cached_answer, store, PhaseReply, PriorAnswer, WorkerContext, WorkerEnd, WorkerOutcome};
use crate::batch::key_claim::{claim_for_submission, ForSubmission, CLAIM_CHUNK};
use crate::batch::lost_submission::{Host, Lost, Settle, Settled};
use crate::batch::Pause;
use crate::batch::RunRecorder;
use crate::error::{ProviderFailure, RlmError, StoreFailure};
use crate::exec::{Interrupt, ReplyCheck};
use crate::printer::Printer;
use crate::provider::batch_api::{
    batch_api, custom_id_for, send_again, submit_all_within, token_limit_requeue, unit_part, BatchApi, BatchError,
    BatchItem, BatchState, BatchTimeouts, ItemOutcome, LostSubmission, Results, ResultsEnd, SubmitReport, Submitted,
};
use crate::provider::catalog::PriceTier;
use crate::settings::{BatchApiSettings, BatchFallback, ProviderSettings};
use crate::store::{RunId, TaskStore};

/// What the phase's batch API needs besides its jobs.
pub struct Phase<'a> {
    pub provider: &'a ProviderSettings,
    pub model: &'a str,
    pub settings: &'a BatchApiSettings,
    /// The run store's directory (`.aiwg/rlm`).
    pub rlm_dir: PathBuf,
    /// The phase as the store records its batches: its name, and a rerun's generation
    /// (`classify~2`).
    pub tag: String,
    /// `batches/{phase}/provider-batches[~N].json`, where an older rlm recorded the
    /// phase's batches: still collected, never written.
    pub legacy_record: PathBuf,
    /// Send what is not sent yet (`--batch-api` on); else only collect what was sent.
    pub submit: bool,
    /// The phase's name, as messages say it.
    pub name: &'a str,
    /// The job's id: its run in the store.
    pub run: &'a str,
    /// What `--max-cost` leaves of the job's budget (`None` without one).
    pub budget_left: Option<f64>,
    pub printer: &'a Printer,
}

/// What the batch API did for a phase: the batches it answered (for the dispatcher to
/// count), the rest for the realtime workers, and whether the job must stop now (Ctrl-C or
/// the deadline while waiting: the provider batch keeps running).
pub struct Collected {
    pub answered: Vec<BatchDone>,
    pub rest: Vec<BatchJob>,
    pub stopped: bool,
    /// Requests were left unsent because their batch could cost more than `--max-cost`
    /// leaves: why (the job stops there, resumable with a higher budget).
    pub over_budget: Option<String>,
    /// A batch was canceled while this job waited for it (`rlm cancel`, or at the
    /// provider): why the job stops there, sending nothing in real time (resumable).
    pub canceled: Option<String>,
    /// The results of a batch could not be read now: why (the job stops; `rlm job resume`
    /// reads them, never paying for them again).
    pub unread: Option<String>,
}

/// A batch this phase collects: its own (sent now or by an earlier attempt), or one of a
/// run whose rlm is gone that holds some of its keys.
struct Collecting {
    id: String,
    /// The run that submitted it.
    owner: RunId,
    /// Its requests this phase wants: custom id (as sent) → job.
    requests: HashMap<String, usize>,
    /// Its cancel was asked for before this attempt took it up (`rlm cancel` of the job):
    /// collected first, and what it did not run is sent again.
    canceled_before: bool,
}

/// How an older rlm recorded a phase's batches (`provider-batches.json`).
#[derive(Debug, Default, Deserialize)]
struct LegacyRecord {
    #[serde(default)]
    batches: Vec<LegacyBatch>,
}

#[derive(Debug, Deserialize)]
struct LegacyBatch {
    id: String,
    custom_ids: Vec<String>,
}

/// Whether the phase has provider batches or submissions that an earlier attempt sent and
/// did not collect: they are collected even with `--batch-api` off (they are paid for).
pub fn sent_before(phase: &Phase<'_>) -> bool {
    if phase.legacy_record.is_file() {
        return true;
    }
    let Ok(store) = TaskStore::open(&phase.rlm_dir) else {
        return false;
    };
    let run = RunId::from(phase.run);
    let batches = store.batch_submissions(&run).unwrap_or_default();
    let intents = store.batch_intents(&run).unwrap_or_default();
    batches.iter().any(|b| b.phase == phase.tag && b.collected_at.is_none())
        || intents.iter().any(|i| i.phase == phase.tag)
}

/// The phase's side of the batch API: its store, its client, its jobs and what became of
/// them.
struct PhaseBatches<'p, 'a> {
    phase: &'p Phase<'a>,
    api: Box<dyn BatchApi>,
    store: TaskStore,
    run: RunId,
    /// The first failure to write the store (said once).
    store_failure: Option<String>,
    jobs: Vec<Option<BatchJob>>,
    /// Job by the unit part of its custom id.
    by_part: HashMap<String, usize>,
    batches: Vec<Collecting>,
    /// Jobs in a batch this phase collects.
    collecting: HashSet<usize>,
    /// Batches canceled while this attempt waited for them: the job stops.
    canceled_now: Vec<String>,
    /// Batches whose results could not be read now: why (the job stops; a resume reads them).
    unread: Vec<String>,
    /// Requests of a submission of this attempt whose batch cannot be told yet: held (not
    /// sent, not run; the job stops).
    held_now: usize,
    /// Ctrl-C or the deadline came while a submission was settled or retried.
    stopped: bool,
    /// What `--max-cost` leaves for the phase's submissions, each counted at its worst as it
    /// is sent (`None` without a budget).
    budget_left: Option<f64>,
    /// Jobs whose request errored (when another attempt may succeed) or expired at the
    /// provider, to send again in a follow-up batch.
    again: Vec<usize>,
    /// How often each job's request came back errored or expired in this attempt.
    sends: HashMap<usize, u32>,
    /// Jobs whose batch the provider refused for the account's enqueued-token limit: sent
    /// again, in smaller batches, once the round's other batches have ended.
    requeue: Vec<usize>,
    /// The most requests a batch holds, once one was refused for the enqueued-token limit.
    max_requests: Option<usize>,
}

/// Sends `jobs` that miss the cache through the batch API (or finds the batches an earlier
/// attempt sent), waits for them and collects their answers.
pub async fn collect(
    phase: Phase<'_>,
    workers: &Arc<WorkerContext>,
    jobs: Vec<BatchJob>,
    interrupt: &mut Interrupt,
) -> Result<Collected, RlmError> {
    let started = Instant::now();
    let api = batch_api(&phase.provider.http_config(phase.model), None, BatchTimeouts::default())
        .map_err(|e| RlmError::Usage(format!("--batch-api: {e}")))?;
    let store = TaskStore::open(&phase.rlm_dir).map_err(StoreFailure::BatchApiUnrecorded)?;
    let by_part = jobs
        .iter()
        .enumerate()
        .map(|(i, job)| (custom_id_for(job.request.unit.as_str()), i))
        .collect();
    let mut p = PhaseBatches {
        run: RunId::from(phase.run),
        phase: &phase,
        api,
        store,
        store_failure: None,
        jobs: jobs.into_iter().map(Some).collect(),
        by_part,
        batches: Vec::new(),
        collecting: HashSet::new(),
        canceled_now: Vec::new(),
        unread: Vec::new(),
        held_now: 0,
        stopped: false,
        budget_left: phase.budget_left,
        again: Vec::new(),
        sends: HashMap::new(),
        requeue: Vec::new(),
        max_requests: None,
    };
    let (held, interrupted) = p.settle_intents(interrupt).await;
    if interrupted {
        // Ctrl-C or the deadline while a lost submission was looked for: nothing is sent.
        return Ok(Collected {
            answered: Vec::new(),
            rest: p.jobs.iter_mut().filter_map(Option::take).collect(),
            stopped: true,
            over_budget: None,
            canceled: None,
            unread: None,
        });
    }
    p.take_earlier()?;
    let mut answered = Vec::new();
    // Batches canceled before (`rlm cancel` of the job): what had finished is collected
    // first, and the requests they did not run are candidates again below.
    let (canceled, waiting): (Vec<Collecting>, Vec<Collecting>) = std::mem::take(&mut p.batches)
        .into_iter()
        .partition(|b| b.canceled_before);
    p.batches = waiting;
    for batch in canceled {
        let Some(state) = wait(p.api.as_ref(), &batch.id, &mut p.store, &batch.owner, &phase, interrupt).await? else {
            return Ok(p.left_running(&batch.id, answered));
        };
        p.collect_batch(workers, &batch, &state, (started, false), &mut answered)
            .await?;
        for i in batch.requests.values() {
            p.collecting.remove(i);
        }
    }
    // What those batches did not run is among the candidates below.
    p.again.clear();
    p.requeue.clear();
    let mut rest = Vec::new();
    let mut held_jobs = 0;
    let mut candidates = Vec::new();
    for i in 0..p.jobs.len() {
        if p.collecting.contains(&i) {
            continue;
        }
        let Some(job) = p.jobs[i].as_ref() else { continue };
        let cached = workers.cache_reads && cached_answer(workers, &job.request, job.check.as_ref()).await.is_some();
        let custom_id = custom_id_for(job.request.unit.as_str());
        if held.contains(&custom_id) {
            // In a submission whose batch cannot be told yet: neither sent nor run.
            held_jobs += 1;
            p.jobs[i] = None;
        } else if cached || !phase.submit {
            // The pool serves a cached answer, and makes the calls `--batch-api` off wants.
            rest.extend(p.jobs[i].take());
        } else {
            candidates.push(i);
        }
    }
    // Rounds: what errored (when another attempt may succeed), expired or was left out of
    // the results goes again in a follow-up batch within the fault retries, and what was
    // refused for the enqueued-token limit in smaller ones, as `rlm batch` sends them.
    let mut unsent = 0;
    let mut round = candidates;
    loop {
        let (mine, mut elsewhere) = p.claim(workers, round).await;
        rest.append(&mut elsewhere);
        unsent += p.submit(workers, mine, interrupt).await?;
        if p.stopped {
            // Ctrl-C or the deadline while a submission was settled or sent again: what was
            // submitted keeps running at the provider.
            if !p.batches.is_empty() {
                phase
                    .printer
                    .warn("the provider batches submitted keep running; rlm job resume collects them");
            }
            rest.extend(p.jobs.iter_mut().filter_map(Option::take));
            return Ok(Collected {
                answered,
                rest,
                stopped: true,
                over_budget: None,
                canceled: None,
                unread: None,
            });
        }
        let batches = std::mem::take(&mut p.batches);
        let count = batches.len();
        for (k, batch) in batches.into_iter().enumerate() {
            if batch.requests.is_empty() {
                // Everything it answered is done (kept by an earlier attempt): nothing to wait for.
                if let Err(e) = p.store.record_batch_collected(&batch.owner, &batch.id) {
                    tracing::debug!(batch = %batch.id, "cannot mark a batch collected: {e}");
                }
                continue;
            }
            let Some(state) = wait(p.api.as_ref(), &batch.id, &mut p.store, &batch.owner, &phase, interrupt).await?
            else {
                let mut left = p.left_running(&batch.id, answered);
                left.rest.append(&mut rest);
                return Ok(left);
            };
            let others = k + 1 < count;
            p.collect_batch(workers, &batch, &state, (started, others), &mut answered)
                .await?;
        }
        round = std::mem::take(&mut p.again);
        round.retain(|&i| p.jobs[i].is_some());
        if !round.is_empty() {
            phase.printer.progress(&format!(
                "  {}: {} requests errored or expired at the provider: sent again in a follow-up batch",
                phase.name,
                round.len()
            ));
        }
        round.append(&mut p.requeue);
        round.retain(|&i| p.jobs[i].is_some());
        if round.is_empty() || !phase.submit {
            break;
        }
        for i in &round {
            p.collecting.remove(i);
        }
    }
    if let Err(e) = p.store.release_unsent_claims(&p.run) {
        p.store_failed(&e.to_string());
    }
    rest.extend(p.jobs.iter_mut().filter_map(Option::take));
    let over_budget = (unsent > 0).then(|| {
        format!(
            "--max-cost: {unsent} batches of {} were not submitted, as their provider batch could cost more than \
             what is left of the budget (each counted at its worst: its input, and max_tokens of output, at the \
             batch price); `rlm job resume {} --max-cost USD` with a higher budget sends them",
            phase.name, phase.run
        )
    });
    let unread = (!p.unread.is_empty()).then(|| p.unread.join("; "));
    let canceled = (!p.canceled_now.is_empty()).then(|| {
        format!(
            "provider batch {} of {} was canceled while the job waited for it (rlm cancel, or at the provider): the \
             job stops and sends nothing in real time; `rlm job resume {}` sends what it did not answer",
            p.canceled_now.join(", "),
            phase.name,
            phase.run
        )
    });
    // Held (their submission's batch cannot be told yet), over the budget or canceled: the
    // job stops here, resumable.
    let stopped = held_jobs > 0 || p.held_now > 0 || over_budget.is_some() || canceled.is_some() || unread.is_some();
    Ok(Collected {
        answered,
        rest,
        stopped,
        over_budget,
        canceled,
        unread,
    })
}

impl PhaseBatches<'_, '_> {
    /// Ctrl-C or the deadline while waiting for `batch`: it keeps running at the provider,
    /// and the job stops with what was answered so far.
    fn left_running(&mut self, batch: &str, answered: Vec<BatchDone>) -> Collected {
        self.phase.printer.warn(&format!(
            "the batch keeps running at the provider ({batch}); rlm job resume collects it"
        ));
        Collected {
            answered,
            rest: self.jobs.iter_mut().filter_map(Option::take).collect(),
            stopped: true,
            over_budget: None,
            canceled: None,
            unread: None,
        }
    }

    /// A store write that failed: said once; the answers are safe in the cache either way.
    fn store_failed(&mut self, e: &str) {
        if self.store_failure.is_none() {
            self.phase.printer.warn(&format!(
                "the run store could not record the job's provider batches ({e}); rlm status may not show them"
            ));
            self.store_failure = Some(e.to_string());
        }
    }

    /// The batches earlier attempts sent and did not collect (in the store, or in an older
    /// rlm's record): each is collected for the jobs it answers.
    fn take_earlier(&mut self) -> Result<(), RlmError> {
        let mut earlier: Vec<(String, Vec<String>, bool)> = Vec::new();
        if let Some(legacy) = read_json_if_whole::<LegacyRecord>(&self.phase.legacy_record) {
            earlier.extend(legacy.batches.into_iter().map(|b| (b.id, b.custom_ids, false)));
        }
        for batch in self.store.batch_submissions(&self.run)? {
            if batch.phase != self.phase.tag || batch.collected_at.is_some() {
                continue;
            }
            let requests = self.store.batch_requests(&self.run, &batch.batch_id)?;
            earlier.push((
                batch.batch_id,
                requests.into_iter().map(|r| r.custom_id).collect(),
                batch.cancel_requested_at.is_some(),
            ));
        }
        for (id, custom_ids, canceled_before) in earlier {
            self.track(id, &custom_ids, canceled_before);
        }
        Ok(())
    }

    /// Claims the keys of `candidates` for this job's next submission. Returns the jobs
    /// this phase may submit, and the jobs left to the realtime workers: a key another live
    /// rlm holds (a realtime call in flight, or its batch) is waited for there, and so is one
    /// whose holder's batch cannot be collected here. A key in the batch of a run whose rlm
    /// is gone, at this server, is collected here: that batch joins the phase's.
    async fn claim(&mut self, workers: &Arc<WorkerContext>, candidates: Vec<usize>) -> (Vec<usize>, Vec<BatchJob>) {
        if !workers.cache_reads {
            // `--no-cache`: this job wants its own answers.
            return (candidates, Vec::new());
        }
        let mut mine = Vec::new();
        let mut elsewhere = Vec::new();
        let mut orphaned: HashMap<String, (RunId, Vec<usize>)> = HashMap::new();
        for chunk in candidates.chunks(CLAIM_CHUNK) {
            let (present, keys): (Vec<usize>, Vec<String>) = chunk
                .iter()
                .filter_map(|&i| Some((i, self.jobs[i].as_ref()?.request.key.0.clone())))
                .unzip();
            let mut failed = None;
            let verdicts = claim_for_submission(
                &mut self.store,
                &self.run,
                self.api.server(),
                (&workers.cache, workers.max_tokens),
                &keys,
                &mut |e| failed = Some(e),
            )
            .await;
            if let Some(e) = failed {
                self.store_failed(&e.to_string());
            }
            let mut let_go = Vec::new();
            for (i, verdict) in present.into_iter().zip(verdicts) {
                let Some(job) = self.jobs[i].as_ref() else { continue };
                // The realtime workers wait for a call in flight, and serve what was
                // answered meanwhile; a cached answer this phase rejects is asked for again.
                let served = match &verdict {
                    ForSubmission::Running => true,
                    ForSubmission::Cached(entry) => PhaseReply::new(job.check.as_ref(), &job.request)
                        .check(&entry.text)
                        .is_ok(),
                    _ => false,
                };
                match verdict {
                    _ if served => {
                        let_go.push(job.request.key.0.clone());
                        elsewhere.extend(self.jobs[i].take());
                    }
                    ForSubmission::Held(holder) => match holder.batch_id {
                        Some(batch) if !holder.alive && holder.server == self.api.server() => {
                            orphaned
                                .entry(batch)
                                .or_insert_with(|| (holder.run, Vec::new()))
                                .1
                                .push(i);
                        }
                        _ => elsewhere.extend(self.jobs[i].take()),
                    },
                    _ => mine.push(i),
                }
            }
            if !let_go.is_empty() {
                let refs: Vec<&str> = let_go.iter().map(String::as_str).collect();
                if let Err(e) = self.store.release_claims(&self.run, &refs) {
                    self.store_failed(&e.to_string());
                }
            }
        }
        for (batch, (owner, wanted)) in orphaned {
            self.collect_for(batch, owner, wanted, &mut elsewhere);
        }
        (mine, elsewhere)
    }

    /// Batch `batch` of run `owner`, whose rlm is gone, holds the keys of `wanted`: it is
    /// collected here as this job's own for them (its claims tell which custom ids they
    /// are), so they are paid for there, never again here. A job whose claim names no custom
    /// id goes to the realtime workers, whose claim says which run to resume.
    fn collect_for(&mut self, batch: String, owner: RunId, wanted: Vec<usize>, elsewhere: &mut Vec<BatchJob>) {
        let claims = self.store.batch_claims(&batch).unwrap_or_default();
        let by_key: HashMap<String, usize> = wanted
            .iter()
            .filter_map(|&i| Some((self.jobs[i].as_ref()?.request.key.0.clone(), i)))
            .collect();
        let requests: HashMap<String, usize> = claims
            .into_iter()
            .filter_map(|(custom_id, key)| Some((custom_id, *by_key.get(&key)?)))
            .collect();
        let found: HashSet<usize> = requests.values().copied().collect();
        for &i in &wanted {
            if !found.contains(&i) {
                elsewhere.extend(self.jobs[i].take());
            }
        }
        if requests.is_empty() {
            return;
        }
        self.phase.printer.warn(&format!(
            "{} requests of {} are in batch {batch} of run {owner}, whose rlm is gone: this job collects it, so they \
             are not paid again",
            requests.len(),
            self.phase.name
        ));
        self.collecting.extend(found);
        self.batches.push(Collecting {
            id: batch,
            owner,
            requests,
            canceled_before: false,
        });
    }

    /// Submits the jobs `mine` (their keys claimed) in as many provider batches as the limits
    /// need, each recorded before anything waits for it; under `--max-cost`, only what fits
    /// the budget at its worst. Returns how many were not sent for the budget.
    async fn submit(
        &mut self,
        workers: &Arc<WorkerContext>,
        mine: Vec<usize>,
        interrupt: &mut Interrupt,
    ) -> Result<usize, RlmError> {
        let mut budget_left = self.budget_left;
        let mut pending = Vec::new();
        let mut unsent = 0;
        for i in mine {
            let Some(job) = self.jobs[i].as_ref() else { continue };
            if let Some(left) = budget_left.as_mut() {
                // A batch is paid for whole: only what fits at its worst is sent.
                let request = job.request.completion_request(workers.max_tokens);
                let worst = workers.model.worst_batch_cost(
                    (request.system.len() + request.shared.len() + request.user.len()) as u64,
                    request.max_tokens,
                );
                if unsent > 0 || worst > *left {
                    unsent += 1;
                    self.jobs[i] = None;
                    continue;
                }
                *left -= worst;
            }
            pending.push(i);
        }
        self.budget_left = budget_left;
        // A create request that fails is handled as `rlm batch` handles it: one that created
        // nothing is sent again within `--retries`; one whose reply was lost is settled with
        // the provider's listing (its batch found and collected, or held).
        let mut attempt = 0;
        while !pending.is_empty() {
            let items: Vec<BatchItem> = pending
                .iter()
                .filter_map(|&i| {
                    let job = self.jobs[i].as_ref()?;
                    Some(BatchItem {
                        custom_id: custom_id_for(job.request.unit.as_str()),
                        request: job.request.completion_request(workers.max_tokens),
                    })
                })
                .collect();
            let (report, recorded) = self.submit_items(items).await;
            for s in recorded {
                self.phase.printer.progress(&format!(
                    "  submitted provider batch {} ({} requests); rlm job resume collects it if this rlm stops",
                    s.batch_id,
                    s.custom_ids.len()
                ));
                self.track(s.batch_id, &s.custom_ids, false);
            }
            match report {
                Ok(report) => {
                    for (custom_id, e) in report.rejected {
                        self.phase.printer.warn(&format!(
                            "{custom_id}: not sent through the batch API ({e}): sent in real time"
                        ));
                    }
                    break;
                }
                Err(BatchError::Unreconciled(lost)) => {
                    // Settled: found, held, or shown not created (then sent again, as an
                    // attempt; past `--retries` its requests are called in real time).
                    attempt += 1;
                    if self.settle_lost(*lost, interrupt).await {
                        break;
                    }
                    if attempt > workers.call.policy.retries {
                        let left = pending
                            .iter()
                            .filter(|&&i| self.jobs[i].is_some() && !self.collecting.contains(&i))
                            .count();
                        if left > 0 {
                            self.phase.printer.warn(&format!(
                                "{left} requests of {} were not taken by the batch API after {attempt} submissions \
                                 (--retries): they are sent in real time",
                                self.phase.name
                            ));
                        }
                        break;
                    }
                }
                Err(e) if e.is_retryable() && attempt < workers.call.policy.retries => {
                    attempt += 1;
                    let wait = e.retry_after().unwrap_or_else(|| workers.call.policy.backoff(attempt));
                    self.phase.printer.warn(&format!(
                        "the provider batch of {} could not be created ({e}); trying again in {}s",
                        self.phase.name,
                        wait.as_secs_f64().ceil()
                    ));
                    let mut host = JobHost {
                        printer: self.phase.printer,
                        interrupt: &mut *interrupt,
                        store_failure: &mut self.store_failure,
                        stopped: false,
                    };
                    if host.pause(tokio::time::Instant::now() + wait).await != Pause::Elapsed {
                        self.stopped = true;
                        break;
                    }
                }
                Err(BatchError::Unsupported { server, path, status }) => {
                    // Nothing was sent. A job takes no `--batch-api auto`: it says its own way on.
                    return Err(RlmError::Usage(format!(
                        "--batch-api: {server} has no batch API ({status} on {path}); nothing was sent: `rlm job \
                         resume {} --batch-api off` makes realtime calls",
                        self.run
                    )));
                }
                Err(e) => return Err(ProviderFailure::BatchApi(e).into()),
            }
            pending.retain(|&i| self.jobs[i].is_some() && !self.collecting.contains(&i));
        }
        Ok(unsent)
    }

    /// Submits `items` through the run's recorder (intent first, then each batch):
    /// what the submission came to, and the batches it created.
    async fn submit_items(&mut self, items: Vec<BatchItem>) -> (Result<SubmitReport, BatchError>, Vec<Submitted>) {
        let (jobs, by_part) = (&self.jobs, &self.by_part);
        let request = |c: &str| {
            let job = jobs[*by_part.get(unit_part(c))?].as_ref()?;
            Some((job.request.unit.to_string(), job.request.key.0.clone()))
        };
        let mut submissions = 0;
        let mut failure = None;
        let mut recorder = RunRecorder {
            store: &mut self.store,
            run: &self.run,
            failure: &mut failure,
            provider: self.api.kind().name(),
            server: self.api.server().to_string(),
            phase: &self.phase.tag,
            request: &request,
            submissions: &mut submissions,
            recorded: Vec::new(),
            notices: Vec::new(),
        };
        let report = Box::pin(submit_all_within(
            self.api.as_ref(),
            items,
            self.max_requests,
            &mut recorder,
        ))
        .await;
        let RunRecorder { recorded, notices, .. } = recorder;
        for message in notices {
            self.phase.printer.warn(&message);
        }
        if let Some(e) = failure {
            self.store_failed(&e);
        }
        (report, recorded)
    }

    /// This job's batch `id`, holding the requests `custom_ids` (as sent), is this phase's
    /// to collect, for the jobs it still wants.
    fn track(&mut self, id: String, custom_ids: &[String], canceled_before: bool) {
        let requests: HashMap<String, usize> = custom_ids
            .iter()
            .filter_map(|c| {
                let i = *self.by_part.get(unit_part(c))?;
                self.jobs[i].is_some().then(|| (c.clone(), i))
            })
            .collect();
        self.collecting.extend(requests.values().copied());
        self.batches.push(Collecting {
            id,
            owner: self.run.clone(),
            requests,
            canceled_before,
        });
    }

    /// A submission of this attempt whose reply was lost and whose batch the listing could
    /// not tell at once, settled the one way ([`crate::batch::lost_submission`]): found, its
    /// batch is collected with the phase's; not created, its requests go again; else they
    /// are held (the job stops, and `rlm job resume` looks again). True when Ctrl-C or the
    /// deadline came while it waited.
    async fn settle_lost(&mut self, lost: LostSubmission, interrupt: &mut Interrupt) -> bool {
        let requests: Vec<(String, String)> = lost
            .custom_ids
            .iter()
            .filter_map(|c| {
                let job = self.jobs[*self.by_part.get(unit_part(c))?].as_ref()?;
                Some((c.clone(), job.request.unit.to_string()))
            })
            .collect();
        let mut host = JobHost {
            printer: self.phase.printer,
            interrupt,
            store_failure: &mut self.store_failure,
            stopped: false,
        };
        let what = format!(
            "the reply to the submission of {} requests was lost ({})",
            lost.custom_ids.len(),
            lost.reason
        );
        let lost_now = Lost {
            token: &lost.token,
            recorded_at_ms: lost.recorded_at_ms,
            requests: &requests,
            phase: &self.phase.tag,
            what,
        };
        let settled = settle(
            self.api.as_ref(),
            &mut self.store,
            &self.run,
            self.phase,
            &mut host,
            &lost_now,
        )
        .await;
        let stopped = host.stopped;
        match settled {
            Settled::Found(state) => self.track(state.batch_id, &lost.custom_ids, false),
            Settled::NotCreated => {}
            Settled::Held { why, .. } => {
                host.say(format!(
                    "{why}; its requests are not sent again (that could pay twice): `rlm job resume {}` looks again",
                    self.run
                ));
                for c in &lost.custom_ids {
                    if let Some(&i) = self.by_part.get(unit_part(c)) {
                        if self.jobs[i].take().is_some() {
                            self.held_now += 1;
                        }
                    }
                }
            }
        }
        self.stopped |= stopped;
        stopped
    }

    /// Reads the results of `batch` (ended, as `state`): each accepted answer cached and
    /// counted at the batch price; a rejected one kept on its job as a paid answer to ask
    /// again with its errors. The batch is marked collected (its claims let go) once every
    /// result is kept.
    async fn collect_batch(
        &mut self,
        workers: &Arc<WorkerContext>,
        batch: &Collecting,
        state: &BatchState,
        (started, others_pending): (Instant, bool),
        answered: &mut Vec<BatchDone>,
    ) -> Result<(), RlmError> {
        let wanted: Vec<usize> = batch
            .requests
            .values()
            .copied()
            .filter(|&i| self.jobs[i].is_some())
            .collect();
        if state.over_token_limit && (wanted.len() > 1 || others_pending) {
            // Refused for the account's enqueued-token limit, as `rlm batch` settles it:
            // again, in smaller batches, once the other batches have ended.
            let half = (wanted.len() / 2).max(1);
            self.max_requests = Some(self.max_requests.map_or(half, |n| n.min(half)));
            self.phase
                .printer
                .warn(&token_limit_requeue(&batch.id, self.api.server(), wanted.len(), half));
            self.requeue.extend(wanted);
            if let Err(e) = self.store.record_batch_collected(&batch.owner, &batch.id) {
                self.store_failed(&e.to_string());
            }
            return Ok(());
        }
        let mut results = Results::new(state);
        // The jobs the results mention; `None` once the reading ended early.
        let mut seen = Some(HashSet::new());
        while let Some(item) = results.next(self.api.as_ref()).await {
            let item = match item {
                Ok(item) => item,
                Err(ResultsEnd::Refused(reason)) => {
                    seen = None;
                    // Nothing of it ran (not billed); its input did not validate, and would
                    // not again: its batches fail, as `rlm batch` fails its units.
                    for &i in &wanted {
                        self.fail_job(
                            i,
                            format!("the provider refused batch {}: {reason}", batch.id),
                            started,
                            answered,
                        );
                    }
                    break;
                }
                Err(ResultsEnd::Unread(e)) => {
                    // At the provider, paid for: a resume reads them. Its requests are not
                    // asked again here, and the batch is not marked collected.
                    for i in batch.requests.values() {
                        self.jobs[*i] = None;
                    }
                    self.unread.push(format!(
                        "the results of provider batch {} cannot be read now ({e}): `rlm job resume {}` reads them \
                         later",
                        batch.id, self.phase.run
                    ));
                    return Ok(());
                }
            };
            let Some(&i) = batch.requests.get(&item.custom_id) else {
                continue;
            };
            if let Some(seen) = seen.as_mut() {
                seen.insert(i);
            }
            let reply = match &item.outcome {
                ItemOutcome::Succeeded(reply) => reply,
                ItemOutcome::Canceled if !batch.canceled_before => {
                    // Canceled while this job waited: it stops, and pays nothing more.
                    if !self.canceled_now.contains(&batch.id) {
                        self.canceled_now.push(batch.id.clone());
                    }
                    continue;
                }
                ItemOutcome::Errored { reason, retryable } => {
                    let why = format!("errored at the provider: {reason}");
                    self.again_or_fail(workers, i, why, *retryable, started, answered);
                    continue;
                }
                ItemOutcome::Expired => {
                    let why = "expired at the provider (not run within 24 hours)".to_string();
                    self.again_or_fail(workers, i, why, true, started, answered);
                    continue;
                }
                // Canceled before, by `rlm cancel`: a candidate again.
                ItemOutcome::Canceled => continue,
            };
            let Some(job) = self.jobs[i].as_mut() else { continue };
            let request = job.request.completion_request(workers.max_tokens);
            // Paid at the batch price, whatever the answer is worth.
            let usage = reply.usage();
            let cost_usd = workers.model.cost_at(usage, PriceTier::Batch);
            let verdict = match reply.completion(&request) {
                Err(reason) => Err((
                    String::new(),
                    vec![format!("the batch result could not be read: {reason}")],
                )),
                Ok(c) => PhaseReply::new(job.check.as_ref(), &job.request)
                    .check(&c.text)
                    .map_err(|errors| (c.text, errors)),
            };
            let accepted = match verdict {
                Ok(accepted) => accepted,
                Err((text, errors)) => {
                    // Rejected: counted, and asked again in real time with the errors.
                    job.request.prior = Some(PriorAnswer {
                        text,
                        usage,
                        cost_usd,
                        errors,
                    });
                    continue;
                }
            };
            let Some(job) = self.jobs[i].take() else { continue };
            let write_error = store(workers, &job.request, &accepted, usage).await;
            answered.push(BatchDone::new(
                &job,
                WorkerOutcome {
                    usage,
                    cost_usd,
                    calls: 1,
                    duration_ms: started.elapsed().as_millis() as u64,
                    write_error,
                    ..WorkerOutcome::ended(WorkerEnd::Accepted(accepted))
                },
            ));
        }
        // A request the results do not mention has no answer: it goes again, said (the
        // provider may count it as succeeded), as `rlm batch` sends it. Not so for a batch
        // that was canceled: what it did not run is not run.
        let canceled = batch.canceled_before || self.canceled_now.contains(&batch.id);
        if let Some(seen) = seen.filter(|_| !canceled) {
            let missing: Vec<usize> = wanted.into_iter().filter(|i| !seen.contains(i)).collect();
            if !missing.is_empty() {
                self.phase.printer.warn(&format!(
                    "the results of batch {} have no entry for {} of its requests (the provider counts {} \
                     succeeded): they are sent again, within the job's fault retries",
                    batch.id,
                    missing.len(),
                    state.counts.succeeded
                ));
            }
            for i in missing {
                let why = "the batch's results have no entry for it".to_string();
                self.again_or_fail(workers, i, why, true, started, answered);
            }
        }
        if let Err(e) = self.store.record_batch_collected(&batch.owner, &batch.id) {
            self.store_failed(&e.to_string());
        }
        Ok(())
    }

    /// Job `i`'s request came back errored or expired (or not at all), settled as `rlm batch`
    /// settles it: sent again in a follow-up batch while its sends are within the job's fault
    /// retries (with the realtime fallback, left to the realtime workers instead), else its
    /// batch fails; a request that errored for good (an invalid request) fails at once. The
    /// provider bills none of these.
    fn again_or_fail(
        &mut self,
        workers: &WorkerContext,
        i: usize,
        why: String,
        retryable: bool,
        started: Instant,
        answered: &mut Vec<BatchDone>,
    ) {
        let sent = self.sends.entry(i).or_insert(0);
        *sent += 1;
        let sent = *sent;
        let reason = if !retryable {
            why
        } else if self.phase.settings.fallback == BatchFallback::Realtime {
            return;
        } else {
            match send_again(sent, workers.call.policy.retries, &why) {
                Ok(()) => {
                    self.again.push(i);
                    return;
                }
                Err(reason) => reason,
            }
        };
        self.fail_job(i, reason, started, answered);
    }

    /// Job `i`'s batch fails for `reason`, with nothing paid.
    fn fail_job(&mut self, i: usize, reason: String, started: Instant, answered: &mut Vec<BatchDone>) {
        let Some(job) = self.jobs[i].take() else { return };
        answered.push(BatchDone::new(
            &job,
            WorkerOutcome {
                duration_ms: started.elapsed().as_millis() as u64,
                ..WorkerOutcome::ended(WorkerEnd::Failed { reason })
            },
        ));
    }

    /// Settles each submission an earlier attempt sent without its reply (the one way, see
    /// [`crate::batch::lost_submission`]): found, it is recorded, then collected with the
    /// phase's other earlier batches; shown never created, its requests go again. Returns the
    /// custom ids still held (their batch cannot be told yet: not sent, not run; the next
    /// resume looks again), and whether Ctrl-C or the deadline came while it waited.
    async fn settle_intents(&mut self, interrupt: &mut Interrupt) -> (HashSet<String>, bool) {
        let mut held = HashSet::new();
        let intents = match self.store.batch_intents(&self.run) {
            Ok(intents) => intents,
            Err(e) => {
                self.store_failed(&e.to_string());
                Vec::new()
            }
        };
        let mut host = JobHost {
            printer: self.phase.printer,
            interrupt,
            store_failure: &mut self.store_failure,
            stopped: false,
        };
        for intent in intents.into_iter().filter(|i| i.phase == self.phase.tag) {
            let requests = self
                .store
                .batch_intent_requests(&self.run, &intent.token)
                .unwrap_or_default();
            let held_ids = requests.iter().map(|(c, _)| unit_part(c).to_string());
            if host.stopped {
                // Not looked at after Ctrl-C: held, for the next resume.
                held.extend(held_ids);
                continue;
            }
            let lost = Lost {
                token: &intent.token,
                recorded_at_ms: intent.recorded_at.as_millis(),
                requests: &requests,
                phase: &self.phase.tag,
                what: format!(
                    "the reply to submission {} ({} requests, sent by an earlier attempt) was never recorded",
                    intent.token, intent.request_count
                ),
            };
            let settled = settle(
                self.api.as_ref(),
                &mut self.store,
                &self.run,
                self.phase,
                &mut host,
                &lost,
            )
            .await;
            if let Settled::Held { why, .. } = settled {
                host.say(format!(
                    "{why}; its requests are not sent again (that could pay twice): `rlm job resume {}` looks again",
                    self.run
                ));
                held.extend(held_ids);
            }
        }
        (held, host.stopped)
    }
}

/// Settles `lost` the one way ([`crate::batch::lost_submission`]), waiting for a candidate on
/// the phase's poll schedule.
async fn settle(
    api: &dyn BatchApi,
    store: &mut TaskStore,
    run: &RunId,
    phase: &Phase<'_>,
    host: &mut JobHost<'_>,
    lost: &Lost<'_>,
) -> Settled {
    Settle {
        api,
        store,
        run,
        schedule: &phase.settings.poll,
        wait: true,
    }
    .settle(host, lost)
    .await
}

/// A job phase's side of a settle: its warnings on stderr, its waits under its Ctrl-C and
/// deadline.
struct JobHost<'a> {
    printer: &'a Printer,
    interrupt: &'a mut Interrupt,
    store_failure: &'a mut Option<String>,
    /// Ctrl-C or the deadline came while waiting.
    stopped: bool,
}

impl Host for JobHost<'_> {
    fn say(&mut self, message: String) {
        self.printer.warn(&message);
    }

    fn store_failed(&mut self, e: &crate::store::StoreError) {
        if self.store_failure.is_none() {
            self.printer.warn(&format!(
                "the run store could not record the job's provider batches ({e}); rlm status may not show them"
            ));
            *self.store_failure = Some(e.to_string());
        }
    }

    async fn pause(&mut self, until: tokio::time::Instant) -> Pause {
        if self.stopped {
            return Pause::Interrupted;
        }
        tokio::select! {
            biased;
            () = self.interrupt.recv() => {
                self.stopped = true;
                if self.interrupt.deadline_passed { Pause::DeadlinePassed } else { Pause::Interrupted }
            }
            () = tokio::time::sleep_until(until) => Pause::Elapsed,
        }
    }
}

/// Polls `batch_id` until it has ended, recording each poll in the store under its run
/// `owner` (`rlm status` shows it): its state, or `None` when Ctrl-C or the deadline came
/// first. Polls back off as the settings say; a poll that failed for a fault that may pass
/// is made again (after the provider's `retry-after`, when it names one).
async fn wait(
    api: &dyn BatchApi,
    batch_id: &str,
    store: &mut TaskStore,
    owner: &RunId,
    phase: &Phase<'_>,
    interrupt: &mut Interrupt,
) -> Result<Option<BatchState>, RlmError> {
    let (settings, printer) = (phase.settings, phase.printer);
    let started = Instant::now();
    let mut polls = 0u32;
    let mut last_said = Instant::now();
    loop {
        let mut delay = settings.poll.delay(polls);
        match api.poll(batch_id).await {
            Ok(state) => {
                if let Err(e) = store.record_batch_poll(owner, &state) {
                    tracing::debug!(batch = %state.batch_id, "the run store could not record a poll: {e}");
                }
                if state.has_ended() {
                    return Ok(Some(state));
                }
                if polls == 0 || last_said.elapsed() >= Duration::from_secs(60) {
                    printer.progress(&format!(
                        "  waiting for provider batch {batch_id}: {}/{} done, {} errored, {}s waited",
                        state.counts.done(),
                        state.counts.total(),
                        state.counts.errored,
                        started.elapsed().as_secs()
                    ));
                    last_said = Instant::now();
                }
            }
            Err(e) if e.is_retryable() => {
                delay = e.retry_after().unwrap_or(delay);
                printer.progress(&format!("  polling {batch_id}: {e}; polling again"));
            }
            Err(source) => {
                return Err(ProviderFailure::Poll {
                    batch: batch_id.to_string(),
                    source,
                }
                .into())
            }
        }
        polls += 1;
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = interrupt.recv() => return Ok(None),
        }
    }
}
