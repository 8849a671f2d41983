//! The Anthropic Messages API wire format (`POST /v1/messages`).

use serde_json::{json, Value};

use super::status::ErrorDetail;
use super::{Completion, CompletionRequest, Usage};

/// Pinned: newer versions reject `temperature` (see PROVIDERS.md).
pub const API_VERSION: &str = "2023-06-01";

pub fn request_body(model: &str, request: &CompletionRequest, temperature: Option<f32>) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": &request.system,
        "messages": [{"role": "user", "content": &request.user}],
    });
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    body
}

pub fn parse_reply(bytes: &[u8]) -> Result<Completion, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array")?;
    let text: String = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let stop_reason = value.get("stop_reason").and_then(Value::as_str).map(str::to_string);
    let usage = value.get("usage");
    let field = |name: &str| usage.and_then(|u| u.get(name)).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = field("cache_read_input_tokens");
    // input_tokens excludes the cached ones; we count every prompt token as input.
    let input = field("input_tokens") + field("cache_creation_input_tokens") + cache_read;
    Ok(Completion {
        text,
        usage: Usage {
            input_tokens: input,
            output_tokens: field("output_tokens"),
            cached_input_tokens: cache_read,
        },
        truncated: matches!(
            stop_reason.as_deref(),
            Some("max_tokens") | Some("model_context_window_exceeded")
        ),
        stop_reason,
    })
}

pub fn error_detail(body: &str) -> ErrorDetail {
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = value.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let quota = error
        .and_then(|e| e.pointer("/details/error_code"))
        .and_then(Value::as_str)
        == Some("enforced_spend_limit_reached");
    ErrorDetail::from_message(message, quota)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_usage_and_truncation() {
        let reply = br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"max_tokens",
            "usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}"#;
        let c = parse_reply(reply).unwrap();
        assert_eq!(c.text, "ab");
        assert!(c.truncated);
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 17,
                output_tokens: 3,
                cached_input_tokens: 5
            }
        );
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(parse_reply(b"{\"content\": [").is_err());
        assert!(parse_reply(b"{}").is_err());
    }

    #[test]
    fn temperature_only_when_asked() {
        let r = CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 5,
        };
        assert!(request_body("m", &r, None).get("temperature").is_none());
        assert!(request_body("m", &r, Some(0.0)).get("temperature").is_some());
    }
}
