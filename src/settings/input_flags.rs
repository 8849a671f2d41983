//! The input flags of `rlm batch` turned into its one input axis: which flags go together,
//! which positional is the pattern and which the prompt.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::input_source::{glob_text, sort_positionals, source_for_pattern, DirectoryFlags, InputSource, Positionals};
use crate::error::{FlagError, RlmError};
use crate::index::Direction;

/// The flags and positionals that choose the inputs, as given.
pub struct InputFlags {
    /// The pattern, or the prompt after an input flag: it may name a file, so it need not
    /// be UTF-8.
    pub first: Option<OsString>,
    pub second: Option<String>,
    /// `--prompt-file` was given: no positional is the prompt.
    pub prompt_from_file: bool,
    pub files_from: Option<PathBuf>,
    pub null: bool,
    pub changed_since: Option<String>,
    pub directory: DirectoryFlags,
    pub neighbors_of: Option<String>,
    pub direction: Option<Direction>,
    pub depth: Option<u32>,
    pub graph: Option<String>,
    pub graph_file: Option<PathBuf>,
}

/// The input axis, the prompt when a positional gave it, and the `--max-files` cap.
pub struct ResolvedInput {
    pub source: InputSource,
    pub prompt: Option<String>,
    pub max_files: Option<usize>,
}

/// Exactly one input axis: a pattern (glob or directory), `--files-from`,
/// `--changed-since` or `--neighbors-of`; the flags that belong to another axis are usage
/// errors that name them.
pub fn resolve_input(flags: InputFlags, cwd: &Path) -> Result<ResolvedInput, RlmError> {
    let InputFlags {
        first,
        second,
        prompt_from_file,
        files_from,
        null,
        changed_since,
        directory,
        neighbors_of,
        direction,
        depth,
        graph,
        graph_file,
    } = flags;
    // Graph-bounded inputs (issue 10): --neighbors-of replaces the pattern.
    if neighbors_of.is_none() {
        let graph_flags = [
            ("--direction", direction.is_some()),
            ("--depth", depth.is_some()),
            ("--graph", graph.is_some()),
            ("--graph-file", graph_file.is_some()),
        ];
        if let Some((flag, _)) = graph_flags.iter().find(|(_, given)| *given) {
            return Err(RlmError::Usage(format!(
                "{flag} needs --neighbors-of PATH: it chooses the neighbours of PATH in the dependency graph"
            )));
        }
    }
    let axes: Vec<&str> = [
        ("--files-from", files_from.is_some()),
        ("--changed-since", changed_since.is_some()),
        ("--neighbors-of", neighbors_of.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect();
    if axes.len() > 1 {
        return Err(RlmError::Usage(format!(
            "{} each choose the input files: keep one input axis per run",
            axes.join(" and ")
        )));
    }
    let axis_flag = axes.first().copied();
    // A list-based axis may be narrowed by a pattern; graph neighbours may not.
    let filter_allowed = neighbors_of.is_none();
    let Positionals { pattern, prompt } = sort_positionals(first, second, axis_flag, filter_allowed, prompt_from_file)?;
    if let (Some(axis), Some(flag)) = (axis_flag, directory.first_given()) {
        return Err(RlmError::Usage(format!(
            "{flag} applies to a directory, not to {axis}: put the filter in the pattern after {axis}"
        )));
    }
    let max_files_flag = directory.max_files;
    let neighbors = neighbors_of
        .map(|node| neighbors_source(node, direction, depth, graph, graph_file, cwd))
        .transpose()?;
    let source = match (pattern, files_from, changed_since) {
        (filter, Some(list), _) => InputSource::FilesFrom {
            list: if list == Path::new("-") || list.is_absolute() {
                list
            } else {
                cwd.join(list)
            },
            null,
            filter: filter.map(glob_text).transpose()?,
        },
        (filter, None, Some(reference)) => InputSource::ChangedSince {
            reference,
            filter: filter.map(glob_text).transpose()?,
        },
        (Some(pattern), None, None) if pattern.to_str().is_some_and(|p| p.trim().is_empty()) => {
            return Err(RlmError::Usage(
                "the file pattern is empty: pass a glob such as 'src/**/*.ts' or a directory".into(),
            ))
        }
        (Some(pattern), None, None) => source_for_pattern(pattern, cwd, directory)?,
        (None, None, None) => neighbors.ok_or_else(|| {
            RlmError::Usage("no files named: pass a pattern such as 'src/**/*.ts' or a directory".into())
        })?,
    };
    let max_files = match &source {
        InputSource::Directory { max_files, .. } => Some(*max_files),
        _ => max_files_flag,
    };
    Ok(ResolvedInput {
        source,
        prompt,
        max_files,
    })
}

/// The `--neighbors-of` input axis from its flags (issue 10).
fn neighbors_source(
    node: String,
    direction: Option<Direction>,
    depth: Option<u32>,
    graph: Option<String>,
    graph_file: Option<PathBuf>,
    cwd: &Path,
) -> Result<InputSource, RlmError> {
    use crate::index::{command::PROJECT_GRAPH, IndexError};
    if node.trim().is_empty() {
        return Err(RlmError::Usage(
            "--neighbors-of is empty: pass a project file such as src/auth/session.ts".into(),
        ));
    }
    let graph = graph.unwrap_or_else(|| PROJECT_GRAPH.to_string());
    if graph_file.is_none() && graph != PROJECT_GRAPH {
        return Err(FlagError::Index(IndexError::UnknownGraph(graph)).into());
    }
    let graph = match &graph_file {
        Some(f) => f.display().to_string(),
        None => graph,
    };
    let graph_file = graph_file.map(|f| if f.is_absolute() { f } else { cwd.join(f) });
    Ok(InputSource::Neighbors {
        node,
        direction: direction.unwrap_or(Direction::Both),
        depth: depth.unwrap_or(1),
        graph,
        graph_file,
    })
}
