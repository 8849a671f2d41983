//! Aggregation: combine the per-unit results into `aggregate.md` (and `aggregate.json`
//! when the results are JSON).

pub mod cited;
mod concat;
mod merge;
mod summarize;

pub use concat::concat;
pub use merge::{merge, parse_json_result};
pub use summarize::{SummaryPlanner, SummaryStep, MAX_LEVELS};

use serde::Serialize;
use serde_json::{Map, Value};

/// How results are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AggregateStrategy {
    Concat,
    Merge,
    Summarize,
    /// Phase 1 one synthesis per content type, phase 2 one cross-type report.
    Synthesize,
}

impl AggregateStrategy {
    pub fn name(self) -> &'static str {
        match self {
            AggregateStrategy::Concat => "concat",
            AggregateStrategy::Merge => "merge",
            AggregateStrategy::Summarize => "summarize",
            AggregateStrategy::Synthesize => "synthesize",
        }
    }
}

/// One successful unit's result, in plan order.
#[derive(Debug, Clone)]
pub struct ResultItem {
    /// The unit's label (a file's path); escape it where it is printed.
    pub path: String,
    pub text: String,
}

/// What an aggregator produced.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    pub markdown: String,
    pub json: Option<Value>,
}

/// `{path: parsed JSON}` when every result is JSON, for `aggregate.json` beside a concat
/// or summarize aggregate.
pub fn results_as_json(results: &[ResultItem]) -> Option<Value> {
    if results.is_empty() {
        return None;
    }
    let mut map = Map::new();
    for r in results {
        map.insert(r.path.clone(), parse_json_result(&r.text)?);
    }
    Some(Value::Object(map))
}
