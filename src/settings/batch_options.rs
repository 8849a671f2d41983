//! The options of one batch run as they were given, before the environment and the project
//! config resolve them: what [`super::BatchSettings::resolve`] takes, and what a run
//! records ([`super::RunRecord`]) so that `rlm resume` and `rlm merge` resolve them again.
//!
//! The command line makes them (`cli::into_options`), and nothing here knows it. They are
//! kept unresolved on purpose: a resume reads the keys, the config and the prompt file of
//! its own time, as the command given again would — but a prompt read from standard input
//! is kept as it was read ([`BatchOptions::prompt_given`]): nothing can read it again.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{BatchApiMode, BatchFallback};
use crate::aggregate::AggregateStrategy;
use crate::cache::CacheMode;
use crate::content::Focus;
use crate::findings::FailOn;
use crate::index::Direction;
use crate::provider::ProviderKind;
use crate::shard::Shard;

/// The options of `rlm batch` (and of `rlm query` and `rlm merge`, which are batch runs too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(clippy::struct_excessive_bools)] // one flag each, as given
pub struct BatchOptions {
    /// The pattern (a glob or a directory), or the prompt after an input flag; a name need
    /// not be UTF-8.
    #[serde(with = "super::recorded_name", default)]
    pub pattern: Option<OsString>,
    /// The second positional: the prompt.
    pub sub_prompt: Option<String>,
    /// `--prompt-file` (`-` is stdin).
    #[serde(with = "super::recorded_name", default)]
    pub prompt_file: Option<PathBuf>,
    /// `--files-from` (`-` is stdin), NUL-separated with `--null`.
    #[serde(with = "super::recorded_name", default)]
    pub files_from: Option<PathBuf>,
    pub null: bool,
    /// `--changed-since REF`.
    pub changed_since: Option<String>,
    /// `--sarif PATH`, as given (relative to the run's working directory).
    #[serde(with = "super::recorded_name", default)]
    pub sarif: Option<PathBuf>,
    pub fail_on: Option<FailOn>,
    /// `--schema FILE`, read again by every resolve.
    #[serde(with = "super::recorded_name", default)]
    pub schema: Option<PathBuf>,
    /// `--chunking auto` (true) or `off`.
    pub chunking: bool,
    /// Small files share calls (`--no-batch-small` turns it off).
    pub batch_small: bool,
    pub focus: Focus,
    pub model: Option<String>,
    pub provider: Option<ProviderKind>,
    /// `--command CMD`, as given (split when resolved).
    pub command: Option<String>,
    pub agent_env: Vec<String>,
    pub max_depth: u32,
    /// `--base-url`; a run records it with its credentials withheld (`http://***@host`).
    pub base_url: Option<String>,
    #[serde(with = "super::recorded_name", default)]
    pub output_dir: Option<PathBuf>,
    /// `None`: the input mode's default (synthesize for a directory, else concat).
    pub aggregate: Option<AggregateStrategy>,
    pub max_parallel: Option<usize>,
    /// Mark the shared prompt prefix for the provider's cache (`--no-prompt-cache` turns it off).
    pub prompt_cache: bool,
    /// `--no-cache` (write only) or `--cache-only` (read only).
    pub cache_mode: CacheMode,
    pub force: bool,
    pub yes: bool,
    pub dry_run: bool,
    pub json: bool,
    pub quiet: bool,
    /// Seconds.
    pub timeout: f64,
    /// Seconds.
    pub connect_timeout: f64,
    pub retries: u32,
    /// Seconds, for the whole run.
    pub deadline: Option<f64>,
    #[serde(with = "super::recorded_name", default)]
    pub save_trajectory: Option<PathBuf>,
    /// Seconds.
    pub rate_limit_wait: f64,
    pub max_tokens: Option<u32>,
    /// USD.
    pub max_cost: Option<f64>,
    pub context_window: Option<u64>,
    pub temperature: Option<f32>,
    /// `.gitignore` and the like are respected (`--no-ignore` turns it off).
    pub respect_ignore: bool,
    pub hidden: bool,
    pub follow_links: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub no_recursive: bool,
    pub shard: Option<Shard>,
    pub max_files: Option<usize>,
    pub neighbors_of: Option<String>,
    pub direction: Option<Direction>,
    pub depth: Option<u32>,
    pub graph: Option<String>,
    #[serde(with = "super::recorded_name", default)]
    pub graph_file: Option<PathBuf>,
    pub require_citations: bool,
    /// `None`: the config's `rlm.batch_api`, else off.
    pub batch_api: Option<BatchApiMode>,
    pub batch_api_fallback: BatchFallback,
}

impl BatchOptions {
    /// The options as if `prompt` had been given on the command line instead of with
    /// `--prompt-file`: the prompt after the pattern, or alone when an input flag names the
    /// files (where clap would have put it).
    pub fn prompt_given(&mut self, prompt: String) {
        self.prompt_file = None;
        if self.pattern.is_some() {
            self.sub_prompt = Some(prompt);
        } else {
            self.pattern = Some(prompt.into());
        }
    }
}
