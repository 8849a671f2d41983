//! Flags + environment + `.aiwg/aiwg.config` → one immutable [`BatchSettings`].
//!
//! Everything the run needs is decided here, before any work starts, so a bad flag or a
//! missing key fails in one clear line and the core never looks at clap or the environment.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{AggregateArg, BatchArgs, ProviderArg};
use crate::error::RlmError;
use crate::provider::catalog::{self, Price, PriceTable};

/// The seed's hard cap on model calls in flight (REF-086).
pub const HARD_CAP: usize = 7;
/// Width used when neither the flag nor the config says.
pub const FALLBACK_PARALLEL: usize = 4;

/// Which wire format we speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    Openai,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
        }
    }

    /// The environment variable that holds this provider's key.
    pub fn key_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Openai => "OPENAI_API_KEY",
        }
    }

    fn base_url_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
            ProviderKind::Openai => "OPENAI_BASE_URL",
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Openai => "https://api.openai.com",
        }
    }
}

/// How results are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AggregateStrategy {
    Concat,
    Merge,
    Summarize,
}

impl AggregateStrategy {
    pub fn name(self) -> &'static str {
        match self {
            AggregateStrategy::Concat => "concat",
            AggregateStrategy::Merge => "merge",
            AggregateStrategy::Summarize => "summarize",
        }
    }
}

/// How the result cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Read hits, write misses (the default).
    ReadWrite,
    /// `--no-cache`: never read, still write.
    WriteOnly,
    /// `--cache-only`: read; any miss is an error and nothing is called.
    ReadOnly,
}

/// An API key. Its `Debug` and `Display` never show it, so it cannot leak into a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The key as text to scrub from output; keys under 4 characters are left alone (they
    /// would scrub ordinary words).
    pub fn scrubbable(&self) -> Option<&str> {
        (self.0.len() >= 4).then_some(self.0.as_str())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// What the environment provides; a struct so tests can build one without touching the
/// process environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub vars: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub stderr_is_terminal: bool,
    pub stdin_is_terminal: bool,
}

impl Environment {
    /// Reads the real process environment.
    pub fn from_process() -> Result<Self, RlmError> {
        use std::io::IsTerminal;
        let cwd =
            std::env::current_dir().map_err(|e| RlmError::Usage(format!("cannot read the current directory: {e}")))?;
        Ok(Environment {
            vars: std::env::vars().collect(),
            cwd,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            stdin_is_terminal: std::io::stdin().is_terminal(),
        })
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.trim().is_empty())
    }
}

/// The project's `.aiwg/aiwg.config` (JSON), the parts rlm reads.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    pub max_parallel_subagents: Option<usize>,
    pub prices: BTreeMap<String, Price>,
}

impl ProjectConfig {
    /// Reads `.aiwg/aiwg.config` under `root`; a missing file is an empty config.
    pub fn load(root: &Path) -> Result<Self, RlmError> {
        let path = root.join(".aiwg").join("aiwg.config");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(RlmError::io(path, e)),
        };
        Self::parse(&text).map_err(|msg| {
            RlmError::Usage(format!(
                "{}: {msg}; expected JSON such as {{\"parallelism\": {{\"max_parallel_subagents\": 4}}}}",
                path.display()
            ))
        })
    }

    fn parse(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON ({e})"))?;
        let mut config = ProjectConfig::default();
        if let Some(n) = value.pointer("/parallelism/max_parallel_subagents") {
            let n = n
                .as_u64()
                .filter(|n| *n >= 1)
                .ok_or("parallelism.max_parallel_subagents must be a whole number of at least 1")?;
            config.max_parallel_subagents = Some(n as usize);
        }
        if let Some(prices) = value.pointer("/rlm/prices") {
            config.prices = serde_json::from_value(prices.clone()).map_err(|e| {
                format!("rlm.prices must map model ids to {{\"input\": USD, \"output\": USD}} per million tokens ({e})")
            })?;
        }
        Ok(config)
    }
}

/// The resolved width of the worker pool and the warning (if any) the user should see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parallelism {
    pub width: usize,
    pub warning: Option<String>,
}

/// The seed's precedence: config cap, hard cap 7, the flag — the smallest wins; a flag
/// above the cap warns and clamps, never fails; 4 when nothing is configured.
pub fn resolve_parallelism(flag: Option<usize>, config: Option<usize>) -> Result<Parallelism, RlmError> {
    let cap = config.map_or(HARD_CAP, |c| c.min(HARD_CAP));
    match flag {
        Some(0) => Err(RlmError::Usage("--max-parallel must be at least 1".into())),
        Some(n) if n > cap => {
            let source = match config {
                Some(c) if c < HARD_CAP => format!(".aiwg/aiwg.config caps it at {c}"),
                _ => format!("the hard cap is {HARD_CAP}"),
            };
            Ok(Parallelism {
                width: cap,
                warning: Some(format!("--max-parallel {n} clamped to {cap}: {source}")),
            })
        }
        Some(n) => Ok(Parallelism {
            width: n,
            warning: None,
        }),
        None => Ok(Parallelism {
            width: config.map_or(FALLBACK_PARALLEL, |_| cap),
            warning: None,
        }),
    }
}

/// Everything one `rlm batch` run needs, decided before it starts.
#[derive(Debug, Clone)]
pub struct BatchSettings {
    pub cwd: PathBuf,
    pub pattern: String,
    pub sub_prompt: String,
    pub provider: ProviderKind,
    /// The model id sent to the provider.
    pub model: String,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub output_dir: Option<PathBuf>,
    pub aggregate: AggregateStrategy,
    pub parallelism: Parallelism,
    pub cache_mode: CacheMode,
    pub force: bool,
    pub yes: bool,
    pub dry_run: bool,
    pub json: bool,
    pub quiet: bool,
    pub timeout: Duration,
    pub retries: u32,
    pub max_tokens: u32,
    pub max_cost: Option<f64>,
    /// The model's context window: `--context-window`, the catalog, or a default used only
    /// to size summarize groups.
    pub context_window: u64,
    /// Whether `context_window` is known (flag or catalog). An unknown window never blocks a
    /// file: the server decides, and a refusal is that file's failure.
    pub context_window_known: bool,
    /// The price the estimate and the report count with (see [`PriceBasis`]).
    pub price: Option<Price>,
    pub price_basis: PriceBasis,
    /// Why no call can be made (no provider or no key), raised once the inputs are known to
    /// exist, so a mistyped pattern still gets the "No files matched" message first.
    pub call_blocker: Option<String>,
    pub temperature: Option<f32>,
    pub respect_ignore: bool,
    pub hidden: bool,
    /// First delay of the exponential backoff (`RLM_BACKOFF_BASE_MS`, default 500 ms).
    pub backoff_base: Duration,
    pub stderr_is_terminal: bool,
    pub stdin_is_terminal: bool,
}

impl BatchSettings {
    /// Combines flags, environment and the project config; every conflict is one clear error.
    pub fn resolve(args: BatchArgs, env: &Environment) -> Result<Self, RlmError> {
        // Destructure exhaustively so a new flag is a compile error until it is handled here.
        let BatchArgs {
            pattern,
            sub_prompt,
            model,
            provider,
            base_url,
            output_dir,
            aggregate,
            max_parallel,
            no_cache,
            cache_only,
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            retries,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            no_ignore,
            hidden,
        } = args;

        if pattern.trim().is_empty() {
            return Err(RlmError::Usage(
                "the file pattern is empty: pass a glob such as 'src/**/*.ts'".into(),
            ));
        }
        if sub_prompt.trim().is_empty() {
            return Err(RlmError::Usage(
                "the sub-prompt is empty: say what to do with each file, e.g. 'List the exported functions in {file}'"
                    .into(),
            ));
        }
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(RlmError::Usage("--timeout must be a positive number of seconds".into()));
        }
        if max_tokens == 0 {
            return Err(RlmError::Usage("--max-tokens must be at least 1".into()));
        }
        if let Some(cost) = max_cost {
            if !(cost.is_finite() && cost >= 0.0) {
                return Err(RlmError::Usage(
                    "--max-cost must be a non-negative number of USD".into(),
                ));
            }
        }

        let config = ProjectConfig::load(&env.cwd)?;
        let parallelism = resolve_parallelism(max_parallel, config.max_parallel_subagents)?;

        let mut call_blocker = None;
        let provider = match provider {
            Some(ProviderArg::Anthropic) => ProviderKind::Anthropic,
            Some(ProviderArg::Openai) => ProviderKind::Openai,
            None => detect_provider(env).unwrap_or_else(|e| {
                call_blocker = Some(e);
                ProviderKind::Anthropic
            }),
        };
        let base_url = base_url
            .or_else(|| env.var(provider.base_url_var()).map(str::to_string))
            .unwrap_or_else(|| provider.default_base_url().to_string());
        let base_url = base_url.trim_end_matches('/').to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(RlmError::Usage(format!(
                "--base-url '{base_url}' is not an http(s) URL: pass e.g. http://127.0.0.1:8080"
            )));
        }
        let api_key = env.var(provider.key_var()).map(|k| Secret(k.trim().to_string()));
        let is_official = base_url == provider.default_base_url();
        if api_key.is_none() && is_official && call_blocker.is_none() {
            call_blocker = Some(format!(
                "{} is not set: export it, or use a local OpenAI-compatible server with \
                 --provider openai --base-url http://127.0.0.1:PORT (see scripts/local-model)",
                provider.key_var()
            ));
        }

        let model = match (model, provider) {
            (Some(m), ProviderKind::Anthropic) => catalog::resolve_alias(m.trim()),
            (Some(m), ProviderKind::Openai) => m.trim().to_string(),
            (None, ProviderKind::Anthropic) => catalog::resolve_alias("sonnet"),
            (None, ProviderKind::Openai) if is_official => "gpt-4.1-mini".to_string(),
            // Another server: ask it which model it serves; if that fails, nothing can be
            // called (said after the inputs are checked, and by --dry-run).
            (None, ProviderKind::Openai) => crate::provider::discover_model(&base_url, api_key.as_ref())
                .unwrap_or_else(|e| {
                    call_blocker = call_blocker.take().or(Some(e));
                    "unknown".to_string()
                }),
        };
        if model.is_empty() {
            return Err(RlmError::Usage(
                "--model is empty: pass haiku, sonnet, opus or a model id".into(),
            ));
        }
        let known_window = context_window.or_else(|| catalog::context_window(&model));
        let context_window = known_window.unwrap_or(catalog::DEFAULT_CONTEXT_WINDOW);
        if known_window.is_some() && u64::from(max_tokens) >= context_window {
            return Err(RlmError::Usage(format!(
                "--max-tokens {max_tokens} leaves no room for input in the {context_window}-token context \
                 window of {model}: lower --max-tokens or raise --context-window"
            )));
        }

        let prices = PriceTable::new(config.prices);
        let (price, price_basis) = match prices.lookup(&model) {
            Some(p) => (Some(p), PriceBasis::Listed),
            // On the provider's own API an unknown model still costs money: count it at the
            // ceiling so the safety thresholds hold.
            None if is_official => (Some(catalog::CEILING_PRICE), PriceBasis::Ceiling),
            None => (None, PriceBasis::Unknown),
        };

        let backoff_base = env
            .var("RLM_BACKOFF_BASE_MS")
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    RlmError::Usage(format!(
                        "RLM_BACKOFF_BASE_MS='{v}' is not a whole number of milliseconds"
                    ))
                })
            })
            .transpose()?
            .map_or(Duration::from_millis(500), Duration::from_millis);

        Ok(BatchSettings {
            cwd: env.cwd.clone(),
            pattern,
            sub_prompt,
            provider,
            model,
            base_url,
            api_key,
            output_dir: output_dir.map(|d| if d.is_absolute() { d } else { env.cwd.join(d) }),
            aggregate: match aggregate {
                AggregateArg::Concat => AggregateStrategy::Concat,
                AggregateArg::Merge => AggregateStrategy::Merge,
                AggregateArg::Summarize => AggregateStrategy::Summarize,
            },
            parallelism,
            cache_mode: if cache_only {
                CacheMode::ReadOnly
            } else if no_cache {
                CacheMode::WriteOnly
            } else {
                CacheMode::ReadWrite
            },
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout: Duration::from_secs_f64(timeout),
            retries,
            max_tokens,
            max_cost,
            context_window,
            context_window_known: known_window.is_some(),
            price,
            price_basis,
            call_blocker,
            temperature,
            respect_ignore: !no_ignore,
            hidden,
            backoff_base,
            stderr_is_terminal: env.stderr_is_terminal,
            stdin_is_terminal: env.stdin_is_terminal,
        })
    }

    /// The `.aiwg/rlm` directory of this project.
    pub fn rlm_dir(&self) -> PathBuf {
        self.cwd.join(".aiwg").join("rlm")
    }

    /// Every secret this run knows, for scrubbing text before it is written anywhere.
    pub fn secrets(&self) -> Vec<&str> {
        self.api_key.iter().filter_map(Secret::scrubbable).collect()
    }
}

/// Where the run's prices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceBasis {
    /// The built-in table or `rlm.prices`.
    Listed,
    /// Not listed, on the provider's own API: counted at [`catalog::CEILING_PRICE`].
    Ceiling,
    /// Not listed, on another server (usually local and free): costs count as 0.
    Unknown,
}

fn detect_provider(env: &Environment) -> Result<ProviderKind, String> {
    if env.var("ANTHROPIC_API_KEY").is_some() {
        Ok(ProviderKind::Anthropic)
    } else if env.var("OPENAI_API_KEY").is_some() || env.var("OPENAI_BASE_URL").is_some() {
        Ok(ProviderKind::Openai)
    } else if env.var("ANTHROPIC_BASE_URL").is_some() {
        Ok(ProviderKind::Anthropic)
    } else {
        Err(
            "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or run a local \
             OpenAI-compatible server and pass --provider openai --base-url http://127.0.0.1:PORT \
             (scripts/local-model start prints one)"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_precedence() {
        assert_eq!(resolve_parallelism(None, None).unwrap().width, 4);
        assert_eq!(resolve_parallelism(None, Some(10)).unwrap().width, 7);
        assert_eq!(resolve_parallelism(None, Some(3)).unwrap().width, 3);
        assert_eq!(resolve_parallelism(Some(5), None).unwrap().width, 5);
        let clamped = resolve_parallelism(Some(20), None).unwrap();
        assert_eq!(clamped.width, 7);
        assert!(clamped.warning.unwrap().contains("clamped to 7"));
        let by_config = resolve_parallelism(Some(6), Some(2)).unwrap();
        assert_eq!(by_config.width, 2);
        assert!(by_config.warning.unwrap().contains("aiwg.config"));
        assert!(resolve_parallelism(Some(0), None).is_err());
    }

    #[test]
    fn config_parses_and_rejects_nonsense() {
        let c = ProjectConfig::parse(
            r#"{"parallelism":{"max_parallel_subagents":3},"rlm":{"prices":{"m":{"input":1,"output":2}}}}"#,
        )
        .unwrap();
        assert_eq!(c.max_parallel_subagents, Some(3));
        assert_eq!(c.prices["m"].output, 2.0);
        assert!(ProjectConfig::parse("parallelism: 3").is_err());
        assert!(ProjectConfig::parse(r#"{"parallelism":{"max_parallel_subagents":0}}"#).is_err());
    }

    #[test]
    fn secret_debug_is_redacted() {
        assert_eq!(format!("{:?}", Secret("sk-123".into())), "Secret(***)");
    }
}
