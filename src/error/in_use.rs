//! `InUse`: another rlm process works on the run or its directory. The variant says which
//! (a directory's lock, the store's claim of a run, batches still at the provider) and keeps
//! who holds it, so the refusal is built from facts rather than from a sentence.

use std::fmt;
use std::path::PathBuf;

use crate::store::{RunId, StoreError};

/// The rlm process that holds a run directory's lock: its pid when it wrote one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: Option<u32>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "rlm process {pid}"),
            None => f.write_str("another rlm process"),
        }
    }
}

/// Another rlm process works on the run or its directory (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum InUse {
    /// A new run's directory is locked by another run.
    #[error(
        "the run directory {} is in use by {holder}: wait for that run to end (or stop it), or pass another \
         --output-dir",
        dir.display()
    )]
    RunDirectory { dir: PathBuf, holder: LockHolder },
    /// The run to resume still runs: it holds its own directory.
    #[error(
        "run {run} is still running in {holder} (it holds {}): wait for it to end, or stop it first",
        dir.display()
    )]
    StillRunning {
        run: String,
        dir: PathBuf,
        holder: LockHolder,
    },
    /// The run to resume is stopped, but another run works in its directory.
    #[error(
        "run {run} is not running, but its output directory {} is in use by {holder}, another run: wait for that \
         run to end (a run that takes the directory over leaves run {run} unresumable)",
        dir.display()
    )]
    DirectoryTaken {
        run: String,
        dir: PathBuf,
        holder: LockHolder,
    },
    /// The store says a live rlm has claimed the run (its message names the run and pid).
    #[error(transparent)]
    Claimed(StoreError),
    /// `rlm resume` without a run: the only unfinished runs here are still running.
    #[error(
        "no stopped run to resume here: run {run} is still running in rlm process {pid}: wait for it to end, or \
         stop it first"
    )]
    NoStoppedRun { run: RunId, pid: u32 },
    /// `rlm cancel --forget` while another rlm waits for the run's batches.
    #[error(
        "rlm cancel --forget: {holder} waits for run {run} and collects its batches; stop it first (Ctrl-C), then \
         give them up"
    )]
    CollectedElsewhere { run: RunId, holder: LockHolder },
    /// The output directory holds a run whose batches are still at the provider.
    #[error(
        "the output directory holds run {run}, which has {waiting} batch{} still at the provider: `rlm resume {run}` \
         collects {them}, `rlm cancel {run}` cancels {them}; or pass another --output-dir",
        if *waiting == 1 { "" } else { "es" },
        them = if *waiting == 1 { "it" } else { "them" },
    )]
    BatchesWaiting { run: String, waiting: usize },
}
