//! Streamed Chat Completions replies (`"stream": true`, server-sent events), asked of local
//! OpenAI-compatible servers.
//!
//! Why stream: a local model generates slowly (the bundled SmolLM2 about 37 tokens a second,
//! so a 4,096-token answer takes 110 s) and a busy server queues calls, so a whole-reply
//! timeout fails calls that are making progress. A streamed reply shows progress: `--timeout`
//! then bounds the silence before the first byte and between chunks, never the length of an
//! answer that keeps coming. Scaling the timeout instead would have to guess the server's
//! speed, and would wait just as long for a server that stopped.
//!
//! The events are `data: {chunk}` lines, each chunk with `choices[0].delta.content`, the
//! last with a `finish_reason`, then (with `stream_options.include_usage`) one chunk with
//! `usage` and empty `choices`, then `data: [DONE]`.

use serde_json::Value;

use super::{BadReply, CallError, Completion, ErrorKind, Usage};

/// A streamed reply, fed as its bytes arrive.
#[derive(Debug)]
pub struct StreamedReply {
    /// Bytes of an unfinished line.
    partial: Vec<u8>,
    /// The `data:` lines of the event being read.
    data: String,
    text: String,
    /// What a refusal said (OpenAI `delta.refusal`), kept for the reason.
    refusal: Option<String>,
    finish_reason: Option<String>,
    usage: Usage,
    /// A chunk carried `usage` (servers such as llama-cpp-python never send it).
    usage_seen: bool,
    /// Chunks that carried content: a token each, as local servers stream them.
    content_chunks: u64,
    done: bool,
    /// The most text (and the longest line) this reply may have: see `http::reply_cap`.
    cap: usize,
}

impl StreamedReply {
    pub fn new(cap: usize) -> Self {
        StreamedReply {
            partial: Vec::new(),
            data: String::new(),
            text: String::new(),
            refusal: None,
            finish_reason: None,
            usage: Usage::default(),
            usage_seen: false,
            content_chunks: 0,
            done: false,
            cap,
        }
    }

    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), CallError> {
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            self.partial.extend_from_slice(&rest[..newline]);
            rest = &rest[newline + 1..];
            let line = std::mem::take(&mut self.partial);
            self.line(&line)?;
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > self.cap {
            return Err(too_large(self.cap));
        }
        Ok(())
    }

    fn line(&mut self, line: &[u8]) -> Result<(), CallError> {
        let line = String::from_utf8_lossy(line);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            return self.event(&data);
        }
        if let Some(value) = line.strip_prefix("data:") {
            if !self.data.is_empty() {
                self.data.push('\n');
            }
            self.data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
        // Comments (`:`), `event:`, `id:` and `retry:` lines carry nothing we use.
        Ok(())
    }

    fn event(&mut self, data: &str) -> Result<(), CallError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| CallError::from(BadReply::Malformed(format!("a streamed chunk is not JSON ({e})"))))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .unwrap_or("no message");
            return Err(CallError::new(
                ErrorKind::Transient,
                format!("the server reported an error mid-reply: {message}"),
            ));
        }
        if let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) {
            if let Some(piece) = choice.pointer("/delta/content").and_then(Value::as_str) {
                self.content_chunks += u64::from(!piece.is_empty());
                self.text.push_str(piece);
                if self.text.len() > self.cap {
                    return Err(too_large(self.cap));
                }
            }
            if let Some(piece) = choice.pointer("/delta/refusal").filter(|r| !r.is_null()) {
                let said = self.refusal.get_or_insert_with(String::new);
                if said.len() < 4096 {
                    said.push_str(piece.as_str().unwrap_or_default());
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage_seen = true;
            let field = |ptr: &str| usage.pointer(ptr).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Usage {
                input_tokens: field("/prompt_tokens"),
                output_tokens: field("/completion_tokens"),
                cached_input_tokens: field("/prompt_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            };
        }
        Ok(())
    }

    /// The stream ended: the answer, or why there is none. A stream that never said its
    /// usage counts its content chunks as output tokens and `prompt_tokens` (an estimate
    /// from the request's size) as input, so a local server's work is not reported as none.
    pub fn finish(mut self, prompt_tokens: u64) -> Result<Completion, CallError> {
        let last = std::mem::take(&mut self.partial);
        self.line(&last)?;
        let data = std::mem::take(&mut self.data);
        self.event(&data)?;
        if !self.done && self.finish_reason.is_none() {
            return Err(BadReply::Malformed("the reply stream ended before the answer was complete".into()).into());
        }
        if self.text.trim().is_empty() {
            return Err(BadReply::Empty(match &self.refusal {
                Some(said) => super::openai::refused(said),
                None => format!(
                    "the streamed reply had no content (finish reason: {})",
                    self.finish_reason.as_deref().unwrap_or("none")
                ),
            })
            .into());
        }
        if !self.usage_seen {
            self.usage.input_tokens = prompt_tokens;
            self.usage.output_tokens = self.content_chunks;
        }
        Ok(Completion {
            text: self.text,
            usage: self.usage,
            truncated: self.finish_reason.as_deref() == Some("length"),
            stop_reason: self.finish_reason,
        })
    }
}

/// The server would not stream (an older or stricter OpenAI-compatible server): the call is
/// asked again without `stream`, and so are all later ones.
pub fn refuses_streaming(status: u16, body: &str) -> bool {
    matches!(status, 400 | 404 | 415 | 422 | 500 | 501) && body.to_ascii_lowercase().contains("stream")
}

/// The failure of a reply over its cap.
pub fn too_large(cap: usize) -> CallError {
    CallError::new(
        ErrorKind::Unit,
        format!(
            "the reply was larger than {:.1} MB: more than any answer of at most --max-tokens can be \
             (a misbehaving server or proxy?)",
            cap as f64 / 1e6
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(content: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
        )
    }

    #[test]
    fn chunks_split_anywhere_make_one_answer_with_usage() {
        let body = format!(
            ": keep-alive\n\n{}{}data: {}\r\n\r\ndata: {}\n\ndata: [DONE]\n\n",
            chunk("Hel"),
            chunk("lo"),
            serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}),
        );
        for split in [1, 3, 17, body.len()] {
            let mut reply = StreamedReply::new(1000);
            for piece in body.as_bytes().chunks(split) {
                reply.feed(piece).unwrap();
            }
            let c = reply.finish(0).unwrap();
            assert_eq!(c.text, "Hello");
            assert!(c.truncated);
            assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (7, 2));
        }
    }

    #[test]
    fn a_stream_without_usage_counts_its_chunks_and_the_prompt_estimate() {
        // llama-cpp-python's server ignores stream_options.include_usage.
        let body = format!(
            "{}{}{}data: {}\n\ndata: [DONE]\n\n",
            chunk("Hel"),
            chunk(""),
            chunk("lo"),
            serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        );
        let mut reply = StreamedReply::new(1000);
        reply.feed(body.as_bytes()).unwrap();
        let c = reply.finish(40).unwrap();
        assert_eq!(c.text, "Hello");
        assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (40, 2));
    }

    #[test]
    fn an_unfinished_stream_is_malformed_and_an_empty_one_empty() {
        let mut cut = StreamedReply::new(1000);
        cut.feed(chunk("Hel").as_bytes()).unwrap();
        assert_eq!(cut.finish(0).unwrap_err().kind, ErrorKind::Transient);
        let mut empty = StreamedReply::new(1000);
        empty
            .feed(b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
            .unwrap();
        assert_eq!(empty.finish(0).unwrap_err().kind, ErrorKind::EmptyReply);
    }

    #[test]
    fn an_error_event_or_an_overlong_answer_fails_the_call() {
        let mut failing = StreamedReply::new(1000);
        let error = failing
            .feed(b"data: {\"error\": {\"message\": \"out of memory\"}}\n\n")
            .unwrap_err();
        assert!(error.reason.contains("out of memory"), "{}", error.reason);
        let mut long = StreamedReply::new(10);
        let error = long.feed(chunk("more than ten bytes").as_bytes()).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Unit);
        assert!(
            error.reason.starts_with("the reply was larger than"),
            "{}",
            error.reason
        );
        let mut endless_line = StreamedReply::new(10);
        assert!(endless_line.feed(&[b'x'; 11]).is_err());
    }

    #[test]
    fn a_refusal_to_stream_is_recognised() {
        assert!(refuses_streaming(400, r#"{"error":"stream is not supported"}"#));
        assert!(refuses_streaming(422, "Extra inputs are not permitted: stream_options"));
        assert!(!refuses_streaming(400, "bad request"));
        assert!(!refuses_streaming(429, "stream"));
    }
}
