//! The live progress display: a bar on a terminal, one plain line per finished unit
//! without one (CI, an agent reading stderr), nothing but warnings with `--quiet`. It
//! counts the units that are called (cache hits are not progress) as they are queued.
//!
//! The count is against what is known (issue 25): the planned units are counted as one
//! group (`[3/8]`), and the calls that join later each in their own — the batch members
//! asked again alone (`[asked alone 1/5]`) and the aggregation calls (`[aggregate 1/1]`) —
//! so a counter never grows under the user's eyes (`[2/2]` → `[3/7]`). The bar appears with
//! the first call sent, so a run that calls nothing (a merge of cached answers) leaves no
//! empty bar behind.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::Reporter;
use crate::duration::format_duration;
use crate::escape;
use crate::exec::{Event, WidthWhy};
use crate::printer::{Printer, ProgressStyleKind};
use crate::provider::ErrorKind;
use crate::unit::{UnitId, UnitKind};

/// Which count a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    /// A unit of the plan.
    Planned,
    /// A batch member asked again alone, after its batch's answer left it out.
    Alone,
    /// A summary or synthesis call.
    Aggregate,
}

impl Group {
    fn prefix(self) -> &'static str {
        match self {
            Group::Planned => "",
            Group::Alone => "asked alone ",
            Group::Aggregate => "aggregate ",
        }
    }
}

/// Calls of one group: how many are known, how many ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    total: usize,
    done: usize,
}

/// The progress display of one run.
pub struct ProgressReporter {
    printer: Printer,
    kind: ProgressStyleKind,
    /// A model with no price (a local server): no dollar figures.
    free: bool,
    /// The plan's units: a map unit queued that is none of them is a member asked alone.
    planned: HashSet<UnitId>,
    tallies: HashMap<Group, Tally>,
    groups: HashMap<UnitId, Group>,
    /// The group of the latest call queued: the one the bar shows.
    current: Group,
    bar_started: bool,
    failed: usize,
    in_flight: HashSet<UnitId>,
    cost: f64,
    started: Option<Instant>,
}

impl ProgressReporter {
    /// `planned`: the ids of the plan's units (see [`Group`]).
    pub fn new(printer: Printer, free: bool, planned: HashSet<UnitId>) -> Self {
        ProgressReporter {
            kind: printer.progress_kind(),
            printer,
            free,
            planned,
            tallies: HashMap::new(),
            groups: HashMap::new(),
            current: Group::Planned,
            bar_started: false,
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

    fn tally(&self, group: Group) -> Tally {
        self.tallies.get(&group).copied().unwrap_or_default()
    }

    /// `[ 3/12]`, `[asked alone 1/5]`: the unit's group's count.
    fn counter(&self, unit: &UnitId) -> String {
        let group = self.groups.get(unit).copied().unwrap_or(Group::Planned);
        let Tally { total, done } = self.tally(group);
        let width = total.to_string().len();
        format!("[{}{done:>width$}/{total}]", group.prefix())
    }

    /// A unit ended: its group's count moves.
    fn ended(&mut self, unit: &UnitId) {
        self.in_flight.remove(unit);
        let group = self.groups.get(unit).copied().unwrap_or(Group::Planned);
        self.tallies.entry(group).or_default().done += 1;
    }

    /// Time left in the current group, from the pace so far; unknown before the first unit
    /// finishes.
    fn eta(&self) -> String {
        let all_done: usize = self.tallies.values().map(|t| t.done).sum();
        let Tally { total, done } = self.tally(self.current);
        match self.started {
            Some(start) if all_done > 0 => {
                let per_unit = start.elapsed().as_millis() as f64 / all_done as f64;
                let left = (total.saturating_sub(done) as f64 * per_unit) as u64;
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
        let Tally { total, done } = self.tally(self.current);
        self.printer.update_bar(
            done as u64,
            total as u64,
            format!(
                "{}active {} · failed {}{cost} · ETA {}",
                self.current.prefix(),
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
            Event::Queued { unit, kind, .. } => {
                let group = match kind {
                    UnitKind::Aggregate => Group::Aggregate,
                    UnitKind::Map if self.planned.contains(unit) => Group::Planned,
                    UnitKind::Map => Group::Alone,
                };
                self.groups.insert(unit.clone(), group);
                self.tallies.entry(group).or_default().total += 1;
                self.current = group;
            }
            Event::Started { unit, .. } => {
                if !self.bar_started {
                    // With the first call sent, not the first queued: a run served from
                    // answers it holds (a merge) never shows an empty bar.
                    self.bar_started = true;
                    self.printer.start_bar(1);
                }
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
                self.ended(unit);
                self.cost += cost_usd;
                if self.kind == ProgressStyleKind::Lines {
                    self.line(&format!(
                        "{} ok     {} ({}, {} tokens{})",
                        self.counter(unit),
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
                self.ended(unit);
                self.failed += 1;
                self.cost += cost_usd;
                self.line(&format!(
                    "{} FAILED {}: {reason}",
                    self.counter(unit),
                    escape::name(label)
                ));
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
                "the provider is pushing back: {to} call{} in flight (was {from})",
                if *to == 1 { "" } else { "s" }
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

    fn queued(unit: &str, kind: UnitKind) -> Event {
        Event::Queued {
            unit: UnitId::named(unit),
            label: unit.into(),
            kind,
        }
    }

    #[test]
    fn counts_called_units_only_and_estimates_after_the_first() {
        let printer = Printer::new(PrinterMode::default(), Redactor::default());
        let planned = ["a", "b", "cached"].map(UnitId::named).into();
        let mut p = ProgressReporter::new(printer, false, planned);
        p.report(&completed("cached", true));
        assert_eq!(p.tally(Group::Planned), Tally::default());
        for u in ["a", "b"] {
            p.report(&queued(u, UnitKind::Map));
        }
        p.report(&Event::Started {
            unit: UnitId::named("a"),
            attempt: 1,
        });
        assert_eq!(p.eta(), "…", "no ETA before the first unit finishes");
        assert_eq!(p.in_flight.len(), 1);
        p.report(&completed("a", false));
        assert_eq!(p.tally(Group::Planned), Tally { total: 2, done: 1 });
        assert_eq!(p.in_flight.len(), 0);
        assert_eq!(p.cost, 0.5);
        assert_eq!(p.counter(&UnitId::named("a")), "[1/2]");
    }

    #[test]
    fn the_bar_waits_for_a_call_so_a_run_that_calls_nothing_leaves_none() {
        let printer = Printer::new(PrinterMode::default(), Redactor::default());
        let mut p = ProgressReporter::new(printer, true, ["a"].map(UnitId::named).into());
        // A merge serves its units from the runs that answered them: queued, completed,
        // never sent.
        p.report(&queued("a", UnitKind::Map));
        p.report(&completed("a", false));
        assert!(!p.bar_started);
        p.report(&queued("summarize-1", UnitKind::Aggregate));
        p.report(&Event::Started {
            unit: UnitId::named("summarize-1"),
            attempt: 1,
        });
        assert!(p.bar_started);
    }

    #[test]
    fn members_asked_alone_and_aggregation_are_counted_apart_from_the_plan() {
        let printer = Printer::new(PrinterMode::default(), Redactor::default());
        let planned = ["batch-1", "batch-2"].map(UnitId::named).into();
        let mut p = ProgressReporter::new(printer, true, planned);
        for u in ["batch-1", "batch-2"] {
            p.report(&queued(u, UnitKind::Map));
            p.report(&completed(u, false));
        }
        assert_eq!(p.counter(&UnitId::named("batch-2")), "[2/2]");
        for u in ["m1", "m2", "m3"] {
            p.report(&queued(u, UnitKind::Map));
        }
        p.report(&completed("m1", false));
        assert_eq!(p.counter(&UnitId::named("m1")), "[asked alone 1/3]");
        assert_eq!(
            p.tally(Group::Planned),
            Tally { total: 2, done: 2 },
            "the plan's count never grows"
        );
        p.report(&queued("summarize-1", UnitKind::Aggregate));
        p.report(&completed("summarize-1", false));
        assert_eq!(p.counter(&UnitId::named("summarize-1")), "[aggregate 1/1]");
    }
}
