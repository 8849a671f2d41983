//! The run store as a reporter: the run, its units and every unit's transitions go into the
//! SQLite task store (`.aiwg/rlm/store.sqlite3`), so `rlm status`, `rlm list` and
//! `rlm resume` can answer from it, and a run killed with `kill -9` can be taken up again.
//!
//! What `rlm status` shows must be true when it is read (issue 17):
//! - A unit's start and end are handed at once to the store's writer, a thread with its own
//!   connection that commits what it was handed within [`GROUP_WINDOW`], many units' moves
//!   in one transaction (issue 27: a transaction a move cost more CPU than the call). They
//!   used to wait in a buffer flushed by the *next* event after half a second, so a
//!   completion showed only when the next call ended, and not at all while a slow call was
//!   in flight; the writer needs no next event. Cancellations (by the thousand when a run
//!   stops) are handed over in groups: [`FLUSH_EVERY`] moves or [`FLUSH_AFTER`], whichever
//!   comes first.
//! - No more units are `running` than the run is wide. A call's slot is freed before the
//!   dispatcher hears that its unit ended, so the next unit's start can arrive first; such
//!   a start is held back until a unit ends (it is milliseconds).
//! - A unit stopped by Ctrl-C, a budget or a deadline is `cancelled`, never left `queued`
//!   or `running`: when the run ends, whatever did not finish is cancelled with the reason,
//!   and `rlm resume` queues it again.
//!
//! - The heartbeat goes on while no event comes (one long call): the writer beats every
//!   [`HEARTBEAT_EVERY`] while it has nothing to commit (and with every commit), so the run
//!   never reads as stalled while it waits, and a killed attempt's running time (what
//!   `--deadline` counts on resume) is known to within a few seconds.
//!
//! A store that cannot be written is a warning, never a lost run: the answers are in the
//! cache and the run directory either way.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Reporter;
use crate::exec::Event;
use crate::provider::ErrorKind;
use crate::store::{
    Detail, Limits, NewRun, NewUnit, RunId, RunStatus, StoreError, TaskStore, UnitKind as StoreKind, UnitState,
};
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// Most buffered transitions before a write.
const FLUSH_EVERY: usize = 256;
/// Longest time a transition waits in the buffer.
const FLUSH_AFTER: Duration = Duration::from_millis(500);
/// How often the writer beats while it has nothing to commit (well inside
/// `HEARTBEAT_STALE_AFTER`).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);
/// How long the writer gathers moves into one transaction once the first has come: what
/// `rlm status` may lag behind the run.
const GROUP_WINDOW: Duration = Duration::from_millis(20);

/// Which run to record into.
pub enum StoreTarget {
    /// A new run with this id and description.
    New(Box<NewRun>),
    /// A run `rlm resume` takes up: claimed now, as its next attempt (see
    /// [`crate::store::TaskStore::claim_run`]); its queued units are the ones to dispatch.
    Resumed {
        run: RunId,
        /// `--failed`: failed and timed-out units are queued again too.
        retry_failed: bool,
        /// The limits given to this resume, recorded with the attempt.
        limits: Limits,
    },
}

/// Records a run in the task store.
pub struct StoreReporter {
    store: TaskStore,
    run: RunId,
    states: HashMap<UnitId, UnitState>,
    pending: Vec<(String, UnitState, Detail)>,
    last_flush: Instant,
    /// Most units running at once (the run's width, from `run:started`).
    width: Option<usize>,
    /// Units recorded `running` now.
    running: usize,
    /// Units that started while `width` were recorded running, in order of their start.
    held_back: VecDeque<UnitId>,
    /// Commits the moves, and beats while the run goes on; stopped when it ends. `None`
    /// when its thread could not start: the moves are then committed here.
    writer: Option<Writer>,
    /// The first write failure (later ones are not repeated).
    failure: Option<String>,
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
    ) -> Result<Self, StoreError> {
        let (run, states) = match target {
            StoreTarget::New(new_run) => {
                let run = store.create_run(&new_run)?;
                let new_units: Vec<NewUnit> = units.iter().map(|u| new_unit(u, depth)).collect();
                // Added by the writer, first of everything it commits, while the run goes on:
                // a fully cached rerun of 100,000 files spent a second here, on the thread
                // that writes their results.
                let writer = Writer::start(store.rlm_dir.clone(), run.clone());
                let first = ToWriter::AddUnits(new_units, served.to_vec());
                // Without a writer (its thread could not start, or it stopped), added here.
                let sent = match &writer {
                    Some(writer) => writer.send(first),
                    None => Err(first),
                };
                if let Err(ToWriter::AddUnits(new_units, _)) = sent {
                    store.add_units_served(&run, &new_units, served)?;
                }
                let mut states: HashMap<UnitId, UnitState> =
                    units.iter().map(|u| (u.id.clone(), UnitState::Queued)).collect();
                for &i in served {
                    states.insert(units[i].id.clone(), UnitState::Completed);
                }
                return Ok(StoreReporter::new(store, run, states, writer));
            }
            StoreTarget::Resumed {
                run,
                retry_failed,
                limits,
            } => {
                let claim = store.claim_run(&run, retry_failed, limits, true)?;
                tracing::debug!(run = %run, ?claim, "run claimed");
                // One query for the run's states. A unit the store does not know (a file
                // edited since the run was planned has a new key, so a new id) is added, as a
                // new run's units are: its moves and its spend are recorded.
                let known: HashMap<String, UnitState> = store.unit_states(&run)?.into_iter().collect();
                let served: std::collections::HashSet<usize> = served.iter().copied().collect();
                let (mut added, mut added_served) = (Vec::new(), Vec::new());
                let mut states = HashMap::with_capacity(units.len());
                for (i, u) in units.iter().enumerate() {
                    let state = match known.get(u.id.as_str()) {
                        Some(&state) => state,
                        None if served.contains(&i) => {
                            added_served.push(added.len());
                            added.push(new_unit(u, depth));
                            UnitState::Completed
                        }
                        None => {
                            added.push(new_unit(u, depth));
                            UnitState::Queued
                        }
                    };
                    states.insert(u.id.clone(), state);
                }
                if !added.is_empty() {
                    store.add_units_served(&run, &added, &added_served)?;
                }
                // A unit the plan no longer has (its file deleted or excluded, or cut
                // otherwise now) is no part of the run: left queued, it kept the run
                // unfinished for ever; left completed, `rlm status` and `rlm list` counted a
                // unit the run's report does not have. What it cost stays in the run's total.
                let gone: Vec<String> = known
                    .keys()
                    .filter(|id| !states.contains_key(id.as_str()))
                    .cloned()
                    .collect();
                if !gone.is_empty() {
                    store.drop_units(&run, &gone)?;
                }
                (run, states)
            }
        };
        let writer = Writer::start(store.rlm_dir.clone(), run.clone());
        Ok(StoreReporter::new(store, run, states, writer))
    }

    fn new(store: TaskStore, run: RunId, states: HashMap<UnitId, UnitState>, writer: Option<Writer>) -> Self {
        StoreReporter {
            writer,
            store,
            run,
            states,
            pending: Vec::new(),
            last_flush: Instant::now(),
            width: None,
            running: 0,
            held_back: VecDeque::new(),
            failure: None,
        }
    }

    /// The run's id in the store.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }

    /// Moves `unit` to `to` through the legal path (a unit that ends without having been
    /// recorded running goes `queued → running → to`); a unit's start and end are written
    /// at once.
    fn move_to(&mut self, unit: &UnitId, to: UnitState, detail: Detail) {
        let Some(&from) = self.states.get(unit) else {
            // A call that is no unit of the store (a batch's member asked alone): what it
            // cost is the run's all the same.
            self.add_spend(&detail);
            return;
        };
        if from == to || (from.is_finished() && to != UnitState::Queued) {
            return;
        }
        if from == UnitState::Queued && to != UnitState::Running && to != UnitState::Cancelled {
            self.pending
                .push((unit.to_string(), UnitState::Running, Detail::default()));
        }
        self.pending.push((unit.to_string(), to, detail));
        self.states.insert(unit.clone(), to);
        if from == UnitState::Running {
            self.running = self.running.saturating_sub(1);
        }
        if to == UnitState::Running {
            self.running += 1;
        }
        let at_once = matches!(
            to,
            UnitState::Running | UnitState::Completed | UnitState::Failed | UnitState::TimedOut
        );
        if at_once || self.pending.len() >= FLUSH_EVERY || self.last_flush.elapsed() >= FLUSH_AFTER {
            self.flush();
        }
    }

    /// Adds the spend of a call that is no unit of the store (an aggregation call, a
    /// batch's member asked alone) to the run, after the moves before it.
    fn add_spend(&mut self, spend: &Detail) {
        if !spend.spent() {
            return;
        }
        // On the writer's connection until now.
        self.sync();
        if let Err(e) = self.store.add_spend(&self.run, spend) {
            self.failure.get_or_insert(e.to_string());
        }
    }

    /// A unit's first attempt started: recorded `running`, or held back while the store
    /// already shows `width` units running.
    fn started(&mut self, unit: &UnitId) {
        match self.states.get(unit) {
            Some(UnitState::Queued) => {}
            // An earlier attempt finished it, and it is asked again: its file was edited
            // since (a new key). Queued again first, so its move and its spend are recorded.
            Some(state) if state.is_finished() => {
                self.move_to(
                    unit,
                    UnitState::Queued,
                    Detail::reason("asked again: its input changed"),
                );
            }
            _ => return,
        }
        if self.width.is_some_and(|width| self.running >= width) {
            self.held_back.push_back(unit.clone());
            return;
        }
        self.move_to(unit, UnitState::Running, Detail::default());
    }

    /// `unit` ended in state `to`; a unit held back takes its place among the running.
    fn ended(&mut self, unit: &UnitId, to: UnitState, detail: Detail) {
        self.held_back.retain(|held| held != unit);
        self.move_to(unit, to, detail);
        while self.width.is_some_and(|width| self.running < width) {
            let Some(next) = self.held_back.pop_front() else { break };
            self.move_to(&next, UnitState::Running, Detail::default());
        }
    }

    /// Hands the buffered transitions to the writer (or, without one, commits them here in
    /// one transaction, with a heartbeat).
    pub fn flush(&mut self) {
        self.last_flush = Instant::now();
        if self.pending.is_empty() {
            return;
        }
        let moves = std::mem::take(&mut self.pending);
        let moves = match &self.writer {
            Some(writer) => match writer.send(ToWriter::Moves(moves)) {
                Ok(()) => return,
                Err(ToWriter::Moves(moves)) => moves,
                Err(_) => return,
            },
            None => moves,
        };
        if let Err(e) = commit(&mut self.store, &self.run, &moves) {
            self.failure.get_or_insert(e.to_string());
        }
    }

    /// Waits until the writer has committed everything handed to it; its first failure is
    /// kept as the reporter's.
    pub fn sync(&mut self) {
        self.flush();
        if let Some(failure) = self.writer.as_ref().and_then(Writer::sync) {
            self.failure.get_or_insert(failure);
        }
    }

    /// The end of the run: whatever did not finish is cancelled (with why), everything is
    /// flushed, and the run's status recorded. Returns why the store could not record all
    /// of the run, if it could not.
    pub fn finish(&mut self, status: RunStatus) -> Option<String> {
        if status != RunStatus::Running {
            let mut open: Vec<(UnitId, bool)> = self
                .states
                .iter()
                .filter(|(_, state)| !state.is_finished())
                .map(|(unit, &state)| {
                    (
                        unit.clone(),
                        state == UnitState::Running || self.held_back.contains(unit),
                    )
                })
                .collect();
            open.sort();
            self.held_back.clear();
            for (unit, started) in open {
                let reason = super::left_open(status, started, None);
                self.move_to(&unit, UnitState::Cancelled, Detail::reason(&reason));
            }
        }
        self.sync();
        // Stopped (it beats no more), then the end recorded after every move.
        self.writer = None;
        if let Err(e) = self.store.record_run_end(&self.run, status) {
            self.failure.get_or_insert(e.to_string());
        }
        self.failure.clone()
    }
}

/// How the store records a planned unit.
fn new_unit(unit: &WorkUnit, depth: u32) -> NewUnit {
    NewUnit {
        id: unit.id.to_string(),
        label: unit.label.to_string(),
        kind: StoreKind::Map,
        priority: 5 - i64::from(depth),
        cache_key: Some(unit.cache_key.as_str().to_string()),
    }
}

/// The moves of units, committed in one transaction with a heartbeat.
fn commit(store: &mut TaskStore, run: &RunId, moves: &[(String, UnitState, Detail)]) -> Result<(), StoreError> {
    store.transition_many(run, moves).and_then(|()| store.heartbeat(run))
}

/// What the writer hears.
enum ToWriter {
    /// A new run's units, those at the indexes given already `completed` (the first
    /// message, before any move).
    AddUnits(Vec<NewUnit>, Vec<usize>),
    Moves(Vec<(String, UnitState, Detail)>),
    /// Commit what was handed over, then answer with the first failure so far.
    Sync(mpsc::Sender<Option<String>>),
}

/// The store's writer: a thread with its own connection that commits the moves it is
/// handed in groups (one transaction for whatever came within [`GROUP_WINDOW`] of the
/// first), and beats every [`HEARTBEAT_EVERY`] while it has nothing to commit. Dropped, it
/// commits what it holds and ends.
struct Writer {
    to: Option<mpsc::Sender<ToWriter>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(rlm_dir: PathBuf, run: RunId) -> Option<Writer> {
        let (to, from) = mpsc::channel::<ToWriter>();
        let thread = std::thread::Builder::new()
            .name("rlm-store".into())
            .spawn(move || write_moves(&rlm_dir, &run, &from))
            .ok()?;
        Some(Writer {
            to: Some(to),
            thread: Some(thread),
        })
    }

    /// Hands `message` over; gives it back when the writer is gone.
    fn send(&self, message: ToWriter) -> Result<(), ToWriter> {
        match &self.to {
            Some(to) => to.send(message).map_err(|mpsc::SendError(m)| m),
            None => Err(message),
        }
    }

    /// Waits until everything handed over is committed: the first failure, if any.
    fn sync(&self) -> Option<String> {
        let (ack, answer) = mpsc::channel();
        if self.send(ToWriter::Sync(ack)).is_err() {
            return Some("the run store's writer stopped".into());
        }
        answer
            .recv()
            .unwrap_or_else(|_| Some("the run store's writer stopped".into()))
    }
}

/// The writer's loop (see [`Writer`]).
fn write_moves(rlm_dir: &std::path::Path, run: &RunId, from: &mpsc::Receiver<ToWriter>) {
    let mut store = TaskStore::open(rlm_dir).map_err(|e| e.to_string());
    let mut failure: Option<String> = store.as_ref().err().cloned();
    let mut held: Vec<(String, UnitState, Detail)> = Vec::new();
    let mut since = Instant::now();
    let commit_held = |store: &mut Result<TaskStore, String>,
                       held: &mut Vec<(String, UnitState, Detail)>,
                       failure: &mut Option<String>| {
        if let Ok(store) = store.as_mut() {
            let written = if held.is_empty() {
                store.heartbeat(run)
            } else {
                commit(store, run, held)
            };
            if let Err(e) = written {
                if held.is_empty() {
                    tracing::debug!("heartbeat: {e}");
                } else {
                    failure.get_or_insert(e.to_string());
                }
            }
        }
        held.clear();
    };
    loop {
        let wait = if held.is_empty() {
            HEARTBEAT_EVERY
        } else {
            GROUP_WINDOW.saturating_sub(since.elapsed())
        };
        match from.recv_timeout(wait) {
            Ok(ToWriter::Moves(moves)) => {
                if held.is_empty() {
                    since = Instant::now();
                }
                held.extend(moves);
                if held.len() >= FLUSH_EVERY * 4 {
                    commit_held(&mut store, &mut held, &mut failure);
                }
            }
            Ok(ToWriter::AddUnits(units, served)) => {
                if !held.is_empty() {
                    commit_held(&mut store, &mut held, &mut failure);
                }
                if let Ok(store) = store.as_mut() {
                    if let Err(e) = store.add_units_served(run, &units, &served) {
                        failure.get_or_insert(format!("{e}; rlm status and rlm resume will not know this run's units"));
                    }
                }
            }
            Ok(ToWriter::Sync(ack)) => {
                if !held.is_empty() {
                    commit_held(&mut store, &mut held, &mut failure);
                }
                let _ = ack.send(failure.clone());
            }
            // The group's window closed, or nothing came for a while: a beat.
            Err(mpsc::RecvTimeoutError::Timeout) => commit_held(&mut store, &mut held, &mut failure),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if !held.is_empty() {
                    commit_held(&mut store, &mut held, &mut failure);
                }
                return;
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel wakes the thread at once; it commits what it holds.
        drop(self.to.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Reporter for StoreReporter {
    fn report(&mut self, event: &Event) {
        match event {
            Event::RunStarted { width, .. } => self.width = Some((*width).max(1)),
            Event::Started { unit, attempt: 1 } => self.started(unit),
            Event::Completed {
                unit,
                kind: UnitKind::Map,
                attempts,
                duration_ms,
                usage,
                cost_usd,
                result_file,
                ..
            } => self.ended(
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
                self.ended(
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
                );
            }
            // A unit stopped in flight or before it started: `rlm resume` queues it again.
            Event::Cancelled {
                unit,
                kind: UnitKind::Map,
                reason,
                ..
            } => self.ended(unit, UnitState::Cancelled, Detail::reason(reason.clone())),
            // An aggregation call (a summary, a synthesis) is no unit of the store, but what
            // it cost is the run's: `rlm status` and a resume count it, as the report does.
            Event::Completed {
                kind: UnitKind::Aggregate,
                usage,
                cost_usd,
                ..
            }
            | Event::Failed {
                kind: UnitKind::Aggregate,
                usage,
                cost_usd,
                ..
            } => self.add_spend(&Detail {
                tokens_in: usage.input_tokens,
                tokens_out: usage.output_tokens,
                cost_usd: *cost_usd,
                ..Detail::default()
            }),
            // Marked at once: `rlm status` says how many answers wait outside the cache.
            Event::Uncached { unit, .. } => {
                // After the unit's own moves (on the writer's connection).
                self.sync();
                if let Err(e) = self.store.mark_uncached(&self.run, unit.as_str()) {
                    self.failure.get_or_insert(e.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheKey;
    use crate::store::NewRun;

    fn unit(n: usize) -> WorkUnit {
        WorkUnit {
            id: UnitId::named(format!("u{n}")),
            label: format!("src/f{n}.ts").into(),
            inputs: Vec::new(),
            result_name: format!("src-f{n}.ts.result.md"),
            cache_key: CacheKey(format!("{n:064}")),
            estimated_input_tokens: 1,
            prompt_bytes: 4,
            content_bytes: 2,
            prefix: Default::default(),
            blocked: None,
            body: crate::unit::UnitBody::Plain,
        }
    }

    fn reporter(dir: &std::path::Path, n: usize) -> (StoreReporter, Vec<WorkUnit>) {
        let store = TaskStore::open(dir).unwrap();
        let units: Vec<WorkUnit> = (0..n).map(unit).collect();
        let new_run = NewRun {
            id: None,
            kind: "batch".into(),
            command: vec!["rlm".into()],
            cwd: dir.to_path_buf(),
            output_dir: None,
            parent: None,
            depth: 0,
            settings: serde_json::Value::Null,
            started: None,
        };
        let r = StoreReporter::start(store, StoreTarget::New(Box::new(new_run)), &units, &[], 0).unwrap();
        (r, units)
    }

    fn run_started(width: usize) -> Event {
        Event::RunStarted {
            units: 0,
            cached: 0,
            to_call: 0,
            width,
            model: "m".into(),
            provider: "p".into(),
        }
    }

    fn completed(u: &WorkUnit) -> Event {
        Event::Completed {
            unit: u.id.clone(),
            label: u.label.clone(),
            kind: UnitKind::Map,
            attempts: 1,
            duration_ms: 5,
            usage: Default::default(),
            saved: Default::default(),
            cost_usd: 0.01,
            cache_saved_usd: 0.0,
            cached: false,
            truncated: false,
            result_file: Some(u.result_name.clone()),
        }
    }

    fn started(u: &WorkUnit) -> Event {
        Event::Started {
            unit: u.id.clone(),
            attempt: 1,
        }
    }

    /// What another process reading the store sees now.
    fn counts(dir: &std::path::Path, r: &StoreReporter) -> crate::store::UnitCounts {
        TaskStore::open(dir).unwrap().run(r.run_id()).unwrap().units
    }

    /// The store's counts once they satisfy `wanted`, or after two seconds: the writer
    /// commits within [`GROUP_WINDOW`] of a move, with no further event.
    fn counts_once(
        dir: &std::path::Path,
        r: &StoreReporter,
        wanted: impl Fn(&crate::store::UnitCounts) -> bool,
    ) -> crate::store::UnitCounts {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let now = counts(dir, r);
            if wanted(&now) || Instant::now() >= until {
                return now;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_completion_is_in_the_store_moments_after_it_is_heard_with_no_further_event() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, units) = reporter(dir.path(), 3);
        r.report(&run_started(1));
        r.report(&started(&units[0]));
        assert_eq!(counts_once(dir.path(), &r, |c| c.running == 1).running, 1);
        r.report(&completed(&units[0]));
        let now = counts_once(dir.path(), &r, |c| c.completed == 1);
        assert_eq!((now.completed, now.running), (1, 0), "{now:?}");
    }

    #[test]
    fn many_moves_handed_over_at_once_are_all_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, units) = reporter(dir.path(), 200);
        r.report(&run_started(200));
        for u in &units {
            r.report(&started(u));
            r.report(&completed(u));
        }
        r.sync();
        assert!(r.failure.is_none(), "{:?}", r.failure);
        assert_eq!(counts(dir.path(), &r).completed, 200);
    }

    #[test]
    fn never_more_units_running_than_the_width() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, units) = reporter(dir.path(), 4);
        r.report(&run_started(2));
        r.report(&started(&units[0]));
        r.report(&started(&units[1]));
        // u0's slot was freed before its end was heard: u2 starts "early".
        r.report(&started(&units[2]));
        r.sync();
        assert_eq!(counts(dir.path(), &r).running, 2);
        r.report(&completed(&units[0]));
        r.sync();
        let now = counts(dir.path(), &r);
        assert_eq!((now.running, now.completed), (2, 1), "u2 took u0's place: {now:?}");
        // A held-back unit that ends before its turn goes straight to its end.
        r.report(&started(&units[3]));
        r.report(&completed(&units[3]));
        r.sync();
        let now = counts(dir.path(), &r);
        assert_eq!((now.running, now.completed), (2, 2), "{now:?}");
    }

    #[test]
    fn what_did_not_finish_is_cancelled_when_the_run_stops() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, units) = reporter(dir.path(), 4);
        r.report(&run_started(2));
        r.report(&started(&units[0]));
        r.report(&completed(&units[0]));
        r.report(&started(&units[1]));
        r.report(&Event::Cancelled {
            unit: units[1].id.clone(),
            label: units[1].label.clone(),
            kind: UnitKind::Map,
            reason: "cancelled while its call was in flight".into(),
        });
        r.report(&started(&units[3]));
        r.finish(RunStatus::Interrupted);
        assert!(r.failure.is_none(), "{:?}", r.failure);
        let now = counts(dir.path(), &r);
        assert_eq!(
            (now.completed, now.cancelled, now.queued, now.running),
            (1, 3, 0, 0),
            "{now:?}"
        );
        // Why, as the event log says it: a unit that never started was not run; one that
        // started was not finished.
        let store = TaskStore::open(dir.path()).unwrap();
        let why = |u: &WorkUnit| {
            let history = store.history(r.run_id(), u.id.as_str()).unwrap();
            history.last().and_then(|t| t.detail.clone()).unwrap_or_default()
        };
        assert!(
            why(&units[2]).contains("not run: the run was interrupted"),
            "{}",
            why(&units[2])
        );
        assert!(
            why(&units[3]).contains("not finished: the run was interrupted"),
            "{}",
            why(&units[3])
        );
    }
}
