//! `InputFailure`: the inputs cannot be used — a list of files, a git reference or a graph
//! query is bad, or a file a flag or the job names cannot be read. The error of the stage
//! that found it is kept as the source, never flattened into a string.

use crate::index::IndexError;
use crate::input::changed::ChangedError;
use crate::input::files_from::FilesFromError;

/// An input of the command cannot be used (exit 2): nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum InputFailure {
    /// `--files-from`: the list cannot be read or names a file that cannot be used.
    #[error(transparent)]
    FilesFrom(#[from] FilesFromError),
    /// `--changed-since`: the reference or the git repository cannot be used.
    #[error(transparent)]
    Changed(#[from] ChangedError),
    /// `--neighbors-of`: the graph cannot be built or read, or does not know the node.
    #[error(transparent)]
    Neighbors(#[from] IndexError),
    /// A file a flag names cannot be read (the io error names its path).
    #[error("{flag}: {source}")]
    FlagFile {
        flag: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A file the command needs (`what`: "the job file", …) cannot be read.
    #[error("cannot read {what}: {source}")]
    Unreadable {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// `--prompt-file -`: standard input cannot be read.
    #[error("--prompt-file -: cannot read the prompt from stdin: {0}")]
    PromptFromStdin(#[source] std::io::Error),
}

impl InputFailure {
    /// The file `flag` names cannot be read.
    pub fn flag_file(flag: &'static str) -> impl FnOnce(std::io::Error) -> InputFailure {
        move |source| InputFailure::FlagFile { flag, source }
    }

    /// The file the command calls `what` cannot be read.
    pub fn unreadable(what: &'static str) -> impl FnOnce(std::io::Error) -> InputFailure {
        move |source| InputFailure::Unreadable { what, source }
    }
}
