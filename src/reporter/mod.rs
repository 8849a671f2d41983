//! Reporters: each consumes the run's [`Event`]s and does one thing with them — the live
//! progress display, the `events.jsonl` log, the report builder. Each can be tested alone
//! from a list of events.

mod event_log;
mod progress;
mod report_builder;
mod store_reporter;

pub use event_log::EventLog;
pub use progress::ProgressReporter;
pub use report_builder::{ReportBuilder, ReportContext, RunEnd};
pub use store_reporter::{StoreReporter, StoreTarget};

use crate::exec::Event;

/// Something that hears every event of a run.
pub trait Reporter {
    fn report(&mut self, event: &Event);
}

/// The run's reporters, in the order they hear each event.
pub struct Reporters {
    pub progress: ProgressReporter,
    pub log: Option<EventLog>,
    pub builder: ReportBuilder,
    /// The task store (`rlm status`, `list`, `resume`); `None` when it cannot be opened.
    pub store: Option<StoreReporter>,
}

impl Reporters {
    pub fn emit(&mut self, event: &Event) {
        self.builder.report(event);
        if let Some(log) = &mut self.log {
            log.report(event);
        }
        self.progress.report(event);
        if let Some(store) = &mut self.store {
            store.report(event);
        }
    }
}
