//! The estimate before a job starts (or resumes): per phase, items, batches, calls, tokens
//! and cost, at each phase's model's price. A map phase's numbers are exact counts of what
//! will be sent; later phases depend on earlier answers (how many clusters, which items a
//! review selects), so theirs are rough expectations, marked `~`. What the cache already
//! holds (`cache_forecast`) is counted as `cached` and costs nothing. The total goes
//! through the same $1 / $10 / $100 thresholds as `rlm batch`.

use std::fmt::Write as _;

use serde::Serialize;

use super::cache_forecast::CacheHits;
use super::definition::{JobDefinition, PhaseKind};
use super::state::PhaseState;
use crate::money::usd;
use crate::provider::ModelInfo;
use crate::tokens::expected;

/// Output tokens expected per answer object.
const MAP_OUT_PER_ITEM: u64 = 150;
const REVIEW_OUT_PER_ITEM: u64 = 700;
const CLUSTER_OUT: u64 = 250;
const REPORT_OUT: u64 = 1_500;
/// Expected share of items that end up in a multi-member cluster, and clusters per item.
const CLUSTERED_SHARE: f64 = 0.3;
const CLUSTERS_PER_ITEM: f64 = 0.1;
/// Expected share of items a review selects.
const REVIEWED_SHARE: f64 = 0.1;
/// Bytes a fetched text (a diff) is expected to add to an item.
const FETCHED_BYTES: u64 = 12_000;

/// One phase's expected work.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseEstimate {
    pub phase: String,
    pub kind: &'static str,
    pub model: String,
    pub items: usize,
    pub batches: usize,
    /// Batches the cache answers: no call, nothing paid.
    pub cached: usize,
    pub calls: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
    /// Counted, not expected.
    pub exact: bool,
    /// Done before: nothing to send.
    pub done: bool,
}

/// The whole job's.
#[derive(Debug, Clone, Serialize)]
pub struct JobEstimate {
    pub phases: Vec<PhaseEstimate>,
    pub cached: usize,
    pub calls: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
}

/// What the estimate needs to know of the job.
pub struct EstimateInput<'a> {
    pub definition: &'a JobDefinition,
    /// What an earlier attempt did of each phase (none for a new job).
    pub states: &'a [PhaseState],
    pub items: usize,
    /// Mean bytes of an item's JSON.
    pub item_bytes: u64,
    /// Bytes of each phase's system message (prompt, schema, context).
    pub system_bytes: Vec<u64>,
    pub models: &'a [ModelInfo],
    /// Each phase's output limit per call.
    pub max_tokens: Vec<u32>,
    /// Whether each phase has a prompt (a reduce or report without one calls nothing).
    pub prompts: Vec<bool>,
    /// `--batch-api`: map phases are billed at the batch price (half of list).
    pub batch_api: bool,
    /// What the cache already holds of each phase's calls.
    pub cache: Vec<CacheHits>,
}

pub fn estimate(input: &EstimateInput<'_>) -> JobEstimate {
    let mut phases = Vec::new();
    let n = input.items as f64;
    for (i, p) in input.definition.phases.iter().enumerate() {
        let state = input.states.get(i);
        let done = state.is_some_and(|s| s.status().is_done());
        let model = &input.models[i];
        let system = expected(input.system_bytes.get(i).copied().unwrap_or(0));
        let max_out = u64::from(input.max_tokens.get(i).copied().unwrap_or(16_000));
        let size = p.batch_size().max(1);
        let has_prompt = input.prompts.get(i).copied().unwrap_or(false);
        let (items, exact, in_per_item, out_per_item) = match p.kind {
            PhaseKind::Map => {
                let left = state.map_or(input.items, |s| {
                    input.items.saturating_sub(s.items_done + s.unprocessed.len())
                });
                (left, true, expected(input.item_bytes), MAP_OUT_PER_ITEM)
            }
            PhaseKind::Reduce => {
                let clusters = (n * CLUSTERS_PER_ITEM).ceil() as usize;
                let member_tokens = expected(input.item_bytes.min(1_200)) * ((n * CLUSTERED_SHARE) as u64);
                let per_cluster = if clusters == 0 {
                    0
                } else {
                    member_tokens / clusters as u64
                };
                (if has_prompt { clusters } else { 0 }, false, per_cluster, CLUSTER_OUT)
            }
            PhaseKind::Review => {
                let fetched = if p.fetch.is_some() { FETCHED_BYTES } else { 0 };
                (
                    (n * REVIEWED_SHARE).ceil() as usize,
                    false,
                    expected(input.item_bytes + fetched),
                    REVIEW_OUT_PER_ITEM,
                )
            }
            PhaseKind::Report => (usize::from(has_prompt), true, (n as u64 * 40).min(30_000), REPORT_OUT),
        };
        let items = if done { 0 } else { items };
        let batches = if p.kind == PhaseKind::Report {
            items
        } else {
            items.div_ceil(size)
        };
        // A reduce or review an earlier attempt started has its batches and items planned:
        // the batches done (or failed: a resume does not send them again) are not counted
        // again, and the items left are their share.
        let (items, batches, exact) = match state {
            Some(s) if !done && s.batches_total > 0 && matches!(p.kind, PhaseKind::Reduce | PhaseKind::Review) => {
                let left = s.batches_total.saturating_sub(s.batches_done + s.batches_failed);
                let planned = if s.items_total > 0 { s.items_total } else { items };
                ((planned * left).div_ceil(s.batches_total), left, true)
            }
            _ => (items, batches, exact),
        };
        // What will be paid: the batches the cache does not answer, and their items.
        let hits = input.cache.get(i).cloned().unwrap_or_default();
        let (items, batches, cached, paid_items) = match (&hits.map_batches, done) {
            (_, true) => (0, 0, 0, 0),
            (Some(planned), false) => {
                let all: usize = planned.iter().map(|(n, _)| n).sum();
                let paid: usize = planned.iter().filter(|(_, c)| !c).map(|(n, _)| n).sum();
                let cached = planned.iter().filter(|(_, c)| *c).count();
                (all, planned.len(), cached, paid)
            }
            (None, false) if hits.expected => (items, batches, batches, 0),
            (None, false) => (items, batches, 0, items),
        };
        let calls = batches - cached;
        let input_tokens = calls as u64 * system + paid_items as u64 * in_per_item;
        let output_tokens = (paid_items as u64 * out_per_item).min(calls as u64 * max_out);
        phases.push(PhaseEstimate {
            phase: p.name.clone(),
            kind: p.kind.name(),
            model: model.id.clone(),
            items,
            batches,
            cached,
            calls,
            input_tokens,
            output_tokens,
            usd: model.cost_at(
                crate::provider::Usage {
                    input_tokens,
                    output_tokens,
                    ..Default::default()
                },
                if input.batch_api && p.kind == PhaseKind::Map {
                    crate::provider::catalog::PriceTier::Batch
                } else {
                    crate::provider::catalog::PriceTier::Realtime
                },
            ),
            exact: exact || done,
            done,
        });
    }
    JobEstimate {
        cached: phases.iter().map(|p| p.cached).sum(),
        calls: phases.iter().map(|p| p.calls).sum(),
        input_tokens: phases.iter().map(|p| p.input_tokens).sum(),
        output_tokens: phases.iter().map(|p| p.output_tokens).sum(),
        usd: phases.iter().map(|p| p.usd).sum(),
        phases,
    }
}

/// The estimate as a table for people.
pub fn table(e: &JobEstimate, models: &[ModelInfo]) -> String {
    let mut s = String::from("Estimate (~ marks expectations that depend on earlier answers):\n");
    let _ = writeln!(
        s,
        "  {:<28} {:>7} {:>8} {:>7} {:>6} {:>11} {:>11} {:>10}",
        "phase", "items", "batches", "cached", "calls", "tokens in", "tokens out", "cost"
    );
    for (i, p) in e.phases.iter().enumerate() {
        let mark = if p.exact { "" } else { "~" };
        let cost = if p.done {
            "done".to_string()
        } else if p.calls == 0 && p.cached > 0 {
            "cached".to_string()
        } else {
            models.get(i).map_or(usd(p.usd), |m| short_cost(m, p.usd))
        };
        let _ = writeln!(
            s,
            "  {:<28} {:>7} {:>8} {:>7} {:>6} {:>11} {:>11} {:>10}",
            format!("{} {} ({})", i + 1, p.phase, p.kind),
            format!("{mark}{}", p.items),
            format!("{mark}{}", p.batches),
            format!("{mark}{}", p.cached),
            format!("{mark}{}", p.calls),
            format!("{mark}{}", p.input_tokens),
            format!("{mark}{}", p.output_tokens),
            cost
        );
    }
    let _ = write!(
        s,
        "  {:<28} {:>7} {:>8} {:>7} {:>6} {:>11} {:>11} {:>10}",
        "total",
        "",
        "",
        e.cached,
        e.calls,
        e.input_tokens,
        e.output_tokens,
        usd(e.usd)
    );
    s
}

/// A phase's cost: `free` on a model that costs nothing, else as every amount rlm shows
/// (`$0.000123`, never a `$0.00` that hides it).
fn short_cost(model: &ModelInfo, cost: f64) -> String {
    if model.is_free() {
        "free".to_string()
    } else {
        usd(cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::state::PhaseStatus;

    fn definition() -> JobDefinition {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        fs_err::write(
            &path,
            "name = \"t\"\ninput = \"e.jsonl\"\nid = \"id\"\n[[phase]]\nname = \"classify\"\nkind = \"map\"\n\
             prompt = \"c.md\"\noutput_schema = \"s.json\"\nbatch_size = 10\n[[phase]]\nname = \"review\"\nkind = \"review\"\n\
             prompt = \"r.md\"\noutput_schema = \"s.json\"\n\
             select = \"kind == \\\"fix\\\"\"\nbatch_size = 1\n",
        )
        .unwrap();
        JobDefinition::load(&path).unwrap()
    }

    fn estimate_of(definition: &JobDefinition, states: &[PhaseState]) -> JobEstimate {
        let model = ModelInfo::external("m".into(), None);
        let models = vec![model.clone(), model];
        estimate(&EstimateInput {
            definition,
            states,
            items: 1_000,
            item_bytes: 400,
            system_bytes: vec![1_000, 1_000],
            models: &models,
            max_tokens: vec![4_000, 4_000],
            prompts: vec![true, true],
            batch_api: false,
            cache: Vec::new(),
        })
    }

    #[test]
    fn a_started_review_counts_only_the_batches_it_has_left() {
        let d = definition();
        let fresh = estimate_of(&d, &[]);
        let review = &fresh.phases[1];
        assert!(review.batches > 40, "{}", review.batches);
        // The map is done; the review planned 40 batches, 30 done and 2 failed.
        let states = vec![
            PhaseState {
                status: Some(PhaseStatus::Completed),
                ..PhaseState::default()
            },
            PhaseState {
                status: Some(PhaseStatus::Running),
                batches_total: 40,
                items_total: 40,
                batches_done: 30,
                batches_failed: 2,
                ..PhaseState::default()
            },
        ];
        let resumed = estimate_of(&d, &states);
        assert_eq!(resumed.phases[0].calls, 0);
        assert_eq!(resumed.phases[1].batches, 8);
        assert_eq!(resumed.phases[1].items, 8);
        assert!(resumed.phases[1].exact);
        assert_eq!(resumed.phases[1].calls, 8);
        assert!(resumed.phases[1].input_tokens < review.input_tokens / 3);
    }
}
