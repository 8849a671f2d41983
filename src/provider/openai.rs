//! The OpenAI Chat Completions wire format (`POST /v1/chat/completions`), also spoken by
//! Ollama, vLLM, llama.cpp and LM Studio, and the `body` of each line of an OpenAI batch.
//!
//! Prompt caching: OpenAI caches a repeated prefix of 1,024 tokens or more by itself; the
//! user message is the request's `shared` text then its `user` text, so the shared part
//! is the same bytes in every call. On api.openai.com a request that asks for caching
//! also carries `prompt_cache_key`, a hash of that prefix, which routes calls with the
//! same prefix to the same cache (local servers may refuse unknown fields: never there).

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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

/// What a server takes besides the common fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// Local servers want `max_tokens`, api.openai.com `max_completion_tokens`.
    pub legacy_max_tokens: bool,
    /// Send `prompt_cache_key` when a request asks for caching (api.openai.com only).
    pub prompt_cache_key: bool,
    pub schema_format: SchemaFormat,
}

impl Dialect {
    /// The dialect of the server at `base_url`: api.openai.com's, or a local server's.
    pub fn of(base_url: &str) -> Self {
        let official = base_url.contains("api.openai.com");
        Dialect {
            legacy_max_tokens: !official,
            prompt_cache_key: official,
            schema_format: SchemaFormat::JsonSchema,
        }
    }
}

/// `prompt_cache_key` of a request: a hash of its shared prefix (system and shared text),
/// the same for every unit of a run with the same prefix.
pub fn prompt_cache_key(request: &CompletionRequest) -> String {
    let mut hasher = Sha256::new();
    hasher.update(request.system.as_bytes());
    // A separator, so that moving text between the two parts changes the key.
    hasher.update([0u8]);
    hasher.update(request.shared.as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("rlm-{hex}")
}

pub fn request_body(model: &str, request: &CompletionRequest, temperature: Option<f32>, dialect: Dialect) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": &request.system},
            {"role": "user", "content": request.user_text()},
        ],
    });
    if request.cache_prefix && dialect.prompt_cache_key {
        body["prompt_cache_key"] = json!(prompt_cache_key(request));
    }
    let limit_field = if dialect.legacy_max_tokens {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body[limit_field] = json!(request.max_tokens);
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    if let Some(schema) = &request.schema {
        body["response_format"] = match dialect.schema_format {
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

/// The answer of a 2xx reply (see [`parse_completion`]).
pub fn parse_reply(bytes: &[u8]) -> Result<Completion, BadReply> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| BadReply::Malformed(format!("not JSON ({e})")))?;
    parse_completion(&value)
}

/// A chat completion (the realtime reply, or the `response.body` of a batch output line).
/// A reply with no answer in it is [`BadReply::Empty`] (retried once): `content` null,
/// empty or only whitespace, or a refusal — whose text is kept in the reason.
pub fn parse_completion(value: &Value) -> Result<Completion, BadReply> {
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| BadReply::Malformed("no `choices`".into()))?;
    let stop_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
    let text: Option<String> = match choice.pointer("/message/content") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        Some(Value::Null) | None => None,
        Some(_) => {
            return Err(BadReply::Malformed(
                "`message.content` is neither text nor parts".into(),
            ))
        }
    };
    let text = match text {
        Some(text) if !text.trim().is_empty() => text,
        text => {
            let refusal = choice.pointer("/message/refusal").filter(|r| !r.is_null());
            return Err(BadReply::Empty(match refusal {
                Some(r) => refused(r.as_str().unwrap_or_default()),
                None => format!(
                    "`message.content` is {} (finish reason: {})",
                    match text.as_deref() {
                        None => "null",
                        Some("") => "empty",
                        Some(_) => "only whitespace",
                    },
                    stop_reason.as_deref().unwrap_or("none")
                ),
            }));
        }
    };
    Ok(Completion {
        text,
        usage: parse_usage(value),
        truncated: stop_reason.as_deref() == Some("length"),
        stop_reason,
    })
}

/// Why a refusal is no answer, with what the model said (on one line, at most 300
/// characters: it is shown in the report).
pub fn refused(refusal: &str) -> String {
    let line = refusal.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = if line.chars().count() > 300 {
        format!("{}…", line.chars().take(300).collect::<String>())
    } else {
        line
    };
    if said.is_empty() {
        "the model refused".to_string()
    } else {
        format!("the model refused: {said}")
    }
}

/// The `usage` of a chat completion. Local servers may omit it: every field is optional.
/// `prompt_tokens` already counts the cached ones; OpenAI bills no cache writes.
pub fn parse_usage(completion: &Value) -> Usage {
    let usage = completion.get("usage");
    let field = |ptr: &str| usage.and_then(|u| u.pointer(ptr)).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: field("/prompt_tokens"),
        output_tokens: field("/completion_tokens"),
        cached_input_tokens: field("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
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
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str);
    ErrorDetail {
        message,
        quota_exhausted: is_quota("type") || is_quota("code"),
        // OpenAI's code; llama.cpp's server says it with its error type.
        context_exceeded: field("code") == Some("context_length_exceeded")
            || field("type") == Some("exceed_context_size_error"),
    }
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
                cached_input_tokens: 4,
                cache_write_tokens: 0,
            }
        );
        assert!(!c.truncated);
    }

    const LOCAL: Dialect = Dialect {
        legacy_max_tokens: true,
        prompt_cache_key: false,
        schema_format: SchemaFormat::JsonSchema,
    };
    const OFFICIAL: Dialect = Dialect {
        legacy_max_tokens: false,
        prompt_cache_key: true,
        schema_format: SchemaFormat::JsonSchema,
    };

    #[test]
    fn null_empty_or_blank_content_and_a_refusal_are_empty_replies_and_the_refusal_is_kept() {
        let empty = |reply: &[u8]| match parse_reply(reply) {
            Err(BadReply::Empty(reason)) => reason,
            other => panic!("{other:?}"),
        };
        let null = empty(br#"{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}"#);
        assert!(null.contains("null") && null.contains("stop"), "{null}");
        assert!(empty(br#"{"choices":[{"message":{"content":""},"finish_reason":"stop"}]}"#).contains("empty"));
        assert!(
            empty(br#"{"choices":[{"message":{"content":"\n  "},"finish_reason":"stop"}]}"#).contains("whitespace")
        );
        let refused =
            empty(br#"{"choices":[{"message":{"content":null,"refusal":"I can't help with\nthat."},"finish_reason":"stop"}]}"#);
        assert_eq!(refused, "the model refused: I can't help with that.");
        assert!(matches!(parse_reply(b"{}"), Err(BadReply::Malformed(_))));
    }

    #[test]
    fn max_tokens_field_depends_on_server() {
        let r = CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 9,
            ..CompletionRequest::default()
        };
        assert_eq!(Dialect::of("http://localhost:11434/v1"), LOCAL);
        assert_eq!(Dialect::of("https://api.openai.com"), OFFICIAL);
        assert_eq!(request_body("m", &r, None, LOCAL)["max_tokens"], 9);
        let body = request_body("m", &r, None, OFFICIAL);
        assert_eq!(body["max_completion_tokens"], 9);
        assert!(body.get("response_format").is_none());
        assert!(body.get("prompt_cache_key").is_none(), "not asked to cache");
    }

    #[test]
    fn the_user_message_is_the_shared_part_then_the_unit_s() {
        let unit = |user: &str| CompletionRequest {
            system: "s".into(),
            shared: "Every file: list its exports.\n".into(),
            user: user.into(),
            max_tokens: 9,
            cache_prefix: true,
            ..CompletionRequest::default()
        };
        let a = request_body("gpt-4.1", &unit("a.ts"), None, OFFICIAL);
        let b = request_body("gpt-4.1", &unit("b.ts"), None, OFFICIAL);
        assert_eq!(a["messages"][1]["content"], "Every file: list its exports.\na.ts");
        // The same prefix, the same key; another prefix, another key.
        assert_eq!(a["prompt_cache_key"], b["prompt_cache_key"]);
        assert!(a["prompt_cache_key"]
            .as_str()
            .is_some_and(|k| k.starts_with("rlm-") && k.len() == 36));
        let other = CompletionRequest {
            shared: "Other instructions.\n".into(),
            ..unit("a.ts")
        };
        assert_ne!(
            request_body("gpt-4.1", &other, None, OFFICIAL)["prompt_cache_key"],
            a["prompt_cache_key"]
        );
        // A local server never gets the field; without cache_prefix neither does OpenAI.
        assert!(request_body("m", &unit("a.ts"), None, LOCAL)
            .get("prompt_cache_key")
            .is_none());
        let off = CompletionRequest {
            cache_prefix: false,
            ..unit("a.ts")
        };
        assert!(request_body("gpt-4.1", &off, None, OFFICIAL)
            .get("prompt_cache_key")
            .is_none());
    }

    #[test]
    fn a_schema_becomes_the_response_format() {
        let r = CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 9,
            schema: Some(std::sync::Arc::new(json!({"type": "object"}))),
            ..CompletionRequest::default()
        };
        let body = request_body("m", &r, None, LOCAL);
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"]["type"], "object");
        let json_object = Dialect {
            schema_format: SchemaFormat::JsonObject,
            ..LOCAL
        };
        let body = request_body("m", &r, None, json_object);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_object", "schema": {"type": "object"}})
        );
        assert!(rejects_json_schema(500, "Input should be 'text' or 'json_object'"));
        assert!(!rejects_json_schema(429, "json_schema"));
        assert!(!rejects_json_schema(500, "internal error"));
    }
}
