//! Builds the completion report from the run's events.
//!
//! The report's `error` is decided in one place, by priority — a fatal provider error, then
//! the reason the run stopped dispatching (budget, a write failure), then any other error
//! (a failed summary) — and every other error is kept under `warnings`, so one can never
//! hide another.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Reporter;
use crate::exec::Event;
use crate::input::SkippedFile;
use crate::provider::catalog::PriceTier;
use crate::provider::model::PriceBasis;
use crate::provider::Usage;
use crate::report::{CallRecord, FailedFile, RunReport, RunStatus, UnitRecord, UnitStatus};
use crate::unit::{UnitId, UnitKind};

/// What the report says that events do not.
#[derive(Debug, Clone, Default)]
pub struct ReportContext {
    pub run_id: String,
    pub plan_id: String,
    pub shard: Option<crate::report::ShardRecord>,
    pub merged_from: Vec<String>,
    pub pattern: String,
    pub sub_prompt: String,
    pub model: String,
    pub provider: String,
    pub aggregate: String,
    pub max_parallel: usize,
    pub price_basis: PriceBasis,
    /// How the run's calls are billed (`batch` under `--batch-api`).
    pub price_tier: PriceTier,
    pub estimated_cost_usd: f64,
    pub files_matched: usize,
    pub skipped: Vec<SkippedFile>,
    /// Matched files that could not be read: failures.
    pub unreadable: Vec<SkippedFile>,
    pub warnings: Vec<String>,
    /// `rlm resume`: what the run's earlier attempts spent (the report's cost is the whole
    /// run's, as the store's is).
    pub earlier_cost_usd: f64,
    /// `rlm resume`: the units the earlier attempts completed (served again now, but paid
    /// for then: not cache hits).
    pub earlier_completed: std::collections::HashSet<String>,
    /// When the answering model is the bundled toy model: the sentence that says so.
    pub model_caution: Option<String>,
}

/// How the run ended, and where its outputs are.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    /// Why dispatching ended (a fatal error heard as an event counts too).
    pub reason: crate::report::RunEndReason,
    pub duration_ms: u64,
    pub started_at: String,
    pub finished_at: String,
    pub output_dir: String,
    pub report_path: String,
    pub aggregate_path: Option<String>,
    pub aggregate_json_path: Option<String>,
    pub events_path: Option<String>,
    /// Errors that are no event: an aggregate that could not be written, a summary that
    /// failed, a deadline that passed, an event log that could not be finished.
    pub errors: Vec<String>,
}

/// The report builder of one run.
#[derive(Default)]
pub struct ReportBuilder {
    ctx: ReportContext,
    records: Vec<UnitRecord>,
    index: HashMap<UnitId, usize>,
    /// Units whose first call started: one left open is "not finished", not "not run".
    started: HashSet<UnitId>,
    calls: Vec<CallRecord>,
    warnings: Vec<String>,
    fatal: Option<String>,
    stop_reason: Option<String>,
    errors: Vec<String>,
    cost: f64,
    /// The files each unit reads, when known (else each unit counts as one file).
    /// A unit queued after the start (a batch's member retried alone) reads one file: the
    /// one its label names.
    /// Aligned with `records`; an empty list is a unit whose files are not known.
    unit_files: Vec<Box<[Arc<str>]>>,
    /// Batches submitted to the provider's batch API, by this attempt and earlier ones.
    batches: Vec<String>,
    /// The share of each planned unit's prompt that is its files' text (see
    /// [`ReportBuilder::with_content_shares`]).
    /// Aligned with `records`, as far as the planned units go.
    content_shares: Vec<f32>,
    /// The share of all planned prompts that is content: what a unit planned after the
    /// start (a batch's member asked alone) is counted at.
    content_share: f64,
}

impl ReportBuilder {
    /// A builder for the planned units (id and label, in plan order).
    pub fn new<L: Into<Arc<str>>>(ctx: ReportContext, units: impl IntoIterator<Item = (UnitId, L)>) -> Self {
        let records: Vec<UnitRecord> = units
            .into_iter()
            .map(|(id, label)| UnitRecord::new(id, label.into()))
            .collect();
        let index = records.iter().enumerate().map(|(i, r)| (r.id.clone(), i)).collect();
        ReportBuilder {
            warnings: ctx.warnings.clone(),
            ctx,
            records,
            index,
            started: HashSet::new(),
            calls: Vec::new(),
            fatal: None,
            stop_reason: None,
            errors: Vec::new(),
            cost: 0.0,
            unit_files: Vec::new(),
            batches: Vec::new(),
            content_shares: Vec::new(),
            content_share: 0.0,
        }
    }

    /// Each planned unit's prompt bytes and, of them, its files' text: a call's input
    /// tokens are told apart as content and framing in that proportion.
    /// Given in the order of the units passed to [`ReportBuilder::new`].
    pub fn with_content_shares(mut self, sizes: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let (mut content, mut prompt) = (0u64, 0u64);
        self.content_shares = sizes
            .into_iter()
            .map(|(content_bytes, prompt_bytes)| {
                content += content_bytes;
                prompt += prompt_bytes;
                share(content_bytes, prompt_bytes) as f32
            })
            .collect();
        self.content_share = share(content, prompt);
        self
    }

    /// Of `tokens_in` tokens sent for `unit`, its files' text.
    fn content_tokens(&self, unit: &UnitId, tokens_in: u64) -> u64 {
        let share = self
            .index
            .get(unit)
            .and_then(|&i| self.content_shares.get(i))
            .map_or(self.content_share, |&s| f64::from(s));
        // Rounded, and never more than the whole.
        ((tokens_in as f64 * share).round() as u64).min(tokens_in)
    }

    /// The files each planned unit reads, so the report counts files, not units.
    /// Given in the order of the units passed to [`ReportBuilder::new`].
    pub fn with_unit_files(mut self, files: impl IntoIterator<Item = Box<[Arc<str>]>>) -> Self {
        self.unit_files = files.into_iter().collect();
        self.unit_files.resize(self.records.len(), Box::default());
        self
    }

    /// The batches earlier attempts of the run submitted (from the run store): the report
    /// lists every batch of the run, not only this attempt's.
    pub fn set_earlier_batches(&mut self, earlier: Vec<String>) {
        let this_attempt = std::mem::take(&mut self.batches);
        self.batches = earlier;
        for id in this_attempt {
            if !self.batches.contains(&id) {
                self.batches.push(id);
            }
        }
    }

    fn record(&mut self, unit: &UnitId) -> Option<&mut UnitRecord> {
        self.index.get(unit).map(|&i| &mut self.records[i])
    }

    /// The report as it will be written (the builder is left empty).
    pub fn finish(&mut self, end: RunEnd) -> RunReport {
        let ReportBuilder {
            ctx,
            mut records,
            started,
            calls,
            mut warnings,
            fatal,
            stop_reason,
            mut errors,
            cost,
            unit_files,
            batches,
            ..
        } = std::mem::take(self);
        errors.extend(end.errors);
        // A budget or deadline reached when every unit had been dispatched and all of them
        // (and the aggregation) finished stopped nothing: a warning, not the run's error.
        use crate::report::RunEndReason;
        let all_done = ctx.unreadable.is_empty()
            && records.iter().all(|r| r.status == UnitStatus::Succeeded)
            && calls.iter().all(|c| c.reason.is_none());
        let (stop_reason, crossed_late) = match (end.reason, &fatal) {
            (RunEndReason::Budget | RunEndReason::Deadline, None) if all_done => (None, stop_reason),
            _ => (stop_reason, None),
        };
        let mut candidates = fatal.iter().chain(stop_reason.iter()).chain(errors.iter()).cloned();
        let error = candidates.next();
        warnings.extend(candidates);
        if let Some(reason) = crossed_late {
            warnings.push(format!(
                "every unit had been dispatched, and all of them finished, when the limit was reached: {reason}"
            ));
        }

        // Worded as the event log and the task store word it (see `super::left_open`).
        let ended_as = {
            use crate::report::RunEndReason as End;
            use crate::store::RunStatus as Status;
            match end.reason {
                End::Interrupted => Status::Interrupted,
                End::Budget => Status::BudgetExceeded,
                End::Deadline => Status::DeadlineExceeded,
                End::Completed | End::Fatal => Status::Failed,
            }
        };
        let why = error.clone();
        let mut report = RunReport {
            schema_version: crate::report::REPORT_SCHEMA_VERSION,
            status: RunStatus::Success,
            gate: None,
            run_id: ctx.run_id,
            plan_id: ctx.plan_id,
            shard: ctx.shard,
            merged_from: ctx.merged_from,
            pattern: ctx.pattern,
            sub_prompt: ctx.sub_prompt,
            model: ctx.model,
            model_caution: ctx.model_caution,
            provider: ctx.provider,
            aggregate: ctx.aggregate,
            max_parallel: ctx.max_parallel,
            files_matched: ctx.files_matched,
            files_succeeded: 0,
            files_from_cache: 0,
            files_answered_earlier: 0,
            succeeded: 0,
            units_planned: 0,
            asked_alone: 0,
            failed: ctx
                .unreadable
                .into_iter()
                .map(|s| FailedFile {
                    path: s.path,
                    reason: s.reason,
                })
                .collect(),
            skipped: ctx.skipped,
            not_run: Vec::new(),
            not_cached: Vec::new(),
            pending_cache_dir: None,
            truncated: Vec::new(),
            cache_hits: 0,
            cache_misses: 0,
            tokens_saved: 0,
            tokens_in: 0,
            content_tokens: 0,
            framing_tokens: 0,
            tokens_out: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            prompt_cache_saved_usd: 0.0,
            cost_usd: cost + ctx.earlier_cost_usd,
            earlier_cost_usd: ctx.earlier_cost_usd,
            earlier_answers: 0,
            estimated_cost_usd: ctx.estimated_cost_usd,
            price_known: ctx.price_basis == PriceBasis::Listed,
            price_basis: ctx.price_basis,
            price_basis_shown: ctx.price_basis.shown(ctx.price_tier),
            price_tier: ctx.price_tier,
            batches,
            duration_ms: end.duration_ms,
            started_at: end.started_at,
            finished_at: end.finished_at,
            output_dir: end.output_dir,
            aggregate_path: end.aggregate_path,
            aggregate_json_path: end.aggregate_json_path,
            report_path: end.report_path,
            events_path: end.events_path,
            error,
            warnings,
            units: Vec::new(),
            aggregate_calls: calls,
            findings: None,
        };
        for record in &mut records {
            if record.asked_alone {
                report.asked_alone += 1;
            } else {
                report.units_planned += 1;
            }
            match record.status {
                UnitStatus::Succeeded if record.asked_alone => {}
                UnitStatus::Succeeded => report.succeeded += 1,
                UnitStatus::Failed => report.failed.push(FailedFile {
                    path: record.path.to_string(),
                    reason: record.reason.clone().unwrap_or_default(),
                }),
                UnitStatus::NotRun => {
                    let started = started.contains(&record.id);
                    record
                        .reason
                        .get_or_insert_with(|| super::left_open(ended_as, started, why.as_deref()));
                    report.not_run.push(record.path.to_string());
                }
            }
            if record.truncated && record.status == UnitStatus::Succeeded {
                report.truncated.push(record.path.to_string());
            }
            if record.not_cached {
                report.not_cached.push(record.path.to_string());
            }
            if record.answered_earlier {
                report.earlier_answers += 1;
            } else if record.cached {
                report.cache_hits += 1;
            } else {
                report.cache_misses += 1;
            }
            report.tokens_saved += record.tokens_saved;
            report.tokens_in += record.tokens_in;
            report.content_tokens += record.content_tokens;
            report.framing_tokens += record.tokens_in - record.content_tokens;
            report.tokens_out += record.tokens_out;
            report.cache_read_tokens += record.cached_input_tokens;
            report.cache_write_tokens += record.cache_write_tokens;
            report.prompt_cache_saved_usd += record.prompt_cache_saved_usd;
        }
        for call in &report.aggregate_calls {
            report.tokens_in += call.usage.input_tokens;
            report.tokens_out += call.usage.output_tokens;
            report.tokens_saved += call.saved.total();
            report.cache_read_tokens += call.usage.cached_input_tokens;
            report.cache_write_tokens += call.usage.cache_write_tokens;
            report.prompt_cache_saved_usd += call.prompt_cache_saved_usd;
        }
        if !report.not_cached.is_empty() {
            say_what_was_kept(&mut report, fatal.is_some());
        }
        let succeeded = |r: &UnitRecord| r.status == UnitStatus::Succeeded;
        report.files_succeeded = files_where(&records, &unit_files, succeeded);
        report.files_from_cache = files_where(&records, &unit_files, |r| {
            succeeded(r) && r.cached && !r.answered_earlier
        });
        report.files_answered_earlier = files_where(&records, &unit_files, |r| succeeded(r) && r.answered_earlier);
        report.units = records;
        let reason = match (end.reason, fatal.is_some()) {
            (crate::report::RunEndReason::Interrupted, _) => crate::report::RunEndReason::Interrupted,
            (_, true) => crate::report::RunEndReason::Fatal,
            (reason, false) => reason,
        };
        report.status = report.decide_status(reason);
        report
    }
}

/// Answers the cache did not take: the report says how many, where they are kept, and what
/// takes them into the cache (the run stopped at the first; its message named only that one,
/// which stays among the warnings).
fn say_what_was_kept(report: &mut RunReport, fatal: bool) {
    let dir = format!(
        "{}/{}",
        report.output_dir.trim_end_matches('/'),
        crate::run_dir::PENDING_CACHE_DIR
    );
    let n = report.not_cached.len();
    let summary = format!(
        "{n} {} paid for but not cached (the cache could not take {}): kept in {dir}/; `rlm resume {}` caches {} \
         from there without paying again",
        if n == 1 { "answer was" } else { "answers were" },
        if n == 1 { "it" } else { "them" },
        report.run_id,
        if n == 1 { "it" } else { "them" },
    );
    if fatal {
        // The provider's refusal stays the error; this is said first among the warnings.
        report.warnings.insert(0, summary);
    } else if let Some(first) = report.error.replace(summary) {
        report.warnings.insert(0, first);
    }
    report.pending_cache_dir = Some(dir);
}

/// The files all of whose units are as `all` asks; a unit with no known files counts as one.
fn files_where(records: &[UnitRecord], unit_files: &[Box<[Arc<str>]>], all: impl Fn(&UnitRecord) -> bool) -> usize {
    let mut ok: HashMap<&str, bool> = HashMap::new();
    let mut unknown = 0;
    for (i, record) in records.iter().enumerate() {
        let holds = all(record);
        match unit_files.get(i).filter(|files| !files.is_empty()) {
            Some(files) => {
                for file in files {
                    *ok.entry(file.as_ref()).or_insert(true) &= holds;
                }
            }
            None => unknown += usize::from(holds),
        }
    }
    unknown + ok.values().filter(|v| **v).count()
}

impl Reporter for ReportBuilder {
    fn report(&mut self, event: &Event) {
        match event {
            Event::Completed {
                unit,
                label,
                kind,
                attempts,
                duration_ms,
                usage,
                saved,
                cost_usd,
                cache_saved_usd,
                cached,
                truncated,
                result_file,
            } => {
                self.cost += cost_usd;
                if *kind == UnitKind::Aggregate {
                    let call = CallFields {
                        usage: *usage,
                        saved: *saved,
                        cached: *cached,
                        attempts: *attempts,
                        truncated: *truncated,
                        duration_ms: *duration_ms,
                        cost_usd: *cost_usd,
                    };
                    let mut call = call_record(unit, label, call, None);
                    call.prompt_cache_saved_usd = *cache_saved_usd;
                    self.calls.push(call);
                } else {
                    let earlier = *cached && self.ctx.earlier_completed.contains(unit.as_str());
                    let content_tokens = self.content_tokens(unit, usage.input_tokens);
                    let Some(r) = self.record(unit) else { return };
                    r.content_tokens = content_tokens;
                    r.status = UnitStatus::Succeeded;
                    r.result_file = result_file.clone();
                    // Paid for by an earlier attempt of the run: no cache hit of this one.
                    r.answered_earlier = earlier;
                    r.cached = *cached && !earlier;
                    r.tokens_in = usage.input_tokens;
                    r.tokens_out = usage.output_tokens;
                    r.cached_input_tokens = usage.cached_input_tokens;
                    r.cache_write_tokens = usage.cache_write_tokens;
                    r.prompt_cache_saved_usd = *cache_saved_usd;
                    // The run's own answers, paid for by its earlier attempts: no tokens the
                    // cache saved (the summary would say "0 from cache, 1,036 saved by it").
                    r.tokens_saved = if earlier { 0 } else { saved.total() };
                    r.attempts = *attempts;
                    r.duration_ms = *duration_ms;
                    r.truncated = *truncated;
                    r.cost_usd = *cost_usd;
                    r.reason = None;
                }
            }
            Event::Failed {
                unit,
                label,
                kind,
                attempts,
                duration_ms,
                usage,
                cost_usd,
                reason,
                ..
            } => {
                self.cost += cost_usd;
                if *kind == UnitKind::Aggregate {
                    let call = CallFields {
                        usage: *usage,
                        saved: Usage::default(),
                        cached: false,
                        attempts: *attempts,
                        truncated: false,
                        duration_ms: *duration_ms,
                        cost_usd: *cost_usd,
                    };
                    self.calls.push(call_record(unit, label, call, Some(reason.clone())));
                } else {
                    let content_tokens = self.content_tokens(unit, usage.input_tokens);
                    let Some(r) = self.record(unit) else { return };
                    r.content_tokens = content_tokens;
                    r.status = UnitStatus::Failed;
                    r.reason = Some(reason.clone());
                    r.tokens_in = usage.input_tokens;
                    r.tokens_out = usage.output_tokens;
                    r.cached_input_tokens = usage.cached_input_tokens;
                    r.cache_write_tokens = usage.cache_write_tokens;
                    r.attempts = *attempts;
                    r.duration_ms = *duration_ms;
                    r.cost_usd = *cost_usd;
                }
            }
            Event::Uncached { unit, .. } => {
                if let Some(r) = self.record(unit) {
                    r.not_cached = true;
                }
            }
            Event::Cancelled { unit, reason, .. } => {
                if let Some(r) = self.record(unit) {
                    r.status = UnitStatus::NotRun;
                    r.reason = Some(reason.clone());
                }
            }
            Event::Warning { message } => self.warnings.push(message.clone()),
            Event::Stopping { reason, fatal } => {
                if *fatal {
                    self.fatal.get_or_insert_with(|| reason.clone());
                } else {
                    self.stop_reason.get_or_insert_with(|| reason.clone());
                }
            }
            Event::Queued {
                unit,
                label,
                kind: UnitKind::Map,
            } if !self.index.contains_key(unit) => {
                // A unit planned after the start (a batch's file retried alone): it reads
                // the one file its label names.
                self.index.insert(unit.clone(), self.records.len());
                let mut record = UnitRecord::new(unit.clone(), label.clone());
                record.asked_alone = true;
                self.records.push(record);
                self.unit_files.resize(self.records.len() - 1, Box::default());
                self.unit_files.push(Box::new([label.clone()]));
            }
            Event::Started { unit, .. } => {
                self.started.insert(unit.clone());
            }
            Event::RunStarted { .. }
            | Event::Queued { .. }
            | Event::Retried { .. }
            | Event::WidthChanged { .. }
            | Event::BatchPolled { .. } => {}
            Event::BatchSubmitted { batch_id, .. } => self.batches.push(batch_id.clone()),
        }
    }
}

/// `part` of `whole`, as a fraction (0 of nothing).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// An aggregation call's record from its event's fields.
fn call_record(unit: &UnitId, label: &str, call: CallFields, reason: Option<String>) -> CallRecord {
    CallRecord {
        id: unit.clone(),
        kind: UnitKind::Aggregate,
        label: label.to_string(),
        usage: call.usage,
        saved: call.saved,
        cached: call.cached,
        attempts: call.attempts,
        truncated: call.truncated,
        duration_ms: call.duration_ms,
        cost_usd: call.cost_usd,
        prompt_cache_saved_usd: 0.0,
        reason,
    }
}

/// The measures of one aggregation call, as its event carries them.
struct CallFields {
    usage: Usage,
    saved: Usage,
    cached: bool,
    attempts: u32,
    truncated: bool,
    duration_ms: u64,
    cost_usd: f64,
}

#[cfg(test)]
#[path = "report_builder_tests.rs"]
mod tests;
