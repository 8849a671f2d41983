//! The completion report: `report.json` in the output directory and the seed's markdown
//! report at `.aiwg/rlm/batch-{timestamp}-report.md` (or `report.md` in `--output-dir`).
//! Plain data: the report builder fills it from events, the run directory writes it.

mod markdown;

use serde::{Deserialize, Serialize};

use crate::error::ExitStatus;
use crate::input::SkippedFile;
use crate::provider::catalog::PriceTier;
use crate::provider::model::PriceBasis;
use crate::provider::Usage;
use crate::unit::{UnitId, UnitKind};

/// The version of `report.json`'s layout; bumped when a field changes meaning.
pub const REPORT_SCHEMA_VERSION: u32 = 2;

/// How the run ended: one vocabulary for `report.json`, the store and `rlm status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    Success,
    Partial,
    Failed,
    Interrupted,
    /// Dispatching stopped at `--max-cost`; `rlm resume` with a higher budget goes on.
    BudgetExceeded,
    /// Dispatching stopped at `--deadline`; `rlm resume` goes on.
    DeadlineExceeded,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Success => "SUCCESS",
            RunStatus::Partial => "PARTIAL",
            RunStatus::Failed => "FAILED",
            RunStatus::Interrupted => "INTERRUPTED",
            RunStatus::BudgetExceeded => "BUDGET_EXCEEDED",
            RunStatus::DeadlineExceeded => "DEADLINE_EXCEEDED",
        }
    }

    pub fn exit_status(self) -> ExitStatus {
        match self {
            RunStatus::Success => ExitStatus::Success,
            RunStatus::Partial | RunStatus::BudgetExceeded | RunStatus::DeadlineExceeded => ExitStatus::Partial,
            RunStatus::Failed => ExitStatus::Failed,
            RunStatus::Interrupted => ExitStatus::Interrupted,
        }
    }
}

/// Whether `--fail-on` let the run pass: apart from the run's status (a run whose every
/// unit succeeded stays SUCCESS when a finding fails the gate; the exit code is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    Passed,
    Failed,
}

/// What became of one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    Succeeded,
    Failed,
    /// Never finished: the run was interrupted or stopped first.
    NotRun,
}

/// One unit in the report (`rlm merge` reads them back: fields added later default).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnitRecord {
    pub id: UnitId,
    /// The unit's label: its file's path for a whole file (shared with the plan's).
    pub path: std::sync::Arc<str>,
    pub status: UnitStatus,
    /// Relative to the output directory.
    pub result_file: Option<String>,
    /// Served from the cache (no call made, `tokens_*` are zero).
    pub cached: bool,
    pub tokens_in: u64,
    /// Of `tokens_in`, the files' own text (the rest is framing), apportioned by the bytes
    /// of the unit's prompt that were content.
    #[serde(default)]
    pub content_tokens: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Of `tokens_in`, written to the provider's prompt cache (Anthropic).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What the provider's prompt cache saved on this unit's call (negative when its
    /// prefix was written and not read back by it).
    #[serde(default)]
    pub prompt_cache_saved_usd: f64,
    /// Tokens a cache hit saved.
    pub tokens_saved: u64,
    pub attempts: u32,
    pub duration_ms: u64,
    pub truncated: bool,
    pub cost_usd: f64,
    pub reason: Option<String>,
    /// Its answer was paid for but the cache did not take it: kept in the run directory's
    /// `pending-cache/` until `rlm resume` caches it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_cached: bool,
    /// `rlm resume`: its answer was paid for by an earlier attempt of the run (served now,
    /// and no cache hit of this attempt).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub answered_earlier: bool,
    /// A member of a batch asked again on its own (the batch's answer had none for it): a
    /// call beyond the plan's units, not a planned unit (`succeeded` does not count it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asked_alone: bool,
}

impl UnitRecord {
    pub fn new(id: UnitId, path: std::sync::Arc<str>) -> Self {
        UnitRecord {
            id,
            path,
            status: UnitStatus::NotRun,
            result_file: None,
            cached: false,
            tokens_in: 0,
            content_tokens: 0,
            tokens_out: 0,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            prompt_cache_saved_usd: 0.0,
            tokens_saved: 0,
            attempts: 0,
            duration_ms: 0,
            truncated: false,
            cost_usd: 0.0,
            reason: None,
            not_cached: false,
            answered_earlier: false,
            asked_alone: false,
        }
    }
}

/// `--shard K/N`: which part of its plan a run took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    #[serde(flatten)]
    pub shard: crate::shard::Shard,
    /// Units in the whole plan (this run's are in `units`).
    pub plan_units: usize,
}

/// One aggregation call (summarize) in the report.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub id: UnitId,
    pub kind: UnitKind,
    pub label: String,
    pub usage: Usage,
    /// What a cache hit saved.
    pub saved: Usage,
    pub cached: bool,
    pub attempts: u32,
    pub truncated: bool,
    pub duration_ms: u64,
    pub cost_usd: f64,
    /// What the provider's prompt cache saved on this call.
    pub prompt_cache_saved_usd: f64,
    /// Why it failed, when it did.
    pub reason: Option<String>,
}

/// A file that failed, with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct FailedFile {
    pub path: String,
    pub reason: String,
}

/// Everything `report.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub status: RunStatus,
    /// `--fail-on`'s verdict, when it was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// The run's id (`batch-{timestamp}`), as in `events.jsonl`.
    pub run_id: String,
    /// The identity of the run's whole plan (every unit's id and cache key): runs of one
    /// plan over disjoint units can be combined by `rlm merge`.
    pub plan_id: String,
    /// `--shard K/N`: the part of the plan this run took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// `rlm merge`: the runs whose units this run combined.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    pub pattern: String,
    pub sub_prompt: String,
    pub model: String,
    /// The answering model is the bundled local model (a 135M toy): the sentence that
    /// says so, in the report, the aggregate and the terminal summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_caution: Option<String>,
    pub provider: String,
    pub aggregate: String,
    pub max_parallel: usize,
    pub files_matched: usize,
    /// Files whose every unit succeeded (a file cut into chunks counts once; each file of a
    /// batch counts).
    pub files_succeeded: usize,
    /// Of `files_succeeded`, those every unit of which the cache answered (a file in a
    /// batch served from the cache counts; `cache_hits` counts units).
    #[serde(default)]
    pub files_from_cache: usize,
    /// Of `files_succeeded`, those every unit of which earlier attempts of the run answered
    /// (`earlier_answers` counts units).
    #[serde(default)]
    pub files_answered_earlier: usize,
    /// Planned units that succeeded (a whole file, a chunk or a batch each count one).
    pub succeeded: usize,
    /// The units planned (`units` lists them, then the members asked alone).
    pub units_planned: usize,
    /// Members of batches asked again alone because the batch's answer had none for them
    /// (each in `units` with `asked_alone`; their failures are in `failed`).
    pub asked_alone: usize,
    pub failed: Vec<FailedFile>,
    pub skipped: Vec<SkippedFile>,
    pub not_run: Vec<String>,
    /// Units whose answer was paid for but not cached (a full disk): kept in
    /// `pending_cache_dir` until `rlm resume` caches them (never paid for again).
    pub not_cached: Vec<String>,
    /// Where the answers of `not_cached` are kept (`{output_dir}/pending-cache`), when any are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_cache_dir: Option<String>,
    pub truncated: Vec<String>,
    pub cache_hits: usize,
    pub cache_misses: usize,
    pub tokens_saved: u64,
    pub tokens_in: u64,
    /// Of `tokens_in`, what the per-unit calls sent of the files' own text (issue 27):
    /// each call's input tokens apportioned by the bytes of its prompt that were content.
    pub content_tokens: u64,
    /// Of `tokens_in`, the rest of the per-unit calls' input: system prompts, delimiters,
    /// the instruction and its wrapping. The aggregation calls' input is neither.
    pub framing_tokens: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, read from the provider's prompt cache (every call, aggregation
    /// included).
    pub cache_read_tokens: u64,
    /// Of `tokens_in`, written to the provider's prompt cache (Anthropic).
    pub cache_write_tokens: u64,
    /// What the provider's prompt cache saved: the calls' cost had every prompt token been
    /// billed as fresh input, less their cost (writes cost more than input, reads far less).
    pub prompt_cache_saved_usd: f64,
    /// What the run cost: every attempt's, as the store and `rlm status` count it.
    pub cost_usd: f64,
    /// Of `cost_usd`, what the run's earlier attempts spent (`rlm resume`; 0 otherwise).
    pub earlier_cost_usd: f64,
    /// Units whose answers earlier attempts paid for, served again by this one (apart from
    /// `cache_hits` and `cache_misses`).
    pub earlier_answers: usize,
    pub estimated_cost_usd: f64,
    /// False when the model is not in the price table.
    pub price_known: bool,
    /// Where prices come from: `listed`, `ceiling` (unlisted on the official API, an upper
    /// bound) or `unknown` (another server: free as far as rlm knows). In `report.json` as
    /// [`PriceBasis::shown`] says it (`listed_batch` where the batch price applied).
    #[serde(skip)]
    pub price_basis: PriceBasis,
    /// `price_basis` as `report.json` says it (see [`RunReport::set_price_tier`]).
    #[serde(rename = "price_basis")]
    pub price_basis_shown: String,
    /// `batch` when the run's calls went through the provider's batch API (at half of the
    /// list price; aggregation calls too under `--batch-api all`), `mixed` when some of its
    /// calls did and others were realtime (an aggregation call at list price), `realtime`
    /// otherwise.
    pub price_tier: PriceTier,
    /// The ids of the provider batches the run submitted (`--batch-api`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<String>,
    pub duration_ms: u64,
    pub started_at: String,
    pub finished_at: String,
    pub output_dir: String,
    pub aggregate_path: Option<String>,
    pub aggregate_json_path: Option<String>,
    pub report_path: String,
    pub events_path: Option<String>,
    /// Why the run stopped early or the aggregate is not what was asked for.
    pub error: Option<String>,
    pub warnings: Vec<String>,
    pub units: Vec<UnitRecord>,
    pub aggregate_calls: Vec<CallRecord>,
    /// Located findings read from the answers (CI): counts per level and the SARIF file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<FindingsSummary>,
}

/// What the findings of a run came to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FindingsSummary {
    pub error: usize,
    pub warning: usize,
    pub note: usize,
    /// The SARIF log as printed: `--sarif PATH` when it was given (and written), else
    /// `results.sarif` in the run directory.
    pub sarif: Option<String>,
    /// `--fail-on` was given and a finding reached it.
    pub failed_on: Option<String>,
}

impl RunReport {
    /// Sets the tier the run's calls were billed at, and the basis as it is shown with it.
    pub fn set_price_tier(&mut self, tier: PriceTier) {
        self.price_tier = tier;
        self.price_basis_shown = self.price_basis.shown(tier);
    }

    /// The run's status from its counts and why dispatching ended (see the README's exit
    /// codes). A budget or deadline stop is the status even when nothing succeeded (the run
    /// is resumable with more, not a failure of its units) — but not when every unit had
    /// been dispatched and all of them succeeded: then the limit was crossed by the last
    /// calls, nothing is left to do, and the run is a success.
    pub fn decide_status(&self, end: RunEndReason) -> RunStatus {
        match end {
            RunEndReason::Interrupted => RunStatus::Interrupted,
            RunEndReason::Fatal => RunStatus::Failed,
            RunEndReason::Budget if !self.all_done() => RunStatus::BudgetExceeded,
            RunEndReason::Deadline if !self.all_done() => RunStatus::DeadlineExceeded,
            _ if self.succeeded == 0 && !self.nothing_to_do() => RunStatus::Failed,
            _ if !self.failed.is_empty() || !self.not_run.is_empty() || self.error.is_some() => RunStatus::Partial,
            _ => RunStatus::Success,
        }
    }

    /// Every unit and aggregation call succeeded (whatever stopped dispatching after).
    pub fn all_done(&self) -> bool {
        self.failed.is_empty() && self.not_run.is_empty() && self.aggregate_calls.iter().all(|c| c.reason.is_none())
    }

    /// The run had no unit and nothing failed: a shard that no unit of its plan fell in.
    fn nothing_to_do(&self) -> bool {
        self.units.is_empty() && self.failed.is_empty() && self.not_run.is_empty() && self.error.is_none()
    }

    /// The exit status: the run's, or 1 when it succeeded but `--fail-on` did not pass.
    pub fn exit_status(&self) -> ExitStatus {
        match (self.status, self.gate) {
            (RunStatus::Success, Some(Gate::Failed)) => ExitStatus::Partial,
            (status, _) => status.exit_status(),
        }
    }
}

/// Why dispatching ended, as far as the status goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunEndReason {
    /// It ran out of work (failures or not).
    #[default]
    Completed,
    Interrupted,
    Fatal,
    Budget,
    Deadline,
}
