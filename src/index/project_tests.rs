//! Whole-index tests: small real-shaped projects in each language written to temp dirs,
//! built, and queried (cycles and re-exports included), plus incremental rebuilds.

use std::path::Path;

use tempfile::TempDir;

use super::*;

fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    fs_err::create_dir_all(p.parent().unwrap()).unwrap();
    fs_err::write(p, text).unwrap();
}

/// `to (type)` for every edge of `file`.
fn edges(index: &ProjectIndex, file: &str) -> Vec<String> {
    let record = index.files.get(file).unwrap_or_else(|| panic!("{file} is not indexed"));
    record.edges.iter().map(|e| format!("{} ({})", e.to, e.kind)).collect()
}

fn graph_of(dir: &TempDir) -> (ProjectIndex, DependencyGraph) {
    let (index, _) = build(dir.path()).unwrap();
    let graph = DependencyGraph::from_index(&index, dir.path());
    (index, graph)
}

#[test]
fn typescript_project_with_aliases_reexports_and_a_cycle() {
    let dir = project(&[
        (
            "tsconfig.json",
            "{\n  // aliases\n  \"compilerOptions\": { \"baseUrl\": \".\", \"paths\": { \"@/*\": [\"src/*\"], }, },\n}\n",
        ),
        ("src/index.ts", "export * from './auth';\nexport { db } from \"./db/client.js\";\n"),
        ("src/auth/index.ts", "import { Session } from './session';\nexport { login } from './login';\n"),
        (
            "src/auth/session.ts",
            "import { db } from '@/db/client';\nimport type { User } from '../types';\n// import { x } from './ghost';\n",
        ),
        (
            "src/auth/login.ts",
            "import { Session } from './session';\nexport const login = () => import('./mfa');\n",
        ),
        ("src/auth/mfa.tsx", "import React from 'react';\nexport const Mfa = () => <p>Don't</p>;\n"),
        ("src/db/client.ts", "import { Session } from '../auth/session';\nexport const db = {};\n"),
        ("src/types.d.ts", "export interface User { id: string }\n"),
        ("scripts/seed.cjs", "const { db } = require('../src/db/client');\n"),
        ("node_modules/react/index.js", "module.exports = {};\n"),
    ]);
    let (index, graph) = graph_of(&dir);
    assert_eq!(index.files.len(), 8, "{:?}", index.files.keys());
    assert_eq!(
        edges(&index, "src/index.ts"),
        vec!["src/auth/index.ts (reexport)", "src/db/client.ts (reexport)"]
    );
    assert_eq!(
        edges(&index, "src/auth/index.ts"),
        vec!["src/auth/login.ts (reexport)", "src/auth/session.ts (import)"]
    );
    assert_eq!(
        edges(&index, "src/auth/session.ts"),
        vec!["src/db/client.ts (import)", "src/types.d.ts (import)"]
    );
    assert_eq!(
        edges(&index, "src/auth/login.ts"),
        vec!["src/auth/mfa.tsx (dynamic-import)", "src/auth/session.ts (import)"]
    );
    assert_eq!(edges(&index, "scripts/seed.cjs"), vec!["src/db/client.ts (require)"]);
    assert!(edges(&index, "src/auth/mfa.tsx").is_empty());

    let session = "src/auth/session.ts";
    assert_eq!(
        neighbors(&graph, session, Direction::In, 1).unwrap(),
        vec!["src/db/client.ts", "src/types.d.ts"]
    );
    // The cycle session ↔ client: client is both upstream and downstream, listed once.
    assert_eq!(
        neighbors(&graph, session, Direction::Out, 1).unwrap(),
        vec!["src/auth/index.ts", "src/auth/login.ts", "src/db/client.ts"]
    );
    assert_eq!(
        neighbors(&graph, session, Direction::Out, 2).unwrap(),
        vec![
            "src/auth/index.ts",
            "src/auth/login.ts",
            "src/db/client.ts",
            "scripts/seed.cjs",
            "src/index.ts"
        ]
    );
    assert_eq!(
        neighbors(&graph, "src/index.ts", Direction::In, 3).unwrap(),
        vec![
            "src/auth/index.ts",
            "src/db/client.ts",
            "src/auth/login.ts",
            "src/auth/session.ts",
            "src/auth/mfa.tsx",
            "src/types.d.ts"
        ]
    );
    assert_eq!(
        neighbors(&graph, "./src/auth/mfa.tsx", Direction::Both, 2).unwrap(),
        vec!["src/auth/login.ts", "src/auth/index.ts", "src/auth/session.ts"]
    );
}

#[test]
fn python_project_with_src_layout_relative_imports_and_a_cycle() {
    let dir = project(&[
        ("pyproject.toml", "[project]\nname = \"shop\"\n"),
        (
            "src/shop/__init__.py",
            "\"\"\"Shop.\n\nimport shop.api  (not an import)\n\"\"\"\nfrom .models import Order\n",
        ),
        (
            "src/shop/models.py",
            "from shop.db import session\nimport shop.util.money as money\n",
        ),
        ("src/shop/db.py", "from . import models  # models ↔ db is a cycle\n"),
        ("src/shop/util/__init__.py", ""),
        ("src/shop/util/money.py", "from ..db import session\n"),
        ("src/shop/api/__init__.py", ""),
        (
            "src/shop/api/views.py",
            "from shop import models, util\nfrom ..util.money import cents\n",
        ),
        (
            "tests/test_orders.py",
            "import requests\nfrom shop.models import Order\nfrom helpers import make\n",
        ),
        ("tests/helpers.py", "import os\n"),
    ]);
    let (index, graph) = graph_of(&dir);
    assert_eq!(
        edges(&index, "src/shop/__init__.py"),
        vec!["src/shop/models.py (import)"]
    );
    assert_eq!(
        edges(&index, "src/shop/models.py"),
        vec!["src/shop/db.py (import)", "src/shop/util/money.py (import)"]
    );
    assert_eq!(edges(&index, "src/shop/db.py"), vec!["src/shop/models.py (import)"]);
    assert_eq!(edges(&index, "src/shop/util/money.py"), vec!["src/shop/db.py (import)"]);
    assert_eq!(
        edges(&index, "src/shop/api/views.py"),
        vec![
            "src/shop/models.py (import)",
            "src/shop/util/__init__.py (import)",
            "src/shop/util/money.py (import)"
        ]
    );
    assert_eq!(
        edges(&index, "tests/test_orders.py"),
        vec!["src/shop/models.py (import)", "tests/helpers.py (import)"]
    );

    let models = "src/shop/models.py";
    assert_eq!(
        neighbors(&graph, models, Direction::Out, 1).unwrap(),
        vec![
            "src/shop/__init__.py",
            "src/shop/api/views.py",
            "src/shop/db.py",
            "tests/test_orders.py"
        ]
    );
    assert_eq!(
        neighbors(&graph, models, Direction::In, 2).unwrap(),
        vec!["src/shop/db.py", "src/shop/util/money.py"]
    );
    assert_eq!(
        neighbors(&graph, "tests/helpers.py", Direction::Both, 3).unwrap(),
        vec![
            "tests/test_orders.py",
            "src/shop/models.py",
            "src/shop/__init__.py",
            "src/shop/api/views.py",
            "src/shop/db.py",
            "src/shop/util/money.py"
        ]
    );
}

#[test]
fn rust_crate_with_mod_path_reexports_inline_modules_and_crate_roots() {
    let dir = project(&[
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        (
            "src/lib.rs",
            "pub mod cli;\nmod exec;\n#[cfg(unix)]\n#[path = \"platform/unix.rs\"]\nmod platform;\npub use crate::exec::pool::Pool;\n",
        ),
        ("src/cli.rs", "use crate::exec::retry::Policy;\nuse crate::platform::open;\nuse serde::Serialize;\n"),
        ("src/exec/mod.rs", "pub mod pool;\npub mod retry;\nuse crate::cli::Args;\n"),
        (
            "src/exec/pool.rs",
            "use super::retry::{self, Policy};\nuse std::sync::Arc;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::cli;\n}\n",
        ),
        ("src/exec/retry.rs", "// mod ghost;\npub struct Policy;\n"),
        ("src/platform/unix.rs", "pub fn open() {}\n"),
        ("src/main.rs", "mod app;\nuse demo::cli;\nconst VERSION: &str = \"1\";\n"),
        ("src/app.rs", "use super::VERSION;\n"),
        ("tests/integration.rs", "mod support;\nuse support::fixture;\nuse demo::exec::pool::Pool;\n"),
        ("tests/support/mod.rs", "pub fn fixture() {}\n"),
    ]);
    let (index, graph) = graph_of(&dir);
    assert_eq!(
        edges(&index, "src/lib.rs"),
        vec![
            "src/cli.rs (mod)",
            "src/exec/mod.rs (mod)",
            "src/exec/pool.rs (reexport)",
            "src/platform/unix.rs (mod)"
        ]
    );
    assert_eq!(
        edges(&index, "src/cli.rs"),
        vec!["src/exec/retry.rs (use)", "src/platform/unix.rs (use)"]
    );
    assert_eq!(
        edges(&index, "src/exec/mod.rs"),
        vec!["src/cli.rs (use)", "src/exec/pool.rs (mod)", "src/exec/retry.rs (mod)"]
    );
    assert_eq!(
        edges(&index, "src/exec/pool.rs"),
        vec!["src/cli.rs (use)", "src/exec/retry.rs (use)"]
    );
    assert!(edges(&index, "src/exec/retry.rs").is_empty());
    assert_eq!(
        edges(&index, "src/main.rs"),
        vec!["src/app.rs (mod)", "src/cli.rs (use)"]
    );
    assert_eq!(edges(&index, "src/app.rs"), vec!["src/main.rs (use)"]);
    assert_eq!(
        edges(&index, "tests/integration.rs"),
        vec![
            "src/exec/pool.rs (use)",
            "tests/support/mod.rs (mod)",
            "tests/support/mod.rs (use)"
        ]
    );

    assert_eq!(
        neighbors(&graph, "src/exec/retry.rs", Direction::Out, 1).unwrap(),
        vec!["src/cli.rs", "src/exec/mod.rs", "src/exec/pool.rs"]
    );
    // "What tests exercise the pool?" reaches the integration test through the crate name.
    assert_eq!(
        neighbors(&graph, "src/exec/pool.rs", Direction::Out, 1).unwrap(),
        vec!["src/exec/mod.rs", "src/lib.rs", "tests/integration.rs"]
    );
    assert_eq!(
        neighbors(&graph, "src/cli.rs", Direction::In, 2).unwrap(),
        vec!["src/exec/retry.rs", "src/platform/unix.rs"]
    );
}

#[test]
fn go_module_packages_fan_out_to_their_files() {
    let dir = project(&[
        ("go.mod", "module example.com/shop\n\ngo 1.22\n"),
        (
            "main.go",
            "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/shop/internal/store\"\n\tapi \"example.com/shop/api\"\n)\n",
        ),
        ("internal/store/store.go", "package store\n"),
        ("internal/store/cache.go", "package store\n\nimport \"example.com/shop/internal/model\"\n"),
        ("internal/store/store_test.go", "package store\n\nimport \"testing\"\n"),
        ("internal/model/model.go", "package model\n// import \"example.com/shop/api\"\n"),
        ("api/api.go", "package api\n\nimport _ \"example.com/shop/internal/store\"\n"),
    ]);
    let (index, graph) = graph_of(&dir);
    assert_eq!(
        edges(&index, "main.go"),
        vec![
            "api/api.go (import)",
            "internal/store/cache.go (import)",
            "internal/store/store.go (import)"
        ]
    );
    assert_eq!(
        edges(&index, "internal/store/cache.go"),
        vec!["internal/model/model.go (import)"]
    );
    assert!(edges(&index, "internal/model/model.go").is_empty());
    assert_eq!(
        neighbors(&graph, "internal/model/model.go", Direction::Out, 2).unwrap(),
        vec!["internal/store/cache.go", "api/api.go", "main.go"]
    );
}

#[test]
fn c_project_with_include_roots_and_a_header_cycle() {
    let dir = project(&[
        ("include/mylib/vec.h", "#pragma once\n#include \"mylib/config.h\"\n"),
        ("include/mylib/config.h", "#define MYLIB 1\n"),
        (
            "src/vec.c",
            "#include <mylib/vec.h>\n#include <stdio.h>\n#include \"a.h\"\n/* #include \"b.h\" */\n",
        ),
        ("src/a.h", "#ifndef A_H\n#define A_H\n#include \"b.h\"\n#endif\n"),
        ("src/b.h", "#ifndef B_H\n#define B_H\n#include \"a.h\"\n#endif\n"),
        (
            "tests/test_vec.cpp",
            "#include \"../src/a.h\"\n#include <mylib/vec.h>\n#include <vector>\n",
        ),
    ]);
    let (index, graph) = graph_of(&dir);
    assert_eq!(
        edges(&index, "include/mylib/vec.h"),
        vec!["include/mylib/config.h (include)"]
    );
    assert_eq!(
        edges(&index, "src/vec.c"),
        vec!["include/mylib/vec.h (include)", "src/a.h (include)"]
    );
    assert_eq!(edges(&index, "src/a.h"), vec!["src/b.h (include)"]);
    assert_eq!(edges(&index, "src/b.h"), vec!["src/a.h (include)"]);
    assert_eq!(
        edges(&index, "tests/test_vec.cpp"),
        vec!["include/mylib/vec.h (include)", "src/a.h (include)"]
    );
    assert_eq!(
        neighbors(&graph, "src/b.h", Direction::Out, 3).unwrap(),
        vec!["src/a.h", "src/vec.c", "tests/test_vec.cpp"]
    );
}

#[test]
fn rebuild_reparses_only_what_changed_and_drops_what_is_gone() {
    let dir = project(&[
        ("src/a.ts", "import { b } from './b';\nimport { c } from './c';\n"),
        ("src/b.ts", "export const b = 1;\n"),
        ("src/d.ts", "export const d = 1;\n"),
        ("src/e.ts", "import { d } from './d';\n"),
    ]);
    let root = dir.path();
    let (index, first) = build(root).unwrap();
    assert_eq!((first.files, first.parsed, first.reused, first.removed), (4, 4, 0, 0));
    assert!(first.written && !first.existed);
    assert_eq!(edges(&index, "src/a.ts"), vec!["src/b.ts (import)"]);
    assert!(!is_stale(root).unwrap());

    let (_, unchanged) = build(root).unwrap();
    assert_eq!((unchanged.parsed, unchanged.reused, unchanged.written), (0, 4, false));
    assert_eq!(unchanged.notice(), None);

    write(root, "src/b.ts", "export const b = 2;\n");
    assert!(is_stale(root).unwrap());
    write(root, "src/c.ts", "export const c = 3;\n");
    fs_err::remove_file(root.join("src/d.ts")).unwrap();
    let (index, second) = build(root).unwrap();
    assert_eq!(
        (
            second.files,
            second.parsed,
            second.changed,
            second.added,
            second.reused,
            second.removed
        ),
        (4, 2, 1, 1, 2, 1)
    );
    // a.ts was not re-parsed, yet its import of ./c now resolves; e.ts lost its edge.
    assert_eq!(
        edges(&index, "src/a.ts"),
        vec!["src/b.ts (import)", "src/c.ts (import)"]
    );
    assert!(edges(&index, "src/e.ts").is_empty());
    let notice = second.notice().unwrap();
    assert!(
        notice.starts_with("the dependency index was stale (1 changed, 1 added, 1 removed)"),
        "{notice}"
    );
    assert!(!is_stale(root).unwrap());
}

#[test]
fn a_changed_tsconfig_makes_the_index_stale_and_changes_resolution() {
    let dir = project(&[
        ("tsconfig.json", "{}"),
        ("src/app.ts", "import { x } from '~/lib/x';\n"),
        ("src/lib/x.ts", "export const x = 1;\n"),
    ]);
    let root = dir.path();
    let (index, _) = load_or_build(root).unwrap();
    assert!(edges(&index, "src/app.ts").is_empty());
    write(
        root,
        "tsconfig.json",
        r#"{"compilerOptions": {"paths": {"~/*": ["./src/*"]}}}"#,
    );
    assert!(is_stale(root).unwrap());
    let (index, notice) = load_or_build(root).unwrap();
    assert!(notice.is_some());
    assert_eq!(edges(&index, "src/app.ts"), vec!["src/lib/x.ts (import)"]);
}

#[test]
fn missing_index_is_built_with_a_notice() {
    let dir = project(&[("a.py", "import b\n"), ("b.py", "")]);
    assert!(is_stale(dir.path()).unwrap());
    let (index, notice) = load_or_build(dir.path()).unwrap();
    let notice = notice.unwrap();
    assert!(notice.starts_with("no dependency index yet: built "), "{notice}");
    assert!(notice.ends_with("(2 files, 1 edge)"), "{notice}");
    assert_eq!(edges(&index, "a.py"), vec!["b.py (import)"]);
    assert!(ProjectIndex::path(dir.path()).is_file());
}
