//! The graph a neighbour query runs on, from our own index or an external graph file:
//! nodes, and for each node what it depends on (upstream) and what depends on it
//! (downstream), with the edge types.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::error::IndexError;
use super::project_index::ProjectIndex;
use super::resolve::{file_name, join};

/// Most "did you mean" candidates in an unknown-node error.
const MAX_SUGGESTIONS: usize = 3;

/// Adjacency by node: neighbour → the types of the edges between them.
type Adjacency = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// A directed file-level dependency graph. An edge `a → b` means `a` depends on `b`:
/// `b` is upstream of `a`, `a` is downstream of `b`.
#[derive(Debug, Clone)]
pub struct DependencyGraph {
    name: String,
    root: PathBuf,
    nodes: BTreeSet<String>,
    upstream: Adjacency,
    downstream: Adjacency,
}

impl DependencyGraph {
    /// An empty graph called `name` (`project`, or the graph file) whose node paths are
    /// relative to `root`.
    pub fn new(name: impl Into<String>, root: impl Into<PathBuf>) -> Self {
        DependencyGraph {
            name: name.into(),
            root: root.into(),
            nodes: BTreeSet::new(),
            upstream: Adjacency::new(),
            downstream: Adjacency::new(),
        }
    }

    /// The `project` graph of an index (every indexed file is a node, edges or not).
    pub fn from_index(index: &ProjectIndex, root: &Path) -> Self {
        let mut graph = DependencyGraph::new("project", root);
        for (path, record) in &index.files {
            graph.add_node(path);
            for edge in &record.edges {
                graph.add_edge(path, &edge.to, edge.kind.as_str());
            }
        }
        graph
    }

    pub fn add_node(&mut self, path: &str) {
        self.nodes.insert(path.to_string());
    }

    /// Records that `dependent` depends on `dependency` (both become nodes).
    pub fn add_edge(&mut self, dependent: &str, dependency: &str, kind: &str) {
        self.add_node(dependent);
        self.add_node(dependency);
        let types = self.upstream.entry(dependent.to_string()).or_default();
        types
            .entry(dependency.to_string())
            .or_default()
            .insert(kind.to_string());
        let types = self.downstream.entry(dependency.to_string()).or_default();
        types.entry(dependent.to_string()).or_default().insert(kind.to_string());
    }

    /// `project`, or the graph file it came from.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(String::as_str)
    }

    pub fn contains(&self, node: &str) -> bool {
        self.nodes.contains(node)
    }

    /// What `node` depends on, with the edge types.
    pub fn upstream_of(&self, node: &str) -> impl Iterator<Item = (&str, &BTreeSet<String>)> {
        Self::adjacent(&self.upstream, node)
    }

    /// What depends on `node`, with the edge types.
    pub fn downstream_of(&self, node: &str) -> impl Iterator<Item = (&str, &BTreeSet<String>)> {
        Self::adjacent(&self.downstream, node)
    }

    fn adjacent<'a>(adjacency: &'a Adjacency, node: &str) -> impl Iterator<Item = (&'a str, &'a BTreeSet<String>)> {
        adjacency
            .get(node)
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }

    /// The node a user's path names: project-relative (`src/a.ts`, `./src/a.ts`, with `\`
    /// or `/`), or absolute inside the root. An unknown node is an error naming it, with
    /// close matches when there are some.
    pub fn resolve_node(&self, name: &str) -> Result<String, IndexError> {
        let node = normalize_node_name(&self.root, name)?;
        if self.nodes.contains(&node) {
            return Ok(node);
        }
        Err(IndexError::UnknownNode {
            node: name.to_string(),
            graph: self.name.clone(),
            suggestions: self.suggestions(&node),
        })
    }

    /// Nodes with the same file name first, then the most similar paths.
    fn suggestions(&self, node: &str) -> Vec<String> {
        let wanted = file_name(node);
        let mut same_name: Vec<&String> = self.nodes.iter().filter(|n| file_name(n) == wanted).collect();
        same_name.truncate(MAX_SUGGESTIONS);
        if !same_name.is_empty() {
            return same_name.into_iter().cloned().collect();
        }
        let mut scored: Vec<(f64, &String)> = self
            .nodes
            .iter()
            .map(|n| (strsim::normalized_levenshtein(n, node), n))
            .filter(|(score, _)| *score >= 0.6)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(MAX_SUGGESTIONS)
            .map(|(_, n)| n.clone())
            .collect()
    }
}

/// A node path as the index spells it: `/` separators, no `./`, no `..` that stays inside,
/// relative to `root` (an absolute path inside `root` is made relative).
pub fn normalize_node_name(root: &Path, name: &str) -> Result<String, IndexError> {
    let outside = || IndexError::OutsideRoot {
        node: name.to_string(),
        root: root.to_path_buf(),
    };
    let trimmed = name.trim();
    let path = Path::new(trimmed);
    let relative = if path.is_absolute() {
        // `--root .` against an absolute node: compare with the real root, then (symlinks
        // in the node's path) the real node, which must exist for that.
        let real_root = root.canonicalize().ok();
        let inside = path.strip_prefix(root).ok().map(Path::to_path_buf).or_else(|| {
            let real_root = real_root.as_deref()?;
            let lexical = path.strip_prefix(real_root).ok().map(Path::to_path_buf);
            lexical.or_else(|| {
                path.canonicalize()
                    .ok()?
                    .strip_prefix(real_root)
                    .ok()
                    .map(Path::to_path_buf)
            })
        });
        inside.ok_or_else(outside)?.to_string_lossy().into_owned()
    } else {
        trimmed.to_string()
    };
    join("", &relative.replace('\\', "/")).ok_or_else(outside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> DependencyGraph {
        let mut g = DependencyGraph::new("project", "/work/p");
        g.add_edge("src/app.ts", "src/auth/session.ts", "import");
        g.add_edge("src/app.ts", "src/auth/session.ts", "dynamic-import");
        g.add_node("src/auth/session.test.ts");
        g
    }

    #[test]
    fn edges_are_seen_from_both_ends() {
        let g = graph();
        let up: Vec<_> = g.upstream_of("src/app.ts").collect();
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].0, "src/auth/session.ts");
        assert_eq!(up[0].1.iter().collect::<Vec<_>>(), vec!["dynamic-import", "import"]);
        assert_eq!(
            g.downstream_of("src/auth/session.ts")
                .map(|(n, _)| n)
                .collect::<Vec<_>>(),
            vec!["src/app.ts"]
        );
        assert_eq!(g.downstream_of("src/app.ts").count(), 0);
    }

    #[test]
    fn node_names_are_normalized() {
        let g = graph();
        assert_eq!(g.resolve_node("./src/app.ts").unwrap(), "src/app.ts");
        assert_eq!(g.resolve_node("src\\auth\\..\\app.ts").unwrap(), "src/app.ts");
        assert_eq!(g.resolve_node("/work/p/src/app.ts").unwrap(), "src/app.ts");
        assert!(matches!(
            g.resolve_node("/elsewhere/app.ts"),
            Err(IndexError::OutsideRoot { .. })
        ));
        assert!(matches!(
            g.resolve_node("../app.ts"),
            Err(IndexError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn unknown_node_names_it_and_suggests() {
        let g = graph();
        let err = g.resolve_node("lib/session.ts").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown node `lib/session.ts` in the project graph; did you mean `src/auth/session.ts`?"
        );
        let err = g.resolve_node("src/ap.ts").unwrap_err().to_string();
        assert!(err.contains("did you mean `src/app.ts`?"), "{err}");
        let err = g.resolve_node("zzz").unwrap_err().to_string();
        assert!(err.ends_with("paths are project-relative (`src/a.ts`)"), "{err}");
    }
}
