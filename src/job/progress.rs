//! What a person sees while a job runs: one bar per phase on a terminal (the phase's
//! batches, failures, cost so far), plain lines in CI (one per finished batch, as the
//! seed's activity log), and one summary line as each phase ends. Nothing with `--quiet`;
//! failures are always shown.

use std::time::{Duration, Instant};

use super::state::PhaseState;
use crate::money::usd;
use crate::printer::plural;
use crate::printer::{Printer, ProgressStyleKind};

/// The progress display of one invocation.
pub struct Progress {
    printer: Printer,
    kind: ProgressStyleKind,
    phase: String,
    total: usize,
    done: usize,
    failed: usize,
    started: Instant,
}

impl Progress {
    pub fn new(printer: Printer) -> Self {
        Progress {
            kind: printer.progress_kind(),
            printer,
            phase: String::new(),
            total: 0,
            done: 0,
            failed: 0,
            started: Instant::now(),
        }
    }

    /// A phase begins (whether or not it has batches): its summary line names it.
    pub fn phase_begun(&mut self, label: &str) {
        self.phase = label.to_string();
        self.total = 0;
        self.done = 0;
        self.failed = 0;
        self.started = Instant::now();
    }

    /// A phase's batches start: `already` of its `total` batches were done before.
    pub fn phase_started(&mut self, label: &str, total: usize, already: usize) {
        self.phase = label.to_string();
        self.total = total;
        self.done = already;
        self.failed = 0;
        let resumed = if already > 0 {
            format!(" ({already} done before)")
        } else {
            String::new()
        };
        let s = if total == 1 { "" } else { "es" };
        self.printer.progress(&format!("{label}: {total} batch{s}{resumed}"));
        if self.kind == ProgressStyleKind::Bar && total > already {
            self.printer.start_bar(total as u64);
            self.redraw(0.0);
        }
    }

    /// A batch finished with its answer.
    pub fn batch_done(&mut self, batch: &str, items: usize, duration: Duration, cached: bool, phase_cost: f64) {
        self.done += 1;
        if self.kind == ProgressStyleKind::Lines {
            let how = if cached {
                "from the cache".to_string()
            } else {
                format!("{:.1}s", duration.as_secs_f64())
            };
            // A report's or a reduce's call answers for no item of its own: its time alone.
            let what = if items == 0 {
                how
            } else {
                format!("{}, {how}", plural(items, "item"))
            };
            self.printer
                .progress(&format!("  {batch} completed ({what}) [{}/{}]", self.done, self.total));
        }
        self.redraw(phase_cost);
    }

    /// A batch failed for good: always shown.
    pub fn batch_failed(&mut self, batch: &str, reason: &str, phase_cost: f64) {
        self.failed += 1;
        self.done += 1;
        self.printer.warn(&format!("{} {batch} failed: {reason}", self.phase));
        self.redraw(phase_cost);
    }

    /// An item the phase leaves unprocessed without sending it: always shown.
    pub fn item_left_out(&self, id: &str, why: &str) {
        self.printer
            .warn(&format!("{}: item {id} left unprocessed: {why}", self.phase));
    }

    /// An answer or a call was retried.
    pub fn retried(&self, batch: &str, what: &str) {
        if self.kind == ProgressStyleKind::Lines {
            self.printer.progress(&format!("  {batch} RETRY ({what})"));
        }
    }

    /// Something a worker said (an answer asked for again).
    pub fn said(&self, message: &str) {
        if self.kind == ProgressStyleKind::Lines {
            self.printer.progress(&format!("  {message}"));
        }
    }

    fn redraw(&self, cost: f64) {
        if self.kind != ProgressStyleKind::Bar {
            return;
        }
        let failed = if self.failed > 0 {
            format!(" · {} failed", self.failed)
        } else {
            String::new()
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        self.printer.update_bar(
            self.done as u64,
            self.total as u64,
            format!("{}{failed} · {} · {elapsed:.0}s", self.phase, usd(cost)),
        );
    }

    /// A phase ended: its summary line.
    pub fn phase_finished(&mut self, state: &PhaseState) {
        self.printer.finish_bar();
        let failed = match (state.batches_failed, state.unprocessed.len()) {
            (0, 0) => String::new(),
            (0, items) => format!(", {} unprocessed", plural(items, "item")),
            (batches, items) => format!(", {batches} failed ({} unprocessed)", plural(items, "item")),
        };
        let cached = if state.batches_cached > 0 {
            format!(", {} from the cache", state.batches_cached)
        } else {
            String::new()
        };
        self.printer.progress(&format!(
            "{}: {}/{} done{failed}{cached}, {}, {:.1}s",
            self.phase,
            state.batches_done,
            state.batches_total,
            usd(state.cost_usd),
            self.started.elapsed().as_secs_f64()
        ));
    }

    /// A line about the job (pauses, notes).
    pub fn note(&self, text: &str) {
        self.printer.progress(text);
    }
}
