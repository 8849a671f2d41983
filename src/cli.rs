//! Command-line definitions (clap types only). The core never sees these: `settings.rs`
//! turns them into one immutable [`crate::settings::BatchSettings`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Fan one prompt out over many files to language models in parallel, then combine the
/// answers into one result and a completion report.
#[derive(Debug, Parser)]
#[command(name = "rlm", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply SUB_PROMPT to every file PATTERN matches, in parallel, and aggregate the answers.
    Batch(BatchArgs),
    /// Build or query the project's file-level dependency graph (.aiwg/rlm/index/).
    #[command(subcommand)]
    Index(IndexCommand),
    /// Check every citation in an aggregate against the files it cites.
    VerifyCitations(VerifyCitationsArgs),
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

/// `rlm index …`: the project's file-level dependency graph.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Parse the imports of every source file under ROOT and store the dependency graph in
    /// ROOT/.aiwg/rlm/index/ (only files whose content changed are parsed again).
    Build(IndexBuildArgs),
    /// List the files connected to one file in the dependency graph.
    #[command(
        after_help = "Directions: in = upstream (what the node depends on), out = downstream \
(what depends on it), both = either way at every hop.\n\
Exit codes: 0 success, 2 usage or input error (unknown node, bad graph file)."
    )]
    Neighbors(IndexNeighborsArgs),
}

#[derive(Debug, Args)]
pub struct IndexBuildArgs {
    /// The project root. [default: the current directory]
    pub root: Option<PathBuf>,

    /// Print the build report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IndexNeighborsArgs {
    /// The file to start from: project-relative (`src/a.ts`, `./src/a.ts`) or absolute
    /// inside the root.
    #[arg(long, value_name = "PATH")]
    pub node: String,

    /// Which edges to follow.
    #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
    pub direction: DirectionArg,

    /// Hops to expand (1 to 10).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub depth: u32,

    /// The graph to query: `project` is this project's index (built first when it is
    /// missing or stale).
    #[arg(long, value_name = "NAME", default_value = "project", conflicts_with = "graph_file")]
    pub graph: String,

    /// Query a dependency graph file instead:
    /// `{"<path>": {"upstream": [{"path", "type"}], "downstream": [...]}}`.
    #[arg(long, value_name = "FILE")]
    pub graph_file: Option<PathBuf>,

    /// Follow only edges of this type (import, reexport, require, dynamic-import, mod, use,
    /// include, or a graph file's own types).
    #[arg(long, value_name = "TYPE")]
    pub edge_type: Option<String>,

    /// The project root node paths are relative to. [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Print {graph, node, direction, edgeType, depth, neighbors, count, records} as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// Upstream: what the node depends on.
    In,
    /// Downstream: what depends on the node.
    Out,
    /// Both directions.
    Both,
}

#[derive(Debug, Args)]
#[command(
    after_help = "A stale citation (the file changed since it was cited) fails: it is no longer \
verifiable evidence.\nExit codes: 0 every citation verified (un-versioned ones only warn without \
--strict), 1 some citation is broken or stale (or un-versioned under --strict), 2 the aggregate \
cannot be read."
)]
pub struct VerifyCitationsArgs {
    /// The aggregate to check: markdown (inline citations and the `## Sources` footer) or
    /// JSON (citation objects {artifact_id, content_hash, lines}).
    pub file: PathBuf,

    /// Treat path-only (un-versioned) citations as errors.
    #[arg(long)]
    pub strict: bool,

    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,

    /// The directory cited paths are relative to. [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}
