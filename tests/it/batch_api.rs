//! The providers' batch APIs (issue 18), through rlm's clients against the mock server:
//! submission within the limits, polling, results in any order per custom id, errored,
//! expired and canceled requests, cancel, a server without batch endpoints; and prompt
//! caching on the wire (the usage it brings, the money it saves).
//!
//! These call the library directly: `rlm batch --batch-api` wires them up later.

use std::collections::BTreeMap;
use std::time::Duration;

use rlm::provider::batch_api::{
    batch_api, stamped_custom_id, submit_all, unit_part, BatchApi, BatchError, BatchItem, BatchLimits, BatchState,
    BatchStatus, BatchTimeouts, ItemOutcome, ItemResult, SubmitReport, Submitted,
};
use rlm::provider::catalog::{PriceTable, PriceTier};
use rlm::provider::{
    anthropic, openai, CompletionRequest, HttpConfig, HttpProvider, ModelInfo, Provider, ProviderKind,
};
use rlm::secret::ApiKey;

use crate::support::mock_llm::batch::{BatchFault, BatchProgress};
use crate::support::mock_llm::{reply_marker, MockLlm};
use crate::support::TEST_KEY;

const BOTH: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::Openai];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "claude-haiku-5-5",
        _ => "gpt-4.1-mini",
    }
}

fn config(mock: &MockLlm, kind: ProviderKind) -> HttpConfig {
    HttpConfig {
        kind,
        base_url: mock.url(),
        api_key: Some(ApiKey::new(TEST_KEY)),
        model: model(kind).to_string(),
        temperature: None,
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(10),
    }
}

fn client(mock: &MockLlm, kind: ProviderKind, limits: Option<BatchLimits>) -> Box<dyn BatchApi> {
    let timeouts = BatchTimeouts {
        control: Duration::from_secs(30),
        transfer: Duration::from_secs(60),
    };
    batch_api(&config(mock, kind), limits, timeouts).unwrap()
}

/// The request of unit `i`: the mock answers `answer {i}`.
fn request(i: usize) -> CompletionRequest {
    CompletionRequest {
        system: "Answer briefly.".into(),
        user: format!("unit {i}: {}", reply_marker(&format!("answer {i}"))),
        max_tokens: 200,
        ..CompletionRequest::default()
    }
}

fn items(n: usize) -> Vec<BatchItem> {
    (0..n)
        .map(|i| BatchItem {
            custom_id: format!("unit-{i:04}"),
            request: request(i),
        })
        .collect()
}

/// The unit of a custom id (as sent: stamped with its submission's token).
fn index(custom_id: &str) -> usize {
    unit_part(custom_id).trim_start_matches("unit-").parse().unwrap()
}

/// Submits every item, recording each batch as it is created.
async fn submit(api: &dyn BatchApi, items: Vec<BatchItem>) -> (SubmitReport, Vec<String>) {
    let mut recorded = Vec::new();
    let report = submit_all(api, items, |s: &Submitted| {
        recorded.push(s.batch_id.clone());
        Ok(())
    })
    .await
    .unwrap();
    (report, recorded)
}

/// Polls until the batch has ended (the mock advances per poll), at most `polls` times.
async fn poll_to_end(api: &dyn BatchApi, batch_id: &str, polls: usize) -> BatchState {
    for _ in 0..polls {
        let state = api.poll(batch_id).await.unwrap();
        if state.has_ended() {
            return state;
        }
    }
    panic!("batch {batch_id} did not end within {polls} polls");
}

async fn all_results(api: &dyn BatchApi, state: &BatchState) -> Vec<ItemResult> {
    let mut stream = api.results(state).await.unwrap();
    let mut results = Vec::new();
    while let Some(result) = stream.next().await {
        results.push(result.unwrap());
    }
    assert_eq!(stream.lines_read(), results.len() as u64);
    results
}

#[test]
fn a_few_hundred_requests_come_back_by_custom_id_in_any_order() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.require_key(TEST_KEY);
        let api = client(&mock, kind, None);
        runtime().block_on(async {
            let (report, recorded) = submit(api.as_ref(), items(300)).await;
            assert_eq!(recorded.len(), 1, "{kind:?}: one batch, recorded before any wait");
            assert!(report.rejected.is_empty());
            let submitted = &report.submitted[0];
            assert_eq!(submitted.custom_ids.len(), 300);
            assert!(!submitted.state.has_ended());
            let state = poll_to_end(api.as_ref(), &submitted.batch_id, 3).await;
            assert_eq!((state.counts.succeeded, state.counts.processing), (300, 0), "{kind:?}");
            let results = all_results(api.as_ref(), &state).await;
            let order: Vec<usize> = results.iter().map(|r| index(&r.custom_id)).collect();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..300).collect::<Vec<_>>(), "{kind:?}: each custom id once");
            assert_ne!(
                order, sorted,
                "{kind:?}: the mock shuffles; nothing relies on the order"
            );
            for r in &results {
                let ItemOutcome::Succeeded(reply) = &r.outcome else {
                    panic!("{kind:?}: {} did not succeed", r.custom_id)
                };
                let i = index(&r.custom_id);
                let completion = reply.completion(&request(i)).unwrap();
                assert_eq!(completion.text, format!("answer {i}"));
                assert!(completion.usage.input_tokens > 0 && completion.usage.output_tokens > 0);
                assert_eq!(completion.usage, reply.usage());
            }
        });
        assert_eq!(mock.requests(), 0, "{kind:?}: no realtime call");
        assert_eq!(mock.batch_submissions(), 1);
        assert_eq!(mock.batch_uploads(), usize::from(kind == ProviderKind::Openai));
    }
}

#[test]
fn each_request_of_a_batch_is_the_realtime_body() {
    for kind in BOTH {
        let mock = MockLlm::start();
        let api = client(&mock, kind, None);
        let mut items = items(3);
        items[1].request.shared = "Shared instructions for every unit.\n".into();
        items[2].request.schema = Some(std::sync::Arc::new(serde_json::json!({"type": "object"})));
        runtime().block_on(submit(api.as_ref(), items.clone()));
        let seen = mock.batch_requests();
        assert_eq!(seen.len(), 3);
        for (item, seen) in items.iter().zip(&seen) {
            // Sent under the submission's stamp, the unit's part kept.
            assert_ne!(seen.custom_id, item.custom_id);
            assert_eq!(unit_part(&seen.custom_id), item.custom_id);
            let realtime = match kind {
                ProviderKind::Anthropic => anthropic::request_body(model(kind), &item.request, None),
                _ => openai::request_body(model(kind), &item.request, None, openai::Dialect::of(&mock.url())),
            };
            assert_eq!(seen.body, realtime, "{kind:?} {}", item.custom_id);
        }
    }
}

#[test]
fn submissions_above_the_limits_are_split_and_none_is_refused() {
    for kind in BOTH {
        // By requests: 100 at 40 a batch.
        let mock = MockLlm::start();
        mock.set_batch_limits(40, 10_000_000);
        let limits = BatchLimits {
            max_requests: 40,
            max_bytes: 10_000_000,
        };
        let api = client(&mock, kind, Some(limits));
        runtime().block_on(async {
            let (report, recorded) = submit(api.as_ref(), items(100)).await;
            assert_eq!(recorded.len(), 3, "{kind:?}");
            let mut ids = Vec::new();
            for s in &report.submitted {
                let state = poll_to_end(api.as_ref(), &s.batch_id, 3).await;
                ids.extend(all_results(api.as_ref(), &state).await.into_iter().map(|r| r.custom_id));
            }
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 100, "{kind:?}: every request once");
        });
        assert_eq!(mock.batch_sizes(), [40, 40, 20], "{kind:?}");
        assert_eq!(mock.batch_refusals(), 0);

        // By bytes: a limit that holds about 10 requests.
        let mock = MockLlm::start();
        // (As sent: its custom id stamped.)
        let mut first = items(1).remove(0);
        first.custom_id = stamped_custom_id("sub-1", &first.custom_id);
        let one = client(&mock, kind, None).encode(&first).unwrap().len();
        let max_bytes = one * 10 + 30;
        mock.set_batch_limits(1000, max_bytes);
        let limits = BatchLimits {
            max_requests: 1000,
            max_bytes: max_bytes as u64,
        };
        let api = client(&mock, kind, Some(limits));
        let (report, _) = runtime().block_on(submit(api.as_ref(), items(35)));
        let sizes = mock.batch_sizes();
        assert!(
            sizes.len() >= 4 && sizes.iter().all(|n| *n <= 11),
            "{kind:?}: {sizes:?}"
        );
        assert_eq!(sizes.iter().sum::<usize>(), 35);
        assert_eq!(report.submitted.len(), sizes.len());
        assert_eq!(
            mock.batch_refusals(),
            0,
            "{kind:?}: no submission above the server's limit"
        );
    }
}

#[test]
fn the_mock_refuses_a_submission_above_its_limits() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.set_batch_limits(5, 10_000_000);
        let api = client(&mock, kind, None);
        let outcome = runtime().block_on(async {
            let report = submit_all(api.as_ref(), items(6), |_: &Submitted| Ok(())).await;
            match report {
                // Anthropic refuses at once.
                Err(e) => Err(e),
                // OpenAI accepts, then fails the batch at validation.
                Ok(report) => {
                    let state = poll_to_end(api.as_ref(), &report.submitted[0].batch_id, 2).await;
                    assert_eq!(state.status, BatchStatus::Failed);
                    Ok(api.results(&state).await.map(|_| ()))
                }
            }
        });
        match (kind, outcome) {
            (ProviderKind::Anthropic, Err(e)) => assert!(e.to_string().contains("(400)"), "{e}"),
            (ProviderKind::Openai, Ok(Err(e @ BatchError::Failed { .. }))) => {
                assert!(e.to_string().contains("more than 5 requests"), "{e}")
            }
            (kind, other) => panic!("{kind:?}: {other:?}"),
        }
        assert_eq!(mock.batch_refusals(), 1);
    }
}

#[test]
fn errored_expired_and_canceled_requests_are_reported_per_custom_id() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.batch_fault_when("unit 3:", vec![BatchFault::Errored { retryable: true }]);
        mock.batch_fault_when("unit 5:", vec![BatchFault::Errored { retryable: false }]);
        mock.batch_fault_when("unit 7:", vec![BatchFault::Expired]);
        mock.batch_fault_when("unit 8:", vec![BatchFault::Canceled]);
        let api = client(&mock, kind, None);
        let (state, results) = runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), items(10)).await;
            let state = poll_to_end(api.as_ref(), &report.submitted[0].batch_id, 2).await;
            let results = all_results(api.as_ref(), &state).await;
            (state, results)
        });
        let by_id: BTreeMap<usize, &ItemOutcome> = results.iter().map(|r| (index(&r.custom_id), &r.outcome)).collect();
        assert_eq!(by_id.len(), 10);
        assert!(
            matches!(by_id[&3], ItemOutcome::Errored { retryable: true, .. }),
            "{kind:?}"
        );
        assert!(
            matches!(by_id[&5], ItemOutcome::Errored { retryable: false, .. }),
            "{kind:?}"
        );
        assert!(matches!(by_id[&7], ItemOutcome::Expired), "{kind:?}");
        assert!(matches!(by_id[&8], ItemOutcome::Canceled), "{kind:?}");
        let succeeded = by_id
            .values()
            .filter(|o| matches!(o, ItemOutcome::Succeeded(_)))
            .count();
        assert_eq!(succeeded, 6);
        assert_eq!((state.counts.succeeded, state.counts.errored), (6, 2), "{kind:?}");
        if kind == ProviderKind::Anthropic {
            assert_eq!((state.counts.expired, state.counts.canceled), (1, 1));
        } else {
            // OpenAI counts completed and failed only; its status says expired.
            assert_eq!(state.status, BatchStatus::Expired);
        }

        // Retried alone in a follow-up batch (the faults were used up), they succeed.
        let again: Vec<BatchItem> = items(10)
            .into_iter()
            .filter(|i| [3, 7].contains(&index(&i.custom_id)))
            .collect();
        let results = runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), again).await;
            let state = poll_to_end(api.as_ref(), &report.submitted[0].batch_id, 2).await;
            all_results(api.as_ref(), &state).await
        });
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(|r| matches!(r.outcome, ItemOutcome::Succeeded(_))));
        assert_eq!(mock.batch_sizes(), [10, 2]);
    }
}

#[test]
fn a_batch_advances_per_poll_and_its_results_wait_for_the_end() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.set_batch_progress(BatchProgress::AfterPolls(3));
        let api = client(&mock, kind, None);
        runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), items(30)).await;
            let id = &report.submitted[0].batch_id;
            let mut done = Vec::new();
            for _ in 0..3 {
                let state = api.poll(id).await.unwrap();
                done.push((state.counts.succeeded, state.has_ended()));
                if !state.has_ended() {
                    assert!(matches!(api.results(&state).await, Err(BatchError::NotEnded { .. })));
                }
            }
            assert_eq!(done, [(10, false), (20, false), (30, true)], "{kind:?}");
        });
        assert_eq!(mock.batch_polls(), 3);
        assert_eq!(mock.batch_result_fetches(), 0, "nothing fetched before the end");
    }
}

/// A poll whose reply runs far past what a batch's state needs is not read to its end (a
/// server sending without end would fill the memory): it is refused as malformed, which a
/// run polls again later.
#[test]
fn a_poll_reply_far_too_large_is_refused_without_being_read_whole() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.pad_batch_polls(1, 40 * 1024 * 1024);
        let api = client(&mock, kind, None);
        runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), items(3)).await;
            let id = &report.submitted[0].batch_id;
            let refused = api.poll(id).await.unwrap_err();
            assert!(matches!(refused, BatchError::Malformed { .. }), "{kind:?}: {refused}");
            assert!(refused.is_retryable());
            assert!(refused.to_string().contains("over 32 MB"), "{refused}");
            assert!(api.poll(id).await.is_ok(), "{kind:?}: the next poll is read");
        });
    }
}

#[test]
fn a_canceled_batch_returns_what_finished_and_cancels_the_rest() {
    for kind in BOTH {
        let mock = MockLlm::start();
        mock.set_batch_progress(BatchProgress::AfterPolls(4));
        let api = client(&mock, kind, None);
        let (canceling, results) = runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), items(20)).await;
            let id = report.submitted[0].batch_id.clone();
            let half = api.poll(&id).await.unwrap();
            let half = if half.counts.succeeded < 10 {
                api.poll(&id).await.unwrap()
            } else {
                half
            };
            assert_eq!(half.counts.succeeded, 10, "{kind:?}");
            let canceling = api.cancel(&id).await.unwrap();
            let ended = poll_to_end(api.as_ref(), &id, 2).await;
            assert_eq!(
                ended.status,
                if kind == ProviderKind::Anthropic {
                    BatchStatus::Ended
                } else {
                    BatchStatus::Canceled
                }
            );
            assert_eq!((ended.counts.succeeded, ended.counts.canceled), (10, 10), "{kind:?}");
            (canceling, all_results(api.as_ref(), &ended).await)
        });
        assert_eq!(canceling.status, BatchStatus::Canceling, "{kind:?}");
        assert_eq!(mock.batch_cancels(), 1);
        let canceled = results
            .iter()
            .filter(|r| matches!(r.outcome, ItemOutcome::Canceled))
            .count();
        let succeeded = results
            .iter()
            .filter(|r| matches!(r.outcome, ItemOutcome::Succeeded(_)))
            .count();
        assert_eq!((succeeded, canceled), (10, 10), "{kind:?}");
    }
}

#[test]
fn a_held_batch_is_canceled_before_anything_ran() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let api = client(&mock, ProviderKind::Anthropic, None);
    let results = runtime().block_on(async {
        let (report, _) = submit(api.as_ref(), items(5)).await;
        let id = report.submitted[0].batch_id.clone();
        assert!(!api.poll(&id).await.unwrap().has_ended());
        api.cancel(&id).await.unwrap();
        let ended = poll_to_end(api.as_ref(), &id, 2).await;
        all_results(api.as_ref(), &ended).await
    });
    assert!(results.iter().all(|r| matches!(r.outcome, ItemOutcome::Canceled)));
}

#[test]
fn a_server_without_batch_endpoints_is_named_in_a_typed_error() {
    for (kind, status) in [
        (ProviderKind::Openai, 404),
        (ProviderKind::Openai, 405),
        (ProviderKind::Anthropic, 404),
    ] {
        let mock = MockLlm::start();
        mock.disable_batch_api(Some(status));
        let api = client(&mock, kind, None);
        let error = runtime()
            .block_on(submit_all(api.as_ref(), items(3), |_: &Submitted| Ok(())))
            .unwrap_err();
        assert!(error.is_unsupported(), "{kind:?} {status}: {error}");
        assert!(!error.is_retryable());
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{} has no batch API ({status} on /v1/", mock.url())),
            "{message}"
        );
        assert!(message.contains("--batch-api auto"), "{message}");
        assert_eq!(mock.batch_submissions(), 0);
    }
}

#[test]
fn an_unknown_batch_and_a_wrong_key_are_clear_errors() {
    let mock = MockLlm::start();
    mock.require_key(TEST_KEY);
    let api = client(&mock, ProviderKind::Openai, None);
    let error = runtime().block_on(api.poll("batch_gone")).unwrap_err();
    assert!(matches!(error, BatchError::UnknownBatch { .. }), "{error}");
    assert!(error.to_string().contains("batch_gone"), "{error}");

    mock.require_key("another-key-0000");
    let error = runtime()
        .block_on(submit_all(api.as_ref(), items(1), |_: &Submitted| Ok(())))
        .unwrap_err();
    assert!(error.to_string().contains("authentication failed (401)"), "{error}");
    assert!(!error.to_string().contains(TEST_KEY));
    assert!(!error.is_retryable());
}

#[test]
fn a_batch_that_cannot_be_recorded_is_canceled() {
    let mock = MockLlm::start();
    mock.set_batch_progress(BatchProgress::Held);
    let api = client(&mock, ProviderKind::Anthropic, None);
    let error = runtime()
        .block_on(submit_all(api.as_ref(), items(2), |_: &Submitted| {
            Err("disk full".to_string())
        }))
        .unwrap_err();
    assert!(
        matches!(&error, BatchError::NotRecorded { canceled: true, reason, .. } if reason == "disk full"),
        "{error}"
    );
    assert_eq!((mock.batch_submissions(), mock.batch_cancels()), (1, 1));
}

#[test]
fn a_reply_that_echoes_the_key_is_scrubbed() {
    for kind in BOTH {
        let mock = MockLlm::start();
        let api = client(&mock, kind, None);
        let item = BatchItem {
            custom_id: "leak".into(),
            request: CompletionRequest {
                user: reply_marker(&format!("the key is {TEST_KEY}")),
                max_tokens: 50,
                ..CompletionRequest::default()
            },
        };
        let results = runtime().block_on(async {
            let (report, _) = submit(api.as_ref(), vec![item.clone()]).await;
            let state = poll_to_end(api.as_ref(), &report.submitted[0].batch_id, 2).await;
            all_results(api.as_ref(), &state).await
        });
        let ItemOutcome::Succeeded(reply) = &results[0].outcome else {
            panic!("not succeeded")
        };
        assert_eq!(reply.completion(&item.request).unwrap().text, "the key is [REDACTED]");
        assert!(!reply.raw().to_string().contains(TEST_KEY));
    }
}

/// A request whose shared prefix (about 1,500 mock tokens) is marked for caching.
fn cached_request(i: usize) -> CompletionRequest {
    CompletionRequest {
        system: "You review code.".into(),
        shared: format!("{}\n", "Instructions shared by every unit. ".repeat(170)),
        user: format!("unit {i}: {}", reply_marker(&format!("answer {i}"))),
        max_tokens: 100,
        cache_prefix: true,
        ..CompletionRequest::default()
    }
}

#[test]
fn anthropic_prompt_caching_writes_once_then_reads_and_saves_money() {
    let mock = MockLlm::start();
    let provider = HttpProvider::new(config(&mock, ProviderKind::Anthropic)).unwrap();
    let model = ModelInfo::resolve(
        model(ProviderKind::Anthropic).into(),
        None,
        &PriceTable::default(),
        true,
    );
    let usages = runtime().block_on(async {
        let mut usages = Vec::new();
        for i in 0..3 {
            usages.push(provider.complete(&cached_request(i)).await.unwrap().usage);
        }
        usages
    });
    let recorded = mock.recorded();
    let block = &recorded[0].body["messages"][0]["content"][0];
    assert_eq!(block["cache_control"], serde_json::json!({"type": "ephemeral"}));
    assert_eq!(
        recorded[1].body["messages"][0]["content"][0], *block,
        "byte-identical prefix"
    );
    assert!(
        usages[0].cache_write_tokens > 1000 && usages[0].cached_input_tokens == 0,
        "{usages:?}"
    );
    for u in &usages[1..] {
        assert_eq!(
            (u.cache_write_tokens, u.cached_input_tokens),
            (0, usages[0].cache_write_tokens)
        );
        assert!(
            u.input_tokens > u.cached_input_tokens,
            "input counts every prompt token"
        );
    }
    assert_eq!(mock.prompt_cache_counts(), (1, 2));
    // The first call pays the write premium; the others save nine tenths of the prefix.
    assert!(model.cache_savings(usages[0], PriceTier::Realtime) < 0.0);
    assert!(model.cache_savings(usages[1], PriceTier::Realtime) > 0.0);
    let uncached = rlm::provider::Usage {
        cached_input_tokens: 0,
        ..usages[1]
    };
    assert!(model.cost(usages[1]) < model.cost(uncached));
    assert!((model.cost_at(usages[1], PriceTier::Batch) - model.cost(usages[1]) / 2.0).abs() < 1e-12);

    // Without cache_prefix (`--no-prompt-cache`): no marker, nothing cached.
    let plain = CompletionRequest {
        cache_prefix: false,
        ..cached_request(9)
    };
    let usage = runtime().block_on(provider.complete(&plain)).unwrap().usage;
    assert_eq!((usage.cache_write_tokens, usage.cached_input_tokens), (0, 0));
    assert!(!mock.recorded()[3].body.to_string().contains("cache_control"));
}

#[test]
fn openai_prompt_caching_reports_cached_tokens_of_the_shared_prefix() {
    let mock = MockLlm::start();
    mock.set_openai_prompt_cache(true);
    let provider = HttpProvider::new(config(&mock, ProviderKind::Openai)).unwrap();
    let usages = runtime().block_on(async {
        let mut usages = Vec::new();
        for i in 0..2 {
            usages.push(provider.complete(&cached_request(i)).await.unwrap().usage);
        }
        usages
    });
    assert_eq!(usages[0].cached_input_tokens, 0);
    assert!(usages[1].cached_input_tokens >= 1024, "{usages:?}");
    assert!(usages[1].cached_input_tokens < usages[1].input_tokens);
    // A local server (the mock's URL) never gets prompt_cache_key.
    assert!(mock.recorded().iter().all(|r| r.body.get("prompt_cache_key").is_none()));
}

#[test]
fn batched_requests_share_the_prompt_cache_and_report_it_per_request() {
    let mock = MockLlm::start();
    let api = client(&mock, ProviderKind::Anthropic, None);
    let items: Vec<BatchItem> = (0..5)
        .map(|i| BatchItem {
            custom_id: format!("unit-{i:04}"),
            request: cached_request(i),
        })
        .collect();
    let results = runtime().block_on(async {
        let (report, _) = submit(api.as_ref(), items).await;
        let state = poll_to_end(api.as_ref(), &report.submitted[0].batch_id, 2).await;
        all_results(api.as_ref(), &state).await
    });
    let usages: Vec<_> = results
        .iter()
        .map(|r| match &r.outcome {
            ItemOutcome::Succeeded(reply) => reply.usage(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(usages.iter().filter(|u| u.cache_write_tokens > 0).count(), 1);
    assert_eq!(usages.iter().filter(|u| u.cached_input_tokens > 0).count(), 4);
}
