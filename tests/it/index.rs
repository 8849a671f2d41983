//! `rlm index build`, `rlm index neighbors` and `rlm verify-citations` through the binary.

use crate::support::*;
use serde_json::json;

/// api → session → db; test → session (a TypeScript project).
fn ts_project() -> Project {
    Project::new()
        .file("src/db.ts", "export const db = {};\n")
        .file("src/session.ts", "import { db } from './db';\nexport const s = 1;\n")
        .file("src/api.ts", "export * from './session';\n")
        .file("test/session.test.ts", "import { s } from '../src/session';\n")
}

#[test]
fn build_reports_counts_and_rebuild_reuses() {
    let p = ts_project();
    let out = p.rlm(&["index", "build", "--json"]).run();
    out.assert_exit(0);
    let report = out.json();
    assert_eq!(report["files"], 4);
    assert_eq!(report["parsed"], 4);
    assert_eq!(report["edges"], 3);
    assert!(p.exists(".aiwg/rlm/index/graph-v1.json"));

    p.write("src/db.ts", "export const db = { changed: true };\n");
    let out = p.rlm(&["index", "build"]).run();
    out.assert_exit(0);
    assert!(
        out.stdout
            .starts_with("indexed 4 files: 1 parsed (0 added, 1 changed), 3 reused, 0 removed; 3 edges → "),
        "{}",
        out.stdout
    );
}

#[test]
fn neighbors_json_builds_the_index_first_with_a_notice() {
    let p = ts_project();
    let out = p
        .rlm(&[
            "index",
            "neighbors",
            "--node",
            "./src/session.ts",
            "--direction",
            "out",
            "--json",
        ])
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains("rlm: no dependency index yet: built "),
        "{}",
        out.stderr
    );
    let doc = out.json();
    assert_eq!(doc["graph"], "project");
    assert_eq!(doc["node"], "src/session.ts");
    assert_eq!(doc["direction"], "out");
    assert_eq!(doc["edgeType"], "all");
    assert_eq!(doc["neighbors"], json!(["src/api.ts", "test/session.test.ts"]));
    assert_eq!(doc["count"], 2);

    // Up to date now: no notice; plain output is one path per line.
    let out = p
        .rlm(&[
            "index",
            "neighbors",
            "--node",
            "src/db.ts",
            "--direction",
            "out",
            "--depth",
            "2",
        ])
        .run();
    out.assert_exit(0);
    assert_eq!(out.stderr, "");
    assert_eq!(out.stdout, "src/session.ts\nsrc/api.ts\ntest/session.test.ts\n");

    // A stale index is rebuilt before answering.
    p.write("src/extra.ts", "import { db } from './db';\n");
    let out = p
        .rlm(&["index", "neighbors", "--node", "src/db.ts", "--direction", "out"])
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("the dependency index was stale (0 changed, 1 added, 0 removed)"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "src/extra.ts\nsrc/session.ts\n");
}

#[test]
fn unknown_node_and_bad_depth_are_usage_errors() {
    let p = ts_project();
    let out = p.rlm(&["index", "neighbors", "--node", "lib/session.ts"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("unknown node `lib/session.ts` in the project graph; did you mean `src/session.ts`?"),
        "{}",
        out.stderr
    );
    p.rlm(&["index", "neighbors", "--node", "src/db.ts", "--depth", "0"])
        .run()
        .assert_exit(2);
    p.rlm(&["index", "neighbors", "--node", "src/db.ts", "--depth", "11"])
        .run()
        .assert_exit(2);
}

#[test]
fn neighbors_of_an_external_graph_file() {
    let p = Project::new().file(
        "graph.json",
        r#"{"src/auth/sessionManager.ts": {
              "upstream": [{"path": "src/db.ts", "type": "import"}],
              "downstream": [{"path": "test/session.test.ts", "type": "test"}]}}"#,
    );
    let out = p
        .rlm(&[
            "index",
            "neighbors",
            "--graph-file",
            "graph.json",
            "--node",
            "src/auth/sessionManager.ts",
            "--json",
        ])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["graph"], "graph.json");
    assert_eq!(doc["neighbors"], json!(["src/db.ts", "test/session.test.ts"]));
    assert!(
        !p.exists(".aiwg/rlm/index/graph-v1.json"),
        "a graph file needs no index"
    );
}

/// An aggregate citing `src/login.ts` (fresh) and `src/legacy.py` path-only.
fn cited_project() -> (Project, String) {
    let login = "fn a() {}\nfn b() {}\nfn c() {}\n";
    let hash = rlm::citation::content_hash(login.as_bytes());
    let p = Project::new()
        .file("src/login.ts", login)
        .file("src/legacy.py", "x = 1\n")
        .file(
            "out/aggregate.md",
            &format!(
                "# Findings\n\n- **Weak compare** [src/login.ts@{hash}, L2-3]\n- **Legacy** [src/legacy.py, L1]\n\n\
                 ## Sources\n\n- src/login.ts@{hash} (L2-3)\n- src/legacy.py (L1) [un-versioned]\n"
            ),
        );
    (p, hash)
}

#[test]
fn verify_citations_fresh_then_stale_after_an_edit() {
    let (p, hash) = cited_project();
    let out = p.rlm(&["verify-citations", "out/aggregate.md"]).run();
    out.assert_exit(0);
    assert!(
        out.stdout
            .contains(&format!("out/aggregate.md:3: fresh: [src/login.ts@{hash}, L2-3]")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .ends_with("2 citations: 1 fresh, 0 stale, 0 broken, 0 malformed, 1 un-versioned: OK\n"),
        "{}",
        out.stdout
    );

    // Path-only is an error under --strict.
    p.rlm(&["verify-citations", "out/aggregate.md", "--strict"])
        .run()
        .assert_exit(1);

    p.write("src/login.ts", "fn a() {}\n");
    let out = p.rlm(&["verify-citations", "out/aggregate.md", "--json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["passed"], false);
    assert_eq!(
        doc["summary"],
        json!({"total": 2, "fresh": 0, "stale": 1, "broken": 0, "malformed": 0, "unversioned": 1})
    );
    assert_eq!(doc["citations"][0]["status"], "stale");
    assert_eq!(doc["citations"][0]["occurrences"], json!([3, 8]));
}

#[test]
fn verify_citations_missing_file_out_of_range_and_unreadable_aggregate() {
    let (p, hash) = cited_project();
    p.write(
        "out/aggregate.md",
        &format!("- [src/gone.ts@{hash}, L1]\n- [src/login.ts@{hash}, L3-9]\n"),
    );
    let out = p.rlm(&["verify-citations", "out/aggregate.md"]).run();
    out.assert_exit(1);
    assert!(out.stdout.contains("broken: [src/gone.ts"), "{}", out.stdout);
    assert!(
        out.stdout.contains("L9 is past the end of the file (3 lines)"),
        "{}",
        out.stdout
    );

    let out = p.rlm(&["verify-citations", "out/none.md"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .starts_with("rlm: error: failed to open file `out/none.md`: "),
        "{}",
        out.stderr
    );

    // Relative to --root, not the working directory.
    let out = p
        .rlm(&["verify-citations", "aggregate.md", "--root", ".."])
        .cwd("out")
        .run();
    out.assert_exit(1);
    assert!(out.stdout.contains("L9 is past the end"), "{}", out.stdout);
}
