//! The OpenAI Chat Completions wire format (`POST /v1/chat/completions`), also spoken by
//! Ollama, vLLM, llama.cpp and LM Studio.

use serde_json::{json, Value};

use super::status::ErrorDetail;
use super::{BadReply, Completion, CompletionRequest, Usage};

/// How a schema is asked for: the official `json_schema` response format, or the
/// `json_object` format with the schema beside it (llama-cpp-python and other servers that
/// reject `json_schema` but constrain `json_object` answers to a `schema`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaFormat {
    JsonSchema,
    JsonObject,
}

pub fn request_body(
    model: &str,
    request: &CompletionRequest,
    temperature: Option<f32>,
    legacy_max_tokens: bool,
    schema_format: SchemaFormat,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": &request.system},
            {"role": "user", "content": &request.user},
        ],
    });
    let limit_field = if legacy_max_tokens {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body[limit_field] = json!(request.max_tokens);
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    if let Some(schema) = &request.schema {
        body["response_format"] = match schema_format {
            SchemaFormat::JsonSchema => json!({
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": &**schema, "strict": false},
            }),
            SchemaFormat::JsonObject => json!({"type": "json_object", "schema": &**schema}),
        };
    }
    body
}

/// The server refused the `json_schema` response format (and would take `json_object`).
pub fn rejects_json_schema(status: u16, body: &str) -> bool {
    (400..600).contains(&status)
        && status != 429
        && status != 503
        && (body.contains("json_schema") || body.contains("response_format") || body.contains("json_object"))
}

/// The answer of a 2xx reply. `content: null` without a refusal is [`BadReply::Empty`].
pub fn parse_reply(bytes: &[u8]) -> Result<Completion, BadReply> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| BadReply::Malformed(format!("not JSON ({e})")))?;
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| BadReply::Malformed("no `choices`".into()))?;
    let content = choice.pointer("/message/content");
    let text = match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(Value::Null) | None => {
            if choice.pointer("/message/refusal").is_some_and(|r| !r.is_null()) {
                String::new()
            } else {
                return Err(BadReply::Empty(format!(
                    "`message.content` is null (finish reason: {})",
                    choice.get("finish_reason").and_then(Value::as_str).unwrap_or("none")
                )));
            }
        }
        Some(_) => {
            return Err(BadReply::Malformed(
                "`message.content` is neither text nor parts".into(),
            ))
        }
    };
    let stop_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
    // Local servers may omit usage: every field is optional.
    let usage = value.get("usage");
    let field = |ptr: &str| usage.and_then(|u| u.pointer(ptr)).and_then(Value::as_u64).unwrap_or(0);
    Ok(Completion {
        text,
        usage: Usage {
            input_tokens: field("/prompt_tokens"),
            output_tokens: field("/completion_tokens"),
            cached_input_tokens: field("/prompt_tokens_details/cached_tokens"),
        },
        truncated: stop_reason.as_deref() == Some("length"),
        stop_reason,
    })
}

pub fn error_detail(body: &str) -> ErrorDetail {
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = value.get("error");
    let message = match error {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e) => e.get("message").and_then(Value::as_str).map(str::to_string),
        None => None,
    };
    let is_quota = |field: &str| {
        error
            .and_then(|e| e.get(field))
            .and_then(Value::as_str)
            .is_some_and(|v| v == "insufficient_quota" || v.contains("balance"))
    };
    ErrorDetail::from_message(message, is_quota("type") || is_quota("code"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reply_and_missing_usage() {
        let c = parse_reply(br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"length"}]}"#).unwrap();
        assert_eq!(c.text, "hi");
        assert!(c.truncated);
        assert_eq!(c.usage, Usage::default());
        let c = parse_reply(
            br#"{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#,
        )
        .unwrap();
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 7,
                output_tokens: 2,
                cached_input_tokens: 4
            }
        );
        assert!(!c.truncated);
    }

    #[test]
    fn null_content_is_an_empty_reply_but_a_refusal_is_an_answer() {
        let empty = br#"{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}"#;
        assert!(matches!(parse_reply(empty), Err(BadReply::Empty(r)) if r.contains("stop")));
        let refused = br#"{"choices":[{"message":{"content":null,"refusal":"no"},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_reply(refused).unwrap().text, "");
        assert!(matches!(parse_reply(b"{}"), Err(BadReply::Malformed(_))));
    }

    #[test]
    fn max_tokens_field_depends_on_server() {
        let r = CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 9,
            schema: None,
        };
        assert_eq!(
            request_body("m", &r, None, true, SchemaFormat::JsonSchema)["max_tokens"],
            9
        );
        let body = request_body("m", &r, None, false, SchemaFormat::JsonSchema);
        assert_eq!(body["max_completion_tokens"], 9);
        assert!(body.get("response_format").is_none());
    }

    #[test]
    fn a_schema_becomes_the_response_format() {
        let r = CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 9,
            schema: Some(std::sync::Arc::new(json!({"type": "object"}))),
        };
        let body = request_body("m", &r, None, false, SchemaFormat::JsonSchema);
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"]["type"], "object");
        let body = request_body("m", &r, None, false, SchemaFormat::JsonObject);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_object", "schema": {"type": "object"}})
        );
        assert!(rejects_json_schema(500, "Input should be 'text' or 'json_object'"));
        assert!(!rejects_json_schema(429, "json_schema"));
        assert!(!rejects_json_schema(500, "internal error"));
    }
}
