//! The Anthropic Messages API wire format (`POST /v1/messages`), also the `params` of
//! each request of a Message Batch.
//!
//! Prompt caching: the prefix every unit shares (the system prompt, then the request's
//! `shared` text as its own content block before the unit's `user` block) is marked with
//! one `cache_control` breakpoint (of the four allowed) when the request asks for it and
//! the prefix reaches the model's minimum cacheable length.

use serde_json::{json, Value};

use super::catalog;
use super::status::ErrorDetail;
use super::{BadReply, Completion, CompletionRequest, Usage};

/// Pinned: newer versions reject `temperature` (see PROVIDERS.md).
pub const API_VERSION: &str = "2023-06-01";

/// Where the cache breakpoint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Breakpoint {
    None,
    /// On the system block (nothing shared in the user message).
    System,
    /// On the shared block of the user message.
    Shared,
}

/// The breakpoint of `request` for `model`: only when asked for, and only when the prefix
/// (system + shared, counted by [`crate::tokens::upper_bound`]) reaches the model's
/// minimum; a shorter prefix would not be cached and the marker would waste a breakpoint.
fn breakpoint(model: &str, request: &CompletionRequest) -> Breakpoint {
    let prefix = (request.system.len() + request.shared.len()) as u64;
    if !request.cache_prefix || crate::tokens::upper_bound(prefix) < catalog::min_cacheable_tokens(model) {
        Breakpoint::None
    } else if request.shared.is_empty() {
        Breakpoint::System
    } else {
        Breakpoint::Shared
    }
}

/// A text content block, with the cache marker when it ends the cached prefix.
fn text_block(text: &str, cached: bool) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if cached {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    block
}

pub fn request_body(model: &str, request: &CompletionRequest, temperature: Option<f32>) -> Value {
    let breakpoint = breakpoint(model, request);
    // Plain strings when nothing is marked or shared: the body of a request without
    // caching is what it always was.
    let system = match breakpoint {
        Breakpoint::System => json!([text_block(&request.system, true)]),
        Breakpoint::None | Breakpoint::Shared => json!(&request.system),
    };
    let content = if request.shared.is_empty() {
        json!(&request.user)
    } else {
        let mut blocks = vec![text_block(&request.shared, breakpoint == Breakpoint::Shared)];
        // An empty text block is refused: a unit with nothing of its own sends none.
        if !request.user.is_empty() {
            blocks.push(text_block(&request.user, false));
        }
        Value::Array(blocks)
    };
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": content}],
    });
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    if let Some(schema) = &request.schema {
        // A forced tool: the answer arrives as the tool's input, shaped by the schema.
        // Tool inputs must be objects, so another schema is wrapped in one.
        let input_schema = if wraps(schema) {
            json!({"type": "object", "properties": {WRAPPED: &**schema}, "required": [WRAPPED]})
        } else {
            (**schema).clone()
        };
        body["tools"] = json!([{
            "name": TOOL,
            "description": "Record the answer. Its input is the whole answer, shaped by the schema.",
            "input_schema": input_schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": TOOL});
    }
    body
}

/// The forced tool's name.
const TOOL: &str = "answer";
/// The property a non-object schema is wrapped in.
const WRAPPED: &str = "value";

/// Whether `schema` must be wrapped in an object to be a tool's input schema.
fn wraps(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) != Some("object")
}

/// The answer carried by a forced tool call, as JSON text.
fn tool_answer(content: &[Value], request: &CompletionRequest) -> Option<String> {
    let schema = request.schema.as_deref()?;
    let input = content
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))?
        .get("input")?;
    let value = if wraps(schema) { input.get(WRAPPED)? } else { input };
    Some(value.to_string())
}

/// The answer of a 2xx reply (see [`parse_message`]).
pub fn parse_reply(bytes: &[u8], request: &CompletionRequest) -> Result<Completion, BadReply> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| BadReply::Malformed(format!("not JSON ({e})")))?;
    parse_message(&value, request)
}

/// A Message (the realtime reply, or the `message` of a succeeded batch result). A reply with
/// no answer in it is [`BadReply::Empty`] (retried once): `content: []`, no text block and
/// no forced tool call, text blocks that are empty or only whitespace, a refusal with no
/// text. A refusal that says something is its answer.
pub fn parse_message(value: &Value, request: &CompletionRequest) -> Result<Completion, BadReply> {
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| BadReply::Malformed("no `content` array".into()))?;
    let is_text = |block: &&Value| block.get("type").and_then(Value::as_str) == Some("text");
    let stop_reason = value.get("stop_reason").and_then(Value::as_str).map(str::to_string);
    let shown_stop = stop_reason.as_deref().unwrap_or("none");
    let text = match tool_answer(content, request) {
        Some(answer) => answer,
        None if !content.iter().any(|b| is_text(&b)) => {
            return Err(BadReply::Empty(if stop_reason.as_deref() == Some("refusal") {
                "the model refused, with no text (stop reason: refusal)".to_string()
            } else {
                format!(
                    "no text block in `content` ({} blocks, stop reason: {shown_stop})",
                    content.len()
                )
            }));
        }
        None => {
            let text: String = content
                .iter()
                .filter(is_text)
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect();
            if text.trim().is_empty() {
                return Err(BadReply::Empty(format!(
                    "the text in `content` is {} (stop reason: {shown_stop})",
                    if text.is_empty() { "empty" } else { "only whitespace" }
                )));
            }
            text
        }
    };
    Ok(Completion {
        text,
        usage: parse_usage(value),
        truncated: matches!(
            stop_reason.as_deref(),
            Some("max_tokens" | "model_context_window_exceeded")
        ),
        stop_reason,
    })
}

/// The `usage` of a Message; every field optional.
pub fn parse_usage(message: &Value) -> Usage {
    let usage = message.get("usage");
    let field = |name: &str| usage.and_then(|u| u.get(name)).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = field("cache_read_input_tokens");
    let cache_write = field("cache_creation_input_tokens");
    // input_tokens excludes the cached ones; we count every prompt token as input.
    Usage {
        input_tokens: field("input_tokens") + cache_write + cache_read,
        output_tokens: field("output_tokens"),
        cached_input_tokens: cache_read,
        cache_write_tokens: cache_write,
    }
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
    // Anthropic has no code of its own for it: a 400 `invalid_request_error` whose message
    // is "prompt is too long: N tokens > M maximum", as its documentation shows.
    let context_exceeded = error.and_then(|e| e.get("type")).and_then(Value::as_str) == Some("invalid_request_error")
        && message.as_deref().is_some_and(|m| m.starts_with("prompt is too long"));
    ErrorDetail {
        message,
        quota_exhausted: quota,
        context_exceeded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_usage_and_truncation() {
        let reply = br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"max_tokens",
            "usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}"#;
        let c = parse_reply(reply, &plain()).unwrap();
        assert_eq!(c.text, "ab");
        assert_eq!(c.usage.cache_write_tokens, 2);
        assert!(c.truncated);
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 17,
                output_tokens: 3,
                cached_input_tokens: 5,
                cache_write_tokens: 2,
            }
        );
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(matches!(
            parse_reply(b"{\"content\": [", &plain()),
            Err(BadReply::Malformed(_))
        ));
        assert!(matches!(parse_reply(b"{}", &plain()), Err(BadReply::Malformed(_))));
    }

    #[test]
    fn no_text_block_empty_or_blank_text_and_a_silent_refusal_are_empty_replies() {
        let empty = |reply: &[u8]| match parse_reply(reply, &plain()) {
            Err(BadReply::Empty(reason)) => reason,
            other => panic!("{other:?}"),
        };
        assert!(empty(br#"{"content":[],"stop_reason":"end_turn"}"#).contains("end_turn"));
        empty(br#"{"content":[{"type":"thinking","thinking":"hm"}],"stop_reason":"end_turn"}"#);
        let refused = empty(br#"{"content":[],"stop_reason":"refusal"}"#);
        assert!(refused.contains("refused"), "{refused}");
        let blank = empty(br#"{"content":[{"type":"text","text":""}],"stop_reason":"end_turn"}"#);
        assert!(blank.contains("empty"), "{blank}");
        let spaces = empty(br#"{"content":[{"type":"text","text":" \n "}],"stop_reason":"end_turn"}"#);
        assert!(spaces.contains("whitespace"), "{spaces}");
        let said = br#"{"content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal"}"#;
        assert_eq!(parse_reply(said, &plain()).unwrap().text, "I can't help with that.");
    }

    fn plain() -> CompletionRequest {
        CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 5,
            ..CompletionRequest::default()
        }
    }

    /// A request whose shared prefix is `bytes` long (system 100 bytes + shared).
    fn cached(shared_bytes: usize) -> CompletionRequest {
        CompletionRequest {
            system: "s".repeat(100),
            shared: "x".repeat(shared_bytes),
            user: "the unit".into(),
            max_tokens: 5,
            cache_prefix: true,
            ..CompletionRequest::default()
        }
    }

    /// Every `cache_control` in a body, as JSON pointers.
    fn markers(body: &Value) -> Vec<String> {
        fn walk(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => {
                    for (k, v) in map {
                        if k == "cache_control" {
                            out.push(at.clone());
                        }
                        walk(v, format!("{at}/{k}"), out);
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        walk(v, format!("{at}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(body, String::new(), &mut out);
        out
    }

    #[test]
    fn without_caching_or_sharing_the_body_is_plain_strings() {
        let body = request_body("claude-sonnet-5-5", &plain(), None);
        assert_eq!(body["system"], "s");
        assert_eq!(body["messages"], json!([{"role": "user", "content": "u"}]));
        assert!(markers(&body).is_empty());
        // Caching asked for, but the prefix is far below the minimum: no marker.
        let short = CompletionRequest {
            cache_prefix: true,
            ..plain()
        };
        assert_eq!(request_body("claude-sonnet-5-5", &short, None), body);
    }

    #[test]
    fn the_shared_part_is_its_own_block_before_the_unit_s() {
        let r = CompletionRequest {
            shared: "Instructions for every file.\n".into(),
            ..plain()
        };
        let body = request_body("claude-sonnet-5-5", &r, None);
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "text", "text": "Instructions for every file.\n"},
                {"type": "text", "text": "u"},
            ])
        );
        assert!(markers(&body).is_empty(), "not asked to cache");
        // Nothing of the unit's own: no empty block (the API refuses those).
        let only_shared = CompletionRequest {
            user: String::new(),
            ..r
        };
        let body = request_body("claude-sonnet-5-5", &only_shared, None);
        assert_eq!(body["messages"][0]["content"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn the_breakpoint_ends_the_shared_prefix_once_it_reaches_the_model_s_minimum() {
        // Sonnet 5.5: 1,024 tokens, counted at 3 bytes a token: 3,072 bytes of prefix.
        let below = request_body("claude-sonnet-5-5", &cached(3069 - 100), None);
        assert!(markers(&below).is_empty());
        let at = request_body("claude-sonnet-5-5", &cached(3072 - 100), None);
        assert_eq!(markers(&at), ["/messages/0/content/0"]);
        assert_eq!(
            at["messages"][0]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(at["system"], json!("s".repeat(100)), "one breakpoint only");
        // Haiku 4.5 needs 4,096 tokens: the same prefix is not marked.
        assert!(markers(&request_body("claude-haiku-4-5", &cached(3072 - 100), None)).is_empty());
        // The unit's own text never carries the marker, and the shared block is
        // byte-identical across units.
        let other = CompletionRequest {
            user: "another unit".into(),
            ..cached(3072 - 100)
        };
        let other = request_body("claude-sonnet-5-5", &other, None);
        assert_eq!(other["messages"][0]["content"][0], at["messages"][0]["content"][0]);
    }

    #[test]
    fn with_nothing_shared_the_system_block_carries_the_breakpoint() {
        let r = CompletionRequest {
            system: "s".repeat(4000),
            cache_prefix: true,
            ..plain()
        };
        let body = request_body("claude-sonnet-5-5", &r, None);
        assert_eq!(markers(&body), ["/system/0"]);
        assert_eq!(body["system"][0]["text"], json!("s".repeat(4000)));
        assert_eq!(body["messages"][0]["content"], "u");
    }

    #[test]
    fn a_schema_is_a_forced_tool_and_its_input_the_answer() {
        let object = CompletionRequest {
            schema: Some(std::sync::Arc::new(json!({"type": "object"}))),
            ..plain()
        };
        let body = request_body("m", &object, None);
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "answer"}));
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let reply =
            br#"{"content":[{"type":"tool_use","id":"t","name":"answer","input":{"a":1}}],"stop_reason":"tool_use"}"#;
        assert_eq!(parse_reply(reply, &object).unwrap().text, r#"{"a":1}"#);

        let array = CompletionRequest {
            schema: Some(std::sync::Arc::new(json!({"type": "array"}))),
            ..plain()
        };
        let body = request_body("m", &array, None);
        assert_eq!(body["tools"][0]["input_schema"]["properties"]["value"]["type"], "array");
        let reply = br#"{"content":[{"type":"tool_use","id":"t","name":"answer","input":{"value":[1]}}]}"#;
        assert_eq!(parse_reply(reply, &array).unwrap().text, "[1]");
        // A model that answered in text anyway: the text is checked later.
        let reply = br#"{"content":[{"type":"text","text":"[2]"}]}"#;
        assert_eq!(parse_reply(reply, &array).unwrap().text, "[2]");
    }

    #[test]
    fn temperature_only_when_asked() {
        let r = plain();
        assert!(request_body("m", &r, None).get("temperature").is_none());
        assert!(request_body("m", &r, Some(0.0)).get("temperature").is_some());
    }
}
