//! `AggregateFailure`: why a model-written aggregate (`--aggregate summarize` or
//! `synthesize`) could not be written. The stage then falls back to the concatenation and
//! says why in the report.

use super::execution::Execution;
use crate::unit::UnitId;

/// Why a summary or synthesis has no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AggregateFailure {
    /// Its call failed: the reason the call's failure gave.
    #[error("{0}")]
    CallFailed(String),
    /// The run stopped (an interrupt, the budget, the deadline) before the call answered.
    #[error("{0}")]
    RunStopped(&'static str),
    /// Each level of summaries was still too large for the context.
    #[error(
        "the results did not shrink to fit the {context_window}-token context after {levels} levels of \
         summaries; use a model with a larger context window"
    )]
    DidNotShrink { context_window: u64, levels: usize },
}

/// The text the aggregate call `id` answered, or why there is none.
pub fn phase_text(exec: &Execution, id: &UnitId) -> Result<String, AggregateFailure> {
    if let Some(text) = exec.dispatcher.aggregate_texts.get(id) {
        return Ok(text.clone());
    }
    Err(match exec.dispatcher.aggregate_failures.get(id) {
        Some(reason) => AggregateFailure::CallFailed(reason.clone()),
        None => AggregateFailure::RunStopped(exec.why_stopped()),
    })
}
