//! `StoreError`: everything that can go wrong with the task store, each one line that
//! names the database, run or unit at fault and says what to do.

use std::path::PathBuf;

use super::lifecycle::UnitState;

/// An error of the task store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory of the store could not be created.
    /// (The `fs_err` message names it.)
    #[error("cannot create the rlm directory: {0}")]
    CreateDir(#[source] std::io::Error),
    /// SQLite refused an operation (a damaged file, a full disk, a lock held too long).
    #[error("{path}: task store error: {source}; if the file is damaged, move it aside and rerun")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer rlm; it is left untouched.
    #[error("{path} was written by a newer rlm (schema {found}, this rlm knows up to {known}); upgrade rlm")]
    NewerSchema { path: PathBuf, found: i64, known: i64 },
    /// No run has this id (or id prefix).
    /// (The id as given, its control characters escaped: it is one line.)
    #[error("no run `{}` in the task store; `rlm list` shows the runs", crate::escape::name(.0))]
    UnknownRun(String),
    /// An id prefix matched several runs.
    #[error(
        "`{}` matches several runs ({candidates}); give more of the id",
        crate::escape::name(query)
    )]
    AmbiguousRun { query: String, candidates: String },
    /// A run already has this id.
    #[error("run `{0}` already exists in the task store; choose another id")]
    RunExists(String),
    /// The run has no unit with this id.
    #[error("run `{run}` has no unit `{unit}`")]
    UnknownUnit { run: String, unit: String },
    /// A unit with this id was added twice.
    #[error("run `{run}` already has a unit `{unit}`; unit ids must be unique within a run")]
    DuplicateUnit { run: String, unit: String },
    /// The lifecycle forbids this move; nothing was written.
    #[error("unit `{unit}` of run `{run}`: illegal transition {from} → {to}")]
    IllegalTransition {
        run: String,
        unit: String,
        from: UnitState,
        to: UnitState,
    },
    /// Another live rlm process owns the run.
    #[error("run `{run}` is still owned by rlm process {pid} ({why}); wait for it, or stop it first")]
    RunInUse { run: String, pid: u32, why: String },
    /// Another run took over the run's output directory: its results are gone.
    #[error(
        "run `{run}` cannot be resumed: run `{by}` took over its output directory {dir} (its results were \
         replaced); run its command again instead (finished answers are cached)"
    )]
    Superseded { run: String, by: String, dir: PathBuf },
    /// The run has no batch with this id.
    #[error("run `{run}` has no batch `{batch}`")]
    UnknownBatch { run: String, batch: String },
    /// A value in the database is not one this rlm writes (hand-edited or damaged).
    #[error("{path}: unexpected value `{value}` in {column}; the task store may be damaged")]
    Corrupt {
        path: PathBuf,
        column: &'static str,
        value: String,
    },
}

impl StoreError {
    /// Wraps a SQLite error with the database it concerns.
    pub(crate) fn sqlite(path: impl Into<PathBuf>, source: rusqlite::Error) -> Self {
        StoreError::Sqlite {
            path: path.into(),
            source,
        }
    }
}
