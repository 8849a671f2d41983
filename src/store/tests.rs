//! Tests of the store through its public API, on real databases in temporary directories.

use std::path::{Path, PathBuf};
use std::time::Duration;

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

fn run_with_units(store: &mut TaskStore, cwd: &Path, n: usize) -> RunId {
    let run = store.create_run(&new_run(cwd)).unwrap();
    store.add_units(&run, &units(n)).unwrap();
    run
}

/// Drives a fresh unit along legal moves until it is in `state`.
fn bring_to(store: &mut TaskStore, run: &RunId, unit: &str, state: UnitState) {
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

#[test]
fn opens_an_empty_directory_and_an_empty_file_at_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let rlm_dir = dir.path().join(".aiwg/rlm");
    {
        let store = TaskStore::open(&rlm_dir).unwrap();
        assert_eq!(store.path(), rlm_dir.join(STORE_FILE));
    }
    // Reopening migrates nothing and loses nothing.
    let mut store = TaskStore::open(&rlm_dir).unwrap();
    run_with_units(&mut store, dir.path(), 2);
    drop(store);
    let store = TaskStore::open(&rlm_dir).unwrap();
    assert_eq!(store.list_runs(10).unwrap().len(), 1);

    // A zero-byte file (created by `touch`, or a crash before the first write) is a new store.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join(STORE_FILE), b"").unwrap();
    let store = TaskStore::open(&other).unwrap();
    let (version, mode): (i64, String) = store
        .conn
        .query_row(
            "SELECT user_version, journal_mode FROM pragma_user_version, pragma_journal_mode",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((version, mode.as_str()), (SCHEMA_VERSION, "wal"));
}

#[test]
fn a_store_from_a_newer_rlm_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STORE_FILE);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = TaskStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 99, .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("was written by a newer rlm (schema 99"), "{message}");
    assert!(message.ends_with("upgrade rlm"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file was modified");
    assert!(!dir.path().join(format!("{STORE_FILE}-wal")).exists());
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(STORE_FILE),
        "this is not sqlite, just some text.\n".repeat(20),
    )
    .unwrap();
    let message = TaskStore::open(dir.path()).unwrap_err().to_string();
    assert!(
        message.contains(STORE_FILE) && message.contains("move it aside"),
        "{message}"
    );
}

#[test]
fn every_illegal_transition_is_refused_and_writes_nothing() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 64);
    let mut next = 0;
    for from in UnitState::ALL {
        for to in UnitState::ALL {
            if from.can_move_to(to) {
                continue;
            }
            let unit = format!("u{next:05}");
            next += 1;
            bring_to(&mut store, &run, &unit, from);
            let history = store.history(&run, &unit).unwrap();
            let err = store.transition(&run, &unit, to, &Detail::reason("nope")).unwrap_err();
            match &err {
                StoreError::IllegalTransition {
                    unit: u,
                    from: f,
                    to: t,
                    ..
                } => {
                    assert_eq!((u.as_str(), *f, *t), (unit.as_str(), from, to));
                }
                other => panic!("{from} → {to}: {other:?}"),
            }
            assert!(err.to_string().contains(&format!("illegal transition {from} → {to}")));
            assert_eq!(store.unit(&run, &unit).unwrap().state, from);
            assert_eq!(store.history(&run, &unit).unwrap(), history);
        }
    }
    assert_eq!(next, 26, "6 × 6 pairs minus 10 legal moves");
    let err = store
        .transition(&run, "missing", UnitState::Running, &Detail::default())
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownUnit { .. }), "{err:?}");
}

#[test]
fn a_batch_with_an_illegal_move_can_go_on_or_roll_back() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 3);
    let mut batch = store.begin().unwrap();
    batch
        .transition(&run, "u00000", UnitState::Running, &Detail::default())
        .unwrap();
    assert!(batch
        .transition(&run, "u00001", UnitState::Completed, &Detail::default())
        .is_err());
    batch
        .transition(&run, "u00002", UnitState::Running, &Detail::default())
        .unwrap();
    batch.commit().unwrap();
    assert_eq!(
        store.units_in_state(&run, &[UnitState::Running]).unwrap(),
        ["u00000", "u00002"]
    );

    // transition_many is all or nothing.
    let moves = [
        ("u00000", UnitState::Completed, Detail::default()),
        ("u00001", UnitState::Failed, Detail::default()),
    ];
    assert!(store.transition_many(&run, &moves).is_err());
    assert_eq!(store.unit(&run, "u00000").unwrap().state, UnitState::Running);
}

#[test]
fn a_units_life_is_recorded_with_its_spend_and_history() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 2);
    let attempt = |cost: f64, reason: Option<&str>| Detail {
        reason: reason.map(str::to_string),
        tokens_in: 1000,
        tokens_out: 200,
        cost_usd: cost,
        duration: Some(Duration::from_millis(1500)),
        retries: 1,
        result_file: None,
        cache_key: Some("sha256:abc".into()),
    };
    store
        .transition(&run, "u00000", UnitState::Running, &Detail::default())
        .unwrap();
    store
        .transition(&run, "u00000", UnitState::Failed, &attempt(0.01, Some("HTTP 500")))
        .unwrap();
    store
        .transition(&run, "u00000", UnitState::Queued, &Detail::default())
        .unwrap();
    store
        .transition(&run, "u00000", UnitState::Running, &Detail::default())
        .unwrap();
    let done = Detail {
        result_file: Some("src-file0.ts.md".into()),
        ..attempt(0.02, None)
    };
    store.transition(&run, "u00000", UnitState::Completed, &done).unwrap();

    let unit = store.unit(&run, "u00000").unwrap();
    assert_eq!(unit.state, UnitState::Completed);
    assert_eq!(unit.attempts, 4, "two dispatches, each with one retry");
    assert_eq!((unit.tokens_in, unit.tokens_out, unit.duration_ms), (2000, 400, 3000));
    assert!((unit.cost_usd - 0.03).abs() < 1e-9);
    assert_eq!(unit.reason, None, "a completed unit carries no failure reason");
    assert_eq!(unit.result_file.as_deref(), Some("src-file0.ts.md"));
    assert_eq!(unit.cache_key.as_deref(), Some("sha256:abc"));
    assert!(unit.finished_at.is_some() && unit.started_at.is_some());

    let history: Vec<(Option<UnitState>, UnitState, u32)> = store
        .history(&run, "u00000")
        .unwrap()
        .into_iter()
        .map(|t| (t.from, t.to, t.attempt))
        .collect();
    use UnitState::*;
    assert_eq!(
        history,
        [
            (None, Queued, 0),
            (Some(Queued), Running, 1),
            (Some(Running), Failed, 2),
            (Some(Failed), Queued, 2),
            (Some(Queued), Running, 3),
            (Some(Running), Completed, 4),
        ]
    );
    let summary = store.run(&run).unwrap();
    assert_eq!((summary.tokens_in, summary.tokens_out), (2000, 400));
    assert!((summary.cost_usd - 0.03).abs() < 1e-9);
    assert_eq!(summary.units.completed, 1);
    assert_eq!(summary.units.queued, 1);
    assert_eq!(summary.mean_completed_ms, Some(3000));
    assert_eq!(summary.completed_since_start, 1);
}

#[test]
fn units_are_unique_within_a_run_and_need_the_run() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 3);
    let mut again = units(5);
    again.drain(..2);
    let err = store.add_units(&run, &again).unwrap_err();
    assert!(
        matches!(&err, StoreError::DuplicateUnit { unit, .. } if unit == "u00002"),
        "{err:?}"
    );
    assert_eq!(
        store.run(&run).unwrap().units.total(),
        3,
        "the failed batch added nothing"
    );
    let err = store.add_units(&RunId::from("batch-nope"), &units(1)).unwrap_err();
    assert!(matches!(err, StoreError::UnknownRun(_)), "{err:?}");
}

#[test]
fn run_ids_are_unique_even_within_one_second() {
    let (dir, mut store) = open();
    let ids: Vec<RunId> = (0..3)
        .map(|_| store.create_run(&new_run(dir.path())).unwrap())
        .collect();
    assert!(ids[0].as_str().starts_with("batch-20"), "{}", ids[0]);
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    let summary = store.run(&ids[0]).unwrap();
    assert_eq!(summary.output_dir, dir.path().join(".aiwg/rlm").join(ids[0].as_str()));
    assert_eq!(summary.command[2], "src/**/*.ts");
    assert_eq!(summary.settings["model"], "haiku");

    let chosen = NewRun {
        id: Some("my-run".into()),
        output_dir: Some(PathBuf::from("/tmp/out")),
        ..new_run(dir.path())
    };
    assert_eq!(store.create_run(&chosen).unwrap().as_str(), "my-run");
    let err = store.create_run(&chosen).unwrap_err();
    assert!(
        matches!(err, StoreError::RunExists(ref id) if id == "my-run"),
        "{err:?}"
    );
    assert_eq!(
        store.run(&RunId::from("my-run")).unwrap().output_dir,
        PathBuf::from("/tmp/out")
    );
}

#[test]
fn status_list_failures_and_resume_queries() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 6);
    bring_to(&mut store, &run, "u00000", UnitState::Completed);
    bring_to(&mut store, &run, "u00001", UnitState::Completed);
    store
        .transition(&run, "u00002", UnitState::Running, &Detail::default())
        .unwrap();
    store
        .transition(
            &run,
            "u00002",
            UnitState::Failed,
            &Detail::reason("HTTP 500 after 3 attempts"),
        )
        .unwrap();
    store
        .transition(&run, "u00003", UnitState::Running, &Detail::default())
        .unwrap();
    store
        .transition(
            &run,
            "u00003",
            UnitState::TimedOut,
            &Detail::reason("no answer in 300s"),
        )
        .unwrap();
    store
        .transition(&run, "u00004", UnitState::Cancelled, &Detail::reason("shutdown"))
        .unwrap();
    store.record_run_end(&run, RunStatus::Interrupted).unwrap();

    let summary = store.run(&run).unwrap();
    assert_eq!(summary.status, RunStatus::Interrupted);
    assert!(summary.finished_at.is_some() && summary.owner.is_none());
    let expected = UnitCounts {
        queued: 1,
        completed: 2,
        failed: 1,
        timed_out: 1,
        cancelled: 1,
        ..UnitCounts::default()
    };
    assert_eq!(summary.units, expected);

    let failures: Vec<(String, UnitState, Option<String>)> = store
        .failures(&run)
        .unwrap()
        .into_iter()
        .map(|f| (f.unit, f.state, f.reason))
        .collect();
    assert_eq!(
        failures,
        [
            (
                "u00002".to_string(),
                UnitState::Failed,
                Some("HTTP 500 after 3 attempts".to_string())
            ),
            (
                "u00003".to_string(),
                UnitState::TimedOut,
                Some("no answer in 300s".to_string())
            ),
            ("u00004".to_string(), UnitState::Cancelled, Some("shutdown".to_string())),
        ]
    );
    assert_eq!(
        store.units_in_state(&run, &[UnitState::Completed]).unwrap(),
        ["u00000", "u00001"]
    );

    // The interrupted run is the one to resume from this directory, not from another.
    let latest = store.latest_unfinished_run(dir.path(), 0).unwrap().unwrap();
    assert_eq!(latest.id, run);
    assert!(store
        .latest_unfinished_run(Path::new("/elsewhere"), 0)
        .unwrap()
        .is_none());
    assert!(store.latest_unfinished_run(dir.path(), 1).unwrap().is_none());

    // resume --failed: the three unsuccessful units go back to the queue.
    let claim = store.claim_run(&run, true).unwrap();
    assert_eq!((claim.recovered, claim.retried), (0, 3));
    assert_eq!(store.run(&run).unwrap().units.queued, 4);
    assert_eq!(store.run(&run).unwrap().status, RunStatus::Running);

    // A finished run with nothing left is not offered for resume.
    for unit in store.units_in_state(&run, &[UnitState::Queued]).unwrap() {
        bring_to(&mut store, &run, &unit, UnitState::Completed);
    }
    store.record_run_end(&run, RunStatus::Success).unwrap();
    assert!(store.latest_unfinished_run(dir.path(), 0).unwrap().is_none());

    assert_eq!(store.find_run(run.as_str()).unwrap(), run);
    assert_eq!(store.find_run("batch-").unwrap(), run);
    store.create_run(&new_run(dir.path())).unwrap();
    assert!(matches!(store.find_run("batch-"), Err(StoreError::AmbiguousRun { .. })));
    assert!(matches!(store.find_run("swarm-"), Err(StoreError::UnknownRun(_))));
    let listed: Vec<RunId> = store.list_runs(10).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1], run, "newest first");
    assert_eq!(store.list_runs(1).unwrap().len(), 1);
}

#[test]
fn the_recursion_tree_links_children_to_parents() {
    let (dir, mut store) = open();
    let root = run_with_units(&mut store, dir.path(), 2);
    let child = |parent: &RunId, depth| NewRun {
        parent: Some(parent.clone()),
        depth,
        ..new_run(dir.path())
    };
    let a = store.create_run(&child(&root, 1)).unwrap();
    let b = store.create_run(&child(&root, 1)).unwrap();
    let a1 = store.create_run(&child(&a, 2)).unwrap();
    store.add_units(&a1, &units(1)).unwrap();
    bring_to(&mut store, &a1, "u00000", UnitState::Running);
    let spend = Detail {
        cost_usd: 0.5,
        ..Detail::default()
    };
    store.transition(&a1, "u00000", UnitState::Completed, &spend).unwrap();
    store.record_run_end(&a1, RunStatus::Success).unwrap();

    let tree = store.tree(&root).unwrap();
    assert_eq!(tree.run.id, root);
    let kids: Vec<&RunId> = tree.children.iter().map(|t| &t.run.id).collect();
    assert_eq!(kids, [&a, &b]);
    assert_eq!(tree.children[0].children[0].run.id, a1);
    assert_eq!(tree.children[0].children[0].run.status, RunStatus::Success);
    assert!((tree.children[0].children[0].run.cost_usd - 0.5).abs() < 1e-9);
    assert!(tree.children[1].children.is_empty());
    assert_eq!(store.children(&a).unwrap().len(), 1);
}
