//! `rlm index build` and `rlm index neighbors`: turn parsed arguments into plain options,
//! run them, and write the result (data only) to the given stdout. Notices (an index built
//! on the way) are returned for the caller to put on stderr.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::builder::{build as build_index, load_or_build, BuildReport};
use super::dependency_graph::DependencyGraph;
use super::error::IndexError;
use super::external_graph::load_graph_file;
use super::neighbors::{expand, Direction, Neighbor};
use crate::printer::plural;

/// The name of our own graph for `--graph`.
pub const PROJECT_GRAPH: &str = "project";

/// What a finished `rlm index` command has to tell the caller besides its output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutcome {
    /// A line for stderr, e.g. that the index was built first.
    pub notice: Option<String>,
}

/// One `rlm index` subcommand, as plain options (made from the command line in
/// [`crate::cli`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexAction {
    Build(BuildOptions),
    Neighbors(NeighborsOptions),
}

/// Runs one `rlm index` subcommand, writing its output to `out`.
pub fn run(action: &IndexAction, out: &mut dyn Write) -> Result<CommandOutcome, IndexError> {
    match action {
        IndexAction::Build(opts) => {
            build(opts, out)?;
            Ok(CommandOutcome::default())
        }
        IndexAction::Neighbors(opts) => {
            let outcome = neighbors(opts, out)?;
            Ok(CommandOutcome { notice: outcome.notice })
        }
    }
}

/// `rlm index build [ROOT] [--json]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOptions {
    pub root: PathBuf,
    pub json: bool,
}

/// The `--json` document of `rlm index build`: the report and files per language.
#[derive(Serialize)]
struct BuildJson<'a> {
    #[serde(flatten)]
    report: &'a BuildReport,
    languages: BTreeMap<&'static str, usize>,
}

/// Builds the index and writes the report.
pub fn build(opts: &BuildOptions, out: &mut dyn Write) -> Result<BuildReport, IndexError> {
    let (index, report) = build_index(&opts.root)?;
    if opts.json {
        let mut languages = BTreeMap::new();
        for record in index.files.values() {
            *languages.entry(record.language.as_str()).or_default() += 1;
        }
        let doc = BuildJson {
            report: &report,
            languages,
        };
        write_json(out, &doc)?;
    } else {
        let state = if report.written { "" } else { " (unchanged)" };
        writeln!(
            out,
            "indexed {}: {} parsed ({} added, {} changed), {} reused, {} removed; {} → {}{state}",
            plural(report.files, "file"),
            report.parsed,
            report.added,
            report.changed,
            report.reused,
            report.removed,
            plural(report.edges, "edge"),
            report.index.display()
        )
        .map_err(IndexError::Output)?;
    }
    Ok(report)
}

/// Which graph a neighbour query runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphChoice {
    /// This project's index, built first when missing or stale.
    Project,
    /// A dependency graph file.
    File(PathBuf),
}

/// `rlm index neighbors …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborsOptions {
    pub root: PathBuf,
    pub node: String,
    pub direction: Direction,
    pub depth: u32,
    pub graph: GraphChoice,
    pub edge_type: Option<String>,
    pub json: bool,
}

/// What `rlm index neighbors` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborsOutcome {
    pub notice: Option<String>,
    /// The normalized start node.
    pub node: String,
    pub neighbors: Vec<Neighbor>,
}

/// The `--json` document, shaped like `aiwg index neighbors --json` (`graph`, `node`,
/// `direction`, `edgeType`, `neighbors`, `count`) plus `depth` and per-neighbour `records`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NeighborsJson<'a> {
    graph: &'a str,
    node: &'a str,
    direction: Direction,
    /// The edge type followed, `all` without `--edge-type`.
    edge_type: &'a str,
    depth: u32,
    neighbors: Vec<&'a str>,
    count: usize,
    records: &'a [Neighbor],
}

/// Runs the query and writes the neighbours: one path per line, or the JSON document.
pub fn neighbors(opts: &NeighborsOptions, out: &mut dyn Write) -> Result<NeighborsOutcome, IndexError> {
    let (graph, notice) = load_graph(&opts.graph, &opts.root)?;
    let found = expand(
        &graph,
        &opts.node,
        opts.direction,
        opts.depth,
        opts.edge_type.as_deref(),
    )?;
    let node = graph.resolve_node(&opts.node)?;
    if opts.json {
        let doc = NeighborsJson {
            graph: graph.name(),
            node: &node,
            direction: opts.direction,
            edge_type: opts.edge_type.as_deref().unwrap_or("all"),
            depth: opts.depth,
            neighbors: found.iter().map(|n| n.path.as_str()).collect(),
            count: found.len(),
            records: &found,
        };
        write_json(out, &doc)?;
    } else {
        for n in &found {
            writeln!(out, "{}", n.path).map_err(IndexError::Output)?;
        }
    }
    Ok(NeighborsOutcome {
        notice,
        node,
        neighbors: found,
    })
}

/// The graph to query, and a notice when the project index had to be built first.
pub fn load_graph(choice: &GraphChoice, root: &Path) -> Result<(DependencyGraph, Option<String>), IndexError> {
    match choice {
        GraphChoice::Project => {
            let (index, notice) = load_or_build(root)?;
            Ok((DependencyGraph::from_index(&index, root), notice))
        }
        GraphChoice::File(file) => Ok((load_graph_file(file, root)?, None)),
    }
}

fn write_json(out: &mut dyn Write, doc: &impl Serialize) -> Result<(), IndexError> {
    serde_json::to_writer_pretty(&mut *out, doc).map_err(|e| IndexError::Output(e.into()))?;
    writeln!(out).map_err(IndexError::Output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("src/session.ts", "import { db } from './db';\n"),
            ("src/db.ts", "export const db = 1;\n"),
            ("test/session.test.ts", "import '../src/session';\n"),
        ];
        for (path, text) in files {
            let p = dir.path().join(path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, text).unwrap();
        }
        dir
    }

    fn options(root: &Path, node: &str) -> NeighborsOptions {
        NeighborsOptions {
            root: root.to_path_buf(),
            node: node.to_string(),
            direction: Direction::Both,
            depth: 1,
            graph: GraphChoice::Project,
            edge_type: None,
            json: true,
        }
    }

    #[test]
    fn neighbors_json_has_the_seed_fields_and_builds_the_index_first() {
        let dir = project();
        let mut out = Vec::new();
        let outcome = neighbors(&options(dir.path(), "./src/session.ts"), &mut out).unwrap();
        assert!(outcome.notice.unwrap().starts_with("no dependency index yet"));
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(json["graph"], "project");
        assert_eq!(json["node"], "src/session.ts");
        assert_eq!(json["direction"], "both");
        assert_eq!(json["edgeType"], "all");
        assert_eq!(
            json["neighbors"],
            serde_json::json!(["src/db.ts", "test/session.test.ts"])
        );
        assert_eq!(json["count"], 2);
        assert_eq!(json["records"][0]["types"], serde_json::json!(["import"]));

        // Fresh now: no notice the second time.
        let mut out = Vec::new();
        let mut opts = options(dir.path(), "src/db.ts");
        opts.json = false;
        opts.direction = Direction::Out;
        opts.depth = 2;
        let outcome = neighbors(&opts, &mut out).unwrap();
        assert_eq!(outcome.notice, None);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "src/session.ts\ntest/session.test.ts\n"
        );
    }

    #[test]
    fn build_report_human_and_json() {
        let dir = project();
        let mut out = Vec::new();
        let opts = BuildOptions {
            root: dir.path().to_path_buf(),
            json: false,
        };
        build(&opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("indexed 3 files: 3 parsed (3 added, 0 changed), 0 reused, 0 removed; 2 edges → "),
            "{text}"
        );
        let mut out = Vec::new();
        build(&BuildOptions { json: true, ..opts }, &mut out).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(json["reused"], 3);
        assert_eq!(json["written"], false);
        assert_eq!(json["languages"]["typescript"], 3);
    }
}
