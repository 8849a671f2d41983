//! The width search of a local server: one call at a time first, then one more while each
//! step raises the calls completed per second by at least half of what it could add.
//! llama.cpp's server runs one request at a time, so a second call only queues there (and
//! may time out waiting); vLLM batches, and rewards every step.

use tokio::time::Instant;

/// The width search of a local server: measure the calls completed per second at one width,
/// try one more, keep it while it pays.
#[derive(Debug, Default)]
pub struct WidthSearch {
    /// The best width so far and its rate (calls a second).
    best: Option<(usize, f64)>,
    /// Successes of the width being measured, and the time of the first.
    done: usize,
    first: Option<Instant>,
    settled: bool,
}

impl WidthSearch {
    /// Completions measured at a width before its rate is judged.
    pub(super) fn sample(width: usize) -> usize {
        2 * width + 2
    }

    /// A call that started at `width` succeeded at `now`: the width to go to, if any.
    pub(super) fn succeeded(&mut self, now: Instant, width: usize, cap: usize) -> Option<usize> {
        if self.settled {
            return None;
        }
        self.done += 1;
        // The rate between the first completion and the last: steady state, without the
        // time the first call of the width spent waiting behind the calls before it.
        let first = *self.first.get_or_insert(now);
        if self.done < Self::sample(width) {
            return None;
        }
        let elapsed = now.saturating_duration_since(first).as_secs_f64().max(1e-6);
        let rate = (self.done - 1) as f64 / elapsed;
        self.done = 0;
        self.first = None;
        match self.best {
            Some((best, best_rate)) if rate < best_rate * (1.0 + 0.5 / best as f64) => {
                self.settled = true;
                (best != width).then_some(best)
            }
            _ => {
                self.best = Some((width, rate));
                if width < cap {
                    Some(width + 1)
                } else {
                    self.settled = true;
                    None
                }
            }
        }
    }

    /// A fault or pushback at `width`: if a step was being tried, back to the best width
    /// for good.
    pub(super) fn trouble(&mut self, width: usize) -> Option<usize> {
        let (best, _) = self.best?;
        if self.settled || width <= best {
            return None;
        }
        self.settled = true;
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_width_search_keeps_a_step_only_while_it_pays() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // A server that runs calls side by side: each width completes `width` calls per 100 ms.
        let mut parallel = WidthSearch::default();
        let mut width = 1;
        let mut now = 0;
        let mut steps = Vec::new();
        for _ in 0..200 {
            now += 100 / width as u64;
            if let Some(to) = parallel.succeeded(at(now), width, 4) {
                steps.push(to);
                width = to;
            }
        }
        assert_eq!(steps, [2, 3, 4]);
        // One request at a time: two at once complete no faster. Back to 1, for good.
        let mut serial = WidthSearch::default();
        let mut width = 1;
        let mut steps = Vec::new();
        for i in 1..200 {
            if let Some(to) = serial.succeeded(at(i * 100), width, 4) {
                steps.push(to);
                width = to;
            }
        }
        assert_eq!(steps, [2, 1]);
        assert_eq!(serial.trouble(2), None, "settled");
    }
}
