//! Opening, schema versions, and the unit lifecycle.

use std::time::Duration;

use super::*;
use crate::store::*;

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
    fs_err::create_dir_all(&other).unwrap();
    fs_err::write(other.join(STORE_FILE), b"").unwrap();
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
    let before = fs_err::read(&path).unwrap();
    let err = TaskStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 99, .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("was written by a newer rlm (schema 99"), "{message}");
    assert!(message.ends_with("upgrade rlm"), "{message}");
    assert_eq!(fs_err::read(&path).unwrap(), before, "the file was modified");
    assert!(!dir.path().join(format!("{STORE_FILE}-wal")).exists());
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
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
    assert_eq!(next, 25, "6 × 6 pairs minus 11 legal moves");
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

/// One dispatch's detail: 1,000 tokens in, 200 out, 1.5 s, one retry, `cost` dollars.
fn attempt(cost: f64, reason: Option<&str>) -> Detail {
    Detail {
        reason: reason.map(str::to_string),
        tokens_in: 1000,
        tokens_out: 200,
        cost_usd: cost,
        duration: Some(Duration::from_millis(1500)),
        retries: 1,
        result_file: None,
        cache_key: Some("sha256:abc".into()),
    }
}

#[test]
fn a_units_life_is_recorded_with_its_spend_and_history() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 2);
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

/// The store's writer commits a group of moves at once, and a call that began and ended
/// within one group has both its moves in it: the unit's row is then read and written once,
/// and what it records is what the moves one by one record.
#[test]
fn moves_committed_as_one_group_record_what_the_moves_one_by_one_record() {
    let (dir, mut store) = open();
    let run = run_with_units(&mut store, dir.path(), 3);
    let done = Detail {
        result_file: Some("done.md".into()),
        ..attempt(0.02, None)
    };
    let life = [
        (UnitState::Running, Detail::default()),
        (UnitState::Failed, attempt(0.01, Some("HTTP 500"))),
        (UnitState::Queued, Detail::default()),
        (UnitState::Running, Detail::default()),
        (UnitState::Completed, done),
    ];
    for (to, detail) in &life {
        store.transition(&run, "u00000", *to, detail).unwrap();
    }
    // The same life for u00001, interleaved with u00002's start, in one group.
    let mut group: Vec<(&str, UnitState, Detail)> = vec![("u00002", UnitState::Running, Detail::default())];
    group.extend(life.iter().map(|(to, detail)| ("u00001", *to, detail.clone())));
    store.transition_many(&run, &group).unwrap();

    let (one, grouped) = (store.unit(&run, "u00000").unwrap(), store.unit(&run, "u00001").unwrap());
    assert_eq!(grouped.state, UnitState::Completed);
    assert_eq!(
        (
            grouped.attempts,
            grouped.tokens_in,
            grouped.tokens_out,
            grouped.duration_ms
        ),
        (one.attempts, one.tokens_in, one.tokens_out, one.duration_ms)
    );
    assert!((grouped.cost_usd - one.cost_usd).abs() < 1e-9);
    assert_eq!(
        (&grouped.reason, &grouped.result_file, &grouped.cache_key),
        (&one.reason, &one.result_file, &one.cache_key)
    );
    assert!(grouped.started_at.is_some() && grouped.finished_at.is_some());
    let moves = |unit: &str| -> Vec<(Option<UnitState>, UnitState, u32)> {
        store
            .history(&run, unit)
            .unwrap()
            .into_iter()
            .map(|t| (t.from, t.to, t.attempt))
            .collect()
    };
    assert_eq!(moves("u00001"), moves("u00000"));
    assert_eq!(store.unit(&run, "u00002").unwrap().state, UnitState::Running);
    let summary = store.run(&run).unwrap();
    assert_eq!((summary.tokens_in, summary.tokens_out), (4000, 800));
    assert!((summary.cost_usd - 0.06).abs() < 1e-9);

    // A group with a move the lifecycle refuses writes nothing, the units' earlier moves in
    // it included.
    let refused = [
        ("u00002", UnitState::Completed, Detail::default()),
        ("u00000", UnitState::Running, Detail::default()),
    ];
    assert!(store.transition_many(&run, &refused).is_err());
    assert_eq!(store.unit(&run, "u00002").unwrap().state, UnitState::Running);
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
fn a_unit_added_served_begins_its_history_completed_and_one_added_queued_queued() {
    let (dir, mut store) = open();
    let run = store.create_run(&new_run(dir.path())).unwrap();
    store.add_units_served(&run, &units(2), &[1]).unwrap();
    let firsts: Vec<(Option<UnitState>, UnitState, u32)> = ["u00000", "u00001"]
        .iter()
        .map(|u| {
            let history = store.history(&run, u).unwrap();
            assert_eq!(history.len(), 1, "{u}: only its addition");
            (history[0].from, history[0].to, history[0].attempt)
        })
        .collect();
    assert_eq!(firsts, [(None, UnitState::Queued, 0), (None, UnitState::Completed, 0)]);
    assert!(
        store.history(&run, "u99999").unwrap().is_empty(),
        "no such unit, no history"
    );
}
