//! The providers' batch APIs behind one trait: Anthropic Message Batches and OpenAI Batch
//! (issue 18). Half the price of realtime calls, results within 24 hours.
//!
//! The life of a batch, and who does what:
//! 1. The caller renders each unit's [`CompletionRequest`] (the same request a realtime
//!    call would send: [`BatchApi::encode`] renders it with the realtime `Wire`) and
//!    feeds the items to a [`Chunker`], which cuts them into submissions within the
//!    provider's [`BatchLimits`] (requests and bytes).
//! 2. [`BatchApi::submit`] creates one batch per chunk. The caller records its intent to
//!    submit (a [`SubmissionTag`] and the custom ids) *before* the create request is sent,
//!    and the batch id with its custom ids *before* it waits ([`submit_all`] calls the
//!    [`Recorder`] around each one), so a crash never loses a batch that is running, and
//!    paid for, at the provider. A create request whose outcome is unknown (the connection
//!    broke after it was sent, a 5xx, an unreadable reply) is never sent again blindly:
//!    [`reconcile`] looks for the batch in the provider's listing first.
//! 3. [`BatchApi::poll`] reads the batch's state ([`BatchState`]: status and counts)
//!    until it has ended; [`poll_delay`] spaces the polls.
//! 4. [`BatchApi::results`] streams the results line by line ([`ResultStream`]), in any
//!    order, one [`ItemResult`] per custom id: a 100,000-line results file is never held
//!    whole.
//! 5. [`BatchApi::cancel`] asks the provider to stop; what had finished still comes back
//!    through the results.
//!
//! Every call is one HTTP exchange that never retries: the caller decides, by
//! [`BatchError::is_retryable`], as the executor does for realtime calls.

mod anthropic;
mod chunker;
mod openai;
mod reconcile;
mod results;
mod transport;

pub use crate::batch_state::{BatchCounts, BatchState, BatchStatus};
pub use anthropic::AnthropicBatches;
pub use chunker::{Chunk, Chunker, Envelope};
pub use openai::OpenAiBatches;
pub use reconcile::{reconcile, Intent, Reconciled, CLOCK_SKEW_MS};
pub use results::{ResultStream, Results, ResultsEnd, RESULT_ATTEMPTS};

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::{BoxFuture, CallError, Completion, CompletionRequest, ErrorKind, HttpConfig, ProviderKind, Usage};

/// One request of a batch: the unit's request and the id its result comes back under.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// The unit's part of the custom id ([`custom_id_for`] derives one from any unit id):
    /// [`submit_all_within`] sends it stamped with the submission's token
    /// ([`stamped_custom_id`]).
    pub custom_id: String,
    pub request: CompletionRequest,
}

/// What one batch may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    pub max_requests: usize,
    /// Of the whole submission: Anthropic's request body, OpenAI's uploaded file.
    pub max_bytes: u64,
}

impl BatchLimits {
    /// Anthropic Message Batches: 100,000 requests or 256 MB.
    pub const ANTHROPIC: BatchLimits = BatchLimits {
        max_requests: 100_000,
        max_bytes: 256_000_000,
    };

    /// OpenAI Batch: 50,000 requests or 200 MB.
    pub const OPENAI: BatchLimits = BatchLimits {
        max_requests: 50_000,
        max_bytes: 200_000_000,
    };

    /// The provider's limits.
    pub fn of(kind: ProviderKind) -> BatchLimits {
        match kind {
            ProviderKind::Anthropic => BatchLimits::ANTHROPIC,
            ProviderKind::Openai | ProviderKind::Command => BatchLimits::OPENAI,
        }
    }
}

/// How long one batch-API exchange may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchTimeouts {
    /// Polls and cancels: small replies.
    pub control: Duration,
    /// Submissions and results: up to hundreds of megabytes each way.
    pub transfer: Duration,
}

impl Default for BatchTimeouts {
    fn default() -> Self {
        BatchTimeouts {
            control: Duration::from_secs(60),
            transfer: Duration::from_secs(30 * 60),
        }
    }
}

/// A batch the provider accepted.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub batch_id: String,
    /// The custom ids of its requests, in submission order.
    pub custom_ids: Vec<String>,
    /// Its state as the creation call returned it.
    pub state: BatchState,
}

/// What names one submission before its batch exists: the run and a token of rlm's own,
/// recorded in the run store before the create request is sent. OpenAI batches carry it as
/// their `metadata` ([`METADATA_RUN`], [`METADATA_TOKEN`]), so a batch whose creation reply
/// was lost is found by it; Anthropic's batches have no metadata (see [`reconcile`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionTag {
    pub run: String,
    pub token: String,
}

/// The `metadata` key of an OpenAI batch that names rlm's run.
pub const METADATA_RUN: &str = "rlm_run";
/// The `metadata` key of an OpenAI batch that holds its [`SubmissionTag::token`].
pub const METADATA_TOKEN: &str = "rlm_submission";

/// A batch as the provider's listing shows it.
#[derive(Debug, Clone)]
pub struct ListedBatch {
    pub state: BatchState,
    /// When the provider created it, in Unix milliseconds.
    pub created_at_ms: i64,
    /// Its [`SubmissionTag::token`], when the provider keeps metadata (OpenAI) and it has one.
    pub token: Option<String>,
    /// Whether it carries metadata at all (a batch tagged by another program, or by
    /// another submission, is not a candidate).
    pub tagged: bool,
}

/// One page of the provider's listing of batches, newest first.
#[derive(Debug, Clone, Default)]
pub struct BatchPage {
    pub batches: Vec<ListedBatch>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<String>,
}

/// What a failed create request leaves behind at the provider.
pub const SUBMITTING: &str = "submitting a batch";

/// One request's result.
#[derive(Debug, Clone)]
pub struct ItemResult {
    pub custom_id: String,
    pub outcome: ItemOutcome,
}

/// How a request of a batch ended.
#[derive(Debug, Clone)]
pub enum ItemOutcome {
    /// The model answered: the reply, as a realtime call would have received it.
    Succeeded(Reply),
    /// The provider could not run it. `retryable`: a server-side failure that another
    /// attempt may not meet (not an invalid request). Errored requests are not billed.
    Errored { reason: String, retryable: bool },
    /// Canceled before it ran (not billed).
    Canceled,
    /// Not run within the 24 hours (not billed).
    Expired,
}

impl ItemOutcome {
    /// `succeeded`, `errored`, `canceled` or `expired`, as both providers' counts say.
    pub fn name(&self) -> &'static str {
        match self {
            ItemOutcome::Succeeded(_) => "succeeded",
            ItemOutcome::Errored { .. } => "errored",
            ItemOutcome::Canceled => "canceled",
            ItemOutcome::Expired => "expired",
        }
    }
}

/// A succeeded request's reply: the provider's message (Anthropic) or chat completion
/// (OpenAI), scrubbed of the API key, read like a realtime reply.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: ProviderKind,
    message: Value,
}

impl Reply {
    pub(crate) fn new(kind: ProviderKind, message: Value) -> Self {
        Reply { kind, message }
    }

    /// The tokens it used, read as the realtime reply's.
    pub fn usage(&self) -> Usage {
        match self.kind {
            ProviderKind::Anthropic => super::anthropic::parse_usage(&self.message),
            ProviderKind::Openai | ProviderKind::Command => super::openai::parse_usage(&self.message),
        }
    }

    /// The answer to `request` (the unit's request: an Anthropic `--schema` answer is the
    /// forced tool's input, shaped by that schema).
    pub fn completion(&self, request: &CompletionRequest) -> Result<Completion, String> {
        match self.kind {
            ProviderKind::Anthropic => super::anthropic::parse_message(&self.message, request),
            ProviderKind::Openai | ProviderKind::Command => super::openai::parse_completion(&self.message),
        }
        .map_err(|bad| crate::provider::CallError::from(bad).reason)
    }

    /// The provider's reply as sent (scrubbed).
    pub fn raw(&self) -> &Value {
        &self.message
    }
}

/// A submission whose create reply was lost and whose batch the listing could not tell
/// ([`BatchError::Unreconciled`]).
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the reply to a batch submission of {} requests was lost at {server} ({reason}), and {}; its requests are not \
     sent again (that could pay twice): rlm resume looks again",
    custom_ids.len(),
    unsure_what(candidates)
)]
pub struct LostSubmission {
    pub server: String,
    pub reason: String,
    pub candidates: Vec<String>,
    /// The candidates have not ended: once they have, their results tell (the caller may
    /// wait for them, see [`reconcile`]).
    pub running: bool,
    /// The submission's token, and when its intent was recorded (Unix ms).
    pub token: String,
    pub recorded_at_ms: i64,
    /// Its custom ids, as sent.
    pub custom_ids: Vec<String>,
}

/// What went wrong with a batch-API call. Each message names the server or the batch.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BatchError {
    /// The server has no batch endpoint (an OpenAI-compatible server such as Ollama or
    /// llama.cpp): the caller stops, or with `--batch-api auto` makes realtime calls.
    #[error(
        "{server} has no batch API ({status} on {path}); run without --batch-api, or with --batch-api auto \
         to make realtime calls where there is none"
    )]
    Unsupported { server: String, path: String, status: u16 },
    /// The provider does not know this batch (deleted, or another key's).
    #[error(
        "batch {batch_id} is unknown to {server} ({status}); it may have been deleted or belong to another API key"
    )]
    UnknownBatch {
        server: String,
        batch_id: String,
        status: u16,
    },
    /// An HTTP exchange failed; `error.kind` says whether another attempt may succeed.
    #[error("{during} at {server}: {}", error.reason)]
    Call {
        server: String,
        during: &'static str,
        error: CallError,
    },
    /// The server answered with something that is not what the API promises.
    #[error("{during} at {server}: malformed reply ({reason})")]
    Malformed {
        server: String,
        during: &'static str,
        reason: String,
    },
    /// One request is larger than a whole batch may be: it can only go realtime.
    #[error("request {custom_id} is {bytes} bytes, more than a batch may hold ({limit} bytes); send it realtime")]
    ItemTooLarge { custom_id: String, bytes: u64, limit: u64 },
    /// A custom id the providers refuse.
    #[error("custom id `{0}` must be 1 to 64 letters, digits, `_` or `-` (custom_id_for derives one)")]
    InvalidCustomId(String),
    /// The same custom id twice in one batch: results could not be told apart.
    #[error("custom id `{0}` appears twice in one batch")]
    DuplicateCustomId(String),
    /// Results were asked for before the batch ended.
    #[error("batch {batch_id} has not ended (it is {status}); its results are not ready")]
    NotEnded { batch_id: String, status: BatchStatus },
    /// The provider refused the whole batch (OpenAI `failed`).
    #[error("batch {batch_id} failed at {server}: {reason}")]
    Failed {
        server: String,
        batch_id: String,
        reason: String,
    },
    /// A batch was created but the caller could not record it; it was canceled (when the
    /// cancel succeeded) so that nothing runs unrecorded.
    #[error("batch {batch_id} could not be recorded ({reason}); {}", if *canceled { "it was canceled" } else { "cancel it at the provider" })]
    NotRecorded {
        batch_id: String,
        reason: String,
        canceled: bool,
    },
    /// The reply to a create request was lost, and the provider's listing shows batches that
    /// may be it without telling which (or could not be read): its requests are not sent
    /// again; the next resume looks again.
    #[error("{0}")]
    Unreconciled(Box<LostSubmission>),
    /// This provider has no batch API at all (`--provider command`).
    #[error("the {0} provider has no batch API; run without --batch-api")]
    NoBatchApi(&'static str),
    /// The HTTP client could not be set up.
    #[error("{0}")]
    Setup(String),
}

impl BatchError {
    /// Whether the same call may succeed later (a throttle, an overload, a server error,
    /// a timeout, a malformed reply). The caller retries those on its budget.
    pub fn is_retryable(&self) -> bool {
        match self {
            BatchError::Call { error, .. } => !matches!(error.kind, ErrorKind::Fatal | ErrorKind::Unit),
            BatchError::Malformed { .. } => true,
            _ => false,
        }
    }

    /// A create request whose outcome is unknown: it was sent and the connection broke or
    /// timed out, the server answered with a server error (5xx), or its reply could not be
    /// read. The batch may exist at the provider, so it is looked for ([`reconcile`]) before
    /// anything is sent again.
    pub fn is_outcome_unknown(&self) -> bool {
        match self {
            BatchError::Call { during, error, .. } => {
                *during == SUBMITTING
                    && matches!(
                        error.kind,
                        ErrorKind::Transient | ErrorKind::Timeout | ErrorKind::Overloaded
                    )
            }
            BatchError::Malformed { during, .. } => *during == SUBMITTING,
            _ => false,
        }
    }

    /// The server has no batch API (the `--batch-api auto` fallback applies).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, BatchError::Unsupported { .. } | BatchError::NoBatchApi(_))
    }

    /// The server's `retry-after`, if it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            BatchError::Call { error, .. } => error.retry_after,
            _ => None,
        }
    }
}

/// A provider's batch API.
pub trait BatchApi: Send + Sync + std::fmt::Debug {
    fn kind(&self) -> ProviderKind;

    /// The server, as it may be shown (no credentials).
    fn server(&self) -> &str;

    /// What one batch may hold.
    fn limits(&self) -> BatchLimits;

    /// A chunker for this API's submissions and limits.
    fn chunker(&self) -> Chunker;

    /// One request as it goes into a submission: its body is exactly the realtime call's.
    fn encode(&self, item: &BatchItem) -> Result<Vec<u8>, BatchError>;

    /// Creates one batch of a submission's `body` (a [`Chunk`]'s), tagged with `tag` where the
    /// provider keeps metadata; returns its state. An error for which
    /// [`BatchError::is_outcome_unknown`] holds may have created it.
    fn submit<'a>(&'a self, body: Vec<u8>, tag: &'a SubmissionTag) -> BoxFuture<'a, Result<BatchState, BatchError>>;

    /// One page of the provider's listing of batches, newest first, from the cursor `after`
    /// (the previous page's [`BatchPage::next`]).
    fn list_page<'a>(&'a self, after: Option<&'a str>) -> BoxFuture<'a, Result<BatchPage, BatchError>>;

    /// Reads a batch's state.
    fn poll<'a>(&'a self, batch_id: &'a str) -> BoxFuture<'a, Result<BatchState, BatchError>>;

    /// Opens the results of an ended batch, to be read line by line.
    fn results<'a>(&'a self, state: &'a BatchState) -> BoxFuture<'a, Result<ResultStream, BatchError>>;

    /// Asks the provider to cancel a batch; returns its state after the request.
    fn cancel<'a>(&'a self, batch_id: &'a str) -> BoxFuture<'a, Result<BatchState, BatchError>>;

    /// Asks whether the server has this batch API at all (one small listing), before
    /// anything is planned around it: [`BatchError::Unsupported`] when it has none.
    fn probe(&self) -> BoxFuture<'_, Result<(), BatchError>>;
}

/// The batch API of the endpoint `config` describes, with the provider's limits unless
/// `limits` says otherwise (tests use small ones).
pub fn batch_api(
    config: &HttpConfig,
    limits: Option<BatchLimits>,
    timeouts: BatchTimeouts,
) -> Result<Box<dyn BatchApi>, BatchError> {
    let limits = limits.unwrap_or(BatchLimits::of(config.kind));
    match config.kind {
        ProviderKind::Anthropic => Ok(Box::new(AnthropicBatches::new(config, limits, timeouts)?)),
        ProviderKind::Openai => Ok(Box::new(OpenAiBatches::new(config, limits, timeouts)?)),
        ProviderKind::Command => Err(BatchError::NoBatchApi("command")),
    }
}

/// What [`submit_all`] did.
#[derive(Debug, Default)]
pub struct SubmitReport {
    /// Every batch created, in order (each already passed to the recorder).
    pub submitted: Vec<Submitted>,
    /// Requests that fit no batch (too large, or a bad or repeated custom id), with why:
    /// they were not sent.
    pub rejected: Vec<(String, BatchError)>,
}

/// Who keeps the record of a run's submissions (the run store): [`submit_all_within`] calls
/// it around each batch it creates.
pub trait Recorder {
    /// The tag of the next submission (nothing recorded yet): its token goes into every
    /// custom id of that submission before its requests are encoded.
    fn tag(&mut self) -> SubmissionTag;
    /// Records the intent to submit the batch `tag` names, of these requests (their custom
    /// ids as sent), *before* its create request is sent (a crash between the request and
    /// its reply then leaves the intent, and the next resume looks for the batch).
    fn intend(&mut self, tag: &SubmissionTag, custom_ids: &[String]) -> Result<(), String>;
    /// The batch exists (created, or found after a lost reply): recorded before anything
    /// waits for it. The intent `tag` is settled with it.
    fn record(&mut self, submitted: &Submitted, tag: &SubmissionTag) -> Result<(), String>;
    /// The create request of `tag` was refused, or the provider's listing showed that it
    /// created nothing: the intent is dropped.
    fn void(&mut self, tag: &SubmissionTag);
    /// Batch ids already recorded: never taken for a lost one.
    fn known(&mut self) -> HashSet<String>;
    /// Something the user should hear: a lost reply, and what was done about it.
    fn notice(&mut self, message: String);
}

/// A [`Recorder`] that records only the batches, through a closure (no intent outlives the
/// process: a lost reply is still looked for before anything is sent again).
struct ClosureRecorder<R> {
    record: R,
    next: u64,
}

impl<R> Recorder for ClosureRecorder<R>
where
    R: FnMut(&Submitted) -> Result<(), String>,
{
    fn tag(&mut self) -> SubmissionTag {
        self.next += 1;
        SubmissionTag {
            run: String::new(),
            token: new_token(self.next),
        }
    }

    fn intend(&mut self, _: &SubmissionTag, _: &[String]) -> Result<(), String> {
        Ok(())
    }

    fn record(&mut self, submitted: &Submitted, _: &SubmissionTag) -> Result<(), String> {
        (self.record)(submitted)
    }

    fn void(&mut self, _: &SubmissionTag) {}

    fn known(&mut self) -> HashSet<String> {
        HashSet::new()
    }

    fn notice(&mut self, message: String) {
        tracing::warn!("{message}");
    }
}

/// A submission token no other submission has: the time in nanoseconds and a sequence
/// number, hashed (OpenAI's metadata values may be 512 characters; this is 24).
pub fn new_token(sequence: u64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let digest = crate::hash::sha256_hex(format!("{nanos}-{sequence}-{}", std::process::id()).as_bytes());
    format!("sub-{}", &digest[..20])
}

/// Whether a request its provider batch did not answer — errored (when another attempt may
/// succeed), expired, or left out of the results — goes again after `sent` sends: while they
/// are within `retries`; else why it fails, and after how many sends. One rule on every path
/// (`rlm batch`, `rlm job`).
pub fn send_again(sent: u32, retries: u32, why: &str) -> Result<(), String> {
    if sent <= retries {
        Ok(())
    } else {
        Err(format!("{why} (after {sent} send{})", if sent == 1 { "" } else { "s" }))
    }
}

/// What is said of batch `batch` refused at `server` for the account's enqueued-token limit,
/// its `requests` sent again in batches of at most `half` (on every path: `rlm batch`, `rlm
/// job`).
pub fn token_limit_requeue(batch: &str, server: &str, requests: usize, half: usize) -> String {
    format!(
        "batch {batch} was refused: the tokens enqueued at {server} would pass the account's limit \
         (token_limit_exceeded); its {requests} requests go again in batches of at most {half}, once the run's \
         other batches have ended"
    )
}

/// [`submit_all`] with at most `max_requests` requests a batch (when given; below the
/// provider's limit: requests refused for the account's enqueued-token limit go again in
/// smaller batches), each submission recorded through `recorder` before it is sent and its
/// batch after it exists.
pub async fn submit_all_within<I>(
    api: &dyn BatchApi,
    items: I,
    max_requests: Option<usize>,
    recorder: &mut dyn Recorder,
) -> Result<SubmitReport, BatchError>
where
    I: IntoIterator<Item = BatchItem>,
{
    let mut report = SubmitReport::default();
    let mut chunker = api.chunker();
    if let Some(n) = max_requests {
        chunker.limit_requests(n);
    }
    // The submission being filled: its token is in each of its custom ids.
    let mut tag = recorder.tag();
    for item in items {
        let BatchItem {
            custom_id: unit_part,
            request,
        } = item;
        let mut item = BatchItem {
            custom_id: stamped_custom_id(&tag.token, &unit_part),
            request,
        };
        let encoded = match api.encode(&item) {
            Ok(encoded) => encoded,
            Err(e) => {
                report.rejected.push((unit_part, e));
                continue;
            }
        };
        match chunker.push(item.custom_id.clone(), encoded) {
            Ok(Some(full)) => {
                // This request did not fit: it starts the next submission, under its token.
                let next = recorder.tag();
                item.custom_id = stamped_custom_id(&next.token, &unit_part);
                match api.encode(&item) {
                    Ok(encoded) => chunker.restamp_pending(item.custom_id, encoded),
                    Err(e) => {
                        chunker.drop_pending();
                        report.rejected.push((unit_part, e));
                    }
                }
                let full_tag = std::mem::replace(&mut tag, next);
                submit_one(api, full, &full_tag, recorder, &mut report).await?;
            }
            Ok(None) => {}
            Err(e) => report.rejected.push((unit_part, e)),
        }
    }
    if let Some(last) = chunker.finish() {
        submit_one(api, last, &tag, recorder, &mut report).await?;
    }
    Ok(report)
}

/// Submits `items` in as many batches as the limits need. `record` is called with each
/// batch as soon as it exists, before the next is submitted: the caller writes it to the
/// run store there. When `record` fails the batch is canceled and the error returned
/// (the batches recorded before it stand). A failed submission returns its error; the
/// batches submitted before it were recorded.
pub async fn submit_all<I, R>(api: &dyn BatchApi, items: I, record: R) -> Result<SubmitReport, BatchError>
where
    I: IntoIterator<Item = BatchItem>,
    R: FnMut(&Submitted) -> Result<(), String>,
{
    let mut recorder = ClosureRecorder { record, next: 0 };
    // Boxed: a submission's future (its reconcile with the listing included) is large, and
    // it would be part of every caller's.
    Box::pin(submit_all_within(api, items, None, &mut recorder)).await
}

/// Creates the batch of one chunk: its intent recorded first; a create request whose
/// outcome is unknown is reconciled with the provider's listing before anything else
/// (found: recorded as if its reply had come; shown not created: the error, to be retried;
/// not told apart: [`BatchError::Unreconciled`], nothing sent again).
async fn submit_one(
    api: &dyn BatchApi,
    chunk: Chunk,
    tag: &SubmissionTag,
    recorder: &mut dyn Recorder,
    report: &mut SubmitReport,
) -> Result<(), BatchError> {
    let Chunk { custom_ids, body } = chunk;
    let recorded_at_ms = now_ms();
    recorder.intend(tag, &custom_ids).map_err(|reason| {
        BatchError::Setup(format!(
            "a batch submission could not be recorded before it was sent ({reason}); nothing was sent"
        ))
    })?;
    let error = match api.submit(body, tag).await {
        Ok(state) => return keep(api, recorder, report, custom_ids, state, tag).await,
        Err(e) if e.is_outcome_unknown() => e,
        Err(e) => {
            recorder.void(tag);
            return Err(e);
        }
    };
    let n = custom_ids.len();
    let mut intent = Intent {
        tag,
        recorded_at_ms,
        custom_ids: &custom_ids,
        excluded: recorder.known(),
    };
    // Boxed: the listing and the reading of results make a large future, rarely run.
    let reconciled = Box::pin(reconcile(api, &mut intent)).await;
    let unreconciled = |reason: String, candidates: Vec<String>, running: bool, custom_ids: Vec<String>| {
        BatchError::Unreconciled(Box::new(LostSubmission {
            server: api.server().to_string(),
            reason,
            candidates,
            running,
            token: tag.token.clone(),
            recorded_at_ms,
            custom_ids,
        }))
    };
    match reconciled {
        Ok(Reconciled::Found { state, how }) => {
            recorder.notice(format!(
                "the reply to the submission of {n} requests was lost ({error}); batch {} was found at {} ({how}): \
                 it is recorded and collected, not submitted again",
                state.batch_id,
                api.server()
            ));
            keep(api, recorder, report, custom_ids, state, tag).await
        }
        Ok(Reconciled::NotCreated { since_ms }) => {
            recorder.void(tag);
            recorder.notice(format!(
                "the reply to the submission of {n} requests was lost ({error}); {}: its requests are submitted \
                 again",
                none_since(api.server(), since_ms)
            ));
            Err(error)
        }
        Ok(Reconciled::Running(candidates)) => Err(unreconciled(error.to_string(), candidates, true, custom_ids)),
        Ok(Reconciled::Unsure(candidates)) => Err(unreconciled(error.to_string(), candidates, false, custom_ids)),
        Err(listing) => Err(unreconciled(
            format!(
                "{error}; and its listing of batches could not be read: {}",
                listing_error(&listing)
            ),
            Vec::new(),
            false,
            custom_ids,
        )),
    }
}

/// Records a batch that exists; one that cannot be recorded is canceled.
async fn keep(
    api: &dyn BatchApi,
    recorder: &mut dyn Recorder,
    report: &mut SubmitReport,
    custom_ids: Vec<String>,
    state: BatchState,
    tag: &SubmissionTag,
) -> Result<(), BatchError> {
    let submitted = Submitted {
        batch_id: state.batch_id.clone(),
        custom_ids,
        state,
    };
    if let Err(reason) = recorder.record(&submitted, tag) {
        // A batch nobody knows of would be paid for and never collected.
        let canceled = api.cancel(&submitted.batch_id).await.is_ok();
        return Err(BatchError::NotRecorded {
            batch_id: submitted.batch_id,
            reason,
            canceled,
        });
    }
    report.submitted.push(submitted);
    Ok(())
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What [`BatchError::Unreconciled`] says of the candidates.
fn unsure_what(candidates: &[String]) -> String {
    match candidates {
        [] => "whether it created a batch cannot be told now".to_string(),
        [one] => format!("batch {one} may be it, or not"),
        many => format!("batches {} may be it, and cannot be told apart yet", many.join(", ")),
    }
}

/// What a listing that shows no candidate tells, and only that: no batch created at
/// `server` since `since_ms` (by the provider's clock) is the submission. (A provider clock
/// more than [`reconcile::CLOCK_SKEW_MS`] behind this machine's would list the batch as
/// created before then.)
pub fn none_since(server: &str, since_ms: i64) -> String {
    let since = jiff::Timestamp::from_millisecond(since_ms)
        .map(|t| t.strftime("%H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| "the submission".to_string());
    format!("no batch created at {server} since {since} (by its clock) is it")
}

/// A listing that could not be read, in words that do not advise what would pay twice: a
/// 404 there is no reason to make realtime calls (the batch may exist), but a wrong key or
/// base URL.
pub fn listing_error(e: &BatchError) -> String {
    match e {
        BatchError::Unsupported { server, path, status } => {
            format!("{server} answered {status} on {path}: check the API key and the base URL the run was started with")
        }
        other => other.to_string(),
    }
}

/// The length of the stamp a submission's token puts in its custom ids.
const STAMP_LEN: usize = 16;

/// The most characters of a unit's part of a custom id: a stamp, `-` and the part make at
/// most the 64 the providers take.
const UNIT_PART_MAX: usize = 64 - STAMP_LEN - 1;

/// The stamp of submission `token` in its custom ids: 16 hex digits of its hash.
pub fn stamp_of(token: &str) -> String {
    let digest = crate::hash::sha256_hex(token.as_bytes());
    digest[..STAMP_LEN].to_string()
}

/// The custom id of a request of submission `token`: the stamp of the token, `-`, and the
/// unit's part ([`custom_id_for`]). Two submissions (of this run, another run over the same
/// files, or another program) never share a custom id, so a batch's results tell whose it
/// is (see [`reconcile`]).
pub fn stamped_custom_id(token: &str, unit_part: &str) -> String {
    format!("{}-{unit_part}", stamp_of(token))
}

/// Whether `custom_id` carries `stamp` ([`stamp_of`]).
pub fn carries_stamp(custom_id: &str, stamp: &str) -> bool {
    custom_id.len() > stamp.len() && custom_id.starts_with(stamp) && custom_id.as_bytes()[stamp.len()] == b'-'
}

/// The unit's part of a custom id: without its stamp (an id without one is all unit part).
pub fn unit_part(custom_id: &str) -> &str {
    let b = custom_id.as_bytes();
    let stamped = b.len() > STAMP_LEN + 1
        && b[..STAMP_LEN]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        && b[STAMP_LEN] == b'-';
    if stamped {
        &custom_id[STAMP_LEN + 1..]
    } else {
        custom_id
    }
}

/// How long to wait before poll number `polls` (0 for the first) of a batch: seconds at
/// first, doubling to five minutes. Most batches end within the hour; a poll costs one
/// small request.
pub fn poll_delay(polls: u32) -> Duration {
    PollSchedule::DEFAULT.delay(polls)
}

/// The spacing of polls: `first`, doubling after each poll, never above `most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollSchedule {
    pub first: Duration,
    pub most: Duration,
}

impl PollSchedule {
    /// Five seconds, doubling to five minutes (see [`poll_delay`]).
    pub const DEFAULT: PollSchedule = PollSchedule {
        first: Duration::from_secs(5),
        most: Duration::from_secs(300),
    };

    /// The wait before poll number `polls` (0 for the first).
    pub fn delay(&self, polls: u32) -> Duration {
        self.first
            .saturating_mul(1u32 << polls.min(16))
            .min(self.most.max(self.first))
    }
}

impl Default for PollSchedule {
    fn default() -> Self {
        PollSchedule::DEFAULT
    }
}

/// The server of a base URL as batches are recorded with it and messages name it: the URL
/// without a trailing slash and without credentials. A resume compares it with the server
/// each batch was recorded at.
pub fn server_name(base_url: &str) -> String {
    crate::secret::redact_url(base_url.trim_end_matches('/')).into_owned()
}

/// Whether `id` is a custom id both providers take: 1 to 64 of `[A-Za-z0-9_-]`.
pub fn is_valid_custom_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The unit's part of a custom id: the unit id itself when the providers take it with a
/// stamp before it ([`stamped_custom_id`]), otherwise `u-` and 40 hex digits of its sha256
/// (stable, so a resume derives the same one).
pub fn custom_id_for(unit_id: &str) -> String {
    if is_valid_custom_id(unit_id) && unit_id.len() <= UNIT_PART_MAX && !unit_id.starts_with("u-") {
        return unit_id.to_string();
    }
    let digest = crate::hash::sha256_hex(unit_id.as_bytes());
    format!("u-{}", &digest[..40])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_are_kept_or_derived() {
        assert_eq!(custom_id_for("unit-0007"), "unit-0007");
        let derived = custom_id_for("src/a.ts#L1-L40");
        assert!(is_valid_custom_id(&derived) && derived.starts_with("u-") && derived.len() == 42);
        assert_eq!(derived, custom_id_for("src/a.ts#L1-L40"), "stable");
        assert_ne!(derived, custom_id_for("src/b.ts#L1-L40"));
        // An id shaped like a derived one is derived too, so the two never collide.
        assert_ne!(custom_id_for(&derived), derived);
        assert!(!is_valid_custom_id(""));
        assert!(!is_valid_custom_id(&"a".repeat(65)));
        // Room is left for a stamp.
        assert_eq!(custom_id_for(&"a".repeat(47)), "a".repeat(47));
        assert!(custom_id_for(&"a".repeat(48)).starts_with("u-"));
    }

    #[test]
    fn a_stamp_names_the_submission_and_keeps_the_unit_s_part() {
        let long = custom_id_for(&"x/".repeat(40));
        for part in ["unit-0007", long.as_str(), &"a".repeat(47)] {
            let id = stamped_custom_id("sub-1", part);
            assert!(is_valid_custom_id(&id), "{id}");
            assert_eq!(unit_part(&id), part);
            assert!(carries_stamp(&id, &stamp_of("sub-1")));
            assert!(!carries_stamp(&id, &stamp_of("sub-2")));
        }
        assert_ne!(stamped_custom_id("sub-1", "a"), stamped_custom_id("sub-2", "a"));
        assert_eq!(unit_part("unit-0007"), "unit-0007", "an id without a stamp");
    }

    #[test]
    fn polls_back_off_to_five_minutes() {
        let delays: Vec<u64> = (0..8).map(|n| poll_delay(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(poll_delay(u32::MAX).as_secs(), 300);
        let fast = PollSchedule {
            first: Duration::from_millis(20),
            most: Duration::from_millis(50),
        };
        let delays: Vec<u128> = (0..4).map(|n| fast.delay(n).as_millis()).collect();
        assert_eq!(delays, [20, 40, 50, 50]);
    }

    #[test]
    fn statuses_round_trip_and_know_when_they_end() {
        for name in [
            "validating",
            "in_progress",
            "finalizing",
            "canceling",
            "ended",
            "failed",
            "expired",
            "canceled",
        ] {
            let status = BatchStatus::from_name(name).unwrap();
            assert_eq!(status.name(), name);
            assert_eq!(
                status.has_ended(),
                matches!(name, "ended" | "failed" | "expired" | "canceled")
            );
        }
        assert_eq!(BatchStatus::from_name("cancelling"), None);
    }

    #[test]
    fn errors_say_whether_to_retry() {
        let call = |kind| BatchError::Call {
            server: "s".into(),
            during: "polling",
            error: CallError::new(kind, "x"),
        };
        assert!(call(ErrorKind::Overloaded).is_retryable());
        assert!(call(ErrorKind::RateLimited).is_retryable());
        assert!(!call(ErrorKind::Fatal).is_retryable());
        let unsupported = BatchError::Unsupported {
            server: "http://127.0.0.1:11434".into(),
            path: "/v1/batches".into(),
            status: 404,
        };
        assert!(unsupported.is_unsupported() && !unsupported.is_retryable());
        assert!(unsupported
            .to_string()
            .starts_with("http://127.0.0.1:11434 has no batch API (404"));
    }
}
