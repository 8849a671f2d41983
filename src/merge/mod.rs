//! `rlm merge RUN_DIR… -o OUT`: combines runs of one plan over disjoint units — the shards
//! of a `--shard K/N` split, run on N machines — into one run: one aggregate, one report,
//! one set of findings, as if one run had done every unit.
//!
//! The merged run is a run of the whole plan whose units were answered elsewhere. Its
//! settings are the first run's, built again from the options it recorded (its
//! [`crate::settings::RunRecord`]; the aggregation, `--fail-on` and `--sarif` may be given
//! anew) and handed to [`prepare`]; the plan is made again here, from the same inputs, and
//! must be the runs' plan (the same [`crate::shard::PlanId`]): runs of different plans, and
//! runs that share a unit, are refused before anything is written. Each unit's answer is then read from the run that answered it, and the
//! aggregate, findings and report are made by the batch pipeline itself
//! ([`crate::batch::run_merged`]): summarize and synthesize make their aggregation calls.

mod finished_run;

pub use finished_run::FinishedRun;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::batch::{Merged, Planned, Recorded, RecordedUnit};
use crate::cache::CacheMode;
use crate::error::{ExitStatus, RlmError};
use crate::printer::Printer;
use crate::provider::catalog::PriceTier;
use crate::settings::{BatchSettings, Environment};

/// What merge will run: the merged run's settings and what its runs recorded.
pub struct MergePlan {
    pub settings: BatchSettings,
    pub runs: Vec<FinishedRun>,
    /// Holds `--prompt-file`'s stand-in (the prompt the runs recorded) while the merge runs.
    _prompt: Option<tempfile::NamedTempFile>,
}

/// Reads the run in `dir` (relative to the working directory); a directory that is not a
/// finished run is a usage error.
pub fn read_run(dir: &Path, env: &Environment) -> Result<FinishedRun, RlmError> {
    FinishedRun::read(&absolute(dir, &env.cwd))
}

/// Checks that `runs` make one merge written to `output_dir`: one plan, a directory of its
/// own to write to, disjoint units. Every refusal is a usage error (exit 2) before anything
/// is written. Returns where the merged run goes, as an absolute path.
pub fn check(runs: &[FinishedRun], output_dir: &Path, env: &Environment) -> Result<PathBuf, RlmError> {
    one_plan(runs)?;
    let output_dir = absolute(output_dir, &env.cwd);
    for run in runs {
        if same_dir(&run.dir, &output_dir) {
            return Err(RlmError::Usage(format!(
                "-o {} is one of the runs to merge: write the merged run to a directory of its own",
                run.shown
            )));
        }
    }
    disjoint(runs)?;
    Ok(output_dir)
}

/// The merge of `runs` (read and checked) with `settings`, built from the first run's
/// recorded options; `prompt` is the file that stands in for its `--prompt-file`, if it
/// had one, and is kept while the merge runs. The merge sends the prompt the runs sent,
/// and needs a usable key only when its aggregation calls the model.
pub fn prepare(
    mut settings: BatchSettings,
    runs: Vec<FinishedRun>,
    prompt: Option<tempfile::NamedTempFile>,
) -> Result<MergePlan, RlmError> {
    // The prompt the runs sent, whatever the prompt file says now.
    settings.task.sub_prompt = runs[0].sub_prompt.clone();
    let calls_model = matches!(
        settings.task.aggregate,
        crate::aggregate::AggregateStrategy::Summarize | crate::aggregate::AggregateStrategy::Synthesize
    );
    if !calls_model {
        // Concat and merge call nothing: no key is needed.
        settings.provider.blocker = None;
    } else if let Some(blocker) = settings.provider.blocker.take() {
        return Err(RlmError::Usage(format!(
            "rlm merge --aggregate {} calls the model: {blocker}",
            settings.task.aggregate.name()
        )));
    }
    Ok(MergePlan {
        settings,
        runs,
        _prompt: prompt,
    })
}

/// Plans the whole job again, checks it is the runs' plan, and runs the merge.
pub async fn run(merge: MergePlan, printer: Printer) -> Result<ExitStatus, RlmError> {
    let MergePlan { settings, runs, .. } = &merge;
    // Planning reads nothing from the cache: every answer comes from the runs.
    let mut planning = settings.clone();
    planning.exec.cache_mode = CacheMode::WriteOnly;
    planning.output.quiet = true;
    let plan = match crate::batch::plan(&mut planning, &printer).await? {
        Planned::Plan(plan) => plan,
        Planned::Nothing(_) => {
            return Err(RlmError::Usage(format!(
                "the inputs here select no file, but {} ran over some: run rlm merge where the runs' inputs are \
                 (the same checkout and configuration)",
                runs[0].shown
            )))
        }
    };
    let expected = &runs[0].plan_id;
    if plan.plan_id.as_str() != expected {
        return Err(RlmError::Usage(format!(
            "the inputs here make plan {}, but the runs are of plan {expected}: run rlm merge where the runs' inputs \
             are, unchanged (the same checkout, prompt, configuration and prompt overrides)",
            plan.plan_id
        )));
    }
    let recorded: Recorded = runs
        .iter()
        .flat_map(|run| {
            run.units.iter().map(|record| {
                (
                    record.id.clone(),
                    RecordedUnit {
                        dir: run.dir.clone(),
                        record: record.clone(),
                    },
                )
            })
        })
        .collect();
    let held = plan.units.iter().filter(|u| recorded.contains_key(&u.id)).count();
    printer.banner(&format!(
        "RLM Merge\nPlan: {} ({} units)\nRuns: {}\nUnits held: {held} of {}{}\nAggregate: {}\n",
        plan.plan_id,
        plan.units.len(),
        runs.iter().map(FinishedRun::describe).collect::<Vec<_>>().join(", "),
        plan.units.len(),
        if held < plan.units.len() {
            " (the others are reported as not run)"
        } else {
            ""
        },
        settings.task.aggregate.name(),
    ));
    let merged = Merged {
        recorded,
        runs: runs.iter().map(|r| r.run_id.clone()).collect(),
        estimated_cost_usd: runs.iter().map(|r| r.estimated_cost_usd).sum(),
        price_tier: price_tier(runs),
        batches: runs.iter().flat_map(|r| r.batches.iter().cloned()).collect(),
    };
    crate::batch::run_merged(settings, &plan, &merged, &printer).await
}

/// The tier the runs' units were billed at: theirs when they agree, `mixed` when they do
/// not. (The merge's own calls, aggregation at most, are realtime and few.)
fn price_tier(runs: &[FinishedRun]) -> PriceTier {
    let first = runs[0].price_tier;
    if runs.iter().all(|r| r.price_tier == first) {
        first
    } else {
        PriceTier::Mixed
    }
}

/// Every run must be of one plan.
fn one_plan(runs: &[FinishedRun]) -> Result<(), RlmError> {
    let first = &runs[0];
    match runs.iter().find(|r| r.plan_id != first.plan_id) {
        Some(other) => Err(RlmError::Usage(format!(
            "runs of different plans: {} is of plan {} and {} of plan {}; merge only the runs of one job (the same \
             inputs, prompt, model and flags, split with --shard)",
            first.describe(),
            first.plan_id,
            other.describe(),
            other.plan_id
        ))),
        None => Ok(()),
    }
}

/// No unit may be in two runs: which answer would count?
fn disjoint(runs: &[FinishedRun]) -> Result<(), RlmError> {
    let mut owner: HashMap<&crate::unit::UnitId, &FinishedRun> = HashMap::new();
    let mut overlap: Option<(&FinishedRun, &FinishedRun, &str)> = None;
    let mut shared = 0usize;
    for run in runs {
        for record in &run.units {
            if let Some(before) = owner.insert(&record.id, run) {
                shared += 1;
                overlap.get_or_insert((before, run, &*record.path));
            }
        }
    }
    match overlap {
        Some((a, b, path)) => Err(RlmError::Usage(format!(
            "{} and {} share {shared} unit{} ({}{}): merge runs over disjoint units, such as the shards of one \
             --shard split",
            a.describe(),
            b.describe(),
            if shared == 1 { "" } else { "s" },
            crate::escape::name(path),
            if shared > 1 { ", …" } else { "" }
        ))),
        None => Ok(()),
    }
}

fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// Whether two paths name one directory (the second may not exist yet).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
