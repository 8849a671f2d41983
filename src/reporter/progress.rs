//! The live progress display: a bar on a terminal, one plain line per finished unit
//! without one (CI, an agent reading stderr), nothing but warnings with `--quiet`. It
//! counts the units that are called (cache hits are not progress) as they are queued, so
//! summarize calls join the same display.

use std::collections::HashSet;
use std::time::Instant;

use super::Reporter;
use crate::escape;
use crate::exec::{Event, WidthWhy};
use crate::printer::{Printer, ProgressStyleKind};
use crate::provider::ErrorKind;
use crate::report::format_duration;
use crate::unit::UnitId;

/// The progress display of one run.
pub struct ProgressReporter {
    printer: Printer,
    kind: ProgressStyleKind,
    /// A model with no price (a local server): no dollar figures.
    free: bool,
    total: usize,
    done: usize,
    failed: usize,
    in_flight: HashSet<UnitId>,
    cost: f64,
    started: Option<Instant>,
}

impl ProgressReporter {
    pub fn new(printer: Printer, free: bool) -> Self {
        ProgressReporter {
            kind: printer.progress_kind(),
            printer,
            free,
            total: 0,
            done: 0,
            failed: 0,
            in_flight: HashSet::new(),
            cost: 0.0,
            started: None,
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.printer.finish_bar();
    }

    fn counter(&self) -> String {
        let width = self.total.to_string().len();
        format!("[{:>width$}/{}]", self.done, self.total)
    }

    /// Time left, from the pace so far; unknown before the first unit finishes.
    fn eta(&self) -> String {
        match (self.started, self.done) {
            (Some(start), done) if done > 0 => {
                let per_unit = start.elapsed().as_millis() as f64 / done as f64;
                let left = (self.total.saturating_sub(done) as f64 * per_unit) as u64;
                format_duration(left)
            }
            _ => "…".into(),
        }
    }

    fn refresh(&self) {
        if self.kind != ProgressStyleKind::Bar {
            return;
        }
        let cost = if self.free {
            String::new()
        } else {
            format!(" · {}", crate::money::usd(self.cost))
        };
        self.printer.update_bar(
            self.done as u64,
            self.total as u64,
            format!(
                "active {} · failed {}{cost} · ETA {}",
                self.in_flight.len(),
                self.failed,
                self.eta()
            ),
        );
    }

    fn line(&self, text: &str) {
        if self.kind != ProgressStyleKind::Off {
            self.printer.progress(text);
        }
    }
}

impl Reporter for ProgressReporter {
    fn report(&mut self, event: &Event) {
        match event {
            Event::Queued { .. } => {
                if self.total == 0 {
                    self.printer.start_bar(1);
                }
                self.total += 1;
            }
            Event::Started { unit, .. } => {
                self.started.get_or_insert_with(Instant::now);
                self.in_flight.insert(unit.clone());
            }
            Event::Completed { cached: true, .. } => return,
            Event::Completed {
                unit,
                label,
                duration_ms,
                usage,
                cost_usd,
                truncated,
                ..
            } => {
                self.in_flight.remove(unit);
                self.done += 1;
                self.cost += cost_usd;
                if self.kind == ProgressStyleKind::Lines {
                    self.line(&format!(
                        "{} ok     {} ({}, {} tokens{})",
                        self.counter(),
                        escape::name(label),
                        format_duration(*duration_ms),
                        usage.total(),
                        if *truncated { ", TRUNCATED" } else { "" }
                    ));
                }
            }
            Event::Failed {
                unit,
                label,
                reason,
                cost_usd,
                ..
            } => {
                self.in_flight.remove(unit);
                self.done += 1;
                self.failed += 1;
                self.cost += cost_usd;
                self.line(&format!("{} FAILED {}: {reason}", self.counter(), escape::name(label)));
            }
            Event::Cancelled { unit, .. } => {
                self.in_flight.remove(unit);
            }
            Event::Retried {
                label,
                attempt,
                reason,
                wait_ms,
                error: ErrorKind::RateLimited,
                paused_all,
                ..
            } => self.line(&if *paused_all {
                format!(
                    "rate limited: pausing all calls for {:.1}s, then retrying {} (attempt {attempt}: {reason})",
                    *wait_ms as f64 / 1000.0,
                    escape::name(label)
                )
            } else {
                format!(
                    "rate limited: retrying {} in {:.1}s, the other calls go on (attempt {attempt}: {reason})",
                    escape::name(label),
                    *wait_ms as f64 / 1000.0
                )
            }),
            Event::Retried {
                label,
                attempt,
                reason,
                wait_ms,
                ..
            } => self.line(&format!(
                "retrying {} in {:.1}s (attempt {attempt} failed: {reason})",
                escape::name(label),
                *wait_ms as f64 / 1000.0
            )),
            Event::WidthChanged {
                from,
                to,
                why: WidthWhy::Pushback,
            } if to < from => self.line(&format!(
                "the provider is pushing back: {to} calls in flight (was {from})"
            )),
            Event::WidthChanged { .. } => {}
            Event::Warning { message } => self.printer.warn(message),
            Event::Stopping { reason, fatal: true } => self.printer.error(reason),
            Event::Stopping { reason, .. } => self.printer.important(&format!("rlm: {reason}")),
            Event::BatchSubmitted {
                batch_id,
                phase,
                requests,
            } => self.line(&format!(
                "submitted batch {batch_id} ({requests} {} of the {phase} phase) to the provider's batch API",
                if *requests == 1 { "request" } else { "requests" }
            )),
            // The batch-API stage shows its wait itself.
            // A cache that cannot take an answer is said when the run stops, with the count.
            Event::RunStarted { .. } | Event::BatchPolled { .. } | Event::Uncached { .. } => {}
        }
        self.refresh();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printer::PrinterMode;
    use crate::provider::Usage;
    use crate::secret::Redactor;
    use crate::unit::UnitKind;

    fn completed(unit: &str, cached: bool) -> Event {
        Event::Completed {
            unit: UnitId::named(unit),
            label: unit.into(),
            kind: UnitKind::Map,
            attempts: 1,
            duration_ms: 10,
            usage: Usage::default(),
            saved: Usage::default(),
            cost_usd: 0.5,
            cache_saved_usd: 0.0,
            cached,
            truncated: false,
            result_file: None,
        }
    }

    #[test]
    fn counts_called_units_only_and_estimates_after_the_first() {
        let printer = Printer::new(PrinterMode::default(), Redactor::default());
        let mut p = ProgressReporter::new(printer, false);
        p.report(&completed("cached", true));
        assert_eq!((p.total, p.done), (0, 0));
        for u in ["a", "b"] {
            p.report(&Event::Queued {
                unit: UnitId::named(u),
                label: u.into(),
                kind: UnitKind::Map,
            });
        }
        p.report(&Event::Started {
            unit: UnitId::named("a"),
            attempt: 1,
        });
        assert_eq!(p.eta(), "…", "no ETA before the first unit finishes");
        assert_eq!(p.in_flight.len(), 1);
        p.report(&completed("a", false));
        assert_eq!((p.total, p.done, p.in_flight.len()), (2, 1, 0));
        assert_eq!(p.cost, 0.5);
        assert_eq!(p.counter(), "[1/2]");
    }
}
