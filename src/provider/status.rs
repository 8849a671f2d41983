//! What an HTTP error status means for the run: policy as data, readable at a glance.

use std::time::Duration;

use super::{anthropic, openai, CallError, ErrorKind, ProviderKind};

/// Turns an HTTP error status (and its body) into a [`CallError`].
pub fn classify_status(
    kind: ProviderKind,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    model: &str,
) -> CallError {
    let detail = match kind {
        ProviderKind::Anthropic => anthropic::error_detail(body),
        ProviderKind::Openai | ProviderKind::Command => openai::error_detail(body),
    };
    let message = detail.message.clone().unwrap_or_else(|| short(body));
    let key = kind.key_var();
    let (error_kind, reason) = match status {
        429 if detail.quota_exhausted => (
            ErrorKind::Fatal,
            format!(
                "quota or spend limit reached (429): {message} — check the {} account's billing",
                kind.name()
            ),
        ),
        429 => (ErrorKind::RateLimited, format!("rate limited (429): {message}")),
        401 => (ErrorKind::Fatal, format!("authentication failed (401): check {key}")),
        403 => (
            ErrorKind::Fatal,
            format!("permission denied (403): {message} — check that {key} may use {model}"),
        ),
        404 => (
            ErrorKind::Fatal,
            format!("not found (404): {message} — check --model ({model}) and --base-url"),
        ),
        402 => (ErrorKind::Fatal, format!("payment required (402): {message}")),
        413 => (ErrorKind::Unit, format!("request too large (413): {message}")),
        400 if detail.context_exceeded => (ErrorKind::Unit, format!("input too long for {model} (400): {message}")),
        400 => (ErrorKind::Fatal, format!("request rejected (400): {message}")),
        503 | 529 => (
            ErrorKind::Overloaded,
            format!("provider overloaded ({status}): {message}"),
        ),
        408 | 409 | 425 | 500..=599 => (ErrorKind::Transient, format!("server error ({status}): {message}")),
        _ => (ErrorKind::Fatal, format!("unexpected status {status}: {message}")),
    };
    CallError {
        kind: error_kind,
        reason,
        retry_after,
    }
}

/// `retry-after` is either seconds or an HTTP date; we honour the seconds form and treat a
/// date as "soon" (1 s), which is what servers send in practice.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    (!value.is_empty()).then_some(Duration::from_secs(1))
}

/// What the error bodies of both formats tell us.
#[derive(Debug, Default)]
pub struct ErrorDetail {
    pub message: Option<String>,
    pub quota_exhausted: bool,
    pub context_exceeded: bool,
}

impl ErrorDetail {
    pub fn from_message(message: Option<String>, quota_exhausted: bool) -> Self {
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

    fn kind_of(p: ProviderKind, status: u16, body: &str) -> ErrorKind {
        classify_status(p, status, body, None, "m").kind
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"),
            Some(Duration::from_secs(1))
        );
        assert_eq!(parse_retry_after(""), None);
        assert_eq!(parse_retry_after("-3"), None);
    }

    #[test]
    fn statuses_are_classified() {
        let a = ProviderKind::Anthropic;
        let auth = classify_status(a, 401, "{}", None, "m");
        assert_eq!(auth.kind, ErrorKind::Fatal);
        assert_eq!(auth.reason, "authentication failed (401): check ANTHROPIC_API_KEY");
        assert_eq!(kind_of(a, 529, "{}"), ErrorKind::Overloaded);
        assert_eq!(kind_of(a, 500, "{}"), ErrorKind::Transient);
        let limited = classify_status(a, 429, "{}", Some(Duration::from_secs(3)), "m");
        assert_eq!(
            (limited.kind, limited.retry_after),
            (ErrorKind::RateLimited, Some(Duration::from_secs(3)))
        );
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert_eq!(kind_of(a, 429, spend), ErrorKind::Fatal);
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert_eq!(kind_of(ProviderKind::Openai, 429, quota), ErrorKind::Fatal);
        let ctx = r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error"}}"#;
        assert_eq!(kind_of(ProviderKind::Openai, 400, ctx), ErrorKind::Unit);
        assert_eq!(kind_of(a, 400, "{}"), ErrorKind::Fatal);
    }
}
