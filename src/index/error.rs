//! The errors of the dependency index and its commands.

use std::path::PathBuf;

use crate::error::{ErrorKind, ExitStatus};

/// Everything that can go wrong building, loading or querying a dependency graph. Each
/// message is one line naming the thing at fault and what to do.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A file or directory could not be read or written (the `fs_err` message names it).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The project root is not a directory.
    #[error("{0}: not a directory; give the project root")]
    NotADirectory(PathBuf),
    /// The walk of the project failed.
    #[error("cannot walk {root}: {message}")]
    Walk { root: PathBuf, message: String },
    /// The node is not in the graph.
    #[error("unknown node `{node}` in the {graph} graph{}", suggestion(.suggestions))]
    UnknownNode {
        node: String,
        graph: String,
        suggestions: Vec<String>,
    },
    /// A node name that points outside the project root.
    #[error("node `{node}` is outside the project root {}; give a path inside it", root.display())]
    OutsideRoot { node: String, root: PathBuf },
    /// `--depth` outside 1..=10.
    #[error("--depth {0} is out of range: use 1 to {max}", max = crate::index::MAX_DEPTH)]
    Depth(u32),
    /// `--graph` named a graph we do not have.
    #[error("unknown graph `{0}`: use `project` (this project's index) or --graph-file FILE")]
    UnknownGraph(String),
    /// A `--graph-file` that is not a dependency graph.
    #[error("{}: not a dependency graph ({message}); expected {{\"<path>\": {{\"upstream\": [{{\"path\", \"type\"}}], \"downstream\": [...]}}}}", path.display())]
    GraphFile { path: PathBuf, message: String },
    /// Writing the command's output failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

impl IndexError {
    /// The exit code this error maps to: every index error is a usage or input error.
    pub fn exit_status(&self) -> ExitStatus {
        self.kind().exit_status()
    }

    /// The class of this error (the `--json` error document's `kind`): reading or writing
    /// a file is `io`, the rest the command line's fault.
    pub fn kind(&self) -> ErrorKind {
        match self {
            IndexError::Io(_) | IndexError::Output(_) => ErrorKind::Io,
            _ => ErrorKind::Usage,
        }
    }
}

fn suggestion(candidates: &[String]) -> String {
    match candidates {
        [] => "; paths are project-relative (`src/a.ts`)".to_string(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}
