//! Tests of the store through its public API, on real databases in temporary directories.

mod concurrency;
mod key_claims;
mod lifecycle;
mod queries;

use std::path::Path;

use super::*;

pub(super) fn new_run(cwd: &Path) -> NewRun {
    NewRun {
        id: None,
        kind: "batch".to_string(),
        command: vec![
            "rlm".into(),
            "batch".into(),
            "src/**/*.ts".into(),
            "count functions".into(),
        ],
        cwd: cwd.to_path_buf(),
        output_dir: None,
        parent: None,
        depth: 0,
        settings: serde_json::json!({"model": "haiku", "concurrency": 7}),
        started: None,
    }
}

pub(super) fn units(n: usize) -> Vec<NewUnit> {
    (0..n)
        .map(|i| NewUnit {
            id: format!("u{i:05}"),
            label: format!("src/file{i}.ts"),
            kind: UnitKind::Map,
            priority: 5,
            cache_key: None,
        })
        .collect()
}

pub(super) fn open() -> (tempfile::TempDir, TaskStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::open(&dir.path().join(".aiwg/rlm")).unwrap();
    (dir, store)
}

pub(super) fn run_with_units(store: &mut TaskStore, cwd: &Path, n: usize) -> RunId {
    let run = store.create_run(&new_run(cwd)).unwrap();
    store.add_units(&run, &units(n)).unwrap();
    run
}

/// Drives a fresh unit along legal moves until it is in `state`.
pub(super) fn bring_to(store: &mut TaskStore, run: &RunId, unit: &str, state: UnitState) {
    let path: &[UnitState] = match state {
        UnitState::Queued => &[],
        UnitState::Running => &[UnitState::Running],
        UnitState::Cancelled => &[UnitState::Cancelled],
        finished => &[UnitState::Running, finished][..],
    };
    for &to in path {
        store.transition(run, unit, to, &Detail::default()).unwrap();
    }
}
