//! The persistent task store: every run, its units and each unit's state transitions, in
//! a SQLite database at `<project>/.aiwg/rlm/store.sqlite3` (issue 8).
//!
//! The store answers `rlm status`, `rlm list`, `rlm status --tree` and `rlm resume` with
//! queries, survives `kill -9` by construction (WAL), and is shared safely by concurrent
//! rlm processes. The unit lifecycle is enforced in one place, [`UnitState::can_move_to`].
//! The engine feeds it: `create_run`, `add_units`, a `transition` per event (or a
//! [`WriteBatch`] of many), `heartbeat` every few seconds, `record_run_end`.

mod batch_submissions;
mod claim;
mod error;
mod key_claims;
mod lifecycle;
mod liveness;
mod queries;
mod records;
mod render;
mod run_rows;
mod schema;
mod summary;
mod task_store;
mod timestamp;
mod write_batch;

pub use batch_submissions::{
    BatchIntent, BatchRequestRecord, BatchSubmission, NewBatchIntent, NewBatchSubmission, RequestOutcome,
};
pub use claim::{Claim, Limits, Spent};
pub use error::StoreError;
pub use key_claims::{KeyClaim, KeyHolder};
pub use lifecycle::{RunStatus, UnitKind, UnitState};
pub use liveness::{Liveness, HEARTBEAT_STALE_AFTER, RUN_LOCK_FILE};
pub use records::{Detail, NewRun, NewUnit, RunId};
pub use render::{list_json, list_text, status_json, status_text, tree_json, tree_text};
pub use schema::SCHEMA_VERSION;
pub use summary::{Failure, Owner, RunSummary, RunTree, TransitionRecord, UnitCounts, UnitRecord};
pub use task_store::{TaskStore, STORE_FILE};
pub use timestamp::Timestamp;
pub use write_batch::WriteBatch;

#[cfg(test)]
mod tests;
