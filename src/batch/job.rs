//! One job of the pool: a unit (read its inputs, call, cache, write the result) or an
//! aggregation call (check the cache, call, cache).
//!
//! File I/O and hashing run on the blocking pool, off the async workers. A paid answer is
//! written to the cache first (fsynced), then to its result file, in one blocking step:
//! there is no moment where a result is written but not cached, and an aborted task does
//! not interrupt the step.

use std::sync::Arc;
use std::time::Instant;

use super::conform::{conform, Expect};
use crate::cache::{ArtifactRef, Cache, CacheEntry, CacheKey};
use crate::exec::{self, call_with_retries, CallContext, CallFailure, JobMeta, Place};
use crate::input::sha256_hex;
use crate::plan::{unit_key, KeyParts};
use crate::prompt::{self, Delimiter};
use crate::provider::{CompletionRequest, ErrorKind, Usage};
use crate::run_dir::RunDir;
use crate::schema::OutputSchema;
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// What every job of a run shares, read-only.
pub struct JobContext {
    pub call: Arc<CallContext>,
    pub cache: Cache,
    pub run_dir: RunDir,
    pub keys: KeyParts,
    pub delimiter: Delimiter,
    pub max_tokens: u32,
    /// `--schema`: unit answers must conform to it.
    pub schema: Option<OutputSchema>,
    /// `--save-trajectory`: every call logged.
    pub trajectory: Option<super::trajectory::Trajectory>,
    /// Aggregation calls look in the cache first (per-unit hits are found by the pre-pass).
    pub read_cache: bool,
    /// False under `--cache-only`: an uncached aggregation call fails instead of calling.
    pub may_call: bool,
}

/// A job of the pool.
#[derive(Debug)]
pub enum Job {
    Unit(WorkUnit),
    Summary(SummaryJob),
}

/// One summarization call.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    pub id: UnitId,
    pub label: String,
    /// The system message; `None` is the summarize prompt's.
    pub system: Option<String>,
    /// The whole user message.
    pub user: String,
}

impl exec::Job for Job {
    fn meta(&self) -> JobMeta {
        match self {
            Job::Unit(u) => JobMeta {
                unit: u.id.clone(),
                label: u.label.clone(),
                kind: UnitKind::Map,
            },
            Job::Summary(s) => JobMeta {
                unit: s.id.clone(),
                label: s.label.clone(),
                kind: UnitKind::Aggregate,
            },
        }
    }
}

/// Why a job has no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum JobFailure {
    /// This unit failed; the run goes on.
    Unit { kind: Option<ErrorKind>, reason: String },
    /// The provider refused us; the run stops.
    Fatal(String),
    /// The run stopped before the call could start.
    Halted,
}

/// What a finished job reports to the dispatcher.
#[derive(Debug)]
pub struct JobOutcome {
    pub meta: JobMeta,
    pub attempts: u32,
    pub duration_ms: u64,
    /// What the calls of this job used (and cost), whether or not it succeeded.
    pub usage: Usage,
    /// Served from the cache: what the original call used.
    pub saved: Usage,
    pub cached: bool,
    pub truncated: bool,
    pub result_file: Option<String>,
    pub text: Option<String>,
    pub failure: Option<JobFailure>,
    /// The answer could not be persisted (cache or result file): dispatching must stop.
    pub write_error: Option<String>,
}

impl JobOutcome {
    fn new(meta: JobMeta) -> Self {
        JobOutcome {
            meta,
            attempts: 0,
            duration_ms: 0,
            usage: Usage::default(),
            saved: Usage::default(),
            cached: false,
            truncated: false,
            result_file: None,
            text: None,
            failure: None,
            write_error: None,
        }
    }

    fn failed(mut self, reason: String) -> Self {
        self.failure = Some(JobFailure::Unit { kind: None, reason });
        self
    }
}

/// Runs one job to its end. Its place in the limiter's queue is taken now, when it is
/// dispatched, so calls start in plan order.
pub fn run_job(ctx: Arc<JobContext>, job: Job) -> impl std::future::Future<Output = JobOutcome> + Send + 'static {
    let place = ctx.call.limiter.place();
    async move {
        let outcome = JobOutcome::new(exec::Job::meta(&job));
        match job {
            Job::Unit(unit) => run_unit(ctx, unit, outcome, place).await,
            Job::Summary(summary) => run_summary(ctx, summary, outcome, place).await,
        }
    }
}

/// What a unit sends, read and keyed by what is on disk now.
struct Prepared {
    /// A content-aware unit's analyst system message.
    system: Option<String>,
    user: String,
    key: CacheKey,
    artifacts: Vec<ArtifactRef>,
}

async fn run_unit(ctx: Arc<JobContext>, unit: WorkUnit, outcome: JobOutcome, place: Place) -> JobOutcome {
    let started = Instant::now();
    let prepared = {
        let ctx = ctx.clone();
        let unit = unit.clone();
        tokio::task::spawn_blocking(move || prepare(&ctx, &unit)).await
    };
    let prepared = match prepared {
        Ok(Ok(p)) => p,
        Ok(Err(reason)) => return outcome.failed(reason),
        Err(e) => return outcome.failed(format!("internal error while reading: {e}")),
    };
    let system = prepared.system.as_deref().unwrap_or(prompt::BATCH_SYSTEM);
    let request = CompletionRequest {
        system: match &ctx.schema {
            Some(s) => format!("{system}{}", s.instruction()),
            None => system.to_string(),
        },
        user: prepared.user,
        max_tokens: ctx.max_tokens,
        schema: ctx.schema.as_ref().map(|s| s.value.clone()),
        ..CompletionRequest::default()
    };
    let mut outcome = call(&ctx, &request, (&unit.id, &unit.label), outcome, started, place).await;
    if let Some(expect) = Expect::for_unit(&ctx, &unit) {
        outcome = conform(&ctx, expect, &request, &unit, outcome, started).await;
    }
    let Some(text) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    let entry = cache_entry(&ctx, prepared.key, prepared.artifacts, &text, &outcome);
    let result_name = unit.result_name.clone();
    let persisted = {
        let ctx = ctx.clone();
        let unit = unit.clone();
        tokio::task::spawn_blocking(move || {
            let persisted = persist(&ctx, &entry, Some(&result_name));
            if matches!(persisted, Persisted::Done) {
                write_members(&ctx.run_dir, &unit, &entry.text);
            }
            persisted
        })
        .await
    };
    finish_persist(outcome, persisted, Some(unit.result_name))
}

async fn run_summary(ctx: Arc<JobContext>, job: SummaryJob, mut outcome: JobOutcome, place: Place) -> JobOutcome {
    let started = Instant::now();
    let artifacts = vec![ArtifactRef {
        artifact_id: "summarize-input".to_string(),
        content_hash: sha256_hex(job.user.as_bytes()),
    }];
    let system = summary_system(job.system.as_deref(), ctx.keys.require_citations);
    let query = format!("rlm-summarize/v1:{}", &sha256_hex(system.as_bytes())[..16]);
    let key = CacheKey::new(
        &artifacts,
        &query,
        "",
        &ctx.keys.model,
        Some("summarize"),
        ctx.keys.endpoint.as_deref(),
    );
    if ctx.read_cache {
        let lookup = {
            let (cache, key, max) = (ctx.cache.clone(), key.clone(), ctx.max_tokens);
            tokio::task::spawn_blocking(move || cache.get(&key, max)).await
        };
        match lookup {
            Ok(Ok(Some(entry))) => {
                outcome.cached = true;
                outcome.saved = entry.usage;
                outcome.truncated = entry.truncated;
                outcome.text = Some(entry.text);
                return outcome;
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => return outcome.failed(e.to_string()),
            Err(e) => return outcome.failed(format!("internal error while reading the cache: {e}")),
        }
    }
    if !ctx.may_call {
        return outcome.failed("--cache-only: this summary is not cached".into());
    }
    let request = CompletionRequest {
        system,
        user: job.user,
        max_tokens: ctx.max_tokens,
        schema: None,
        ..CompletionRequest::default()
    };
    let outcome = call(&ctx, &request, (&job.id, &job.label), outcome, started, place).await;
    let Some(text) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    let entry = cache_entry(&ctx, key, artifacts, &text, &outcome);
    let persisted = {
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || persist(&ctx, &entry, None)).await
    };
    finish_persist(outcome, persisted, None)
}

/// The system prompt of a summary or synthesis call (the summarizer's unless the job brings
/// its own); with `--require-citations`, the seed's rule never to drop a citation (issue 10).
/// Without it, exactly the base prompt (so old summaries stay cached).
fn summary_system(system: Option<&str>, require_citations: bool) -> String {
    let base = system.unwrap_or(prompt::SUMMARIZE_SYSTEM);
    if require_citations {
        format!("{}\n\n{}", base.trim_end(), crate::citation::SUMMARIZER_RULE)
    } else {
        base.to_string()
    }
}

/// The model call, its retries, and an empty answer counted as a failure.
pub(super) async fn call(
    ctx: &JobContext,
    request: &CompletionRequest,
    (unit, label): (&UnitId, &str),
    mut outcome: JobOutcome,
    started: Instant,
    place: Place,
) -> JobOutcome {
    let call_started = Instant::now();
    let result = call_with_retries(&ctx.call, request, unit, label, place).await;
    outcome.attempts = result.attempts;
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    if let Some(trajectory) = &ctx.trajectory {
        let (response, error, usage) = match &result.outcome {
            Ok(c) => (Some(c.text.as_str()), None, c.usage),
            Err(CallFailure::Unit { reason, .. }) => (None, Some(reason.clone()), Usage::default()),
            Err(CallFailure::Fatal(reason)) => (None, Some(reason.clone()), Usage::default()),
            Err(CallFailure::Halted) => (None, Some("the run stopped first".to_string()), Usage::default()),
        };
        let warning = trajectory.record(&super::trajectory::CallRecord {
            unit: unit.as_str(),
            label,
            model: ctx.call.provider.model(),
            request,
            response,
            error: error.as_deref(),
            usage,
            duration_ms: call_started.elapsed().as_millis() as u64,
            attempts: result.attempts,
        });
        if let Some(message) = warning {
            let _ = ctx.call.events.send(exec::Event::Warning { message });
        }
    }
    match result.outcome {
        Ok(completion) => {
            outcome.usage = completion.usage;
            outcome.truncated = completion.truncated;
            if completion.text.trim().is_empty() {
                return outcome.failed(format!(
                    "the model returned an empty answer (stop reason: {})",
                    completion.stop_reason.as_deref().unwrap_or("none")
                ));
            }
            outcome.text = Some(completion.text);
        }
        Err(CallFailure::Unit { kind, reason }) => {
            outcome.failure = Some(JobFailure::Unit {
                kind: Some(kind),
                reason,
            })
        }
        Err(CallFailure::Fatal(reason)) => outcome.failure = Some(JobFailure::Fatal(reason)),
        Err(CallFailure::Halted) => outcome.failure = Some(JobFailure::Halted),
    }
    outcome
}

/// A batch's answer split into one result file per member file (best effort: the batch's
/// own result file holds the whole answer).
pub fn write_members(run_dir: &RunDir, unit: &WorkUnit, text: &str) {
    let Some(content) = unit.content.as_deref().filter(|c| !c.members.is_empty()) else {
        return;
    };
    let paths: Vec<&str> = content.members.iter().map(|m| m.path.as_str()).collect();
    let split = crate::content::split_batch_answer(text, &paths);
    for (member, part) in content.members.iter().zip(split.per_file) {
        let body = part.unwrap_or_else(|| {
            format!(
                "(the batch answer has no section for this file: see {} for the whole answer)\n",
                unit.result_name
            )
        });
        let _ = run_dir.write(&member.result_file, &body);
    }
}

/// Reads a unit's inputs, re-hashes what it read and renders the message.
fn prepare(ctx: &JobContext, unit: &WorkUnit) -> Result<Prepared, String> {
    if let Some(content) = &unit.content {
        // Rendered when planned, keyed by the hashes read then.
        keep_prompt(ctx, unit, &content.system, &content.user);
        return Ok(Prepared {
            system: Some(content.system.clone()),
            user: content.user.clone(),
            key: unit.cache_key.clone(),
            artifacts: unit
                .inputs
                .iter()
                .map(|i| ArtifactRef {
                    artifact_id: i.artifact_id(),
                    content_hash: i.content_hash.clone(),
                })
                .collect(),
        });
    }
    let mut inputs = unit.inputs.clone();
    let mut user = String::new();
    for input in &mut inputs {
        let bytes = fs_err::read(&input.path).map_err(|e| format!("cannot read: {e}"))?;
        // The file may have changed since it was planned: key the answer by what was sent.
        input.content_hash = sha256_hex(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let content = match input.span {
            Some(span) => slice_lines(&text, span.start, span.end),
            None => &text,
        };
        // --require-citations (issue 10): the block names the hash of what is sent.
        let citation_block = ctx.keys.require_citations.then(|| crate::citation::input_block(input));
        user.push_str(&prompt::render_cited_file_message(
            &ctx.keys.sub_prompt,
            &input.display,
            content,
            &ctx.delimiter,
            citation_block.as_deref(),
        ));
    }
    let artifacts = inputs
        .iter()
        .map(|i| ArtifactRef {
            artifact_id: i.artifact_id(),
            content_hash: i.content_hash.clone(),
        })
        .collect();
    keep_prompt(ctx, unit, prompt::BATCH_SYSTEM, &user);
    Ok(Prepared {
        system: None,
        user,
        key: unit_key(&inputs, &ctx.keys),
        artifacts,
    })
}

/// `prompts/<unit id>.md` in the run directory: what this unit sends, to inspect or replay.
/// Best effort: a prompt that cannot be kept does not stop the call.
fn keep_prompt(ctx: &JobContext, unit: &WorkUnit, system: &str, user: &str) {
    let text = format!("<!-- system -->\n{system}\n<!-- user -->\n{user}");
    let _ = ctx.run_dir.write(&format!("prompts/{}.md", unit.id), &text);
}

/// Lines `start..=end` (1-based) of `text`, with their line endings.
fn slice_lines(text: &str, start: u64, end: u64) -> &str {
    let mut offsets = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let from = offsets.nth((start.saturating_sub(1)) as usize).unwrap_or(text.len());
    let mut to_iter = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let to = to_iter.nth(end as usize).unwrap_or(text.len());
    &text[from.min(text.len())..to.max(from).min(text.len())]
}

fn cache_entry(
    ctx: &JobContext,
    key: CacheKey,
    inputs: Vec<ArtifactRef>,
    text: &str,
    outcome: &JobOutcome,
) -> CacheEntry {
    CacheEntry {
        key: key.0,
        model: ctx.keys.model.clone(),
        inputs,
        text: text.to_string(),
        usage: outcome.usage,
        truncated: outcome.truncated,
        max_tokens: ctx.max_tokens,
        created_unix: jiff::Timestamp::now().as_second().max(0) as u64,
    }
}

/// What persisting an answer came to.
enum Persisted {
    Done,
    /// The cache write failed (the result file may still exist).
    CacheFailed(String),
    /// Cached, but the result file could not be written.
    ResultFailed(String),
}

/// Cache first (durably), then the result file.
fn persist(ctx: &JobContext, entry: &CacheEntry, result_name: Option<&str>) -> Persisted {
    let cached = ctx.cache.put(entry);
    let written = result_name.map(|name| ctx.run_dir.write(name, &entry.text));
    match (cached, written) {
        (Ok(()), None | Some(Ok(_))) => Persisted::Done,
        (Ok(()), Some(Err(e))) => Persisted::ResultFailed(format!(
            "the answer is cached, but its result file cannot be written: {e}"
        )),
        (Err(e), Some(Ok(_))) => Persisted::CacheFailed(format!("the answer cannot be cached: {e}")),
        (Err(e), None) => Persisted::CacheFailed(format!("the answer cannot be cached: {e}")),
        (Err(e), Some(Err(w))) => {
            Persisted::ResultFailed(format!("the answer can be neither cached ({e}) nor written ({w})"))
        }
    }
}

fn finish_persist(
    mut outcome: JobOutcome,
    persisted: Result<Persisted, tokio::task::JoinError>,
    result_file: Option<String>,
) -> JobOutcome {
    match persisted {
        Ok(Persisted::Done) => outcome.result_file = result_file,
        Ok(Persisted::CacheFailed(e)) => {
            outcome.result_file = result_file;
            outcome.write_error = Some(e);
        }
        Ok(Persisted::ResultFailed(e)) => {
            outcome.write_error = Some(e.clone());
            outcome.failure = Some(JobFailure::Unit { kind: None, reason: e });
        }
        Err(e) => {
            let e = format!("internal error while writing the answer: {e}");
            outcome.write_error = Some(e.clone());
            outcome.failure = Some(JobFailure::Unit { kind: None, reason: e });
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_lines_inclusively() {
        let text = "a\nb\nc\nd";
        assert_eq!(slice_lines(text, 1, 1), "a\n");
        assert_eq!(slice_lines(text, 2, 3), "b\nc\n");
        assert_eq!(slice_lines(text, 4, 4), "d");
        assert_eq!(slice_lines(text, 3, 10), "c\nd");
    }
}
