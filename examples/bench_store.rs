//! Benchmark of the task store: a 10,000-unit run through its lifecycle — units added, half
//! of them moved as the store's writer commits a realtime run's moves (groups of 256 moves,
//! each call's start and end among them, seven calls in flight), half one commit per
//! transition (the worst case), then the summary query. Prints figures; asserts nothing.
//!
//! `cargo run --release --example bench_store [-- UNITS]` (also run by `scripts/bench-store`).

use std::time::Instant;

use rlm::store::{Detail, NewRun, NewUnit, TaskStore, UnitKind, UnitState};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let units: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 10_000,
    };
    let dir = tempfile::tempdir()?;
    let mut store = TaskStore::open(&dir.path().join(".aiwg/rlm"))?;
    let run = store.create_run(&NewRun {
        id: None,
        kind: "batch".to_string(),
        command: vec!["rlm".into(), "batch".into(), "src/**/*.ts".into(), "bench".into()],
        cwd: dir.path().to_path_buf(),
        output_dir: None,
        parent: None,
        depth: 0,
        settings: serde_json::Value::Null,
        started: None,
    })?;
    let all: Vec<NewUnit> = (0..units)
        .map(|i| NewUnit {
            id: format!("u{i:06}"),
            label: format!("src/file{i}.ts"),
            kind: UnitKind::Map,
            priority: 5,
            cache_key: None,
        })
        .collect();

    let t = Instant::now();
    store.add_units(&run, &all)?;
    let add = t.elapsed();

    let half = units / 2;
    // Seven calls in flight: a unit starts seven moves before it ends.
    let done = Detail {
        tokens_in: 1200,
        tokens_out: 300,
        cost_usd: 0.0004,
        ..Detail::default()
    };
    let mut moves: Vec<(&str, UnitState, Detail)> = Vec::with_capacity(2 * half);
    for i in 0..half + 7 {
        if let Some(unit) = all[..half].get(i) {
            moves.push((&unit.id, UnitState::Running, Detail::default()));
        }
        if let Some(unit) = i.checked_sub(7).and_then(|j| all[..half].get(j)) {
            moves.push((&unit.id, UnitState::Completed, done.clone()));
        }
    }
    let t = Instant::now();
    for group in moves.chunks(256) {
        store.transition_many(&run, group)?;
    }
    let batched = t.elapsed();

    let t = Instant::now();
    for unit in &all[half..] {
        store.transition(&run, &unit.id, UnitState::Running, &Detail::default())?;
        store.transition(&run, &unit.id, UnitState::Completed, &Detail::default())?;
    }
    let single = t.elapsed();

    let t = Instant::now();
    let summary = store.run(&run)?;
    let completed = store.units_in_state(&run, &[UnitState::Completed])?;
    let query = t.elapsed();
    if summary.units.completed != units as u64 || completed.len() != units {
        return Err(format!("expected {units} completed units, the store says {}", completed.len()).into());
    }
    println!("store: {units} units added in {:.3}s", add.as_secs_f64());
    println!(
        "store: {half} units × 2 transitions, as the writer commits them (256 moves a commit): {:.3}s",
        batched.as_secs_f64()
    );
    println!(
        "store: {} units × 2 transitions, one commit each: {:.3}s",
        units - half,
        single.as_secs_f64()
    );
    println!("store: summary + completed ids: {:.3}s", query.as_secs_f64());
    Ok(())
}
