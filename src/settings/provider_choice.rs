//! Who answers: the provider, endpoint, key and model from the flags and the environment,
//! and the command provider with the recursion depth it passes on.

use std::time::Duration;

use super::{Environment, ProviderSettings};
use crate::error::{EnvBlame, EnvFailure, FlagError, RlmError};
use crate::plan::WHAT_TO_DO_KNOWN;
use crate::provider::catalog;
use crate::provider::ProviderKind;
use crate::secret::{redact_url, ApiKey};

/// The flags that choose who answers, shared by `rlm batch` and `rlm job`.
#[derive(Debug, Clone, Default)]
pub struct ProviderFlags {
    pub provider: Option<ProviderKind>,
    pub command: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub temperature: Option<f32>,
    /// Seconds per call.
    pub timeout: f64,
    /// Seconds to connect (`--connect-timeout`).
    pub connect_timeout: f64,
    pub max_tokens: u32,
    /// `--max-depth`: refuse to start this deep in nested runs.
    pub max_depth: u32,
    /// `--agent-env NAME`: variables rlm withholds from a command agent, passed anyway.
    pub agent_env: Vec<String>,
}

/// The provider settings from its flags and the environment: the recursion depth checked,
/// `--command` or an HTTP provider, and `--max-tokens` checked against the model's window.
pub fn provider_settings(flags: ProviderFlags, env: &Environment) -> Result<ProviderSettings, RlmError> {
    let ProviderFlags {
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
    } = flags;
    let depth = current_depth(env)?;
    if depth >= max_depth {
        return Err(RlmError::Usage(format!(
            "RLM_DEPTH is {depth}: this rlm was started by rlm runs nested {depth} deep, at --max-depth \
             {max_depth}; refusing to go deeper (raise --max-depth if the recursion is meant)"
        )));
    }
    let provider = match (provider, command) {
        (Some(ProviderKind::Command) | None, Some(command)) => {
            if base_url.is_some() {
                return Err(RlmError::Usage(
                    "--base-url is for HTTP providers; --command runs a program instead: drop one".into(),
                ));
            }
            command_provider(&command, &agent_env, context_window, depth, env)?
        }
        (Some(ProviderKind::Command), None) => {
            return Err(RlmError::Usage(
                "--provider command needs the program: add --command 'claude -p' (or any CLI that reads the \
                 prompt on stdin)"
                    .into(),
            ))
        }
        (Some(_), Some(_)) => {
            return Err(RlmError::Usage(
                "--command runs a command-line agent, so --provider must be command (or left out)".into(),
            ))
        }
        (flag, None) => resolve_provider(flag, base_url, model, context_window, temperature, env)?,
    };
    // The window the flag gives, or the catalog's for the model named; one the server's
    // model has is checked once it is known (crate::plan::check_room).
    let window = match (provider.context_window, provider.model.as_deref()) {
        (Some(w), _) => Some((format!("the context window (--context-window {w})"), w)),
        (None, Some(model)) => {
            catalog::context_window(model).map(|w| (format!("the {w}-token context window of {model}"), w))
        }
        (None, None) => None,
    };
    if let Some((window, tokens)) = window {
        if u64::from(max_tokens) >= tokens {
            return Err(RlmError::Usage(crate::plan::answer_fills_window(
                max_tokens,
                &window,
                WHAT_TO_DO_KNOWN,
            )));
        }
    }
    Ok(ProviderSettings {
        timeout: Duration::from_secs_f64(timeout),
        connect_timeout: Duration::from_secs_f64(connect_timeout),
        max_tokens,
        max_tokens_given: true,
        depth,
        ..provider
    })
}

/// Provider, endpoint, key and model from flags and environment.
pub(super) fn resolve_provider(
    flag: Option<ProviderKind>,
    base_url: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    temperature: Option<f32>,
    env: &Environment,
) -> Result<ProviderSettings, RlmError> {
    let mut blocker = None;
    let kind = match flag {
        // A command provider was handled before (it needs --command); never here.
        Some(kind) => kind,
        None => detect_provider(env, base_url.is_some()).unwrap_or_else(|| {
            blocker = Some(NO_PROVIDER.to_string());
            ProviderKind::Anthropic
        }),
    };
    // Where the base URL came from, so a bad one is named as what the user set.
    let from_var = base_url.is_none() && env.var(kind.base_url_var()).is_some();
    let base_url = base_url
        .or_else(|| env.var(kind.base_url_var()).map(str::to_string))
        .unwrap_or_else(|| kind.official_base_url().to_string());
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        if from_var {
            return Err(EnvFailure::bad_url(
                kind.base_url_var(),
                &base_url,
                "an http(s) URL: set it to e.g. http://127.0.0.1:8080, or unset it",
                EnvBlame::Usage,
            )
            .into());
        }
        return Err(RlmError::Usage(format!(
            "--base-url '{}' is not an http(s) URL: pass e.g. http://127.0.0.1:8080",
            redact_url(&base_url)
        )));
    }
    let api_key = env.var(kind.key_var()).map(ApiKey::new);
    let official = base_url == kind.official_base_url();
    if api_key.is_none() && official && blocker.is_none() {
        blocker = Some(format!(
            "{} is not set: export it, or point rlm at a local OpenAI-compatible server with \
             --base-url http://127.0.0.1:PORT (Ollama, vLLM, llama.cpp, LM Studio)",
            kind.key_var()
        ));
    }
    let model = match model.map(|m| m.trim().to_string()) {
        Some(m) if m.is_empty() => {
            return Err(RlmError::Usage(
                "--model is empty: pass haiku, sonnet, opus or a model id".into(),
            ))
        }
        Some(m) if kind == ProviderKind::Anthropic => Some(catalog::resolve_alias(&m)),
        Some(m) => Some(m),
        None if kind == ProviderKind::Anthropic => Some(catalog::resolve_alias("sonnet")),
        None if official => Some("gpt-4.1-mini".to_string()),
        None => None,
    };
    Ok(ProviderSettings {
        kind,
        base_url,
        official,
        api_key,
        model,
        context_window,
        temperature,
        timeout: Duration::from_secs(120),
        connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT,
        max_tokens: 4096,
        max_tokens_given: false,
        command: None,
        agent_env: Vec::new(),
        depth: 0,
        blocker,
    })
}

/// `RLM_DEPTH`: 0 unless a parent rlm set it.
pub(super) fn current_depth(env: &Environment) -> Result<u32, RlmError> {
    match env.var("RLM_DEPTH") {
        None => Ok(0),
        Some(v) => v.trim().parse::<u32>().map_err(|_| {
            EnvFailure::bad_value(
                "RLM_DEPTH",
                v,
                "a whole number: unset it, or set it to 0",
                EnvBlame::Config,
            )
            .into()
        }),
    }
}

/// `--provider command --command CMD`.
pub(super) fn command_provider(
    command: &str,
    agent_env: &[String],
    context_window: Option<u64>,
    depth: u32,
    env: &Environment,
) -> Result<ProviderSettings, RlmError> {
    if let Some(name) = agent_env
        .iter()
        .find(|n| !crate::provider::command::WITHHELD.contains(&n.as_str()))
    {
        return Err(RlmError::Usage(format!(
            "--agent-env {name}: the agent gets {name} anyway; --agent-env names one of the variables rlm \
             withholds ({})",
            crate::provider::command::WITHHELD.join(", ")
        )));
    }
    let argv = crate::process::split_command(command).map_err(FlagError::invalid("--command"))?;
    if argv.is_empty() {
        return Err(RlmError::Usage(
            "--command is empty: give the program to run, e.g. --command 'claude -p'".into(),
        ));
    }
    // A program that cannot be started is a setup mistake said now, not a failure of every
    // unit that would run it.
    match crate::process::find_program(&argv[0], &env.cwd, env.var("PATH")) {
        Ok(_) => {}
        Err(crate::process::ProgramProblem::NotFound) => {
            return Err(RlmError::Config(format!(
                "--command: the program {} is not found (on PATH, or at that path): install it or fix --command \
                 (nothing was sent)",
                argv[0]
            )))
        }
        Err(crate::process::ProgramProblem::NotExecutable(path)) => {
            return Err(RlmError::Config(format!(
                "--command: {} is not executable: chmod +x it or fix --command (nothing was sent)",
                path.display()
            )))
        }
    }
    Ok(ProviderSettings {
        kind: ProviderKind::Command,
        base_url: String::new(),
        official: false,
        api_key: None,
        model: Some(crate::provider::command::label(&argv)),
        context_window,
        temperature: None,
        timeout: Duration::from_secs(120),
        connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT,
        max_tokens: 4096,
        max_tokens_given: false,
        command: Some(argv),
        agent_env: agent_env.to_vec(),
        depth,
        blocker: None,
    })
}

/// Why no provider could be chosen: what [`detect_provider`] finding none means.
const NO_PROVIDER: &str = "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or point rlm at a \
                           local OpenAI-compatible server with --base-url http://127.0.0.1:PORT (Ollama, vLLM, \
                           llama.cpp, LM Studio)";

/// The provider when `--provider` is not given: a key decides, then a base URL (a URL with
/// no key means an OpenAI-compatible server); `None` when nothing names one.
pub(super) fn detect_provider(env: &Environment, base_url_flag: bool) -> Option<ProviderKind> {
    if env.var("ANTHROPIC_API_KEY").is_some() {
        Some(ProviderKind::Anthropic)
    } else if env.var("OPENAI_API_KEY").is_some() || env.var("OPENAI_BASE_URL").is_some() || base_url_flag {
        Some(ProviderKind::Openai)
    } else if env.var("ANTHROPIC_BASE_URL").is_some() {
        Some(ProviderKind::Anthropic)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_base_url_without_a_key_means_openai_compatible() {
        let env = Environment::with_vars(&[], PathBuf::from("/"));
        assert_eq!(detect_provider(&env, true), Some(ProviderKind::Openai));
        assert_eq!(detect_provider(&env, false), None);
        let env = Environment::with_vars(&[("ANTHROPIC_API_KEY", "k")], PathBuf::from("/"));
        assert_eq!(detect_provider(&env, true), Some(ProviderKind::Anthropic));
    }
}
