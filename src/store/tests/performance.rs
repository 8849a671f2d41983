//! A rough measure of the store's cost for a 10,000-unit run (printed, not asserted: the
//! machine decides the numbers). Run with `--nocapture` to see them.

use std::time::Instant;

use super::*;
use crate::store::*;

#[test]
fn ten_thousand_units_through_their_lifecycle() {
    const UNITS: usize = 10_000;
    let (dir, mut store) = open();
    let run = store.create_run(&new_run(dir.path())).unwrap();

    let t = Instant::now();
    store.add_units(&run, &units(UNITS)).unwrap();
    let add = t.elapsed();

    // The engine's shape: flush the events of a moment in one transaction.
    let all = units(UNITS);
    let t = Instant::now();
    for chunk in all[..UNITS / 2].chunks(100) {
        let mut batch = store.begin().unwrap();
        for unit in chunk {
            batch
                .transition(&run, &unit.id, UnitState::Running, &Detail::default())
                .unwrap();
            let done = Detail {
                tokens_in: 1200,
                tokens_out: 300,
                cost_usd: 0.0004,
                ..Detail::default()
            };
            batch.transition(&run, &unit.id, UnitState::Completed, &done).unwrap();
        }
        batch.commit().unwrap();
    }
    let batched = t.elapsed();

    // The worst case: one commit per transition.
    let t = Instant::now();
    for unit in &all[UNITS / 2..] {
        store
            .transition(&run, &unit.id, UnitState::Running, &Detail::default())
            .unwrap();
        store
            .transition(&run, &unit.id, UnitState::Completed, &Detail::default())
            .unwrap();
    }
    let single = t.elapsed();

    let t = Instant::now();
    let summary = store.run(&run).unwrap();
    let completed = store.units_in_state(&run, &[UnitState::Completed]).unwrap();
    let query = t.elapsed();

    assert_eq!(summary.units.completed, UNITS as u64);
    assert_eq!(completed.len(), UNITS);
    let transitions: i64 = store
        .conn
        .query_row("SELECT COUNT(*) FROM transitions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(transitions, 3 * UNITS as i64);
    println!(
        "store: add {UNITS} units {add:?}; {half} units × 2 transitions, 200 a commit: {batched:?}; \
         {half} × 2, one commit each: {single:?}; summary + completed ids {query:?}",
        half = UNITS / 2
    );
}
