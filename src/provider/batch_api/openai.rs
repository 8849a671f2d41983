//! OpenAI Batch: the requests as a JSONL file (`{custom_id, method, url, body}` a line)
//! uploaded to `POST /v1/files` with `purpose=batch`, `POST /v1/batches` with the file,
//! `endpoint: /v1/chat/completions` and `completion_window: 24h`, `GET /v1/batches/{id}`
//! until it is `completed` (or `failed`, `expired`, `cancelled`), the output and error
//! files from `GET /v1/files/{id}/content` (one `{custom_id, response, error}` a line, in
//! any order), `POST /v1/batches/{id}/cancel`, and the listing `GET /v1/batches` (newest
//! first; `limit` up to 100, the next page from `after` = the page's `last_id` while
//! `has_more`). Each batch carries rlm's run and submission token as its `metadata`, so a
//! batch whose creation reply was lost is found by it ([`super::reconcile`]).
//!
//! An OpenAI-compatible server without these endpoints (Ollama, llama.cpp, LM Studio)
//! answers 404 or 405: [`BatchError::Unsupported`], naming the server.

use std::sync::Arc;

use serde_json::{json, Value};

use super::results::ResultStream;
use super::transport::{text, Missing, Transport};
use super::{
    BatchApi, BatchCounts, BatchError, BatchItem, BatchLimits, BatchPage, BatchState, BatchStatus, BatchTimeouts,
    Chunker, Envelope, ItemOutcome, ItemResult, ListedBatch, Reply, SubmissionTag, METADATA_RUN, METADATA_TOKEN,
    SUBMITTING,
};
use crate::provider::openai::SchemaFormat;
use crate::provider::status::classify_status;
use crate::provider::{BoxFuture, ErrorKind, HttpConfig, ProviderKind};

/// Batches a page of the listing asks for (the API takes 1 to 100).
const LISTING_PAGE: usize = 100;

/// The endpoint every request of a batch goes to.
const ENDPOINT: &str = "/v1/chat/completions";

/// The multipart boundary of an upload. JSONL written by serde_json never holds a carriage
/// return (JSON escapes it in strings), so the delimiter `\r\n--…` cannot occur in a file.
const BOUNDARY: &str = "rlm-batch-upload-7d1f0c2b9e";

/// The Batch API of one OpenAI(-compatible) endpoint.
#[derive(Debug)]
pub struct OpenAiBatches {
    transport: Arc<Transport>,
}

impl OpenAiBatches {
    pub fn new(config: &HttpConfig, limits: BatchLimits, timeouts: BatchTimeouts) -> Result<Self, BatchError> {
        Ok(OpenAiBatches {
            transport: Arc::new(Transport::new(config, limits, timeouts)?),
        })
    }

    async fn create(&self, body: Vec<u8>, tag: &SubmissionTag) -> Result<BatchState, BatchError> {
        let file_id = self.upload(body).await?;
        let t = &self.transport;
        let mut metadata = serde_json::Map::new();
        if !tag.run.is_empty() {
            metadata.insert(METADATA_RUN.into(), json!(tag.run));
        }
        metadata.insert(METADATA_TOKEN.into(), json!(tag.token));
        let create = json!({
            "input_file_id": &file_id,
            "endpoint": ENDPOINT,
            "completion_window": "24h",
            "metadata": metadata,
        });
        let builder = t
            .request(reqwest::Method::POST, &t.url("/batches"))
            .header("content-type", "application/json")
            .body(create.to_string());
        let created = t
            .json(
                builder,
                SUBMITTING,
                t.timeouts.control,
                Missing::Endpoint("/v1/batches"),
            )
            .await;
        let reply = match created {
            Ok(reply) => reply,
            // The batch may exist and read this file: it stays.
            Err(e) if e.is_outcome_unknown() => return Err(e),
            Err(e) => {
                // The uploaded file would stay in the account's storage for nothing.
                let delete = t.request(reqwest::Method::DELETE, &t.url(&format!("/files/{file_id}")));
                let _ = t
                    .send(delete, "deleting an unused batch file", t.timeouts.control)
                    .await;
                return Err(e);
            }
        };
        state(&reply).map_err(|reason| t.malformed(SUBMITTING, reason))
    }

    /// One page of the listing, newest first.
    async fn page(&self, after: Option<&str>) -> Result<BatchPage, BatchError> {
        self.transport
            .list_page("/batches", "after", after, LISTING_PAGE, |batch| {
                let state = state(batch)?;
                let created_at_ms = batch
                    .get("created_at")
                    .and_then(Value::as_i64)
                    .map(|secs| secs.saturating_mul(1000))
                    .ok_or_else(|| format!("batch {} has no `created_at`", state.batch_id))?;
                let metadata = batch.get("metadata").and_then(Value::as_object);
                Ok(ListedBatch {
                    state,
                    created_at_ms,
                    token: metadata
                        .and_then(|m| m.get(METADATA_TOKEN))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    tagged: metadata.is_some_and(|m| !m.is_empty()),
                })
            })
            .await
    }

    /// Uploads a JSONL file with `purpose=batch`; returns its id.
    async fn upload(&self, jsonl: Vec<u8>) -> Result<String, BatchError> {
        let t = &self.transport;
        let head = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
             --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"rlm-batch.jsonl\"\r\n\
             Content-Type: application/jsonl\r\n\r\n"
        );
        let tail = format!("\r\n--{BOUNDARY}--\r\n");
        // In place: the file can be 200 MB, and is not copied.
        let mut body = jsonl;
        body.splice(0..0, head.bytes());
        body.extend_from_slice(tail.as_bytes());
        let builder = t
            .request(reqwest::Method::POST, &t.url("/files"))
            .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
            .body(body);
        let reply = t
            .json(
                builder,
                "uploading a batch file",
                t.timeouts.transfer,
                Missing::Endpoint("/v1/files"),
            )
            .await?;
        text(&reply, "id")
            .map(str::to_string)
            .ok_or_else(|| t.malformed("uploading a batch file", "no file `id`".into()))
    }

    async fn get(&self, batch_id: &str) -> Result<BatchState, BatchError> {
        let t = &self.transport;
        let builder = t.request(reqwest::Method::GET, &t.url(&format!("/batches/{batch_id}")));
        let reply = t
            .json(builder, "polling a batch", t.timeouts.control, Missing::Batch(batch_id))
            .await?;
        state(&reply).map_err(|reason| t.malformed("polling a batch", reason))
    }

    /// The stream of an ended batch's results (opened lazily: nothing is fetched yet).
    fn open_results(&self, state: &BatchState) -> Result<ResultStream, BatchError> {
        if !state.has_ended() {
            return Err(BatchError::NotEnded {
                batch_id: state.batch_id.clone(),
                status: state.status,
            });
        }
        let t = &self.transport;
        if state.status == BatchStatus::Failed {
            let reason = match state.errors.as_slice() {
                [] => "the provider gave no reason".to_string(),
                errors => errors.join("; "),
            };
            return Err(BatchError::Failed {
                server: t.server.clone(),
                batch_id: state.batch_id.clone(),
                reason,
            });
        }
        let urls = state
            .result_files
            .iter()
            .map(|file| t.url(&format!("/files/{file}/content")))
            .collect();
        Ok(ResultStream::new(t.clone(), &state.batch_id, urls, parse_line))
    }

    /// Lists one batch: a server without the API answers 404.
    async fn list(&self) -> Result<(), BatchError> {
        let t = &self.transport;
        let builder = t.request(reqwest::Method::GET, &format!("{}?limit=1", t.url("/batches")));
        t.json(
            builder,
            "looking for the batch API",
            t.timeouts.control,
            Missing::Endpoint("/v1/batches"),
        )
        .await
        .map(|_| ())
    }

    async fn request_cancel(&self, batch_id: &str) -> Result<BatchState, BatchError> {
        let t = &self.transport;
        let builder = t.request(reqwest::Method::POST, &t.url(&format!("/batches/{batch_id}/cancel")));
        let reply = t
            .json(
                builder,
                "canceling a batch",
                t.timeouts.control,
                Missing::Batch(batch_id),
            )
            .await?;
        state(&reply).map_err(|reason| t.malformed("canceling a batch", reason))
    }
}

impl BatchApi for OpenAiBatches {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn server(&self) -> &str {
        &self.transport.server
    }

    fn limits(&self) -> BatchLimits {
        self.transport.limits
    }

    fn chunker(&self) -> Chunker {
        Chunker::new(Envelope::JSONL, self.transport.limits)
    }

    fn encode(&self, item: &BatchItem) -> Result<Vec<u8>, BatchError> {
        let body = self.transport.wire.body(&item.request, SchemaFormat::JsonSchema);
        let line = json!({"custom_id": &item.custom_id, "method": "POST", "url": ENDPOINT, "body": body});
        serde_json::to_vec(&line)
            .map_err(|e| BatchError::Setup(format!("cannot encode request {}: {e}", item.custom_id)))
    }

    fn submit<'a>(&'a self, body: Vec<u8>, tag: &'a SubmissionTag) -> BoxFuture<'a, Result<BatchState, BatchError>> {
        Box::pin(self.create(body, tag))
    }

    fn list_page<'a>(&'a self, after: Option<&'a str>) -> BoxFuture<'a, Result<BatchPage, BatchError>> {
        Box::pin(self.page(after))
    }

    fn poll<'a>(&'a self, batch_id: &'a str) -> BoxFuture<'a, Result<BatchState, BatchError>> {
        Box::pin(self.get(batch_id))
    }

    fn results<'a>(&'a self, state: &'a BatchState) -> BoxFuture<'a, Result<ResultStream, BatchError>> {
        Box::pin(std::future::ready(self.open_results(state)))
    }

    fn cancel<'a>(&'a self, batch_id: &'a str) -> BoxFuture<'a, Result<BatchState, BatchError>> {
        Box::pin(self.request_cancel(batch_id))
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), BatchError>> {
        Box::pin(self.list())
    }
}

/// A Batch object.
fn state(batch: &Value) -> Result<BatchState, String> {
    let batch_id = text(batch, "id").ok_or("no batch `id`")?;
    let provider_status = text(batch, "status").ok_or("no batch `status`")?;
    let status = match provider_status {
        "validating" => BatchStatus::Validating,
        "finalizing" => BatchStatus::Finalizing,
        "cancelling" => BatchStatus::Canceling,
        "completed" => BatchStatus::Ended,
        "failed" => BatchStatus::Failed,
        "expired" => BatchStatus::Expired,
        "cancelled" => BatchStatus::Canceled,
        // `in_progress`, and whatever a later API version adds: keep polling.
        _ => BatchStatus::InProgress,
    };
    let count = |name: &str| {
        batch
            .pointer(&format!("/request_counts/{name}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (total, completed, failed) = (count("total"), count("completed"), count("failed"));
    let rest = total.saturating_sub(completed + failed);
    // OpenAI counts only completed and failed requests; once the batch has ended, the rest
    // expired or was canceled with it.
    let mut counts = BatchCounts {
        succeeded: completed,
        errored: failed,
        ..BatchCounts::default()
    };
    match status {
        BatchStatus::Expired => counts.expired = rest,
        BatchStatus::Canceled => counts.canceled = rest,
        BatchStatus::Failed | BatchStatus::Ended => counts.errored += rest,
        _ => counts.processing = rest,
    }
    let result_files = ["output_file_id", "error_file_id"]
        .iter()
        .filter_map(|field| text(batch, field))
        .map(str::to_string)
        .collect();
    let errors = batch
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let message = text(e, "message").unwrap_or("(no message)");
                    match (e.get("line").and_then(Value::as_u64), text(e, "code")) {
                        (Some(line), Some(code)) => format!("line {line}: {message} ({code})"),
                        (None, Some(code)) => format!("{message} ({code})"),
                        (Some(line), None) => format!("line {line}: {message}"),
                        (None, None) => message.to_string(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let over_token_limit = batch
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .is_some_and(|errors| errors.iter().any(|e| text(e, "code") == Some("token_limit_exceeded")));
    Ok(BatchState {
        batch_id: batch_id.to_string(),
        status,
        provider_status: provider_status.to_string(),
        counts,
        result_files,
        errors,
        over_token_limit,
    })
}

/// One line of the output or error file: `{"custom_id", "response": {status_code, body},
/// "error": {code, message} | null}`.
fn parse_line(t: &Transport, line: &str) -> Result<ItemResult, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let custom_id = text(&value, "custom_id").ok_or("no `custom_id`")?.to_string();
    let outcome = match value.get("error").filter(|e| !e.is_null()) {
        Some(error) => {
            let code = text(error, "code").unwrap_or("error");
            match code {
                "batch_expired" => ItemOutcome::Expired,
                "batch_cancelled" => ItemOutcome::Canceled,
                _ => ItemOutcome::Errored {
                    reason: format!("{code}: {}", text(error, "message").unwrap_or("(no message)")),
                    // `request_timeout` and the rest are the provider's trouble, not the
                    // request's.
                    retryable: true,
                },
            }
        }
        None => {
            let response = value
                .get("response")
                .filter(|r| !r.is_null())
                .ok_or("neither `response` nor `error`")?;
            let status = response
                .get("status_code")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .ok_or("no `response.status_code`")?;
            let body = response.get("body").cloned().unwrap_or(Value::Null);
            if (200..300).contains(&status) {
                ItemOutcome::Succeeded(Reply::new(ProviderKind::Openai, body))
            } else {
                let error = classify_status(
                    ProviderKind::Openai,
                    status,
                    &body.to_string(),
                    None,
                    None,
                    &t.wire.model,
                );
                ItemOutcome::Errored {
                    reason: error.reason,
                    retryable: !matches!(error.kind, ErrorKind::Fatal | ErrorKind::Unit),
                }
            }
        }
    };
    Ok(ItemResult { custom_id, outcome })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::CompletionRequest;

    fn api(base_url: &str) -> OpenAiBatches {
        let config = HttpConfig {
            kind: ProviderKind::Openai,
            base_url: base_url.into(),
            api_key: None,
            model: "gpt-4.1-mini".into(),
            temperature: None,
            timeout: std::time::Duration::from_secs(5),
            connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT,
        };
        OpenAiBatches::new(&config, BatchLimits::OPENAI, BatchTimeouts::default()).unwrap()
    }

    #[test]
    fn a_line_s_body_is_the_realtime_body() {
        let request = CompletionRequest {
            system: "s".into(),
            shared: "every unit\n".into(),
            user: "this unit".into(),
            max_tokens: 100,
            cache_prefix: true,
            ..CompletionRequest::default()
        };
        for base in ["https://api.openai.com", "http://127.0.0.1:8000/v1"] {
            let api = api(base);
            let item = BatchItem {
                custom_id: "u1".into(),
                request: request.clone(),
            };
            let line: Value = serde_json::from_slice(&api.encode(&item).unwrap()).unwrap();
            assert_eq!(line["custom_id"], "u1");
            assert_eq!(line["method"], "POST");
            assert_eq!(line["url"], "/v1/chat/completions");
            let realtime = crate::provider::openai::request_body(
                "gpt-4.1-mini",
                &request,
                None,
                crate::provider::openai::Dialect::of(base),
            );
            assert_eq!(line["body"], realtime);
            assert_eq!(
                line["body"].get("prompt_cache_key").is_some(),
                base.contains("api.openai.com")
            );
        }
    }

    #[test]
    fn reads_a_batch_object() {
        let running = json!({"id": "batch_1", "object": "batch", "status": "in_progress",
            "request_counts": {"total": 10, "completed": 4, "failed": 1}, "output_file_id": null});
        let s = state(&running).unwrap();
        assert_eq!(s.status, BatchStatus::InProgress);
        assert_eq!(
            s.counts,
            BatchCounts {
                processing: 5,
                succeeded: 4,
                errored: 1,
                ..BatchCounts::default()
            }
        );
        let expired = json!({"id": "batch_1", "status": "expired",
            "request_counts": {"total": 10, "completed": 4, "failed": 1},
            "output_file_id": "file-out", "error_file_id": "file-err"});
        let s = state(&expired).unwrap();
        assert!(s.has_ended());
        assert_eq!((s.counts.expired, s.counts.processing), (5, 0));
        assert_eq!(s.result_files, ["file-out", "file-err"]);
        let failed = json!({"id": "batch_2", "status": "failed", "errors": {"object": "list", "data": [
            {"code": "too_many_requests", "message": "The batch has more than 50000 requests.", "line": null}]}});
        let s = state(&failed).unwrap();
        assert_eq!(s.status, BatchStatus::Failed);
        assert_eq!(
            s.errors,
            ["The batch has more than 50000 requests. (too_many_requests)"]
        );
        assert!(!s.over_token_limit);
        let queue_full = json!({"id": "batch_3", "status": "failed", "errors": {"object": "list", "data": [
            {"code": "token_limit_exceeded", "message": "Enqueued token limit reached for gpt-4.1-mini.",
             "line": null}]}});
        assert!(state(&queue_full).unwrap().over_token_limit);
    }

    #[test]
    fn reads_each_kind_of_line() {
        let api = api("https://api.openai.com");
        let t = &api.transport;
        let ok = r#"{"id":"r1","custom_id":"a","response":{"status_code":200,"request_id":"x","body":{
            "choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":64}}}},"error":null}"#;
        let ItemOutcome::Succeeded(reply) = parse_line(t, ok).unwrap().outcome else {
            panic!("not succeeded")
        };
        assert_eq!(reply.usage().cached_input_tokens, 64);
        assert_eq!(reply.completion(&CompletionRequest::default()).unwrap().text, "hi");
        let refused = r#"{"id":"r2","custom_id":"b","response":{"status_code":400,"body":{"error":{
            "message":"This model's maximum context length is 128000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}},"error":null}"#;
        let ItemOutcome::Errored { reason, retryable } = parse_line(t, refused).unwrap().outcome else {
            panic!("not errored")
        };
        assert!(reason.contains("maximum context length"), "{reason}");
        assert!(!retryable);
        let server =
            r#"{"custom_id":"c","response":{"status_code":500,"body":{"error":{"message":"oops"}}},"error":null}"#;
        assert!(matches!(
            parse_line(t, server).unwrap().outcome,
            ItemOutcome::Errored { retryable: true, .. }
        ));
        let expired =
            r#"{"custom_id":"d","response":null,"error":{"code":"batch_expired","message":"not run in time"}}"#;
        assert!(matches!(parse_line(t, expired).unwrap().outcome, ItemOutcome::Expired));
        let canceled = r#"{"custom_id":"e","response":null,"error":{"code":"batch_cancelled","message":"canceled"}}"#;
        assert!(matches!(
            parse_line(t, canceled).unwrap().outcome,
            ItemOutcome::Canceled
        ));
        assert!(parse_line(t, r#"{"custom_id":"f","response":null,"error":null}"#).is_err());
    }
}
