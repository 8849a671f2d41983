//! `rlm batch`'s flags (shared by `rlm query`, which takes them after its prompt) and the
//! value types they take.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Args, ValueEnum};

use super::numeric::{
    parse_context_window, parse_duration, parse_max_cost, parse_max_files, parse_max_tokens, parse_seconds,
    parse_shard, parse_temperature, parse_width,
};
use super::DirectionArg;

/// `rlm batch`'s arguments. A run records them as [`crate::settings::BatchOptions`] (made
/// in `into_options`), never as they are here.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 success, 1 some files failed (answers already paid for are cached), \
2 usage or input error (nothing was sent), 3 nothing succeeded or the provider refused the request, \
130 interrupted. With --fail-on LEVEL, 1 also when a finding at or above LEVEL exists."
)]
pub struct BatchArgs {
    /// Files to process: a glob relative to the current directory or absolute
    /// (`src/**/*.ts`, `**/*.{js,ts}`); quote it so the shell does not expand it. An
    /// existing directory means directory mode (see --include, --max-files). With an
    /// input flag (such as --files-from) the only argument is the prompt.
    // A file or directory name need not be UTF-8 (issue 17).
    #[arg(value_name = "PATTERN")]
    pub pattern: Option<OsString>,

    /// The prompt applied to each file; `{file}` becomes the file's path. Or use --prompt-file.
    #[arg(value_name = "SUB_PROMPT")]
    pub sub_prompt: Option<String>,

    /// Read the prompt from FILE (`-` for stdin) instead of the command line.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,

    /// Process the files listed in LIST (one path per line; `-` reads stdin) instead of a
    /// pattern; a pattern given too keeps only the listed files it would select in a walk
    /// (its default exclusions and hidden-file rule apply).
    #[arg(long, value_name = "LIST", conflicts_with = "changed_since")]
    pub files_from: Option<PathBuf>,

    /// The --files-from list is NUL-separated (as `git diff -z` and `find -print0` write).
    #[arg(long, requires = "files_from")]
    pub null: bool,

    /// Process the files added or modified since REF (a branch, tag or commit: its merge
    /// base with HEAD, as a pull request sees it); deleted files are never inputs. A pattern
    /// given too keeps only the changed files it would select in a walk (the default
    /// exclusions and hidden-file rule apply with or without one). No changed file: exit 0.
    #[arg(long, value_name = "REF")]
    pub changed_since: Option<String>,

    /// Also write the findings as SARIF 2.1.0 to PATH (always written as results.sarif in
    /// the run directory when there are findings).
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,

    /// Exit 1 when a finding at or above this level exists (without it, findings never
    /// change the exit code).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOnArg>,

    /// Every answer must be one JSON value that conforms to this JSON Schema: the provider
    /// is asked to constrain its output, each answer is validated, and one that does not
    /// conform is asked for again once with the errors, then counted as failed.
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,

    /// Cut files over 1500 lines, or over the model's context budget, into chunks along
    /// their structure (functions, CSV rows, JSON elements, headings, log windows), each
    /// read by an analyst for its content type. `off` sends every file whole.
    #[arg(long, value_enum, default_value_t = ChunkingArg::Auto, value_name = "WHEN")]
    pub chunking: ChunkingArg,

    /// Pack small files of one content type into shared calls (at most 1500 combined
    /// lines, and as many files as one answer has room for); each file still gets its own
    /// result file, split from the call's answer. The default in every input mode.
    #[arg(long, overrides_with = "no_batch_small")]
    pub batch_small: bool,

    /// Send every small file in its own call.
    #[arg(long, overrides_with = "batch_small")]
    pub no_batch_small: bool,

    /// What the code analyst looks for in chunks and batches.
    #[arg(long, value_enum, default_value_t = FocusArg::General)]
    pub focus: FocusArg,

    /// Model: `haiku`, `sonnet`, `opus` (Claude aliases) or any model id the provider knows.
    /// [default: sonnet on Anthropic, gpt-4.1-mini on api.openai.com, the one model another
    /// OpenAI-compatible server lists at /v1/models]
    #[arg(long, short = 'm')]
    pub model: Option<String>,

    /// Provider wire format. [default: anthropic if ANTHROPIC_API_KEY is set; else openai if
    /// OPENAI_API_KEY, OPENAI_BASE_URL or --base-url is set; command with --command]
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,

    /// A command-line agent to run once per unit instead of an API (`--provider command`):
    /// split like a shell would but never run by one, the prompt on stdin, stdout the answer,
    /// a non-zero exit a failure. E.g. --command 'claude -p --model haiku'.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,

    /// With --command: pass this variable, which rlm withholds from the agent by default, to
    /// it (repeatable): ANTHROPIC_API_KEY, OPENAI_API_KEY, ANTHROPIC_BASE_URL,
    /// OPENAI_BASE_URL, RLM_API_KEY or RLM_BASE_URL. E.g. a `claude -p` that signs in with a key.
    #[arg(long, value_name = "NAME", action = ArgAction::Append, requires = "command")]
    pub agent_env: Vec<String>,

    /// Refuse to start when RLM_DEPTH (set by a parent rlm for its command agents) has
    /// reached this many levels of nested runs (1-10).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10), allow_negative_numbers = true)]
    pub max_depth: u32,

    /// Base URL of the API (also ANTHROPIC_BASE_URL / OPENAI_BASE_URL). A URL with no key
    /// means an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Where per-file results, the aggregate and the report go. [default: .aiwg/rlm/batch-{timestamp}/]
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// How to combine the per-file results. [default: concat; synthesize in directory mode]
    #[arg(long, value_enum)]
    pub aggregate: Option<AggregateArg>,

    /// Most model calls in flight at once (hard cap 7; `.aiwg/aiwg.config`
    /// parallelism.max_parallel_subagents lowers it). [default: from config, else 4]
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_width, allow_negative_numbers = true)]
    pub max_parallel: Option<usize>,

    /// Do not mark the prompt prefix every file shares for the provider's prompt cache
    /// (Anthropic `cache_control`, OpenAI `prompt_cache_key`); also `rlm.prompt_cache: false`
    /// in .aiwg/aiwg.config. What is sent is otherwise the same.
    #[arg(long)]
    pub no_prompt_cache: bool,

    /// Do not read cached results (fresh results are still written to the cache).
    #[arg(long, conflicts_with = "cache_only")]
    pub no_cache: bool,

    /// Call nothing: fail (exit 2) listing every input that is not cached. With
    /// `--aggregate summarize`, an uncached summary leaves the concatenation in
    /// aggregate.md and the run exits 1.
    #[arg(long)]
    pub cache_only: bool,

    /// Send the units that miss the cache through the provider's batch API (Anthropic
    /// Message Batches, OpenAI Batch: half the price, results within 24 hours, usually much
    /// sooner) instead of realtime calls. Bare, or `on`: a server without a batch API is an
    /// error; `auto`: such a server gets realtime calls, with a notice; `all`: the
    /// aggregation calls go through it too, phase by phase; `off`: realtime calls. Give it
    /// after the prompt, or as --batch-api=WHEN. [default: rlm.batch_api in
    /// .aiwg/aiwg.config, else off]
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "on", value_name = "WHEN")]
    pub batch_api: Option<BatchApiArg>,

    /// With --batch-api: where requests the provider returns errored or expired are tried
    /// again (within --retries): in a follow-up batch, or in realtime calls.
    #[arg(long, value_enum, default_value_t = BatchFallbackArg::Batch, value_name = "HOW")]
    pub batch_api_fallback: BatchFallbackArg,

    /// Run even when the estimated cost is above $10.
    #[arg(long)]
    pub force: bool,

    /// Do not ask for confirmation when the estimated cost is above $1.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Resolve the files, plan the calls and estimate the cost; call nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print one JSON document on stdout (the report; the plan with --dry-run) and nothing else.
    // Repeatable: the /rlm-batch command adds its own --json (issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,

    /// No banner and no progress; errors, warnings and failures still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Seconds before one model call is abandoned (and retried), up to 86400.
    #[arg(long, value_name = "SECS", default_value = "120", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub timeout: f64,

    /// Seconds to wait for a connection to the model server, up to 86400. A server that
    /// cannot be reached (or never answers) a few times in a row, before it has ever
    /// answered, stops the run.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub connect_timeout: f64,

    /// Retries per call after the first attempt on server errors, timeouts, resets and
    /// malformed replies (0-20). Rate limits (429) do not use them up: see --rate-limit-wait.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=20), allow_negative_numbers = true)]
    pub retries: u32,

    /// Stop dispatching when the whole run has taken this long (`90s`, `15m`, `2h`); calls in
    /// flight get a grace period, and `rlm resume` goes on later.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_negative_numbers = true)]
    pub deadline: Option<f64>,

    /// Append one JSON line per model call to PATH: prompt, response, model, tokens,
    /// duration, attempts, success.
    #[arg(long, value_name = "PATH")]
    pub save_trajectory: Option<PathBuf>,

    /// Seconds one call may spend waiting out rate limits (429) before it fails, up to 86400.
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub rate_limit_wait: f64,

    /// Most output tokens per call (1-1000000) [default: 4096; 512 for the bundled local
    /// model, SmolLM2-135M]
    #[arg(long, value_name = "N", value_parser = parse_max_tokens, allow_negative_numbers = true)]
    pub max_tokens: Option<u32>,

    /// Abort if the estimated cost is above this many USD (also raises the $100 ceiling);
    /// stop dispatching once the real cost passes it.
    #[arg(long, value_name = "USD", value_parser = parse_max_cost, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,

    /// The model's context window in tokens, for models rlm does not know (local servers).
    #[arg(long, value_name = "TOKENS", value_parser = parse_context_window, allow_negative_numbers = true)]
    pub context_window: Option<u64>,

    /// Sampling temperature, 0-2 (sent only when given).
    #[arg(long, value_parser = parse_temperature, allow_negative_numbers = true)]
    pub temperature: Option<f32>,

    /// Do not respect .gitignore, .ignore and git exclude files.
    #[arg(long)]
    pub no_ignore: bool,

    /// Include hidden files and directories (a pattern that names one includes it anyway).
    #[arg(long)]
    pub hidden: bool,

    /// Follow symbolic links that lead outside the directory being searched, and take
    /// --files-from paths outside the working directory (by default both are skipped and
    /// listed in the report).
    #[arg(long, short = 'L')]
    pub follow_links: bool,

    // Directory mode (issue 7): `rlm batch DIR "prompt"`.
    /// Directory mode: process only files matching GLOB, relative to DIR (repeatable; a
    /// glob without `/` such as `*.py` matches at any depth). Naming an excluded-by-default
    /// file or folder (`vendor/**`, `*.min.js`) includes it.
    #[arg(long, value_name = "GLOB", action = ArgAction::Append)]
    pub include: Vec<String>,

    /// Directory mode: skip files (and folders) matching GLOB, relative to DIR (repeatable),
    /// on top of the default exclusions.
    #[arg(long, value_name = "GLOB", action = ArgAction::Append)]
    pub exclude: Vec<String>,

    /// Directory mode: only the files directly in DIR, not in its subdirectories.
    #[arg(long)]
    pub no_recursive: bool,

    /// Take only shard K of N of the planned units (each unit's shard is a hash of its
    /// stable id): N machines given the same inputs and --shard 1/N … N/N split one job
    /// with no coordinator, each writing its own run directory; `rlm merge` combines them.
    // A value that starts with `-` is the shard's to refuse (`--shard -1/2`), not an option.
    #[arg(long, value_name = "K/N", value_parser = parse_shard, allow_hyphen_values = true)]
    pub shard: Option<crate::shard::Shard>,

    /// Process at most N files, the largest (1-100000); the others are listed as skipped.
    /// [default: 20 for a directory, no limit for a glob]
    #[arg(long, value_name = "N", value_parser = parse_max_files, allow_negative_numbers = true)]
    pub max_files: Option<usize>,

    // --- Graph-bounded inputs and citations (issue 10) ---
    /// Process the files connected to PATH in the dependency graph instead of a pattern
    /// (the only argument is then the prompt); PATH itself is not sent. The project index
    /// (.aiwg/rlm/index/) is built first when it is missing or stale.
    #[arg(long, value_name = "PATH")]
    pub neighbors_of: Option<String>,

    /// With --neighbors-of: in = upstream (what PATH depends on), out = downstream (what
    /// depends on it), both = either way at every hop. [default: both]
    #[arg(long, value_enum, value_name = "DIR")]
    pub direction: Option<DirectionArg>,

    /// With --neighbors-of: hops to expand (1 to 10). [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10))]
    pub depth: Option<u32>,

    /// With --neighbors-of: the graph to query; `project` is this project's index. [default: project]
    #[arg(long, value_name = "NAME", conflicts_with = "graph_file")]
    pub graph: Option<String>,

    /// With --neighbors-of: query a dependency graph file instead:
    /// `{"<path>": {"upstream": [{"path", "type"}], "downstream": [...]}}`.
    #[arg(long, value_name = "FILE")]
    pub graph_file: Option<PathBuf>,

    /// Ask for a citation `[path@hash16, L42-58]` on every finding (each file's content
    /// hash is put in its prompt) and keep citations through aggregation; check the
    /// aggregate later with `rlm verify-citations`.
    #[arg(long)]
    pub require_citations: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
    /// A command-line agent given with --command.
    Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BatchApiArg {
    On,
    Auto,
    All,
    Off,
}

impl From<BatchApiArg> for crate::settings::BatchApiMode {
    fn from(arg: BatchApiArg) -> Self {
        match arg {
            BatchApiArg::On => Self::On,
            BatchApiArg::Auto => Self::Auto,
            BatchApiArg::All => Self::All,
            BatchApiArg::Off => Self::Off,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BatchFallbackArg {
    /// A follow-up batch.
    Batch,
    /// Realtime calls.
    Realtime,
}

impl From<BatchFallbackArg> for crate::settings::BatchFallback {
    fn from(arg: BatchFallbackArg) -> Self {
        match arg {
            BatchFallbackArg::Batch => Self::Batch,
            BatchFallbackArg::Realtime => Self::Realtime,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AggregateArg {
    Concat,
    Merge,
    Summarize,
    /// One synthesis per content type, then one cross-type report.
    Synthesize,
}

impl From<AggregateArg> for crate::aggregate::AggregateStrategy {
    fn from(arg: AggregateArg) -> Self {
        match arg {
            AggregateArg::Concat => Self::Concat,
            AggregateArg::Merge => Self::Merge,
            AggregateArg::Summarize => Self::Summarize,
            AggregateArg::Synthesize => Self::Synthesize,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    Error,
    Warning,
    Note,
}

impl From<FailOnArg> for crate::findings::FailOn {
    fn from(arg: FailOnArg) -> Self {
        match arg {
            FailOnArg::Error => Self::Error,
            FailOnArg::Warning => Self::Warning,
            FailOnArg::Note => Self::Note,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChunkingArg {
    Auto,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FocusArg {
    General,
    Security,
    Architecture,
    Performance,
}

impl From<FocusArg> for crate::content::Focus {
    fn from(arg: FocusArg) -> Self {
        match arg {
            FocusArg::General => Self::General,
            FocusArg::Security => Self::Security,
            FocusArg::Architecture => Self::Architecture,
            FocusArg::Performance => Self::Performance,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

impl From<ColorArg> for crate::printer::ColorChoice {
    fn from(arg: ColorArg) -> Self {
        match arg {
            ColorArg::Auto => Self::Auto,
            ColorArg::Always => Self::Always,
            ColorArg::Never => Self::Never,
        }
    }
}

impl From<ProviderArg> for crate::provider::ProviderKind {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::Anthropic => Self::Anthropic,
            ProviderArg::Openai => Self::Openai,
            ProviderArg::Command => Self::Command,
        }
    }
}
