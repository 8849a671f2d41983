//! Aggregation: combine the per-unit results into `aggregate.md` (and `aggregate.json`
//! when the results are JSON).
//!
//! The results are answers as read ([`crate::answer::Answer`]): their JSON is taken from
//! there, with each finding at its file and its lines of the original file — nothing here
//! looks for JSON in a model's prose again.

mod answer_list;
pub mod cited;
mod concat;
mod merge;
mod sourced_json;
mod summarize;

pub use concat::concat;
pub use merge::{merge, SOURCES_FILE};
pub use summarize::{SummaryPlanner, SummaryStep, MAX_LEVELS};

use serde::Serialize;
use serde_json::{Map, Value};

/// How results are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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

/// One file's answer (of a whole file, a chunk, a batch member), in plan order.
#[derive(Debug, Clone, Default)]
pub struct ResultItem {
    /// The unit's label (a file's path, a chunk's `path:start-end`); escape it where it is
    /// printed.
    pub path: String,
    /// The answer as the aggregate shows it ([`crate::answer::Answer::shown_text`]).
    pub text: String,
    /// Its JSON as the aggregate shows it ([`crate::answer::Answer::value`]), when it is an
    /// object or an array (or, under `--schema`, any JSON value).
    pub json: Option<Value>,
}

/// How many files and units the results come from (a file cut into 17 chunks is one file
/// in 17 units; three small files batched are three files in one unit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Processed {
    pub files: usize,
    pub units: usize,
}

/// What an aggregator produced.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    pub markdown: String,
    pub json: Option<Value>,
    /// Beside a merged `json`, the same shape saying which files gave each value
    /// (`aggregate.sources.json`).
    pub sources: Option<Value>,
}

/// `{path: parsed JSON}` when every result is JSON, for `aggregate.json` beside a concat
/// or summarize aggregate.
pub fn results_as_json(results: &[ResultItem]) -> Option<Value> {
    if results.is_empty() {
        return None;
    }
    let mut map = Map::new();
    for r in results {
        map.insert(r.path.clone(), r.json.clone()?);
    }
    Some(Value::Object(map))
}
