//! The retry policy: how often, and how long to wait.
//!
//! Faults (server errors, timeouts, resets, malformed replies) have a count budget
//! (`--retries`). Rate limits have a time budget instead (`--rate-limit-wait`): a 429 says
//! "not now", not "broken", so a throttled run slows down but never fails files for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often and how long to wait between attempts of one call.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Fault retries after the first attempt.
    pub retries: u32,
    /// How long one call may spend waiting out rate limits.
    pub rate_limit_wait: Duration,
    /// The first backoff delay; each retry doubles it.
    pub base: Duration,
    /// No single wait is longer than this.
    pub max: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based): "equal jitter", uniform in
    /// [d/2, d] with d = base·2^(retry-1) capped at `max`, so concurrent callers that failed
    /// together do not come back together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self.base.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        let d = exp.min(self.max);
        d / 2 + d.mul_f64(random_unit() / 2.0)
    }

    /// The wait after a `retry-after`: what the server asked, plus up to 10 % (at most
    /// 250 ms) so the pool does not stampede back in the same instant.
    pub fn after_server_hint(&self, hint: Duration) -> Duration {
        hint + hint.mul_f64(0.1).min(Duration::from_millis(250)).mul_f64(random_unit())
    }
}

/// A uniform number in [0, 1): a xorshift step over a shared state seeded from the clock.
/// Jitter needs no cryptographic randomness, so this saves a dependency.
pub(super) fn random_unit() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
            | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let p = RetryPolicy {
            retries: 5,
            rate_limit_wait: Duration::from_secs(1),
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for _ in 0..100 {
            let first = p.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = p.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            assert!(p.backoff(30) <= Duration::from_secs(1));
        }
    }

    #[test]
    fn server_hint_is_honoured() {
        let p = RetryPolicy {
            retries: 1,
            rate_limit_wait: Duration::from_secs(1),
            base: Duration::from_millis(1),
            max: Duration::from_secs(1),
        };
        let w = p.after_server_hint(Duration::from_secs(2));
        assert!(w >= Duration::from_secs(2) && w <= Duration::from_millis(2250));
    }
}
