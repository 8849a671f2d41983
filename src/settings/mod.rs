//! A run's options ([`BatchOptions`], made from the flags by the command line or read
//! back from a run's [`RunRecord`]) + environment + `.aiwg/aiwg.config` → one immutable
//! [`BatchSettings`], in typed parts (input, task, provider, budget, execution, output).
//!
//! Everything the run needs is decided here, before any work starts and without touching
//! the network, so a bad flag or a missing key fails in one clear line and the core never
//! looks at clap or the environment. The model a local server serves is discovered later,
//! in the run's async start-up.

mod batch_api;
mod batch_options;
mod config;
mod environment;
mod input_flags;
mod input_source;
mod parallelism;
mod provider_choice;
mod recorded_name;
mod run_record;

pub use batch_api::{BatchApiMode, BatchApiSettings, BatchFallback};
pub use batch_options::BatchOptions;
pub use config::ProjectConfig;
pub use environment::Environment;
use input_flags::{resolve_input, InputFlags, ResolvedInput};
pub use input_source::{DirectoryFlags, InputSource, DEFAULT_DIRECTORY_MAX_FILES};
pub use parallelism::{resolve_parallelism, Parallelism, FALLBACK_PARALLEL, HARD_CAP};
#[cfg(test)]
use provider_choice::resolve_provider;
pub use provider_choice::{provider_settings, ProviderFlags};
pub use run_record::{RecordError, RunKind, RunRecord, RECORD_VERSION};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::aggregate::AggregateStrategy;
use crate::cache::CacheMode;
use crate::error::{EnvBlame, EnvFailure, InputFailure, RlmError};
use crate::printer::{ColorChoice, PrinterMode};
use crate::provider::bundled_model::BundledModel;
use crate::provider::catalog::PriceTable;
use crate::provider::ProviderKind;
use crate::schema::OutputSchema;
use crate::secret::{redact_url, ApiKey, Redactor};

/// Everything one `rlm batch` run needs, decided before it starts.
#[derive(Debug, Clone, Serialize)]
pub struct BatchSettings {
    #[serde(serialize_with = "crate::input::serialize_shown")]
    pub cwd: PathBuf,
    /// The command line as given (recorded in the task store, replayed by `rlm resume`).
    #[serde(skip)]
    pub argv: Vec<String>,
    /// `rlm resume`: the run taken up again.
    #[serde(skip)]
    pub resume: Option<ResumeTarget>,
    /// The options these settings were built from, with the run's kind: a run records them
    /// (URL credentials hidden), and `rlm resume` and `rlm merge` build the run's settings
    /// from the record.
    #[serde(skip)]
    pub record: RunRecord,
    /// `RLM_PARENT_RUN`: the run whose command agent started this one.
    pub parent_run: Option<String>,
    pub input: InputSettings,
    pub task: TaskSettings,
    pub provider: ProviderSettings,
    pub budget: BudgetSettings,
    pub exec: ExecSettings,
    pub output: OutputSettings,
}

/// `--max-tokens` when it is not given (and the model is none rlm knows to need less).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A run `rlm resume` takes up: its id and directory, the units not to dispatch again
/// (failed ones, unless `--failed`), and what its earlier attempts spent.
#[derive(Debug, Clone)]
pub struct ResumeTarget {
    pub run_id: String,
    pub output_dir: PathBuf,
    pub skip: std::collections::HashSet<String>,
    /// The run directory's lock, taken before the run was claimed; the resumed run holds it
    /// (`RunDir::reopen`) until it ends.
    pub lock: std::sync::Arc<crate::run_dir::RunLock>,
    /// This attempt's number: 2 for the first resume.
    pub attempt: u32,
    /// Dollars the earlier attempts spent: `--max-cost` counts the whole run, so the budget
    /// check adds them to this attempt's spend.
    pub spent_usd: f64,
    /// How long the earlier attempts ran: `--deadline` counts the whole run, so this attempt
    /// gets the deadline less this.
    pub elapsed: Duration,
    /// `--failed`: the failed and timed-out units are queued again too.
    pub retry_failed: bool,
    /// The `--max-cost` and `--deadline` given to this resume (recorded with the attempt:
    /// later resumes keep them).
    pub limits: crate::store::Limits,
    /// The units the earlier attempts completed: their answers were paid for then, so the
    /// report tells them from this attempt's cache hits.
    pub earlier_completed: std::collections::HashSet<String>,
    /// When the run was first started (`2026-11-28-065537`): `aggregate.md` says the run's
    /// time, not this attempt's.
    pub run_timestamp: String,
}

impl ResumeTarget {
    /// What is left of `deadline` for this attempt (zero when the earlier ones used it up).
    pub fn remaining(&self, deadline: Duration) -> Duration {
        deadline.saturating_sub(self.elapsed)
    }

    /// The fields of the `run:resumed` line of `events.jsonl`.
    pub fn event_fields(&self) -> serde_json::Value {
        serde_json::json!({
            "attempt": self.attempt,
            "earlier_cost_usd": self.spent_usd,
            "earlier_elapsed_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "retry_failed": self.retry_failed,
            "skipped_failed": self.skip.len(),
        })
    }
}

/// Which files.
#[derive(Debug, Clone, Serialize)]
pub struct InputSettings {
    /// What the user named, as shown in the banner and the report.
    pub pattern: String,
    pub source: InputSource,
    pub respect_ignore: bool,
    pub hidden: bool,
    pub follow_links: bool,
    /// `--max-files`: the largest this many files are processed (directory mode: default
    /// [`DEFAULT_DIRECTORY_MAX_FILES`]; a glob: no limit unless given).
    pub max_files: Option<usize>,
    /// `--shard K/N`: only the planned units of shard K of N.
    pub shard: Option<crate::shard::Shard>,
}

impl InputSettings {
    /// Whether the inputs are a directory (`rlm batch DIR "prompt"`), whose defaults differ:
    /// every file read by its type's analyst, per-type synthesis.
    pub fn is_directory_mode(&self) -> bool {
        matches!(self.source, InputSource::Directory { .. })
    }
}

/// What to do with them.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSettings {
    pub sub_prompt: String,
    /// `--require-citations` (issue 10): a citation on every finding, kept through
    /// aggregation.
    pub require_citations: bool,
    pub aggregate: AggregateStrategy,
    /// `--schema`: the JSON Schema every answer conforms to.
    pub schema: Option<OutputSchema>,
    /// `--sarif PATH`: where the findings also go as SARIF.
    #[serde(serialize_with = "crate::input::serialize_shown_option")]
    pub sarif: Option<PathBuf>,
    /// `--fail-on`: the finding level that fails the run.
    #[serde(skip)]
    pub fail_on: Option<crate::findings::FailOn>,
    /// `--chunking auto` (true) or `off`.
    pub chunking: bool,
    /// Small files share calls (the default in every input mode; off with
    /// `--no-batch-small`).
    pub batch_small: bool,
    /// `rlm query`: every file is read by its type's analyst, in chunks when it is longer
    /// than one.
    pub chunk_always: bool,
    pub focus: crate::content::Focus,
}

/// Who answers.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    /// Without a trailing slash. Shown only through [`ProviderSettings::shown_base_url`].
    #[serde(serialize_with = "serialize_url")]
    pub base_url: String,
    /// The provider's own API (prices apply, an unlisted model counts at the ceiling).
    pub official: bool,
    #[serde(skip)]
    pub api_key: Option<ApiKey>,
    /// `None`: ask the server (OpenAI-compatible servers other than api.openai.com).
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub temperature: Option<f32>,
    pub timeout: Duration,
    /// `--connect-timeout`.
    pub connect_timeout: Duration,
    pub max_tokens: u32,
    /// Whether `--max-tokens` was given: when it was not, a model rlm knows to need less
    /// (the bundled local model) gets its own default once it is known.
    pub max_tokens_given: bool,
    /// `--provider command`: the agent's argv.
    pub command: Option<Vec<String>>,
    /// `--agent-env`: the withheld variables passed to the agent after all.
    pub agent_env: Vec<String>,
    /// How deep in nested rlm runs this one is (`RLM_DEPTH`, 0 at the top).
    pub depth: u32,
    /// Why no call can be made (no provider or no key), raised once the inputs are known to
    /// exist, so a mistyped pattern still gets the "No files matched" message first.
    pub blocker: Option<String>,
}

/// What it may cost.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetSettings {
    pub max_cost: Option<f64>,
    pub force: bool,
    pub yes: bool,
    pub prices: PriceTable,
}

/// How calls are made.
#[derive(Debug, Clone, Serialize)]
pub struct ExecSettings {
    pub parallelism: Parallelism,
    pub retries: u32,
    /// First delay of the exponential backoff (`RLM_BACKOFF_BASE_MS`, default 500 ms).
    pub backoff_base: Duration,
    /// How long one call may wait out 429s before it fails.
    pub rate_limit_wait: Duration,
    pub cache_mode: CacheMode,
    /// Mark the shared prompt prefix for the provider's prompt cache (`--no-prompt-cache`
    /// or `rlm.prompt_cache: false` turn it off).
    pub prompt_cache: bool,
    /// `--deadline`: the whole run's time limit.
    pub deadline: Option<Duration>,
    /// `--save-trajectory`: where each call is logged.
    #[serde(serialize_with = "crate::input::serialize_shown_option")]
    pub trajectory: Option<PathBuf>,
    /// `--batch-api`: units (and with `all`, aggregation calls) through the provider's
    /// batch API.
    pub batch_api: BatchApiSettings,
}

/// What the user sees and where results go.
#[derive(Debug, Clone, Serialize)]
pub struct OutputSettings {
    #[serde(serialize_with = "crate::input::serialize_shown_option")]
    pub output_dir: Option<PathBuf>,
    pub dry_run: bool,
    pub json: bool,
    pub quiet: bool,
    pub color: ColorChoice,
    pub no_color: bool,
    pub stderr_is_terminal: bool,
    pub stdin_is_terminal: bool,
    /// `rlm query`: the answer (the aggregate) goes to stdout.
    pub answer_on_stdout: bool,
    /// `GITHUB_ACTIONS=true`: findings are also printed as workflow-command annotations.
    pub github_actions: bool,
    /// `GITHUB_STEP_SUMMARY`: the completion report (and findings) are appended to it.
    #[serde(serialize_with = "crate::input::serialize_shown_option")]
    pub step_summary: Option<PathBuf>,
}

impl OutputSettings {
    pub fn printer_mode(&self) -> PrinterMode {
        PrinterMode {
            quiet: self.quiet,
            json: self.json,
            stderr_is_terminal: self.stderr_is_terminal,
            color: PrinterMode::color_enabled(self.color, self.stderr_is_terminal, self.no_color),
        }
    }
}

impl ProviderSettings {
    /// What an HTTP client of these settings needs to call `model`.
    pub fn http_config(&self, model: &str) -> crate::provider::HttpConfig {
        crate::provider::HttpConfig {
            kind: self.kind,
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            model: model.to_string(),
            temperature: self.temperature,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
        }
    }

    /// The base URL as it may be shown (credentials hidden).
    pub fn shown_base_url(&self) -> String {
        if let Some(argv) = &self.command {
            return argv.join(" ");
        }
        redact_url(&self.base_url).into_owned()
    }

    /// What tells this endpoint apart in cache keys: nothing for the official APIs (so
    /// existing caches stay valid), the URL without credentials for any other server, so
    /// two servers serving different models under one name never share entries.
    pub fn endpoint_identity(&self) -> Option<String> {
        if let Some(argv) = &self.command {
            // The whole command line: `claude -p --model haiku` and `--model opus` differ.
            return Some(format!("command:{}", argv.join("\u{1f}")));
        }
        (!self.official).then(|| redact_url(&crate::provider::versioned_base(&self.base_url)).into_owned())
    }
}

fn serialize_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

impl BatchSettings {
    /// Combines a run's options, environment and the project config; every conflict is one
    /// clear error. A query's files are all read by their analysts, in chunks, and its
    /// answer goes to stdout.
    pub fn resolve(
        options: BatchOptions,
        kind: RunKind,
        color: ColorChoice,
        env: &Environment,
    ) -> Result<Self, RlmError> {
        let mut record = RunRecord::new(kind, options.clone());
        // Destructure exhaustively so a new option is a compile error until it is handled here.
        let BatchOptions {
            pattern,
            sub_prompt,
            prompt_file,
            files_from,
            null,
            changed_since,
            sarif,
            fail_on,
            schema,
            chunking,
            batch_small,
            focus,
            model,
            provider,
            command,
            agent_env,
            max_depth,
            base_url,
            output_dir,
            aggregate,
            max_parallel,
            prompt_cache,
            cache_mode,
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            connect_timeout,
            deadline,
            save_trajectory,
            retries,
            rate_limit_wait,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            respect_ignore,
            hidden,
            follow_links,
            include,
            exclude,
            no_recursive,
            shard,
            max_files,
            neighbors_of,
            direction,
            depth,
            graph,
            graph_file,
            require_citations,
            batch_api,
            batch_api_fallback,
        } = options;

        if prompt_file.as_deref() == Some(Path::new("-")) && files_from.as_deref() == Some(Path::new("-")) {
            return Err(RlmError::Usage(
                "--prompt-file - and --files-from - both read standard input: put one of them in a file".into(),
            ));
        }
        let ResolvedInput {
            source,
            prompt,
            max_files,
        } = resolve_input(
            InputFlags {
                first: pattern,
                second: sub_prompt,
                prompt_from_file: prompt_file.is_some(),
                files_from,
                null,
                changed_since,
                directory: DirectoryFlags {
                    include,
                    exclude,
                    no_recursive,
                    max_files,
                },
                neighbors_of,
                direction,
                depth,
                graph,
                graph_file,
            },
            &env.cwd,
        )?;
        let directory_mode = matches!(source, InputSource::Directory { .. });
        let sub_prompt = match (prompt, prompt_file) {
            (Some(p), _) => p,
            (None, Some(file)) => {
                let text = read_prompt_file(&file, &env.cwd)?;
                if file == Path::new("-") {
                    // Standard input is gone by the time the run is resumed: the record
                    // keeps what it said (a prompt file is read again, as given again).
                    record.settings.prompt_given(text.clone());
                }
                text
            }
            (None, None) => {
                return Err(RlmError::Usage(
                    "no prompt: pass it as the second argument or with --prompt-file FILE".into(),
                ))
            }
        };
        if sub_prompt.trim().is_empty() {
            return Err(RlmError::Usage(
                "the sub-prompt is empty: say what to do with each file, e.g. 'List the exported functions in {file}'"
                    .into(),
            ));
        }

        let schema = schema.map(|file| OutputSchema::load(&file, &env.cwd)).transpose()?;
        let config = ProjectConfig::load(&env.cwd)?;
        let max_tokens_given = max_tokens.is_some();
        let max_tokens = max_tokens.unwrap_or_else(|| {
            model
                .as_deref()
                .and_then(BundledModel::recognize)
                .map_or(DEFAULT_MAX_TOKENS, |m| m.max_tokens)
        });
        let mut provider = provider_settings(
            ProviderFlags {
                provider,
                command,
                base_url,
                model,
                context_window,
                temperature,
                timeout,
                connect_timeout,
                max_tokens,
                max_depth,
                agent_env,
            },
            env,
        )?;
        provider.max_tokens_given = max_tokens_given;
        let backoff_base = backoff_base(env)?;
        let batch_api =
            BatchApiSettings::resolve(batch_api, config.rlm.batch_api, batch_api_fallback, provider.kind, env)?;
        if batch_api.mode.is_on() && provider.kind == ProviderKind::Command {
            return Err(RlmError::Usage(
                "--batch-api: the command provider has no batch API; run without --batch-api (or set \
                 rlm.batch_api to off in .aiwg/aiwg.config)"
                    .into(),
            ));
        }

        Ok(BatchSettings {
            record,
            input: InputSettings {
                pattern: source.label(),
                source,
                respect_ignore,
                hidden,
                follow_links,
                max_files,
                shard,
            },
            task: TaskSettings {
                sub_prompt,
                require_citations,
                aggregate: aggregate.unwrap_or(if directory_mode {
                    AggregateStrategy::Synthesize
                } else {
                    AggregateStrategy::Concat
                }),
                schema,
                sarif: sarif.map(|p| if p.is_absolute() { p } else { env.cwd.join(p) }),
                fail_on,
                chunking,
                batch_small,
                chunk_always: kind == RunKind::Query,
                focus,
            },
            provider,
            budget: BudgetSettings {
                max_cost,
                force,
                yes,
                prices: PriceTable::new(config.rlm.prices.clone()),
            },
            exec: ExecSettings {
                parallelism: resolve_parallelism(max_parallel, config.max_parallel()),
                retries,
                backoff_base,
                rate_limit_wait: Duration::from_secs_f64(rate_limit_wait),
                deadline: deadline.map(Duration::from_secs_f64),
                prompt_cache: prompt_cache && config.rlm.prompt_cache != Some(false),
                trajectory: save_trajectory.map(|p| if p.is_absolute() { p } else { env.cwd.join(p) }),
                batch_api,
                cache_mode,
            },
            output: OutputSettings {
                output_dir: output_dir.map(|d| if d.is_absolute() { d } else { env.cwd.join(d) }),
                dry_run,
                json,
                quiet,
                color,
                no_color: env.var("NO_COLOR").is_some(),
                stderr_is_terminal: env.stderr_is_terminal,
                stdin_is_terminal: env.stdin_is_terminal,
                answer_on_stdout: kind == RunKind::Query,
                github_actions: env.var("GITHUB_ACTIONS") == Some("true"),
                step_summary: env.var("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            },
            cwd: env.cwd.clone(),
            argv: env.argv.clone(),
            resume: None,
            parent_run: env.var("RLM_PARENT_RUN").map(str::to_string),
        })
    }

    /// The `.aiwg/rlm` directory of this project.
    pub fn rlm_dir(&self) -> PathBuf {
        self.cwd.join(".aiwg").join("rlm")
    }

    /// The redactor for everything this run writes.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.provider.api_key.iter())
    }
}

/// `RLM_BACKOFF_BASE_MS`: the first delay of the retry backoff (default 500 ms).
pub fn backoff_base(env: &Environment) -> Result<Duration, RlmError> {
    Ok(env
        .var("RLM_BACKOFF_BASE_MS")
        .map(|v| match v.trim().parse::<u64>() {
            Ok(ms) if ms <= 600_000 => Ok(Duration::from_millis(ms)),
            _ => Err(EnvFailure::bad_value(
                "RLM_BACKOFF_BASE_MS",
                v,
                "a whole number of milliseconds up to 600000",
                EnvBlame::Config,
            )),
        })
        .transpose()?
        .unwrap_or(Duration::from_millis(500)))
}

/// The prompt from `--prompt-file` (`-` is stdin).
fn read_prompt_file(file: &Path, cwd: &Path) -> Result<String, RlmError> {
    if file == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(InputFailure::PromptFromStdin)?;
        return Ok(text);
    }
    let path = if file.is_absolute() {
        file.to_path_buf()
    } else {
        cwd.join(file)
    };
    fs_err::read_to_string(&path).map_err(|e| {
        let shown = file.display();
        RlmError::Input(match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "--prompt-file {shown}: no such file; give the path of a file that holds the prompt (or - to read it \
                 from standard input)"
            ),
            _ if path.is_dir() => {
                format!("--prompt-file {shown}: is a directory; give the path of a file that holds the prompt")
            }
            _ => format!("--prompt-file {shown}: cannot read it ({e}); give a readable file that holds the prompt"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_identity_only_for_other_servers() {
        let env = Environment::with_vars(&[("OPENAI_API_KEY", "k")], PathBuf::from("/"));
        let official = resolve_provider(Some(ProviderKind::Openai), None, None, None, None, &env).unwrap();
        assert_eq!(official.endpoint_identity(), None);
        let local = resolve_provider(
            Some(ProviderKind::Openai),
            Some("http://u:p@127.0.0.1:8080/".into()),
            Some("m".into()),
            None,
            None,
            &env,
        )
        .unwrap();
        assert_eq!(
            local.endpoint_identity().as_deref(),
            Some("http://***@127.0.0.1:8080/v1")
        );
        assert!(local.model.is_some());
    }
}
