//! Several connections and processes on one store: concurrent writers never fail on a
//! lock, and a run whose process was killed is seen as crashed and can be taken over.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;
use crate::store::*;

const CHILD_MODE: &str = "RLM_STORE_TEST_CHILD";
const CHILD_DIR: &str = "RLM_STORE_TEST_DIR";

/// Opens the store, creates a run of `n` units and moves each through `running` to
/// `completed`, one commit per move: the most lock traffic a caller can make.
fn write_a_run(rlm_dir: &Path, cwd: &Path, n: usize) -> RunId {
    let mut store = TaskStore::open(rlm_dir).unwrap();
    let run = run_with_units(&mut store, cwd, n);
    for unit in units(n) {
        store
            .transition(&run, &unit.id, UnitState::Running, &Detail::default())
            .unwrap();
        store.heartbeat(&run).unwrap();
        let done = Detail {
            cost_usd: 0.001,
            ..Detail::default()
        };
        store.transition(&run, &unit.id, UnitState::Completed, &done).unwrap();
    }
    store.record_run_end(&run, RunStatus::Success).unwrap();
    run
}

#[test]
fn threads_with_their_own_connections_write_at_once_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rlm_dir = dir.path().join(".aiwg/rlm");
    // All open a store that does not exist yet: creation and migration race too.
    let runs: Vec<RunId> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| write_a_run(&rlm_dir, dir.path(), 150)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let store = TaskStore::open(&rlm_dir).unwrap();
    for run in &runs {
        let summary = store.run(run).unwrap();
        assert_eq!(summary.units.completed, 150, "{run}");
        assert!((summary.cost_usd - 0.15).abs() < 1e-9);
    }
    assert_eq!(store.list_runs(10).unwrap().len(), 4);
}

/// Starts this test binary again, running only [`child_process`] in `mode`.
fn spawn_child(mode: &str, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "store::tests::concurrency::child_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_MODE, mode)
        .env(CHILD_DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The other process of the tests below (does nothing when run on its own).
#[test]
#[ignore = "run by the tests of this module in a child process"]
fn child_process() {
    let (Ok(mode), Ok(dir)) = (std::env::var(CHILD_MODE), std::env::var(CHILD_DIR)) else {
        return;
    };
    let dir = Path::new(&dir);
    let rlm_dir = dir.join(".aiwg/rlm");
    match mode.as_str() {
        "writer" => {
            let run = write_a_run(&rlm_dir, dir, 300);
            fs_err::write(dir.join("writer-run"), run.as_str()).unwrap();
        }
        "crash" => {
            let mut store = TaskStore::open(&rlm_dir).unwrap();
            let run = run_with_units(&mut store, dir, 10);
            for i in 0..3 {
                bring_to(&mut store, &run, &format!("u{i:05}"), UnitState::Completed);
            }
            for i in 3..5 {
                bring_to(&mut store, &run, &format!("u{i:05}"), UnitState::Running);
            }
            fs_err::write(dir.join("crash-run.tmp"), run.as_str()).unwrap();
            fs_err::rename(dir.join("crash-run.tmp"), dir.join("crash-run")).unwrap();
            // Work "forever": the parent kills this process with SIGKILL.
            loop {
                store.heartbeat(&run).unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn a_second_process_writes_at_the_same_time_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rlm_dir = dir.path().join(".aiwg/rlm");
    TaskStore::open(&rlm_dir).unwrap();
    let mut child = spawn_child("writer", dir.path());
    let mine = write_a_run(&rlm_dir, dir.path(), 300);
    assert!(child.wait().unwrap().success(), "the other process failed");
    let theirs = RunId(fs_err::read_to_string(dir.path().join("writer-run")).unwrap());
    let store = TaskStore::open(&rlm_dir).unwrap();
    for run in [&mine, &theirs] {
        assert_eq!(store.run(run).unwrap().units.completed, 300, "{run}");
    }
}

#[test]
fn a_killed_run_reads_as_crashed_and_its_running_units_can_be_requeued() {
    let dir = tempfile::tempdir().unwrap();
    let rlm_dir = dir.path().join(".aiwg/rlm");
    let mut child = spawn_child("crash", dir.path());
    let marker = dir.path().join("crash-run");
    let started = Instant::now();
    while !marker.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the child never set up its run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = RunId(fs_err::read_to_string(&marker).unwrap());
    let mut store = TaskStore::open(&rlm_dir).unwrap();

    // While its owner works, the run is RUNNING and nobody else may take it.
    let summary = store.run(&run).unwrap();
    assert_eq!(summary.display_status(), "RUNNING");
    assert_eq!(summary.owner.as_ref().map(|o| o.pid), Some(child.id()));
    let err = store.claim_run(&run, false, Limits::default(), false).unwrap_err();
    assert!(
        matches!(err, StoreError::RunInUse { pid, .. } if pid == child.id()),
        "{err:?}"
    );
    assert!(store.latest_unfinished_run(dir.path(), 0).unwrap().is_none());

    child.kill().unwrap(); // SIGKILL: no chance to record anything
    child.wait().unwrap();

    let summary = store.run(&run).unwrap();
    assert_eq!(summary.display_status(), "CRASHED");
    assert!(summary.crashed());
    assert_eq!((summary.units.running, summary.units.completed), (2, 3));
    assert_eq!(
        store.latest_unfinished_run(dir.path(), 0).unwrap().map(|r| r.id),
        Some(run.clone())
    );

    let claim = store.claim_run(&run, false, Limits::default(), false).unwrap();
    assert_eq!((claim.recovered, claim.retried, claim.attempt), (2, 0, 2));
    assert_eq!(claim.earlier.attempts, 1, "{claim:?}");
    let summary = store.run(&run).unwrap();
    assert_eq!(summary.display_status(), "RUNNING");
    assert_eq!(summary.owner.map(|o| o.pid), Some(std::process::id()));
    assert_eq!(
        (summary.units.queued, summary.units.running, summary.units.completed),
        (7, 0, 3)
    );
    assert_eq!(
        store.units_in_state(&run, &[UnitState::Completed]).unwrap(),
        ["u00000", "u00001", "u00002"]
    );
    let last = store.history(&run, "u00003").unwrap().pop().unwrap();
    assert_eq!((last.from, last.to), (Some(UnitState::Running), UnitState::Queued));
    assert!(last.detail.unwrap().contains("previous rlm process was gone"));
}
