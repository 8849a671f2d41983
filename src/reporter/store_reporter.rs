//! The run store as a reporter: the run, its units and every unit's transitions go into the
//! SQLite task store (`.aiwg/rlm/store.sqlite3`), so `rlm status`, `rlm list` and
//! `rlm resume` can answer from it, and a run killed with `kill -9` can be taken up again.
//!
//! Transitions are buffered and written in one transaction every [`FLUSH_EVERY`] events or
//! [`FLUSH_AFTER`], with a heartbeat, so a fully cached rerun of thousands of files costs a
//! few commits, not thousands. A store that cannot be written is a warning, never a lost
//! run: the answers are in the cache and the run directory either way.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::Reporter;
use crate::exec::Event;
use crate::provider::ErrorKind;
use crate::store::{Detail, NewRun, NewUnit, RunId, RunStatus, TaskStore, UnitKind as StoreKind, UnitState};
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// Most buffered transitions before a write.
const FLUSH_EVERY: usize = 256;
/// Longest time a transition waits in the buffer.
const FLUSH_AFTER: Duration = Duration::from_millis(500);

/// Which run to record into.
pub enum StoreTarget {
    /// A new run with this id and description.
    New(Box<NewRun>),
    /// A resumed run, already claimed (its queued units are the ones to dispatch).
    Resumed(RunId),
}

/// Records a run in the task store.
pub struct StoreReporter {
    store: TaskStore,
    run: RunId,
    states: HashMap<UnitId, UnitState>,
    pending: Vec<(String, UnitState, Detail)>,
    last_flush: Instant,
    /// The first write failure (later ones are not repeated).
    pub failure: Option<String>,
}

impl StoreReporter {
    /// Opens the store under `rlm_dir` and records the run and its units (`queued`), or
    /// takes up a resumed run's units in the states the store has them.
    /// `served`: indexes of the units the cache answers (recorded `completed` at once).
    pub fn start(
        mut store: TaskStore,
        target: StoreTarget,
        units: &[WorkUnit],
        served: &[usize],
        depth: u32,
    ) -> Result<Self, String> {
        let (run, states) = match target {
            StoreTarget::New(new_run) => {
                let run = store.create_run(&new_run).map_err(|e| e.to_string())?;
                let new_units: Vec<NewUnit> = units
                    .iter()
                    .map(|u| NewUnit {
                        id: u.id.to_string(),
                        label: u.label.clone(),
                        kind: StoreKind::Map,
                        priority: 5 - i64::from(depth),
                        cache_key: Some(u.cache_key.as_str().to_string()),
                    })
                    .collect();
                store
                    .add_units_served(&run, &new_units, served)
                    .map_err(|e| e.to_string())?;
                let mut states: HashMap<UnitId, UnitState> =
                    units.iter().map(|u| (u.id.clone(), UnitState::Queued)).collect();
                for &i in served {
                    states.insert(units[i].id.clone(), UnitState::Completed);
                }
                (run, states)
            }
            StoreTarget::Resumed(run) => {
                // One query for the run's states; a unit the store does not know is queued.
                let known: HashMap<String, UnitState> = store
                    .unit_states(&run)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .collect();
                let states = units
                    .iter()
                    .map(|u| {
                        let state = known.get(u.id.as_str()).copied().unwrap_or(UnitState::Queued);
                        (u.id.clone(), state)
                    })
                    .collect();
                (run, states)
            }
        };
        Ok(StoreReporter {
            store,
            run,
            states,
            pending: Vec::new(),
            last_flush: Instant::now(),
            failure: None,
        })
    }

    /// The run's id in the store.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }

    /// Moves `unit` to `to` through the legal path (a unit served from the cache goes
    /// `queued → running → completed`).
    fn move_to(&mut self, unit: &UnitId, to: UnitState, detail: Detail) {
        let Some(&from) = self.states.get(unit) else {
            return; // an aggregation call: not a unit of the store
        };
        if from == to {
            return;
        }
        if from == UnitState::Queued && to != UnitState::Running && to != UnitState::Cancelled {
            self.pending
                .push((unit.to_string(), UnitState::Running, Detail::default()));
        }
        if from.is_finished() && to != UnitState::Queued {
            return;
        }
        self.pending.push((unit.to_string(), to, detail));
        self.states.insert(unit.clone(), to);
        if self.pending.len() >= FLUSH_EVERY || self.last_flush.elapsed() >= FLUSH_AFTER {
            self.flush();
        }
    }

    /// Writes the buffered transitions in one transaction, with a heartbeat.
    pub fn flush(&mut self) {
        self.last_flush = Instant::now();
        if self.pending.is_empty() {
            let _ = self.store.heartbeat(&self.run);
            return;
        }
        let moves = std::mem::take(&mut self.pending);
        let borrowed: Vec<(&str, UnitState, Detail)> =
            moves.iter().map(|(u, s, d)| (u.as_str(), *s, d.clone())).collect();
        let written = self
            .store
            .transition_many(&self.run, &borrowed)
            .and_then(|()| self.store.heartbeat(&self.run));
        if let Err(e) = written {
            self.failure.get_or_insert(e.to_string());
        }
    }

    /// The end of the run: everything flushed, the run's status recorded.
    pub fn finish(&mut self, status: RunStatus) {
        self.flush();
        if let Err(e) = self.store.record_run_end(&self.run, status) {
            self.failure.get_or_insert(e.to_string());
        }
    }
}

impl Reporter for StoreReporter {
    fn report(&mut self, event: &Event) {
        match event {
            Event::Started { unit, attempt: 1 } => self.move_to(unit, UnitState::Running, Detail::default()),
            Event::Completed {
                unit,
                kind: UnitKind::Map,
                attempts,
                duration_ms,
                usage,
                cost_usd,
                result_file,
                ..
            } => self.move_to(
                unit,
                UnitState::Completed,
                Detail {
                    tokens_in: usage.input_tokens,
                    tokens_out: usage.output_tokens,
                    cost_usd: *cost_usd,
                    duration: Some(Duration::from_millis(*duration_ms)),
                    retries: attempts.saturating_sub(1),
                    result_file: result_file.clone(),
                    ..Detail::default()
                },
            ),
            Event::Failed {
                unit,
                kind: UnitKind::Map,
                attempts,
                duration_ms,
                usage,
                cost_usd,
                error,
                reason,
                ..
            } => {
                let to = if *error == Some(ErrorKind::Timeout) {
                    UnitState::TimedOut
                } else {
                    UnitState::Failed
                };
                self.move_to(
                    unit,
                    to,
                    Detail {
                        reason: Some(reason.clone()),
                        tokens_in: usage.input_tokens,
                        tokens_out: usage.output_tokens,
                        cost_usd: *cost_usd,
                        duration: Some(Duration::from_millis(*duration_ms)),
                        retries: attempts.saturating_sub(1),
                        ..Detail::default()
                    },
                )
            }
            // A unit stopped in flight goes back to the queue: resume dispatches it again.
            Event::Cancelled {
                unit,
                kind: UnitKind::Map,
                reason,
                ..
            } => {
                if self.states.get(unit) == Some(&UnitState::Running) {
                    self.move_to(
                        unit,
                        UnitState::Queued,
                        Detail {
                            reason: Some(reason.clone()),
                            ..Detail::default()
                        },
                    );
                }
            }
            _ => {
                if self.last_flush.elapsed() >= FLUSH_AFTER {
                    self.flush();
                }
            }
        }
    }
}
