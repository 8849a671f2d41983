//! `TaskStore`: the open SQLite database at `<project>/.aiwg/rlm/store.sqlite3`.
//!
//! Settings, and why:
//! - WAL journal: readers (`rlm status`) never block the writer and the writer never blocks
//!   them; a `kill -9` at any instant leaves the database consistent (SQLite's guarantee).
//! - `synchronous = NORMAL`: in WAL mode a commit is then durable against the process
//!   dying (the WAL is in the OS's hands) but not against the OS or power failing, which
//!   may roll back the last commits — never corrupt. FULL would cost an fsync per commit,
//!   tens of thousands per large run, to save only the last few transitions in a power
//!   cut; results are on disk and in the cache anyway, so a resume would redo at most the
//!   calls of those last moments and the cache would answer most of them.
//! - `busy_timeout`: two rlm processes sharing the store wait for each other's write
//!   transactions instead of failing. Every write runs in an IMMEDIATE transaction, which
//!   takes the write lock up front: a deferred one that read first could fail at once
//!   with "database is locked" when another process wrote in between.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::claim::{Claim, Limits};
use super::error::StoreError;
use super::lifecycle::{RunStatus, UnitState};
use super::records::{Detail, NewRun, NewUnit, RunId};
use super::schema::{self, VersionCheck};
use super::write_batch::WriteBatch;

/// The store's file name inside the rlm directory (`.aiwg/rlm/`).
pub const STORE_FILE: &str = "store.sqlite3";

/// How long a write waits for another process's transaction before giving up. Long,
/// because a writer holds the lock for milliseconds; reaching it means something is wrong.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The persistent record of runs, units and their transitions.
#[derive(Debug)]
pub struct TaskStore {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    pub(crate) rlm_dir: PathBuf,
}

impl TaskStore {
    /// Opens (creating if needed) `rlm_dir/store.sqlite3` and brings its schema forward.
    /// A store written by a newer rlm is refused and left untouched.
    pub fn open(rlm_dir: &Path) -> Result<Self, StoreError> {
        fs_err::create_dir_all(rlm_dir).map_err(StoreError::CreateDir)?;
        let path = rlm_dir.join(STORE_FILE);
        let sqlite = |e| StoreError::sqlite(&path, e);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(sqlite)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        // Check the version before anything that writes (even switching to WAL writes).
        let newer = |found| StoreError::NewerSchema {
            path: path.clone(),
            found,
            known: schema::SCHEMA_VERSION,
        };
        if let VersionCheck::Newer(found) = schema::check_version(&conn).map_err(sqlite)? {
            return Err(newer(found));
        }
        // Switching to WAL takes an exclusive lock, and SQLite may report "database is locked"
        // at once (without its busy handler) while another process opens the same new store:
        // retried here for as long as the busy timeout.
        let started = std::time::Instant::now();
        let mode: String = loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
                Ok(mode) => break mode,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(sqlite(e)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt {
                path: path.clone(),
                column: "journal_mode",
                value: mode,
            });
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(sqlite)?;
        if let VersionCheck::Newer(found) = schema::migrate(&mut conn).map_err(sqlite)? {
            return Err(newer(found));
        }
        Ok(TaskStore {
            conn,
            path,
            rlm_dir: rlm_dir.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a write transaction: many writes, one commit. Dropping the batch without
    /// [`WriteBatch::commit`] rolls everything back.
    pub fn begin(&mut self) -> Result<WriteBatch<'_>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::sqlite(&self.path, e))?;
        Ok(WriteBatch::new(tx, &self.path, &self.rlm_dir))
    }

    /// Hands `id` to the caller if no run has it and no other caller was handed it: `true`
    /// when it is now the caller's, to give as [`NewRun::id`]. One insert, so two rlm
    /// processes starting runs in the same second can never both get one id (issue 17).
    pub fn reserve_run_id(&self, id: &str) -> Result<bool, StoreError> {
        let reserved = self
            .conn
            .prepare_cached("INSERT OR IGNORE INTO run_ids (id, reserved_at) VALUES (?1, ?2)")
            .and_then(|mut stmt| stmt.execute(rusqlite::params![id, super::timestamp::Timestamp::now().to_rfc3339()]))
            .map_err(|e| self.sqlite_error(e))?;
        Ok(reserved == 1)
    }

    /// Records a new `RUNNING` run owned by this process; returns its id.
    pub fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let mut batch = self.begin()?;
        let id = batch.create_run(run)?;
        batch.commit()?;
        Ok(id)
    }

    /// Adds `units` (all `queued`) to `run` in one transaction.
    pub fn add_units(&mut self, run: &RunId, units: &[NewUnit]) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.add_units(run, units)?;
        batch.commit()
    }

    /// Adds `units`, those at the indexes in `served` already `completed` (from the cache).
    pub fn add_units_served(&mut self, run: &RunId, units: &[NewUnit], served: &[usize]) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.add_units_served(run, units, served)?;
        batch.commit()
    }

    /// Adds the spend of a call that is no unit of `run` (an aggregation call) to the run
    /// and its current attempt (see [`WriteBatch::add_spend`]).
    pub fn add_spend(&mut self, run: &RunId, detail: &Detail) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.add_spend(run, detail)?;
        batch.commit()
    }

    /// Removes the units of `run` named in `units` (see [`WriteBatch::drop_units`]), in one
    /// transaction.
    pub fn drop_units(&mut self, run: &RunId, units: &[String]) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.drop_units(run, units)?;
        batch.commit()
    }

    /// Moves one unit to `to`, if the lifecycle allows it; otherwise
    /// [`StoreError::IllegalTransition`] and nothing is written.
    pub fn transition(&mut self, run: &RunId, unit: &str, to: UnitState, detail: &Detail) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.transition(run, unit, to, detail)?;
        batch.commit()
    }

    /// Moves several units in one transaction: all of them, or (on the first error) none.
    pub fn transition_many<U: AsRef<str>>(
        &mut self,
        run: &RunId,
        moves: &[(U, UnitState, Detail)],
    ) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.transition_all(run, moves)?;
        batch.commit()
    }

    /// Records how the run ended.
    pub fn record_run_end(&mut self, run: &RunId, status: RunStatus) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.record_run_end(run, status)?;
        batch.commit()
    }

    /// Marks a completed unit whose answer the cache did not take (see
    /// [`WriteBatch::mark_uncached`]).
    pub fn mark_uncached(&mut self, run: &RunId, unit: &str) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.mark_uncached(run, unit)?;
        batch.commit()
    }

    /// The answers kept in `output_dir` were cached (see [`WriteBatch::clear_uncached`]).
    pub fn clear_uncached(&mut self, output_dir: &Path) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.clear_uncached(output_dir)?;
        batch.commit()
    }

    /// The output directories of this store's runs that hold answers the cache did not take
    /// (a new run looks there before paying for an answer again).
    pub fn dirs_with_uncached_answers(&self) -> Result<Vec<PathBuf>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT runs.output_dir FROM uncached_units JOIN runs ON runs.id = uncached_units.run_id",
            )
            .map_err(|e| self.sqlite_error(e))?;
        let dirs = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.sqlite_error(e))?;
        Ok(dirs.into_iter().map(PathBuf::from).collect())
    }

    /// Tells `rlm status` this process is still working on `run` (call every few seconds).
    pub fn heartbeat(&mut self, run: &RunId) -> Result<(), StoreError> {
        let mut batch = self.begin()?;
        batch.heartbeat(run)?;
        batch.commit()
    }

    /// Takes over `run` for a resume, as its next attempt: refuses while another live rlm
    /// owns it; requeues the units a crash left running and those cancelled when the run
    /// stopped, and with `retry_unsuccessful` also the failed and timed-out ones. `limits`
    /// are the ones given to this resume; the claim says what the earlier attempts spent,
    /// how long they ran, and the limits earlier resumes gave. `holding_dir`: this process
    /// holds the run directory's lock, so the owner the store names is gone, whatever its
    /// pid now names.
    pub fn claim_run(
        &mut self,
        run: &RunId,
        retry_unsuccessful: bool,
        limits: Limits,
        holding_dir: bool,
    ) -> Result<Claim, StoreError> {
        let mut batch = self.begin()?;
        let claim = batch.claim_run(run, retry_unsuccessful, limits, holding_dir)?;
        batch.commit()?;
        Ok(claim)
    }

    pub(crate) fn sqlite_error(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.path, e)
    }
}
