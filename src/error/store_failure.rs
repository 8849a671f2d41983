//! `StoreFailure`: the task store failed under a command, or a file rlm keeps for a run or
//! a job is not what rlm wrote. The store's own error is kept as the source; the variant is
//! the sentence the command adds about what it was doing, so no site flattens the error
//! into a string to say so.

use std::path::PathBuf;

use crate::settings::RecordError;
use crate::store::{RunId, StoreError};

/// The run store, or a file rlm keeps for a run or a job, failed a command.
#[derive(Debug, thiserror::Error)]
pub enum StoreFailure {
    /// The task store failed; its own message names the database, run or unit at fault.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A new run's id could not be checked against the ids the store has reserved: an id
    /// it could not check may be another run's, so the run is refused.
    #[error("cannot reserve a run id in the task store ({0}); nothing was sent")]
    ReserveRunId(#[source] StoreError),
    /// The batches an earlier run left at the provider could not be read.
    #[error("cannot read the batches of run {run} in the task store: {source}")]
    EarlierBatches {
        run: RunId,
        #[source]
        source: StoreError,
    },
    /// `--batch-api` records each batch before waiting for it, and the store cannot be
    /// opened to do so.
    #[error(
        "--batch-api records each batch in the run store before waiting for it, and the store cannot be \
         opened ({0}); nothing was sent"
    )]
    BatchApiUnrecorded(#[source] StoreError),
    /// The settings a run recorded cannot be read by this rlm.
    #[error(
        "run {run} recorded arguments this rlm cannot read ({source}): run its command again instead (finished \
         answers are cached)"
    )]
    UnreadableRecord {
        run: RunId,
        #[source]
        source: RecordError,
    },
    /// A JSON file rlm keeps in a job directory does not parse.
    #[error("{} is not what rlm wrote: {source}", path.display())]
    NotWrittenByRlm {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}
