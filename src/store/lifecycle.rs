//! The states a unit and a run can be in, their names in the database, and the one table
//! that says which unit transitions are legal.
//!
//! Every change of a unit's state in the store goes through [`UnitState::can_move_to`], so
//! the lifecycle is enforced in exactly one place (issue 8: "no illegal transitions").

use std::fmt;

use serde::Serialize;

/// Where a unit of work is in its life:
/// `queued → running → completed | failed | timed_out | cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitState {
    /// Waiting for a slot.
    Queued,
    /// Dispatched: a call or a process is in flight.
    Running,
    /// Finished; its result is on disk.
    Completed,
    /// Gave up after its retries; the reason is recorded.
    Failed,
    /// Exceeded the per-call timeout.
    TimedOut,
    /// Stopped by shutdown, a budget or a deadline before it finished.
    Cancelled,
}

impl UnitState {
    /// Every state, in lifecycle order (for counts and tables).
    pub const ALL: [UnitState; 6] = [
        UnitState::Queued,
        UnitState::Running,
        UnitState::Completed,
        UnitState::Failed,
        UnitState::TimedOut,
        UnitState::Cancelled,
    ];

    /// The states `rlm resume --failed` sends back to the queue.
    pub const UNSUCCESSFUL: [UnitState; 3] = [UnitState::Failed, UnitState::TimedOut, UnitState::Cancelled];

    /// The lifecycle as data: may a unit in `self` move to `to`?
    ///
    /// Beyond the forward path, resume needs four ways back to the queue: `running →
    /// queued` (units left running by a crashed run), `failed | timed_out | cancelled →
    /// queued` (`resume --failed`, and retries), `completed → queued` (a unit whose file was
    /// edited before the resume: its answer is for other content, so it is asked again, and
    /// what both answers cost stays counted), and `queued → cancelled` (a shutdown or a
    /// budget stop before dispatch).
    // A table of transitions, one (from, to) pair a line, reads better than nested patterns.
    #[allow(clippy::unnested_or_patterns, clippy::enum_glob_use)]
    pub fn can_move_to(self, to: UnitState) -> bool {
        use UnitState::*;
        matches!(
            (self, to),
            (Queued, Running)
                | (Queued, Cancelled)
                | (Running, Completed)
                | (Running, Failed)
                | (Running, TimedOut)
                | (Running, Cancelled)
                | (Running, Queued)
                | (Failed, Queued)
                | (TimedOut, Queued)
                | (Cancelled, Queued)
                | (Completed, Queued)
        )
    }

    /// True for the states a unit ends in (it is no longer queued or running).
    pub fn is_finished(self) -> bool {
        !matches!(self, UnitState::Queued | UnitState::Running)
    }

    /// The name stored in the database and shown to users.
    pub fn name(self) -> &'static str {
        match self {
            UnitState::Queued => "queued",
            UnitState::Running => "running",
            UnitState::Completed => "completed",
            UnitState::Failed => "failed",
            UnitState::TimedOut => "timed_out",
            UnitState::Cancelled => "cancelled",
        }
    }

    /// The state stored under `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        UnitState::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for UnitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a unit is for: one map call over inputs, or an aggregation over map results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    Map,
    Aggregate,
}

impl UnitKind {
    /// The name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            UnitKind::Map => "map",
            UnitKind::Aggregate => "aggregate",
        }
    }

    /// The kind stored under `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        [UnitKind::Map, UnitKind::Aggregate]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

/// How a run stands: `RUNNING` while its owner works on it, then how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    /// An rlm process owns it (or owned it and crashed: see `Liveness`).
    Running,
    /// Every unit completed.
    Success,
    /// Some units failed, some completed.
    Partial,
    /// Nothing completed, or the provider refused the run.
    Failed,
    /// Ctrl-C or SIGTERM; queued units wait for `rlm resume`.
    Interrupted,
    /// `--max-cost` was reached; resumable with a higher budget.
    BudgetExceeded,
    /// `--deadline` passed; resumable.
    DeadlineExceeded,
    /// A job stopped after the phase `--pause-after` named; `rlm job resume` goes on.
    Paused,
    /// It stopped before it finished, and a later run took over its output directory
    /// (replacing its results): it can no longer be resumed (issue 17).
    Superseded,
}

impl RunStatus {
    /// Every status (for parsing).
    pub const ALL: [RunStatus; 9] = [
        RunStatus::Running,
        RunStatus::Success,
        RunStatus::Partial,
        RunStatus::Failed,
        RunStatus::Interrupted,
        RunStatus::BudgetExceeded,
        RunStatus::DeadlineExceeded,
        RunStatus::Paused,
        RunStatus::Superseded,
    ];

    /// The name stored in the database and shown to users (the report's spelling).
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "RUNNING",
            RunStatus::Success => "SUCCESS",
            RunStatus::Partial => "PARTIAL",
            RunStatus::Failed => "FAILED",
            RunStatus::Interrupted => "INTERRUPTED",
            RunStatus::BudgetExceeded => "BUDGET_EXCEEDED",
            RunStatus::DeadlineExceeded => "DEADLINE_EXCEEDED",
            RunStatus::Paused => "PAUSED",
            RunStatus::Superseded => "SUPERSEDED",
        }
    }

    /// The status stored under `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        RunStatus::ALL.into_iter().find(|s| s.name() == name)
    }

    /// A run that stopped before all its units ran, so `rlm resume` has work to do.
    pub fn is_stopped_early(self) -> bool {
        matches!(
            self,
            RunStatus::Running
                | RunStatus::Interrupted
                | RunStatus::BudgetExceeded
                | RunStatus::DeadlineExceeded
                | RunStatus::Paused
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transition_table_allows_exactly_the_documented_moves() {
        use UnitState::*;
        let legal: Vec<(UnitState, UnitState)> = UnitState::ALL
            .into_iter()
            .flat_map(|from| UnitState::ALL.into_iter().map(move |to| (from, to)))
            .filter(|&(from, to)| from.can_move_to(to))
            .collect();
        assert_eq!(
            legal,
            vec![
                (Queued, Running),
                (Queued, Cancelled),
                (Running, Queued),
                (Running, Completed),
                (Running, Failed),
                (Running, TimedOut),
                (Running, Cancelled),
                (Completed, Queued),
                (Failed, Queued),
                (TimedOut, Queued),
                (Cancelled, Queued),
            ]
        );
    }

    #[test]
    fn names_round_trip() {
        for state in UnitState::ALL {
            assert_eq!(UnitState::from_name(state.name()), Some(state));
        }
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::from_name(status.name()), Some(status));
        }
        for kind in [UnitKind::Map, UnitKind::Aggregate] {
            assert_eq!(UnitKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(UnitState::from_name("done"), None);
        assert_eq!(
            serde_json::to_string(&RunStatus::BudgetExceeded).unwrap(),
            "\"BUDGET_EXCEEDED\""
        );
        assert_eq!(serde_json::to_string(&UnitState::TimedOut).unwrap(), "\"timed_out\"");
    }
}
