//! `rlm job`: multi-phase jobs over structured items (the fifth seed, issue 19). Thousands
//! of items — open pull requests, issues, changelog entries — too many for one context
//! window, processed by stateless workers in phases (map → reduce → review → report), each
//! phase's output a JSON document checked against a schema, the whole job resumable on disk.
//!
//! This module owns the subcommands: a job is prepared in memory (definition, prompts,
//! items), estimated and confirmed before anything is written or paid, then created on
//! disk (`job_dir`) and run phase by phase (`runner`). `resume` and `rerun` take a job up
//! again from its `job.json`; `list`, `status` and `export` read it.

mod action;
mod batch_api;
mod batch_check;
mod batches;
mod cache_forecast;
mod cancel;
mod cluster;
mod definition;
mod estimate;
mod export;
mod github;
mod ingest;
mod job_dir;
mod map;
mod pr_report;
mod pr_review;
mod preflight;
mod prepare;
mod progress;
mod records;
mod reduce;
mod report;
mod review;
mod runner;
mod select;
mod settings;
mod state;
mod status;
mod store_link;
mod worker;

pub use action::{JobAction, PrReviewOptions, RerunJob, ResumeJob, RunJob};
pub use cancel::{cancel, CancelJob};
pub use definition::{JobDefinition, PhaseDefinition, PhaseKind};
pub use export::{ExportFormat, ExportOptions};
pub use settings::{CallFlags, RunFlags};
pub use state::JobStatus;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::batch::estimate::confirm_cost;
use crate::batch::startup::model_for;
use crate::cache::Cache;
use crate::error::{CacheFailure, ExitStatus, InputFailure, Interrupted, RlmError, StoreRefusal, SystemFailure};
use crate::exec::Interrupt;
use crate::printer::{ColorChoice, Printer};
use crate::prompt::Delimiter;
use crate::provider::ModelInfo;
use crate::schema::OutputSchema;
use crate::settings::Environment;
use crate::store::Timestamp;

use job_dir::{read_json, write_bytes, write_json, JobDir};
use prepare::{prepare_file, prepare_pr_review, Prepared};
use progress::Progress;
use runner::{JobRun, ResolvedPhase};
use settings::{JobSettings, RememberedSettings};
use state::{JobRecord, PhaseState, Source, RECORD_VERSION};
use store_link::StoreLink;

/// Runs one `rlm job` subcommand; an error that ends it is printed here, as one line (and,
/// with `--json`, as one error document on stdout naming the job once it exists).
pub fn run_command(command: JobAction, color: ColorChoice, env: &Environment) -> ExitStatus {
    let json = command.wants_json();
    let outcome = match command {
        JobAction::List { json } => status::list(json, env).map_err(JobFailure::from),
        JobAction::Status { job, json } => status::status(job.as_deref(), json, env).map_err(JobFailure::from),
        other => match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(runtime) => {
                let outcome = runtime.block_on(run_async(other, color, env));
                runtime.shutdown_timeout(std::time::Duration::from_secs(1));
                outcome
            }
            Err(e) => Err(RlmError::from(SystemFailure::Runtime(e)).into()),
        },
    };
    outcome.unwrap_or_else(|failure| failure.report(json))
}

/// An error that ended a job command, and the job it happened to once the job exists.
struct JobFailure {
    error: RlmError,
    /// The job's id and directory.
    job: Option<(String, PathBuf)>,
}

impl From<RlmError> for JobFailure {
    fn from(error: RlmError) -> Self {
        JobFailure { error, job: None }
    }
}

impl JobFailure {
    /// `error`, which happened to the job in `dir`.
    fn in_job(dir: &JobDir) -> impl Fn(RlmError) -> JobFailure + '_ {
        move |error| JobFailure {
            error,
            job: Some((dir.id.clone(), dir.root.clone())),
        }
    }

    /// One line on stderr; with `--json`, `rlm batch`'s error document on stdout, with the
    /// job's `job_id` and `dir` when there is a job.
    fn report(self, json: bool) -> ExitStatus {
        let status = self.error.exit_status();
        let message = self.error.to_string();
        let printer = Printer::new(
            crate::printer::PrinterMode {
                json,
                ..crate::printer::PrinterMode::default()
            },
            crate::secret::Redactor::default(),
        );
        printer.error(&message);
        if json {
            let mut doc = crate::error::error_document(self.error.kind(), &message);
            if let Some((id, dir)) = &self.job {
                doc["job_id"] = json!(id);
                doc["dir"] = json!(dir.display().to_string());
            }
            printer.json(&doc);
        }
        status
    }
}

async fn run_async(command: JobAction, color: ColorChoice, env: &Environment) -> Result<ExitStatus, JobFailure> {
    match command {
        JobAction::Run(RunJob { file, call, flags }) => {
            let settings = resolve(RememberedSettings::default(), &call, flags, color, env)?;
            let mut interrupt = Interrupt::new();
            let prepared = prepare_file(&file, env, &mut interrupt).await?;
            // Boxed: a job's run is a large future.
            Box::pin(start(prepared, settings, interrupt)).await
        }
        JobAction::PrReview(args) => {
            let settings = resolve(
                RememberedSettings::default(),
                &args.call,
                args.flags.clone(),
                color,
                env,
            )?;
            let mut interrupt = Interrupt::new();
            let prepared = prepare_pr_review(&args, env, &mut interrupt).await?;
            Box::pin(start(prepared, settings, interrupt)).await
        }
        JobAction::Resume(ResumeJob { job, call, flags }) => {
            let dir = match &job {
                Some(q) => JobDir::open(&env.cwd, Some(q))?,
                None => latest_unfinished(&env.cwd)?,
            };
            let in_job = JobFailure::in_job(&dir);
            let record = dir.read_record().map_err(&in_job)?;
            if !record.status.is_unfinished() {
                return Err(in_job(
                    StoreRefusal::JobEnded {
                        job: record.job_id,
                        status: record.status,
                    }
                    .into(),
                ));
            }
            let settings = resolve(record.remembered_settings(), &call, flags, color, env).map_err(&in_job)?;
            go_on(&dir, record, settings, None, Interrupt::new())
                .await
                .map_err(in_job)
        }
        JobAction::Rerun(RerunJob {
            job,
            phase,
            prompt,
            call,
            flags,
        }) => {
            let dir = JobDir::open(&env.cwd, Some(&job))?;
            let in_job = JobFailure::in_job(&dir);
            let record = dir.read_record().map_err(&in_job)?;
            let index = record.definition.phase_index(&phase).map_err(&in_job)?;
            let prompt = match &prompt {
                Some(p) => Some(
                    fs_err::read_to_string(env.cwd.join(p))
                        .map_err(|e| in_job(InputFailure::flag_file("--prompt")(e).into()))?,
                ),
                None => None,
            };
            let settings = resolve(record.remembered_settings(), &call, flags, color, env).map_err(&in_job)?;
            go_on(&dir, record, settings, Some(Rerun { index, prompt }), Interrupt::new())
                .await
                .map_err(in_job)
        }
        JobAction::Export(args) => {
            let printer = Printer::new(
                crate::printer::PrinterMode {
                    quiet: false,
                    json: false,
                    stderr_is_terminal: env.stderr_is_terminal,
                    color: false,
                },
                crate::secret::Redactor::default(),
            );
            Ok(export::export(args, env, &printer).await?)
        }
        JobAction::List { .. } | JobAction::Status { .. } => Ok(ExitStatus::Success),
    }
}

/// The job's settings: remembered flags, the ones given now laid over them.
fn resolve(
    mut remembered: RememberedSettings,
    given: &CallFlags,
    flags: RunFlags,
    color: ColorChoice,
    env: &Environment,
) -> Result<JobSettings, RlmError> {
    remembered.overlay(given);
    JobSettings::resolve(remembered, flags, color, env)
}

/// Each phase's model (asking a local server which it serves when none was given, which
/// may take minutes: Ctrl-C, heard through `interrupt`, ends the wait).
async fn models(
    settings: &JobSettings,
    definition: &JobDefinition,
    printer: &Printer,
    interrupt: &mut Interrupt,
) -> Result<Vec<ModelInfo>, RlmError> {
    let mut out = Vec::new();
    for phase in &definition.phases {
        let provider = settings.phase_provider(phase)?;
        let found = tokio::select! {
            biased;
            () = interrupt.recv() => {
                return Err(Interrupted::ModelDiscovery.into())
            }
            found = model_for(&provider, &settings.budget.prices, printer) => found,
        };
        let model = match found {
            Ok(m) => m,
            Err(_) if settings.dry_run => ModelInfo::resolve("unknown".into(), None, &settings.budget.prices, false),
            Err(e) => return Err(e.into()),
        };
        out.push(model);
    }
    Ok(out)
}

/// What an estimate is made from.
#[derive(Clone, Copy)]
struct JobInputs<'a> {
    definition: &'a JobDefinition,
    record: Option<&'a JobRecord>,
    items: &'a [Value],
    texts: &'a [(Option<String>, Option<String>)],
    context: Option<&'a str>,
}

/// What would stop the phases that will run (the phases of `record` not done yet): checked
/// before anything is paid, so a job never stops half-way for a missing key or a missing
/// program after paying for the phases before.
fn blockers(
    settings: &JobSettings,
    definition: &JobDefinition,
    record: Option<&JobRecord>,
    texts: &[(Option<String>, Option<String>)],
) -> Result<Vec<String>, RlmError> {
    let runs: Vec<preflight::Runs<'_>> = definition
        .phases
        .iter()
        .enumerate()
        .filter(|(i, _)| record.is_none_or(|r| !r.phases[*i].status().is_done()))
        .map(|(i, phase)| preflight::Runs {
            phase,
            calls_model: texts.get(i).is_some_and(|(prompt, _)| prompt.is_some()),
        })
        .collect();
    preflight::blockers(settings, &runs)
}

/// Refuses a job that a blocker would stop (one line, exit 2): not for `--dry-run`, which
/// shows them beside its estimate.
fn refuse_blocked(
    settings: &JobSettings,
    definition: &JobDefinition,
    record: Option<&JobRecord>,
    texts: &[(Option<String>, Option<String>)],
) -> Result<(), RlmError> {
    if settings.dry_run {
        return Ok(());
    }
    match blockers(settings, definition, record, texts)?.into_iter().next() {
        Some(blocker) => Err(RlmError::Config(blocker)),
        None => Ok(()),
    }
}

/// When a review still to run fetches each item with gh from the job's repository, and no
/// gh call in this invocation has shown gh working yet (the items came from `--input`, a
/// file, or the job is taken up again): one `gh repo view`, so a gh that is not logged in
/// or cannot see the repository is refused before anything is paid, not after the phases
/// before the review. No call to GitHub when no such phase is left to run, or for a dry run.
/// Ctrl-C, heard through `interrupt`, stops gh.
async fn check_gh_access(
    settings: &JobSettings,
    definition: &JobDefinition,
    record: Option<&JobRecord>,
    interrupt: &mut Interrupt,
) -> Result<(), RlmError> {
    let Some(repo) = &definition.repo else {
        return Ok(());
    };
    let fetches_with_gh = definition.phases.iter().enumerate().any(|(i, phase)| {
        let to_run = record.is_none_or(|r| !r.phases[i].status().is_done());
        let program = phase.fetch.as_ref().and_then(|argv| argv.first());
        to_run && program.is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "gh"))
    });
    if settings.dry_run || !fetches_with_gh {
        return Ok(());
    }
    github::check_access(repo, &settings.cwd, interrupt.recv()).await
}

/// The estimate (what the cache holds not counted), printed; `--dry-run` stops here
/// (`Ok(None)`, the estimate printed as data); then the cost thresholds, whose question
/// Ctrl-C (heard through `interrupt`) answers by ending the job before it starts.
async fn estimate_and_confirm(
    settings: &JobSettings,
    job: &JobInputs<'_>,
    models: &[ModelInfo],
    before: &cache_forecast::Before<'_>,
    printer: &Printer,
    interrupt: &mut Interrupt,
) -> Result<Option<estimate::JobEstimate>, RlmError> {
    let JobInputs {
        definition,
        record,
        items,
        texts,
        context,
    } = *job;
    let item_bytes = if items.is_empty() {
        0
    } else {
        items.iter().map(|i| i.to_string().len() as u64).sum::<u64>() / items.len() as u64
    };
    let context_bytes = context.map_or(0, |c| c.len() as u64);
    let input = estimate::EstimateInput {
        definition,
        states: record.map_or(&[], |r| r.phases.as_slice()),
        items: items.len(),
        item_bytes,
        system_bytes: texts
            .iter()
            .map(|(p, s)| {
                p.as_ref().map_or(0, |p| p.len() as u64 + 600)
                    + s.as_ref().map_or(0, |s| s.len() as u64)
                    + context_bytes
            })
            .collect(),
        models,
        max_tokens: definition
            .phases
            .iter()
            .map(|p| settings.phase_provider(p).map_or(16_000, |p| p.max_tokens))
            .collect(),
        prompts: texts.iter().map(|(p, _)| p.is_some()).collect(),
        batch_api: settings.exec.batch_api.mode.is_on(),
        cache: cache_forecast::forecast(
            settings,
            &cache_forecast::PhaseInputs {
                definition,
                states: record.map(|r| r.phases.as_slice()),
                items,
                texts,
                context,
                models,
            },
            before,
        ),
    };
    let e = estimate::estimate(&input);
    printer.banner(&estimate::table(&e, models));
    if settings.dry_run {
        for blocker in blockers(settings, definition, record, texts)? {
            printer.warn(&format!("the job cannot start as it is: {blocker}"));
        }
        if settings.output.json {
            printer.json(
                &json!({"dry_run": true, "name": definition.name, "job_id": record.map(|r| &r.job_id),
                "phases": definition.phases.len(), "estimate": e}),
            );
        } else {
            printer.data("Dry run: nothing was sent and nothing was written.");
        }
        return Ok(None);
    }
    // --max-cost caps the job's whole spend: a refusal says what was spent before.
    let spent = record.map_or(0.0, JobRecord::cost_usd);
    confirm_cost(&settings.budget, &settings.output, e.usd, spent, printer, interrupt).await?;
    Ok(Some(e))
}

/// A new job: estimate, confirm, then create it on disk and run it. `interrupt` is the
/// job's one listener for Ctrl-C, made before its items were listed: once made, Ctrl-C no
/// longer ends rlm, so every wait from then to the job's end listens to it.
async fn start(prepared: Prepared, settings: JobSettings, mut interrupt: Interrupt) -> Result<ExitStatus, JobFailure> {
    let printer = Printer::new(settings.printer_mode(), settings.redactor());
    let Prepared {
        definition,
        kind,
        source,
        items,
        texts,
        context,
    } = prepared;
    preflight::check_pause_after(&settings, &definition, None)?;
    refuse_blocked(&settings, &definition, None, &texts)?;
    // gh has just listed the pull requests: it is logged in and sees the repository.
    if !matches!(source, Source::GitHub { input: None, .. }) {
        check_gh_access(&settings, &definition, None, &mut interrupt).await?;
    }
    let models = models(&settings, &definition, &printer, &mut interrupt).await?;
    match preflight::check_items_fit(&definition, &items, &models) {
        Err(e) if settings.dry_run => printer.warn(&format!("the job cannot start as it is: {e}")),
        fit => fit?,
    }
    banner(&printer, &settings, &definition, items.len(), &models, None);
    let inputs = JobInputs {
        definition: &definition,
        record: None,
        items: &items,
        texts: &texts,
        context: context.as_deref(),
    };
    let new_job = cache_forecast::Before {
        dir: None,
        moved: &[],
        states: None,
        rerun: None,
    };
    let confirmed = estimate_and_confirm(&settings, &inputs, &models, &new_job, &printer, &mut interrupt).await?;
    let Some(estimate) = confirmed else {
        return Ok(ExitStatus::Success);
    };
    let cache = Cache::new(&settings.rlm_dir());
    cache
        .prepare()
        .map_err(|e| RlmError::from(CacheFailure::Unprepared(e)))?;
    let dir = JobDir::create(&settings.cwd)?;
    let created = Created {
        definition,
        kind,
        source,
        items,
        texts,
        context,
        models,
        estimate,
    };
    create(&dir, created, settings, printer, cache, interrupt)
        .await
        .map_err(JobFailure::in_job(&dir))
}

/// A new job's content, checked and confirmed, before it is written.
struct Created {
    definition: JobDefinition,
    kind: &'static str,
    source: Source,
    items: Vec<Value>,
    texts: Vec<(Option<String>, Option<String>)>,
    context: Option<String>,
    models: Vec<ModelInfo>,
    estimate: estimate::JobEstimate,
}

/// Writes a new job into its directory, then runs it.
async fn create(
    dir: &JobDir,
    created: Created,
    settings: JobSettings,
    printer: Printer,
    cache: Cache,
    interrupt: Interrupt,
) -> Result<ExitStatus, RlmError> {
    let Created {
        definition,
        kind,
        source,
        items,
        texts,
        context,
        models,
        estimate,
    } = created;
    let dir = dir.clone();
    for (i, (phase, (prompt, schema))) in definition.phases.iter().zip(&texts).enumerate() {
        if let Some(p) = prompt {
            write_bytes(&dir.prompt(i, &phase.name, 1), p.as_bytes())?;
        }
        if let Some(s) = schema {
            write_bytes(&dir.schema(i, &phase.name), s.as_bytes())?;
        }
    }
    if let Some(c) = &context {
        write_bytes(&dir.context(), c.as_bytes())?;
    }
    write_json(&dir.data(&definition.items), &items)?;
    let now = Timestamp::now().to_rfc3339();
    let mut record = JobRecord {
        version: RECORD_VERSION,
        job_id: dir.id.clone(),
        name: definition.name.clone(),
        kind: kind.to_string(),
        created_at: now.clone(),
        updated_at: now,
        status: JobStatus::Running,
        phases: definition
            .phases
            .iter()
            .map(|p| PhaseState {
                name: p.name.clone(),
                kind: Some(p.kind),
                prompt_version: 1,
                ..PhaseState::default()
            })
            .collect(),
        definition,
        source,
        settings: settings.remembered.to_store(),
        resolved: resolved(&settings, &models),
        items: items.len(),
        generation: 0,
        stopped: None,
        earlier: state::Spend::default(),
    };
    dir.write_record(&mut record)?;
    dir.event(&json!({"event": "job:created", "job_id": dir.id, "items": items.len(),
        "estimated_cost_usd": estimate.usd, "estimated_calls": estimate.calls}));
    printer.banner(&format!("Job {} in {}", dir.id, dir.root.display()));
    let store = StoreLink::open(&settings, &dir, true, &printer)?;
    launch(Launch {
        settings,
        dir,
        record,
        models,
        context,
        store,
        printer,
        cache,
        interrupt,
    })
    .await
}

/// What `rerun` redoes: a phase (and every phase after it), with a new prompt or not.
struct Rerun {
    index: usize,
    prompt: Option<String>,
}

/// An existing job taken up again (`resume`), or with a phase to redo (`rerun`);
/// `interrupt` is the job's one listener for Ctrl-C, as for [`start`].
async fn go_on(
    dir: &JobDir,
    mut record: JobRecord,
    settings: JobSettings,
    rerun: Option<Rerun>,
    mut interrupt: Interrupt,
) -> Result<ExitStatus, RlmError> {
    let dir = dir.clone();
    let printer = Printer::new(settings.printer_mode(), settings.redactor());
    let items: Vec<Value> = read_json(&dir.data(&record.definition.items))?;
    let mut phases = load_phases(&dir, &record)?;
    let context = fs_err::read_to_string(dir.context()).ok();
    // A rerun's changes are made in memory first: a dry run or a refusal changes nothing.
    let mut moves = Vec::new();
    let states_before = record.phases.clone();
    if let Some(r) = &rerun {
        moves = plan_rerun(&dir, &mut record, r);
        if let Some(p) = &r.prompt {
            phases[r.index].prompt = Some(p.clone());
        }
    }
    preflight::check_pause_after(&settings, &record.definition, Some(&record.phases))?;
    let texts: Vec<(Option<String>, Option<String>)> = phases
        .iter()
        .map(|p| (p.prompt.clone(), p.schema.as_ref().map(|s| s.value.to_string())))
        .collect();
    refuse_blocked(&settings, &record.definition, Some(&record), &texts)?;
    check_gh_access(&settings, &record.definition, Some(&record), &mut interrupt).await?;
    let models = models(&settings, &record.definition, &printer, &mut interrupt).await?;
    banner(
        &printer,
        &settings,
        &record.definition,
        items.len(),
        &models,
        Some(&record.job_id),
    );
    let inputs = JobInputs {
        definition: &record.definition,
        record: Some(&record),
        items: &items,
        texts: &texts,
        context: context.as_deref(),
    };
    let before = cache_forecast::Before {
        dir: Some(&dir),
        moved: &moves,
        states: Some(&states_before),
        rerun: rerun.as_ref().map(|r| (r.index, r.prompt.is_some())),
    };
    let confirmed = estimate_and_confirm(&settings, &inputs, &models, &before, &printer, &mut interrupt).await?;
    if confirmed.is_none() {
        return Ok(ExitStatus::Success);
    }
    let cache = Cache::new(&settings.rlm_dir());
    cache.prepare().map_err(CacheFailure::Unprepared)?;
    // Claim the job before touching its files: another rlm may be working on it.
    let store = StoreLink::open(&settings, &dir, false, &printer)?;
    if let Some(r) = &rerun {
        for (from, to) in &moves {
            if from.exists() {
                fs_err::rename(from, to)?;
            }
        }
        if let Some(p) = &r.prompt {
            let phase = &record.definition.phases[r.index];
            let version = record.phases[r.index].prompt_version;
            write_bytes(&dir.prompt(r.index, &phase.name, version), p.as_bytes())?;
        }
        dir.event(&json!({"event": "job:rerun", "phase": record.phases[r.index].name,
            "new_prompt": r.prompt.is_some(), "generation": record.generation}));
    } else {
        dir.event(&json!({"event": "job:resumed"}));
    }
    record.settings = settings.remembered.to_store();
    record.resolved = resolved(&settings, &models);
    dir.write_record(&mut record)?;
    launch(Launch {
        settings,
        dir,
        record,
        models,
        context,
        store,
        printer,
        cache,
        interrupt,
    })
    .await
}

/// Resets the phases a rerun redoes, in memory; returns the batch directories to move
/// aside (their old batches stay for inspection; their answers stay in the cache).
fn plan_rerun(dir: &JobDir, record: &mut JobRecord, rerun: &Rerun) -> Vec<(PathBuf, PathBuf)> {
    record.generation += 1;
    let generation = record.generation;
    let mut moves = Vec::new();
    for i in rerun.index..record.phases.len() {
        let kind = record.definition.phases[i].kind;
        let state = &mut record.phases[i];
        let batches = dir.batches(&state.name);
        let only_unprocessed = i == rerun.index
            && rerun.prompt.is_none()
            && !state.unprocessed.is_empty()
            && matches!(kind, PhaseKind::Map | PhaseKind::Review);
        if only_unprocessed {
            // Keep the answers; the failed batches' items are planned again.
            for n in &state.failed_batches {
                for path in [dir.batch_input(&state.name, *n), dir.batch_rejected(&state.name, *n)] {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let aside = path.with_file_name(format!("{name}.superseded-{generation}"));
                    moves.push((path, aside));
                }
            }
            state.failed_batches.clear();
            state.unprocessed.clear();
            state.unprocessed_reasons.clear();
            state.status = Some(state::PhaseStatus::Pending);
        } else {
            moves.push((
                batches.clone(),
                batches.with_file_name(format!("{}.rerun-{generation}", state.name)),
            ));
            if i == rerun.index && rerun.prompt.is_some() {
                state.prompt_version = state.prompt_version.max(1) + 1;
            }
            record.reset_phase(i);
        }
    }
    record.status = JobStatus::Running;
    moves
}

/// The prompts and schemas of the job's prompts/.
fn load_phases(dir: &JobDir, record: &JobRecord) -> Result<Vec<ResolvedPhase>, RlmError> {
    record
        .definition
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let version = record.phases.get(i).map_or(1, |s| s.prompt_version.max(1));
            let prompt = fs_err::read_to_string(dir.prompt(i, &p.name, version)).ok();
            let schema_path = dir.schema(i, &p.name);
            let schema = match fs_err::read_to_string(&schema_path) {
                Ok(text) => Some(OutputSchema::from_text(&text, &schema_path)?),
                Err(_) => None,
            };
            Ok(ResolvedPhase { prompt, schema })
        })
        .collect()
}

/// What a job run is started with.
struct Launch {
    settings: JobSettings,
    dir: JobDir,
    record: JobRecord,
    models: Vec<ModelInfo>,
    context: Option<String>,
    store: StoreLink,
    printer: Printer,
    cache: Cache,
    /// The job's one listener for Ctrl-C (see [`start`]).
    interrupt: Interrupt,
}

/// Builds the invocation and runs the phases.
async fn launch(launch: Launch) -> Result<ExitStatus, RlmError> {
    let Launch {
        settings,
        dir,
        record,
        models,
        context,
        store,
        printer,
        cache,
        interrupt,
    } = launch;
    let phases = load_phases(&dir, &record)?;
    let deadline = settings.exec.deadline.map(|d| std::time::Instant::now() + d);
    let run = JobRun {
        progress: Progress::new(printer.clone()),
        interrupt: interrupt.with_deadline(deadline),
        delimiter: Delimiter::default(),
        stop: None,
        answered_endpoints: std::collections::HashSet::new(),
        settings,
        dir,
        record,
        printer,
        store,
        cache,
        models,
        phases,
        context,
    };
    Ok(run.execute().await)
}

/// The start-up lines.
fn banner(
    printer: &Printer,
    settings: &JobSettings,
    definition: &JobDefinition,
    items: usize,
    models: &[ModelInfo],
    job: Option<&str>,
) {
    if let Some(w) = &settings.exec.parallelism.warning {
        printer.warn(w);
    }
    // Each phase's model and endpoint: one of each for most jobs, else phase by phase.
    let calls: Vec<(String, String)> = definition
        .phases
        .iter()
        .zip(models)
        .map(|(phase, model)| {
            let url = settings
                .phase_provider(phase)
                .map_or_else(|_| settings.provider.shown_base_url(), |p| p.shown_base_url());
            (model.id.clone(), url)
        })
        .collect();
    let job = job.map_or(String::new(), |j| format!(" ({j})"));
    let how = if calls.windows(2).all(|w| w[0] == w[1]) {
        let (model, url) = calls.first().cloned().unwrap_or_default();
        format!("model {model} · {url}")
    } else {
        let each: Vec<String> = definition
            .phases
            .iter()
            .zip(&calls)
            .map(|(phase, (model, url))| format!("{} {model} at {url}", phase.name))
            .collect();
        format!("per phase: {}", each.join("; "))
    };
    printer.banner(&format!(
        "rlm job: {}{job} · {items} items · {} phases · {how} · up to {} calls at once",
        definition.name,
        definition.phases.len(),
        settings.exec.parallelism.width
    ));
}

/// What was resolved, for people reading `job.json` (no secrets).
fn resolved(settings: &JobSettings, models: &[ModelInfo]) -> Value {
    json!({
        "provider": settings.provider.kind.name(),
        "endpoint": settings.provider.shown_base_url(),
        "models": models.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        "width": settings.exec.parallelism.width,
    })
}

/// The newest job that has something left to do.
fn latest_unfinished(cwd: &Path) -> Result<JobDir, RlmError> {
    for id in job_dir::list_ids(cwd)?.into_iter().rev() {
        let dir = JobDir::open(cwd, Some(&id))?;
        if dir.read_record().is_ok_and(|r| r.status.is_unfinished()) {
            return Ok(dir);
        }
    }
    Err(StoreRefusal::NoUnfinishedJob.into())
}
