//! Execution: the bounded pool, the retry policy and the shared rate-limit cooldown.

mod call;
mod cooldown;
mod pool;
mod retry;

pub use call::{call_with_retries, CallContext, CallFailure, CallResult};
pub use cooldown::Cooldown;
pub use pool::{run_pool, Flow, Interrupt, PoolEnd, PoolHandler, GRACE};
pub use retry::RetryPolicy;

use std::time::Duration;

/// Something the user should hear about while calls are in flight.
#[derive(Debug, Clone)]
pub enum Notice {
    /// A call failed in a retryable way and will be tried again after `wait`.
    Retrying {
        label: String,
        attempt: u32,
        reason: String,
        wait: Duration,
    },
    /// A 429: every call pauses for `wait`.
    RateLimited { wait: Duration },
    /// Something went wrong that costs nothing finished (a cache write failed).
    Warning(String),
}
