//! The Anthropic Messages API wire format (`POST /v1/messages`).

use serde_json::{json, Value};

use super::status::ErrorDetail;
use super::{BadReply, Completion, CompletionRequest, Usage};

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

/// The answer of a 2xx reply. A reply with no answer in it (`content: []`, no text block and
/// no forced tool call) is [`BadReply::Empty`] — unless the model refused, which is its answer.
pub fn parse_reply(bytes: &[u8], request: &CompletionRequest) -> Result<Completion, BadReply> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| BadReply::Malformed(format!("not JSON ({e})")))?;
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| BadReply::Malformed("no `content` array".into()))?;
    let is_text = |block: &&Value| block.get("type").and_then(Value::as_str) == Some("text");
    let tool = tool_answer(content, request);
    let refused = value.get("stop_reason").and_then(Value::as_str) == Some("refusal");
    if tool.is_none() && !content.iter().any(|b| is_text(&b)) && !refused {
        return Err(BadReply::Empty(format!(
            "no text block in `content` ({} blocks, stop reason: {})",
            content.len(),
            value.get("stop_reason").and_then(Value::as_str).unwrap_or("none")
        )));
    }
    let text: String = tool.unwrap_or_else(|| {
        content
            .iter()
            .filter(is_text)
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect()
    });
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
        let c = parse_reply(reply, &plain()).unwrap();
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
        assert!(matches!(
            parse_reply(b"{\"content\": [", &plain()),
            Err(BadReply::Malformed(_))
        ));
        assert!(matches!(parse_reply(b"{}", &plain()), Err(BadReply::Malformed(_))));
    }

    #[test]
    fn no_text_block_is_an_empty_reply_but_a_refusal_is_an_answer() {
        let empty = br#"{"content":[],"stop_reason":"end_turn"}"#;
        assert!(matches!(parse_reply(empty, &plain()), Err(BadReply::Empty(r)) if r.contains("end_turn")));
        let no_text = br#"{"content":[{"type":"thinking","thinking":"hm"}],"stop_reason":"end_turn"}"#;
        assert!(matches!(parse_reply(no_text, &plain()), Err(BadReply::Empty(_))));
        let refused = br#"{"content":[],"stop_reason":"refusal"}"#;
        assert_eq!(parse_reply(refused, &plain()).unwrap().text, "");
        let blank = br#"{"content":[{"type":"text","text":""}],"stop_reason":"end_turn"}"#;
        assert_eq!(parse_reply(blank, &plain()).unwrap().text, "");
    }

    fn plain() -> CompletionRequest {
        CompletionRequest {
            system: "s".into(),
            user: "u".into(),
            max_tokens: 5,
            schema: None,
        }
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
