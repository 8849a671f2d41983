//! Neighbour queries: multi-hop breadth-first expansion from one node.
//!
//! Directions follow the seed (`rlm-batch-skill.md`, `--direction`): "in = upstream deps,
//! out = downstream deps". With an edge `a → b` meaning "a depends on b":
//! - `in` follows edges forward: from `a` to `b`, what `a` depends on (its imports, and
//!   theirs at the next hop);
//! - `out` follows edges backward: from `b` to `a`, what depends on `b` (its importers —
//!   the tests that exercise a module are downstream of it);
//! - `both` follows either way at every hop.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::dependency_graph::DependencyGraph;
use super::error::IndexError;

/// The largest `--depth`.
pub const MAX_DEPTH: u32 = 10;

/// Which edges a neighbour query follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Upstream: what the node depends on.
    In,
    /// Downstream: what depends on the node.
    Out,
    /// Both.
    Both,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::Both => "both",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Direction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "in" => Ok(Direction::In),
            "out" => Ok(Direction::Out),
            "both" => Ok(Direction::Both),
            other => Err(format!("unknown direction `{other}`: use in, out or both")),
        }
    }
}

/// One node found by an expansion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Neighbor {
    pub path: String,
    /// The hop at which it was first reached (1 = adjacent to the start).
    pub hop: u32,
    /// The types of the edges that reached it at that hop.
    pub types: Vec<String>,
}

/// The paths within `depth` hops of `node` in `direction`, nearest first (then by path),
/// each once, the start node excluded. `node` may be `./x`, use `\`, or be absolute inside
/// the graph's root.
pub fn neighbors(
    graph: &DependencyGraph,
    node: &str,
    direction: Direction,
    depth: u32,
) -> Result<Vec<String>, IndexError> {
    Ok(expand(graph, node, direction, depth, None)?
        .into_iter()
        .map(|n| n.path)
        .collect())
}

/// [`neighbors`] with each node's hop and edge types, optionally following only edges of
/// one type (`import`, `include`, …).
pub fn expand(
    graph: &DependencyGraph,
    node: &str,
    direction: Direction,
    depth: u32,
    edge_type: Option<&str>,
) -> Result<Vec<Neighbor>, IndexError> {
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(IndexError::Depth(depth));
    }
    let start = graph.resolve_node(node)?;
    let mut seen = BTreeSet::from([start.clone()]);
    let mut frontier = vec![start];
    let mut found = Vec::new();
    for hop in 1..=depth {
        // Reached at this hop → the edge types that reached it (from any frontier node).
        let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for from in &frontier {
            let upstream = matches!(direction, Direction::In | Direction::Both).then(|| graph.upstream_of(from));
            let downstream = matches!(direction, Direction::Out | Direction::Both).then(|| graph.downstream_of(from));
            for (to, types) in upstream.into_iter().flatten().chain(downstream.into_iter().flatten()) {
                if seen.contains(to) {
                    continue;
                }
                let types: Vec<&str> = types
                    .iter()
                    .map(String::as_str)
                    .filter(|t| edge_type.is_none_or(|wanted| wanted == *t))
                    .collect();
                if !types.is_empty() {
                    next.entry(to).or_default().extend(types);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next.keys().map(ToString::to_string).collect();
        seen.extend(frontier.iter().cloned());
        found.extend(next.into_iter().map(|(path, types)| Neighbor {
            path: path.to_string(),
            hop,
            types: types.into_iter().map(String::from).collect(),
        }));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// test → session → store → db; api → session; store ↔ cache (a cycle).
    fn graph() -> DependencyGraph {
        let mut g = DependencyGraph::new("project", "/p");
        g.add_edge("test/session.test.ts", "src/session.ts", "import");
        g.add_edge("src/api.ts", "src/session.ts", "import");
        g.add_edge("src/session.ts", "src/store.ts", "import");
        g.add_edge("src/store.ts", "src/db.ts", "require");
        g.add_edge("src/store.ts", "src/cache.ts", "import");
        g.add_edge("src/cache.ts", "src/store.ts", "dynamic-import");
        g.add_node("src/lonely.ts");
        g
    }

    fn n(g: &DependencyGraph, node: &str, d: Direction, depth: u32) -> Vec<String> {
        neighbors(g, node, d, depth).unwrap()
    }

    #[test]
    fn in_is_upstream_what_the_node_depends_on() {
        let g = graph();
        assert_eq!(n(&g, "src/session.ts", Direction::In, 1), vec!["src/store.ts"]);
        assert_eq!(
            n(&g, "src/session.ts", Direction::In, 2),
            vec!["src/store.ts", "src/cache.ts", "src/db.ts"]
        );
        // The cycle store ↔ cache neither loops nor returns the start.
        assert_eq!(
            n(&g, "src/session.ts", Direction::In, 3),
            vec!["src/store.ts", "src/cache.ts", "src/db.ts"]
        );
    }

    #[test]
    fn out_is_downstream_what_depends_on_the_node() {
        let g = graph();
        assert_eq!(
            n(&g, "src/session.ts", Direction::Out, 1),
            vec!["src/api.ts", "test/session.test.ts"]
        );
        assert_eq!(n(&g, "src/db.ts", Direction::Out, 1), vec!["src/store.ts"]);
        assert_eq!(
            n(&g, "src/db.ts", Direction::Out, 3),
            vec![
                "src/store.ts",
                "src/cache.ts",
                "src/session.ts",
                "src/api.ts",
                "test/session.test.ts"
            ]
        );
    }

    #[test]
    fn both_follows_either_way_at_every_hop() {
        let g = graph();
        assert_eq!(
            n(&g, "src/session.ts", Direction::Both, 1),
            vec!["src/api.ts", "src/store.ts", "test/session.test.ts"]
        );
        let two = n(&g, "src/api.ts", Direction::Both, 2);
        assert_eq!(two, vec!["src/session.ts", "src/store.ts", "test/session.test.ts"]);
    }

    #[test]
    fn hops_types_and_edge_type_filter() {
        let g = graph();
        let found = expand(&g, "src/store.ts", Direction::In, 2, None).unwrap();
        assert_eq!(
            found,
            vec![
                Neighbor {
                    path: "src/cache.ts".into(),
                    hop: 1,
                    types: vec!["import".into()]
                },
                Neighbor {
                    path: "src/db.ts".into(),
                    hop: 1,
                    types: vec!["require".into()]
                },
            ]
        );
        let found = expand(&g, "src/store.ts", Direction::In, 2, Some("require")).unwrap();
        assert_eq!(
            found.iter().map(|n| n.path.as_str()).collect::<Vec<_>>(),
            vec!["src/db.ts"]
        );
    }

    #[test]
    fn isolated_node_has_no_neighbors_and_depth_is_checked() {
        let g = graph();
        assert!(n(&g, "src/lonely.ts", Direction::Both, 10).is_empty());
        assert!(matches!(
            neighbors(&g, "src/api.ts", Direction::Both, 0),
            Err(IndexError::Depth(0))
        ));
        assert!(matches!(
            neighbors(&g, "src/api.ts", Direction::Both, 11),
            Err(IndexError::Depth(11))
        ));
        assert!(matches!(
            neighbors(&g, "src/nope.ts", Direction::Both, 1),
            Err(IndexError::UnknownNode { .. })
        ));
    }
}
