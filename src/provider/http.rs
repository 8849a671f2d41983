//! The HTTP providers: Anthropic Messages and OpenAI-compatible Chat Completions over one
//! shared `reqwest` client (connections are reused across calls).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::openai::{Dialect, SchemaFormat};
use super::status::{classify_status, parse_retry_after};
use super::{
    anthropic, openai, BoxFuture, CallError, Completion, CompletionRequest, ErrorKind, Provider, ProviderKind,
};
use crate::secret::{ApiKey, Redactor};

/// What an HTTP provider needs to know.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub kind: ProviderKind,
    /// Without a trailing slash; with or without `/v1`.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    pub model: String,
    pub temperature: Option<f32>,
    pub timeout: Duration,
}

/// How an endpoint renders a [`CompletionRequest`] as a request body: the one rendering
/// that realtime calls and batch-API requests share, so a unit sent either way is the same
/// bytes (and the same prompt-cache prefix).
#[derive(Debug, Clone)]
pub struct Wire {
    pub kind: ProviderKind,
    pub model: String,
    pub temperature: Option<f32>,
    /// What an OpenAI-compatible server takes (`max_tokens` or `max_completion_tokens`,
    /// `prompt_cache_key`); unused for Anthropic.
    pub dialect: Dialect,
}

impl Wire {
    pub fn new(config: &HttpConfig) -> Self {
        Wire {
            kind: config.kind,
            model: config.model.clone(),
            temperature: config.temperature,
            dialect: Dialect::of(&config.base_url),
        }
    }

    /// The body of `request` (with this schema format on an OpenAI-compatible server).
    pub fn body(&self, request: &CompletionRequest, schema_format: SchemaFormat) -> serde_json::Value {
        match self.kind {
            ProviderKind::Anthropic => anthropic::request_body(&self.model, request, self.temperature),
            ProviderKind::Openai | ProviderKind::Command => {
                let dialect = Dialect {
                    schema_format,
                    ..self.dialect
                };
                openai::request_body(&self.model, request, self.temperature, dialect)
            }
        }
    }
}

/// A configured HTTP endpoint with its connection pool.
#[derive(Debug)]
pub struct HttpProvider {
    kind: ProviderKind,
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<ApiKey>,
    model: String,
    wire: Wire,
    timeout: Duration,
    /// The server refused the `json_schema` response format once: `--schema` is asked for
    /// as `json_object` with the schema beside it from then on.
    schema_as_json_object: AtomicBool,
    redactor: Redactor,
}

impl HttpProvider {
    pub fn new(config: HttpConfig) -> Result<Self, String> {
        if config.kind == ProviderKind::Command {
            return Err("internal error: a command provider is not an HTTP provider".into());
        }
        let http = client()?;
        let versioned = versioned_base(&config.base_url);
        let endpoint = match config.kind {
            ProviderKind::Anthropic => format!("{versioned}/messages"),
            ProviderKind::Openai | ProviderKind::Command => format!("{versioned}/chat/completions"),
        };
        Ok(HttpProvider {
            kind: config.kind,
            http,
            wire: Wire::new(&config),
            schema_as_json_object: AtomicBool::new(false),
            endpoint,
            redactor: Redactor::new(config.api_key.iter()),
            api_key: config.api_key,
            model: config.model,
            timeout: config.timeout,
        })
    }

    async fn call(&self, request: &CompletionRequest) -> Result<Completion, CallError> {
        if request.schema.is_none() || self.kind != ProviderKind::Openai {
            return self.send(request, SchemaFormat::JsonSchema).await.map_err(|(e, _)| e);
        }
        let format = if self.schema_as_json_object.load(Ordering::Relaxed) {
            SchemaFormat::JsonObject
        } else {
            SchemaFormat::JsonSchema
        };
        match self.send(request, format).await {
            Err((_, Some((status, body))))
                if format == SchemaFormat::JsonSchema && openai::rejects_json_schema(status, &body) =>
            {
                // Some servers (llama-cpp-python) take a schema only beside `json_object`.
                tracing::debug!(
                    status,
                    "the server refused response_format json_schema: retrying with json_object"
                );
                self.schema_as_json_object.store(true, Ordering::Relaxed);
                self.send(request, SchemaFormat::JsonObject).await.map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// One HTTP exchange. A refusal also returns its status and (scrubbed) body.
    async fn send(
        &self,
        request: &CompletionRequest,
        schema_format: SchemaFormat,
    ) -> Result<Completion, (CallError, Option<(u16, String)>)> {
        let body = self.wire.body(request, schema_format);
        let builder = authorized(self.kind, self.http.post(&self.endpoint), self.api_key.as_ref());
        tracing::debug!(endpoint = %self.endpoint, model = %self.model, "sending request");
        let response = builder
            .header("content-type", "application/json")
            .timeout(self.timeout)
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| (transport_error(&e, self.timeout), None))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = response
            .bytes()
            .await
            .map_err(|e| (transport_error(&e, self.timeout), None))?;
        tracing::debug!(status, bytes = bytes.len(), "reply");
        if !(200..300).contains(&status) {
            // An error body can echo what we sent, the key included; scrubbed here, the
            // reason is safe everywhere it goes.
            let body = self.redactor.scrub(&String::from_utf8_lossy(&bytes)).into_owned();
            let error = classify_status(self.kind, status, &body, retry_after, &self.model);
            return Err((error, Some((status, body))));
        }
        let parsed = match self.kind {
            ProviderKind::Anthropic => anthropic::parse_reply(&bytes, request),
            ProviderKind::Openai | ProviderKind::Command => openai::parse_reply(&bytes),
        };
        let mut completion = parsed.map_err(|reason| {
            (
                CallError::new(ErrorKind::Transient, format!("malformed reply: {reason}")),
                None,
            )
        })?;
        // A model that echoes the key (it was in an input file, say) must not put it in a
        // result file or the cache.
        if let std::borrow::Cow::Owned(clean) = self.redactor.scrub(&completion.text) {
            completion.text = clean;
        }
        Ok(completion)
    }
}

impl Provider for HttpProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a CompletionRequest) -> BoxFuture<'a, Result<Completion, CallError>> {
        Box::pin(self.call(request))
    }
}

/// `builder` with the provider's authentication (and Anthropic's pinned version) headers.
pub(crate) fn authorized(
    kind: ProviderKind,
    builder: reqwest::RequestBuilder,
    api_key: Option<&ApiKey>,
) -> reqwest::RequestBuilder {
    match kind {
        ProviderKind::Anthropic => {
            let b = builder.header("anthropic-version", anthropic::API_VERSION);
            match api_key {
                Some(key) => b.header("x-api-key", key.expose()),
                None => b,
            }
        }
        ProviderKind::Openai | ProviderKind::Command => match api_key {
            Some(key) => builder.bearer_auth(key.expose()),
            None => builder,
        },
    }
}

/// The process's HTTP client settings: rustls with the ring provider and the platform's
/// certificate store (so corporate CAs work), HTTP/2 when the server offers it.
pub fn client() -> Result<reqwest::Client, String> {
    // Installing twice is harmless: the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(32)
        .user_agent(concat!("rlm/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", root_cause(&e)))
}

/// `{base}/v1`, whether or not the user's base URL already ends in `/v1` (Ollama's does).
pub fn versioned_base(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

fn transport_error(e: &reqwest::Error, timeout: Duration) -> CallError {
    if e.is_timeout() {
        CallError::new(
            ErrorKind::Timeout,
            format!("no reply within {}s (timeout)", timeout.as_secs_f64()),
        )
    } else if e.is_connect() {
        CallError::new(ErrorKind::Unreachable, format!("cannot connect: {}", root_cause(e)))
    } else {
        CallError::new(ErrorKind::Transient, format!("connection failed: {}", root_cause(e)))
    }
}

/// The innermost error message: reqwest's own is "error sending request for url (...)".
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}
