//! Model discovery: with no `--model`, an OpenAI-compatible server other than
//! api.openai.com is asked which model it serves (`GET {base}/v1/models`).
//!
//! A busy local server (llama.cpp keeps working through requests abandoned by an earlier
//! Ctrl-C) can take long to answer: discovery waits up to [`PATIENCE`] and says what it
//! is waiting for after a few seconds, instead of failing or hanging silently.

use std::time::Duration;

use super::http::{client, read_capped, root_cause, versioned_base, BodyError, CONTROL_BODY_CAP};
use crate::secret::{redact_url, ApiKey};

/// How long discovery waits for a listing.
pub const PATIENCE: Duration = Duration::from_secs(120);
/// When the "still waiting" notice is given.
const NOTICE_AFTER: Duration = Duration::from_secs(3);

/// Why no model was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// The server refused the key (401, 403): every call would fail the same way (exit 3).
    #[error("{0}")]
    Refused(String),
    /// The server could not be reached, did not answer, or answered nonsense (exit 3).
    #[error("{0}")]
    Unreachable(String),
    /// The server lists no model or several: `--model` must say which (exit 2).
    #[error("{0}")]
    NotOne(String),
}

impl DiscoveryError {
    /// The exit status this error ends a command with.
    pub fn exit_status(&self) -> crate::error::ExitStatus {
        match self {
            DiscoveryError::Refused(_) | DiscoveryError::Unreachable(_) => crate::error::ExitStatus::Failed,
            DiscoveryError::NotOne(_) => crate::error::ExitStatus::Usage,
        }
    }
}

impl From<DiscoveryError> for crate::error::RlmError {
    fn from(e: DiscoveryError) -> Self {
        match e {
            e @ (DiscoveryError::Refused(_) | DiscoveryError::Unreachable(_)) => {
                crate::error::ProviderFailure::Discovery(e).into()
            }
            e @ DiscoveryError::NotOne(_) => crate::error::ConfigFailure::ModelNotChosen(e).into(),
        }
    }
}

/// The one model the server lists, or an error that says what to pass instead.
pub async fn discover_model(
    base_url: &str,
    api_key: Option<&ApiKey>,
    notice: &dyn Fn(&str),
) -> Result<String, DiscoveryError> {
    let url = format!("{}/models", versioned_base(base_url));
    let shown = redact_url(&url).into_owned();
    let fetch = async {
        let http = client(base_url).map_err(|e| (false, e))?;
        let mut request = http.get(&url).timeout(PATIENCE);
        if let Some(key) = api_key {
            request = request.bearer_auth(key.expose());
        }
        let mut response = request.send().await.map_err(|e| (false, describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let refused = matches!(status.as_u16(), 401 | 403);
            return Err((refused, format!("HTTP {}", status.as_u16())));
        }
        let bytes = read_capped(&mut response, CONTROL_BODY_CAP)
            .await
            .map_err(|e| match e {
                BodyError::Transport(e) => (false, describe(&e)),
                BodyError::TooLarge(cap) => (false, format!("the listing is over {} MB", cap / (1024 * 1024))),
            })?;
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| (false, format!("not JSON: {e}")))
    };
    tokio::pin!(fetch);
    let listing = tokio::select! {
        result = &mut fetch => result,
        () = tokio::time::sleep(NOTICE_AFTER) => {
            notice(&format!(
                "no --model given: waiting for {shown} to list its models (a busy server can take a while; \
                 up to {}s, or pass --model NAME)",
                PATIENCE.as_secs()
            ));
            fetch.await
        }
    }
    .map_err(|(refused, e)| {
        if refused {
            DiscoveryError::Refused(format!(
                "{shown} refused the key ({e}) when asked for its models: check OPENAI_API_KEY (or pass --model NAME)"
            ))
        } else {
            DiscoveryError::Unreachable(format!(
                "no --model given, and {shown} did not list the server's models ({e}): is it running? pass --model NAME"
            ))
        }
    })?;
    let ids: Vec<&str> = listing["data"]
        .as_array()
        .map(|models| models.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    match ids.as_slice() {
        [only] => Ok(only.to_string()),
        [] => Err(DiscoveryError::NotOne(format!(
            "no --model given, and {shown} lists no models: pass --model NAME"
        ))),
        many => Err(DiscoveryError::NotOne(format!(
            "no --model given, and the server serves {} models ({}): pass --model NAME",
            many.len(),
            many.iter().take(8).copied().collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {}s", PATIENCE.as_secs())
    } else {
        root_cause(e)
    }
}
