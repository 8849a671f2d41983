//! `--graph-file FILE`: a dependency graph from another tool, in the form
//! `{"<path>": {"upstream": [{"path", "type"}], "downstream": [...]}}`.
//!
//! `upstream` of P lists what P depends on (edges P → U); `downstream` lists what depends
//! on P (edges D → P). Both lists are merged, so a graph that gives only one side, or both
//! sides inconsistently, still yields every edge it states. An entry may also be a bare
//! path string; a missing `type` is `dependency`.

use std::path::Path;

use serde_json::Value;

use super::dependency_graph::{normalize_node_name, DependencyGraph};
use super::error::IndexError;

/// The edge type of an entry that gives none.
const DEFAULT_TYPE: &str = "dependency";

/// Reads a graph file; node paths are taken relative to `root`.
pub fn load_graph_file(path: &Path, root: &Path) -> Result<DependencyGraph, IndexError> {
    let text = fs_err::read_to_string(path)?;
    let invalid = |message: String| IndexError::GraphFile {
        path: path.to_path_buf(),
        message,
    };
    let json: Value = serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON: {e}")))?;
    let Value::Object(entries) = json else {
        return Err(invalid("the top level is not an object".into()));
    };
    let mut graph = DependencyGraph::new(path.display().to_string(), root);
    let node = |name: &str| normalize_node_name(root, name).map_err(|e| invalid(e.to_string()));
    for (name, sides) in &entries {
        let this = node(name)?;
        graph.add_node(&this);
        let sides = match sides {
            Value::Object(s) => s,
            Value::Null => continue,
            _ => return Err(invalid(format!("the entry of `{name}` is not an object"))),
        };
        for side in ["upstream", "downstream"] {
            let list = match sides.get(side) {
                None | Some(Value::Null) => continue,
                Some(Value::Array(list)) => list,
                Some(_) => return Err(invalid(format!("`{name}`.{side} is not an array"))),
            };
            for (i, entry) in list.iter().enumerate() {
                let (other, kind) = match entry {
                    Value::String(p) => (p.as_str(), DEFAULT_TYPE),
                    Value::Object(o) => {
                        let p = o
                            .get("path")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("`{name}`.{side}[{i}] has no \"path\" string")))?;
                        (p, o.get("type").and_then(Value::as_str).unwrap_or(DEFAULT_TYPE))
                    }
                    _ => return Err(invalid(format!("`{name}`.{side}[{i}] is neither a path nor an object"))),
                };
                let other = node(other)?;
                if side == "upstream" {
                    graph.add_edge(&this, &other, kind);
                } else {
                    graph.add_edge(&other, &this, kind);
                }
            }
        }
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::neighbors::{neighbors, Direction};

    fn write(dir: &Path, text: &str) -> std::path::PathBuf {
        let p = dir.join("graph.json");
        fs_err::write(&p, text).unwrap();
        p
    }

    #[test]
    fn upstream_and_downstream_become_edges() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(
            dir.path(),
            r#"{
              "src/auth/sessionManager.ts": {
                "upstream": [{"path": "./src/db.ts", "type": "import"}, "src/config.ts"],
                "downstream": [{"path": "test/session.test.ts", "type": "test"}]
              },
              "src/db.ts": {"upstream": [], "downstream": null},
              "docs/auth.md": null
            }"#,
        );
        let g = load_graph_file(&file, dir.path()).unwrap();
        let node = "src/auth/sessionManager.ts";
        assert_eq!(
            neighbors(&g, node, Direction::In, 1).unwrap(),
            vec!["src/config.ts", "src/db.ts"]
        );
        assert_eq!(
            neighbors(&g, node, Direction::Out, 1).unwrap(),
            vec!["test/session.test.ts"]
        );
        assert_eq!(
            neighbors(&g, "src/db.ts", Direction::Out, 2).unwrap(),
            vec![node, "test/session.test.ts"]
        );
        assert!(g.contains("docs/auth.md"));
        let types: Vec<_> = g.downstream_of(node).flat_map(|(_, t)| t.iter().cloned()).collect();
        assert_eq!(types, vec!["test"]);
    }

    #[test]
    fn malformed_graphs_are_errors_naming_the_file_and_entry() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_graph_file(&write(dir.path(), "[]"), dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("graph.json: not a dependency graph (the top level is not an object)"),
            "{err}"
        );
        let err = load_graph_file(
            &write(dir.path(), r#"{"a.ts": {"upstream": [{"type": "x"}]}}"#),
            dir.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`a.ts`.upstream[0] has no \"path\" string"), "{err}");
        let err = load_graph_file(&dir.path().join("missing.json"), dir.path()).unwrap_err();
        assert!(matches!(err, IndexError::Io(_)));
    }
}
