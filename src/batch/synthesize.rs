//! `--aggregate synthesize`: phase 1 one synthesis call per content type (in parallel, in
//! the run's pool; skipped when all results share one type), phase 2 one cross-type call that writes the final report (per-file
//! findings, cross-file analysis, recommendations).

use std::collections::BTreeMap;

use super::aggregate_failure::{phase_text, AggregateFailure};
use super::aggregate_stage::AggregateInput;
use super::execution::Execution;
use super::job::{Job, SummaryJob};
use crate::content::ContentType;
use crate::escape;
use crate::request::SummaryPrompt;
use crate::unit::UnitId;

/// The final report's text, or why it could not be written.
pub async fn synthesize(input: &AggregateInput<'_>, exec: &mut Execution) -> Result<String, AggregateFailure> {
    let mut groups: BTreeMap<ContentType, String> = BTreeMap::new();
    for (result, content_type) in input.results.iter().zip(input.types) {
        let text = groups.entry(*content_type).or_default();
        text.push_str(&format!(
            "### {}\n\n{}\n\n",
            escape::name(&result.path),
            result.text.trim()
        ));
    }

    // Phase 1: one call per content type. With one type there is nothing to group across:
    // the cross-type call reads the per-file results directly, and the run saves a call.
    if groups.len() == 1 {
        let mut summaries = String::new();
        for (content_type, results) in &groups {
            summaries.push_str(&format!("## {content_type}\n\n{}\n\n", results.trim()));
        }
        return cross_type(exec, &summaries).await;
    }
    let jobs: Vec<SummaryJob> = groups
        .iter()
        .map(|(content_type, results)| SummaryJob {
            id: UnitId::named(format!("synthesize-{content_type}")),
            label: format!("synthesize {content_type}").into(),
            prompt: SummaryPrompt::TypeSynthesis {
                content_type: *content_type,
                results: results.clone(),
            },
        })
        .collect();
    let ids: Vec<(ContentType, UnitId)> = groups.keys().copied().zip(jobs.iter().map(|j| j.id.clone())).collect();
    exec.run_phase(jobs.into_iter().map(Job::Summary).collect()).await;
    let mut summaries = String::new();
    for (content_type, id) in &ids {
        let text = phase_text(exec, id)?;
        summaries.push_str(&format!("## {content_type}\n\n{}\n\n", text.trim()));
    }

    cross_type(exec, &summaries).await
}

/// Phase 2: the cross-type report.
async fn cross_type(exec: &mut Execution, summaries: &str) -> Result<String, AggregateFailure> {
    let id = UnitId::named("synthesize");
    let job = SummaryJob {
        id: id.clone(),
        label: "synthesize (cross-type report)".into(),
        prompt: SummaryPrompt::CrossSynthesis(summaries.to_string()),
    };
    exec.run_phase(vec![Job::Summary(job)]).await;
    phase_text(exec, &id)
}
