//! Error types and the exit codes they map to.
//!
//! Every error the user can see is one line that names the thing at fault and says what to
//! do; the exit code says which class of failure it was (documented in the README).

use std::path::PathBuf;

/// The documented exit codes of `rlm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every unit succeeded.
    Success = 0,
    /// Some units failed, some succeeded.
    Partial = 1,
    /// Bad usage or bad input: nothing was sent to a model.
    Usage = 2,
    /// Nothing succeeded, or the provider refused us (authentication, quota, bad request).
    Failed = 3,
    /// Interrupted by Ctrl-C or SIGTERM.
    Interrupted = 130,
}

/// An error that ends the run before or outside the per-unit work.
#[derive(Debug, thiserror::Error)]
pub enum RlmError {
    /// Bad flags, bad configuration or bad input.
    #[error("{0}")]
    Usage(String),
    /// The pattern matched nothing (the message is the seed's multi-line help).
    #[error("{0}")]
    NoMatch(String),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The provider refused us before any work could be done.
    #[error("{0}")]
    Provider(String),
}

impl RlmError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RlmError::Io {
            path: path.into(),
            source,
        }
    }

    /// The exit code this error maps to.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            RlmError::Usage(_) | RlmError::NoMatch(_) | RlmError::Io { .. } => ExitStatus::Usage,
            RlmError::Provider(_) => ExitStatus::Failed,
        }
    }
}
