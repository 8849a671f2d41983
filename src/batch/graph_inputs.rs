//! The `--neighbors-of` input axis of a run (issue 10): the graph query, its notice on
//! stderr, and the errors a user can cause, each one line naming the node or graph.

use crate::error::RlmError;
use crate::escape;
use crate::input::{resolve_neighbors, Manifest, NeighborsQuery};
use crate::printer::Printer;
use crate::settings::{BatchSettings, InputSource};

/// The files connected to the node of `source` (a [`InputSource::Neighbors`]); none at
/// all ends the run, naming the node.
pub fn resolve(settings: &BatchSettings, source: &InputSource, printer: &Printer) -> Result<Manifest, RlmError> {
    let InputSource::Neighbors {
        node,
        direction,
        depth,
        graph,
        graph_file,
    } = source
    else {
        return Err(RlmError::Usage("--neighbors-of was not given".into()));
    };
    let query = NeighborsQuery {
        node,
        direction: *direction,
        depth: *depth,
        graph_file: graph_file.as_deref(),
    };
    let found = resolve_neighbors(&settings.cwd, &query).map_err(|e| RlmError::Input(e.to_string()))?;
    if let Some(notice) = &found.notice {
        printer.important(&format!("rlm: {notice}"));
    }
    if found.manifest.matched() == 0 {
        let wider = if *direction == crate::index::Direction::Both {
            "a larger --depth"
        } else {
            "--direction both or a larger --depth"
        };
        return Err(RlmError::NoMatch(format!(
            "`{}` has no neighbors in the {graph} graph (direction {direction}, depth {depth}): try {wider}",
            escape::name(&found.node)
        )));
    }
    Ok(found.manifest)
}
