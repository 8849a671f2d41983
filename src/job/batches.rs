//! Running one phase's batches through the pool: a batch whose output file exists is done
//! and is not sent again; every other batch is a worker call (`worker::run_worker`) whose
//! accepted answer is written to `batches/{phase}/batch-NNN-output.json` before it counts.
//! The dispatcher ([`BatchHandler`]) hears each finished batch and keeps `job.json`, the
//! task store, the progress display and `events.jsonl` up to date; it stops dispatching on
//! the budget, a fatal error or a failed write.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::definition::PhaseKind;
use super::ingest::id_key;
use super::job_dir::{read_json_if_whole, write_bytes, write_json, JobDir};
use super::progress::Progress;
use super::runner::{JobRun, Stop};
use super::state::JobRecord;
use super::store_link::StoreLink;
use super::worker::{run_worker, AnswerCheck, WorkerContext, WorkerEnd, WorkerOutcome, WorkerRequest};
use crate::batch::key_claim::KeyClaims;
use crate::batch::startup::provider_for;
use crate::error::{OverBudget, RlmError, Spender};
use crate::exec::{
    self, run_pool, CallContext, Event, Flow, JobMeta, Limiter, Lost, PoolContext, PoolEnd, PoolHandler,
};
use crate::exec::{RetryPolicy, GRACE};
use crate::printer::Printer;
use crate::request::job_phase::Rendering;
use crate::store::{Detail, UnitKind as StoreUnitKind, UnitState};
use crate::unit::{UnitId, UnitKind};

/// How many more batches than calls are admitted: a freed slot finds one ready.
const ADMISSION_FACTOR: usize = 2;

/// One batch of a phase.
pub struct Batch {
    /// Its number, from 1 (`batch-001`).
    pub n: usize,
    /// What the worker is sent.
    pub items: Vec<Value>,
    /// The ids it must answer for, as the items carry them.
    pub ids: Vec<Value>,
    pub check: Arc<dyn AnswerCheck>,
}

/// A batch that ended without an accepted answer.
#[derive(Debug, Clone)]
pub struct FailedBatch {
    pub n: usize,
    pub ids: Vec<Value>,
    pub reason: String,
    /// The last answer, when one parsed (a reduce falls back per cluster with it).
    pub last_value: Option<Value>,
}

/// What became of a phase's batches in this invocation (and before it).
#[derive(Debug, Default)]
pub struct BatchesOutcome {
    /// Accepted answers by batch number (those done before included).
    pub accepted: BTreeMap<usize, Value>,
    pub failed: Vec<FailedBatch>,
}

/// The name of batch `n` in the store and in messages: `classify/batch-007`; a rerun's
/// units carry its generation (`~2`) so they stay apart from the first run's.
pub fn unit_name(phase: &str, n: usize, generation: u32) -> String {
    if generation == 0 {
        format!("{phase}/batch-{n:03}")
    } else {
        format!("{phase}/batch-{n:03}~{generation}")
    }
}

/// Runs the phase's batches; returns once every batch is done, failed, or the run stopped
/// (then `run.stop` says why and the batches not done run on `resume`).
pub async fn run_batches(
    run: &mut JobRun,
    index: usize,
    rendering: &Rendering,
    batches: Vec<Batch>,
    kind: StoreUnitKind,
) -> Result<BatchesOutcome, RlmError> {
    let phase = run.record.definition.phases[index].clone();
    let generation = run.record.generation;
    let mut outcome = BatchesOutcome::default();
    let mut to_run = Vec::new();
    for batch in batches {
        match read_json_if_whole::<Value>(&run.dir.batch_output(&phase.name, batch.n)) {
            Some(done) => {
                outcome.accepted.insert(batch.n, done);
            }
            None => to_run.push(batch),
        }
    }
    let total = outcome.accepted.len() + to_run.len();
    let units: Vec<(String, bool)> = outcome
        .accepted
        .keys()
        .map(|&n| (unit_name(&phase.name, n, generation), true))
        .chain(to_run.iter().map(|b| (unit_name(&phase.name, b.n, generation), false)))
        .collect();
    run.store.add(&units, kind);
    {
        let state = &mut run.record.phases[index];
        state.batches_total = total + state.failed_batches.len();
        state.batches_failed = state.failed_batches.len();
        state.batches_done = outcome.accepted.len();
        state.items_done = outcome.accepted.values().map(answer_len).sum();
    }
    // Saved now: `rlm job status` shows the phase's totals while its first answers are
    // awaited (a provider batch may take hours).
    if let Err(e) = run.dir.write_record(&mut run.record) {
        run.printer.warn(&format!("cannot update job.json: {e}"));
    }
    let label = run.phase_label(index);
    let failed_before = run.record.phases[index].failed_batches.len();
    run.progress
        .phase_started(&label, total + failed_before, outcome.accepted.len() + failed_before);
    if to_run.is_empty() || run.stop.is_some() {
        return Ok(outcome);
    }

    // The calls of this phase: its provider, model and width.
    let provider_settings = run.settings.phase_provider(&phase)?;
    let model = run.models[index].clone();
    let (width, warning) = run.settings.phase_width(&phase);
    if let Some(w) = warning {
        run.printer.warn(&w);
    }
    // A width the job or the user named is where the pool starts, local server or not.
    let given = run.settings.exec.parallelism.given || phase.concurrency.is_some();
    let limiter = Limiter::starting_at(width, given);
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = provider_settings.shown_base_url();
    let call = Arc::new(CallContext::new(
        provider_for(&provider_settings, &model, &run.dir.id)?,
        RetryPolicy {
            retries: run.settings.exec.retries,
            rate_limit_wait: run.settings.exec.rate_limit_wait,
            base: run.settings.exec.backoff_base,
            max: Duration::from_secs(60),
        },
        limiter.clone(),
        events_tx,
        endpoint.clone(),
    ));
    if run.answered_endpoints.contains(&endpoint) {
        call.mark_answered();
    }
    let phase_calls = call.clone();
    let workers = Arc::new(WorkerContext {
        call,
        cache: run.cache.clone(),
        claims: Arc::new(KeyClaims::new(
            run.cache.clone(),
            crate::store::TaskStore::open(&run.settings.rlm_dir()).ok(),
            &run.dir.id,
            run.settings.exec.cache_mode.reads(),
            provider_settings.max_tokens,
        )),
        cache_reads: run.settings.exec.cache_mode.reads(),
        model: model.clone(),
        max_tokens: provider_settings.max_tokens,
        retries: phase.retries(),
    });
    let system = rendering.system(&run.delimiter);
    let schema = rendering.wrapper_schema().map(Arc::new);
    let mut jobs: Vec<BatchJob> = Vec::with_capacity(to_run.len());
    for batch in to_run {
        write_json(&run.dir.batch_input(&phase.name, batch.n), &batch.items)?;
        let name = unit_name(&phase.name, batch.n, generation);
        let (key, artifacts) = rendering.cache_key(
            &batch.items,
            &model.id,
            provider_settings.endpoint_identity().as_deref(),
        );
        jobs.push(BatchJob {
            n: batch.n,
            ids: batch.ids,
            check: batch.check,
            request: WorkerRequest {
                unit: UnitId::named(name.clone()),
                label: name,
                system: system.clone(),
                user: rendering.user(&run.delimiter, &phase.name, &batch.items),
                schema: schema.clone(),
                key,
                artifacts,
                prior: None,
                fault_retries: None,
            },
        });
    }
    // `--batch-api`: a map phase's calls through the provider's batch API first. Turned
    // off since, its provider batches sent before are still collected: they are paid for.
    let mut answered = Vec::new();
    let mut stopped = false;
    let tag = if generation == 0 {
        phase.name.clone()
    } else {
        format!("{}~{generation}", phase.name)
    };
    let batch_phase = super::batch_api::Phase {
        provider: &provider_settings,
        model: &model.id,
        settings: &run.settings.exec.batch_api,
        rlm_dir: run.settings.rlm_dir(),
        legacy_record: run.dir.batches(&phase.name).join(format!(
            "provider-batches{}.json",
            tag.strip_prefix(phase.name.as_str()).unwrap_or_default()
        )),
        tag,
        submit: run.settings.exec.batch_api.mode.is_on(),
        run: &run.dir.id,
        budget_left: run.settings.budget.max_cost.map(|max| max - run.record.cost_usd()),
        printer: &run.printer,
    };
    if phase.kind == PhaseKind::Map
        && run.settings.exec.cache_mode != crate::cache::CacheMode::ReadOnly
        && (batch_phase.submit || super::batch_api::sent_before(&batch_phase))
    {
        if !batch_phase.submit {
            run.printer.progress(&format!(
                "  {}: collecting the provider batch sent before --batch-api was turned off (never paid twice); \
                 the other calls are made in real time",
                phase.name
            ));
        }
        // Boxed: the batch API's wait and reconcile make a large future, run once a phase.
        let collected = Box::pin(super::batch_api::collect(
            batch_phase,
            &workers,
            jobs,
            &mut run.interrupt,
        ))
        .await?;
        jobs = collected.rest;
        answered = collected.answered;
        stopped = collected.stopped;
        if let Some(Stop::Budget(reason)) = &collected.stop {
            run.printer.warn(reason);
        }
        if collected.stop.is_some() {
            run.stop = collected.stop;
        }
    }
    let JobRun {
        dir,
        record,
        store,
        progress,
        printer,
        interrupt,
        settings,
        ..
    } = run;
    let mut handler = BatchHandler {
        dir,
        record,
        index,
        store,
        progress,
        printer,
        max_cost: settings.budget.max_cost,
        outcome: &mut outcome,
        stop: None,
    };
    // What the batch API answered counts first, as if the pool had run it.
    for mut done in answered {
        done.written = persist(dir, &phase.name, done.n, &done.outcome).await;
        if handler.finished(done) != Flow::Continue {
            stopped = true;
        }
    }
    if stopped {
        let deadline_passed = interrupt.deadline_passed;
        // What counting the answers found (an answer that could not be written) says more
        // than the stage's stop, which follows from it.
        let stop = handler.stop.take();
        run.stop = stop.or(run.stop.take()).or(Some(if deadline_passed {
            Stop::Deadline
        } else {
            Stop::Interrupted
        }));
        return Ok(outcome);
    }
    // A job's phase calls hand their slots back when they finish (nothing is paid early).
    let (_paid_tx, mut paid) = tokio::sync::mpsc::unbounded_channel();
    let pool = PoolContext {
        events: &mut events,
        paid: &mut paid,
        interrupt,
        limiter: &limiter,
        admission: width * ADMISSION_FACTOR,
        grace: GRACE,
    };
    let job_dir = dir.clone();
    let phase_name = phase.name.clone();
    let end = run_pool(
        jobs,
        move |job: BatchJob| {
            let place = workers.call.limiter.place();
            let workers = workers.clone();
            let dir = job_dir.clone();
            let phase = phase_name.clone();
            async move {
                let outcome = run_worker(workers, job.request, job.check, place).await;
                let written = persist(&dir, &phase, job.n, &outcome).await;
                BatchDone {
                    n: job.n,
                    ids: job.ids,
                    outcome,
                    written,
                }
            }
        },
        pool,
        &mut handler,
    )
    .await;
    if phase_calls.has_answered() {
        run.answered_endpoints.insert(endpoint);
    }
    let stop = handler.stop.take();
    let deadline_passed = run.interrupt.deadline_passed;
    run.stop = run.stop.take().or(stop).or(match end {
        PoolEnd::Interrupted if deadline_passed => Some(Stop::Deadline),
        PoolEnd::Interrupted => Some(Stop::Interrupted),
        _ => None,
    });
    Ok(outcome)
}

/// How many answer objects an accepted answer holds.
fn answer_len(value: &Value) -> usize {
    value.as_array().map_or(1, Vec::len)
}

/// A batch in the pool.
pub(super) struct BatchJob {
    pub n: usize,
    pub ids: Vec<Value>,
    pub check: Arc<dyn AnswerCheck>,
    pub request: WorkerRequest,
}

impl exec::Job for BatchJob {
    fn meta(&self) -> JobMeta {
        JobMeta {
            unit: self.request.unit.clone(),
            label: self.request.label.as_str().into(),
            kind: UnitKind::Map,
        }
    }
}

/// A batch out of the pool.
pub(super) struct BatchDone {
    n: usize,
    ids: Vec<Value>,
    outcome: WorkerOutcome,
    /// The accepted answer's output file could not be written.
    written: Result<(), String>,
}

impl BatchDone {
    /// `job` ended with `outcome` outside the pool (answered through the batch API); its
    /// output file is still to be written.
    pub(super) fn new(job: &BatchJob, outcome: WorkerOutcome) -> Self {
        Self::answered(job.n, job.ids.clone(), outcome)
    }

    /// Batch `n`, for the items `ids`, ended with `outcome` outside the pool.
    pub(super) fn answered(n: usize, ids: Vec<Value>, outcome: WorkerOutcome) -> Self {
        BatchDone {
            n,
            ids,
            outcome,
            written: Ok(()),
        }
    }

    /// What it cost.
    pub(super) fn cost_usd(&self) -> f64 {
        self.outcome.cost_usd
    }

    /// Its accepted answer could not be cached.
    pub(super) fn write_failed(&self) -> bool {
        self.outcome.write_error.is_some()
    }
}

/// Writes the batch's output (an accepted answer) or its last rejected answer, off the
/// async workers.
async fn persist(dir: &JobDir, phase: &str, n: usize, outcome: &WorkerOutcome) -> Result<(), String> {
    let (path, bytes) = match &outcome.end {
        WorkerEnd::Accepted(value) => {
            let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
            bytes.push(b'\n');
            (dir.batch_output(phase, n), bytes)
        }
        WorkerEnd::Rejected {
            last_text: Some(text), ..
        } => (dir.batch_rejected(phase, n), text.clone().into_bytes()),
        _ => return Ok(()),
    };
    let accepted = matches!(outcome.end, WorkerEnd::Accepted(_));
    let written = tokio::task::spawn_blocking(move || write_bytes(&path, &bytes))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    match written {
        Err(e) if accepted => Err(e),
        // A rejected answer is kept for people to look at; losing it fails nothing.
        _ => Ok(()),
    }
}

/// The dispatcher of one phase's pool.
struct BatchHandler<'a> {
    dir: &'a JobDir,
    record: &'a mut JobRecord,
    index: usize,
    store: &'a mut StoreLink,
    progress: &'a mut Progress,
    printer: &'a Printer,
    max_cost: Option<f64>,
    outcome: &'a mut BatchesOutcome,
    stop: Option<Stop>,
}

impl BatchHandler<'_> {
    fn phase(&self) -> &str {
        &self.record.phases[self.index].name
    }

    fn unit(&self, n: usize) -> String {
        unit_name(self.phase(), n, self.record.generation)
    }
}

impl PoolHandler<BatchDone> for BatchHandler<'_> {
    fn finished(&mut self, done: BatchDone) -> Flow {
        let unit = self.unit(done.n);
        let o = &done.outcome;
        let state = &mut self.record.phases[self.index];
        state.calls += u64::from(o.calls);
        state.tokens_in += o.usage.input_tokens;
        state.tokens_out += o.usage.output_tokens;
        state.cost_usd += o.cost_usd;
        let phase_cost = state.cost_usd;
        let detail = Detail {
            tokens_in: o.usage.input_tokens,
            tokens_out: o.usage.output_tokens,
            cost_usd: o.cost_usd,
            duration: Some(Duration::from_millis(o.duration_ms)),
            retries: o.calls.saturating_sub(1),
            ..Detail::default()
        };
        let mut flow = Flow::Continue;
        match (&o.end, &done.written) {
            (WorkerEnd::Accepted(value), Ok(())) => {
                state.batches_done += 1;
                state.items_done += answer_len(value);
                if o.cached {
                    state.batches_cached += 1;
                }
                self.outcome.accepted.insert(done.n, value.clone());
                self.store.finished(&unit, UnitState::Completed, detail);
                self.progress.batch_done(
                    &unit,
                    done.ids.len(),
                    Duration::from_millis(o.duration_ms),
                    o.cached,
                    phase_cost,
                );
                self.dir.event(
                    &json!({"event": "batch:completed", "batch": unit, "items": done.ids.len(),
                    "cached": o.cached, "calls": o.calls, "reasked": o.reasked, "cost_usd": o.cost_usd,
                    "duration_ms": o.duration_ms}),
                );
            }
            (WorkerEnd::Accepted(_), Err(e)) => {
                // Cached, so a resume finds it; but nothing more is dispatched.
                // An I/O error names the file.
                let reason = format!("cannot write the output of {unit}: {e}");
                self.store
                    .finished(&unit, UnitState::Cancelled, Detail::reason(reason.clone()));
                self.stop = Some(Stop::WriteError(reason));
                flow = Flow::Drain;
            }
            (WorkerEnd::Rejected { reason, last_value, .. }, _) => {
                let reason = reason.clone();
                let last_value = last_value.clone();
                self.fail(&unit, &done, reason, last_value, detail);
            }
            (WorkerEnd::Failed { reason }, _) => {
                let reason = reason.clone();
                self.fail(&unit, &done, reason, None, detail);
            }
            (WorkerEnd::Fatal(reason), _) => {
                self.store
                    .finished(&unit, UnitState::Cancelled, Detail::reason(reason.clone()));
                self.stop = Some(Stop::Fatal(reason.clone()));
                flow = Flow::Abort;
            }
            (WorkerEnd::Halted, _) => {
                self.store
                    .finished(&unit, UnitState::Cancelled, Detail::reason("the job stopped first"));
            }
        }
        if let Some(o) = &o.write_error {
            self.stop = Some(Stop::WriteError(o.clone()));
            flow = Flow::Drain;
        }
        if let (Some(max), Flow::Continue) = (self.max_cost, flow) {
            let spent = self.record.cost_usd();
            if crate::error::budget_reached(spent, max) {
                // Worded as `rlm batch` words it: one refusal, one sentence.
                let reached = OverBudget::Reached {
                    spent,
                    spent_before: 0.0,
                    max_cost: max,
                    spender: Spender::Job,
                };
                self.stop = Some(Stop::Budget(reached.to_string()));
                flow = Flow::Drain;
            }
        }
        if let Err(e) = self.dir.write_record(self.record) {
            self.printer.warn(&format!("cannot update job.json: {e}"));
        }
        flow
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Started { unit, attempt: 1 } => self.store.started(unit.as_str()),
            Event::Retried { label, reason, .. } => self.progress.retried(&label, &reason),
            Event::Warning { message } => self.progress.said(&message),
            Event::WidthChanged {
                from,
                to,
                why: crate::exec::WidthWhy::Pushback,
            } if to < from => self
                .progress
                .note(&format!("  the provider pushed back: calls in flight {from} → {to}")),
            _ => {}
        }
    }

    fn lost(&mut self, meta: JobMeta, why: Lost) {
        if let Lost::Panicked(message) = &why {
            self.printer
                .error(&format!("{}: internal error: {message}", meta.label));
        }
        self.store.finished(
            meta.unit.as_str(),
            UnitState::Cancelled,
            Detail::reason("stopped in flight"),
        );
    }

    /// `--deadline` is no Ctrl-C: dispatching stops and the calls in flight, paid for,
    /// finish and are kept (a Ctrl-C after it still interrupts), as in `rlm batch`.
    fn deadline_passed(&mut self, in_flight: usize) -> bool {
        let calls = match in_flight {
            0 => String::new(),
            1 => "; the call in flight finishes and is kept".to_string(),
            n => format!("; the {n} calls in flight finish and are kept"),
        };
        self.printer.warn(&format!(
            "the --deadline passed: dispatching stopped{calls}; rlm job resume goes on later"
        ));
        self.stop.get_or_insert(Stop::Deadline);
        true
    }

    fn interrupting(&mut self, in_flight: usize, grace: Duration) {
        self.printer.warn(&format!(
            "stopping: waiting up to {}s for {in_flight} call(s) in flight (again to stop at once); rlm job resume \
             goes on later",
            grace.as_secs()
        ));
    }
}

impl BatchHandler<'_> {
    fn fail(&mut self, unit: &str, done: &BatchDone, reason: String, last_value: Option<Value>, detail: Detail) {
        let state = &mut self.record.phases[self.index];
        state.batches_failed += 1;
        state.failed_batches.push(done.n);
        state.unprocessed.extend(done.ids.iter().cloned());
        let phase_cost = state.cost_usd;
        self.store.finished(
            unit,
            UnitState::Failed,
            Detail {
                reason: Some(reason.clone()),
                ..detail
            },
        );
        self.progress.batch_failed(unit, &reason, phase_cost);
        let ids: Vec<String> = done.ids.iter().filter_map(id_key).collect();
        self.dir
            .event(&json!({"event": "batch:failed", "batch": unit, "reason": reason, "unprocessed": ids}));
        self.outcome.failed.push(FailedBatch {
            n: done.n,
            ids: done.ids.clone(),
            reason,
            last_value,
        });
    }
}

/// The batches planned before (their input files), by number: the plan on disk wins, so
/// a resumed phase sends exactly the batches it planned.
pub fn planned_inputs(dir: &JobDir, phase: &str) -> BTreeMap<usize, Vec<Value>> {
    let mut planned = BTreeMap::new();
    let Ok(entries) = fs_err::read_dir(dir.batches(phase)) else {
        return planned;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(n) = name
            .strip_prefix("batch-")
            .and_then(|rest| rest.strip_suffix("-input.json"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if let Some(Value::Array(items)) = read_json_if_whole::<Value>(&entry.path()) {
            planned.insert(n, items);
        }
    }
    planned
}

/// The ids the planned batches cover.
pub fn covered_ids(planned: &BTreeMap<usize, Vec<Value>>, id_field: &str) -> std::collections::HashSet<String> {
    planned
        .values()
        .flatten()
        .filter_map(|item| item.get(id_field).and_then(id_key))
        .collect()
}

/// How a phase cuts its items into batches.
pub struct Layout<'a> {
    pub phase: &'a str,
    /// Items per batch.
    pub size: usize,
    /// Batches that failed before: only a rerun sends them again.
    pub failed: &'a [usize],
    pub id_field: &'a str,
}

/// The phase's batches: those planned before (but not the failed ones, which only a rerun
/// sends again), then `new` items in batches, numbered after them and written to disk
/// before any call, so the plan survives a crash.
pub fn plan(
    dir: &JobDir,
    layout: &Layout<'_>,
    planned: BTreeMap<usize, Vec<Value>>,
    new: Vec<Value>,
    check: &dyn Fn(Vec<Value>) -> Arc<dyn AnswerCheck>,
) -> Result<Vec<Batch>, RlmError> {
    let first = planned.keys().max().copied().unwrap_or(0) + 1;
    let mut batches: Vec<(usize, Vec<Value>)> = planned
        .into_iter()
        .filter(|(n, _)| !layout.failed.contains(n))
        .collect();
    for (n, chunk) in (first..).zip(new.chunks(layout.size.max(1))) {
        write_json(&dir.batch_input(layout.phase, n), chunk)?;
        batches.push((n, chunk.to_vec()));
    }
    Ok(batches
        .into_iter()
        .map(|(n, items)| {
            let ids: Vec<Value> = items
                .iter()
                .map(|i| i.get(layout.id_field).cloned().unwrap_or(Value::Null))
                .collect();
            Batch {
                n,
                check: check(ids.clone()),
                ids,
                items,
            }
        })
        .collect())
}

/// The accepted answers' objects in item order (`items`, by their `id_field`): a map or
/// review phase's merged output. Batches are numbered as they are planned, so a rerun of
/// the failed ones numbers them after the others: their order is not the items'.
pub fn merged(outcome: &BatchesOutcome, items: &[Value], id_field: &str) -> Vec<Value> {
    let position: std::collections::HashMap<String, usize> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| Some((item.get(id_field).and_then(id_key)?, i)))
        .collect();
    let mut answers: Vec<Value> = outcome
        .accepted
        .values()
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect();
    // A stable sort: an answer whose id is not an item's keeps its place at the end.
    answers.sort_by_key(|a| {
        a.get(id_field)
            .and_then(id_key)
            .and_then(|k| position.get(&k).copied())
            .unwrap_or(usize::MAX)
    });
    answers
}
