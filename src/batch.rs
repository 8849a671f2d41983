//! `rlm batch`: inputs → manifest → plan → cache pre-pass → execute → aggregate → report.
//!
//! The dispatcher here owns all state the user sees; units run in the pool, write their
//! result (atomically, then to the cache) before they count as done, and come back as
//! [`UnitDone`] values. Nothing is shared mutably between units.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::aggregate::{self, Aggregate, ResultItem, SummarizeLimits};
use crate::cache::{ArtifactRef, Cache, CacheEntry};
use crate::error::{ExitStatus, RlmError};
use crate::exec::{self, CallContext, CallFailure, Cooldown, Flow, Notice, PoolEnd, PoolHandler, RetryPolicy};
use crate::input::{self, sha256_hex, Manifest, WalkOptions};
use crate::plan::{self, WorkUnit};
use crate::progress::{Progress, ProgressMode};
use crate::prompt;
use crate::provider::catalog::Price;
use crate::provider::{CompletionRequest, Provider, Usage};
use crate::report::{self, FailedFile, RunReport, UnitRecord, UnitStatus};
use crate::run_store::{utc_rfc3339, RunStore};
use crate::settings::{AggregateStrategy, BatchSettings, CacheMode, PriceBasis};

/// Above this estimate, ask on a terminal.
const CONFIRM_ABOVE: f64 = 1.0;
/// Above this estimate, require `--force`.
const FORCE_ABOVE: f64 = 10.0;
/// Above this estimate, abort unless `--max-cost` raises the ceiling.
const ABORT_ABOVE: f64 = 100.0;

/// Runs one batch and returns its exit status. Errors are things that stop the run before
/// any unit ran (bad input, cost limits); everything after that is reported.
pub async fn run(settings: BatchSettings) -> Result<ExitStatus, RlmError> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let settings = Arc::new(settings);

    let manifest = input::resolve_glob(
        &settings.cwd,
        &settings.pattern,
        &WalkOptions {
            respect_ignore: settings.respect_ignore,
            hidden: settings.hidden,
            exclude_dir: settings.output_dir.clone(),
        },
    )?;
    if manifest.matched() == 0 {
        return Err(RlmError::NoMatch(no_match_message(&settings.pattern)));
    }
    if manifest.files.is_empty() {
        let reasons: Vec<String> = manifest
            .skipped
            .iter()
            .take(3)
            .map(|s| format!("{}: {}", s.path, s.reason))
            .collect();
        return Err(RlmError::Usage(format!(
            "all {} files matching '{}' were skipped ({}): nothing to send",
            manifest.skipped.len(),
            settings.pattern,
            reasons.join("; ")
        )));
    }

    if let Some(blocker) = settings.call_blocker.as_ref().filter(|_| !settings.dry_run) {
        return Err(RlmError::Usage(blocker.clone()));
    }

    let units = plan::plan(&manifest, &settings);
    let cache = Cache::new(&settings.rlm_dir());
    let pre = cache_prepass(&units, &cache, &settings);
    if settings.cache_mode == CacheMode::ReadOnly && !pre.misses.is_empty() {
        return Err(RlmError::Usage(cache_only_message(&units, &pre.misses)));
    }

    let estimate = estimate_cost(&units, &pre.misses, &settings);
    if !settings.quiet && !settings.json {
        eprintln!("{}", init_block(&settings, &manifest, &pre, &estimate));
    }
    if let Some(w) = &settings.parallelism.warning {
        if !settings.quiet {
            eprintln!("rlm: warning: {w}");
        }
    }
    if settings.dry_run {
        print_dry_run(&settings, &units, &pre, &estimate);
        return Ok(ExitStatus::Success);
    }
    check_cost(&settings, &estimate)?;

    let store = RunStore::create(&settings.rlm_dir(), settings.output_dir.as_deref())?;
    let mut state = RunState::new(&settings, &units);
    state.report.skipped = manifest.skipped.clone();
    state.report.files_matched = manifest.matched();
    state.report.estimated_cost_usd = estimate.usd;

    // Cache hits: write their result files now; they count as done without a call.
    for (i, entry) in &pre.hits {
        let unit = &units[*i];
        let record = &mut state.records[*i];
        record.cached = true;
        record.tokens_saved = entry.usage.total();
        record.truncated = entry.truncated;
        match store.write(&unit.result_name, &entry.text) {
            Ok(_) => {
                record.status = UnitStatus::Succeeded;
                record.result_file = Some(unit.result_name.clone());
                state.texts[*i] = Some(entry.text.clone());
            }
            Err(e) => {
                record.status = UnitStatus::Failed;
                record.reason = Some(format!(
                    "cannot write {}: {e}",
                    store.dir.join(&unit.result_name).display()
                ));
            }
        }
    }
    for (i, reason) in &pre.blocked {
        state.records[*i].status = UnitStatus::Failed;
        state.records[*i].reason = Some(reason.clone());
    }

    // Execute the misses.
    let (notices_tx, mut notices_rx) = mpsc::unbounded_channel();
    let call = Arc::new(CallContext {
        provider: Provider::new(&settings)?,
        policy: RetryPolicy {
            retries: settings.retries,
            base: settings.backoff_base,
            max: std::time::Duration::from_secs(60),
        },
        cooldown: Cooldown::default(),
        notices: notices_tx,
    });
    let job_context = Arc::new(JobContext {
        call: call.clone(),
        cache: cache.clone(),
        store: store.clone(),
        settings: settings.clone(),
        query: plan::batch_query(),
    });
    let jobs: Vec<(usize, WorkUnit)> = pre.misses.iter().map(|&i| (i, units[i].clone())).collect();
    let mode = ProgressMode::choose(settings.quiet, settings.stderr_is_terminal);
    let mut dispatcher = Dispatcher {
        state: &mut state,
        progress: Progress::new(mode, jobs.len()),
        max_cost: settings.max_cost,
    };
    let end = exec::run_pool(
        jobs,
        settings.parallelism.width,
        move |(index, unit), slot| run_unit(job_context.clone(), index, unit, slot),
        &mut notices_rx,
        &mut dispatcher,
    )
    .await;
    dispatcher.progress.finish();
    let mut interrupted = end == PoolEnd::Interrupted;
    for record in state.records.iter_mut().filter(|r| r.status == UnitStatus::NotRun) {
        record.reason = Some(if interrupted {
            "interrupted before it finished".into()
        } else {
            "the run stopped first".into()
        });
    }

    // Aggregate what succeeded.
    let results: Vec<ResultItem> = units
        .iter()
        .zip(&state.texts)
        .filter_map(|(u, t)| {
            t.as_ref().map(|text| ResultItem {
                path: u.file.display.clone(),
                text: text.clone(),
            })
        })
        .collect();
    let stopped_early = interrupted || state.fatal.is_some();
    if !results.is_empty() {
        let (aggregate, summary_interrupted) =
            build_aggregate(&settings, &store, &cache, call, &results, &mut state, stopped_early).await;
        interrupted |= summary_interrupted;
        write_aggregate(&settings, &store, aggregate, &mut state);
    }

    // Report.
    let finished_at = SystemTime::now();
    let fatal = state.fatal.clone();
    let report = state.finish(
        &settings,
        &store,
        started.elapsed().as_millis() as u64,
        started_at,
        finished_at,
    );
    let status = report.decide_status(interrupted, fatal.is_some());
    let mut report = report;
    report.status = status;
    write_report(&settings, &store, &report)?;
    print_completion(&settings, &report);
    Ok(status.exit_status())
}

/// The seed's "No files matched" message.
fn no_match_message(pattern: &str) -> String {
    format!(
        "RLM Batch: No files matched pattern\n\nPattern: {pattern}\n\nPlease check:\n\
         1. Pattern syntax is correct\n2. Files exist in expected location\n3. Working directory is correct\n\n\
         Examples:\n  - src/**/*.ts (all TypeScript files)\n  - test/**/*.test.js (all test files)\n  \
         - **/*.{{js,ts}} (all JS and TS files)\n\n\
         Skipped unless the pattern names them: VCS, dependency and build folders, lock files, minified \
         and generated files, binaries and media. --no-ignore includes .gitignore'd files, --hidden hidden ones."
    )
}

/// The cache pre-pass: which units are served from the cache, which must be called, which
/// cannot be sent at all.
struct Prepass {
    hits: Vec<(usize, CacheEntry)>,
    misses: Vec<usize>,
    blocked: Vec<(usize, String)>,
}

fn cache_prepass(units: &[WorkUnit], cache: &Cache, settings: &BatchSettings) -> Prepass {
    let mut pre = Prepass {
        hits: Vec::new(),
        misses: Vec::new(),
        blocked: Vec::new(),
    };
    let read = settings.cache_mode != CacheMode::WriteOnly;
    for (i, unit) in units.iter().enumerate() {
        if let Some(reason) = &unit.blocked {
            pre.blocked.push((i, reason.clone()));
        } else if let Some(entry) = read.then(|| cache.get(&unit.cache_key, settings.max_tokens)).flatten() {
            pre.hits.push((i, entry));
        } else {
            pre.misses.push(i);
        }
    }
    pre
}

fn cache_only_message(units: &[WorkUnit], misses: &[usize]) -> String {
    let mut msg = format!(
        "--cache-only: {} of {} inputs would miss the cache (nothing was called):",
        misses.len(),
        units.len()
    );
    for &i in misses {
        msg.push_str(&format!(
            "\n  {} (key {})",
            units[i].file.display,
            &units[i].cache_key.as_str()[..16]
        ));
    }
    msg
}

/// The cost estimate of the calls a run would make.
struct Estimate {
    calls: usize,
    input_tokens: u64,
    output_tokens: u64,
    usd: f64,
    price_known: bool,
}

fn estimate_cost(units: &[WorkUnit], misses: &[usize], settings: &BatchSettings) -> Estimate {
    let max_out = u64::from(settings.max_tokens);
    let mut input = 0;
    let mut output = 0;
    for &i in misses {
        let tokens = units[i].estimated_input_tokens;
        input += tokens;
        output += (64 + tokens / 4).min(max_out);
    }
    let mut calls = misses.len();
    if settings.aggregate == AggregateStrategy::Summarize && !misses.is_empty() {
        // One call over all answers (more when they need grouping: roughly proportional).
        calls += 1;
        input += output;
        output += max_out.min(2048);
    }
    Estimate {
        calls,
        input_tokens: input,
        output_tokens: output,
        usd: settings.price.map_or(0.0, |p| p.cost(input, 0, output)),
        price_known: settings.price_basis == PriceBasis::Listed,
    }
}

fn init_block(settings: &BatchSettings, manifest: &Manifest, pre: &Prepass, estimate: &Estimate) -> String {
    let skipped = if manifest.skipped.is_empty() {
        String::new()
    } else {
        format!(" ({} skipped: binary, empty or unreadable)", manifest.skipped.len())
    };
    let cost = if !estimate.price_known && estimate.usd == 0.0 {
        format!(
            "unknown (no price for {}; add one under rlm.prices in .aiwg/aiwg.config)",
            settings.model
        )
    } else {
        format!(
            "${:.4}{}",
            estimate.usd,
            report::price_note(estimate.price_known, estimate.usd, &settings.model)
        )
    };
    format!(
        "RLM Batch Initialized\nPattern: {}\nFiles matched: {}{skipped}\nSub-prompt: {}\nModel: {} ({} at {})\n\
         Max parallel: {}\nAggregate: {}\nCache: {} hits, {} misses{}\n\
         Estimated cost: {cost} ({} calls, ~{} input tokens, ~{} output tokens)\n",
        settings.pattern,
        manifest.matched(),
        settings.sub_prompt,
        settings.model,
        settings.provider.name(),
        settings.base_url,
        settings.parallelism.width,
        settings.aggregate.name(),
        pre.hits.len(),
        pre.misses.len(),
        if pre.blocked.is_empty() {
            String::new()
        } else {
            format!(", {} too large to send", pre.blocked.len())
        },
        estimate.calls,
        estimate.input_tokens,
        estimate.output_tokens,
    )
}

fn print_dry_run(settings: &BatchSettings, units: &[WorkUnit], pre: &Prepass, estimate: &Estimate) {
    // What the real run would do with this estimate.
    let verdict = match cost_verdict(settings, estimate.usd) {
        _ if settings.call_blocker.is_some() => {
            format!("cannot start: {}", settings.call_blocker.as_deref().unwrap_or_default())
        }
        Ok(false) => "proceeds".to_string(),
        Ok(true) => format!("asks to confirm the ${:.2} (pass --yes)", estimate.usd),
        Err(e) => format!("refused: {e}"),
    };
    let hit: std::collections::HashSet<usize> = pre.hits.iter().map(|(i, _)| *i).collect();
    let mut out = std::io::stdout().lock();
    if settings.json {
        let plan: Vec<serde_json::Value> = units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                serde_json::json!({
                    "path": u.file.display,
                    "bytes": u.file.size,
                    "content_hash": u.file.content_hash,
                    "cache_key": u.cache_key.as_str(),
                    "cached": hit.contains(&i),
                    "result_file": u.result_name,
                    "estimated_input_tokens": u.estimated_input_tokens,
                    "blocked": u.blocked,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "dry_run": true,
            "model": settings.model,
            "provider": settings.provider.name(),
            "max_parallel": settings.parallelism.width,
            "aggregate": settings.aggregate.name(),
            "cache_hits": pre.hits.len(),
            "cache_misses": pre.misses.len(),
            "estimated_calls": estimate.calls,
            "estimated_input_tokens": estimate.input_tokens,
            "estimated_output_tokens": estimate.output_tokens,
            "estimated_cost_usd": estimate.usd,
            "price_known": estimate.price_known,
            "cost_check": verdict,
            "units": plan,
        });
        let _ = writeln!(out, "{doc:#}");
    } else {
        for (i, u) in units.iter().enumerate() {
            let state = match (&u.blocked, hit.contains(&i)) {
                (Some(_), _) => "too-large",
                (None, true) => "cached",
                (None, false) => "call",
            };
            let _ = writeln!(out, "{state:<9} {:>9} B  {}", u.file.size, u.file.display);
        }
        let _ = writeln!(
            out,
            "dry run: {} files, {} cached, {} calls, estimated ${:.4}; nothing was called\nthe real run {verdict}",
            units.len(),
            pre.hits.len(),
            estimate.calls,
            estimate.usd
        );
    }
}

/// What the seed's safety thresholds say about an estimate, short of asking: `Err` refuses
/// the run, `Ok(true)` means it asks for confirmation (or warns without a terminal).
fn cost_verdict(settings: &BatchSettings, usd: f64) -> Result<bool, RlmError> {
    let over = |limit: f64, how: &str| {
        RlmError::Usage(format!(
            "Estimated cost (${usd:.2}) exceeds safety threshold (${limit:.2}). Options: {how}; reduce scope with a \
             more specific glob; use a cheaper model (--model haiku)"
        ))
    };
    if let Some(max) = settings.max_cost {
        if usd > max {
            return Err(over(max, "raise --max-cost"));
        }
    } else if usd > ABORT_ABOVE {
        return Err(over(ABORT_ABOVE, "pass --max-cost USD to allow it"));
    }
    if usd > FORCE_ABOVE && !settings.force {
        return Err(over(FORCE_ABOVE, "proceed anyway with --force"));
    }
    Ok(usd > CONFIRM_ABOVE && !settings.yes && !settings.force)
}

/// The seed's safety thresholds, asking on a terminal.
fn check_cost(settings: &BatchSettings, estimate: &Estimate) -> Result<(), RlmError> {
    let usd = estimate.usd;
    if cost_verdict(settings, usd)? {
        if settings.stdin_is_terminal && settings.stderr_is_terminal {
            eprint!("Estimated cost is ${usd:.2}. Proceed? (y/n) ");
            let mut answer = String::new();
            let _ = std::io::stdin().lock().read_line(&mut answer);
            if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
                return Err(RlmError::Usage("cancelled: nothing was called".into()));
            }
        } else if !settings.quiet {
            eprintln!("rlm: warning: estimated cost ${usd:.2} is above $1; no terminal to ask, proceeding (--yes silences this)");
        }
    }
    Ok(())
}

/// What a unit job needs; shared read-only by all jobs.
struct JobContext {
    call: Arc<CallContext>,
    cache: Cache,
    store: RunStore,
    settings: Arc<BatchSettings>,
    query: String,
}

/// What a finished unit reports back to the dispatcher.
struct UnitDone {
    index: usize,
    result_file: String,
    text: Option<String>,
    usage: Usage,
    attempts: u32,
    duration_ms: u64,
    truncated: bool,
    failure: Option<CallFailure>,
    /// The slot of a failed call, freed only after the dispatcher has seen the failure:
    /// freed at the end of the task, the pool could dispatch (and call) another unit before
    /// a fatal 401 stops the run.
    slot: Option<OwnedSemaphorePermit>,
}

/// One unit: read, call, write the result, write the cache — then it is done.
/// `slot` is the pool permit: held while the model is called, released before the writes.
async fn run_unit(ctx: Arc<JobContext>, index: usize, unit: WorkUnit, slot: OwnedSemaphorePermit) -> UnitDone {
    let started = Instant::now();
    let mut done = UnitDone {
        index,
        result_file: unit.result_name.clone(),
        text: None,
        usage: Usage::default(),
        attempts: 0,
        duration_ms: 0,
        truncated: false,
        failure: None,
        slot: None,
    };
    let bytes = match std::fs::read(&unit.file.path) {
        Ok(b) => b,
        Err(e) => {
            done.failure = Some(CallFailure::Unit(format!(
                "cannot read {}: {e}",
                unit.file.path.display()
            )));
            return done;
        }
    };
    // The file may have changed since it was planned: key the result by what was sent.
    let hash = sha256_hex(&bytes);
    let key = if hash == unit.file.content_hash {
        unit.cache_key.clone()
    } else {
        plan::unit_key(&unit.file, &hash, &ctx.query, &ctx.settings)
    };
    let content = String::from_utf8_lossy(&bytes);
    let user = prompt::render_file_message(&ctx.settings.sub_prompt, &unit.file.display, &content);
    drop(bytes);
    let request = CompletionRequest {
        system: prompt::BATCH_SYSTEM,
        user: &user,
        max_tokens: ctx.settings.max_tokens,
    };
    let result = exec::call_with_retries(&ctx.call, &request, &unit.file.display).await;
    done.attempts = result.attempts;
    done.duration_ms = started.elapsed().as_millis() as u64;
    let completion = match result.outcome {
        Ok(c) => c,
        Err(f) => {
            done.failure = Some(f);
            done.slot = Some(slot);
            return done;
        }
    };
    drop(slot);
    done.usage = completion.usage;
    done.truncated = completion.truncated;
    if completion.text.trim().is_empty() {
        done.failure = Some(CallFailure::Unit(format!(
            "the model returned an empty answer (stop reason: {})",
            completion.stop_reason.as_deref().unwrap_or("none")
        )));
        return done;
    }
    // Written before it counts as done: result file first, then the cache.
    if let Err(e) = ctx.store.write(&unit.result_name, &completion.text) {
        let path = ctx.store.dir.join(&unit.result_name);
        done.failure = Some(CallFailure::Unit(format!("cannot write {}: {e}", path.display())));
        return done;
    }
    let entry = CacheEntry {
        key: key.0,
        model: ctx.settings.model.clone(),
        inputs: vec![ArtifactRef {
            artifact_id: unit.file.display.clone(),
            content_hash: hash,
        }],
        text: completion.text.clone(),
        usage: completion.usage,
        truncated: completion.truncated,
        max_tokens: ctx.settings.max_tokens,
        created_unix: report::unix_now(),
    };
    if let Err(e) = ctx.cache.put(&entry) {
        let _ = ctx.call.notices.send(Notice::Warning(format!(
            "{}: result saved but not cached: {e}",
            unit.file.display
        )));
    }
    done.text = Some(completion.text);
    done
}

/// The run's state as the dispatcher builds it.
struct RunState {
    records: Vec<UnitRecord>,
    texts: Vec<Option<String>>,
    report: RunReport,
    price: Option<Price>,
    cost: f64,
    fatal: Option<String>,
}

impl RunState {
    fn new(settings: &BatchSettings, units: &[WorkUnit]) -> Self {
        RunState {
            records: units.iter().map(|u| UnitRecord::new(&u.file.display)).collect(),
            texts: vec![None; units.len()],
            report: RunReport {
                status: report::RunStatus::Success,
                pattern: settings.pattern.clone(),
                sub_prompt: settings.sub_prompt.clone(),
                model: settings.model.clone(),
                provider: settings.provider.name().to_string(),
                aggregate: settings.aggregate.name().to_string(),
                max_parallel: settings.parallelism.width,
                files_matched: 0,
                succeeded: 0,
                failed: Vec::new(),
                skipped: Vec::new(),
                not_run: Vec::new(),
                truncated: Vec::new(),
                cache_hits: 0,
                cache_misses: 0,
                tokens_saved: 0,
                tokens_in: 0,
                tokens_out: 0,
                cost_usd: 0.0,
                estimated_cost_usd: 0.0,
                price_known: settings.price_basis == PriceBasis::Listed,
                duration_ms: 0,
                started_at: String::new(),
                finished_at: String::new(),
                output_dir: String::new(),
                aggregate_path: None,
                aggregate_json_path: None,
                report_path: String::new(),
                error: None,
                warnings: settings.parallelism.warning.iter().cloned().collect(),
                units: Vec::new(),
                aggregate_calls: Vec::new(),
            },
            price: settings.price,
            cost: 0.0,
            fatal: None,
        }
    }

    fn cost_of(&self, usage: Usage) -> f64 {
        self.price.map_or(0.0, |p| {
            p.cost(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens)
        })
    }

    /// Totals, lists and paths: the report as it will be written.
    fn finish(
        self,
        settings: &BatchSettings,
        store: &RunStore,
        duration_ms: u64,
        started_at: SystemTime,
        finished_at: SystemTime,
    ) -> RunReport {
        let mut report = self.report;
        for record in &self.records {
            match record.status {
                UnitStatus::Succeeded => report.succeeded += 1,
                UnitStatus::Failed => report.failed.push(FailedFile {
                    path: record.path.clone(),
                    reason: record.reason.clone().unwrap_or_default(),
                }),
                UnitStatus::NotRun => report.not_run.push(record.path.clone()),
            }
            if record.truncated && record.status == UnitStatus::Succeeded {
                report.truncated.push(record.path.clone());
            }
            if record.cached {
                report.cache_hits += 1;
            } else {
                report.cache_misses += 1;
            }
            report.tokens_saved += record.tokens_saved;
            report.tokens_in += record.tokens_in;
            report.tokens_out += record.tokens_out;
        }
        for call in &report.aggregate_calls {
            report.tokens_in += call.usage.input_tokens;
            report.tokens_out += call.usage.output_tokens;
            report.tokens_saved += call.saved.total();
        }
        report.cost_usd = self.cost;
        report.error = report.error.or(self.fatal);
        report.duration_ms = duration_ms;
        report.started_at = utc_rfc3339(started_at);
        report.finished_at = utc_rfc3339(finished_at);
        report.output_dir = display_path(&store.dir, &settings.cwd);
        report.report_path = display_path(&store.report_md, &settings.cwd);
        report.units = self.records;
        report
    }
}

/// Hears the pool: updates records, progress and cost as each unit finishes.
struct Dispatcher<'a> {
    state: &'a mut RunState,
    progress: Progress,
    max_cost: Option<f64>,
}

impl PoolHandler<UnitDone> for Dispatcher<'_> {
    fn finished(&mut self, done: UnitDone) -> Flow {
        let cost = self.state.cost_of(done.usage);
        self.state.cost += cost;
        let record = &mut self.state.records[done.index];
        record.tokens_in = done.usage.input_tokens;
        record.tokens_out = done.usage.output_tokens;
        record.cached_input_tokens = done.usage.cached_input_tokens;
        record.attempts = done.attempts;
        record.duration_ms = done.duration_ms;
        record.truncated = done.truncated;
        record.cost_usd = cost;
        let path = record.path.clone();
        let mut flow = Flow::Continue;
        let outcome = match done.failure {
            None => {
                record.status = UnitStatus::Succeeded;
                record.result_file = Some(done.result_file);
                self.state.texts[done.index] = done.text;
                Ok(format!(
                    "{}, {} tokens{}",
                    report::format_duration(done.duration_ms),
                    done.usage.total(),
                    if done.truncated { ", TRUNCATED" } else { "" }
                ))
            }
            Some(CallFailure::Unit(reason)) => {
                record.status = UnitStatus::Failed;
                record.reason = Some(reason.clone());
                Err(reason)
            }
            Some(CallFailure::Fatal(reason)) => {
                record.status = UnitStatus::Failed;
                record.reason = Some(reason.clone());
                if self.state.fatal.is_none() {
                    self.state.fatal = Some(reason.clone());
                    self.progress.error(&format!("rlm: error: {reason}"));
                }
                flow = Flow::Stop;
                Err(reason)
            }
        };
        if let (Some(max), Flow::Continue) = (self.max_cost, flow) {
            if self.state.cost > max {
                let reason = format!(
                    "cost so far (${:.4}) passed --max-cost (${max:.2}); stopped dispatching",
                    self.state.cost
                );
                self.progress.say(&format!("rlm: {reason}"));
                self.state.report.error = Some(reason);
                flow = Flow::Stop;
            }
        }
        self.progress.finished(&path, outcome, self.state.cost);
        flow
    }

    fn notice(&mut self, notice: Notice) {
        self.progress.notice(&notice);
    }

    fn interrupting(&mut self, in_flight: usize) {
        self.progress.say(&format!(
            "interrupted: dispatching stopped; waiting up to {}s for {in_flight} calls in flight (Ctrl-C again to stop now)",
            exec::GRACE.as_secs()
        ));
    }

    fn dispatched(&mut self) {
        self.progress.dispatched();
    }
}

/// Builds the aggregate of the chosen strategy; the flag says a summarize was interrupted.
async fn build_aggregate(
    settings: &BatchSettings,
    store: &RunStore,
    cache: &Cache,
    call: Arc<CallContext>,
    results: &[ResultItem],
    state: &mut RunState,
    stopped_early: bool,
) -> (Aggregate, bool) {
    let failed: Vec<(String, String)> = state
        .records
        .iter()
        .filter(|r| r.status == UnitStatus::Failed)
        .map(|r| (r.path.clone(), r.reason.clone().unwrap_or_default()))
        .collect();
    let concat = || aggregate::concat(&settings.pattern, &store.timestamp, results, &failed);
    match settings.aggregate {
        AggregateStrategy::Concat => (concat(), false),
        AggregateStrategy::Merge => (aggregate::merge(results), false),
        AggregateStrategy::Summarize if stopped_early => {
            state.report.warnings.push(
                "summarize skipped because the run stopped early; aggregate.md holds the concatenated results".into(),
            );
            (concat(), false)
        }
        AggregateStrategy::Summarize => {
            let limits = SummarizeLimits {
                context_window: settings.context_window,
                max_tokens: settings.max_tokens,
                width: settings.parallelism.width,
                read_cache: settings.cache_mode != CacheMode::WriteOnly,
                may_call: settings.cache_mode != CacheMode::ReadOnly,
            };
            if !settings.quiet && !settings.json {
                eprintln!("summarizing {} results with {}…", results.len(), settings.model);
            }
            // The pool no longer listens, and tokio's handler stays installed (a Ctrl-C would go
            // unnoticed): listen again here.
            let mut interrupt = exec::Interrupt::new();
            let summarized = tokio::select! {
                result = aggregate::summarize(call, cache.clone(), limits, results) => result,
                () = interrupt.recv() => {
                    state
                        .report
                        .warnings
                        .push("summarize interrupted; aggregate.md holds the concatenated results".into());
                    return (concat(), true);
                }
            };
            let (calls, outcome) = match summarized {
                Ok(summary) => (summary.calls, Ok(summary.text)),
                Err((failure, calls)) => (calls, Err(failure)),
            };
            for c in &calls {
                state.cost += state.cost_of(c.usage);
            }
            state.report.aggregate_calls = calls;
            let aggregate = match outcome {
                Ok(text) => Aggregate {
                    markdown: format!("{}\n", text.trim_end()),
                    json: aggregate::results_as_json(results),
                },
                Err(failure) => {
                    let reason = match failure {
                        CallFailure::Unit(r) => r,
                        CallFailure::Fatal(r) => {
                            state.fatal = state.fatal.take().or(Some(r.clone()));
                            r
                        }
                    };
                    state.report.error = Some(format!(
                        "summarize failed: {reason}; aggregate.md holds the concatenated results instead"
                    ));
                    concat()
                }
            };
            (aggregate, false)
        }
    }
}

fn write_aggregate(settings: &BatchSettings, store: &RunStore, aggregate: Aggregate, state: &mut RunState) {
    let secrets = settings.secrets();
    match store.write("aggregate.md", &report::redact(&aggregate.markdown, &secrets)) {
        Ok(path) => state.report.aggregate_path = Some(display_path(&path, &settings.cwd)),
        Err(e) => state.report.error = Some(format!("cannot write aggregate.md in {}: {e}", store.dir.display())),
    }
    if let Some(json) = aggregate.json {
        let text = format!("{json:#}\n");
        match store.write("aggregate.json", &text) {
            Ok(path) => state.report.aggregate_json_path = Some(display_path(&path, &settings.cwd)),
            Err(e) => state.report.error = Some(format!("cannot write aggregate.json in {}: {e}", store.dir.display())),
        }
    }
}

fn write_report(settings: &BatchSettings, store: &RunStore, report: &RunReport) -> Result<(), RlmError> {
    let secrets = settings.secrets();
    let json =
        serde_json::to_string_pretty(report).map_err(|e| RlmError::Usage(format!("cannot encode the report: {e}")))?;
    store
        .write("report.json", &report::redact(&json, &secrets))
        .map_err(|e| RlmError::io(store.dir.join("report.json"), e))?;
    crate::fs_atomic::write_atomic(
        &store.report_md,
        report::redact(&report.to_markdown(), &secrets).as_bytes(),
    )
    .map_err(|e| RlmError::io(&store.report_md, e))
}

fn print_completion(settings: &BatchSettings, report: &RunReport) {
    let mut out = std::io::stdout().lock();
    if settings.json {
        let json = serde_json::to_string_pretty(report).unwrap_or_default();
        let _ = writeln!(out, "{}", report::redact(&json, &settings.secrets()));
        return;
    }
    if settings.quiet {
        if let Some(p) = &report.aggregate_path {
            let _ = writeln!(out, "{p}");
        }
        return;
    }
    let rule = "═══════════════════════════════════════════";
    let mut text = format!(
        "{rule}\nRLM Batch: {}\n{rule}\n\nPattern: {}\nFiles processed: {}/{} ({} from cache)\n",
        report.status.name(),
        report.pattern,
        report.succeeded,
        report.files_matched,
        report.cache_hits
    );
    if !report.failed.is_empty() {
        text.push_str(&format!("Failed: {}\n", report.failed.len()));
        // The first few with their reasons: the report has them all.
        const SHOWN: usize = 5;
        for f in report.failed.iter().take(SHOWN) {
            text.push_str(&format!("  {}: {}\n", f.path, f.reason));
        }
        if report.failed.len() > SHOWN {
            text.push_str(&format!("  … {} more in the report\n", report.failed.len() - SHOWN));
        }
    }
    if !report.skipped.is_empty() {
        text.push_str(&format!("Skipped: {}\n", report.skipped.len()));
    }
    text.push_str(&format!(
        "Duration: {}\nTokens: {} in, {} out ({} saved by the cache)\nTotal cost: ${:.4}{}\n\n",
        report::format_duration(report.duration_ms),
        report.tokens_in,
        report.tokens_out,
        report.tokens_saved,
        report.cost_usd,
        report::price_note(report.price_known, report.cost_usd, &report.model)
    ));
    if let Some(p) = &report.aggregate_path {
        text.push_str(&format!("Results: {p}\n"));
    }
    text.push_str(&format!("Report: {}\n", report.report_path));
    if let Some(e) = &report.error {
        text.push_str(&format!("\nError: {e}\n"));
    }
    text.push_str(&format!("\nSummary:\n{}\n{rule}", report.summary_line()));
    let _ = writeln!(out, "{}", report::redact(&text, &settings.secrets()));
}

/// A path relative to the working directory when it is inside it.
fn display_path(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}
