//! A phase's requests — each a unit or an aggregation call ([`Work`]) — and where each one is:
//! announced, in a batch at the provider, done; the batches waited for.

use std::collections::{HashMap, HashSet};

use super::host::{Host, Request};
use super::wait::Waiting;
use crate::batch::job::{Job, SummaryJob};
use crate::exec::JobMeta;
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

/// The custom ids the phase's requests were sent under, as (stamp, request) pairs: a stamp
/// is held once, not in a copy of every custom id. A custom id whose unit part names
/// another request (an earlier attempt's, recorded by unit id) is held as it is.
#[derive(Default)]
struct SentIds {
    /// The stamps seen, with their `-` (an unstamped id's is empty), numbered.
    stamps: HashMap<String, u32>,
    sent: HashSet<(u32, u32)>,
    other: HashMap<String, usize>,
}

/// A phase's requests and where each one is.
pub(super) struct Phase<W> {
    /// The phase as the store records its batches (`map`, `aggregate`, a job's phase).
    pub(super) name: String,
    pub(super) work: Vec<W>,
    /// The unit's part of each request's custom id ([`custom_id_for`]); each submission
    /// stamps it with its own token.
    pub(super) unit_parts: Vec<String>,
    /// The requests in the order of their unit parts, and of their unit ids: a lookup is a
    /// binary search, not a map holding a copy of each string (a 100,000-unit phase).
    by_unit_part: Vec<u32>,
    by_unit: Vec<u32>,
    /// The custom ids of the run's batches that hold the phase's requests, as they were
    /// sent: a result is told by these.
    sent: SentIds,
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

impl<W: Request> Phase<W> {
    pub(super) fn new(name: String, work: Vec<W>, keys: Vec<String>) -> Self {
        let unit_parts: Vec<String> = work.iter().map(|w| custom_id_for(w.id().as_str())).collect();
        let n = work.len();
        let mut by_unit_part: Vec<u32> = (0..n as u32).collect();
        by_unit_part.sort_unstable_by(|&a, &b| unit_parts[a as usize].cmp(&unit_parts[b as usize]));
        let mut by_unit: Vec<u32> = (0..n as u32).collect();
        by_unit.sort_unstable_by(|&a, &b| work[a as usize].id().as_str().cmp(work[b as usize].id().as_str()));
        Phase {
            name,
            work,
            unit_parts,
            by_unit_part,
            by_unit,
            sent: SentIds::default(),
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
        let part = unit_part(custom_id);
        let at = self
            .by_unit_part
            .binary_search_by(|&i| self.unit_parts[i as usize].as_str().cmp(part))
            .ok()?;
        Some(self.by_unit_part[at] as usize)
    }

    /// The request of unit `unit_id`.
    pub(super) fn unit_index(&self, unit_id: &str) -> Option<usize> {
        let at = self
            .by_unit
            .binary_search_by(|&i| self.work[i as usize].id().as_str().cmp(unit_id))
            .ok()?;
        Some(self.by_unit[at] as usize)
    }

    /// Request `i` is in a batch under `custom_id`: its result is told by it.
    pub(super) fn track(&mut self, custom_id: &str, i: usize) {
        match self.stamped_index(custom_id) {
            Some(named) if named == i => {
                let stamp = custom_id.strip_suffix(unit_part(custom_id)).unwrap_or_default();
                let s = match self.sent.stamps.get(stamp) {
                    Some(&s) => s,
                    None => {
                        let s = self.sent.stamps.len() as u32;
                        self.sent.stamps.insert(stamp.to_string(), s);
                        s
                    }
                };
                self.sent.sent.insert((s, i as u32));
            }
            _ => {
                self.sent.other.insert(custom_id.to_string(), i);
            }
        }
    }

    /// The request sent under `custom_id` in one of the phase's batches.
    pub(super) fn sent_index(&self, custom_id: &str) -> Option<usize> {
        if let Some(&i) = self.sent.other.get(custom_id) {
            return Some(i);
        }
        let i = self.stamped_index(custom_id)?;
        let stamp = custom_id.strip_suffix(unit_part(custom_id)).unwrap_or_default();
        let s = *self.sent.stamps.get(stamp)?;
        self.sent.sent.contains(&(s, i as u32)).then_some(i)
    }

    /// Request `i` is made known to the host, once.
    pub(super) fn announce(&mut self, host: &mut impl Host<W>, i: usize) {
        if !std::mem::replace(&mut self.queued[i], true) {
            host.announce(self.work[i]);
        }
    }
}
