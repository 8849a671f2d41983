//! Model providers behind one trait.
//!
//! [`Provider::complete`] makes exactly one call and describes every failure with a
//! [`CallError`] whose [`ErrorKind`] says how to retry it (the executor's job). HTTP
//! providers speak the Anthropic Messages or OpenAI Chat Completions wire format over one
//! shared client; a process-based provider plugs in through the same trait.

pub mod anthropic;
pub mod batch_api;
pub mod bundled_model;
pub mod catalog;
pub mod command;
pub mod discovery;
mod http;
pub mod model;
pub mod openai;
mod status;
mod stream;

pub use http::{versioned_base, HttpConfig, HttpProvider, HttpSetupError, Wire, DEFAULT_CONNECT_TIMEOUT};
pub use model::ModelInfo;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future, so the trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which provider rlm talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    Openai,
    /// A command-line agent (`--provider command --command 'claude -p'`): prompt on stdin,
    /// answer on stdout.
    Command,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
            ProviderKind::Command => "command",
        }
    }

    /// The environment variable that holds this provider's key.
    pub fn key_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Command => "",
        }
    }

    /// The environment variable that holds this provider's base URL.
    pub fn base_url_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
            ProviderKind::Openai => "OPENAI_BASE_URL",
            ProviderKind::Command => "",
        }
    }

    /// The provider's own API.
    pub fn official_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Openai => "https://api.openai.com",
            ProviderKind::Command => "",
        }
    }
}

/// One model call.
#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    pub system: String,
    /// The start of the user message that every unit of a run shares (analyst
    /// instructions, a shared document), sent before `user`; empty when nothing is shared.
    pub shared: String,
    /// The rest of the user message: this unit's content, then its instruction.
    pub user: String,
    pub max_tokens: u32,
    /// `--schema`: ask the provider to answer with JSON that conforms to this schema.
    pub schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Mark the shared prefix (system + `shared`) for provider prompt caching.
    pub cache_prefix: bool,
}

impl CompletionRequest {
    /// The whole user message: the shared part, then the unit's own.
    pub fn user_text(&self) -> String {
        format!("{}{}", self.shared, self.user)
    }
}

pub use crate::tokens::Usage;

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

/// What kind of failure a call met; the retry policy is a function of this alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Throttled (429): waited out on a time budget, never on the fault budget; the pool
    /// narrows.
    RateLimited,
    /// The provider is overloaded (529, 503): a fault retry, and the pool narrows.
    Overloaded,
    /// A server error, a reset or a malformed reply: a fault retry.
    Transient,
    /// No reply within the timeout: a fault retry.
    Timeout,
    /// The endpoint cannot be reached (refused, no connection within `--connect-timeout`,
    /// TLS): a fault retry; a few in a row before the endpoint ever answered end the run.
    Unreachable,
    /// The reply carried no answer at all (Anthropic `content: []` or no text block, OpenAI
    /// `content: null`): retried once, then this unit fails.
    EmptyReply,
    /// Final for this unit only (the input is too long for the model).
    Unit,
    /// Final for the run: every other call would fail the same way (bad key, no quota).
    Fatal,
}

impl ErrorKind {
    /// The provider pushed back: the pool should lower its width.
    pub fn is_pushback(self) -> bool {
        matches!(self, ErrorKind::RateLimited | ErrorKind::Overloaded)
    }
}

/// Why a call failed: the kind decides the retry, the reason is shown to the user (already
/// scrubbed of secrets).
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    pub kind: ErrorKind,
    pub reason: String,
    /// The server's `retry-after` (or `retry-after-ms`), if it sent one.
    pub retry_after: Option<Duration>,
    /// What the provider's rate-limit headers said, on a 429 that carried them.
    pub window: Option<RateWindow>,
    /// Nothing came back from the endpoint: no connection, or not one byte of a reply
    /// before the timeout. Such failures before the endpoint ever answered end the run.
    pub silent: bool,
}

impl CallError {
    pub fn new(kind: ErrorKind, reason: impl Into<String>) -> Self {
        CallError {
            kind,
            reason: reason.into(),
            retry_after: None,
            window: None,
            silent: false,
        }
    }

    /// A failure in which the endpoint sent nothing back.
    pub fn silent(kind: ErrorKind, reason: impl Into<String>) -> Self {
        CallError {
            silent: true,
            ..CallError::new(kind, reason)
        }
    }
}

/// What a 429's rate-limit headers (`anthropic-ratelimit-*`, `x-ratelimit-*`) say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateWindow {
    /// A request or token budget has nothing left (`*-remaining: 0`): every call is refused
    /// until it resets, so the whole pool should wait, not only this call.
    pub spent: bool,
    /// How long until the spent budgets all have room again (the latest of their resets).
    pub resets_in: Option<Duration>,
}

/// Why a 2xx reply could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadReply {
    /// Not the wire format (not JSON, no `content` / `choices`).
    Malformed(String),
    /// Well-formed, but with no answer in it (no text block, `content: null`).
    Empty(String),
}

impl From<BadReply> for CallError {
    fn from(bad: BadReply) -> Self {
        match bad {
            BadReply::Malformed(reason) => CallError::new(ErrorKind::Transient, format!("malformed reply: {reason}")),
            BadReply::Empty(reason) => {
                CallError::new(ErrorKind::EmptyReply, format!("the reply held no answer: {reason}"))
            }
        }
    }
}

/// A model endpoint.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// `anthropic`, `openai`, …
    fn kind(&self) -> ProviderKind;

    /// The model id sent with every call.
    fn model(&self) -> &str;

    /// Makes one call. Never retries; never panics on a strange reply.
    fn complete<'a>(&'a self, request: &'a CompletionRequest) -> BoxFuture<'a, Result<Completion, CallError>>;

    /// A server on this machine or the local network (an OpenAI-compatible base URL on a
    /// loopback or private address, or a host name that resolves only to such addresses):
    /// it may serve one call at a time, so the pool starts at one call in flight and widens
    /// only while that raises throughput.
    fn is_local(&self) -> bool {
        false
    }
}
