//! The dependency index: a file-level dependency graph of the project, stored under
//! `.aiwg/rlm/index/`, and neighbour queries over it (or over an external graph file).
//!
//! Owns: the walk of the project ([`project_files`]), import extraction per language
//! (`parse`), resolution of imports to project files (`resolve`), the versioned index
//! file ([`ProjectIndex`]), incremental builds ([`build`], [`is_stale`],
//! [`load_or_build`]), the query graph ([`DependencyGraph`]) and multi-hop expansion
//! ([`neighbors`]), plus the `rlm index` commands ([`command`]).
//!
//! ```no_run
//! # fn main() -> Result<(), rlm::index::IndexError> {
//! use rlm::index::{load_or_build, neighbors, DependencyGraph, Direction};
//! let root = std::path::Path::new(".");
//! let (index, notice) = load_or_build(root)?; // print `notice` on stderr when Some
//! let graph = DependencyGraph::from_index(&index, root);
//! let tests = neighbors(&graph, "src/auth/session.ts", Direction::Out, 2)?;
//! # Ok(()) }
//! ```

mod builder;
pub mod command;
mod dependency_graph;
mod error;
mod external_graph;
mod language;
mod neighbors;
mod parse;
pub mod project_files;
mod project_index;
#[cfg(test)]
mod project_tests;
mod resolve;

pub use builder::{build, is_stale, load_or_build, BuildReport};
pub use dependency_graph::{normalize_node_name, DependencyGraph};
pub use error::IndexError;
pub use external_graph::load_graph_file;
pub use language::{EdgeKind, Language};
pub use neighbors::{expand, neighbors, Direction, Neighbor, MAX_DEPTH};
pub use parse::{extract_imports, RawImport};
pub use project_index::{FileRecord, ProjectIndex, INDEX_DIR, INDEX_FILE, INDEX_VERSION};
pub use resolve::Edge;
