//! The aggregate stage: concat and merge locally; summarize through the run's pool, level
//! by level, falling back to the concatenation (and saying so) when it cannot finish. What
//! went wrong is returned with the aggregate, for the report: nothing is written into a
//! reporter here. [`aggregate`] runs the stage over a run's outcomes and writes the aggregate
//! to the run directory.

use super::aggregate_failure::{phase_text, AggregateFailure};
use super::execution::Execution;
use super::job::{Job, SummaryJob};
use super::{model_caution, write, Outcomes, Plan};
use crate::aggregate::{
    self, Aggregate, AggregateStrategy, Processed, ResultItem, SummaryPlanner, SummaryStep, MAX_LEVELS,
};
use crate::request::SummaryPrompt;
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::unit::UnitId;

/// What the stage needs to know.
pub struct AggregateInput<'a> {
    pub strategy: AggregateStrategy,
    pub pattern: &'a str,
    pub timestamp: &'a str,
    /// How many files and units the results come from.
    pub processed: Processed,
    pub results: &'a [ResultItem],
    /// The content type of each result (synthesis groups by it).
    pub types: &'a [crate::content::ContentType],
    pub failed: &'a [crate::unit_failure::UnitFailure],
    pub context_window: u64,
    pub max_tokens: u32,
    /// `--require-citations` (issue 10): citations are kept through aggregation.
    pub require_citations: bool,
}

/// The aggregate, and the errors of the run it came with (a summary that failed).
pub struct Built {
    pub aggregate: Aggregate,
    pub errors: Vec<String>,
}

/// Builds the aggregate.
pub async fn build(input: AggregateInput<'_>, exec: &mut Execution) -> Built {
    let mut errors = Vec::new();
    let aggregate = if input.require_citations {
        build_cited(input, exec, &mut errors).await
    } else {
        build_plain(input, exec, &mut errors).await
    };
    Built { aggregate, errors }
}

/// The aggregate under `--require-citations` (see [`aggregate::cited`]): concat as is,
/// merge with citation tuples, summarize and synthesize with a `## Sources` footer; `aggregate.json`
/// lists the citations.
async fn build_cited(input: AggregateInput<'_>, exec: &mut Execution, errors: &mut Vec<String>) -> Aggregate {
    let results = input.results;
    let concat = aggregate::concat(input.pattern, input.timestamp, input.processed, results, input.failed);
    let strategy = input.strategy;
    let mut aggregate = match strategy {
        AggregateStrategy::Merge => return aggregate::cited::merge_with_citations(results),
        _ => build_plain(input, exec, errors).await,
    };
    // A summary that could not finish falls back to the concatenation, which passes
    // citations through as they are.
    let model_written = matches!(strategy, AggregateStrategy::Summarize | AggregateStrategy::Synthesize);
    if model_written && aggregate.markdown != concat.markdown {
        aggregate.markdown = aggregate::cited::with_sources(&aggregate.markdown, results);
    }
    aggregate::cited::add_citations_to_json(&mut aggregate, results);
    aggregate
}

async fn build_plain(input: AggregateInput<'_>, exec: &mut Execution, errors: &mut Vec<String>) -> Aggregate {
    let concat = || {
        aggregate::concat(
            input.pattern,
            input.timestamp,
            input.processed,
            input.results,
            input.failed,
        )
    };
    match input.strategy {
        AggregateStrategy::Concat => concat(),
        AggregateStrategy::Merge => aggregate::merge(input.results),
        AggregateStrategy::Summarize | AggregateStrategy::Synthesize if !exec.may_call() => {
            let message = format!(
                "{} skipped because {}; aggregate.md holds the concatenated results",
                input.strategy.name(),
                exec.why_stopped()
            );
            exec.dispatcher.emit(crate::exec::Event::Warning { message });
            concat()
        }
        AggregateStrategy::Synthesize => match super::synthesize::synthesize(&input, exec).await {
            Ok(text) => Aggregate {
                markdown: format!("{}\n", text.trim_end()),
                json: aggregate::results_as_json(input.results),
                sources: None,
            },
            Err(_) if exec.interrupted => {
                exec.dispatcher.emit(crate::exec::Event::Warning {
                    message: "synthesize interrupted; aggregate.md holds the concatenated results".into(),
                });
                concat()
            }
            Err(reason) => {
                errors.push(format!(
                    "synthesize failed: {reason}; aggregate.md holds the concatenated results instead"
                ));
                concat()
            }
        },
        AggregateStrategy::Summarize => match summarize(&input, exec).await {
            Ok(text) => Aggregate {
                markdown: format!("{}\n", text.trim_end()),
                json: aggregate::results_as_json(input.results),
                sources: None,
            },
            Err(_) if exec.interrupted => {
                exec.dispatcher.emit(crate::exec::Event::Warning {
                    message: "summarize interrupted; aggregate.md holds the concatenated results".into(),
                });
                concat()
            }
            Err(reason) => {
                errors.push(format!(
                    "summarize failed: {reason}; aggregate.md holds the concatenated results instead"
                ));
                concat()
            }
        },
    }
}

/// Summarizes the results, in as many levels as the context window needs.
async fn summarize(input: &AggregateInput<'_>, exec: &mut Execution) -> Result<String, AggregateFailure> {
    let planner = SummaryPlanner::new(input.context_window, input.max_tokens);
    let mut sections = SummaryPlanner::sections(input.results);
    for level in 0..MAX_LEVELS {
        let step = planner.next(&sections);
        let jobs: Vec<SummaryJob> = match &step {
            SummaryStep::Final(text) => vec![SummaryJob {
                id: UnitId::named(if level == 0 {
                    "summarize".to_string()
                } else {
                    format!("summarize-final-{level}")
                }),
                label: if level == 0 {
                    "summarize".into()
                } else {
                    format!("summarize (final, level {level})").into()
                },
                prompt: SummaryPrompt::Summarize(text.clone()),
            }],
            SummaryStep::Groups(groups) => groups
                .iter()
                .enumerate()
                .map(|(i, group)| SummaryJob {
                    id: UnitId::named(format!("summarize-{}-{}", level + 1, i + 1)),
                    label: format!("summarize (level {}, group {}/{})", level + 1, i + 1, groups.len()).into(),
                    prompt: SummaryPrompt::Summarize(group.clone()),
                })
                .collect(),
        };
        let ids: Vec<UnitId> = jobs.iter().map(|j| j.id.clone()).collect();
        exec.run_phase(jobs.into_iter().map(Job::Summary).collect()).await;
        let texts = ids
            .iter()
            .map(|id| phase_text(exec, id))
            .collect::<Result<Vec<_>, _>>()?;
        match step {
            SummaryStep::Final(_) => return Ok(texts.into_iter().next().unwrap_or_default()),
            SummaryStep::Groups(_) => sections = SummaryPlanner::summary_sections(&texts),
        }
    }
    Err(AggregateFailure::DidNotShrink {
        context_window: input.context_window,
        levels: MAX_LEVELS,
    })
}

/// What the aggregate stage came to.
pub(super) struct Aggregated {
    pub(super) paths: write::AggregatePaths,
    /// For `rlm query`: the answer to print.
    pub(super) answer: Option<String>,
    /// Errors of the run (a summary that failed, an aggregate not written).
    pub(super) errors: Vec<String>,
}

/// The aggregate of what succeeded, written to the run directory; and for `rlm query`,
/// the answer to print.
pub(super) async fn aggregate(
    settings: &BatchSettings,
    plan: &Plan,
    run_dir: &RunDir,
    outcomes: &mut Outcomes,
    exec: &mut Execution,
) -> Aggregated {
    let processed = outcomes.processed();
    let files = &mut outcomes.answers;
    if files.is_empty() {
        return Aggregated {
            paths: write::AggregatePaths::default(),
            answer: None,
            errors: Vec::new(),
        };
    }
    // Any JSON is an answer under --schema; otherwise only an object or an array is data.
    let typed = settings.task.schema.is_some();
    // `rlm query` over one file prints its answer as it came.
    let single = match files.as_slice() {
        [one] if settings.output.answer_on_stdout => Some(one.answer.text.clone()),
        _ => None,
    };
    // Taken out of the answers (which keep their findings): a run's texts are held once.
    let results: Vec<ResultItem> = files
        .iter_mut()
        .map(|f| {
            let (text, json) = f.answer.take_shown(|v| typed || v.is_object() || v.is_array());
            ResultItem {
                path: f.label.to_string(),
                text,
                json,
            }
        })
        .collect();
    let types: Vec<crate::content::ContentType> = files
        .iter()
        .map(|f| {
            f.content_type
                .unwrap_or_else(|| crate::content::detect(&f.path, "").content_type)
        })
        .collect();
    let strategy = match (settings.output.answer_on_stdout, results.len()) {
        // `rlm query` on a file read in one piece: its answer is the answer.
        (true, 1) => AggregateStrategy::Concat,
        _ => settings.task.aggregate,
    };
    let built = build(
        AggregateInput {
            strategy,
            pattern: &settings.input.pattern,
            timestamp: &run_dir.timestamp,
            processed,
            results: &results,
            types: &types,
            failed: &outcomes.failures,
            context_window: plan.model.context_window,
            max_tokens: settings.provider.max_tokens,
            require_citations: settings.task.require_citations,
        },
        exec,
    )
    .await;
    let answer = settings
        .output
        .answer_on_stdout
        .then(|| single.unwrap_or_else(|| built.aggregate.markdown.clone()));
    let mut aggregate = built.aggregate;
    if let Some(caution) = model_caution(settings, plan) {
        aggregate.markdown = format!("> **Note:** {caution}\n\n{}", aggregate.markdown);
    }
    let (paths, mut errors) = write::aggregate(run_dir, &settings.cwd, &aggregate);
    errors.splice(0..0, built.errors);
    tracing::debug!(resident_mib = ?crate::memory::resident_mib(), "aggregate written");
    Aggregated { paths, answer, errors }
}
