//! The HTTP providers: Anthropic Messages and OpenAI-compatible Chat Completions over one
//! shared `reqwest` client (connections are reused across calls).
//!
//! Every wait is bounded: a connection within `--connect-timeout`, the reply's first byte
//! within `--timeout`, and then either the whole reply within `--timeout` or, for a streamed
//! reply (local servers, see `stream.rs`), no silence longer than `--timeout`. Bodies are
//! read chunk by chunk up to a cap derived from `--max-tokens`, so a runaway reply fails the
//! call instead of filling memory.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::openai::{Dialect, SchemaFormat};
use super::status::{classify_status, rate_window, retry_after};
use super::stream::{refuses_streaming, too_large, StreamedReply};
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
    /// `--timeout`: for the first byte of a reply, then for the rest of it (or, streamed,
    /// for each silence in it).
    pub timeout: Duration,
    /// `--connect-timeout`: for the TCP (and TLS) connection.
    pub connect_timeout: Duration,
}

/// At most this much of an error body is read: enough for any message a server writes.
const ERROR_BODY_CAP: usize = 64 * 1024;

/// The largest body of a reply that is not an answer (a batch's state, a listing of
/// batches or models): far above what any server sends, far below what a server sending
/// without end would make rlm hold.
pub(crate) const CONTROL_BODY_CAP: usize = 32 * 1024 * 1024;

/// A streamed reply frames each token in a JSON chunk; its raw bytes may run to this many
/// times the cap on its text.
const STREAM_OVERHEAD: usize = 8;

/// The largest reply body a call can need: 64 bytes a token (far above any tokenizer's
/// bytes per token, JSON escaping included) plus 1 MiB for the envelope.
pub fn reply_cap(max_tokens: u32) -> usize {
    (max_tokens as usize).saturating_mul(64).saturating_add(1 << 20)
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
    connect_timeout: Duration,
    /// The server refused the `json_schema` response format once: `--schema` is asked for
    /// as `json_object` with the schema beside it from then on.
    schema_as_json_object: AtomicBool,
    /// An OpenAI-compatible server on a loopback or private address: replies are streamed.
    local: bool,
    /// The server refused `"stream": true` once: replies are read whole from then on.
    stream_refused: AtomicBool,
    /// Some HTTP reply has come back in this run: a DNS failure now is a resolver's hiccup,
    /// not a wrong host.
    answered: AtomicBool,
    redactor: Redactor,
}

/// Why an HTTP provider could not be set up (before any request).
#[derive(Debug, thiserror::Error)]
pub enum HttpSetupError {
    /// reqwest could not build its client (the TLS provider, the system's certificates).
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    /// A command provider's settings reached the HTTP provider: a bug of rlm's.
    #[error("internal error: a command provider is not an HTTP provider")]
    NotHttp,
}

impl HttpProvider {
    pub fn new(config: HttpConfig) -> Result<Self, HttpSetupError> {
        if config.kind == ProviderKind::Command {
            return Err(HttpSetupError::NotHttp);
        }
        let http = client_with(&config.base_url, config.connect_timeout)?;
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
            local: config.kind == ProviderKind::Openai && is_local_url(&config.base_url),
            stream_refused: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            endpoint,
            redactor: Redactor::new(config.api_key.iter()),
            api_key: config.api_key,
            model: config.model,
            timeout: config.timeout,
            connect_timeout: config.connect_timeout,
        })
    }

    /// One call; a server that refuses `stream` or the `json_schema` format is asked again
    /// without it (and never with it again in this run).
    async fn call(&self, request: &CompletionRequest) -> Result<Completion, CallError> {
        loop {
            let stream = self.local && !self.stream_refused.load(Ordering::Relaxed);
            let format = if self.schema_as_json_object.load(Ordering::Relaxed) {
                SchemaFormat::JsonObject
            } else {
                SchemaFormat::JsonSchema
            };
            match self.send(request, format, stream).await {
                Err((_, Some((status, body)))) if stream && refuses_streaming(status, &body) => {
                    tracing::debug!(status, "the server refused to stream: asking for whole replies");
                    self.stream_refused.store(true, Ordering::Relaxed);
                }
                Err((_, Some((status, body))))
                    if self.kind == ProviderKind::Openai
                        && request.schema.is_some()
                        && format == SchemaFormat::JsonSchema
                        && openai::rejects_json_schema(status, &body) =>
                {
                    // Some servers (llama-cpp-python) take a schema only beside `json_object`.
                    tracing::debug!(
                        status,
                        "the server refused response_format json_schema: retrying with json_object"
                    );
                    self.schema_as_json_object.store(true, Ordering::Relaxed);
                }
                other => return other.map_err(|(e, _)| e),
            }
        }
    }

    /// One HTTP exchange. A refusal also returns its status and (scrubbed) body.
    async fn send(
        &self,
        request: &CompletionRequest,
        schema_format: SchemaFormat,
        stream: bool,
    ) -> Result<Completion, (CallError, Option<(u16, String)>)> {
        let mut body = self.wire.body(request, schema_format);
        if stream {
            body["stream"] = serde_json::json!(true);
            body["stream_options"] = serde_json::json!({"include_usage": true});
        }
        let builder = authorized(self.kind, self.http.post(&self.endpoint), self.api_key.as_ref());
        tracing::debug!(endpoint = %self.endpoint, model = %self.model, stream, "sending request");
        let started = Instant::now();
        let sent = builder
            .header("content-type", "application/json")
            .body(body.to_string())
            .send();
        let mut response = match tokio::time::timeout(self.timeout, sent).await {
            Err(_) => return Err((self.no_reply(), None)),
            Ok(Err(e)) => return Err((self.transport_error(&e), None)),
            Ok(Ok(response)) => response,
        };
        self.answered.store(true, Ordering::Relaxed);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let deadline = started + self.timeout;
        if !(200..300).contains(&status) {
            let bytes = self.read_error_body(&mut response, deadline).await;
            // An error body can echo what we sent, the key included; scrubbed here, the
            // reason is safe everywhere it goes.
            let body = self.redactor.scrub(&String::from_utf8_lossy(&bytes)).into_owned();
            let window = (status == 429).then(|| rate_window(&header)).flatten();
            let error = classify_status(self.kind, status, &body, retry_after(&header), window, &self.model);
            return Err((error, Some((status, body))));
        }
        let cap = reply_cap(request.max_tokens);
        let event_stream = header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
        let mut completion = if stream && event_stream {
            // Of what was sent: the body less its JSON framing, as the plan estimates it.
            let prompt_tokens =
                crate::tokens::expected((request.system.len() + request.shared.len() + request.user.len()) as u64);
            self.read_stream(&mut response, cap, prompt_tokens).await
        } else {
            // A server that ignored `stream` answers whole, as any other.
            let bytes = self
                .read_whole(&mut response, deadline, cap)
                .await
                .map_err(|e| (e, None))?;
            tracing::debug!(status, bytes = bytes.len(), "reply");
            match self.kind {
                ProviderKind::Anthropic => anthropic::parse_reply(&bytes, request),
                ProviderKind::Openai | ProviderKind::Command => openai::parse_reply(&bytes),
            }
            .map_err(CallError::from)
        }
        .map_err(|e| (e, None))?;
        // A model that echoes the key (it was in an input file, say) must not put it in a
        // result file or the cache.
        if let std::borrow::Cow::Owned(clean) = self.redactor.scrub(&completion.text) {
            completion.text = clean;
        }
        Ok(completion)
    }

    /// A whole body, by `deadline`, at most `cap` bytes.
    async fn read_whole(
        &self,
        response: &mut reqwest::Response,
        deadline: Instant,
        cap: usize,
    ) -> Result<Vec<u8>, CallError> {
        if response.content_length().is_some_and(|n| n > cap as u64) {
            return Err(too_large(cap));
        }
        let mut bytes = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, response.chunk()).await {
                Err(_) => {
                    return Err(CallError::new(
                        ErrorKind::Timeout,
                        format!(
                            "the reply was not complete within --timeout {} ({} bytes came)",
                            seconds(self.timeout),
                            bytes.len()
                        ),
                    ))
                }
                Ok(Err(e)) => return Err(Self::body_error(&e)),
                Ok(Ok(None)) => return Ok(bytes),
                Ok(Ok(Some(chunk))) => {
                    if bytes.len() + chunk.len() > cap {
                        return Err(too_large(cap));
                    }
                    bytes.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// A streamed reply: each chunk within `--timeout` of the one before.
    async fn read_stream(
        &self,
        response: &mut reqwest::Response,
        cap: usize,
        prompt_tokens: u64,
    ) -> Result<Completion, CallError> {
        let mut reply = StreamedReply::new(cap);
        let mut received = 0usize;
        loop {
            match tokio::time::timeout(self.timeout, response.chunk()).await {
                Err(_) => {
                    return Err(CallError::new(
                        ErrorKind::Timeout,
                        format!(
                            "the streamed reply stalled: nothing for --timeout {} ({received} bytes had come)",
                            seconds(self.timeout)
                        ),
                    ))
                }
                Ok(Err(e)) => return Err(Self::body_error(&e)),
                Ok(Ok(None)) => return reply.finish(prompt_tokens),
                Ok(Ok(Some(chunk))) => {
                    received += chunk.len();
                    if received > cap.saturating_mul(STREAM_OVERHEAD) {
                        return Err(too_large(cap.saturating_mul(STREAM_OVERHEAD)));
                    }
                    reply.feed(&chunk)?;
                }
            }
        }
    }

    /// The first [`ERROR_BODY_CAP`] bytes of an error body (what is there by `deadline`).
    async fn read_error_body(&self, response: &mut reqwest::Response, deadline: Instant) -> Vec<u8> {
        tokio::time::timeout_at(deadline, read_error_head(response))
            .await
            .unwrap_or_default()
    }

    /// Nothing at all came back within `--timeout`.
    fn no_reply(&self) -> CallError {
        CallError::silent(
            ErrorKind::Timeout,
            format!("no reply within --timeout {}", seconds(self.timeout)),
        )
    }

    /// A failure before any reply came back.
    fn transport_error(&self, e: &reqwest::Error) -> CallError {
        if e.is_dns() || chain_mentions(e, "dns error") {
            let host = reqwest::Url::parse(&self.endpoint)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default();
            let reason = format!("cannot resolve the host name {host}: {}", root_cause(e));
            // Never answered: the name is wrong (or the network has no DNS); retrying
            // cannot help. Once the server has answered, a failed lookup is a hiccup.
            return if self.answered.load(Ordering::Relaxed) {
                CallError::silent(ErrorKind::Unreachable, reason)
            } else {
                CallError::new(ErrorKind::Fatal, format!("{reason} — check --base-url"))
            };
        }
        if e.is_connect() && e.is_timeout() {
            CallError::silent(
                ErrorKind::Unreachable,
                format!(
                    "no connection within --connect-timeout {}",
                    seconds(self.connect_timeout)
                ),
            )
        } else if e.is_connect() {
            CallError::silent(ErrorKind::Unreachable, format!("cannot connect: {}", root_cause(e)))
        } else if e.is_timeout() {
            self.no_reply()
        } else {
            CallError::silent(ErrorKind::Transient, format!("connection failed: {}", root_cause(e)))
        }
    }

    /// A failure while a reply's body was coming.
    fn body_error(e: &reqwest::Error) -> CallError {
        CallError::new(
            ErrorKind::Transient,
            format!("the connection broke during the reply: {}", root_cause(e)),
        )
    }
}

/// `12s`, `1.5s`: a timeout as the user wrote it.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

fn chain_mentions(e: &(dyn std::error::Error + 'static), needle: &str) -> bool {
    let mut current = Some(e);
    while let Some(err) = current {
        if err.to_string().contains(needle) {
            return true;
        }
        current = err.source();
    }
    false
}

/// Whether `base_url` names this machine or a private network (loopback, RFC 1918,
/// link-local, IPv6 unique-local): where self-hosted model servers live. A host name other
/// than the providers' own APIs is resolved once (for at most [`LOCAL_LOOKUP_LIMIT`]): a
/// server reached as `http://ollama:11434` (docker compose), `host.docker.internal` or
/// `gpu-box.lan` is local when every address the name has is.
pub fn is_local_url(base_url: &str) -> bool {
    is_local_with(base_url, resolve_within_limit)
}

/// How long the look-up of a base URL's host name may take: a name that slow to resolve
/// is not a server next door.
const LOCAL_LOOKUP_LIMIT: Duration = Duration::from_secs(2);

/// [`is_local_url`] with this resolver (host, port → addresses; empty when it does not
/// resolve).
fn is_local_with(base_url: &str, resolve: impl FnOnce(&str, u16) -> Vec<IpAddr>) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return is_local_ip(ip);
    }
    let official = [ProviderKind::Anthropic, ProviderKind::Openai]
        .iter()
        .any(|kind| reqwest::Url::parse(kind.official_base_url()).is_ok_and(|u| u.host_str() == Some(host.as_str())));
    if official {
        return false;
    }
    let addresses = resolve(&host, url.port_or_known_default().unwrap_or(80));
    !addresses.is_empty() && addresses.into_iter().all(is_local_ip)
}

/// Loopback, private (RFC 1918), link-local, or IPv6 unique-local.
fn is_local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        IpAddr::V6(ip) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || first & 0xfe00 == 0xfc00
                || first & 0xffc0 == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private() || v4.is_link_local())
        }
    }
}

/// The system resolver's addresses for `host`, or none when it does not answer within
/// [`LOCAL_LOOKUP_LIMIT`] (the look-up goes on in its own thread, which nothing waits for).
fn resolve_within_limit(host: &str, port: u16) -> Vec<IpAddr> {
    use std::net::ToSocketAddrs;
    let (tx, rx) = std::sync::mpsc::channel();
    let host = host.to_string();
    let spawned = std::thread::Builder::new().name("rlm-lookup".into()).spawn(move || {
        let addresses: Vec<IpAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map(|found| found.map(|a| a.ip()).collect())
            .unwrap_or_default();
        let _ = tx.send(addresses);
    });
    if spawned.is_err() {
        return Vec::new();
    }
    rx.recv_timeout(LOCAL_LOOKUP_LIMIT).unwrap_or_default()
}

impl Provider for HttpProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn is_local(&self) -> bool {
        self.local
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
/// certificate store (so corporate CAs work), HTTP/2 when the server offers it. The error
/// is text for the callers that carry a setup failure as text (model discovery, the batch
/// API's transport).
pub fn client(base_url: &str) -> Result<reqwest::Client, String> {
    client_with(base_url, DEFAULT_CONNECT_TIMEOUT).map_err(|e| e.to_string())
}

/// `--connect-timeout`'s default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// [`client`] for `base_url` with this connect timeout. A plain `http://` server (a local
/// model, a proxy on the machine) is spoken to without TLS: the platform's certificates are
/// not loaded for it (reading and parsing them is tens of milliseconds before the first
/// call).
pub fn client_with(base_url: &str, connect_timeout: Duration) -> Result<reqwest::Client, HttpSetupError> {
    // Installing twice is harmless: the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_max_idle_per_host(32)
        .user_agent(concat!("rlm/", env!("CARGO_PKG_VERSION")));
    let builder = if is_plain_http(base_url) {
        builder.tls_certs_only(std::iter::empty())
    } else {
        builder
    };
    builder.build().map_err(|e| HttpSetupError::Client(root_cause(&e)))
}

/// Whether `base_url` is spoken to without TLS (`http://…`).
fn is_plain_http(base_url: &str) -> bool {
    base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
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

/// The innermost error message: reqwest's own is "error sending request for url (...)".
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_http_server_is_spoken_to_without_tls() {
        assert!(is_plain_http("http://127.0.0.1:8000"));
        assert!(is_plain_http("HTTP://localhost/v1"));
        assert!(!is_plain_http("https://api.anthropic.com"));
        assert!(!is_plain_http("httpx://odd"));
        assert!(!is_plain_http("http"));
        // A client for each kind builds (the platform's certificates only for https).
        assert!(client("http://127.0.0.1:9").is_ok());
        assert!(client("https://api.anthropic.com").is_ok());
    }

    #[test]
    fn local_servers_are_loopback_and_private_addresses() {
        let unresolved = |_: &str, _: u16| -> Vec<IpAddr> { panic!("a literal address is not looked up") };
        for local in [
            "http://127.0.0.1:8080",
            "http://localhost:11434/v1",
            "http://10.1.2.3",
            "http://192.168.1.20:8000",
            "http://172.16.0.9",
            "http://[::1]:8080",
            "http://[fd00::1]",
        ] {
            assert!(is_local_with(local, unresolved), "{local}");
        }
        for remote in ["http://8.8.8.8", "not a url"] {
            assert!(!is_local_with(remote, unresolved), "{remote}");
        }
    }

    #[test]
    fn a_host_name_is_local_when_every_address_it_resolves_to_is() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let names = |host: &str, port: u16| -> Vec<IpAddr> {
            match (host, port) {
                ("ollama", 11434) => vec![ip("172.18.0.3")],
                ("host.docker.internal", 80) => vec![ip("192.168.65.254"), ip("fe80::1")],
                ("gpu-box.lan", 8000) => vec![ip("10.0.0.7")],
                ("split.example", _) => vec![ip("10.0.0.7"), ip("93.184.216.34")],
                ("models.example", _) => vec![ip("93.184.216.34")],
                _ => Vec::new(),
            }
        };
        assert!(is_local_with("http://ollama:11434/v1", names));
        assert!(is_local_with("http://host.docker.internal", names));
        assert!(is_local_with("http://gpu-box.lan:8000", names));
        assert!(!is_local_with("https://split.example", names), "one public address");
        assert!(!is_local_with("https://models.example", names));
        assert!(!is_local_with("http://nowhere.invalid", names), "does not resolve");
        let never = |host: &str, _: u16| -> Vec<IpAddr> { panic!("{host}: the official APIs are not looked up") };
        assert!(!is_local_with("https://api.openai.com", never));
        assert!(!is_local_with("https://api.anthropic.com/v1", never));
    }

    #[test]
    fn the_reply_cap_grows_with_max_tokens() {
        assert_eq!(reply_cap(0), 1 << 20);
        assert_eq!(reply_cap(4096), 4096 * 64 + (1 << 20));
        assert!(reply_cap(u32::MAX) > reply_cap(1_000_000));
    }
}

/// Why a body was not read whole.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// It is over the cap (these bytes): nothing more of it was read.
    TooLarge(usize),
    Transport(reqwest::Error),
}

/// A whole body, refused as soon as it is seen to be over `cap` bytes (by its
/// `content-length`, or as its bytes come): a server that sends without end never fills
/// the memory. (The request's own timeout bounds the time.)
pub(crate) async fn read_capped(response: &mut reqwest::Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge(cap));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if bytes.len() + chunk.len() > cap {
            return Err(BodyError::TooLarge(cap));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The first [`ERROR_BODY_CAP`] bytes of an error body: enough to say why, and all a
/// message quotes (what comes after is never read).
pub(crate) async fn read_error_head(response: &mut reqwest::Response) -> Vec<u8> {
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_CAP {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(ERROR_BODY_CAP);
    bytes
}
