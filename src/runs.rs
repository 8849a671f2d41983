//! `rlm status`, `rlm list`, `rlm resume` and `rlm cancel`: the task store read back, a
//! stopped run taken up again under its own id, as its next attempt, and a run's batches
//! canceled at the provider.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use clap::Parser;

use crate::cli::{CancelArgs, Cli, ColorArg, Command, ListArgs, ResumeArgs, StatusArgs};
use crate::error::{InUse, LockHolder, RlmError, StoreFailure, StoreRefusal};
use crate::printer::{Printer, PrinterMode};
use crate::run_dir::RunLock;
use crate::secret::Redactor;
use crate::settings::{BatchOptions, BatchSettings, Environment, ResumeTarget, RunKind, RunRecord};
use crate::store::{
    list_json, list_text, status_json, status_text, tree_json, tree_text, Limits, RunId, RunStatus, RunSummary,
    StoreError, TaskStore, Timestamp, UnitState, STORE_FILE,
};

/// The store of this directory; a clear error when no run was ever recorded here.
fn open(cwd: &Path) -> Result<TaskStore, RlmError> {
    let rlm_dir = cwd.join(".aiwg").join("rlm");
    if !rlm_dir.join(STORE_FILE).exists() {
        return Err(StoreRefusal::NoRuns { rlm_dir }.into());
    }
    Ok(TaskStore::open(&rlm_dir)?)
}

/// A run store error as the command's error: another process at work on the run is
/// `in_use`, the rest are the store's.
fn store_error(e: StoreError) -> RlmError {
    match e {
        e @ StoreError::RunInUse { .. } => InUse::Claimed(e).into(),
        e => e.into(),
    }
}

/// The run named, or the latest one of this directory.
fn pick(store: &TaskStore, run: Option<&str>, cwd: &Path) -> Result<RunSummary, RlmError> {
    match run {
        Some(query) => {
            let id = store.find_run(query).map_err(store_error)?;
            store.run(&id).map_err(store_error)
        }
        None => store
            .list_runs(200)
            .map_err(store_error)?
            .into_iter()
            .find(|r| r.cwd == cwd)
            .ok_or_else(|| StoreRefusal::NoRunHere.into()),
    }
}

/// The run named, or the latest run of this directory that no other run started: the
/// root of the newest recursion tree.
fn pick_root(store: &TaskStore, run: Option<&str>, cwd: &Path) -> Result<RunSummary, RlmError> {
    if run.is_some() {
        return pick(store, run, cwd);
    }
    store
        .list_runs(200)
        .map_err(store_error)?
        .into_iter()
        .find(|r| r.cwd == cwd && r.parent.is_none())
        .ok_or_else(|| StoreRefusal::NoRunHere.into())
}

/// `rlm status [RUN] [--tree] [--json]`.
pub fn status(args: StatusArgs, env: &Environment, printer: &Printer) -> Result<(), RlmError> {
    let store = open(&env.cwd)?;
    let run = if args.tree {
        pick_root(&store, args.run.as_deref(), &env.cwd)?
    } else {
        pick(&store, args.run.as_deref(), &env.cwd)?
    };
    let now = Timestamp::now();
    let text = if args.tree {
        let tree = store.tree(&run.id).map_err(store_error)?;
        if args.json {
            tree_json(&tree, now)
        } else {
            tree_text(&tree)
        }
    } else {
        let failures = store.failures(&run.id).map_err(store_error)?;
        // As the last poll saw them: `rlm status` never calls the provider.
        let batches = store.batch_submissions(&run.id).map_err(store_error)?;
        let unresolved = store.batch_intents(&run.id).map_err(store_error)?;
        if args.json {
            status_json(&run, &failures, (&batches, &unresolved), now)
        } else {
            let mut text = status_text(&run, &failures, (&batches, &unresolved), now);
            if let Some(next) = next_step(&run) {
                text = format!("{}\nnext      {next}\n", text.trim_end());
            }
            text
        }
    };
    printer.data(text.trim_end());
    Ok(())
}

/// What goes on with a run that stopped before its units all ran (issue 25): the
/// `rlm resume RUN` its report names, for the units a plain resume sends.
fn next_step(run: &RunSummary) -> Option<String> {
    let how = match run.status {
        RunStatus::Interrupted => "",
        RunStatus::BudgetExceeded => " --max-cost USD",
        RunStatus::DeadlineExceeded => " --deadline DURATION",
        _ => return None,
    };
    let resume = if run.subcommand() == Some("job") {
        "rlm job resume"
    } else {
        "rlm resume"
    };
    let left = run.units.total() - run.units.completed - run.units.failed_for_good();
    let units = match left {
        0 => return None,
        1 => "the 1 unit".to_string(),
        n => format!("the {n} units"),
    };
    Some(format!("{resume} {}{how} sends {units} not run", run.id))
}

/// `rlm list [--json]`.
pub fn list(args: ListArgs, env: &Environment, printer: &Printer) -> Result<(), RlmError> {
    // No store yet is no runs yet: an empty list, not an error.
    let no_store = !env.cwd.join(".aiwg").join("rlm").join(STORE_FILE).exists();
    let runs = if no_store {
        Vec::new()
    } else {
        open(&env.cwd)?.list_runs(args.limit as usize).map_err(store_error)?
    };
    let text = if args.json {
        list_json(&runs, Timestamp::now())
    } else {
        list_text(&runs)
    };
    printer.data(text.trim_end());
    Ok(())
}

/// `rlm resume [RUN] [--failed] [--max-cost USD] [--deadline DURATION] [--base-url URL]`:
/// the settings of the run's own command (from its recorded options), with the budget,
/// deadline, base URL and output flags given now, set to go on in the run's directory under
/// its id as the run's next attempt.
///
/// The run directory is locked before the run is claimed, so a resume of a run that is still
/// going on refuses (naming its pid) without touching it; a run whose directory another run
/// took over is refused, naming that run. Says on stderr which run it took up and how much
/// of it is left (under `--quiet` too when no RUN was given: then rlm picked it).
pub fn resume(mut args: ResumeArgs, color: ColorArg, env: &Environment) -> Result<BatchSettings, RlmError> {
    let store = open(&env.cwd)?;
    let run = match args.run.as_deref() {
        Some(query) => {
            let id = store.find_run(query).map_err(store_error)?;
            store.run(&id).map_err(store_error)?
        }
        None => latest_unfinished(&store, env, args.failed)?,
    };
    if run.status == RunStatus::Superseded {
        return Err(store_error(StoreError::Superseded {
            run: run.id.to_string(),
            by: run
                .superseded_by
                .as_ref()
                .map_or_else(|| "another run".to_string(), ToString::to_string),
            dir: run.output_dir.clone(),
        }));
    }
    let mut options = recorded_options(&run)?;
    restore_base_url(&run, &mut options, args.base_url.take(), "resume")?;
    let owner = run.owner.as_ref().filter(|_| run.is_owned()).map(|o| o.pid);
    let lock = RunLock::acquire_for_resume(&run.output_dir, run.id.as_str(), owner)?;
    // Under the lock, so the run that took the directory over (if one did) cannot be
    // mid-way through replacing it.
    crate::run_dir::check_still_owned(&run.output_dir, run.id.as_str())?;
    // Read only: the run is claimed (a new attempt recorded, its stopped units queued again)
    // when the resumed run starts recording, after every check that could still refuse it.
    let given = Limits {
        max_cost_usd: args.max_cost,
        deadline_ms: args.deadline.map(|secs| (secs * 1000.0).round() as u64),
    };
    let earlier = store.spent(&run.id).map_err(store_error)?;
    // A limit given now, else the latest an earlier resume gave, else the command's own.
    let limits = given.or(store.resume_limits(&run.id).map_err(store_error)?);
    let earlier_completed: HashSet<String> = store
        .units_in_state(&run.id, &[UnitState::Completed])
        .map_err(store_error)?
        .into_iter()
        .collect();
    let skip: HashSet<String> = if args.failed {
        HashSet::new()
    } else {
        store
            .units_in_state(&run.id, &[UnitState::Failed, UnitState::TimedOut])
            .map_err(store_error)?
            .into_iter()
            .collect()
    };
    drop(store);
    let printer = Printer::new(
        PrinterMode {
            quiet: args.quiet,
            ..PrinterMode::default()
        },
        Redactor::default(),
    );
    let line = resuming_line(&run, skip.len() as u64, earlier.cost_usd);
    if args.run.is_none() {
        // A run rlm picked itself is named even under --quiet: taking one up unnamed would
        // be a surprise (the user may have meant another).
        printer.important(&line);
    } else {
        printer.banner(&line);
    }
    if limits.max_cost_usd.is_some() {
        options.max_cost = limits.max_cost_usd;
    }
    if let Some(ms) = limits.deadline_ms {
        options.deadline = Some(ms as f64 / 1000.0);
    }
    options.yes |= args.yes;
    options.quiet |= args.quiet;
    options.json |= args.json;
    let mut settings = replay(&run, options, color, env)?;
    crate::batch::refuse_batches_elsewhere(&settings, &run.id)?;
    settings.resume = Some(ResumeTarget {
        run_id: RunId::as_str(&run.id).to_string(),
        output_dir: run.output_dir.clone(),
        skip,
        lock: Arc::new(lock),
        attempt: earlier.attempts + 1,
        spent_usd: earlier.cost_usd,
        elapsed: earlier.elapsed(),
        retry_failed: args.failed,
        limits: given,
        earlier_completed,
        run_timestamp: run_timestamp(&run),
    });
    Ok(settings)
}

/// The newest unfinished `rlm batch` run of this directory that no live rlm works on (with
/// `failed`, `rlm resume --failed`: or with failed units, as a PARTIAL run has); when the
/// only ones are still going on, a refusal naming the pid of the newest. A job is never
/// taken (`rlm job resume` goes on with it), even when it is newer: with no batch run to
/// resume, the newest job is named with what goes on with it.
fn latest_unfinished(store: &TaskStore, env: &Environment, failed: bool) -> Result<RunSummary, RlmError> {
    let depth = env.var("RLM_DEPTH").and_then(|d| d.trim().parse().ok()).unwrap_or(0);
    let (runs, others): (Vec<RunSummary>, Vec<RunSummary>) = store
        .resumable_runs(&env.cwd, depth, failed)
        .map_err(store_error)?
        .into_iter()
        .partition(|r| r.subcommand() == Some("batch"));
    if let Some(run) = runs.iter().find(|r| !r.is_owned()) {
        return Ok(run.clone());
    }
    match runs.first() {
        Some(live) => Err(InUse::NoStoppedRun {
            run: live.id.clone(),
            pid: live.owner.as_ref().map_or(0, |o| o.pid),
        }
        .into()),
        None => match others.iter().find(|r| r.subcommand() == Some("job")) {
            Some(job) => Err(job_refusal(job)),
            None if failed => Err(StoreRefusal::NoRunToRetry.into()),
            None => Err(StoreRefusal::NoUnfinishedRun.into()),
        },
    }
}

/// Why `rlm resume` does not take up the job `run`: `rlm job resume` goes on with it, or,
/// when it ended, nothing does (a phase is redone with `rlm job rerun`).
fn job_refusal(run: &RunSummary) -> RlmError {
    let (run, status) = (run.id.clone(), run.status);
    if matches!(status, RunStatus::Success | RunStatus::Partial) {
        StoreRefusal::EndedJobRun { run, status }
    } else {
        StoreRefusal::JobRun { run, status }
    }
    .into()
}

/// A resumed run's base URL: the one given to `rlm resume`, else the recorded one — unless
/// it held credentials, which no run records (`http://***@host`): replaying that would send
/// `***` as the password, so the resume is refused before anything is sent.
fn restore_base_url(
    run: &RunSummary,
    options: &mut BatchOptions,
    given: Option<String>,
    command: &str,
) -> Result<(), RlmError> {
    if let Some(url) = given {
        options.base_url = Some(url);
        return Ok(());
    }
    if options.base_url.as_deref().is_some_and(credentials_withheld) {
        return Err(RlmError::Usage(format!(
            "run {} was started with a --base-url that holds credentials, which rlm does not record: pass \
             --base-url again (rlm {command} {} --base-url URL)",
            run.id, run.id
        )));
    }
    Ok(())
}

/// Whether `url` is a recorded URL whose credentials were withheld (`scheme://***@host`).
fn credentials_withheld(url: &str) -> bool {
    url.split_once("://").is_some_and(|(_, rest)| rest.starts_with("***@"))
}

/// The options an `rlm batch` run was started with: its record, else (a run of an rlm
/// older still) its command line.
fn recorded_options(run: &RunSummary) -> Result<BatchOptions, RlmError> {
    let not_batch = || -> RlmError {
        StoreRefusal::NotBatch {
            run: run.id.clone(),
            command: run.command.clone(),
        }
        .into()
    };
    if run.subcommand() == Some("job") {
        // A job that ended is nothing `rlm job resume` takes up either: it refuses it too.
        return Err(job_refusal(run));
    }
    if run.subcommand() != Some("batch") {
        return Err(not_batch());
    }
    // The settings are built from the options the run recorded, never from a command line.
    let options = match RunRecord::read(&run.settings) {
        Ok(Some(record)) if record.kind == RunKind::Batch => Ok(record.settings),
        Ok(Some(_)) => Err(not_batch()),
        Err(source) => Err(StoreFailure::UnreadableRecord {
            run: run.id.clone(),
            source,
        }
        .into()),
        // A run recorded by an older rlm, which kept only its command line: the one case
        // where clap parses anything outside `commands.rs`, for compatibility with those
        // stores only (its URL credentials were withheld there too).
        Ok(None) => match Cli::try_parse_from(&run.command) {
            Ok(Cli {
                command: Command::Batch(batch),
                ..
            }) => Ok((*batch).into()),
            _ => Err(not_batch()),
        },
    }?;
    Ok(answered_by(run, options))
}

/// `options` with the provider and the model that answered `run`, where its command left
/// them to the environment and the config: the keys are read again (they are never
/// recorded), but a resume in a shell with other keys (only OPENAI_API_KEY set) must not go
/// on with another provider and model, asking every unit again and mixing two models'
/// answers; it says which key it needs instead.
fn answered_by(run: &RunSummary, mut options: BatchOptions) -> BatchOptions {
    let resolved = run.settings.get("provider");
    if options.provider.is_none() {
        options.provider = resolved
            .and_then(|p| p.get("kind"))
            .and_then(|kind| serde_json::from_value(kind.clone()).ok());
    }
    if options.model.is_none() {
        options.model = resolved
            .and_then(|p| p.get("model"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string);
    }
    options
}

/// The settings of `run`'s own command (as given again), in its own directory.
fn replay(
    run: &RunSummary,
    options: BatchOptions,
    color: ColorArg,
    env: &Environment,
) -> Result<BatchSettings, RlmError> {
    let mut run_env = env.clone();
    run_env.cwd = run.cwd.clone();
    run_env.argv = run.command.clone();
    let mut settings = BatchSettings::resolve(options, RunKind::Batch, color.into(), &run_env)?;
    // The batch mode is part of the run, whatever the config says now.
    settings.exec.batch_api.keep_recorded_mode(&run.settings);
    Ok(settings)
}

/// What `rlm cancel` does.
pub enum Cancel {
    /// No rlm waits for the run's batches: cancel them at the provider, then collect what
    /// had finished, in the run's directory, as the run's next attempt.
    Collect(Box<BatchSettings>),
    /// The rlm that waits for them (`holder`) collects them: only the cancel is asked for.
    AtProvider {
        settings: Box<BatchSettings>,
        run: RunId,
        batches: Vec<String>,
        holder: LockHolder,
    },
    /// A job's batches: canceled at the provider; the job collects what had finished (at
    /// its next poll when it runs, else at `rlm job resume`).
    Job {
        /// Where the job was started.
        cwd: std::path::PathBuf,
        job: String,
        batches: Vec<crate::store::BatchSubmission>,
        /// `--base-url`, when the job's held credentials.
        base_url: Option<String>,
        quiet: bool,
        json: bool,
    },
}

/// `rlm cancel [RUN]`: the run's batches still at the provider, and who collects them.
pub fn cancel(args: CancelArgs, color: ColorArg, env: &Environment) -> Result<Cancel, RlmError> {
    let store = open(&env.cwd)?;
    let run = pick(&store, args.run.as_deref(), &env.cwd)?;
    let waiting: Vec<crate::store::BatchSubmission> = store
        .batch_submissions(&run.id)
        .map_err(store_error)?
        .into_iter()
        .filter(|b| b.collected_at.is_none())
        .collect();
    // A submission whose reply was never recorded may have created a batch: the cancel
    // looks for it first.
    let unsettled = store.batch_intents(&run.id).map_err(store_error)?.len();
    if waiting.is_empty() && unsettled == 0 {
        return Err(StoreRefusal::NothingToCancel { run: run.id }.into());
    }
    if run.subcommand() == Some("job") {
        if waiting.is_empty() {
            return Err(StoreRefusal::SubmissionLost { run: run.id }.into());
        }
        if args.forget {
            return Err(RlmError::Usage(format!(
                "rlm cancel --forget: run {} is a job; its batches are canceled, not given up (`rlm job resume {}` \
                 collects what they answered)",
                run.id, run.id
            )));
        }
        return Ok(Cancel::Job {
            cwd: run.cwd.clone(),
            job: RunId::as_str(&run.id).to_string(),
            batches: waiting,
            base_url: args.base_url,
            quiet: args.quiet,
            json: args.json,
        });
    }
    let waiting: Vec<String> = waiting.into_iter().map(|b| b.batch_id).collect();
    let mut options = recorded_options(&run)?;
    restore_base_url(&run, &mut options, args.base_url, "cancel")?;
    options.yes = true;
    options.quiet |= args.quiet;
    options.json |= args.json;
    let lock = RunLock::try_for_resume(&run.output_dir)?;
    drop(store);
    let mut settings = replay(&run, options, color, env)?;
    if !settings.exec.batch_api.mode.is_on() {
        // The batches were submitted under --batch-api (or the config's), whatever it says now.
        settings.exec.batch_api.mode = crate::settings::BatchApiMode::On;
    }
    settings.exec.batch_api.cancel = true;
    settings.exec.batch_api.forget = args.forget;
    // The run's --deadline (often long past: it is what stopped the run) does not bound the
    // cancel: it waits for the canceled batches on its own bound and collects what finished.
    settings.exec.deadline = None;
    crate::batch::refuse_batches_elsewhere(&settings, &run.id)?;
    let lock = match lock {
        Ok(lock) => lock,
        Err(holder) => {
            return Ok(Cancel::AtProvider {
                settings: Box::new(settings),
                run: run.id.clone(),
                batches: waiting,
                holder,
            })
        }
    };
    let store = open(&env.cwd)?;
    let earlier = store.spent(&run.id).map_err(store_error)?;
    let earlier_completed = store
        .units_in_state(&run.id, &[UnitState::Completed])
        .map_err(store_error)?
        .into_iter()
        .collect();
    drop(store);
    settings.resume = Some(ResumeTarget {
        run_id: RunId::as_str(&run.id).to_string(),
        output_dir: run.output_dir.clone(),
        skip: HashSet::new(),
        lock: Arc::new(lock),
        attempt: earlier.attempts + 1,
        spent_usd: earlier.cost_usd,
        elapsed: earlier.elapsed(),
        retry_failed: false,
        limits: Limits::default(),
        earlier_completed,
        run_timestamp: run_timestamp(&run),
    });
    let printer = Printer::new(
        PrinterMode {
            quiet: args.quiet,
            ..PrinterMode::default()
        },
        Redactor::default(),
    );
    let n = waiting.len();
    printer.banner(&format!(
        "rlm: cancelling run {} ({n} {} at the provider); what had finished is kept",
        run.id,
        if n == 1 { "batch" } else { "batches" }
    ));
    Ok(Cancel::Collect(Box::new(settings)))
}

/// `rlm: resuming run batch-… (started 2026-11-22 10:15 UTC, 40 of 100 units left; $1.52
/// spent so far)`: left are the units not completed, less the failed ones it leaves alone.
/// When the run was first started, as its run directory's files write it
/// (`2026-11-28-065537`): a resume's `aggregate.md` is the run's, not the resume's. Read
/// from the run id (`batch-2026-11-28-065537`, `-2`… when taken), which was made from that
/// very time; the store's own creation time, a moment later, may be in the next second.
fn run_timestamp(run: &RunSummary) -> String {
    let from_id = run
        .id
        .as_str()
        .strip_prefix("batch-")
        .and_then(|rest| rest.get(..17))
        .filter(|t| jiff::fmt::strtime::parse("%Y-%m-%d-%H%M%S", t).is_ok());
    if let Some(timestamp) = from_id {
        return timestamp.to_string();
    }
    jiff::Timestamp::from_millisecond(run.created_at.as_millis())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%d-%H%M%S")
        .to_string()
}

fn resuming_line(run: &RunSummary, skipped: u64, spent_usd: f64) -> String {
    let spent = if spent_usd > 0.0 {
        format!("; {} spent so far", crate::money::usd(spent_usd))
    } else {
        String::new()
    };
    let left = run.units.total() - run.units.completed - skipped;
    format!(
        "rlm: resuming run {} (started {} UTC, {left} of {} units left{spent})",
        run.id,
        run.created_at.to_minutes(),
        run.units.total()
    )
}
