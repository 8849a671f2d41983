//! `NoMatch`: the inputs a command was given select no file. The first is the seed's
//! multi-line help, printed as it is.

use crate::escape;
use crate::index::Direction;

/// The pattern or the graph query selected nothing.
#[derive(Debug, thiserror::Error)]
pub enum NoMatch {
    /// No file matched the pattern: the seed's multi-line help.
    #[error(
        "RLM Batch: No files matched pattern\n\nPattern: {}\n\nPlease check:\n\
         1. Pattern syntax is correct\n2. Files exist in expected location\n3. Working directory is correct\n\n\
         Examples:\n  - src/**/*.ts (all TypeScript files)\n  - test/**/*.test.js (all test files)\n  \
         - **/*.{{js,ts}} (all JS and TS files)\n\n\
         Skipped unless the pattern names them: VCS, dependency and build folders, lock files, minified \
         and generated files, binaries and media. --no-ignore includes .gitignore'd files, --hidden hidden ones.",
        escape::name(pattern)
    )]
    Pattern { pattern: String },
    /// The directory the pattern starts in does not exist (`missing` as the user wrote it,
    /// `cwd` as shown).
    #[error(
        "RLM Batch: no directory {missing}/\n\nPattern: {}\n\nThe pattern starts in {missing}/, which does not exist \
         in {}. Check the path, or run rlm from the directory the pattern is relative to.",
        escape::name(pattern),
        escape::name(cwd)
    )]
    MissingDirectory {
        missing: String,
        pattern: String,
        cwd: String,
    },
    /// `--neighbors-of`: the node has no neighbour within the depth.
    #[error(
        "`{}` has no neighbors in the {graph} graph (direction {direction}, depth {depth}): try {}",
        escape::name(node),
        if *direction == Direction::Both { "a larger --depth" } else { "--direction both or a larger --depth" }
    )]
    NoNeighbors {
        node: String,
        graph: String,
        direction: Direction,
        depth: u32,
    },
}
