//! A phase's requests — each a unit or an aggregation call ([`Work`]) — and where each one is:
//! announced, in a batch at the provider, done; the batches waited for.

use std::collections::HashMap;

use super::wait::Waiting;
use crate::batch::execution::Execution;
use crate::batch::job::{Job, SummaryJob};
use crate::exec::{Event, JobMeta};
use crate::provider::batch_api::{custom_id_for, unit_part};
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// One request of a phase: a unit, or an aggregation call.
#[derive(Clone, Copy)]
pub(super) enum Work<'a> {
    Unit(&'a WorkUnit),
    Summary(&'a SummaryJob),
}

impl Work<'_> {
    pub(super) fn id(&self) -> &UnitId {
        match self {
            Work::Unit(u) => &u.id,
            Work::Summary(s) => &s.id,
        }
    }

    pub(super) fn meta(&self) -> JobMeta {
        match self {
            Work::Unit(u) => JobMeta {
                unit: u.id.clone(),
                label: u.label.clone(),
                kind: UnitKind::Map,
            },
            Work::Summary(s) => JobMeta {
                unit: s.id.clone(),
                label: s.label.clone(),
                kind: UnitKind::Aggregate,
            },
        }
    }

    /// The realtime job of the same request.
    pub(super) fn job(&self) -> Job {
        match self {
            Work::Unit(u) => Job::Unit((*u).clone()),
            Work::Summary(s) => Job::Summary((*s).clone()),
        }
    }

    /// An owned copy, to keep a result off the reader.
    pub(super) fn owned(&self) -> Owned {
        match self {
            Work::Unit(u) => Owned::Unit((*u).clone()),
            Work::Summary(s) => Owned::Summary((*s).clone()),
        }
    }
}

/// [`Work`], owned.
pub(super) enum Owned {
    Unit(WorkUnit),
    Summary(SummaryJob),
}

/// A phase's requests and where each one is.
pub(super) struct Phase<'a> {
    pub(super) name: &'static str,
    pub(super) work: Vec<Work<'a>>,
    /// The unit's part of each request's custom id ([`custom_id_for`]); each submission
    /// stamps it with its own token.
    pub(super) unit_parts: Vec<String>,
    by_unit_part: HashMap<String, usize>,
    by_unit: HashMap<String, usize>,
    /// The custom ids of the run's batches that hold the phase's requests, as they were
    /// sent: a result is told by these.
    pub(super) by_custom: HashMap<String, usize>,
    /// Announced to the reporters (`task:queued`).
    pub(super) queued: Vec<bool>,
    /// In a batch at the provider.
    pub(super) in_flight: Vec<bool>,
    /// Has its outcome (kept, failed, cancelled, or handed to a realtime call).
    pub(super) done: Vec<bool>,
    /// The batches waited for.
    pub(super) batches: Vec<Waiting>,
    /// At most this many requests a batch (after a refusal for the enqueued-token limit).
    pub(super) max_requests: Option<usize>,
    /// Requests to submit again once the phase's batches have ended (see
    /// [`BatchApiRun::requeue`]).
    pub(super) requeue: Vec<usize>,
    /// Under `--max-cost`: the most each request in a batch can cost (0 until counted).
    pub(super) worst: Vec<f64>,
    /// Each request's cache key (what its claim is on).
    pub(super) keys: Vec<String>,
    /// Requests whose key another run holds: their answers are waited for.
    pub(super) awaiting: Vec<usize>,
}

impl<'a> Phase<'a> {
    pub(super) fn new(name: &'static str, work: Vec<Work<'a>>, keys: Vec<String>) -> Self {
        let unit_parts: Vec<String> = work.iter().map(|w| custom_id_for(w.id().as_str())).collect();
        let by_unit_part = unit_parts.iter().enumerate().map(|(i, c)| (c.clone(), i)).collect();
        let by_unit = work.iter().enumerate().map(|(i, w)| (w.id().to_string(), i)).collect();
        let n = work.len();
        Phase {
            name,
            work,
            unit_parts,
            by_unit_part,
            by_unit,
            by_custom: HashMap::new(),
            queued: vec![false; n],
            in_flight: vec![false; n],
            done: vec![false; n],
            batches: Vec::new(),
            max_requests: None,
            requeue: Vec::new(),
            worst: vec![0.0; n],
            keys,
            awaiting: Vec::new(),
        }
    }

    /// The request a custom id this attempt stamped names (its unit's part).
    pub(super) fn stamped_index(&self, custom_id: &str) -> Option<usize> {
        self.by_unit_part.get(unit_part(custom_id)).copied()
    }

    /// The request of unit `unit_id`.
    pub(super) fn unit_index(&self, unit_id: &str) -> Option<usize> {
        self.by_unit.get(unit_id).copied()
    }

    /// Request `i` is in a batch under `custom_id`: its result is told by it.
    pub(super) fn track(&mut self, custom_id: &str, i: usize) {
        self.by_custom.insert(custom_id.to_string(), i);
    }

    pub(super) fn announce(&mut self, exec: &mut Execution, i: usize) {
        if std::mem::replace(&mut self.queued[i], true) {
            return;
        }
        let meta = self.work[i].meta();
        exec.dispatcher.emit(Event::Queued {
            unit: meta.unit,
            label: meta.label,
            kind: meta.kind,
        });
    }
}
