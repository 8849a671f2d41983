//! The errors of citation verification (a citation that fails is a result, not an error).

use std::path::PathBuf;

use crate::error::{ErrorKind, ExitStatus};

/// Why `rlm verify-citations` could not check anything.
#[derive(Debug, thiserror::Error)]
pub enum CitationError {
    /// The aggregate could not be read (the `fs_err` message names it).
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// A `.json` aggregate that is not JSON.
    #[error("{}: not valid JSON ({message}); give an aggregate.md or aggregate.json", path.display())]
    Json { path: PathBuf, message: String },
    /// `--root` is not a directory.
    #[error("{}: not a directory; --root must name the project the citations are relative to", .0.display())]
    Root(PathBuf),
    /// Writing the report failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

impl CitationError {
    /// Every such error is an input error (exit 2): nothing was verified.
    pub fn exit_status(&self) -> ExitStatus {
        self.kind().exit_status()
    }

    /// The class of this error (the `--json` error document's `kind`): reading or writing
    /// a file is `io`, the rest the command line's fault.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CitationError::Io(_) | CitationError::Output(_) => ErrorKind::Io,
            CitationError::Json { .. } | CitationError::Root(_) => ErrorKind::Usage,
        }
    }
}
