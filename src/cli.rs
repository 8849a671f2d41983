//! Command-line definitions (clap types only). The core never sees these: `settings.rs`
//! turns them into one immutable [`crate::settings::BatchSettings`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What `rlm --version` prints after the name: the version and the commit it was built from
/// (`RLM_GIT_COMMIT`, set by `build.rs`).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("RLM_GIT_COMMIT"), ")");

/// Fan one prompt out over many files to language models in parallel, then combine the
/// answers into one result and a completion report.
#[derive(Debug, Parser)]
#[command(name = "rlm", version = VERSION, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply SUB_PROMPT to every file PATTERN matches, in parallel, and aggregate the answers.
    Batch(BatchArgs),
    /// Install the rlm-batch skill for Claude Code, or show what it would write.
    #[command(subcommand)]
    Skill(SkillAction),
    /// Print a completion script for a shell on stdout.
    #[command(
        after_help = "Install, for example: rlm completions bash > ~/.local/share/bash-completion/completions/rlm"
    )]
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout: `rlm man | man -l -`.
    Man(ManArgs),
}

#[derive(Debug, Subcommand)]
pub enum SkillAction {
    /// Write .claude/skills/rlm-batch/SKILL.md and the /rlm-batch command
    /// (.claude/commands/rlm-batch.md) in the current directory, or under ~/.claude with
    /// --user. A file you changed is not replaced without --force.
    #[command(
        after_help = "Exit codes: 0 installed or up to date, 2 a file was changed by you (use --force) or \
could not be written."
    )]
    Install {
        /// Install for every project: into ~/.claude instead of ./.claude.
        #[arg(long)]
        user: bool,
        /// Replace files even if you changed them.
        #[arg(long)]
        force: bool,
    },
    /// Print the files `rlm skill install` would write, each after its path.
    Show {
        /// Show the paths under ~/.claude instead of ./.claude.
        #[arg(long)]
        user: bool,
    },
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page instead of rlm's (`rlm man batch`).
    pub subcommand: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 success, 1 some files failed, 2 usage or input error, \
3 nothing succeeded or the provider refused the request, 130 interrupted.")]
pub struct BatchArgs {
    /// Files to process: a glob relative to the current directory or absolute
    /// (`src/**/*.ts`, `**/*.{js,ts}`).
    pub pattern: String,

    /// The prompt applied to each file; `{file}` becomes the file's path.
    pub sub_prompt: String,

    /// Model: `haiku`, `sonnet`, `opus` (Claude aliases) or any model id the provider knows.
    /// [default: sonnet for anthropic, gpt-4.1-mini for openai]
    #[arg(long, short = 'm')]
    pub model: Option<String>,

    /// Provider wire format. [default: anthropic if ANTHROPIC_API_KEY is set, else openai if
    /// OPENAI_API_KEY or OPENAI_BASE_URL is set]
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,

    /// Base URL of the API (also ANTHROPIC_BASE_URL / OPENAI_BASE_URL). Any OpenAI-compatible
    /// server works with `--provider openai` (Ollama, vLLM, llama.cpp, LM Studio).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Where per-file results and the aggregate go. [default: .aiwg/rlm/batch-{timestamp}/]
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// How to combine the per-file results.
    #[arg(long, value_enum, default_value_t = AggregateArg::Concat)]
    pub aggregate: AggregateArg,

    /// Most model calls in flight at once (hard cap 7; `.aiwg/aiwg.config`
    /// parallelism.max_parallel_subagents lowers it). [default: from config, else 4]
    #[arg(long, short = 'j', value_name = "N")]
    pub max_parallel: Option<usize>,

    /// Do not read cached results (fresh results are still written to the cache).
    #[arg(long, conflicts_with = "cache_only")]
    pub no_cache: bool,

    /// Call nothing: fail (exit 2) listing every input that is not cached. With
    /// `--aggregate summarize`, an uncached summary leaves the concatenation in
    /// aggregate.md and the run exits 1.
    #[arg(long)]
    pub cache_only: bool,

    /// Run even when the estimated cost is above $10.
    #[arg(long)]
    pub force: bool,

    /// Do not ask for confirmation when the estimated cost is above $1.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Resolve the files, plan the calls and estimate the cost; call nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print a machine-readable summary (the report as JSON) on stdout.
    #[arg(long)]
    pub json: bool,

    /// No progress output; only errors on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Seconds before one model call is abandoned (and retried).
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub timeout: f64,

    /// Retries per call after the first attempt, on 429, 5xx, 529, timeouts, resets and
    /// malformed replies.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,

    /// Most output tokens per call.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_tokens: u32,

    /// Abort if the estimated cost is above this many USD; raises the $100 ceiling.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// The model's context window in tokens, for models rlm does not know (local servers).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,

    /// Sampling temperature (sent only when given).
    #[arg(long)]
    pub temperature: Option<f32>,

    /// Do not respect .gitignore, .ignore and git exclude files.
    #[arg(long)]
    pub no_ignore: bool,

    /// Include hidden files and directories (a pattern that names one includes it anyway).
    #[arg(long)]
    pub hidden: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AggregateArg {
    Concat,
    Merge,
    Summarize,
}
