//! The shared cooldown: one 429 pauses every call of the pool, not only the one that got it.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A point in time before which no call may start.
#[derive(Debug, Default)]
pub struct Cooldown {
    until: Mutex<Option<Instant>>,
}

impl Cooldown {
    /// Makes every caller of [`Cooldown::wait`] wait at least `d` from now.
    pub fn extend(&self, d: Duration) {
        let target = Instant::now() + d;
        let mut until = self.until.lock().unwrap_or_else(|e| e.into_inner());
        if until.is_none_or(|u| u < target) {
            *until = Some(target);
        }
    }

    /// Returns once no cooldown is in force (re-checking: it may be extended meanwhile).
    pub async fn wait(&self) {
        loop {
            let until = *self.until.lock().unwrap_or_else(|e| e.into_inner());
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_honours_the_longest_extension() {
        let c = Cooldown::default();
        let start = Instant::now();
        c.wait().await;
        assert!(start.elapsed() < Duration::from_millis(50));
        c.extend(Duration::from_millis(300));
        c.extend(Duration::from_millis(100));
        c.wait().await;
        assert!(start.elapsed() >= Duration::from_millis(300));
    }
}
