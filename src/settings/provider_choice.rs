//! Who answers: the provider, endpoint, key and model from the flags and the environment,
//! and the command provider with the recursion depth it passes on.

use std::time::Duration;

use super::{Environment, ProviderSettings};
use crate::cli::ProviderArg;
use crate::error::RlmError;
use crate::provider::catalog;
use crate::provider::ProviderKind;
use crate::secret::{redact_url, ApiKey};

/// Provider, endpoint, key and model from flags and environment.
pub(super) fn resolve_provider(
    flag: Option<ProviderArg>,
    base_url: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    temperature: Option<f32>,
    env: &Environment,
) -> Result<ProviderSettings, RlmError> {
    let mut blocker = None;
    let kind = match flag {
        Some(ProviderArg::Anthropic) => ProviderKind::Anthropic,
        Some(ProviderArg::Openai) => ProviderKind::Openai,
        // Handled before (it needs --command); unreachable here.
        Some(ProviderArg::Command) => ProviderKind::Command,
        None => detect_provider(env, base_url.is_some()).unwrap_or_else(|e| {
            blocker = Some(e);
            ProviderKind::Anthropic
        }),
    };
    let base_url = base_url
        .or_else(|| env.var(kind.base_url_var()).map(str::to_string))
        .unwrap_or_else(|| kind.official_base_url().to_string());
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
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
        command: None,
        depth: 0,
        blocker,
    })
}

/// `RLM_DEPTH`: 0 unless a parent rlm set it.
pub(super) fn current_depth(env: &Environment) -> Result<u32, RlmError> {
    match env.var("RLM_DEPTH") {
        None => Ok(0),
        Some(v) => v.trim().parse::<u32>().map_err(|_| {
            RlmError::Usage(format!(
                "RLM_DEPTH='{v}' is not a whole number: unset it, or set it to 0"
            ))
        }),
    }
}

/// `--provider command --command CMD`.
pub(super) fn command_provider(
    command: &str,
    context_window: Option<u64>,
    depth: u32,
) -> Result<ProviderSettings, RlmError> {
    let argv = crate::process::split_command(command).map_err(|e| RlmError::Usage(format!("--command: {e}")))?;
    if argv.is_empty() {
        return Err(RlmError::Usage(
            "--command is empty: give the program to run, e.g. --command 'claude -p'".into(),
        ));
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
        command: Some(argv),
        depth,
        blocker: None,
    })
}

/// The provider when `--provider` is not given: a key decides, then a base URL (a URL with
/// no key means an OpenAI-compatible server).
pub(super) fn detect_provider(env: &Environment, base_url_flag: bool) -> Result<ProviderKind, String> {
    if env.var("ANTHROPIC_API_KEY").is_some() {
        Ok(ProviderKind::Anthropic)
    } else if env.var("OPENAI_API_KEY").is_some() || env.var("OPENAI_BASE_URL").is_some() || base_url_flag {
        Ok(ProviderKind::Openai)
    } else if env.var("ANTHROPIC_BASE_URL").is_some() {
        Ok(ProviderKind::Anthropic)
    } else {
        Err(
            "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or point rlm at a local \
             OpenAI-compatible server with --base-url http://127.0.0.1:PORT (Ollama, vLLM, llama.cpp, LM Studio)"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_base_url_without_a_key_means_openai_compatible() {
        let env = Environment::with_vars(&[], PathBuf::from("/"));
        assert_eq!(detect_provider(&env, true), Ok(ProviderKind::Openai));
        assert!(detect_provider(&env, false).is_err());
        let env = Environment::with_vars(&[("ANTHROPIC_API_KEY", "k")], PathBuf::from("/"));
        assert_eq!(detect_provider(&env, true), Ok(ProviderKind::Anthropic));
    }
}
