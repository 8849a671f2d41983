//! What happens during a run, as typed events: the executor and the dispatcher emit them,
//! reporters (progress display, event log, report builder) consume them. Names follow the
//! supervisor seed's lifecycle events (`task:queued`, `task:started`, …).

use serde::Serialize;

use crate::provider::batch_api::{BatchCounts, BatchStatus};
use crate::provider::{ErrorKind, Usage};
use crate::unit::{UnitId, UnitKind};

/// One thing that happened.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event")]
pub enum Event {
    /// Planning is done; `to_call` units will be sent, `cached` were served from the cache.
    #[serde(rename = "run:started")]
    RunStarted {
        units: usize,
        cached: usize,
        to_call: usize,
        width: usize,
        model: String,
        provider: String,
    },
    /// A unit will be dispatched.
    #[serde(rename = "task:queued")]
    Queued {
        unit: UnitId,
        label: std::sync::Arc<str>,
        kind: UnitKind,
    },
    /// An attempt of a unit got its slot and was sent.
    #[serde(rename = "task:started")]
    Started { unit: UnitId, attempt: u32 },
    /// An attempt failed in a retryable way; the next one follows after `wait_ms`.
    #[serde(rename = "task:retried")]
    Retried {
        unit: UnitId,
        label: std::sync::Arc<str>,
        attempt: u32,
        error: ErrorKind,
        reason: String,
        wait_ms: u64,
        /// A 429 paused every call of the pool (a spent window), not only this one.
        paused_all: bool,
    },
    /// The pool's width changed: the provider pushed back (or calls succeed again after
    /// it did), or the width search of a local server took or undid a step.
    #[serde(rename = "pool:width")]
    WidthChanged { from: usize, to: usize, why: WidthWhy },
    /// A unit has its answer, written to the cache and its result file.
    #[serde(rename = "task:completed")]
    Completed {
        unit: UnitId,
        label: std::sync::Arc<str>,
        kind: UnitKind,
        attempts: u32,
        duration_ms: u64,
        usage: Usage,
        /// Tokens a cache hit saved (the usage of the call that produced it).
        saved: Usage,
        cost_usd: f64,
        /// What the provider's prompt cache saved on this call (negative when a prefix was
        /// written and not read back).
        cache_saved_usd: f64,
        cached: bool,
        truncated: bool,
        result_file: Option<String>,
    },
    /// A unit failed for good. (A call the provider refused for the whole run fails no
    /// unit: its unit is cancelled, not run, and the refusal is the run's `Stopping`.)
    #[serde(rename = "task:failed")]
    Failed {
        unit: UnitId,
        label: std::sync::Arc<str>,
        kind: UnitKind,
        attempts: u32,
        duration_ms: u64,
        usage: Usage,
        cost_usd: f64,
        error: Option<ErrorKind>,
        reason: String,
    },
    /// A unit's answer (completed just before) was paid for but the cache did not take it
    /// (a full disk): it is kept in the run directory's `pending-cache/` until `rlm resume`
    /// caches it.
    #[serde(rename = "task:uncached")]
    Uncached { unit: UnitId, label: std::sync::Arc<str> },
    /// A unit was stopped before it finished (interrupt, or the run stopped).
    #[serde(rename = "task:cancelled")]
    Cancelled {
        unit: UnitId,
        label: std::sync::Arc<str>,
        kind: UnitKind,
        reason: String,
    },
    /// Something the user should know that fails nothing.
    #[serde(rename = "run:warning")]
    Warning { message: String },
    /// The run stopped dispatching (budget, write failure, fatal error, interrupt).
    #[serde(rename = "run:stopping")]
    Stopping {
        reason: String,
        /// The provider stopped the run (an unreachable or silent server, a rate limit no
        /// call may wait out, a refused batch API): said as the run's error, and the run
        /// has FAILED — not a budget or a write failure, which leave it resumable as is.
        fatal: bool,
    },
    /// A batch was created at the provider's batch API (and recorded in the run store
    /// before anything waited for it).
    #[serde(rename = "batch:submitted")]
    BatchSubmitted {
        batch_id: String,
        /// `map`, `members` (files of a batch retried alone) or `aggregate`.
        phase: String,
        requests: usize,
    },
    /// A poll of a batch: where its requests are.
    #[serde(rename = "batch:polled")]
    BatchPolled {
        batch_id: String,
        status: BatchStatus,
        counts: BatchCounts,
    },
}

/// Why the pool's width changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WidthWhy {
    /// A 429 or an overloaded server, or the calls that succeed after one.
    Pushback,
    /// A local server's width search: one more call tried, kept or given back.
    Search,
}
