//! `rlm job --batch-api`: a map phase's worker calls through the provider's batch API, at
//! half the price. Each batch of items is one request of a provider batch; the provider
//! batch's id and custom ids are written to `batches/{phase}/provider-batches.json`
//! *before* rlm waits for it, so a crash, Ctrl-C or `--deadline` leaves it running at the
//! provider and `rlm job resume` polls it again — never submitting those requests twice.
//!
//! An answer that comes back is checked like a realtime worker's (the schema and the
//! batch: every id once); an accepted answer is cached, then written as the batch's output
//! file, and counts at the batch price. Requests that errored, expired or were canceled,
//! and answers the check rejects, are left to the realtime workers, which ask again with
//! the errors appended, under the phase's `retries`.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::batches::{BatchDone, BatchJob};
use super::job_dir::{read_json_if_whole, write_json};
use super::worker::{cached_answer, store, PhaseReply, PriorAnswer, WorkerContext, WorkerEnd, WorkerOutcome};
use crate::error::{ProviderFailure, RlmError};
use crate::exec::{Interrupt, ReplyCheck};
use crate::printer::Printer;
use crate::provider::batch_api::{
    batch_api, custom_id_for, new_token, none_since, now_ms, reconcile, submit_all_within, unit_part, BatchApi,
    BatchItem, BatchTimeouts, Intent, ItemOutcome, Reconciled, Recorder, SubmissionTag, Submitted,
};
use crate::provider::catalog::PriceTier;
use crate::settings::{BatchApiSettings, ProviderSettings};

/// The provider batches of one phase (and generation), as written before waiting, and the
/// submissions whose create request was sent but whose batch was never recorded.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    batches: Vec<RecordedBatch>,
    /// Written before each create request is sent (issue 24): a `kill -9` while it is in
    /// flight leaves it here, and the resume looks for its batch at the provider instead
    /// of paying for its requests again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    intents: Vec<RecordedIntent>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RecordedIntent {
    token: String,
    /// Its requests' custom ids, as sent (each carries the token).
    custom_ids: Vec<String>,
    /// When it was written, before the create request (Unix ms).
    recorded_at_ms: i64,
}

/// The job's side of a phase's submissions: each intent written to the record before its
/// create request is sent, each batch once it exists (settling its intent).
struct JobRecorder<'r> {
    record: &'r mut Record,
    path: PathBuf,
    run: String,
    next: u64,
    printer: &'r Printer,
}

impl JobRecorder<'_> {
    fn write(&self) -> Result<(), String> {
        write_json(&self.path, &*self.record).map_err(|e| e.to_string())
    }
}

impl Recorder for JobRecorder<'_> {
    fn tag(&mut self) -> SubmissionTag {
        self.next += 1;
        SubmissionTag {
            run: self.run.clone(),
            token: new_token(self.next),
        }
    }

    fn intend(&mut self, tag: &SubmissionTag, custom_ids: &[String]) -> Result<(), String> {
        self.record.intents.push(RecordedIntent {
            token: tag.token.clone(),
            custom_ids: custom_ids.to_vec(),
            recorded_at_ms: now_ms(),
        });
        self.write()
    }

    fn record(&mut self, submitted: &Submitted, tag: &SubmissionTag) -> Result<(), String> {
        self.record.batches.push(RecordedBatch {
            id: submitted.batch_id.clone(),
            custom_ids: submitted.custom_ids.clone(),
        });
        self.record.intents.retain(|i| i.token != tag.token);
        self.write()
    }

    fn void(&mut self, tag: &SubmissionTag) {
        self.record.intents.retain(|i| i.token != tag.token);
        if let Err(e) = self.write() {
            // Left in the record, the intent is looked for at the next resume: harmless.
            tracing::debug!("cannot drop a batch intent from the job's record: {e}");
        }
    }

    fn known(&mut self) -> HashSet<String> {
        self.record.batches.iter().map(|b| b.id.clone()).collect()
    }

    fn notice(&mut self, message: String) {
        self.printer.warn(&message);
    }
}

/// Looks at the provider for the batch of each submission an earlier attempt sent without
/// its reply (see [`crate::provider::batch_api::reconcile`]): found, it is recorded and
/// collected; shown never created, its requests go again. Returns the custom ids still
/// held (their batch cannot be told yet: not sent, not run; the next resume looks again).
async fn settle_intents(
    api: &dyn BatchApi,
    record: &mut Record,
    phase: &Phase<'_>,
    interrupt: &mut Interrupt,
) -> HashSet<String> {
    /// How often the listing is read again once the candidates it named have ended.
    const LOOKS: usize = 3;
    let printer = phase.printer;
    let mut held = HashSet::new();
    for intent in std::mem::take(&mut record.intents) {
        let tag = SubmissionTag {
            run: String::new(),
            token: intent.token.clone(),
        };
        let mut looked = Intent {
            tag: &tag,
            recorded_at_ms: intent.recorded_at_ms,
            custom_ids: &intent.custom_ids,
            excluded: record.batches.iter().map(|b| b.id.clone()).collect(),
        };
        let n = intent.custom_ids.len();
        let mut reconciled = Box::pin(reconcile(api, &mut looked)).await;
        // Batches that may be it and have not ended: once they have, their results tell.
        for _ in 0..LOOKS {
            let Ok(Reconciled::Running(candidates)) = &reconciled else {
                break;
            };
            printer.progress(&format!(
                "  a submission of {n} requests was never recorded: waiting for {} batch(es) at {} that may be it",
                candidates.len(),
                api.server()
            ));
            for candidate in candidates.clone() {
                if !matches!(
                    wait(api, &candidate, phase.settings, printer, interrupt).await,
                    Ok(Some(_))
                ) {
                    break;
                }
            }
            reconciled = Box::pin(reconcile(api, &mut looked)).await;
        }
        match reconciled {
            Ok(Reconciled::Found { state, how }) => {
                printer.warn(&format!(
                    "a submission of {n} requests was never recorded; batch {} was found at {} ({how}): it is \
                     collected, not sent again",
                    state.batch_id,
                    api.server()
                ));
                record.batches.push(RecordedBatch {
                    id: state.batch_id,
                    custom_ids: intent.custom_ids,
                });
            }
            Ok(Reconciled::NotCreated { since_ms }) => {
                printer.warn(&format!(
                    "a submission of {n} requests was never recorded; {}: its requests are sent again",
                    none_since(api.server(), since_ms)
                ));
            }
            Ok(Reconciled::Running(_) | Reconciled::Unsure(_)) | Err(_) => {
                printer.warn(&format!(
                    "a submission of {n} requests was never recorded, and {} cannot tell yet whether it created a \
                     batch: its requests are not sent again (that could pay twice); rlm job resume looks again",
                    api.server()
                ));
                held.extend(intent.custom_ids.iter().map(|c| unit_part(c).to_string()));
                record.intents.push(intent);
            }
        }
    }
    if let Err(e) = write_json(&phase.record, &*record) {
        printer.warn(&format!("cannot write the job's record of its batches ({e})"));
    }
    held
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RecordedBatch {
    id: String,
    custom_ids: Vec<String>,
}

/// What the phase's batch API needs besides its jobs.
pub struct Phase<'a> {
    pub provider: &'a ProviderSettings,
    pub model: &'a str,
    pub settings: &'a BatchApiSettings,
    /// `batches/{phase}/provider-batches[~N].json`.
    pub record: PathBuf,
    /// Send what is not sent yet (`--batch-api` on); else only collect what was sent.
    pub submit: bool,
    /// The phase's name, as messages say it.
    pub name: &'a str,
    /// The job's id (in OpenAI batches' metadata).
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
    let api = client(phase.provider, phase.model)?;
    let mut record: Record = read_json_if_whole(&phase.record).unwrap_or_default();
    let held = if record.intents.is_empty() {
        HashSet::new()
    } else {
        settle_intents(api.as_ref(), &mut record, &phase, interrupt).await
    };
    let recorded: HashSet<String> = record
        .batches
        .iter()
        .flat_map(|b| b.custom_ids.iter().map(|c| unit_part(c).to_string()))
        .collect();
    // Jobs by the unit's part of their custom id (a batch's custom ids carry its
    // submission's token before it); those with a valid cached answer go to the pool, which serves it.
    let mut by_id: BTreeMap<String, BatchJob> = BTreeMap::new();
    let mut rest = Vec::new();
    let mut held_jobs = Vec::new();
    let mut budget_left = phase.budget_left;
    let mut unsent: Vec<BatchJob> = Vec::new();
    let mut to_send = Vec::new();
    for job in jobs {
        if workers.cache_reads && cached_answer(workers, &job.request, job.check.as_ref()).await.is_some() {
            rest.push(job);
            continue;
        }
        let custom_id = custom_id_for(job.request.unit.as_str());
        if held.contains(&custom_id) {
            // In a submission whose batch cannot be told yet: neither sent nor run.
            held_jobs.push(job);
            continue;
        }
        if !recorded.contains(&custom_id) {
            if !phase.submit {
                rest.push(job);
                continue;
            }
            let request = job.request.completion_request(workers.max_tokens);
            if let Some(left) = budget_left.as_mut() {
                // A batch is paid for whole: only what fits at its worst is sent.
                let worst = workers.model.worst_batch_cost(
                    (request.system.len() + request.shared.len() + request.user.len()) as u64,
                    request.max_tokens,
                );
                if !unsent.is_empty() || worst > *left {
                    unsent.push(job);
                    continue;
                }
                *left -= worst;
            }
            to_send.push(BatchItem {
                custom_id: custom_id.clone(),
                request,
            });
        }
        by_id.insert(custom_id, job);
    }
    if !to_send.is_empty() {
        let mut recorder = JobRecorder {
            record: &mut record,
            path: phase.record.clone(),
            run: phase.run.to_string(),
            next: 0,
            printer: phase.printer,
        };
        let report = Box::pin(submit_all_within(api.as_ref(), to_send, None, &mut recorder))
            .await
            .map_err(ProviderFailure::BatchApi)?;
        for (custom_id, e) in report.rejected {
            phase.printer.warn(&format!(
                "{custom_id}: not sent through the batch API ({e}): sent in real time"
            ));
        }
        for s in &report.submitted {
            phase.printer.progress(&format!(
                "  submitted provider batch {} ({} requests); rlm job resume collects it if this rlm stops",
                s.batch_id,
                s.custom_ids.len()
            ));
        }
    }
    let mut answered = Vec::new();
    for batch in record.batches.clone() {
        if !batch.custom_ids.iter().any(|c| by_id.contains_key(unit_part(c))) {
            continue; // Everything it answered is done.
        }
        let Some(state) = wait(api.as_ref(), &batch.id, phase.settings, phase.printer, interrupt).await? else {
            phase.printer.warn(&format!(
                "the batch keeps running at the provider ({}); rlm job resume collects it",
                batch.id
            ));
            rest.extend(by_id.into_values());
            return Ok(Collected {
                answered,
                rest,
                stopped: true,
                over_budget: None,
            });
        };
        let mut results = api.results(&state).await.map_err(|source| ProviderFailure::Results {
            batch: batch.id.clone(),
            source,
        })?;
        while let Some(item) = results.next().await {
            let item = item.map_err(|source| ProviderFailure::ResultItem {
                batch: batch.id.clone(),
                source,
            })?;
            let ItemOutcome::Succeeded(reply) = &item.outcome else {
                continue; // Errored, expired or canceled: the realtime workers ask again.
            };
            let Some(job) = by_id.get_mut(unit_part(&item.custom_id)) else {
                continue;
            };
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
            let Some(job) = by_id.remove(unit_part(&item.custom_id)) else {
                continue;
            };
            let write_error = store(workers, &job.request, &accepted, usage).await;
            answered.push(BatchDone::new(
                &job,
                WorkerOutcome {
                    end: WorkerEnd::Accepted(accepted),
                    cached: false,
                    usage,
                    cost_usd,
                    calls: 1,
                    reasked: 0,
                    duration_ms: started.elapsed().as_millis() as u64,
                    write_error,
                },
            ));
        }
    }
    rest.extend(by_id.into_values());
    let over_budget = (!unsent.is_empty()).then(|| {
        format!(
            "--max-cost: {} batches of {} were not submitted, as their provider batch could cost more than what \
             is left of the budget (each counted at its worst: its input, and max_tokens of output, at the batch \
             price); `rlm job resume {} --max-cost USD` with a higher budget sends them",
            unsent.len(),
            phase.name,
            phase.run
        )
    });
    // Held (their submission's batch cannot be told yet) or over the budget: the job stops
    // here, resumable.
    let stopped = !held_jobs.is_empty() || over_budget.is_some();
    Ok(Collected {
        answered,
        rest,
        stopped,
        over_budget,
    })
}

fn client(p: &ProviderSettings, model: &str) -> Result<Box<dyn BatchApi>, RlmError> {
    batch_api(&p.http_config(model), None, BatchTimeouts::default())
        .map_err(|e| RlmError::Usage(format!("--batch-api: {e}")))
}

/// Polls `batch_id` until it has ended (its state), or `None` when Ctrl-C or the deadline
/// came first. Polls back off as the settings say; faults of a poll are retried.
async fn wait(
    api: &dyn BatchApi,
    batch_id: &str,
    settings: &BatchApiSettings,
    printer: &Printer,
    interrupt: &mut Interrupt,
) -> Result<Option<crate::provider::batch_api::BatchState>, RlmError> {
    let started = Instant::now();
    let mut polls = 0u32;
    let mut last_said = Instant::now();
    loop {
        match api.poll(batch_id).await {
            Ok(state) if state.has_ended() => return Ok(Some(state)),
            Ok(state) => {
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
            Err(e) if e.is_retryable() => printer.progress(&format!("  polling {batch_id}: {e}; polling again")),
            Err(source) => {
                return Err(ProviderFailure::Poll {
                    batch: batch_id.to_string(),
                    source,
                }
                .into())
            }
        }
        let delay = settings.poll.delay(polls);
        polls += 1;
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = interrupt.recv() => return Ok(None),
        }
    }
}
