//! The mock's batch APIs: Anthropic Message Batches and OpenAI Batch (with its Files).
//!
//! Routes (with the mock's key check; Anthropic's also need `anthropic-version`):
//! - `GET /v1/messages/batches` (a listing of the batch objects, newest first, `limit` and
//!   `after_id` as the API takes them),
//!   `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
//!   `GET /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel`;
//! - `POST /v1/files` (multipart, `purpose=batch`), `GET /v1/files/{id}/content`,
//!   `DELETE /v1/files/{id}`, `GET /v1/batches` (a listing, newest first, `limit` and
//!   `after`; each batch with the `metadata` it was created with), `POST /v1/batches`,
//!   `GET /v1/batches/{id}`,
//!   `POST /v1/batches/{id}/cancel`.
//!
//! A batch advances when it is polled: by default it has ended at its first poll;
//! [`BatchProgress`] spreads the work over several polls or over time, or holds it (to
//! cancel it), for every batch or from the k-th submission on
//! ([`MockLlm::set_batch_progress_from`]). [`MockLlm::forget_batches`] makes the mock forget
//! its batches (a 404 for each, as for a deleted batch or another key's). Each request is answered, when its turn comes, exactly as the realtime
//! endpoint would answer it (same reply rule, same usage and prompt cache), unless a
//! [`BatchFault`] queued for a needle in its body says otherwise. Results come in a
//! shuffled order (by a hash of the custom id). Submissions above the limits
//! ([`MockLlm::set_batch_limits`]) are refused the way each provider refuses them. Counters
//! say how many submissions, polls, cancels and refusals the mock saw.
//!
//! The listing shows each batch where it is by now (one that advances by time has ended
//! in it); [`MockLlm::fail_batch_listings`] makes the next listings fail.
//!
//! A create request can be made to lose its reply ([`SubmitFault`], queued with
//! [`MockLlm::batch_submit_faults`]): the connection reset, a 500 or a reply that never
//! comes, after the batch was created or before.
//!
//! Batch requests are not model requests: they do not count in `requests()` or
//! `recorded()`, and the realtime fault queues do not apply to them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{body_contains, error_body, normal_reply, Api, MockLlm, Request, Response, State};

/// How a batch advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchProgress {
    /// Done at its `n`-th poll (a share of its requests at each poll before); `0`: done
    /// when created.
    AfterPolls(u32),
    /// Done this long after it was created (a share of it before).
    AfterTime(Duration),
    /// Never done by itself: it waits to be canceled.
    Held,
    /// Its first `n` requests done at its first poll, the rest held until it is canceled.
    HeldAfter(usize),
}

/// How an Anthropic results download fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsFault {
    /// A 503: the download can be tried again.
    Unavailable,
    /// The results, with a line that is not JSON first.
    MalformedLine,
}

/// What a request of a batch gets instead of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchFault {
    /// An error result: a server error when `retryable`, an invalid request otherwise.
    Errored { retryable: bool },
    /// Not run within the completion window.
    Expired,
    /// Canceled (as if the batch had been canceled before it ran).
    Canceled,
}

/// What a create request (`POST /v1/messages/batches`, `POST /v1/batches`) gets instead of
/// its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // each name says whether the batch exists: that is the point
pub enum SubmitFault {
    /// The batch is created, then the connection is reset: the reply is lost.
    ResetAfterCreate,
    /// The batch is created, then a 500 is answered.
    ServerErrorAfterCreate,
    /// A 500, and nothing is created.
    ServerErrorBeforeCreate,
    /// The batch is created and the reply never comes (the connection stays open until the
    /// client goes: a `kill -9` while the create request is in flight).
    HangAfterCreate,
    /// The reply never comes, and nothing is created.
    HangBeforeCreate,
}

/// What a batch route does with its connection.
pub(super) enum RouteAction {
    Respond(Response),
    /// Close the connection without a reply (RST).
    Reset,
    /// Never reply.
    Hang,
    /// A 200 JSON body without `content-length`, then close.
    Unbounded(Vec<u8>),
}

/// A request a batch was submitted with.
#[derive(Debug, Clone)]
pub struct BatchRequestRecorded {
    pub batch_id: String,
    pub custom_id: String,
    /// The Anthropic `params` or the OpenAI line's `body`.
    pub body: Value,
}

#[derive(Default)]
pub(super) struct Batches {
    inner: Mutex<Inner>,
}

struct Inner {
    /// The status with which every batch route answers (404, 405) when set: a server
    /// without a batch API.
    disabled: Option<u16>,
    max_requests: usize,
    max_bytes: usize,
    progress: BatchProgress,
    /// OpenAI's enqueued-token limit, counted in requests: a batch that would pass it fails
    /// at validation with `token_limit_exceeded`.
    queue_limit: Option<usize>,
    /// From the k-th submission (1-based) on, batches advance this way instead.
    progress_from: Option<(usize, BatchProgress)>,
    faults: Vec<(String, VecDeque<BatchFault>)>,
    submit_faults: VecDeque<SubmitFault>,
    /// A canceled batch stays `canceling` (its requests in flight never finish).
    cancel_holds: bool,
    /// The next listings answer this status, this many times (a listing that cannot be
    /// read: a 5xx, or a 404 under a wrong key or base URL).
    listing_failures: (usize, u16),
    /// Lines the next Anthropic results leave out (a provider's results file missing
    /// requests it counts as succeeded).
    results_dropped: usize,
    /// How the next Anthropic results downloads fail, one each.
    results_faults: VecDeque<ResultsFault>,
    /// The next this-many polls pad their reply with this many spaces (valid JSON), sent
    /// without a `content-length`: a server that sends far more than a batch's state.
    poll_padding: (usize, usize),
    files: HashMap<String, Vec<u8>>,
    batches: Vec<MockBatch>,
    recorded: Vec<BatchRequestRecorded>,
    next_id: u64,
    submissions: usize,
    uploads: usize,
    polls: usize,
    cancels: usize,
    refusals: usize,
    result_fetches: usize,
    listings: usize,
    /// Requests to any batch route, answered or refused.
    calls: usize,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            disabled: None,
            max_requests: 100_000,
            max_bytes: 256_000_000,
            progress: BatchProgress::AfterPolls(1),
            progress_from: None,
            queue_limit: None,
            faults: Vec::new(),
            submit_faults: VecDeque::new(),
            cancel_holds: false,
            listing_failures: (0, 500),
            results_dropped: 0,
            results_faults: VecDeque::new(),
            poll_padding: (0, 0),
            files: HashMap::new(),
            batches: Vec::new(),
            recorded: Vec::new(),
            next_id: 1,
            submissions: 0,
            uploads: 0,
            polls: 0,
            cancels: 0,
            refusals: 0,
            result_fetches: 0,
            listings: 0,
            calls: 0,
        }
    }
}

impl Batches {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How one request of a batch ended.
#[derive(Debug, Clone)]
enum Outcome {
    Succeeded(Value),
    Errored { retryable: bool },
    Expired,
    Canceled,
}

struct MockBatch {
    id: String,
    /// 1 for the first submission accepted.
    ordinal: usize,
    api: Api,
    created: Instant,
    /// When it was created, Unix milliseconds (the listing's `created_at`).
    created_at_ms: i64,
    /// OpenAI: the `metadata` it was created with.
    metadata: Value,
    polls: u32,
    /// `(custom_id, body)` in submission order.
    requests: Vec<(String, Value)>,
    outcomes: Vec<Outcome>,
    cancel_requested: bool,
    finished: bool,
    /// OpenAI: refused at validation (`failed`), with the error code and why.
    failed: Option<(&'static str, String)>,
    input_file_id: Option<String>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
}

impl MockLlm {
    /// Every batch route answers `status` (404 or 405), like an OpenAI-compatible server
    /// without a batch API; `None` serves them again.
    pub fn disable_batch_api(&self, status: Option<u16>) {
        self.state.batches.lock().disabled = status;
    }

    /// The most requests and bytes a batch may hold (defaults: 100,000 and 256 MB).
    pub fn set_batch_limits(&self, max_requests: usize, max_bytes: usize) {
        let mut inner = self.state.batches.lock();
        inner.max_requests = max_requests;
        inner.max_bytes = max_bytes;
    }

    /// How batches advance (default: done at the first poll).
    pub fn set_batch_progress(&self, progress: BatchProgress) {
        self.state.batches.lock().progress = progress;
    }

    /// How batches advance from the `k`-th submission (1-based) on; the earlier ones as
    /// [`MockLlm::set_batch_progress`] says.
    pub fn set_batch_progress_from(&self, k: usize, progress: BatchProgress) {
        self.state.batches.lock().progress_from = Some((k, progress));
    }

    /// OpenAI batches fail at validation with `token_limit_exceeded` when the requests of
    /// the batches not ended yet and theirs pass `requests` (the account's enqueued-token
    /// limit, counted in requests).
    pub fn set_batch_queue_limit(&self, requests: usize) {
        self.state.batches.lock().queue_limit = Some(requests);
    }

    /// Numbers the next batches (and files) from `n` on: two mocks in one test then never
    /// hand out the same batch id, as two real providers never do.
    pub fn number_batches_from(&self, n: u64) {
        self.state.batches.lock().next_id = n;
    }

    /// Forgets every batch: polls, results and cancels of them get a 404, as for a batch
    /// deleted at the provider or submitted under another API key.
    pub fn forget_batches(&self) {
        self.state.batches.lock().batches.clear();
    }

    /// Requests of a batch whose body contains `needle` get these faults, one each, in
    /// order (like [`MockLlm::fault_when`] for realtime calls).
    pub fn batch_fault_when(&self, needle: &str, faults: Vec<BatchFault>) {
        let mut inner = self.state.batches.lock();
        if let Some((_, q)) = inner.faults.iter_mut().find(|(n, _)| n == needle) {
            q.extend(faults);
        } else {
            inner.faults.push((needle.to_string(), faults.into()));
        }
    }

    /// The next create requests get these faults, one each, in order.
    pub fn batch_submit_faults(&self, faults: Vec<SubmitFault>) {
        self.state.batches.lock().submit_faults.extend(faults);
    }

    /// The next `times` listings of batches answer `status` (and show nothing); a listing
    /// of one (rlm's probe for the batch API, before a run starts) is answered.
    pub fn fail_batch_listings(&self, times: usize, status: u16) {
        self.state.batches.lock().listing_failures = (times, status);
    }

    /// The next Anthropic results file leaves out its first `n` lines (their requests still
    /// count as succeeded in the batch's counts).
    pub fn drop_batch_result_lines(&self, n: usize) {
        self.state.batches.lock().results_dropped = n;
    }

    /// The next Anthropic results downloads fail as `faults` say, one each.
    pub fn batch_results_faults(&self, faults: Vec<ResultsFault>) {
        self.state.batches.lock().results_faults = faults.into();
    }

    /// The next `times` polls pad their reply with `bytes` spaces (see `Inner::poll_padding`).
    pub fn pad_batch_polls(&self, times: usize, bytes: usize) {
        self.state.batches.lock().poll_padding = (times, bytes);
    }

    /// Whether a canceled batch stays `canceling` instead of ending at its next poll.
    pub fn set_batch_cancel_holds(&self, holds: bool) {
        self.state.batches.lock().cancel_holds = holds;
    }

    /// The `metadata` each batch accepted was created with (OpenAI), in order.
    pub fn batch_metadata(&self) -> Vec<Value> {
        self.state
            .batches
            .lock()
            .batches
            .iter()
            .map(|b| b.metadata.clone())
            .collect()
    }

    /// Batches accepted.
    pub fn batch_submissions(&self) -> usize {
        self.state.batches.lock().submissions
    }

    /// Submissions refused for their size (Anthropic) or failed at validation (OpenAI).
    pub fn batch_refusals(&self) -> usize {
        self.state.batches.lock().refusals
    }

    /// Files uploaded (OpenAI).
    pub fn batch_uploads(&self) -> usize {
        self.state.batches.lock().uploads
    }

    /// Polls of any batch.
    pub fn batch_polls(&self) -> usize {
        self.state.batches.lock().polls
    }

    /// Cancels asked for.
    pub fn batch_cancels(&self) -> usize {
        self.state.batches.lock().cancels
    }

    /// Listings of batches (`GET /v1/batches`, `GET /v1/messages/batches`).
    pub fn batch_listings(&self) -> usize {
        self.state.batches.lock().listings
    }

    /// Every request to a batch route (submissions, uploads, polls, cancels, listings,
    /// results): what "no network call" is measured by.
    pub fn batch_calls(&self) -> usize {
        self.state.batches.lock().calls
    }

    /// Results downloads (Anthropic results, OpenAI output and error files).
    pub fn batch_result_fetches(&self) -> usize {
        self.state.batches.lock().result_fetches
    }

    /// The number of requests of each batch accepted, in order.
    pub fn batch_sizes(&self) -> Vec<usize> {
        self.state
            .batches
            .lock()
            .batches
            .iter()
            .map(|b| b.requests.len())
            .collect()
    }

    /// Every request of every batch accepted, in submission order.
    pub fn batch_requests(&self) -> Vec<BatchRequestRecorded> {
        self.state.batches.lock().recorded.clone()
    }
}

/// Answers a batch route; `None` when `req` is not one.
pub(super) fn route(state: &State, req: &Request) -> Option<RouteAction> {
    let creates = matches!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/messages/batches" | "/v1/batches")
    );
    let fault = if creates {
        let mut inner = state.batches.lock();
        let fault = inner.submit_faults.pop_front();
        if matches!(
            fault,
            Some(SubmitFault::ServerErrorBeforeCreate | SubmitFault::HangBeforeCreate)
        ) {
            // (Answered here, not by `answer`, which counts the others.)
            inner.calls += 1;
        }
        fault
    } else {
        None
    };
    let api = if req.path.starts_with("/v1/messages/") {
        Api::Anthropic
    } else {
        Api::OpenAi
    };
    if fault == Some(SubmitFault::ServerErrorBeforeCreate) {
        return Some(RouteAction::Respond(Response::json(
            500,
            &error_body(api, 500, "mock: internal server error (nothing created)"),
        )));
    }
    if fault == Some(SubmitFault::HangBeforeCreate) {
        return Some(RouteAction::Hang);
    }
    let response = answer(state, req)?;
    let polled = req.method == "GET"
        && response.status == 200
        && matches!(
            req.path
                .trim_start_matches('/')
                .split('/')
                .collect::<Vec<_>>()
                .as_slice(),
            ["v1", "messages", "batches", _] | ["v1", "batches", _]
        );
    if polled {
        let mut inner = state.batches.lock();
        if inner.poll_padding.0 > 0 {
            inner.poll_padding.0 -= 1;
            let mut body = response.body;
            let close = body.pop().unwrap_or(b'}');
            body.resize(body.len() + inner.poll_padding.1, b' ');
            body.push(close);
            return Some(RouteAction::Unbounded(body));
        }
    }
    Some(match fault {
        Some(_) if response.status != 200 => RouteAction::Respond(response),
        Some(SubmitFault::ResetAfterCreate) => RouteAction::Reset,
        Some(SubmitFault::HangAfterCreate) => RouteAction::Hang,
        Some(SubmitFault::ServerErrorAfterCreate) => RouteAction::Respond(Response::json(
            500,
            &error_body(api, 500, "mock: internal server error"),
        )),
        Some(SubmitFault::ServerErrorBeforeCreate | SubmitFault::HangBeforeCreate) | None => {
            RouteAction::Respond(response)
        }
    })
}

/// The reply of a batch route; `None` when `req` is not one (or the batch API is disabled).
fn answer(state: &State, req: &Request) -> Option<Response> {
    let segments: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    let api = match segments.as_slice() {
        ["v1", "messages", "batches", ..] => Api::Anthropic,
        ["v1", "batches", ..] | ["v1", "files", ..] => Api::OpenAi,
        _ => return None,
    };
    let disabled = {
        let mut inner = state.batches.lock();
        inner.calls += 1;
        inner.disabled
    };
    if let Some(status) = disabled {
        let message = format!("mock: no route for {} {}", req.method, req.path);
        return Some(Response::json(status, &error_body(api, status, &message)));
    }
    if let Some(refusal) = check_auth(state, api, req) {
        return Some(refusal);
    }
    let method = req.method.as_str();
    Some(match (method, segments.as_slice()) {
        ("POST", ["v1", "messages", "batches"]) => anthropic_create(state, req),
        ("GET", ["v1", "messages", "batches"]) => list(state, api, req),
        ("GET", ["v1", "messages", "batches", id]) => poll(state, api, id, req),
        ("GET", ["v1", "messages", "batches", id, "results"]) => anthropic_results(state, id),
        ("POST", ["v1", "messages", "batches", id, "cancel"]) => cancel(state, api, id, req),
        ("POST", ["v1", "files"]) => upload(state, req),
        ("GET", ["v1", "files", id, "content"]) => file_content(state, id),
        ("DELETE", ["v1", "files", id]) => delete_file(state, id),
        ("POST", ["v1", "batches"]) => openai_create(state, req),
        ("GET", ["v1", "batches"]) => list(state, api, req),
        ("GET", ["v1", "batches", id]) => poll(state, api, id, req),
        ("POST", ["v1", "batches", id, "cancel"]) => cancel(state, api, id, req),
        _ => {
            let message = format!("mock: no route for {} {}", req.method, req.path);
            Response::json(404, &error_body(api, 404, &message))
        }
    })
}

fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn check_auth(state: &State, api: Api, req: &Request) -> Option<Response> {
    let key = state.lock().key.clone();
    let ok = match (&key, api) {
        (None, _) => true,
        (Some(key), Api::Anthropic) => header(req, "x-api-key") == Some(key.as_str()),
        (Some(key), Api::OpenAi) => header(req, "authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|v| v.trim() == key),
    };
    if !ok {
        return Some(Response::json(401, &error_body(api, 401, "mock: invalid API key")));
    }
    if api == Api::Anthropic && header(req, "anthropic-version").is_none() {
        return Some(Response::json(
            400,
            &error_body(api, 400, "mock: anthropic-version: header is required"),
        ));
    }
    None
}

fn not_found(api: Api, what: &str) -> Response {
    Response::json(404, &error_body(api, 404, &format!("mock: no {what}")))
}

/// A listing of the batches of `api`, newest first, a page of `limit` (default 20) after
/// the batch `after_id` (Anthropic) or `after` (OpenAI).
fn list(state: &State, api: Api, req: &Request) -> Response {
    let param = |name: &str| {
        req.query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(20).max(1);
    let after = param(if api == Api::Anthropic { "after_id" } else { "after" });
    let mut inner = state.batches.lock();
    inner.listings += 1;
    // (rlm's probe, a listing of one before the run starts, is answered.)
    if inner.listing_failures.0 > 0 && limit != 1 {
        inner.listing_failures.0 -= 1;
        let status = inner.listing_failures.1;
        return Response::json(status, &error_body(api, status, "mock: the listing failed"));
    }
    // A batch runs whether it is polled or not: the listing shows where it is by now (a
    // batch that advances by time has ended in it; one that advances by polls has not).
    let mut batches = std::mem::take(&mut inner.batches);
    for batch in batches.iter_mut().filter(|b| b.api == api) {
        advance(state, &mut inner, batch);
    }
    inner.batches = batches;
    let newest_first: Vec<&MockBatch> = inner.batches.iter().rev().filter(|b| b.api == api).collect();
    let start = match &after {
        Some(id) => match newest_first.iter().position(|b| &b.id == id) {
            Some(i) => i + 1,
            None => return not_found(api, "such batch to list after"),
        },
        None => 0,
    };
    let page: Vec<&MockBatch> = newest_first.iter().skip(start).take(limit).copied().collect();
    let has_more = start + page.len() < newest_first.len();
    let data: Vec<Value> = page
        .iter()
        .map(|b| match api {
            Api::Anthropic => anthropic_view(b, req),
            Api::OpenAi => openai_view(b, "in_progress"),
        })
        .collect();
    let first_id = page.first().map(|b| b.id.clone());
    let last_id = page.last().map(|b| b.id.clone());
    let mut listing = json!({"data": data, "has_more": has_more, "first_id": first_id, "last_id": last_id});
    if api == Api::OpenAi {
        listing["object"] = json!("list");
    }
    Response::json(200, &listing)
}

fn anthropic_create(state: &State, req: &Request) -> Response {
    let api = Api::Anthropic;
    let mut inner = state.batches.lock();
    if req.body.len() > inner.max_bytes {
        inner.refusals += 1;
        let message = format!(
            "mock: request body is {} bytes, above {}",
            req.body.len(),
            inner.max_bytes
        );
        return Response::json(413, &error_body(api, 413, &message));
    }
    let Some(requests) = serde_json::from_slice::<Value>(&req.body)
        .ok()
        .and_then(|v| v.get("requests").and_then(Value::as_array).cloned())
    else {
        return Response::json(400, &error_body(api, 400, "mock: requests: field required"));
    };
    if requests.is_empty() || requests.len() > inner.max_requests {
        inner.refusals += 1;
        let message = format!("mock: requests: between 1 and {} items", inner.max_requests);
        return Response::json(400, &error_body(api, 400, &message));
    }
    let mut parsed = Vec::with_capacity(requests.len());
    for r in requests {
        let (Some(custom_id), Some(params)) = (r.get("custom_id").and_then(Value::as_str), r.get("params")) else {
            return Response::json(
                400,
                &error_body(api, 400, "mock: each request needs custom_id and params"),
            );
        };
        if !params.get("messages").is_some_and(Value::is_array) {
            return Response::json(400, &error_body(api, 400, "mock: params.messages: field required"));
        }
        if parsed.iter().any(|(id, _): &(String, Value)| id == custom_id) {
            let message = format!("mock: duplicate custom_id {custom_id}");
            return Response::json(400, &error_body(api, 400, &message));
        }
        parsed.push((custom_id.to_string(), params.clone()));
    }
    let id = format!("msgbatch_mock_{}", inner.next_id);
    inner.next_id += 1;
    let mut batch = new_batch(&mut inner, id, api, parsed, None);
    if inner.progress == BatchProgress::AfterPolls(0) && inner.progress_from.is_none() {
        advance(state, &mut inner, &mut batch);
    }
    let view = anthropic_view(&batch, req);
    inner.batches.push(batch);
    Response::json(200, &view)
}

fn new_batch(
    inner: &mut Inner,
    id: String,
    api: Api,
    requests: Vec<(String, Value)>,
    input_file_id: Option<String>,
) -> MockBatch {
    inner.submissions += 1;
    let ordinal = inner.submissions;
    for (custom_id, body) in &requests {
        inner.recorded.push(BatchRequestRecorded {
            batch_id: id.clone(),
            custom_id: custom_id.clone(),
            body: body.clone(),
        });
    }
    MockBatch {
        id,
        ordinal,
        api,
        created: Instant::now(),
        created_at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
        metadata: Value::Null,
        polls: 0,
        outcomes: Vec::with_capacity(requests.len()),
        requests,
        cancel_requested: false,
        finished: false,
        failed: None,
        input_file_id,
        output_file_id: None,
        error_file_id: None,
    }
}

fn upload(state: &State, req: &Request) -> Response {
    let api = Api::OpenAi;
    let Some(boundary) = header(req, "content-type")
        .and_then(|ct| ct.split(';').find_map(|p| p.trim().strip_prefix("boundary=")))
        .map(|b| b.trim_matches('"').to_string())
    else {
        return Response::json(
            400,
            &error_body(api, 400, "mock: a multipart/form-data body is required"),
        );
    };
    let parts = multipart(&req.body, &boundary);
    let field = |name: &str| parts.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
    if field("purpose") != Some(b"batch".as_slice()) {
        return Response::json(400, &error_body(api, 400, "mock: purpose: must be batch"));
    }
    let Some(file) = field("file") else {
        return Response::json(400, &error_body(api, 400, "mock: file: field required"));
    };
    let mut inner = state.batches.lock();
    if file.len() > inner.max_bytes {
        inner.refusals += 1;
        let message = format!("mock: file is {} bytes, above {}", file.len(), inner.max_bytes);
        return Response::json(400, &error_body(api, 400, &message));
    }
    let id = format!("file-mock-{}", inner.next_id);
    inner.next_id += 1;
    inner.uploads += 1;
    let bytes = file.len();
    inner.files.insert(id.clone(), file.to_vec());
    Response::json(
        200,
        &json!({"id": id, "object": "file", "bytes": bytes, "created_at": 0, "filename": "batch.jsonl", "purpose": "batch"}),
    )
}

/// The named parts of a multipart body: `(name, content)`.
fn multipart(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let Some(head_end) = find(rest, b"\r\n\r\n") else {
            break;
        };
        let head = String::from_utf8_lossy(&rest[..head_end]).to_string();
        let content_start = head_end + 4;
        let next = find(&rest[content_start..], format!("\r\n{delimiter}").as_bytes());
        let Some(len) = next else {
            break;
        };
        let name = head
            .split(';')
            .find_map(|p| p.trim().strip_prefix("name="))
            .map(|n| n.split(['\r', '\n']).next().unwrap_or("").trim_matches('"').to_string())
            .unwrap_or_default();
        parts.push((name, rest[content_start..content_start + len].to_vec()));
        rest = &rest[content_start + len..];
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn openai_create(state: &State, req: &Request) -> Response {
    let api = Api::OpenAi;
    let Ok(create) = serde_json::from_slice::<Value>(&req.body) else {
        return Response::json(400, &error_body(api, 400, "mock: body is not JSON"));
    };
    if create.get("completion_window").and_then(Value::as_str) != Some("24h") {
        return Response::json(400, &error_body(api, 400, "mock: completion_window: must be 24h"));
    }
    let endpoint = create.get("endpoint").and_then(Value::as_str).unwrap_or("");
    if endpoint != "/v1/chat/completions" {
        return Response::json(
            400,
            &error_body(api, 400, "mock: endpoint: must be /v1/chat/completions"),
        );
    }
    let mut inner = state.batches.lock();
    let Some(file_id) = create.get("input_file_id").and_then(Value::as_str) else {
        return Response::json(400, &error_body(api, 400, "mock: input_file_id: field required"));
    };
    let Some(file) = inner.files.get(file_id).cloned() else {
        return not_found(api, "such file");
    };
    // Validation, as OpenAI does it after accepting the batch: a bad file fails it.
    let mut requests = Vec::new();
    let mut failure = None;
    for (n, line) in file.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let line: Option<Value> = serde_json::from_slice(line).ok();
        let parsed = line.as_ref().and_then(|l| {
            let custom_id = l.get("custom_id")?.as_str()?;
            let ok = l.get("method")?.as_str()? == "POST" && l.get("url")?.as_str()? == endpoint;
            ok.then(|| (custom_id.to_string(), l.get("body").cloned().unwrap_or(Value::Null)))
        });
        match parsed {
            Some(request) if !requests.iter().any(|(id, _): &(String, Value)| *id == request.0) => {
                requests.push(request)
            }
            _ => {
                failure = Some(format!("line {}: not a valid request (or a repeated custom_id)", n + 1));
                break;
            }
        }
    }
    let mut failure = failure.map(|reason| ("invalid_batch", reason));
    if failure.is_none() && requests.len() > inner.max_requests {
        let reason = format!("too_many_requests: more than {} requests", inner.max_requests);
        failure = Some(("invalid_batch", reason));
    }
    if let (None, Some(limit)) = (&failure, inner.queue_limit) {
        // The account's enqueued-token limit, counted in requests: those of the batches not
        // ended yet, and this one's.
        let enqueued: usize = inner
            .batches
            .iter()
            .filter(|b| b.api == api && !b.finished)
            .map(|b| b.requests.len())
            .sum();
        if enqueued + requests.len() > limit {
            let reason = format!("mock: enqueued token limit reached ({enqueued} enqueued, limit {limit})");
            failure = Some(("token_limit_exceeded", reason));
        }
    }
    let id = format!("batch_mock_{}", inner.next_id);
    inner.next_id += 1;
    let metadata = create.get("metadata").cloned().unwrap_or(Value::Null);
    let mut batch = if let Some(reason) = failure {
        inner.refusals += 1;
        let mut batch = new_batch(&mut inner, id, api, Vec::new(), Some(file_id.to_string()));
        batch.failed = Some(reason);
        batch.finished = true;
        batch
    } else {
        new_batch(&mut inner, id, api, requests, Some(file_id.to_string()))
    };
    batch.metadata = metadata;
    if inner.progress == BatchProgress::AfterPolls(0) && inner.progress_from.is_none() {
        advance(state, &mut inner, &mut batch);
    }
    let view = openai_view(&batch, "validating");
    inner.batches.push(batch);
    Response::json(200, &view)
}

/// Moves a batch on as far as its progress allows now (it was just polled).
fn advance(state: &State, inner: &mut Inner, batch: &mut MockBatch) {
    if batch.finished || (batch.cancel_requested && inner.cancel_holds) {
        return;
    }
    let total = batch.requests.len();
    let progress = match inner.progress_from {
        Some((k, progress)) if batch.ordinal >= k => progress,
        _ => inner.progress,
    };
    let target = if batch.cancel_requested {
        batch.outcomes.len()
    } else {
        match progress {
            BatchProgress::AfterPolls(0) => total,
            BatchProgress::AfterPolls(n) => total * batch.polls.min(n) as usize / n as usize,
            BatchProgress::AfterTime(d) => {
                let share = batch.created.elapsed().as_secs_f64() / d.as_secs_f64().max(1e-9);
                ((total as f64 * share.min(1.0)) as usize).min(total)
            }
            BatchProgress::Held => 0,
            BatchProgress::HeldAfter(n) if batch.polls > 0 => n.min(total),
            BatchProgress::HeldAfter(_) => 0,
        }
    };
    while batch.outcomes.len() < target {
        let (_, body) = &batch.requests[batch.outcomes.len()];
        let outcome = run_request(state, inner, batch.api, body);
        batch.outcomes.push(outcome);
    }
    if batch.cancel_requested {
        while batch.outcomes.len() < total {
            batch.outcomes.push(Outcome::Canceled);
        }
    }
    if batch.outcomes.len() == total {
        batch.finished = true;
        if batch.api == Api::OpenAi {
            write_openai_files(inner, batch);
        }
    }
}

/// One request's outcome: a queued fault, or the realtime answer.
fn run_request(state: &State, inner: &mut Inner, api: Api, body: &Value) -> Outcome {
    let raw = body.to_string();
    let fault = inner
        .faults
        .iter_mut()
        .find(|(needle, q)| !q.is_empty() && body_contains(raw.as_bytes(), needle))
        .and_then(|(_, q)| q.pop_front());
    match fault {
        Some(BatchFault::Errored { retryable }) => Outcome::Errored { retryable },
        Some(BatchFault::Expired) => Outcome::Expired,
        Some(BatchFault::Canceled) => Outcome::Canceled,
        None => Outcome::Succeeded(normal_reply(state, api, body, false)),
    }
}

fn counts(batch: &MockBatch) -> [usize; 5] {
    let mut c = [0; 5]; // processing, succeeded, errored, canceled, expired
    c[0] = batch.requests.len() - batch.outcomes.len();
    for o in &batch.outcomes {
        let i = match o {
            Outcome::Succeeded(_) => 1,
            Outcome::Errored { .. } => 2,
            Outcome::Canceled => 3,
            Outcome::Expired => 4,
        };
        c[i] += 1;
    }
    c
}

fn poll(state: &State, api: Api, id: &str, req: &Request) -> Response {
    let mut inner = state.batches.lock();
    let Some(index) = inner.batches.iter().position(|b| b.id == id && b.api == api) else {
        return not_found(api, "such batch");
    };
    inner.polls += 1;
    let mut batch = inner.batches.swap_remove(index);
    batch.polls += 1;
    advance(state, &mut inner, &mut batch);
    let view = match api {
        Api::Anthropic => anthropic_view(&batch, req),
        Api::OpenAi => openai_view(&batch, "in_progress"),
    };
    inner.batches.push(batch);
    let last = inner.batches.len() - 1;
    inner.batches.swap(index, last);
    Response::json(200, &view)
}

fn cancel(state: &State, api: Api, id: &str, req: &Request) -> Response {
    let mut inner = state.batches.lock();
    let Some(index) = inner.batches.iter().position(|b| b.id == id && b.api == api) else {
        return not_found(api, "such batch");
    };
    // A batch that advances by time may have ended since it was last seen.
    let mut batch = inner.batches.swap_remove(index);
    advance(state, &mut inner, &mut batch);
    inner.batches.push(batch);
    let last = inner.batches.len() - 1;
    inner.batches.swap(index, last);
    let batch = &mut inner.batches[index];
    let view = if batch.finished {
        let message = format!("mock: batch {id} has already ended");
        return Response::json(400, &error_body(api, 400, &message));
    } else {
        batch.cancel_requested = true;
        match api {
            Api::Anthropic => anthropic_view(batch, req),
            Api::OpenAi => openai_view(batch, "in_progress"),
        }
    };
    inner.cancels += 1;
    Response::json(200, &view)
}

fn anthropic_view(batch: &MockBatch, req: &Request) -> Value {
    let [processing, succeeded, errored, canceled, expired] = counts(batch);
    let status = if batch.finished {
        "ended"
    } else if batch.cancel_requested {
        "canceling"
    } else {
        "in_progress"
    };
    let host = header(req, "host").unwrap_or("127.0.0.1");
    let results_url = batch
        .finished
        .then(|| format!("http://{host}/v1/messages/batches/{}/results", batch.id));
    json!({
        "id": batch.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {"processing": processing, "succeeded": succeeded, "errored": errored,
            "canceled": canceled, "expired": expired},
        "ended_at": batch.finished.then(|| rfc3339(batch.created_at_ms + 60_000)),
        "created_at": rfc3339(batch.created_at_ms),
        "expires_at": rfc3339(batch.created_at_ms + 24 * 3_600_000),
        "archived_at": null,
        "cancel_initiated_at": batch.cancel_requested.then_some("2026-11-22T09:30:00Z"),
        "results_url": results_url,
    })
}

/// An instant as Anthropic writes it: RFC 3339, UTC, with a fraction.
fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| "1970-01-01T00:00:00Z".to_string(), |t| t.to_string())
}

/// The order results come in: shuffled, the same way every time.
fn shuffled(batch: &MockBatch) -> Vec<usize> {
    let mut order: Vec<usize> = (0..batch.outcomes.len()).collect();
    order.sort_by_key(|&i| Sha256::digest(batch.requests[i].0.as_bytes()));
    order
}

fn anthropic_results(state: &State, id: &str) -> Response {
    let api = Api::Anthropic;
    let mut inner = state.batches.lock();
    let Some(batch) = inner.batches.iter().find(|b| b.id == id && b.api == api) else {
        return not_found(api, "such batch");
    };
    if !batch.finished {
        let message = format!("mock: batch {id} has not ended");
        return Response::json(400, &error_body(api, 400, &message));
    }
    let fault = inner.results_faults.pop_front();
    if fault == Some(ResultsFault::Unavailable) {
        inner.result_fetches += 1;
        return Response::json(503, &error_body(api, 503, "mock: results unavailable"));
    }
    let mut jsonl = Vec::new();
    if fault == Some(ResultsFault::MalformedLine) {
        jsonl.extend_from_slice(b"{\"custom_id\": \"not json\n");
    }
    let dropped = std::mem::take(&mut inner.results_dropped);
    let Some(batch) = inner.batches.iter().find(|b| b.id == id && b.api == api) else {
        return not_found(api, "such batch");
    };
    for i in shuffled(batch).into_iter().skip(dropped) {
        let result = match &batch.outcomes[i] {
            Outcome::Succeeded(message) => json!({"type": "succeeded", "message": message}),
            Outcome::Errored { retryable } => {
                let (status, message) = errored(*retryable);
                json!({"type": "errored", "error": error_body(api, status, message)})
            }
            Outcome::Canceled => json!({"type": "canceled"}),
            Outcome::Expired => json!({"type": "expired"}),
        };
        let line = json!({"custom_id": batch.requests[i].0, "result": result});
        jsonl.extend_from_slice(line.to_string().as_bytes());
        jsonl.push(b'\n');
    }
    inner.result_fetches += 1;
    Response {
        status: 200,
        body: jsonl,
        extra_headers: Vec::new(),
    }
}

/// The status and message of an errored request.
fn errored(retryable: bool) -> (u16, &'static str) {
    if retryable {
        (500, "mock: internal server error")
    } else {
        (400, "mock: invalid request")
    }
}

fn write_openai_files(inner: &mut Inner, batch: &mut MockBatch) {
    let api = Api::OpenAi;
    let (mut output, mut errors) = (Vec::new(), Vec::new());
    for i in shuffled(batch) {
        let custom_id = &batch.requests[i].0;
        let n = inner.next_id;
        inner.next_id += 1;
        let (line, to) = match &batch.outcomes[i] {
            Outcome::Succeeded(body) => (
                json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                    "response": {"status_code": 200, "request_id": format!("req_{n}"), "body": body}, "error": null}),
                &mut output,
            ),
            Outcome::Errored { retryable } => {
                let (status, message) = errored(*retryable);
                (
                    json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                        "response": {"status_code": status, "request_id": format!("req_{n}"),
                            "body": error_body(api, status, message)}, "error": null}),
                    &mut errors,
                )
            }
            Outcome::Expired => (
                json!({"id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                    "error": {"code": "batch_expired", "message": "mock: not run within 24h"}}),
                &mut errors,
            ),
            Outcome::Canceled => (
                json!({"id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                    "error": {"code": "batch_cancelled", "message": "mock: the batch was cancelled"}}),
                &mut errors,
            ),
        };
        to.extend_from_slice(line.to_string().as_bytes());
        to.push(b'\n');
    }
    for (content, slot) in [(output, &mut batch.output_file_id), (errors, &mut batch.error_file_id)] {
        if !content.is_empty() {
            let id = format!("file-mock-{}", inner.next_id);
            inner.next_id += 1;
            inner.files.insert(id.clone(), content);
            *slot = Some(id);
        }
    }
}

fn openai_view(batch: &MockBatch, running: &str) -> Value {
    let [_, succeeded, errored, _, expired] = counts(batch);
    let status = if batch.failed.is_some() {
        "failed"
    } else if batch.finished && batch.cancel_requested {
        "cancelled"
    } else if batch.finished && expired > 0 {
        "expired"
    } else if batch.finished {
        "completed"
    } else if batch.cancel_requested {
        "cancelling"
    } else {
        running
    };
    let errors = batch.failed.as_ref().map(|(code, reason)| {
        json!({"object": "list", "data": [{"code": code, "message": reason, "param": null, "line": null}]})
    });
    json!({
        "id": batch.id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "errors": errors,
        "input_file_id": batch.input_file_id,
        "completion_window": "24h",
        "status": status,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": batch.created_at_ms / 1000,
        "request_counts": {"total": batch.requests.len(), "completed": succeeded, "failed": errored},
        "metadata": batch.metadata,
    })
}

fn file_content(state: &State, id: &str) -> Response {
    let mut inner = state.batches.lock();
    let Some(content) = inner.files.get(id).cloned() else {
        return not_found(Api::OpenAi, "such file");
    };
    inner.result_fetches += 1;
    Response {
        status: 200,
        body: content,
        extra_headers: Vec::new(),
    }
}

fn delete_file(state: &State, id: &str) -> Response {
    match state.batches.lock().files.remove(id) {
        Some(_) => Response::json(200, &json!({"id": id, "object": "file", "deleted": true})),
        None => not_found(Api::OpenAi, "such file"),
    }
}
