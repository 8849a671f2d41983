//! Anthropic Message Batches: `POST /v1/messages/batches` with `{"requests": [{custom_id,
//! params}]}`, `GET /v1/messages/batches/{id}` until `processing_status` is `ended`, the
//! JSONL at `results_url` (one `{custom_id, result}` a line, in any order),
//! `POST /v1/messages/batches/{id}/cancel`, and the listing `GET /v1/messages/batches`
//! (newest first; `limit` up to 1000, the next page from `after_id` = the page's `last_id`
//! while `has_more`). A Message Batch has no metadata: a batch whose creation reply was lost
//! is told by its creation time, size and results ([`super::reconcile`]).

use std::sync::Arc;

use serde_json::{json, Value};

use super::results::ResultStream;
use super::transport::{text, Missing, Transport};
use super::{
    BatchApi, BatchCounts, BatchError, BatchItem, BatchLimits, BatchPage, BatchState, BatchStatus, BatchTimeouts,
    Chunker, Envelope, ItemOutcome, ItemResult, ListedBatch, Reply, SubmissionTag, SUBMITTING,
};
use crate::provider::openai::SchemaFormat;
use crate::provider::{BoxFuture, HttpConfig, ProviderKind};

const BATCHES: &str = "/messages/batches";

/// Batches a page of the listing asks for (the API takes 1 to 1000).
const LISTING_PAGE: usize = 100;

/// The Message Batches API of one Anthropic endpoint.
#[derive(Debug)]
pub struct AnthropicBatches {
    transport: Arc<Transport>,
}

impl AnthropicBatches {
    pub fn new(config: &HttpConfig, limits: BatchLimits, timeouts: BatchTimeouts) -> Result<Self, BatchError> {
        Ok(AnthropicBatches {
            transport: Arc::new(Transport::new(config, limits, timeouts)?),
        })
    }

    async fn create(&self, body: Vec<u8>) -> Result<BatchState, BatchError> {
        let t = &self.transport;
        let builder = t
            .request(reqwest::Method::POST, &t.url(BATCHES))
            .header("content-type", "application/json")
            .body(body);
        let reply = t
            .json(
                builder,
                SUBMITTING,
                t.timeouts.transfer,
                Missing::Endpoint("/v1/messages/batches"),
            )
            .await?;
        state(&reply).map_err(|reason| t.malformed(SUBMITTING, reason))
    }

    /// One page of the listing, newest first.
    async fn page(&self, after: Option<&str>) -> Result<BatchPage, BatchError> {
        self.transport
            .list_page(BATCHES, "after_id", after, LISTING_PAGE, |batch| {
                let state = state(batch)?;
                let created_at_ms = text(batch, "created_at")
                    .and_then(|at| at.parse::<jiff::Timestamp>().ok())
                    .map(jiff::Timestamp::as_millisecond)
                    .ok_or_else(|| format!("batch {} has no `created_at`", state.batch_id))?;
                Ok(ListedBatch {
                    state,
                    created_at_ms,
                    token: None,
                    tagged: false,
                })
            })
            .await
    }

    async fn get(&self, batch_id: &str) -> Result<BatchState, BatchError> {
        let t = &self.transport;
        let url = t.url(&format!("{BATCHES}/{batch_id}"));
        let builder = t.request(reqwest::Method::GET, &url);
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
        // `results_url` is where the results are; the key goes only to our own server
        // (the documented path otherwise).
        let url = match state.result_files.first() {
            Some(url) if t.same_origin(url) => url.clone(),
            _ => t.url(&format!("{BATCHES}/{}/results", state.batch_id)),
        };
        Ok(ResultStream::new(t.clone(), &state.batch_id, vec![url], parse_line))
    }

    /// Lists one batch: a server without the API answers 404.
    async fn list(&self) -> Result<(), BatchError> {
        let t = &self.transport;
        let builder = t.request(reqwest::Method::GET, &format!("{}?limit=1", t.url(BATCHES)));
        t.json(
            builder,
            "looking for the batch API",
            t.timeouts.control,
            Missing::Endpoint("/v1/messages/batches"),
        )
        .await
        .map(|_| ())
    }

    async fn request_cancel(&self, batch_id: &str) -> Result<BatchState, BatchError> {
        let t = &self.transport;
        let url = t.url(&format!("{BATCHES}/{batch_id}/cancel"));
        let builder = t.request(reqwest::Method::POST, &url);
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

impl BatchApi for AnthropicBatches {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn server(&self) -> &str {
        &self.transport.server
    }

    fn limits(&self) -> BatchLimits {
        self.transport.limits
    }

    fn chunker(&self) -> Chunker {
        Chunker::new(Envelope::JSON_REQUESTS, self.transport.limits)
    }

    fn encode(&self, item: &BatchItem) -> Result<Vec<u8>, BatchError> {
        let params = self.transport.wire.body(&item.request, SchemaFormat::JsonSchema);
        serde_json::to_vec(&json!({"custom_id": &item.custom_id, "params": params}))
            .map_err(|e| BatchError::Setup(format!("cannot encode request {}: {e}", item.custom_id)))
    }

    fn submit<'a>(&'a self, body: Vec<u8>, _: &'a SubmissionTag) -> BoxFuture<'a, Result<BatchState, BatchError>> {
        Box::pin(self.create(body))
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

/// A Message Batch object.
fn state(batch: &Value) -> Result<BatchState, String> {
    let batch_id = text(batch, "id").ok_or("no batch `id`")?;
    let provider_status = text(batch, "processing_status").ok_or("no `processing_status`")?;
    let status = match provider_status {
        "canceling" => BatchStatus::Canceling,
        "ended" => BatchStatus::Ended,
        // `in_progress`, and whatever a later API version adds: keep polling.
        _ => BatchStatus::InProgress,
    };
    let count = |name: &str| {
        batch
            .pointer(&format!("/request_counts/{name}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(BatchState {
        batch_id: batch_id.to_string(),
        status,
        provider_status: provider_status.to_string(),
        counts: BatchCounts {
            processing: count("processing"),
            succeeded: count("succeeded"),
            errored: count("errored"),
            canceled: count("canceled"),
            expired: count("expired"),
        },
        result_files: text(batch, "results_url").map(str::to_string).into_iter().collect(),
        errors: Vec::new(),
        over_token_limit: false,
    })
}

/// One line of the results: `{"custom_id", "result": {"type": …}}`.
fn parse_line(_: &Transport, line: &str) -> Result<ItemResult, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let custom_id = text(&value, "custom_id").ok_or("no `custom_id`")?.to_string();
    let result = value.get("result").ok_or("no `result`")?;
    let outcome = match text(result, "type").ok_or("no `result.type`")? {
        "succeeded" => {
            let message = result.get("message").ok_or("a succeeded result without `message`")?;
            ItemOutcome::Succeeded(Reply::new(ProviderKind::Anthropic, message.clone()))
        }
        "errored" => errored(result.get("error").unwrap_or(&Value::Null)),
        "canceled" => ItemOutcome::Canceled,
        "expired" => ItemOutcome::Expired,
        other => return Err(format!("unknown result type `{other}`")),
    };
    Ok(ItemResult { custom_id, outcome })
}

/// An errored result: the error response the request would have had realtime. An invalid
/// request fails again as it is; a server-side error may not.
fn errored(error: &Value) -> ItemOutcome {
    // `{"type": "error", "error": {"type", "message"}}`; the inner object alone is read too.
    let inner = error.get("error").filter(|e| e.is_object()).unwrap_or(error);
    let kind = text(inner, "type").unwrap_or("api_error");
    let message = text(inner, "message").unwrap_or("(no message)");
    let retryable = !matches!(
        kind,
        "invalid_request_error"
            | "authentication_error"
            | "permission_error"
            | "not_found_error"
            | "request_too_large"
            | "billing_error"
    );
    ItemOutcome::Errored {
        reason: format!("{kind}: {message}"),
        retryable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::CompletionRequest;

    fn api() -> AnthropicBatches {
        let config = HttpConfig {
            kind: ProviderKind::Anthropic,
            base_url: "https://api.anthropic.com".into(),
            api_key: None,
            model: "claude-haiku-5-5".into(),
            temperature: None,
            timeout: std::time::Duration::from_secs(5),
            connect_timeout: crate::provider::DEFAULT_CONNECT_TIMEOUT,
        };
        AnthropicBatches::new(&config, BatchLimits::ANTHROPIC, BatchTimeouts::default()).unwrap()
    }

    #[test]
    fn a_request_s_params_are_the_realtime_body() {
        let api = api();
        let request = CompletionRequest {
            system: "s".into(),
            shared: "every unit\n".into(),
            user: "this unit".into(),
            max_tokens: 100,
            ..CompletionRequest::default()
        };
        let item = BatchItem {
            custom_id: "u1".into(),
            request: request.clone(),
        };
        let encoded: Value = serde_json::from_slice(&api.encode(&item).unwrap()).unwrap();
        assert_eq!(encoded["custom_id"], "u1");
        assert_eq!(
            encoded["params"],
            crate::provider::anthropic::request_body("claude-haiku-5-5", &request, None)
        );
        let mut chunker = api.chunker();
        assert!(chunker.push("u1".into(), api.encode(&item).unwrap()).unwrap().is_none());
        let body: Value = serde_json::from_slice(&chunker.finish().unwrap().body).unwrap();
        assert_eq!(body["requests"][0], encoded);
    }

    #[test]
    fn reads_a_batch_object() {
        let batch = json!({
            "id": "msgbatch_01", "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": 2, "succeeded": 1, "errored": 1, "canceled": 0, "expired": 0},
            "results_url": null
        });
        let s = state(&batch).unwrap();
        assert_eq!(
            (s.status, s.counts.total(), s.counts.done()),
            (BatchStatus::InProgress, 4, 2)
        );
        assert!(s.result_files.is_empty());
        let ended = json!({"id": "msgbatch_01", "processing_status": "ended",
            "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_01/results"});
        let s = state(&ended).unwrap();
        assert!(s.has_ended());
        assert_eq!(s.result_files.len(), 1);
        assert!(state(&json!({"processing_status": "ended"})).is_err());
    }

    #[test]
    fn reads_each_kind_of_result() {
        let t = &api().transport;
        let ok = r#"{"custom_id":"a","result":{"type":"succeeded","message":{"id":"msg","type":"message","role":"assistant",
            "content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",
            "usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":90,"cache_creation_input_tokens":0}}}}"#;
        let r = parse_line(t, ok).unwrap();
        assert_eq!(r.custom_id, "a");
        let ItemOutcome::Succeeded(reply) = r.outcome else {
            panic!("not succeeded")
        };
        assert_eq!(reply.usage().input_tokens, 100);
        assert_eq!(reply.usage().cached_input_tokens, 90);
        assert_eq!(reply.completion(&CompletionRequest::default()).unwrap().text, "hi");

        let bad = r#"{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}}}"#;
        let ItemOutcome::Errored { reason, retryable } = parse_line(t, bad).unwrap().outcome else {
            panic!("not errored")
        };
        assert_eq!(reason, "invalid_request_error: max_tokens: too large");
        assert!(!retryable);
        let server = r#"{"custom_id":"c","result":{"type":"errored","error":{"type":"error","error":{"type":"api_error","message":"internal"}}}}"#;
        assert!(matches!(
            parse_line(t, server).unwrap().outcome,
            ItemOutcome::Errored { retryable: true, .. }
        ));
        let canceled = r#"{"custom_id":"d","result":{"type":"canceled"}}"#;
        assert!(matches!(
            parse_line(t, canceled).unwrap().outcome,
            ItemOutcome::Canceled
        ));
        let expired = r#"{"custom_id":"e","result":{"type":"expired"}}"#;
        assert!(matches!(parse_line(t, expired).unwrap().outcome, ItemOutcome::Expired));
        assert!(parse_line(t, r#"{"result":{"type":"expired"}}"#).is_err());
        assert!(parse_line(t, r#"{"custom_id":"f","result":{"type":"vanished"}}"#).is_err());
    }
}
