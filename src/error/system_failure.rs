//! `SystemFailure`: the system cannot give rlm what it needs to start (threads, the
//! working directory, a home directory, a temporary file, an HTTP client).

use crate::provider::HttpSetupError;

/// The system refused rlm something it needs before any work (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SystemFailure {
    /// The async runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The working directory cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDirectory(#[source] std::io::Error),
    /// `--user` without a home directory.
    #[error(transparent)]
    NoHome(crate::skill::SkillError),
    /// `rlm merge` could not write the runs' prompt where the plan reads it.
    #[error("cannot write the runs' prompt to a temporary file: {0}")]
    PromptFile(#[source] std::io::Error),
    /// A thread to read the answer to the cost question could not be started.
    #[error("cannot start a thread to read the answer: {0}")]
    AnswerThread(#[source] std::io::Error),
    /// The HTTP client could not be built.
    #[error(transparent)]
    HttpClient(HttpSetupError),
    /// A batch API run was opened for a plan that planned none: a bug.
    #[error("internal error: no batch API was planned")]
    NoBatchApiPlanned,
}
