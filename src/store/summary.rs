//! What the store answers: a run's summary (counts, spend, owner, ETA inputs), its
//! failures, its recursion tree, and the records of single units and their history.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::lifecycle::{RunStatus, UnitKind, UnitState};
use super::liveness::Liveness;
use super::records::RunId;
use super::timestamp::Timestamp;

/// How many units of a run are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UnitCounts {
    pub queued: u64,
    pub running: u64,
    pub completed: u64,
    pub failed: u64,
    pub timed_out: u64,
    pub cancelled: u64,
}

impl UnitCounts {
    /// Every unit of the run.
    pub fn total(&self) -> u64 {
        self.queued + self.running + self.completed + self.failed + self.timed_out + self.cancelled
    }

    /// Units not finished yet (queued or running).
    pub fn remaining(&self) -> u64 {
        self.queued + self.running
    }

    /// Units that failed for good (a timeout is a failure): not the cancelled ones, which
    /// were never run to an end and a plain `rlm resume` takes up.
    pub fn failed_for_good(&self) -> u64 {
        self.failed + self.timed_out
    }

    /// The count of units in `state`.
    pub fn get(&self, state: UnitState) -> u64 {
        match state {
            UnitState::Queued => self.queued,
            UnitState::Running => self.running,
            UnitState::Completed => self.completed,
            UnitState::Failed => self.failed,
            UnitState::TimedOut => self.timed_out,
            UnitState::Cancelled => self.cancelled,
        }
    }

    pub(crate) fn add(&mut self, state: UnitState, n: u64) {
        let slot = match state {
            UnitState::Queued => &mut self.queued,
            UnitState::Running => &mut self.running,
            UnitState::Completed => &mut self.completed,
            UnitState::Failed => &mut self.failed,
            UnitState::TimedOut => &mut self.timed_out,
            UnitState::Cancelled => &mut self.cancelled,
        };
        *slot += n;
    }
}

/// The process that owns a `RUNNING` run, and whether it is still there.
#[derive(Debug, Clone, Serialize)]
pub struct Owner {
    pub pid: u32,
    pub heartbeat_at: Option<Timestamp>,
    pub liveness: Liveness,
}

/// One run as `rlm status` and `rlm list` show it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub output_dir: PathBuf,
    pub created_at: Timestamp,
    /// The latest start: a resume starts the run again.
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub status: RunStatus,
    pub parent: Option<RunId>,
    pub depth: u32,
    pub settings: serde_json::Value,
    /// Spend over all units and attempts, across resumes.
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    /// Its attempts: 1 for the start, one more per resume.
    pub attempts: u32,
    /// Running time over all attempts (a crashed one counts to its last heartbeat).
    pub elapsed_ms: u64,
    pub units: UnitCounts,
    /// Set while the status is `RUNNING`.
    pub owner: Option<Owner>,
    /// The run that took over this one's output directory (its status is then `SUPERSEDED`).
    pub superseded_by: Option<RunId>,
    /// Completed units whose answer the cache did not take (a full disk): kept in the run
    /// directory's `pending-cache/` until `rlm resume` caches them.
    pub not_cached: u64,
    /// Mean wall time of the completed units (all their attempts), for ETAs.
    pub mean_completed_ms: Option<u64>,
    /// Units completed since `started_at` (this session's throughput).
    pub completed_since_start: u64,
}

impl RunSummary {
    /// The rlm command the run was started with (`batch`, `job`…): the first word after
    /// the program that is neither a global flag nor its value (`rlm --color never batch`
    /// is a batch run).
    pub fn subcommand(&self) -> Option<&str> {
        let mut words = self.command.iter().skip(1).map(String::as_str);
        while let Some(word) = words.next() {
            match word {
                "--color" => {
                    words.next();
                }
                w if w.starts_with('-') => {}
                w => return Some(w),
            }
        }
        None
    }

    /// The status as people should read it: a `RUNNING` run whose owner is gone is
    /// `CRASHED` (resumable), one whose owner stopped beating is `STALLED`.
    pub fn display_status(&self) -> &'static str {
        match (self.status, self.owner.as_ref().map(|o| o.liveness)) {
            (RunStatus::Running, Some(Liveness::Gone)) => "CRASHED",
            (RunStatus::Running, Some(Liveness::Stalled)) => "STALLED",
            (status, _) => status.name(),
        }
    }

    /// True while an rlm process works on the run (or did, and is suspended or stuck).
    pub fn is_owned(&self) -> bool {
        matches!(
            self.owner.as_ref().map(|o| o.liveness),
            Some(Liveness::Alive | Liveness::Stalled)
        )
    }

    /// True when the run's owner is gone while it was running (it can be resumed).
    pub fn crashed(&self) -> bool {
        self.display_status() == "CRASHED"
    }

    /// Time left at this session's pace: remaining units ÷ (completed since start ÷
    /// elapsed). `None` when the run is not running, or nothing completed yet to go by.
    pub fn eta(&self, now: Timestamp) -> Option<Duration> {
        if self.display_status() != "RUNNING" || self.completed_since_start == 0 {
            return None;
        }
        let elapsed = now.since(self.started_at?);
        let per_unit = elapsed.div_f64(self.completed_since_start as f64);
        Some(per_unit.mul_f64(self.units.remaining() as f64))
    }
}

/// A unit that ended without a result, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub unit: String,
    pub label: String,
    pub state: UnitState,
    pub attempts: u32,
    pub reason: Option<String>,
}

/// A run and the runs it started, recursively (`rlm status --tree`).
#[derive(Debug, Clone, Serialize)]
pub struct RunTree {
    pub run: RunSummary,
    pub children: Vec<RunTree>,
}

/// Everything the store knows about one unit.
#[derive(Debug, Clone, Serialize)]
pub struct UnitRecord {
    pub run: RunId,
    pub id: String,
    pub label: String,
    pub kind: UnitKind,
    pub priority: i64,
    pub state: UnitState,
    pub attempts: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    pub duration_ms: u64,
    pub reason: Option<String>,
    pub result_file: Option<String>,
    pub cache_key: Option<String>,
    pub queued_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
}

/// One entry of a unit's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransitionRecord {
    /// `None` for the entry written when the unit was added.
    pub from: Option<UnitState>,
    pub to: UnitState,
    pub at: Timestamp,
    /// The unit's attempt count after the move.
    pub attempt: u32,
    pub detail: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subcommand_is_the_first_word_that_is_no_global_flag() {
        let mut run = summary(RunStatus::Interrupted, None);
        for (command, expected) in [
            (&["rlm", "batch", "src/*.ts"][..], Some("batch")),
            (&["rlm", "--color", "never", "-v", "batch", "x"][..], Some("batch")),
            (&["rlm", "--color=always", "job", "run"][..], Some("job")),
            (&["rlm", "-vv"][..], None),
        ] {
            run.command = command.iter().map(ToString::to_string).collect();
            assert_eq!(run.subcommand(), expected, "{command:?}");
        }
    }

    fn summary(status: RunStatus, liveness: Option<Liveness>) -> RunSummary {
        RunSummary {
            id: RunId::from("batch-2026-11-22-101530"),
            command: vec!["rlm".into()],
            cwd: PathBuf::from("/p"),
            output_dir: PathBuf::from("/p/out"),
            created_at: Timestamp::from_millis(0),
            started_at: Some(Timestamp::from_millis(1_000)),
            finished_at: None,
            status,
            parent: None,
            depth: 0,
            settings: serde_json::Value::Null,
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: 0.0,
            attempts: 1,
            elapsed_ms: 0,
            units: UnitCounts {
                queued: 30,
                running: 10,
                completed: 60,
                ..UnitCounts::default()
            },
            owner: liveness.map(|liveness| Owner {
                pid: 1,
                heartbeat_at: None,
                liveness,
            }),
            superseded_by: None,
            not_cached: 0,
            mean_completed_ms: Some(500),
            completed_since_start: 20,
        }
    }

    #[test]
    fn eta_goes_by_this_sessions_pace() {
        let run = summary(RunStatus::Running, Some(Liveness::Alive));
        // 20 units in 10 s → 0.5 s each; 40 remaining → 20 s.
        assert_eq!(run.eta(Timestamp::from_millis(11_000)), Some(Duration::from_secs(20)));
        assert_eq!(
            summary(RunStatus::Running, Some(Liveness::Gone)).eta(Timestamp::from_millis(11_000)),
            None
        );
        assert_eq!(
            summary(RunStatus::Interrupted, None).eta(Timestamp::from_millis(11_000)),
            None
        );
    }

    #[test]
    fn a_running_run_without_its_owner_reads_as_crashed() {
        assert_eq!(
            summary(RunStatus::Running, Some(Liveness::Gone)).display_status(),
            "CRASHED"
        );
        assert_eq!(
            summary(RunStatus::Running, Some(Liveness::Stalled)).display_status(),
            "STALLED"
        );
        assert_eq!(
            summary(RunStatus::Running, Some(Liveness::Alive)).display_status(),
            "RUNNING"
        );
        assert_eq!(summary(RunStatus::Partial, None).display_status(), "PARTIAL");
        assert_eq!(summary(RunStatus::Running, None).units.total(), 100);
    }
}
