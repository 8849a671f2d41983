//! What `job.json` holds: the definition, where the items came from, the remembered
//! settings (never a key), and the state of the job and of each phase. Written atomically
//! after every batch, so `status` and `resume` always read a whole record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::definition::{JobDefinition, PhaseKind};
use super::settings::RememberedSettings;

/// The version of `job.json`; a newer one is refused, never misread.
pub const RECORD_VERSION: u32 = 1;

/// How a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    /// An rlm process works on it (or did, and crashed: `resume` takes it up).
    Running,
    /// Stopped after a phase by `--pause-after`; `resume` goes on.
    Paused,
    /// Every phase completed and every item was processed.
    Success,
    /// Every phase ran, but some items were not processed (failed batches).
    Partial,
    /// A phase could not run (the provider refused, nothing succeeded).
    Failed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// `--max-cost` was reached.
    BudgetExceeded,
    /// `--deadline` passed.
    DeadlineExceeded,
}

impl JobStatus {
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Running => "RUNNING",
            JobStatus::Paused => "PAUSED",
            JobStatus::Success => "SUCCESS",
            JobStatus::Partial => "PARTIAL",
            JobStatus::Failed => "FAILED",
            JobStatus::Interrupted => "INTERRUPTED",
            JobStatus::BudgetExceeded => "BUDGET_EXCEEDED",
            JobStatus::DeadlineExceeded => "DEADLINE_EXCEEDED",
        }
    }

    /// Whether `resume` has something to do.
    pub fn is_unfinished(self) -> bool {
        !matches!(self, JobStatus::Success | JobStatus::Partial)
    }
}

/// How a phase stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    Pending,
    Running,
    /// Every batch succeeded.
    Completed,
    /// Some batches failed: their items are listed as unprocessed.
    Partial,
    /// Nothing could be done (the provider refused the job, say).
    Failed,
}

impl PhaseStatus {
    /// Done, as far as the phases after it are concerned.
    pub fn is_done(self) -> bool {
        matches!(self, PhaseStatus::Completed | PhaseStatus::Partial)
    }
}

/// Where the items came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Source {
    /// A JSON array or JSONL file.
    File { path: String },
    /// A command's stdout.
    Command { argv: Vec<String> },
    /// `gh pr list` of a repository (or a file of its output).
    GitHub {
        repo: String,
        limit: Option<u32>,
        input: Option<String>,
    },
}

/// One phase's progress and spend.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseState {
    pub name: String,
    pub kind: Option<PhaseKind>,
    pub status: Option<PhaseStatus>,
    pub batches_total: usize,
    pub batches_done: usize,
    pub batches_failed: usize,
    /// Batches answered from the cache (nothing paid).
    pub batches_cached: usize,
    pub items_total: usize,
    pub items_done: usize,
    /// Ids of the items of failed batches: a rerun of the phase takes only them.
    #[serde(default)]
    pub unprocessed: Vec<Value>,
    /// Why an item of `unprocessed` was left out, by id, when its batch did not fail: it
    /// was never sent (a review's `fetch` failed for it).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unprocessed_reasons: std::collections::BTreeMap<String, String>,
    /// The numbers of the failed batches (`resume` does not send them again; `rerun` does).
    #[serde(default)]
    pub failed_batches: Vec<usize>,
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Wall time spent in this phase, over every invocation.
    pub elapsed_ms: u64,
    /// Something the user should know (clusters that kept the programmatic ranking, …).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Bumped by `rerun --prompt`: names the prompt file in prompts/.
    #[serde(default)]
    pub prompt_version: u32,
}

impl PhaseState {
    pub fn status(&self) -> PhaseStatus {
        self.status.unwrap_or(PhaseStatus::Pending)
    }

    /// A fresh state for a phase about to be (re)done.
    pub fn reset(&mut self) {
        let keep = (self.name.clone(), self.kind, self.prompt_version);
        *self = PhaseState {
            name: keep.0,
            kind: keep.1,
            prompt_version: keep.2,
            ..PhaseState::default()
        };
    }
}

/// `job.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    pub version: u32,
    pub job_id: String,
    pub name: String,
    /// `run` (a definition file) or `pr-review`.
    pub kind: String,
    pub created_at: String,
    pub updated_at: String,
    pub status: JobStatus,
    /// The definition as resolved (prompts and schemas are copied into prompts/).
    pub definition: JobDefinition,
    pub source: Source,
    pub settings: RememberedSettings,
    /// Model, provider and width as they were resolved, for people reading this file.
    #[serde(default)]
    pub resolved: Value,
    /// Items ingested.
    pub items: usize,
    pub phases: Vec<PhaseState>,
    /// `rerun`s so far: the task store names their units apart.
    #[serde(default)]
    pub generation: u32,
    /// Why the job stopped, when it did early.
    #[serde(default)]
    pub stopped: Option<String>,
    /// What phases spent before a rerun reset them: still the job's spend.
    #[serde(default)]
    pub earlier: Spend,
}

/// Money and tokens spent.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Spend {
    pub cost_usd: f64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub calls: u64,
}

impl JobRecord {
    /// The flags the job remembers, with the provider that answered it where none was
    /// given: the key is read from the environment again, but a shell with other keys set
    /// (only OPENAI_API_KEY) must not move the job to another provider and its models.
    pub fn remembered_settings(&self) -> RememberedSettings {
        let mut settings = self.settings.clone();
        if settings.provider.is_none() {
            settings.provider = self
                .resolved
                .get("provider")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        settings
    }

    /// Total spend over every phase, reruns included.
    pub fn cost_usd(&self) -> f64 {
        self.earlier.cost_usd + self.phases.iter().map(|p| p.cost_usd).sum::<f64>()
    }

    /// Every call paid for, reruns included.
    pub fn calls(&self) -> u64 {
        self.earlier.calls + self.phases.iter().map(|p| p.calls).sum::<u64>()
    }

    pub fn tokens(&self) -> (u64, u64) {
        self.phases
            .iter()
            .fold((self.earlier.tokens_in, self.earlier.tokens_out), |(i, o), p| {
                (i + p.tokens_in, o + p.tokens_out)
            })
    }

    /// Resets phase `index` for a rerun, keeping what it spent in the job's total.
    pub fn reset_phase(&mut self, index: usize) {
        let p = &mut self.phases[index];
        self.earlier.cost_usd += p.cost_usd;
        self.earlier.tokens_in += p.tokens_in;
        self.earlier.tokens_out += p.tokens_out;
        self.earlier.calls += p.calls;
        p.reset();
    }

    /// The first phase that is not done, if any.
    pub fn next_phase(&self) -> Option<usize> {
        self.phases.iter().position(|p| !p.status().is_done())
    }

    /// The ids of the items a phase before `index` left unprocessed: the phases after it
    /// leave them out (they have none of its answers), until a rerun takes them.
    pub fn unprocessed_before(&self, index: usize) -> std::collections::HashSet<String> {
        self.phases[..index.min(self.phases.len())]
            .iter()
            .flat_map(|p| p.unprocessed.iter().filter_map(super::ingest::id_key))
            .collect()
    }

    /// Items some phase left unprocessed, each counted once (two phases may both have
    /// failed the same items).
    pub fn unprocessed(&self) -> usize {
        self.phases
            .iter()
            .flat_map(|p| p.unprocessed.iter().filter_map(super::ingest::id_key))
            .collect::<std::collections::HashSet<String>>()
            .len()
    }
}
