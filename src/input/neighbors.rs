//! `--neighbors-of PATH`: the inputs are the files connected to one file in a dependency
//! graph (issue 10) — this project's index, built first when missing or stale, or a
//! `--graph-file` — within `depth` hops in one direction, deduplicated. The start node
//! itself is not an input: the seed dispatches the prompt "over its neighbours" ("list
//! every test that exercises this module").
//!
//! A graph names files; it does not point at them as the user does. A neighbour that a
//! symbolic link leads out of the project (`keys/id_rsa` with `keys -> ~/.ssh`, a graph
//! file's entry that is itself such a link) is held to the policy of a glob and of
//! `--files-from`: skipped and named, never sent, unless `--follow-links`.

use std::path::{Path, PathBuf};

use super::list::outside_reason;
use super::read::read_candidates;
use super::{Manifest, SkippedFile};
use crate::index::command::{load_graph, GraphChoice};
use crate::index::{neighbors, Direction, IndexError};

/// What a neighbour query asks.
#[derive(Debug, Clone)]
pub struct NeighborsQuery<'a> {
    pub node: &'a str,
    pub direction: Direction,
    pub depth: u32,
    /// `None`: the project index.
    pub graph_file: Option<&'a Path>,
    /// Send neighbours that a symbolic link leads out of the project (`--follow-links`).
    pub follow_links: bool,
}

/// The files found, and a notice for stderr when the index had to be built first.
#[derive(Debug, Clone)]
pub struct NeighborInputs {
    pub manifest: Manifest,
    pub notice: Option<String>,
    /// The start node as the graph names it (project-relative).
    pub node: String,
}

/// Resolves the query against the graph rooted at `cwd`. An unknown node, a bad graph file
/// or an out-of-range depth is an error naming it.
pub fn resolve_neighbors(cwd: &Path, query: &NeighborsQuery<'_>) -> Result<NeighborInputs, IndexError> {
    let choice = match query.graph_file {
        Some(file) => GraphChoice::File(file.to_path_buf()),
        None => GraphChoice::Project,
    };
    let (graph, notice) = load_graph(&choice, cwd)?;
    let node = graph.resolve_node(query.node)?;
    let mut paths = neighbors(&graph, &node, query.direction, query.depth)?;
    // The manifest is sorted by display path, like every resolver's.
    paths.sort();
    let boundary = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut candidates: Vec<(PathBuf, String)> = Vec::with_capacity(paths.len());
    let mut outside = Vec::new();
    for path in paths {
        let full = cwd.join(&path);
        match outside_reason(&full, &boundary) {
            Some(reason) if !query.follow_links => outside.push(SkippedFile { path, reason }),
            _ => candidates.push((full, path)),
        }
    }
    let mut manifest = read_candidates(candidates);
    manifest.warn_outside(outside.iter().map(|s| s.path.clone()).collect());
    manifest.skipped.extend(outside);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(NeighborInputs { manifest, notice, node })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in [
            ("src/db.ts", "export const db = 1;\n"),
            ("src/session.ts", "import { db } from './db';\n"),
            ("test/session.test.ts", "import '../src/session';\n"),
        ] {
            let p = dir.path().join(path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, text).unwrap();
        }
        dir
    }

    fn query(node: &str, direction: Direction, depth: u32) -> NeighborsQuery<'_> {
        NeighborsQuery {
            node,
            direction,
            depth,
            graph_file: None,
            follow_links: false,
        }
    }

    #[test]
    fn neighbours_become_a_sorted_manifest_without_the_node() {
        let dir = project();
        let found = resolve_neighbors(dir.path(), &query("./src/db.ts", Direction::Out, 2)).unwrap();
        assert!(found.notice.is_some(), "the index is built first");
        assert_eq!(found.node, "src/db.ts");
        let paths: Vec<_> = found.manifest.files.iter().map(|f| f.display.as_ref()).collect();
        assert_eq!(paths, vec!["src/session.ts", "test/session.test.ts"]);
        let again = resolve_neighbors(dir.path(), &query("src/session.ts", Direction::In, 1)).unwrap();
        assert_eq!(again.notice, None);
        assert_eq!(&*again.manifest.files[0].display, "src/db.ts");
    }

    #[test]
    fn an_unknown_node_is_named() {
        let dir = project();
        let err = resolve_neighbors(dir.path(), &query("src/sesion.ts", Direction::Both, 1)).unwrap_err();
        assert!(err.to_string().contains("unknown node `src/sesion.ts`"), "{err}");
    }
}
