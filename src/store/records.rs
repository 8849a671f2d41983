//! What the caller hands the store: a new run, new units, and the detail of a transition.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::lifecycle::UnitKind;

/// A run's id: `batch-2026-11-22-101530` (UTC, `-2`, `-3`… when runs start in the same
/// second). Readable, sortable, and the name of the run's default output directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RunId(pub String);

impl RunId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RunId {
    fn from(id: &str) -> Self {
        RunId(id.to_string())
    }
}

/// A run about to start.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// `Some` to use exactly this id (it must be new); `None` to get `{kind}-{timestamp}`.
    pub id: Option<String>,
    /// The id prefix when `id` is `None`: `batch`, `swarm`…
    pub kind: String,
    /// The command line that started the run (argv, for `rlm list` and for resume).
    pub command: Vec<String>,
    /// The directory it was started in (`latest_unfinished_run` looks runs up by it).
    pub cwd: PathBuf,
    /// Where its results go; `None` for `<rlm dir>/<run id>`.
    pub output_dir: Option<PathBuf>,
    /// The run that started this one (through `RLM_PARENT_RUN`), if any.
    pub parent: Option<RunId>,
    /// Recursion depth (`RLM_DEPTH`; 0 for a run a person started).
    pub depth: u32,
    /// The resolved settings, without secrets (the caller guarantees it).
    pub settings: serde_json::Value,
    /// When the run began (its planning included): the running time a `--deadline` counts
    /// starts here. `None`: when it is recorded.
    pub started: Option<super::timestamp::Timestamp>,
}

/// A unit of work to add to a run; it starts `queued`.
#[derive(Debug, Clone)]
pub struct NewUnit {
    /// Stable within the run, chosen by the caller (resume matches units by it).
    pub id: String,
    /// What people see: a path, or `aggregate`.
    pub label: String,
    pub kind: UnitKind,
    /// Higher runs first; the seed gives deeper recursion a lower priority (`5 - depth`).
    pub priority: i64,
    /// The cache key of its request, when known before the call.
    pub cache_key: Option<String>,
}

/// What accompanies a transition: spend, timing, outcome. Spend and duration are added to
/// the unit's (and the run's) totals, so a unit's numbers cover all its attempts.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// Why: the failure, the timeout, the reason for a requeue. Kept on the unit until it
    /// completes; also written to the transition's history.
    pub reason: Option<String>,
    /// Tokens sent in this step.
    pub tokens_in: u64,
    /// Tokens received in this step.
    pub tokens_out: u64,
    /// Dollars spent in this step.
    pub cost_usd: f64,
    /// Wall time of the attempt this transition ends.
    pub duration: Option<Duration>,
    /// Calls retried inside this dispatch (each dispatch already counts as one attempt).
    pub retries: u32,
    /// The result file, relative to the output directory.
    pub result_file: Option<String>,
    /// The cache key of the request actually sent.
    pub cache_key: Option<String>,
}

impl Detail {
    /// A detail that only gives a reason.
    pub fn reason(reason: impl Into<String>) -> Self {
        Detail {
            reason: Some(reason.into()),
            ..Detail::default()
        }
    }

    /// Whether the step spent anything: tokens or dollars.
    pub fn spent(&self) -> bool {
        self.tokens_in != 0 || self.tokens_out != 0 || self.cost_usd != 0.0
    }

    /// Adds `other`'s tokens and dollars to this detail's.
    pub fn add_spend(&mut self, other: &Detail) {
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.cost_usd += other.cost_usd;
    }
}
