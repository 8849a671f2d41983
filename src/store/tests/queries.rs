//! Run ids, status, list, failures, resume queries and the recursion tree.

use std::path::{Path, PathBuf};

use super::*;
use crate::store::*;

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

    // resume --failed: the cancelled unit goes back to the queue (as on every resume), and
    // the failed and timed-out ones too.
    let claim = store.claim_run(&run, true, Limits::default(), false).unwrap();
    assert_eq!((claim.recovered, claim.retried), (1, 2));
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
    // An empty id names no run (every id starts with it); the message is one line.
    assert!(matches!(store.find_run(""), Err(StoreError::UnknownRun(_))));
    assert!(matches!(store.find_run(" "), Err(StoreError::UnknownRun(_))));
    let e = store.find_run("batch-\nx").unwrap_err().to_string();
    assert!(
        e.starts_with("no run `batch-\\nx` in the task store") && !e.contains('\n'),
        "{e}"
    );
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

#[test]
fn each_attempt_records_its_spend_time_and_limits_and_a_claim_hands_them_on() {
    let (dir, mut store) = open();
    let began = Timestamp::from_millis(Timestamp::now().as_millis() - 3_000);
    let run = store
        .create_run(&NewRun {
            started: Some(began),
            ..new_run(dir.path())
        })
        .unwrap();
    store.add_units(&run, &units(3)).unwrap();
    bring_to(&mut store, &run, "u00000", UnitState::Running);
    let spend = |usd| Detail {
        cost_usd: usd,
        ..Detail::default()
    };
    store
        .transition(&run, "u00000", UnitState::Completed, &spend(1.5))
        .unwrap();
    store.record_run_end(&run, RunStatus::BudgetExceeded).unwrap();

    // The first attempt ran from when the run began (planning included) to its end.
    let given = Limits {
        max_cost_usd: Some(2.0),
        deadline_ms: None,
    };
    let claim = store.claim_run(&run, false, given, false).unwrap();
    assert_eq!((claim.attempt, claim.earlier.attempts), (2, 1));
    assert!((claim.earlier.cost_usd - 1.5).abs() < 1e-9);
    assert!(claim.earlier.elapsed_ms >= 3_000, "{claim:?}");
    assert_eq!(claim.limits, Limits::default(), "nothing given before");
    bring_to(&mut store, &run, "u00001", UnitState::Running);
    store
        .transition(&run, "u00001", UnitState::Completed, &spend(0.25))
        .unwrap();
    store.heartbeat(&run).unwrap();
    // Killed here: the second attempt counts to its last heartbeat.

    let claim = store
        .claim_run(
            &run,
            false,
            Limits {
                max_cost_usd: None,
                deadline_ms: Some(60_000),
            },
            false,
        )
        .unwrap();
    assert_eq!(claim.attempt, 3);
    assert!((claim.earlier.cost_usd - 1.75).abs() < 1e-9);
    assert_eq!(claim.limits.max_cost_usd, Some(2.0), "a raised budget stays raised");
    let summary = store.run(&run).unwrap();
    assert_eq!(summary.attempts, 3);
    assert!(summary.elapsed_ms >= 3_000);
    let claim = store.claim_run(&run, false, Limits::default(), false).unwrap();
    assert_eq!(
        claim.limits,
        Limits {
            max_cost_usd: Some(2.0),
            deadline_ms: Some(60_000)
        }
    );
}

#[test]
fn a_run_id_is_handed_out_once() {
    let (dir, mut store) = open();
    assert!(store.reserve_run_id("batch-x").unwrap());
    assert!(!store.reserve_run_id("batch-x").unwrap(), "taken");
    let other = TaskStore::open(&dir.path().join(".aiwg/rlm")).unwrap();
    assert!(!other.reserve_run_id("batch-x").unwrap(), "taken for every process");
    // A run the store names itself skips ids handed out, and its own is taken.
    assert!(store.reserve_run_id("batch-y").unwrap());
    let named = store
        .create_run(&NewRun {
            id: None,
            kind: "batch".into(),
            ..new_run(dir.path())
        })
        .unwrap();
    assert!(!store.reserve_run_id(named.as_str()).unwrap());
}

#[test]
fn a_run_that_takes_over_an_unfinished_runs_directory_supersedes_it() {
    let (dir, mut store) = open();
    let out = dir.path().join("out");
    let in_out = |id: &str| NewRun {
        id: Some(id.into()),
        output_dir: Some(out.clone()),
        ..new_run(dir.path())
    };
    // A stops with units not run; F finished in another directory; S succeeded in `out`.
    let a = store.create_run(&in_out("a")).unwrap();
    store.add_units(&a, &units(2)).unwrap();
    bring_to(&mut store, &a, "u00000", UnitState::Completed);
    bring_to(&mut store, &a, "u00001", UnitState::Cancelled);
    store.record_run_end(&a, RunStatus::Interrupted).unwrap();
    let elsewhere = store.create_run(&new_run(dir.path())).unwrap();
    store.add_units(&elsewhere, &units(1)).unwrap();
    bring_to(&mut store, &elsewhere, "u00000", UnitState::Cancelled);
    store.record_run_end(&elsewhere, RunStatus::Interrupted).unwrap();
    assert_eq!(
        store.latest_unfinished_run(dir.path(), 0).unwrap().unwrap().id,
        elsewhere
    );

    // B takes `out` over (spelled another way): A is superseded, the other run is not.
    let b = store
        .create_run(&NewRun {
            output_dir: Some(dir.path().join(".").join("out")),
            ..in_out("b")
        })
        .unwrap();
    let a_now = store.run(&a).unwrap();
    assert_eq!(a_now.status, RunStatus::Superseded);
    assert_eq!(a_now.superseded_by, Some(b.clone()));
    assert_eq!(a_now.display_status(), "SUPERSEDED");
    assert_eq!(store.run(&elsewhere).unwrap().status, RunStatus::Interrupted);
    assert_eq!(store.run(&b).unwrap().output_dir, out);
    // Not offered for resume (B itself is still running, owned by this process).
    let unfinished: Vec<RunId> = store
        .unfinished_runs(dir.path(), 0)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(unfinished, [b.clone(), elsewhere.clone()]);
    assert_eq!(
        store.latest_unfinished_run(dir.path(), 0).unwrap().unwrap().id,
        elsewhere
    );
    // And never claimed.
    let err = store.claim_run(&a, false, Limits::default(), false).unwrap_err();
    assert!(
        matches!(&err, StoreError::Superseded { by, .. } if by == "b"),
        "{err:?}"
    );
    assert!(err.to_string().contains("took over its output directory"), "{err}");

    // A finished run in the directory keeps its status when the next one takes it.
    store.record_run_end(&b, RunStatus::Success).unwrap();
    store.create_run(&in_out("c")).unwrap();
    assert_eq!(store.run(&b).unwrap().status, RunStatus::Success);
    assert_eq!(store.run(&b).unwrap().superseded_by, None);
}
