//! `rlm job`'s subcommands and flags (clap types only; `into_options` turns them into the
//! job module's plain `JobAction`).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::batch_args::ProviderArg;
use super::numeric::{
    parse_context_window, parse_duration, parse_max_cost, parse_max_tokens, parse_seconds, parse_temperature,
    parse_width,
};

/// `rlm job …`: multi-phase jobs (map → reduce → review → report) over structured items.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Run a job from a definition file (TOML, or JSON with the same keys).
    #[command(after_help = JOB_EXIT_CODES)]
    Run(JobRunArgs),
    /// Review the open pull requests of OWNER/REPO: classify each, de-duplicate, review the
    /// best candidates in depth, and report (ingested with the GitHub CLI, `gh`).
    #[command(after_help = JOB_EXIT_CODES)]
    PrReview(PrReviewArgs),
    /// List the jobs of this directory, newest first.
    List(JobListArgs),
    /// Show a job: per phase, batches done/failed/total, items, cost, ETA.
    Status(JobStatusArgs),
    /// Go on with a job that stopped (crash, Ctrl-C, --pause-after, budget, deadline):
    /// finished batches are not sent again.
    #[command(after_help = JOB_EXIT_CODES)]
    Resume(JobResumeArgs),
    /// Redo one phase and the ones after it (only its unprocessed items when some batches
    /// failed, unless --prompt changes the prompt).
    #[command(after_help = JOB_EXIT_CODES)]
    Rerun(JobRerunArgs),
    /// Print (or write) a job's results as JSON, Markdown, or one GitHub comment per
    /// reviewed pull request (`--post` posts them with gh).
    Export(JobExportArgs),
}

const JOB_EXIT_CODES: &str = "Exit codes: 0 every phase succeeded (or the job paused as asked), 1 some items \
were not processed (a rerun of the phase takes only them), 2 usage or input error (nothing was sent), \
3 nothing succeeded, the provider refused the request, or a phase ended in an error after calls were made \
(the job is FAILED; rlm job resume goes on), 130 interrupted (rlm job resume goes on).";

/// How calls are made: remembered by the job, so `resume` and `rerun` need none of them
/// again (a flag given to them replaces the remembered value).
#[derive(Debug, Clone, Default, Args)]
pub struct JobCallArgs {
    /// Model: `haiku`, `sonnet`, `opus` or any model id the provider knows (a phase's
    /// `model` key overrides it). [default: as for rlm batch]
    #[arg(long, short = 'm')]
    pub model: Option<String>,

    /// Provider wire format. [default: as for rlm batch]
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,

    /// A command-line agent to run once per call instead of an API (`--provider command`).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,

    /// Base URL of the API (also ANTHROPIC_BASE_URL / OPENAI_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Most model calls in flight at once (hard cap 7; a phase's `concurrency` may lower
    /// it). [default: from config, else 4]
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_width, allow_negative_numbers = true)]
    pub max_parallel: Option<usize>,

    /// Abort if the estimated cost is above this many USD (also raises the $100 ceiling);
    /// stop dispatching once the real cost passes it.
    #[arg(long, value_name = "USD", value_parser = parse_max_cost, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,

    /// Seconds before one model call is abandoned (and retried), up to 86400 (a phase's
    /// `timeout` overrides it). [default: 120]
    #[arg(long, value_name = "SECS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub timeout: Option<f64>,

    /// Seconds one call may spend waiting out rate limits (429), up to 86400. [default: 600]
    #[arg(long, value_name = "SECS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub rate_limit_wait: Option<f64>,

    /// Most output tokens per call (1-1000000; a phase's `max_tokens` overrides it).
    /// [default: 16000]
    #[arg(long, value_name = "N", value_parser = parse_max_tokens, allow_negative_numbers = true)]
    pub max_tokens: Option<u32>,

    /// The model's context window in tokens, for models rlm does not know.
    #[arg(long, value_name = "TOKENS", value_parser = parse_context_window, allow_negative_numbers = true)]
    pub context_window: Option<u64>,

    /// Sampling temperature, 0-2 (sent only when given).
    #[arg(long, value_parser = parse_temperature, allow_negative_numbers = true)]
    pub temperature: Option<f32>,

    /// Send map phases through the provider's batch API (half the price, results within
    /// 24 hours): bare or `on`; `off` for realtime calls. Remembered by the job, so resume
    /// polls the batches it sent; `--batch-api off` on resume or rerun turns it off (a
    /// provider batch sent before is still collected, never paid twice). Give it after the
    /// job, or as --batch-api=on|off.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "on", value_name = "WHEN")]
    pub batch_api: Option<Toggle>,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Toggle {
    On,
    Off,
}

/// What holds for this invocation only.
#[derive(Debug, Clone, Default, Args)]
pub struct JobRunFlags {
    /// Do not ask for confirmation when the estimated cost is above $1.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Run even when the estimated cost is above $10.
    #[arg(long)]
    pub force: bool,

    /// Print the estimate per phase and stop: nothing is called or written.
    #[arg(long)]
    pub dry_run: bool,

    /// Do not read cached answers in this invocation (fresh answers are still cached); not
    /// remembered by the job.
    #[arg(long)]
    pub no_cache: bool,

    /// Print one JSON document on stdout (job_id, dir, status, phases, cost), also when
    /// the command fails (`status` ERROR, `error`, `exit_code`).
    #[arg(long, overrides_with = "json")]
    pub json: bool,

    /// No banner and no progress; errors, warnings and failures still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Stop dispatching when this invocation has taken this long (`90s`, `15m`, `2h`);
    /// `rlm job resume` goes on later.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_negative_numbers = true)]
    pub deadline: Option<f64>,

    /// Stop after this phase (its number from 1, or its name) with status PAUSED, so a
    /// person can look at its data before the next phases are paid for; `resume` goes on.
    #[arg(long, value_name = "PHASE")]
    pub pause_after: Option<String>,
}

#[derive(Debug, Args)]
pub struct JobRunArgs {
    /// The job definition: TOML (`.toml`) or JSON with the same keys.
    #[arg(value_name = "JOB_FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub call: JobCallArgs,
    #[command(flatten)]
    pub flags: JobRunFlags,
}

#[derive(Debug, Args)]
pub struct PrReviewArgs {
    /// The repository: OWNER/REPO.
    #[arg(value_name = "OWNER/REPO")]
    pub repo: String,
    /// The project's vision document (goals, non-goals, priorities): every worker sees it.
    #[arg(long, value_name = "FILE")]
    pub vision: PathBuf,
    /// Review at most N open pull requests (1-100000). [default: every open one]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000), allow_negative_numbers = true)]
    pub limit: Option<u32>,
    /// Read the pull requests from FILE (the output of `gh pr list --json …`) instead of
    /// asking gh.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    #[command(flatten)]
    pub call: JobCallArgs,
    #[command(flatten)]
    pub flags: JobRunFlags,
}

#[derive(Debug, Args)]
pub struct JobListArgs {
    /// One JSON array on stdout.
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JobStatusArgs {
    /// The job id (or its unique beginning). [default: the latest job]
    pub job: Option<String>,
    /// One JSON document on stdout.
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JobResumeArgs {
    /// The job id (or its unique beginning). [default: the latest unfinished job]
    pub job: Option<String>,
    #[command(flatten)]
    pub call: JobCallArgs,
    #[command(flatten)]
    pub flags: JobRunFlags,
}

#[derive(Debug, Args)]
pub struct JobRerunArgs {
    /// The job id (or its unique beginning).
    pub job: String,
    /// The phase to redo: its number from 1, or its name.
    #[arg(long, value_name = "N|NAME")]
    pub phase: String,
    /// A new prompt for that phase (kept in the job's prompts/; its calls are paid again).
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,
    #[command(flatten)]
    pub call: JobCallArgs,
    #[command(flatten)]
    pub flags: JobRunFlags,
}

#[derive(Debug, Args)]
pub struct JobExportArgs {
    /// The job id (or its unique beginning).
    pub job: String,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormatArg,
    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With github-comments: post each comment on its pull request with
    /// `gh pr comment N -R OWNER/REPO --body-file -` (asks first, unless --yes).
    #[arg(long)]
    pub post: bool,
    /// Post without asking (needed without a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormatArg {
    /// The report's data and every item's results, one JSON document.
    Json,
    /// The report (report.md).
    Markdown,
    /// One comment per reviewed pull request, as JSON lines (also comments.jsonl in the
    /// job directory).
    GithubComments,
}
