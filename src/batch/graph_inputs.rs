//! The `--neighbors-of` input axis of a run (issue 10): the graph query, its notice on
//! stderr, and the errors a user can cause, each one line naming the node or graph.

use crate::error::{InputFailure, NoMatch, RlmError};
use crate::input::{resolve_neighbors, Manifest, NeighborsQuery};
use crate::printer::Printer;
use crate::settings::BatchSettings;

/// The files connected to the node of `query` in `graph` (`project` or the graph file, as
/// the user named it); none at all ends the run, naming the node.
pub fn resolve(
    settings: &BatchSettings,
    query: &NeighborsQuery<'_>,
    graph: &str,
    printer: &Printer,
) -> Result<Manifest, RlmError> {
    let (direction, depth) = (&query.direction, query.depth);
    let found = resolve_neighbors(&settings.cwd, query).map_err(InputFailure::Neighbors)?;
    if let Some(notice) = &found.notice {
        printer.important(&format!("rlm: {notice}"));
    }
    if found.manifest.matched() == 0 {
        return Err(NoMatch::NoNeighbors {
            node: found.node,
            graph: graph.to_string(),
            direction: *direction,
            depth,
        }
        .into());
    }
    Ok(found.manifest)
}
