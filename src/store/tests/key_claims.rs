//! Claims on cache keys for provider batches: taken before the intent, carried through the
//! submission, let go with each outcome; another run sees who holds a key and whether that
//! run's rlm lives.

use super::*;
use crate::batch_state::{BatchCounts, BatchState, BatchStatus};

fn state(batch_id: &str) -> BatchState {
    BatchState {
        batch_id: batch_id.to_string(),
        status: BatchStatus::InProgress,
        provider_status: "in_progress".to_string(),
        counts: BatchCounts::default(),
        result_files: Vec::new(),
        errors: Vec::new(),
        over_token_limit: false,
    }
}

#[test]
fn a_key_is_claimed_once_carried_through_its_submission_and_let_go_with_its_outcome() {
    let (dir, mut store) = open();
    let a = store.create_run(&new_run(dir.path())).unwrap();
    let b = store.create_run(&new_run(dir.path())).unwrap();
    let server = "https://api.anthropic.com";
    assert_eq!(
        store.claim_keys(&a, server, &["k1", "k2"]).unwrap(),
        [KeyClaim::Mine, KeyClaim::Mine]
    );
    // Run a lives (this process owns it): b waits for it.
    let held = store.claim_keys(&b, server, &["k1", "k3"]).unwrap();
    match &held[0] {
        KeyClaim::Held(h) => assert!(h.alive && h.run == a && h.batch_id.is_none(), "{h:?}"),
        other @ KeyClaim::Mine => panic!("{other:?}"),
    }
    assert_eq!(held[1], KeyClaim::Mine);
    assert_eq!(
        store.claim_keys(&a, server, &["k1"]).unwrap(),
        [KeyClaim::Mine],
        "its own"
    );

    let requests = vec![
        ("t1-c1".to_string(), "u1".to_string()),
        ("t1-c2".to_string(), "u2".to_string()),
    ];
    let keys = vec![
        ("t1-c1".to_string(), "k1".to_string()),
        ("t1-c2".to_string(), "k2".to_string()),
    ];
    let intent = NewBatchIntent {
        token: "t1",
        provider: "anthropic",
        server,
        phase: "map",
        requests: &requests,
        keys: &keys,
    };
    store.record_batch_intent(&a, &intent).unwrap();
    let submitted = NewBatchSubmission {
        state: &state("batch_1"),
        provider: "anthropic",
        server,
        phase: "map",
        requests: &requests,
        token: Some("t1"),
    };
    store.record_batch_submission(&a, &submitted).unwrap();
    let holder = store.key_holder("k1").unwrap().expect("held");
    assert_eq!(holder.batch_id.as_deref(), Some("batch_1"));
    assert_eq!(holder.custom_id.as_deref(), Some("t1-c1"));
    let mut claims = store.batch_claims("batch_1").unwrap();
    claims.sort();
    assert_eq!(claims, keys);

    // A run that ends with its batch still at the provider holds its keys, dead.
    store.record_run_end(&a, RunStatus::Interrupted).unwrap();
    let holder = store.key_holder("k2").unwrap().expect("still held");
    assert!(!holder.alive);
    assert!(holder.describe().contains("rlm resume"), "{}", holder.describe());

    let outcome = RequestOutcome {
        custom_id: "t1-c1",
        outcome: "succeeded",
        reason: None,
    };
    store.record_batch_outcomes(&a, "batch_1", &[outcome]).unwrap();
    assert!(
        store.key_holder("k1").unwrap().is_some(),
        "held until the batch is collected"
    );
    store.record_batch_collected(&a, "batch_1").unwrap();
    assert!(store.key_holder("k1").unwrap().is_none());
    assert!(store.key_holder("k2").unwrap().is_none(), "let go with its batch");

    // b never submitted k3: let go at its end.
    store.release_unsent_claims(&b).unwrap();
    assert!(store.key_holder("k3").unwrap().is_none());
}

#[test]
fn a_claim_of_a_run_that_died_before_its_intent_is_free_and_a_voided_one_too() {
    let (dir, mut store) = open();
    let a = store.create_run(&new_run(dir.path())).unwrap();
    let b = store.create_run(&new_run(dir.path())).unwrap();
    let server = "https://api.openai.com";
    store.claim_keys(&a, server, &["k1", "k2"]).unwrap();
    let requests = vec![("t1-c2".to_string(), "u2".to_string())];
    let keys = vec![("t1-c2".to_string(), "k2".to_string())];
    let intent = NewBatchIntent {
        token: "t1",
        provider: "openai",
        server,
        phase: "map",
        requests: &requests,
        keys: &keys,
    };
    store.record_batch_intent(&a, &intent).unwrap();
    store.record_run_end(&a, RunStatus::Failed).unwrap();
    // k1 was claimed, never intended: nothing was sent, so b takes it.
    assert_eq!(store.claim_keys(&b, server, &["k1"]).unwrap(), [KeyClaim::Mine]);
    // k2's submission may exist (its reply was never recorded): held, for a's resume.
    match &store.claim_keys(&b, server, &["k2"]).unwrap()[0] {
        KeyClaim::Held(h) => assert!(!h.alive && h.batch_id.is_none(), "{h:?}"),
        other @ KeyClaim::Mine => panic!("{other:?}"),
    }
    store.drop_batch_intent(&a, "t1").unwrap();
    assert_eq!(
        store.claim_keys(&b, server, &["k2"]).unwrap(),
        [KeyClaim::Mine],
        "voided"
    );
}
