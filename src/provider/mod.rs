//! Model providers: one shared HTTP client, two wire formats.
//!
//! [`Provider::complete`] makes exactly one HTTP call and classifies every failure as
//! retryable, final for this unit, or fatal for the run; retrying is the executor's job.

pub mod anthropic;
pub mod catalog;
pub mod openai;

use std::time::Duration;

use crate::settings::{BatchSettings, ProviderKind, Secret};

/// One model call.
#[derive(Debug, Clone)]
pub struct CompletionRequest<'a> {
    pub system: &'a str,
    pub user: &'a str,
    pub max_tokens: u32,
}

/// Token usage of one call. `input_tokens` counts every prompt token, cached or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// A model's answer.
#[derive(Debug, Clone)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    /// The provider's stop reason, as sent.
    pub stop_reason: Option<String>,
    /// The answer was cut off by the output-token limit.
    pub truncated: bool,
}

/// Why a call failed, and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// Worth another attempt: 429, 5xx, 529, timeouts, resets, malformed bodies.
    Retryable {
        reason: String,
        /// The server's `retry-after`, if it sent one.
        retry_after: Option<Duration>,
        /// A 429: the whole pool should slow down, not just this unit.
        rate_limited: bool,
    },
    /// Final for this unit only (e.g. the input is too long for the model).
    Unit(String),
    /// Final for the run: every other call would fail the same way (bad key, no quota).
    Fatal(String),
}

/// A configured provider endpoint with its shared connection pool.
#[derive(Debug, Clone)]
pub struct Provider {
    kind: ProviderKind,
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<Secret>,
    model: String,
    temperature: Option<f32>,
    timeout: Duration,
    /// Local OpenAI-compatible servers want `max_tokens`, api.openai.com
    /// `max_completion_tokens`.
    legacy_max_tokens: bool,
}

impl Provider {
    /// Builds the provider of a run; one `reqwest` client so connections are reused.
    pub fn new(settings: &BatchSettings) -> Result<Self, crate::error::RlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(32)
            .user_agent(concat!("rlm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| crate::error::RlmError::Usage(format!("cannot set up the HTTP client: {e}")))?;
        let base = settings.base_url.trim_end_matches('/');
        let versioned = versioned_base(base);
        let endpoint = match settings.provider {
            ProviderKind::Anthropic => format!("{versioned}/messages"),
            ProviderKind::Openai => format!("{versioned}/chat/completions"),
        };
        Ok(Provider {
            kind: settings.provider,
            http,
            legacy_max_tokens: !base.contains("api.openai.com"),
            endpoint,
            api_key: settings.api_key.clone(),
            model: settings.model.clone(),
            temperature: settings.temperature,
            timeout: settings.timeout,
        })
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// `text` with the API key replaced by `[REDACTED]`.
    fn redact(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.api_key.iter().filter_map(Secret::scrubbable).collect();
        crate::report::redact(text, &secrets)
    }

    /// Makes one call. Never retries; never panics on a strange reply.
    pub async fn complete(&self, request: &CompletionRequest<'_>) -> Result<Completion, CallError> {
        let (body, builder) = match self.kind {
            ProviderKind::Anthropic => {
                let body = anthropic::request_body(&self.model, request, self.temperature);
                let mut b = self
                    .http
                    .post(&self.endpoint)
                    .header("anthropic-version", anthropic::API_VERSION);
                if let Some(key) = &self.api_key {
                    b = b.header("x-api-key", key.expose());
                }
                (body, b)
            }
            ProviderKind::Openai => {
                let body = openai::request_body(&self.model, request, self.temperature, self.legacy_max_tokens);
                let mut b = self.http.post(&self.endpoint);
                if let Some(key) = &self.api_key {
                    b = b.bearer_auth(key.expose());
                }
                (body, b)
            }
        };
        let response = builder
            .header("content-type", "application/json")
            .timeout(self.timeout)
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| transport_error(&e, self.timeout))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = response.bytes().await.map_err(|e| transport_error(&e, self.timeout))?;
        if !(200..300).contains(&status) {
            // An error body can echo what we sent, the key included; scrubbed here, the
            // reason is safe everywhere it goes (stderr, progress lines, report, aggregate).
            let body = self.redact(&String::from_utf8_lossy(&bytes));
            return Err(classify_status(self.kind, status, &body, retry_after, &self.model));
        }
        let parsed = match self.kind {
            ProviderKind::Anthropic => anthropic::parse_reply(&bytes),
            ProviderKind::Openai => openai::parse_reply(&bytes),
        };
        let mut completion = parsed.map_err(|reason| CallError::Retryable {
            reason: format!("malformed reply: {reason}"),
            retry_after: None,
            rate_limited: false,
        })?;
        // A model that echoes the key (it was in an input file, say) must not put it in a
        // result file or the cache: scrubbed before anything sees the text.
        completion.text = self.redact(&completion.text);
        Ok(completion)
    }
}

/// `{base}/v1`, whether or not the user's base URL already ends in `/v1` (Ollama's does).
fn versioned_base(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

/// The model an OpenAI-compatible server serves, when it serves exactly one (llama.cpp,
/// a single-model vLLM): `GET {base}/v1/models`. Used when `--model` is not given for a
/// server other than api.openai.com; the error says what to pass instead.
pub fn discover_model(base_url: &str, api_key: Option<&Secret>) -> Result<String, String> {
    let url = format!("{}/models", versioned_base(base_url));
    let fetch = async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("rlm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        let mut request = http.get(&url);
        if let Some(key) = api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = request.send().await.map_err(|e| root_cause(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let bytes = response.bytes().await.map_err(|e| root_cause(&e))?;
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| format!("not JSON: {e}"))
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let listing = runtime.block_on(fetch).map_err(|e| {
        format!("no --model given, and {url} did not list the server's models ({e}): pass --model NAME")
    })?;
    let ids: Vec<&str> = listing["data"]
        .as_array()
        .map(|models| models.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    match ids.as_slice() {
        [only] => Ok(only.to_string()),
        [] => Err(format!(
            "no --model given, and {url} lists no models: pass --model NAME"
        )),
        many => Err(format!(
            "no --model given, and the server serves {} models ({}): pass --model NAME",
            many.len(),
            many.iter().take(8).copied().collect::<Vec<_>>().join(", ")
        )),
    }
}

fn transport_error(e: &reqwest::Error, timeout: Duration) -> CallError {
    let reason = if e.is_timeout() {
        format!("no reply within {}s (timeout)", timeout.as_secs_f64())
    } else if e.is_connect() {
        format!("cannot connect: {}", root_cause(e))
    } else {
        format!("connection failed: {}", root_cause(e))
    };
    CallError::Retryable {
        reason,
        retry_after: None,
        rate_limited: false,
    }
}

/// The innermost error message: reqwest's own is "error sending request for url (...)".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// `retry-after` is either seconds or an HTTP date; we honour the seconds form and treat a
/// date as "soon" (1 s), which is what servers send in practice.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    (!value.is_empty()).then_some(Duration::from_secs(1))
}

/// Turns an HTTP error status into what the executor should do.
fn classify_status(
    kind: ProviderKind,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    model: &str,
) -> CallError {
    let detail = match kind {
        ProviderKind::Anthropic => anthropic::error_detail(body),
        ProviderKind::Openai => openai::error_detail(body),
    };
    let message = detail.message.clone().unwrap_or_else(|| short(body));
    let retryable = |reason: String| CallError::Retryable {
        reason,
        retry_after,
        rate_limited: status == 429,
    };
    match status {
        429 if detail.quota_exhausted => Fatal(format!(
            "quota or spend limit reached (429): {message} — check the {} account's billing",
            kind.name()
        )),
        429 => retryable(format!("rate limited (429): {message}")),
        401 => Fatal(format!("authentication failed (401): check {}", kind.key_var())),
        403 => Fatal(format!(
            "permission denied (403): {message} — check that {} may use {model}",
            kind.key_var()
        )),
        404 => Fatal(format!(
            "not found (404): {message} — check --model ({model}) and --base-url"
        )),
        402 => Fatal(format!("payment required (402): {message}")),
        413 => CallError::Unit(format!("request too large (413): {message}")),
        400 if detail.context_exceeded => CallError::Unit(format!("input too long for {model} (400): {message}")),
        400 => Fatal(format!("request rejected (400): {message}")),
        408 | 409 | 425 | 500..=599 => retryable(format!("server error ({status}): {message}")),
        _ => Fatal(format!("unexpected status {status}: {message}")),
    }
}

use CallError::Fatal;

/// What the error bodies of both formats tell us.
#[derive(Debug, Default)]
pub struct ErrorDetail {
    pub message: Option<String>,
    pub quota_exhausted: bool,
    pub context_exceeded: bool,
}

impl ErrorDetail {
    fn from_message(message: Option<String>, quota_exhausted: bool) -> Self {
        let context_exceeded = message.as_deref().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("context") || m.contains("too long") || m.contains("maximum") && m.contains("token")
        });
        ErrorDetail {
            message,
            quota_exhausted,
            context_exceeded,
        }
    }
}

/// At most 200 characters of a body, on one line.
fn short(body: &str) -> String {
    let line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        "(empty body)".to_string()
    } else if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"),
            Some(Duration::from_secs(1))
        );
        assert_eq!(parse_retry_after(""), None);
    }

    #[test]
    fn statuses_are_classified() {
        let a = ProviderKind::Anthropic;
        let auth = classify_status(a, 401, "{}", None, "m");
        assert_eq!(
            auth,
            Fatal("authentication failed (401): check ANTHROPIC_API_KEY".into())
        );
        assert!(matches!(
            classify_status(a, 529, "{}", None, "m"),
            CallError::Retryable { .. }
        ));
        assert!(matches!(
            classify_status(a, 429, "{}", Some(Duration::from_secs(3)), "m"),
            CallError::Retryable {
                rate_limited: true,
                retry_after: Some(_),
                ..
            }
        ));
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(matches!(classify_status(a, 429, spend, None, "m"), Fatal(_)));
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(
            classify_status(ProviderKind::Openai, 429, quota, None, "m"),
            Fatal(_)
        ));
        let ctx = r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error"}}"#;
        assert!(matches!(
            classify_status(ProviderKind::Openai, 400, ctx, None, "m"),
            CallError::Unit(_)
        ));
        assert!(matches!(classify_status(a, 400, "{}", None, "m"), Fatal(_)));
    }
}
