//! A job's settings: its call flags (remembered in `job.json`, so `resume` and `rerun`
//! need none of them again) and this invocation's flags, resolved the way `rlm batch`
//! resolves its own — the same provider, budget, execution and output settings, built by
//! the same constructors. The key is never remembered: it comes from the environment.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::definition::PhaseDefinition;
use crate::cache::CacheMode;
use crate::error::{RlmError, StoreRefusal};
use crate::printer::{ColorChoice, PrinterMode};
use crate::provider::bundled_model::BundledModel;
use crate::provider::catalog::{self, PriceTable};
use crate::provider::ProviderKind;
use crate::secret::{redact_url, Redactor};
use crate::settings::{
    backoff_base, provider_settings, resolve_parallelism, BudgetSettings, Environment, ExecSettings, OutputSettings,
    ProjectConfig, ProviderFlags, ProviderSettings,
};

/// Output tokens per call when nothing says: a batch of 50 classifications needs room.
pub const DEFAULT_MAX_TOKENS: u32 = 16_000;
/// Seconds per call when nothing says.
pub const DEFAULT_TIMEOUT: f64 = 120.0;
/// Seconds a call may wait out rate limits when nothing says.
pub const DEFAULT_RATE_LIMIT_WAIT: f64 = 600.0;
/// Fault retries per call (server errors, timeouts); invalid answers have their own budget.
const CALL_RETRIES: u32 = 3;

/// The call flags given on this command line (`--model`, `--provider`, `-j`, …): each one
/// given replaces the one the job remembers.
#[derive(Debug, Clone, Default)]
pub struct CallFlags {
    pub model: Option<String>,
    pub provider: Option<ProviderKind>,
    pub command: Option<String>,
    pub base_url: Option<String>,
    pub max_parallel: Option<usize>,
    pub max_cost: Option<f64>,
    /// Seconds per call.
    pub timeout: Option<f64>,
    /// Seconds a call may wait out rate limits.
    pub rate_limit_wait: Option<f64>,
    pub max_tokens: Option<u32>,
    pub context_window: Option<u64>,
    pub temperature: Option<f32>,
    /// `--batch-api` (on) or `--batch-api off`.
    pub batch_api: Option<bool>,
}

/// The flags that hold for this invocation only.
#[derive(Debug, Clone, Default)]
pub struct RunFlags {
    pub yes: bool,
    pub force: bool,
    pub dry_run: bool,
    pub no_cache: bool,
    pub json: bool,
    pub quiet: bool,
    /// `--deadline`, in seconds.
    pub deadline: Option<f64>,
    /// `--pause-after`: the phase's number or name.
    pub pause_after: Option<String>,
}

/// The call flags a job remembers (`job.json` → `settings`): never a key, never a URL's
/// credentials.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RememberedSettings {
    pub provider: Option<String>,
    pub command: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The base URL held credentials, so it was not remembered: give it again.
    #[serde(default)]
    pub base_url_withheld: bool,
    pub max_parallel: Option<usize>,
    pub max_cost: Option<f64>,
    pub timeout: Option<f64>,
    pub rate_limit_wait: Option<f64>,
    pub max_tokens: Option<u32>,
    pub context_window: Option<u64>,
    pub temperature: Option<f32>,
    /// `--batch-api`: map phases through the provider's batch API (`--batch-api off`
    /// turns it off). `--no-cache` is not remembered: it holds for one invocation.
    #[serde(default)]
    pub batch_api: bool,
}

impl RememberedSettings {
    /// The flags given now replace the remembered ones.
    pub fn overlay(&mut self, given: &CallFlags) {
        let CallFlags {
            model,
            provider,
            command,
            base_url,
            max_parallel,
            max_cost,
            timeout,
            rate_limit_wait,
            max_tokens,
            context_window,
            temperature,
            batch_api,
        } = given;
        if let Some(p) = provider {
            self.provider = Some(p.name().to_string());
        }
        if command.is_some() {
            self.command = command.clone();
        }
        if model.is_some() {
            self.model = model.clone();
        }
        if let Some(url) = base_url {
            self.base_url = Some(url.clone());
            self.base_url_withheld = false;
        }
        self.max_parallel = max_parallel.or(self.max_parallel);
        self.max_cost = max_cost.or(self.max_cost);
        self.timeout = timeout.or(self.timeout);
        self.rate_limit_wait = rate_limit_wait.or(self.rate_limit_wait);
        self.max_tokens = max_tokens.or(self.max_tokens);
        self.context_window = context_window.or(self.context_window);
        self.temperature = temperature.or(self.temperature);
        if let Some(on) = batch_api {
            self.batch_api = *on;
        }
    }

    /// What goes into `job.json`: a base URL with credentials is left out.
    pub fn to_store(&self) -> RememberedSettings {
        let mut kept = self.clone();
        if let Some(url) = &self.base_url {
            if redact_url(url) != url.as_str() {
                kept.base_url = None;
                kept.base_url_withheld = true;
            }
        }
        kept
    }

    fn provider_kind(&self) -> Result<Option<ProviderKind>, RlmError> {
        Ok(match self.provider.as_deref() {
            None => None,
            Some("anthropic") => Some(ProviderKind::Anthropic),
            Some("openai") => Some(ProviderKind::Openai),
            Some("command") => Some(ProviderKind::Command),
            Some(other) => {
                return Err(StoreRefusal::UnknownProvider {
                    provider: other.to_string(),
                }
                .into())
            }
        })
    }
}

/// Everything one invocation of a job needs, decided before it starts.
#[derive(Debug, Clone)]
pub struct JobSettings {
    pub cwd: PathBuf,
    /// The command line as given (recorded in the task store).
    pub argv: Vec<String>,
    pub remembered: RememberedSettings,
    pub provider: ProviderSettings,
    pub budget: BudgetSettings,
    pub exec: ExecSettings,
    pub output: OutputSettings,
    /// `--pause-after`.
    pub pause_after: Option<String>,
    pub dry_run: bool,
    /// `.aiwg/aiwg.config`'s cap on calls in flight.
    pub config_parallel: Option<usize>,
    pub parent_run: Option<String>,
    env: Environment,
}

impl JobSettings {
    /// Resolves the remembered flags (with the ones given now laid over them) and this
    /// invocation's flags.
    pub fn resolve(
        remembered: RememberedSettings,
        flags: RunFlags,
        color: ColorChoice,
        env: &Environment,
    ) -> Result<Self, RlmError> {
        if remembered.base_url_withheld && remembered.base_url.is_none() {
            return Err(RlmError::Usage(
                "this job was started with a --base-url that holds credentials, which a job does not store: \
                 pass --base-url again"
                    .into(),
            ));
        }
        let RunFlags {
            yes,
            force,
            dry_run,
            no_cache,
            json,
            quiet,
            deadline,
            pause_after,
        } = flags;
        let config = ProjectConfig::load(&env.cwd)?;
        let provider = provider_settings(
            ProviderFlags {
                provider: remembered.provider_kind()?,
                command: remembered.command.clone(),
                base_url: remembered.base_url.clone(),
                model: remembered.model.clone(),
                context_window: remembered.context_window,
                temperature: remembered.temperature,
                timeout: remembered.timeout.unwrap_or(DEFAULT_TIMEOUT),
                connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT.as_secs_f64(),
                // The bundled local model's own budget: its window is smaller than the default.
                max_tokens: remembered
                    .max_tokens
                    .or_else(|| {
                        remembered
                            .model
                            .as_deref()
                            .and_then(BundledModel::recognize)
                            .map(|m| m.max_tokens)
                    })
                    .unwrap_or(DEFAULT_MAX_TOKENS),
                max_depth: 3,
                agent_env: Vec::new(),
            },
            env,
        )?;
        let config_parallel = config.max_parallel();
        // Map phases through the batch API (the other phases' few calls are realtime).
        if remembered.batch_api && provider.kind == crate::provider::ProviderKind::Command {
            return Err(RlmError::Usage(
                "--batch-api: the command provider has no batch API; drop --batch-api or use an HTTP provider".into(),
            ));
        }
        let batch_api = crate::settings::BatchApiSettings::resolve(
            remembered.batch_api.then_some(crate::settings::BatchApiMode::On),
            None,
            crate::settings::BatchFallback::Batch,
            provider.kind,
            env,
        )?;
        Ok(JobSettings {
            cwd: env.cwd.clone(),
            argv: env.argv.clone(),
            provider,
            budget: BudgetSettings {
                max_cost: remembered.max_cost,
                force,
                yes,
                prices: PriceTable::new(config.rlm.prices.clone()),
            },
            exec: ExecSettings {
                parallelism: resolve_parallelism(remembered.max_parallel, config_parallel),
                retries: CALL_RETRIES,
                backoff_base: backoff_base(env)?,
                rate_limit_wait: Duration::from_secs_f64(remembered.rate_limit_wait.unwrap_or(DEFAULT_RATE_LIMIT_WAIT)),
                cache_mode: if no_cache {
                    CacheMode::WriteOnly
                } else {
                    CacheMode::ReadWrite
                },
                deadline: deadline.map(Duration::from_secs_f64),
                prompt_cache: config.rlm.prompt_cache != Some(false),
                trajectory: None,
                batch_api,
            },
            output: OutputSettings {
                output_dir: None,
                dry_run,
                json,
                quiet,
                color,
                no_color: env.var("NO_COLOR").is_some(),
                stderr_is_terminal: env.stderr_is_terminal,
                stdin_is_terminal: env.stdin_is_terminal,
                answer_on_stdout: false,
                github_actions: false,
                step_summary: None,
            },
            remembered,
            pause_after,
            dry_run,
            config_parallel,
            parent_run: env.var("RLM_PARENT_RUN").map(str::to_string),
            env: env.clone(),
        })
    }

    /// The environment this invocation runs in (`PATH`, keys: never written anywhere).
    pub fn environment(&self) -> &Environment {
        &self.env
    }

    pub fn printer_mode(&self) -> PrinterMode {
        self.output.printer_mode()
    }

    /// The redactor for everything the job writes and prints.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.provider.api_key.iter())
    }

    /// The `.aiwg/rlm` directory of this project.
    pub fn rlm_dir(&self) -> PathBuf {
        self.cwd.join(".aiwg").join("rlm")
    }

    /// The provider settings of one phase: its `provider` (resolved from the environment,
    /// the job's --base-url only when it is the job's provider), `model`, `timeout` and
    /// `max_tokens` laid over the job's.
    pub fn phase_provider(&self, phase: &PhaseDefinition) -> Result<ProviderSettings, RlmError> {
        let mut p = match phase.provider.as_deref() {
            Some(name) if name != self.provider.kind.name() => {
                let kind = if name == "openai" {
                    ProviderKind::Openai
                } else {
                    ProviderKind::Anthropic
                };
                provider_settings(
                    ProviderFlags {
                        provider: Some(kind),
                        command: None,
                        base_url: None,
                        model: phase.model.clone(),
                        context_window: self.provider.context_window,
                        temperature: self.provider.temperature,
                        timeout: self.provider.timeout.as_secs_f64(),
                        connect_timeout: self.provider.connect_timeout.as_secs_f64(),
                        max_tokens: self.provider.max_tokens,
                        max_depth: 3,
                        agent_env: Vec::new(),
                    },
                    &self.env,
                )
                .map_err(|e| e.in_context(&format!("phase {}", phase.name)))?
            }
            _ => self.provider.clone(),
        };
        if let (Some(model), true) = (&phase.model, p.command.is_none()) {
            p.model = Some(if p.kind == ProviderKind::Anthropic {
                catalog::resolve_alias(model)
            } else {
                model.clone()
            });
        }
        if let Some(t) = phase.timeout {
            p.timeout = Duration::from_secs_f64(t);
        }
        if let Some(m) = phase.max_tokens {
            p.max_tokens = m;
        }
        Ok(p)
    }

    /// The width of a phase's pool: its `concurrency` under the same caps as `-j` (and
    /// never above a `-j` the user gave).
    pub fn phase_width(&self, phase: &PhaseDefinition) -> (usize, Option<String>) {
        let Some(n) = phase.concurrency else {
            return (self.exec.parallelism.width, None);
        };
        let p = resolve_parallelism(Some(n), self.config_parallel);
        let width = match self.remembered.max_parallel {
            Some(_) => p.width.min(self.exec.parallelism.width),
            None => p.width,
        };
        let warning = p
            .warning
            .map(|w| format!("phase {}: {}", phase.name, w.replace("--max-parallel", "concurrency")));
        (width.max(1), warning)
    }
}
