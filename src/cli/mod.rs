//! Command-line definitions (clap types only). The core never sees these: they become plain
//! options here (`into_options`: a batch run's [`crate::settings::BatchOptions`], which
//! `settings/` resolves into one immutable [`crate::settings::BatchSettings`]).

mod batch_args;
mod into_options;
mod job_args;
mod merge_args;
mod numeric;
pub mod usage;

pub use batch_args::{
    AggregateArg, BatchApiArg, BatchArgs, BatchFallbackArg, ChunkingArg, ColorArg, FailOnArg, FocusArg, ProviderArg,
};
pub use job_args::{
    ExportFormatArg, JobCallArgs, JobCommand, JobExportArgs, JobListArgs, JobRerunArgs, JobResumeArgs, JobRunArgs,
    JobRunFlags, JobStatusArgs, PrReviewArgs, Toggle,
};

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use numeric::{parse_duration, parse_max_cost};

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

    /// More diagnostics on stderr (-v debug, -vv trace); RLM_LOG=rlm=debug,reqwest=info also works.
    #[arg(long, short = 'v', action = ArgAction::Count, global = true)]
    pub verbose: u8,

    /// When to colour stderr: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto, global = true, value_name = "WHEN")]
    pub color: ColorArg,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply a prompt to every file PATTERN matches, in parallel, and aggregate the answers.
    Batch(Box<BatchArgs>),
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
    /// Build or query the project's file-level dependency graph (.aiwg/rlm/index/).
    #[command(subcommand)]
    Index(IndexCommand),
    /// Check every citation in an aggregate against the files it cites.
    VerifyCitations(VerifyCitationsArgs),
    /// Ask one question about one file: it is cut into chunks by its content type, each
    /// read by an analyst, the findings synthesized, and the answer printed on stdout.
    #[command(
        after_help = "Any `rlm batch` flag may follow the prompt (--model, --focus, --json, --output-dir, …). \
Exit codes as for rlm batch."
    )]
    Query(Box<QueryArgs>),
    /// Show a run from the task store: unit states, cost so far, ETA, failures.
    Status(StatusArgs),
    /// List the runs in the task store, newest first.
    List(ListArgs),
    /// Go on with a run that stopped (crash, Ctrl-C, budget): only units that did not
    /// complete are dispatched; completed answers cost nothing.
    #[command(
        after_help = "Exit codes as for rlm batch; 2 also when there is no run to resume or another rlm owns it."
    )]
    Resume(ResumeArgs),
    /// Cancel a run's batches at the provider (`--batch-api`): what had finished is
    /// collected and kept (cached, its result files written), the rest recorded as not run;
    /// `rlm resume` sends those later.
    #[command(
        after_help = "Exit codes: 0 the batches were canceled (or had ended) and what had finished is kept; 2 no \
such run, or it has no batch at the provider; 3 the provider refused the cancel."
    )]
    Cancel(CancelArgs),
    /// Multi-phase jobs over structured items (map → reduce → review → report): a job
    /// file, or the pull-request review of a repository.
    #[command(subcommand)]
    Job(JobCommand),
    /// Combine runs of one plan over disjoint units — the shards of a `rlm batch --shard
    /// K/N` split — into one aggregate and one report, as if one run had done them all.
    #[command(
        after_help = "Run it where the shards' inputs are (the same checkout and configuration): it plans the \
job again to check that every run belongs to it. Exit codes as for rlm batch; 2 also when the runs belong to \
different plans, share units, or are not finished runs."
    )]
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The run directories to combine (each holds the report.json and settings.json of a
    /// finished run).
    #[arg(value_name = "RUN_DIR", required = true)]
    pub runs: Vec<PathBuf>,
    /// Where the merged run goes (result files, aggregate, report).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output_dir: PathBuf,
    /// How to combine the answers (summarize and synthesize call the model). [default: the runs' own]
    #[arg(long, value_enum)]
    pub aggregate: Option<AggregateArg>,
    /// Exit 1 when a finding at or above this level exists. [default: the runs' own]
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOnArg>,
    /// Also write the findings as SARIF 2.1.0 to PATH. [default: the runs' own]
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,
    /// Stop the aggregation calls once they have cost this many USD.
    #[arg(long, value_name = "USD", value_parser = parse_max_cost, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Print one JSON document on stdout (the merged report) and nothing else.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,
    /// No banner and no progress; errors, warnings and failures still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The run id (or its unique beginning). [default: the latest run in this directory]
    pub run: Option<String>,
    /// The recursion tree: the run and the runs its command agents started.
    #[arg(long)]
    pub tree: bool,
    /// One JSON document on stdout.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// One JSON document on stdout.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,
    /// Most runs listed (1-10000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000), allow_negative_numbers = true)]
    pub limit: u32,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run id (or its unique beginning). [default: the latest unfinished run in this directory;
    /// with --failed, the latest unfinished or with failed units]
    pub run: Option<String>,
    /// Also try the units that failed or timed out again.
    #[arg(long)]
    pub failed: bool,
    /// A new budget in USD for the whole run: what its earlier attempts spent counts.
    #[arg(long, value_name = "USD", value_parser = parse_max_cost, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// A new time limit for the whole run (`90s`, `15m`, `2h`): the time its earlier attempts
    /// ran counts.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_negative_numbers = true)]
    pub deadline: Option<f64>,
    /// The base URL of the API, replacing the run's: needed again when the run's held
    /// credentials (`http://user:pass@host`), which are never recorded.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// As for rlm batch.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// As for rlm batch.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// As for rlm batch.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run id (or its unique beginning). [default: the latest run in this directory]
    pub run: Option<String>,
    /// Give up the batches rlm cannot reach (recorded at another server than the settings
    /// point at, or unknown to it: deleted, or another API key's) without canceling them;
    /// `rlm resume` then sends their requests again, and pays again.
    #[arg(long)]
    pub forget: bool,
    /// The base URL of the API, replacing the run's: needed again when the run's held
    /// credentials (`http://user:pass@host`), which are never recorded.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// As for rlm batch.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// As for rlm batch: the run's report as one JSON document on stdout.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

/// `rlm query FILE PROMPT [flags]`: `rlm batch`'s arguments, its two positionals named for
/// one file and one question (parsed once, here: the flags are `rlm batch`'s own).
#[derive(Debug, Args)]
#[command(
    mut_arg("pattern", |a| a.value_name("FILE").help("The file to read.").required(true)),
    mut_arg("sub_prompt", |a| a.value_name("PROMPT").help("The question; `{file}` becomes the file's path.").required(true)),
    // The other input axes do not apply to one file.
    mut_arg("files_from", |a| a.hide(true)),
    mut_arg("null", |a| a.hide(true)),
    mut_arg("changed_since", |a| a.hide(true)),
    mut_arg("include", |a| a.hide(true)),
    mut_arg("exclude", |a| a.hide(true)),
    mut_arg("no_recursive", |a| a.hide(true)),
    mut_arg("max_files", |a| a.hide(true)),
    mut_arg("neighbors_of", |a| a.hide(true)),
    mut_arg("direction", |a| a.hide(true)),
    mut_arg("depth", |a| a.hide(true)),
    mut_arg("graph", |a| a.hide(true)),
    mut_arg("graph_file", |a| a.hide(true)),
    mut_arg("batch_small", |a| a.hide(true)),
    mut_arg("no_batch_small", |a| a.hide(true))
)]
pub struct QueryArgs {
    #[command(flatten)]
    pub batch: BatchArgs,
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
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
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
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
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

impl From<DirectionArg> for crate::index::Direction {
    fn from(arg: DirectionArg) -> Self {
        match arg {
            DirectionArg::In => Self::In,
            DirectionArg::Out => Self::Out,
            DirectionArg::Both => Self::Both,
        }
    }
}

#[derive(Debug, Args)]
#[command(
    after_help = "A stale citation (the file changed since it was cited) fails: it is no longer \
verifiable evidence. So does a malformed one (a hash that is not 16 lowercase hex characters, a line \
range such as L0, L50-5, L-3 or a bare 12).\nExit codes: 0 every citation verified (un-versioned ones only warn without \
--strict), 1 some citation is broken, stale or malformed (or, under --strict, un-versioned, or none \
found), 2 the aggregate cannot be read."
)]
pub struct VerifyCitationsArgs {
    /// The aggregate to check: markdown (inline citations and the `## Sources` footer) or
    /// JSON (citation objects {artifact_id, content_hash, lines}).
    pub file: PathBuf,

    /// Treat path-only (un-versioned) citations as errors, and an aggregate that cites
    /// nothing as a failure.
    #[arg(long)]
    pub strict: bool,

    /// Print one JSON document on stdout.
    // Repeatable, as every --json: a wrapper may add its own (/rlm-batch does; issue 17).
    #[arg(long, overrides_with = "json")]
    pub json: bool,

    /// The directory cited paths are relative to. [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}
