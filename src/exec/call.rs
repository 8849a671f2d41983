//! One model call with retries, under the pool's shared cooldown.

use tokio::sync::mpsc::UnboundedSender;

use super::{Cooldown, Notice, RetryPolicy};
use crate::provider::{CallError, Completion, CompletionRequest, Provider};

/// What every call of a run shares.
#[derive(Debug)]
pub struct CallContext {
    pub provider: Provider,
    pub policy: RetryPolicy,
    pub cooldown: Cooldown,
    pub notices: UnboundedSender<Notice>,
}

/// Why a call finally failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// This unit failed; the run goes on.
    Unit(String),
    /// The provider refused us; the run stops.
    Fatal(String),
}

/// The end of a call: its answer or failure, and how many attempts it took.
#[derive(Debug)]
pub struct CallResult {
    pub outcome: Result<Completion, CallFailure>,
    pub attempts: u32,
}

/// Calls the provider until it answers, a final error arrives, or the retries run out.
pub async fn call_with_retries(ctx: &CallContext, request: &CompletionRequest<'_>, label: &str) -> CallResult {
    let mut attempt = 0;
    loop {
        attempt += 1;
        ctx.cooldown.wait().await;
        let error = match ctx.provider.complete(request).await {
            Ok(completion) => {
                return CallResult {
                    outcome: Ok(completion),
                    attempts: attempt,
                }
            }
            Err(e) => e,
        };
        let (reason, retry_after, rate_limited) = match error {
            CallError::Retryable {
                reason,
                retry_after,
                rate_limited,
            } => (reason, retry_after, rate_limited),
            CallError::Unit(m) => return failed(CallFailure::Unit(m), attempt),
            CallError::Fatal(m) => return failed(CallFailure::Fatal(m), attempt),
        };
        if attempt > ctx.policy.retries {
            let tries = if attempt == 1 {
                "1 attempt".to_string()
            } else {
                format!("{attempt} attempts")
            };
            return failed(CallFailure::Unit(format!("{reason} (gave up after {tries})")), attempt);
        }
        let wait = match retry_after {
            Some(hint) => ctx.policy.after_server_hint(hint),
            None => ctx.policy.backoff(attempt),
        };
        let _ = ctx.notices.send(Notice::Retrying {
            label: label.to_string(),
            attempt,
            reason,
            wait,
        });
        if rate_limited {
            // Everyone waits, this call included (at the top of the loop).
            ctx.cooldown.extend(wait);
            let _ = ctx.notices.send(Notice::RateLimited { wait });
        } else {
            tokio::time::sleep(wait).await;
        }
    }
}

fn failed(failure: CallFailure, attempts: u32) -> CallResult {
    CallResult {
        outcome: Err(failure),
        attempts,
    }
}
