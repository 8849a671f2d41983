//! A mock LLM HTTP server for tests and benchmarks.
//!
//! Speaks the Anthropic Messages API (`POST /v1/messages`) and the OpenAI
//! Chat Completions API (`POST /v1/chat/completions`) on 127.0.0.1, with
//! injectable faults, an optional API-key check, artificial latency and
//! counters. `GET /health` answers `{"ok":true}`. Both providers' batch APIs are in
//! `mock_batch.rs`, their prompt caches (the usage fields) in `mock_prompt_cache.rs`.
//!
//! The server runs on its own thread with its own tokio runtime, so plain
//! synchronous `#[test]`s can use it. Dropping the [`MockLlm`] shuts it down.
//!
//! It is a small hand-rolled HTTP/1.1 server (no hyper): request line and
//! headers up to CRLFCRLF, a `Content-Length` body, keep-alive by default,
//! `Connection: close` honoured, every response carries `Content-Length`.
//!
//! Pushback and silence: a concurrency limit, a per-window rate limit (optionally counting
//! the refused requests, with lying `retry-after`s or with the providers' rate-limit
//! headers), one request at a time (as llama.cpp's server), and two dead ends —
//! [`DeadEnd::never_accepts`] (connections hang) and [`DeadEnd::refuses`] (refused).
//! OpenAI requests with `"stream": true` get a server-sent event stream (chunked), unless
//! streaming is refused.
//!
//! Order of checks for a model request: the request is counted and recorded;
//! then the API key is checked (401, no fault consumed); then a fault is
//! popped (per-needle queues first, then the global queue, then a schedule due at the
//! request's number, [`MockLlm::fault_every`]) and applied; then
//! the body is parsed (400 if it is not a JSON object with a `messages`
//! array); then the normal reply is sent after the configured latency.
//!
//! Reply text rule (see [`reply_for`]):
//! 1. user text contains `MOCK_REPLY<<...>>MOCK_REPLY` → the text between the
//!    markers, with the two characters `\n` turned into a newline;
//! 2. system or user text contains
//!    `Summarize the following batch processing results` →
//!    `SUMMARY of N chars` (N = chars of the user text);
//! 3. otherwise `mock result <first 12 hex of sha256(user text)>`.
#![allow(dead_code)]

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

#[path = "mock_batch.rs"]
pub mod batch;
#[path = "mock_prompt_cache.rs"]
mod prompt_cache;

/// Marker opening an explicit reply inside the user message.
pub const REPLY_OPEN: &str = "MOCK_REPLY<<";
/// Marker closing an explicit reply inside the user message.
pub const REPLY_CLOSE: &str = ">>MOCK_REPLY";
/// Phrase that makes the mock answer `SUMMARY of N chars`.
/// What an analyst's system prompt says when it wants the findings JSON: the mock then
/// answers with findings, as a model that follows instructions would.
pub const FINDINGS_PHRASE: &str = "Answer with one JSON object and nothing else";

pub const SUMMARY_PHRASE: &str = "Summarize the following batch processing results";

const MAX_HEAD: usize = 64 * 1024;
/// A batch submission may be 256 MB (Anthropic's limit; OpenAI's file 200 MB).
const MAX_BODY: usize = 300 * 1024 * 1024;

/// A fault injected in place of a normal reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 429 with a `retry-after` header and a rate-limit error body.
    RateLimited { retry_after_secs: u64 },
    /// 429 quota exhausted (OpenAI `insufficient_quota`; Anthropic
    /// `error.details.error_code = "enforced_spend_limit_reached"`).
    InsufficientQuota,
    /// 500 api_error.
    ServerError,
    /// 529 overloaded_error.
    Overloaded,
    /// Arbitrary status with an error body carrying the message.
    Status(u16, String),
    /// Read the request, never answer; the connection stays open until the
    /// client closes it or the server is dropped.
    Hang,
    /// 200 with a body that is not valid JSON.
    Malformed,
    /// Close the TCP connection (RST) without any response.
    Reset,
    /// A normal reply but with stop_reason `max_tokens` / finish_reason `length`.
    Truncated,
    /// 200 with no answer in it: Anthropic `content: []`, OpenAI `content: null`.
    NoContent,
    /// 200 whose answer is an empty text: Anthropic `[{"type": "text", "text": ""}]`,
    /// OpenAI `content: ""` (streamed: no content at all).
    EmptyText,
    /// 200 whose answer is only whitespace (`" \n "`), in either format.
    BlankText,
    /// 200 where the model refuses: OpenAI `content: null` with `refusal` set to this text
    /// (streamed as `delta.refusal`); Anthropic `content: []` with `stop_reason: "refusal"`.
    Refusal(String),
    /// 200 whose body is this many bytes (a JSON reply with a huge text), sent without a
    /// `content-length`, delimited by closing the connection.
    Oversized(usize),
}

/// What the 429s of [`MockLlm::limit_rate_with`] say about when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// The whole seconds until the window has room.
    Truth,
    /// Always this many seconds, whatever the window says.
    Lie(u64),
    /// No `retry-after` header.
    Omitted,
}

/// A per-window rate limit.
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    /// Requests admitted per window.
    pub per_window: usize,
    pub window: Duration,
    /// Refused requests count against the window too (as some providers count every
    /// request): a client that keeps asking keeps the window full.
    pub counts_refused: bool,
    pub retry_after: RetryAfter,
    /// 429s carry `anthropic-ratelimit-requests-{limit,remaining,reset}` (RFC 3339) and
    /// `x-ratelimit-{limit,remaining,reset}-requests` (`59s`), with remaining 0.
    pub headers: bool,
}

/// One model request as received by the mock.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Request path, e.g. `/v1/messages` (query string stripped).
    pub path: String,
    /// Headers in arrival order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body, or `Value::Null` if it was not valid JSON.
    pub body: Value,
    /// `Debug` of the fault applied to this request, if any.
    pub fault: Option<String>,
}

impl Recorded {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The user message text of the request (see [`user_text`]).
    pub fn user_text(&self) -> String {
        match api_of(&self.path) {
            Some(api) => extract_texts(api, &self.body).user,
            None => String::new(),
        }
    }

    /// The system text of the request (see [`system_text`]).
    pub fn system_text(&self) -> String {
        match api_of(&self.path) {
            Some(api) => extract_texts(api, &self.body).system,
            None => String::new(),
        }
    }
}

#[derive(Default)]
struct Inner {
    key: Option<String>,
    /// What `GET /v1/models` lists; `None` means the default, one model `mock-model`.
    models: Option<Vec<String>>,
    /// How long `GET /v1/models` takes (a busy local server).
    models_latency: Duration,
    /// `GET /v1/models` pads its listing with this many spaces (valid JSON), sent without a
    /// `content-length`: a server that sends far more than a listing needs.
    models_padding: usize,
    global: VecDeque<Fault>,
    needles: Vec<(String, VecDeque<Fault>)>,
    /// Every `n`th model request gets its fault, when no queue has one (see
    /// [`MockLlm::fault_every`]).
    periodic: Vec<(usize, Fault)>,
    recorded: Vec<Recorded>,
    /// At most this many model requests in flight; more get a 429 (with this retry-after).
    concurrency_limit: Option<(usize, Option<u64>)>,
    /// At most this many model requests per window; more get a 429.
    rate_limit: Option<RateLimit>,
    /// Arrival times of the requests counted by `rate_limit`, oldest first.
    window: VecDeque<Instant>,
    /// OpenAI requests with `"stream": true` get a 400 instead of a stream.
    refuse_streaming: bool,
    /// Between the events of a streamed reply.
    stream_gap: Duration,
    /// 429s served by the two limits.
    throttled: usize,
}

#[derive(Default)]
struct State {
    inner: Mutex<Inner>,
    timers: Timers,
    latency_nanos: AtomicU64,
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    next_id: AtomicU64,
    batches: batch::Batches,
    prompt_cache: prompt_cache::PromptCache,
    /// Held while a model request is served, when the server serves one at a time.
    serial: Option<tokio::sync::Mutex<()>>,
    /// Streamed replies sent.
    streamed: AtomicUsize,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn latency(&self) -> Duration {
        Duration::from_nanos(self.latency_nanos.load(Ordering::Relaxed))
    }
}

/// Precise timer: tokio's timer has 1 ms granularity and typically
/// overshoots by 1-2 ms, which would distort benchmarks. A dedicated thread
/// waits on a condvar (sub-millisecond accuracy) and wakes async sleepers
/// through oneshot channels; no runtime worker is ever blocked.
#[derive(Default)]
struct Timers {
    queue: Mutex<TimerQueue>,
    cv: Condvar,
}

#[derive(Default)]
struct TimerQueue {
    heap: BinaryHeap<TimerEntry>,
    seq: u64,
    shutdown: bool,
}

struct TimerEntry {
    at: Instant,
    seq: u64,
    tx: oneshot::Sender<()>,
}

impl PartialEq for TimerEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for TimerEntry {}

impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for TimerEntry {
    // Reversed so that BinaryHeap (a max-heap) pops the earliest deadline.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl Timers {
    fn lock(&self) -> MutexGuard<'_, TimerQueue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolve once `Instant::now() >= at` (or the server shuts down).
    async fn sleep_until(&self, at: Instant) {
        if Instant::now() >= at {
            return;
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut q = self.lock();
            if q.shutdown {
                return;
            }
            q.seq += 1;
            let seq = q.seq;
            q.heap.push(TimerEntry { at, seq, tx });
        }
        self.cv.notify_one();
        let _ = rx.await;
    }

    fn run(&self) {
        let mut q = self.lock();
        loop {
            if q.shutdown {
                q.heap.clear();
                return;
            }
            let now = Instant::now();
            while q.heap.peek().is_some_and(|e| e.at <= now) {
                if let Some(e) = q.heap.pop() {
                    let _ = e.tx.send(());
                }
            }
            q = match q.heap.peek().map(|e| e.at) {
                None => self.cv.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(at) => {
                    self.cv
                        .wait_timeout(q, at.saturating_duration_since(now))
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    fn shutdown(&self) {
        self.lock().shutdown = true;
        self.cv.notify_all();
    }
}

/// Counts a model request as in flight while alive.
struct InFlight(Arc<State>);

impl InFlight {
    fn new(state: &Arc<State>) -> InFlight {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(state.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Handle to a running mock server. Dropping it stops the server.
pub struct MockLlm {
    state: Arc<State>,
    port: u16,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    timer_thread: Option<JoinHandle<()>>,
}

impl MockLlm {
    /// Start on an ephemeral port of 127.0.0.1.
    pub fn start() -> MockLlm {
        MockLlm::start_on(0)
    }

    /// Start on 127.0.0.1:`port` (0 = ephemeral). Panics if it cannot bind.
    pub fn start_on(port: u16) -> MockLlm {
        MockLlm::try_start_on(port).unwrap_or_else(|e| panic!("mock_llm: cannot start on 127.0.0.1:{port}: {e}"))
    }

    /// Like [`MockLlm::start_on`] but returns bind/runtime errors.
    pub fn try_start_on(port: u16) -> io::Result<MockLlm> {
        MockLlm::try_start_with(port, false)
    }

    /// Like a llama.cpp server: model requests are served one at a time, in arrival order;
    /// the others wait (and count as in flight) until their turn.
    pub fn start_serial() -> MockLlm {
        MockLlm::try_start_with(0, true).unwrap_or_else(|e| panic!("mock_llm: cannot start: {e}"))
    }

    /// [`MockLlm::try_start_on`], serving one request at a time when `serial`.
    pub fn try_start_with(port: u16, serial: bool) -> io::Result<MockLlm> {
        MockLlm::try_start_at("127.0.0.1", port, serial)
    }

    /// On an ephemeral port of every interface of this machine: reachable by the machine's
    /// own host name whatever address it resolves to (loopback or the machine's private
    /// one). [`MockLlm::url`] still says 127.0.0.1.
    pub fn start_on_every_interface() -> MockLlm {
        MockLlm::try_start_at("0.0.0.0", 0, false).unwrap_or_else(|e| panic!("mock_llm: cannot start: {e}"))
    }

    fn try_start_at(ip: &str, port: u16, serial: bool) -> io::Result<MockLlm> {
        let std_listener = std::net::TcpListener::bind((ip, port))?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mock-llm-worker")
            .enable_all()
            .build()?;
        let state = Arc::new(State {
            serial: serial.then(|| tokio::sync::Mutex::new(())),
            ..State::default()
        });
        state.next_id.store(1, Ordering::Relaxed);
        let timer_state = state.clone();
        let timer_thread = std::thread::Builder::new()
            .name("mock-llm-timer".into())
            .spawn(move || timer_state.timers.run())?;
        let (tx, rx) = oneshot::channel::<()>();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new().name("mock-llm".into()).spawn(move || {
            rt.block_on(async move {
                let listener = match TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("mock_llm: listener error: {e}");
                        return;
                    }
                };
                tokio::select! {
                    _ = accept_loop(listener, thread_state) => {}
                    _ = rx => {}
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        })?;
        Ok(MockLlm {
            state,
            port,
            shutdown: Some(tx),
            thread: Some(thread),
            timer_thread: Some(timer_thread),
        })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash, no `/v1`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every successful (and `Truncated`) reply is sent this long after its
    /// request body was received (sub-millisecond accuracy, non-blocking).
    /// Faults and 400/401 errors are answered immediately.
    pub fn set_latency(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.state.latency_nanos.store(nanos, Ordering::Relaxed);
    }

    /// From now on model requests must carry `x-api-key: KEY` (Anthropic) or
    /// `authorization: Bearer KEY` (OpenAI), else 401.
    pub fn require_key(&self, key: &str) {
        self.state.lock().key = Some(key.to_string());
    }

    /// What `GET /v1/models` lists (by default one model, `mock-model`).
    pub fn set_models(&self, ids: &[&str]) {
        self.state.lock().models = Some(ids.iter().map(|s| s.to_string()).collect());
    }

    /// Like a server that allows `n` requests in flight: one more gets a 429 at once
    /// (with `retry-after` when given). Faults are not consumed by throttled requests.
    pub fn limit_concurrency(&self, n: usize, retry_after_secs: Option<u64>) {
        self.state.lock().concurrency_limit = Some((n, retry_after_secs));
    }

    /// Like a server that allows `n` requests per `window` (60 a minute, say): more get a
    /// 429 whose `retry-after` is the whole seconds until the window has room.
    pub fn limit_rate(&self, n: usize, window: Duration) {
        self.limit_rate_with(RateLimit {
            per_window: n,
            window,
            counts_refused: false,
            retry_after: RetryAfter::Truth,
            headers: false,
        });
    }

    /// A per-window limit with every option of [`RateLimit`].
    pub fn limit_rate_with(&self, limit: RateLimit) {
        let mut inner = self.state.lock();
        inner.rate_limit = Some(limit);
        inner.window.clear();
    }

    /// OpenAI requests with `"stream": true` get a 400 ("stream is not supported").
    pub fn refuse_streaming(&self) {
        self.state.lock().refuse_streaming = true;
    }

    /// Streamed replies pause this long between their events (a slow local model).
    pub fn set_stream_gap(&self, d: Duration) {
        self.state.lock().stream_gap = d;
    }

    /// Streamed replies sent so far.
    pub fn streamed(&self) -> usize {
        self.state.streamed.load(Ordering::SeqCst)
    }

    /// 429s served by [`MockLlm::limit_concurrency`] and [`MockLlm::limit_rate`].
    pub fn throttled(&self) -> usize {
        self.state.lock().throttled
    }

    /// `GET /v1/models` pads its listing with `bytes` spaces (see [`Inner::models_padding`]).
    pub fn pad_models_listing(&self, bytes: usize) {
        self.state.lock().models_padding = bytes;
    }

    /// `GET /v1/models` answers this long after it was asked.
    pub fn set_models_latency(&self, d: Duration) {
        self.state.lock().models_latency = d;
    }

    /// Stop requiring an API key.
    pub fn clear_key(&self) {
        self.state.lock().key = None;
    }

    /// Append to the global FIFO fault queue (one fault per model request).
    pub fn push_faults(&self, faults: Vec<Fault>) {
        self.state.lock().global.extend(faults);
    }

    /// Append to the FIFO of `needle`: requests whose raw body contains
    /// `needle` (verbatim or JSON-escaped) pop from it first, before the
    /// global queue. Needles are checked in the order first registered;
    /// a needle whose FIFO is empty is skipped.
    pub fn fault_when(&self, needle: &str, faults: Vec<Fault>) {
        let mut inner = self.state.lock();
        if let Some((_, q)) = inner.needles.iter_mut().find(|(n, _)| n == needle) {
            q.extend(faults);
        } else {
            inner.needles.push((needle.to_string(), faults.into()));
        }
    }

    /// Every `n`th model request (the `n`th, the `2n`th…, counted from the first the
    /// server received) gets `fault` when no queue has one for it: a steady, reproducible
    /// share of faults for benchmarks (`examples/mock_llm.rs --fail-every N`). Of two
    /// schedules due at the same request, the first registered wins.
    pub fn fault_every(&self, n: usize, fault: Fault) {
        assert!(n > 0, "fault_every(0)");
        self.state.lock().periodic.push((n, fault));
    }

    /// Drop every queued fault (global and per-needle) and every schedule.
    pub fn clear_faults(&self) {
        let mut inner = self.state.lock();
        inner.global.clear();
        inner.needles.clear();
        inner.periodic.clear();
    }

    /// Number of faults still queued (global plus per-needle).
    pub fn pending_faults(&self) -> usize {
        let inner = self.state.lock();
        inner.global.len() + inner.needles.iter().map(|(_, q)| q.len()).sum::<usize>()
    }

    /// Model requests received (both endpoints, faulted ones included).
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Model requests being handled right now.
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }

    /// Highest number of model requests handled at the same moment
    /// (from body received to response written / connection dropped).
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Every model request, in arrival order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.state.lock().recorded.clone()
    }

    /// Zero `requests()` / `max_in_flight()` and clear `recorded()`.
    /// Faults, key and latency are kept.
    pub fn reset_counts(&self) {
        let mut inner = self.state.lock();
        inner.recorded.clear();
        self.state.requests.store(0, Ordering::SeqCst);
        self.state.max_in_flight.store(0, Ordering::SeqCst);
    }

    /// Poll until `in_flight()` is 0 or `timeout` passes; true if it reached 0.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.in_flight() == 0 {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.state.timers.shutdown();
        if let Some(t) = self.timer_thread.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Dead ends: addresses where no model server answers

/// An address on 127.0.0.1 where nothing answers, kept while the value lives.
pub struct DeadEnd {
    port: u16,
    _listener: Option<std::net::TcpListener>,
    _socket: Option<tokio::net::TcpSocket>,
    _queued: Vec<std::net::TcpStream>,
}

impl DeadEnd {
    /// A listener that never accepts, its accept queue full: Linux drops the SYNs of new
    /// connections, so they hang (as on a black-holed address) until the client gives up.
    pub fn never_accepts() -> DeadEnd {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap_or_else(|e| panic!("mock_llm: no runtime: {e}"));
        let listener = rt
            .block_on(async {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind(([127, 0, 0, 1], 0).into())?;
                // A backlog of 0: one connection fills the queue.
                socket.listen(0)?.into_std()
            })
            .unwrap_or_else(|e| panic!("mock_llm: cannot listen: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("mock_llm: no address: {e}"));
        let mut queued = Vec::new();
        while queued.len() < 16 {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                Ok(s) => queued.push(s),
                Err(_) => break,
            }
        }
        assert!(
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err(),
            "mock_llm: the accept queue of the dead end is not full"
        );
        DeadEnd {
            port: addr.port(),
            _listener: Some(listener),
            _socket: None,
            _queued: queued,
        }
    }

    /// A port that is bound but not listening: connections are refused at once.
    pub fn refuses() -> DeadEnd {
        let socket = tokio::net::TcpSocket::new_v4().unwrap_or_else(|e| panic!("mock_llm: no socket: {e}"));
        socket
            .bind(([127, 0, 0, 1], 0).into())
            .unwrap_or_else(|e| panic!("mock_llm: cannot bind: {e}"));
        let port = socket
            .local_addr()
            .unwrap_or_else(|e| panic!("mock_llm: no address: {e}"))
            .port();
        DeadEnd {
            port,
            _listener: None,
            _socket: Some(socket),
            _queued: Vec::new(),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

// ---------------------------------------------------------------------------
// Reply rules (public so tests can compute expected outputs)

/// The reply text the mock gives for this system / user text.
pub fn reply_for(system: &str, user: &str) -> String {
    if let Some(start) = user.find(REPLY_OPEN) {
        let rest = &user[start + REPLY_OPEN.len()..];
        if let Some(end) = rest.find(REPLY_CLOSE) {
            return rest[..end].replace("\\n", "\n");
        }
    }
    if system.contains(SUMMARY_PHRASE) || user.contains(SUMMARY_PHRASE) {
        return format!("SUMMARY of {} chars", user.chars().count());
    }
    if system.contains(FINDINGS_PHRASE) && !user.contains("several small files") {
        return format!(
            "{{\"findings\": [{{\"type\": \"pattern\", \"scope\": \"module\", \"summary\": \"mock result {}\", \
             \"evidence\": \"\", \"line\": 1, \"severity\": \"low\"}}], \"metadata\": {{}}}}",
            short_hash(user)
        );
    }
    format!("mock result {}", short_hash(user))
}

/// First 12 hex chars of sha256(text).
pub fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut s = String::with_capacity(12);
    for b in digest.iter().take(6) {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Wrap `reply` in the markers so the mock answers exactly `reply`
/// (newlines are encoded as the two characters `\n`).
pub fn reply_marker(reply: &str) -> String {
    format!("{REPLY_OPEN}{}{REPLY_CLOSE}", reply.replace('\n', "\\n"))
}

fn ceil_div4(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

// ---------------------------------------------------------------------------
// Request text extraction

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
}

fn api_of(path: &str) -> Option<Api> {
    match path {
        "/v1/messages" => Some(Api::Anthropic),
        "/v1/chat/completions" => Some(Api::OpenAi),
        _ => None,
    }
}

struct Texts {
    system: String,
    user: String,
    /// chars of system + every message's text
    total_chars: usize,
}

/// Text of a string content or of the `text` blocks of an array content
/// (joined without separator).
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                match p {
                    Value::String(s) => out.push_str(s),
                    Value::Object(o) => {
                        let is_text = matches!(o.get("type").and_then(Value::as_str), None | Some("text"));
                        if let (true, Some(t)) = (is_text, o.get("text").and_then(Value::as_str)) {
                            out.push_str(t);
                        }
                    }
                    _ => {}
                }
            }
            out
        }
        _ => String::new(),
    }
}

fn extract_texts(api: Api, body: &Value) -> Texts {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    match api {
        Api::Anthropic => {
            let system = body.get("system").map(content_text).unwrap_or_default();
            let user = messages
                .last()
                .and_then(|m| m.get("content"))
                .map(content_text)
                .unwrap_or_default();
            let mut total = system.chars().count();
            for m in messages {
                if let Some(c) = m.get("content") {
                    total += content_text(c).chars().count();
                }
            }
            Texts {
                system,
                user,
                total_chars: total,
            }
        }
        Api::OpenAi => {
            let mut systems = Vec::new();
            let mut user = String::new();
            let mut total = 0;
            for m in messages {
                let text = m.get("content").map(content_text).unwrap_or_default();
                total += text.chars().count();
                match m.get("role").and_then(Value::as_str) {
                    Some("system") | Some("developer") => systems.push(text),
                    Some("user") => user = text,
                    _ => {}
                }
            }
            Texts {
                system: systems.join("\n"),
                user,
                total_chars: total,
            }
        }
    }
}

/// User message text of a request body as the mock sees it: Anthropic
/// `messages[-1].content`, OpenAI the last `role: user` message.
/// `path` is `/v1/messages` or `/v1/chat/completions`.
pub fn user_text(path: &str, body: &Value) -> String {
    api_of(path)
        .map(|api| extract_texts(api, body).user)
        .unwrap_or_default()
}

/// System text of a request body as the mock sees it.
pub fn system_text(path: &str, body: &Value) -> String {
    api_of(path)
        .map(|api| extract_texts(api, body).system)
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Response bodies

struct Response {
    status: u16,
    body: Vec<u8>,
    extra_headers: Vec<(&'static str, String)>,
}

impl Response {
    fn json(status: u16, v: &Value) -> Response {
        Response {
            status,
            body: serde_json::to_vec(v).unwrap_or_default(),
            extra_headers: Vec::new(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn openai_error_type(status: u16) -> &'static str {
    match status {
        400 | 401 | 403 | 404 | 413 | 422 => "invalid_request_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "server_error",
    }
}

fn error_body(api: Api, status: u16, message: &str) -> Value {
    match api {
        Api::Anthropic => json!({
            "type": "error",
            "error": {"type": anthropic_error_type(status), "message": message}
        }),
        Api::OpenAi => json!({
            "error": {"message": message, "type": openai_error_type(status), "param": null, "code": null}
        }),
    }
}

fn fault_response(api: Api, fault: &Fault) -> Response {
    match fault {
        Fault::RateLimited { retry_after_secs } => {
            let body = match api {
                Api::Anthropic => json!({
                    "type": "error",
                    "error": {"type": "rate_limit_error", "message": "mock: rate limit exceeded"}
                }),
                Api::OpenAi => json!({
                    "error": {
                        "message": "mock: rate limit reached",
                        "type": "rate_limit_error",
                        "param": null,
                        "code": "rate_limit_exceeded"
                    }
                }),
            };
            let mut r = Response::json(429, &body);
            r.extra_headers.push(("retry-after", retry_after_secs.to_string()));
            r
        }
        Fault::InsufficientQuota => {
            let body = match api {
                Api::Anthropic => json!({
                    "type": "error",
                    "error": {
                        "type": "rate_limit_error",
                        "message": "mock: you have reached your specified API usage limits",
                        "details": {"error_code": "enforced_spend_limit_reached"}
                    }
                }),
                Api::OpenAi => json!({
                    "error": {
                        "message": "mock: you exceeded your current quota, please check your plan and billing details",
                        "type": "insufficient_quota",
                        "param": null,
                        "code": "insufficient_quota"
                    }
                }),
            };
            Response::json(429, &body)
        }
        Fault::ServerError => {
            let body = match api {
                Api::Anthropic => error_body(api, 500, "mock: internal server error"),
                Api::OpenAi => json!({
                    "error": {"message": "mock: internal server error", "type": "api_error", "param": null, "code": null}
                }),
            };
            Response::json(500, &body)
        }
        Fault::Overloaded => Response::json(529, &error_body(api, 529, "mock: overloaded")),
        Fault::Status(status, message) => Response::json(*status, &error_body(api, *status, message)),
        Fault::Malformed => Response {
            status: 200,
            body: br#"{"id": "msg_1", "content": ["#.to_vec(),
            extra_headers: Vec::new(),
        },
        // Hang / Reset / Truncated / the hollow replies / Oversized are handled by the caller.
        Fault::Hang
        | Fault::Reset
        | Fault::Truncated
        | Fault::NoContent
        | Fault::EmptyText
        | Fault::BlankText
        | Fault::Refusal(_)
        | Fault::Oversized(_) => Response::json(500, &error_body(api, 500, "mock: unreachable")),
    }
}

/// The JSON Schema a request constrains its answer to: OpenAI `response_format`
/// (`json_schema`, or `json_object` with a `schema` beside it) or an Anthropic forced tool.
fn requested_schema(api: Api, body: &Value) -> Option<Value> {
    match api {
        Api::OpenAi => {
            let format = body.get("response_format")?;
            format
                .pointer("/json_schema/schema")
                .or_else(|| format.get("schema"))
                .cloned()
        }
        Api::Anthropic => {
            let name = body.pointer("/tool_choice/name")?.as_str()?;
            let tools = body.get("tools")?.as_array()?;
            let tool = tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(name))?;
            tool.get("input_schema").cloned()
        }
    }
}

/// What the mock answers to a request for structured output: for a batch (`{"files":
/// [...]}`), one entry per file delimited in the message; for an analyst's findings schema,
/// one finding naming a hash of the message (so answers differ per unit); else a small
/// instance of the schema.
pub fn schema_reply(schema: &Value, user: &str) -> Value {
    let finding = |seed: &str| {
        json!({"type": "pattern", "scope": "module", "summary": format!("mock result {}", short_hash(seed)),
               "evidence": "", "line": 1, "severity": "low"})
    };
    if let Some(item) = schema.pointer("/properties/files/items") {
        let entries: Vec<Value> = delimited_paths(user)
            .into_iter()
            .map(|path| {
                let mut entry = serde_json::Map::new();
                entry.insert("file".into(), json!(path));
                let seed = format!("{path}\n{user}");
                if let Some(props) = item.get("properties").and_then(Value::as_object) {
                    for (k, v) in props {
                        let value = match k.as_str() {
                            "file" => continue,
                            "findings" => json!([finding(&seed)]),
                            "metadata" => json!({}),
                            "answer" if v.get("type").and_then(Value::as_str) == Some("string") => {
                                json!(format!("mock result {}", short_hash(&seed)))
                            }
                            _ => instance_of(v),
                        };
                        entry.insert(k.clone(), value);
                    }
                }
                Value::Object(entry)
            })
            .collect();
        return json!({ "files": entries });
    }
    if schema.pointer("/properties/findings").is_some() && schema.pointer("/properties/metadata").is_some() {
        return json!({"findings": [finding(user)], "metadata": {}});
    }
    instance_of(schema)
}

/// The `path` attributes of the file delimiters in a message, in order.
pub fn delimited_paths(user: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = user;
    while let Some(at) = rest.find("<file_content_") {
        rest = &rest[at + 1..];
        let Some(open) = rest.find(" path=\"") else { break };
        let after = &rest[open + 7..];
        let Some(close) = after.find("\">") else { break };
        let raw = &after[..close];
        paths.push(
            raw.replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        );
        // Skip this file's content: up to its closing tag.
        let tag: String = rest.chars().take_while(|c| *c != ' ').collect();
        match rest.find(&format!("</{tag}>")) {
            Some(end) => rest = &rest[end..],
            None => break,
        }
    }
    paths
}

/// A small value that conforms to `schema` (the first choice wherever there is one):
/// what the mock answers when a schema is requested and no reply marker says otherwise.
pub fn instance_of(schema: &Value) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|e| e.first()) {
            return instance_of(first);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut map = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    map.insert(k.clone(), instance_of(v));
                }
            }
            Value::Object(map)
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).max(1);
            let item = schema.get("items").map(instance_of).unwrap_or(Value::Null);
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("mock"),
    }
}

fn normal_response(state: &State, api: Api, body: &Value, truncated: bool, no_content: bool) -> Response {
    let mut v = normal_reply(state, api, body, truncated);
    if no_content {
        match api {
            Api::Anthropic => v["content"] = json!([]),
            Api::OpenAi => v["choices"][0]["message"]["content"] = Value::Null,
        }
    }
    Response::json(200, &v)
}

/// A normal reply made hollow as `fault` says (see [`Fault::EmptyText`], [`Fault::BlankText`],
/// [`Fault::Refusal`]); other faults leave it as it is.
fn hollow(api: Api, v: &mut Value, fault: &Fault) {
    let text = match fault {
        Fault::EmptyText => "",
        Fault::BlankText => " \n ",
        Fault::Refusal(said) => {
            match api {
                Api::Anthropic => {
                    v["content"] = json!([]);
                    v["stop_reason"] = json!("refusal");
                }
                Api::OpenAi => {
                    v["choices"][0]["message"]["content"] = Value::Null;
                    v["choices"][0]["message"]["refusal"] = json!(said);
                }
            }
            return;
        }
        _ => return,
    };
    match api {
        Api::Anthropic => v["content"] = json!([{"type": "text", "text": text}]),
        Api::OpenAi => v["choices"][0]["message"]["content"] = json!(text),
    }
}

/// The reply text the mock gives for this request (what a schema asks for when one is
/// asked: a batch's files, a job worker's items, an analyst's findings, an instance).
fn reply_text(api: Api, body: &Value) -> String {
    let texts = extract_texts(api, body);
    match requested_schema(api, body) {
        Some(schema) if !texts.user.contains(REPLY_OPEN) => job_answer(&schema, &texts.user)
            .unwrap_or_else(|| schema_reply(&schema, &texts.user))
            .to_string(),
        _ => reply_for(&texts.system, &texts.user),
    }
}

/// The reply to a model request (also each request of a batch).
fn normal_reply(state: &State, api: Api, body: &Value, truncated: bool) -> Value {
    let texts = extract_texts(api, body);
    let schema = requested_schema(api, body);
    let reply = reply_text(api, body);
    // A forced Anthropic tool answers with a tool_use block when the reply is JSON.
    let tool_input = match (api, &schema) {
        (Api::Anthropic, Some(_)) => serde_json::from_str::<Value>(&reply).ok(),
        _ => None,
    };
    let input = ceil_div4(texts.total_chars);
    let cache = prompt_cache::usage(state, api, body);
    let output = ceil_div4(reply.chars().count()).max(1);
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let model = body.get("model").cloned().unwrap_or(Value::Null);
    let mut v = match api {
        Api::Anthropic => json!({
            "id": format!("msg_mock_{id}"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": match &tool_input {
                Some(input) => json!([{"type": "tool_use", "id": format!("toolu_mock_{id}"),
                    "name": body.pointer("/tool_choice/name").cloned().unwrap_or(Value::Null), "input": input}]),
                None => json!([{"type": "text", "text": reply}]),
            },
            "stop_reason": if truncated { "max_tokens" } else if tool_input.is_some() { "tool_use" } else { "end_turn" },
            "stop_sequence": null,
            "usage": {
                "input_tokens": input.saturating_sub(cache.read + cache.write),
                "output_tokens": output,
                "cache_creation_input_tokens": cache.write,
                "cache_read_input_tokens": cache.read
            }
        }),
        Api::OpenAi => json!({
            "id": format!("chatcmpl-mock-{id}"),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": if truncated { "length" } else { "stop" }
            }],
            "usage": {
                "prompt_tokens": input,
                "completion_tokens": output,
                "total_tokens": input + output
            }
        }),
    };
    if cache.openai_details {
        v["usage"]["prompt_tokens_details"] = json!({"cached_tokens": cache.read});
    }
    v
}

// ---------------------------------------------------------------------------
// `rlm job` workers
//
// A job worker is sent a batch of items as a JSON array (one compact object a line,
// between `\n[\n` and `\n]\n</`) and asked for `{"items": [...]}` by a schema whose
// `items` is an array of answer objects. The mock answers one object per input item, as a
// model that follows instructions would:
// 1. a small instance of the answer schema (arrays empty unless `minItems`, numbers in the
//    middle of their range);
// 2. every field the answer schema shares with the input item, copied when it fits (so the
//    id comes back, and a cluster's proposal is confirmed);
// 3. hints: `MOCK_FIELDS<<{json}>>MOCK_FIELDS` in any string of the item sets those fields
//    (only the answer schema's own); `MOCK_FIELDS_FIRST<<{json}>>MOCK_FIELDS_FIRST` does so
//    only on the first attempt (not once the message says an answer was rejected).

/// Hint markers a test puts in an item's text.
pub const FIELDS_OPEN: &str = "MOCK_FIELDS<<";
pub const FIELDS_CLOSE: &str = ">>MOCK_FIELDS";
pub const FIRST_OPEN: &str = "MOCK_FIELDS_FIRST<<";
pub const FIRST_CLOSE: &str = ">>MOCK_FIELDS_FIRST";
/// What a job's second attempt says (the mock then drops `MOCK_FIELDS_FIRST` hints).
pub const REASKED_PHRASE: &str = "Your previous answer was rejected";

/// `MOCK_FIELDS<<{…}>>MOCK_FIELDS` around a JSON object, for an item's text.
pub fn fields_hint(fields: &Value) -> String {
    format!("{FIELDS_OPEN}{fields}{FIELDS_CLOSE}")
}

/// The same hint, honoured on the first attempt only.
pub fn first_attempt_hint(fields: &Value) -> String {
    format!("{FIRST_OPEN}{fields}{FIRST_CLOSE}")
}

/// The answer to a job worker's request, if this is one.
fn job_answer(schema: &Value, user: &str) -> Option<Value> {
    let items_schema = schema.pointer("/properties/items")?;
    if items_schema.get("type").and_then(Value::as_str) != Some("array") {
        return None;
    }
    let item_schema = items_schema.get("items")?;
    let start = user.find("\n[\n")? + 1;
    let end = user[start..].find("\n]\n</").map(|e| start + e + 2)?;
    let inputs: Vec<Value> = serde_json::from_str(&user[start..end]).ok()?;
    let reasked = user.contains(REASKED_PHRASE);
    let answers = inputs
        .iter()
        .map(|input| job_item(item_schema, input, reasked))
        .collect();
    Some(json!({ "items": Value::Array(answers) }))
}

fn job_item(schema: &Value, input: &Value, reasked: bool) -> Value {
    let mut answer = job_instance_of(schema);
    let props = schema.get("properties").and_then(Value::as_object);
    if let (Some(out), Some(props), Some(fields)) = (answer.as_object_mut(), props, input.as_object()) {
        for (key, prop) in props {
            if let Some(v) = fields.get(key).filter(|v| fits(v, prop)) {
                out.insert(key.clone(), v.clone());
            }
        }
        let mut hints = Vec::new();
        collect_hints(input, FIELDS_OPEN, FIELDS_CLOSE, &mut hints);
        if !reasked {
            collect_hints(input, FIRST_OPEN, FIRST_CLOSE, &mut hints);
        }
        for hint in hints {
            for (key, v) in hint.as_object().into_iter().flatten() {
                if props.contains_key(key) {
                    out.insert(key.clone(), v.clone());
                }
            }
        }
    }
    answer
}

/// The JSON objects between `open` and `close` in every string of `v`.
fn collect_hints(v: &Value, open: &str, close: &str, out: &mut Vec<Value>) {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(at) = rest.find(open) {
                let after = &rest[at + open.len()..];
                let Some(end) = after.find(close) else { break };
                if let Ok(hint) = serde_json::from_str::<Value>(&after[..end]) {
                    out.push(hint);
                }
                rest = &after[end + close.len()..];
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_hints(i, open, close, out)),
        Value::Object(o) => o.values().for_each(|i| collect_hints(i, open, close, out)),
        _ => {}
    }
}

/// Whether `v` has a type (and value) `schema` allows, looking no deeper.
fn fits(v: &Value, schema: &Value) -> bool {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options.contains(v);
    }
    let name = match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let ok = |t: &str| t == name || (t == "number" && name == "integer");
    match schema.get("type") {
        None => true,
        Some(Value::String(t)) => ok(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(ok),
        _ => false,
    }
}

/// [`instance_of`], with empty arrays (unless `minItems`) and numbers mid-range.
fn job_instance_of(schema: &Value) -> Value {
    let ty = schema.get("type").and_then(Value::as_str);
    if schema.get("enum").is_some() || schema.get("const").is_some() {
        return instance_of(schema);
    }
    match ty {
        Some("object") => {
            let mut map = serde_json::Map::new();
            for (k, v) in schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                map.insert(k.clone(), job_instance_of(v));
            }
            Value::Object(map)
        }
        Some("array") if schema.get("minItems").is_none() => json!([]),
        Some(t @ ("integer" | "number")) => {
            match (
                schema.get("minimum").and_then(Value::as_f64),
                schema.get("maximum").and_then(Value::as_f64),
            ) {
                (Some(lo), Some(hi)) if t == "integer" => json!(((lo + hi) / 2.0).floor() as i64),
                (Some(lo), Some(hi)) => json!((lo + hi) / 2.0),
                _ => instance_of(schema),
            }
        }
        _ => instance_of(schema),
    }
}

// ---------------------------------------------------------------------------
// HTTP server

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(handle_conn(stream, state.clone()));
            }
            Err(_) => {
                // e.g. too many open files: back off a little and retry.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

struct Request {
    method: String,
    path: String,
    /// The query string, without the `?` (empty when there is none).
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    keep_alive: bool,
}

enum ReadError {
    /// Connection closed or broken: just drop it.
    Gone,
    /// Protocol error: answer with this status and close.
    Bad(u16, &'static str),
}

fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    buf[start..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| start + p)
}

async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(8192);
    }
    match stream.read_buf(buf).await {
        Ok(0) | Err(_) => Err(ReadError::Gone),
        Ok(_) => Ok(()),
    }
}

/// Read one request; leftover bytes (pipelining) stay in `buf`.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Request, ReadError> {
    let mut scanned = 0;
    let head_end = loop {
        if let Some(p) = find_head_end(buf, scanned) {
            break p;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request head too large"));
        }
        scanned = buf.len();
        fill(stream, buf).await?;
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| ReadError::Bad(400, "request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) => (m.to_string(), t, v),
        _ => return Err(ReadError::Bad(400, "bad request line")),
    };
    let path = target.split('?').next().unwrap_or("").to_string();
    let query = target.split_once('?').map(|(_, q)| q.to_string()).unwrap_or_default();
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, "bad header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let connection = header("connection").map(|v| v.to_ascii_lowercase());
    let keep_alive = match connection.as_deref() {
        Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
        Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
        _ => version != "HTTP/1.0",
    };
    if header("transfer-encoding").is_some_and(|v| !v.eq_ignore_ascii_case("identity")) {
        return Err(ReadError::Bad(
            411,
            "chunked request bodies are not supported; send Content-Length",
        ));
    }
    let content_length = match header("content-length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Bad(400, "bad content-length"))?,
    };
    if content_length > MAX_BODY {
        return Err(ReadError::Bad(413, "request body too large"));
    }
    let body_start = head_end + 4;
    while buf.len() < body_start + content_length {
        fill(stream, buf).await?;
    }
    let body = buf[body_start..body_start + content_length].to_vec();
    buf.drain(..body_start + content_length);
    Ok(Request {
        method,
        path,
        query,
        headers,
        body,
        keep_alive,
    })
}

async fn write_response(stream: &mut TcpStream, resp: &Response, keep_alive: bool) -> io::Result<()> {
    let mut out = Vec::with_capacity(resp.body.len() + 256);
    let _ = write!(
        Wrap(&mut out),
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        resp.status,
        reason(resp.status),
        resp.body.len()
    );
    for (k, v) in &resp.extra_headers {
        let _ = write!(Wrap(&mut out), "{k}: {v}\r\n");
    }
    out.extend_from_slice(if keep_alive {
        b"connection: keep-alive\r\n\r\n"
    } else {
        b"connection: close\r\n\r\n"
    });
    out.extend_from_slice(&resp.body);
    stream.write_all(&out).await
}

/// `fmt::Write` adapter for a byte buffer.
struct Wrap<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Wrap<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// What to do with a request.
enum Action {
    Respond(Response),
    Hang,
    Reset,
    /// A 200 event stream (chunked), one event every `gap`.
    Stream {
        events: Vec<Vec<u8>>,
        gap: Duration,
    },
    /// A 200 JSON body without `content-length`, then close.
    Unbounded(Vec<u8>),
}

/// The server-sent events of a streamed Chat Completions reply, as OpenAI sends them.
fn stream_events(value: &Value, include_usage: bool) -> Vec<Vec<u8>> {
    let choice = &value["choices"][0];
    let base = |choices: Value| json!({"id": value["id"], "object": "chat.completion.chunk", "created": 0, "model": value["model"], "choices": choices});
    let mut events = Vec::new();
    let mut push = |v: Value| events.push(format!("data: {v}\n\n").into_bytes());
    push(base(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
    ));
    if let Some(text) = choice["message"]["content"].as_str() {
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(8) {
            let piece: String = piece.iter().collect();
            push(base(
                json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
            ));
        }
    }
    if let Some(refusal) = choice["message"]["refusal"].as_str() {
        push(base(
            json!([{"index": 0, "delta": {"refusal": refusal}, "finish_reason": null}]),
        ));
    }
    push(base(
        json!([{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
    ));
    if include_usage {
        let mut last = base(json!([]));
        last["usage"] = value["usage"].clone();
        push(last);
    }
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

async fn write_stream(
    stream: &mut TcpStream,
    state: &State,
    events: &[Vec<u8>],
    gap: Duration,
    keep_alive: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: {}\r\n\r\n",
        if keep_alive { "keep-alive" } else { "close" }
    );
    stream.write_all(head.as_bytes()).await?;
    for (i, event) in events.iter().enumerate() {
        if i > 0 && !gap.is_zero() {
            state.timers.sleep_until(Instant::now() + gap).await;
        }
        let mut chunk = format!("{:x}\r\n", event.len()).into_bytes();
        chunk.extend_from_slice(event);
        chunk.extend_from_slice(b"\r\n");
        stream.write_all(&chunk).await?;
    }
    stream.write_all(b"0\r\n\r\n").await
}

async fn handle_conn(mut stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(8192);
    loop {
        let req = match read_request(&mut stream, &mut buf).await {
            Ok(r) => r,
            Err(ReadError::Gone) => return,
            Err(ReadError::Bad(status, msg)) => {
                let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": msg}});
                let _ = write_response(&mut stream, &Response::json(status, &body), false).await;
                return;
            }
        };
        let keep_alive = req.keep_alive;
        let api = if req.method == "POST" { api_of(&req.path) } else { None };
        let Some(api) = api else {
            let resp = if req.method == "GET" && req.path == "/health" {
                Response::json(200, &json!({"ok": true}))
            } else if req.method == "GET" && req.path == "/v1/models" {
                let (ids, latency, key, padding) = {
                    let inner = state.lock();
                    (
                        inner.models.clone().unwrap_or_else(|| vec!["mock-model".into()]),
                        inner.models_latency,
                        inner.key.clone(),
                        inner.models_padding,
                    )
                };
                if !latency.is_zero() {
                    state.timers.sleep_until(Instant::now() + latency).await;
                }
                if padding > 0 {
                    let data: Vec<Value> = ids.iter().map(|id| json!({"id": id, "object": "model"})).collect();
                    let listing = json!({"object": "list", "data": data}).to_string();
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&listing.as_bytes()[..listing.len() - 1]).await;
                    let spaces = vec![b' '; 64 * 1024];
                    let mut left = padding;
                    while left > 0 {
                        let n = left.min(spaces.len());
                        if stream.write_all(&spaces[..n]).await.is_err() {
                            return;
                        }
                        left -= n;
                    }
                    let _ = stream.write_all(b"}").await;
                    return;
                }
                let bearer = req
                    .headers
                    .iter()
                    .find(|(k, _)| k == "authorization")
                    .map(|(_, v)| v.trim_start_matches("Bearer ").to_string());
                if key.is_some() && bearer != key {
                    let body = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
                    Response::json(401, &body)
                } else {
                    let data: Vec<Value> = ids.iter().map(|id| json!({"id": id, "object": "model"})).collect();
                    Response::json(200, &json!({"object": "list", "data": data}))
                }
            } else if let Some(action) = batch::route(&state, &req) {
                match action {
                    batch::RouteAction::Respond(resp) => resp,
                    batch::RouteAction::Reset => {
                        let _ = stream.set_zero_linger();
                        return;
                    }
                    batch::RouteAction::Unbounded(body) => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                        let _ = stream.write_all(head.as_bytes()).await;
                        for piece in body.chunks(64 * 1024) {
                            if stream.write_all(piece).await.is_err() {
                                break;
                            }
                        }
                        return;
                    }
                    batch::RouteAction::Hang => {
                        let mut scratch = [0u8; 4096];
                        loop {
                            match stream.read(&mut scratch).await {
                                Ok(0) | Err(_) => break,
                                Ok(_) => {}
                            }
                        }
                        return;
                    }
                }
            } else {
                let msg = format!("mock: no route for {} {}", req.method, req.path);
                Response::json(
                    404,
                    &json!({"type": "error", "error": {"type": "not_found_error", "message": msg}}),
                )
            };
            if write_response(&mut stream, &resp, keep_alive).await.is_err() || !keep_alive {
                return;
            }
            continue;
        };

        let guard = InFlight::new(&state);
        // One at a time, in arrival order (tokio's mutex is fair), when the server is serial;
        // the latency counts from the request's turn.
        let _turn = match &state.serial {
            Some(turn) => Some(turn.lock().await),
            None => None,
        };
        let received = Instant::now();
        let action = handle_model_request(&state, api, req, received).await;
        match action {
            Action::Stream { events, gap } => {
                state.streamed.fetch_add(1, Ordering::SeqCst);
                let ok = write_stream(&mut stream, &state, &events, gap, keep_alive)
                    .await
                    .is_ok();
                drop(guard);
                if !ok || !keep_alive {
                    return;
                }
            }
            Action::Unbounded(body) => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                for piece in body.chunks(64 * 1024) {
                    if stream.write_all(piece).await.is_err() {
                        break;
                    }
                }
                drop(guard);
                return;
            }
            Action::Respond(resp) => {
                let ok = write_response(&mut stream, &resp, keep_alive).await.is_ok();
                drop(guard);
                if !ok || !keep_alive {
                    return;
                }
            }
            Action::Reset => {
                let _ = stream.set_zero_linger();
                drop(stream);
                drop(guard);
                return;
            }
            Action::Hang => {
                // Never answer; discard whatever arrives until the client
                // closes (or the runtime shuts down and cancels us).
                let mut scratch = [0u8; 4096];
                loop {
                    match stream.read(&mut scratch).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                drop(guard);
                return;
            }
        }
    }
}

async fn handle_model_request(state: &Arc<State>, api: Api, req: Request, received: Instant) -> Action {
    let number = state.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let parsed: Option<Value> = serde_json::from_slice(&req.body).ok();

    // Decide auth + throttling + fault under one lock, and record.
    let (authorized, throttle, fault, refuse_streaming, stream_gap) = {
        let mut inner = state.lock();
        let authorized = match &inner.key {
            None => true,
            Some(key) => {
                let header = |n: &str| req.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
                match api {
                    Api::Anthropic => header("x-api-key") == Some(key.as_str()),
                    Api::OpenAi => header("authorization")
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .is_some_and(|v| v.trim() == key),
                }
            }
        };
        let throttle = if authorized {
            throttle(&mut inner, state.in_flight.load(Ordering::SeqCst))
        } else {
            None
        };
        let refuse_streaming = inner.refuse_streaming;
        let stream_gap = inner.stream_gap;
        let fault = if authorized && throttle.is_none() {
            pop_fault(&mut inner, &req.body, number)
        } else {
            None
        };
        inner.recorded.push(Recorded {
            path: req.path.clone(),
            headers: req.headers,
            body: parsed.clone().unwrap_or(Value::Null),
            fault: throttle
                .as_ref()
                .map(|t| format!("Throttled {{ retry_after_secs: {:?} }}", t.retry_after))
                .or_else(|| fault.as_ref().map(|f| format!("{f:?}"))),
        });
        (authorized, throttle, fault, refuse_streaming, stream_gap)
    };

    if !authorized {
        let body = match api {
            Api::Anthropic => json!({
                "type": "error",
                "error": {"type": "authentication_error", "message": "mock: invalid x-api-key"}
            }),
            Api::OpenAi => json!({
                "error": {
                    "message": "mock: incorrect API key provided",
                    "type": "invalid_request_error",
                    "param": null,
                    "code": "invalid_api_key"
                }
            }),
        };
        return Action::Respond(Response::json(401, &body));
    }

    if let Some(refusal) = throttle {
        let mut r = fault_response(api, &Fault::RateLimited { retry_after_secs: 0 });
        r.extra_headers = refusal.headers;
        if let Some(secs) = refusal.retry_after {
            r.extra_headers.push(("retry-after", secs.to_string()));
        }
        return Action::Respond(r);
    }

    let mut truncated = false;
    let mut no_content = false;
    let mut hollowed: Option<Fault> = None;
    match fault {
        None => {}
        Some(f @ (Fault::EmptyText | Fault::BlankText | Fault::Refusal(_))) => hollowed = Some(f),
        Some(Fault::Hang) => return Action::Hang,
        Some(Fault::Reset) => return Action::Reset,
        Some(Fault::Truncated) => truncated = true,
        Some(Fault::NoContent) => no_content = true,
        Some(Fault::Oversized(bytes)) => {
            let mut body = match api {
                Api::Anthropic => {
                    br#"{"type":"message","role":"assistant","content":[{"type":"text","text":""#.to_vec()
                }
                Api::OpenAi => br#"{"choices":[{"index":0,"message":{"role":"assistant","content":""#.to_vec(),
            };
            body.resize(bytes.saturating_sub(64).max(body.len()), b'x');
            body.extend_from_slice(match api {
                Api::Anthropic => br#""}],"stop_reason":"end_turn"}"#.as_slice(),
                Api::OpenAi => br#""},"finish_reason":"stop"}]}"#.as_slice(),
            });
            return Action::Unbounded(body);
        }
        Some(f) => return Action::Respond(fault_response(api, &f)),
    }

    let body = match parsed {
        Some(v) if v.get("messages").is_some_and(Value::is_array) => v,
        Some(_) => {
            return Action::Respond(Response::json(
                400,
                &error_body(api, 400, "mock: messages: field required (must be an array)"),
            ))
        }
        None => {
            return Action::Respond(Response::json(
                400,
                &error_body(api, 400, "mock: request body is not valid JSON"),
            ))
        }
    };

    let streaming = api == Api::OpenAi && body.get("stream") == Some(&Value::Bool(true));
    if streaming && refuse_streaming {
        return Action::Respond(Response::json(
            400,
            &error_body(api, 400, "mock: stream is not supported by this server"),
        ));
    }
    let resp = if streaming {
        let mut value = normal_reply(state, api, &body, truncated);
        if no_content {
            value["choices"][0]["message"]["content"] = Value::Null;
        }
        if let Some(f) = &hollowed {
            hollow(api, &mut value, f);
        }
        let include_usage = body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
        Action::Stream {
            events: stream_events(&value, include_usage),
            gap: stream_gap,
        }
    } else {
        match &hollowed {
            Some(f) => {
                let mut value = normal_reply(state, api, &body, truncated);
                hollow(api, &mut value, f);
                Action::Respond(Response::json(200, &value))
            }
            None => Action::Respond(normal_response(state, api, &body, truncated, no_content)),
        }
    };
    let latency = state.latency();
    if !latency.is_zero() {
        state.timers.sleep_until(received + latency).await;
    }
    resp
}

/// A 429 of the limits: its `retry-after` and any rate-limit headers.
struct Refusal {
    retry_after: Option<u64>,
    headers: Vec<(&'static str, String)>,
}

/// Whether the limits refuse this request, and what the 429 says when they do.
fn throttle(inner: &mut Inner, in_flight: usize) -> Option<Refusal> {
    if let Some((n, retry_after)) = inner.concurrency_limit {
        if in_flight > n {
            inner.throttled += 1;
            return Some(Refusal {
                retry_after,
                headers: Vec::new(),
            });
        }
    }
    if let Some(limit) = inner.rate_limit {
        let now = Instant::now();
        while inner
            .window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= limit.window)
        {
            inner.window.pop_front();
        }
        if inner.window.len() >= limit.per_window {
            inner.throttled += 1;
            let free_at = inner.window.front().map_or(now, |t| *t + limit.window);
            if limit.counts_refused {
                inner.window.push_back(now);
            }
            let wait = free_at.saturating_duration_since(now);
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            let mut headers = Vec::new();
            if limit.headers {
                let reset = jiff::Timestamp::try_from(std::time::SystemTime::now() + wait)
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                headers.push(("anthropic-ratelimit-requests-limit", limit.per_window.to_string()));
                headers.push(("anthropic-ratelimit-requests-remaining", "0".to_string()));
                headers.push(("anthropic-ratelimit-requests-reset", reset));
                headers.push(("x-ratelimit-limit-requests", limit.per_window.to_string()));
                headers.push(("x-ratelimit-remaining-requests", "0".to_string()));
                headers.push(("x-ratelimit-reset-requests", format!("{}ms", wait.as_millis())));
            }
            let retry_after = match limit.retry_after {
                RetryAfter::Truth => Some(secs),
                RetryAfter::Lie(secs) => Some(secs),
                RetryAfter::Omitted => None,
            };
            return Some(Refusal { retry_after, headers });
        }
        inner.window.push_back(now);
    }
    None
}

/// The fault of model request number `number` (from 1): its needle's queue first, then the
/// global queue, then the first schedule due at it.
fn pop_fault(inner: &mut Inner, raw_body: &[u8], number: usize) -> Option<Fault> {
    for (needle, q) in inner.needles.iter_mut() {
        if !q.is_empty() && body_contains(raw_body, needle) {
            return q.pop_front();
        }
    }
    inner.global.pop_front().or_else(|| {
        inner
            .periodic
            .iter()
            .find(|(n, _)| number % n == 0)
            .map(|(_, fault)| fault.clone())
    })
}

/// The raw body contains `needle` verbatim or in its JSON-escaped form (so
/// needles with quotes, backslashes or newlines match JSON string content).
fn body_contains(raw_body: &[u8], needle: &str) -> bool {
    if contains(raw_body, needle.as_bytes()) {
        return true;
    }
    let escaped = serde_json::to_string(needle).unwrap_or_default();
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or("");
    escaped != needle && contains(raw_body, escaped.as_bytes())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}
