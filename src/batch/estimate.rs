//! The cost estimate of the calls a run would make, and the seed's safety thresholds:
//! above $1 ask (on a terminal), above $10 require `--force`, above $100 refuse unless
//! `--max-cost` allows it.
//!
//! Prompt caching counts once the prefixes are known (they are: every unit is rendered
//! when planned). Units that share a prefix long enough for the model's cache: the first
//! calls write it — as many as start at once, since a call only finds what a finished call
//! wrote — and the rest read it. Anthropic caches a marked prefix (writes cost 1.25× input,
//! reads a tenth); OpenAI caches any prefix by itself (reads at its cached-input price, no
//! write premium). Requests of a provider batch are not run `-j` at a time, and the providers
//! serve their cache hits only as best they can: under `--batch-api` no read is counted, and
//! every request that may write the prefix is counted as writing it (the ceiling).

use std::collections::HashMap;
use std::io::BufRead;

use super::batch_api_run::Delivery;
use super::prepass::Prepass;
use crate::aggregate::AggregateStrategy;
use crate::error::{Declined, Interrupted, OverBudget, RlmError, Spender, SystemFailure, Threshold};
use crate::exec::Interrupt;
use crate::printer::Printer;
use crate::provider::catalog::{self, PriceTier};
use crate::provider::{ModelInfo, ProviderKind};
use crate::settings::{BatchSettings, BudgetSettings, OutputSettings};
use crate::tokens;
use crate::unit::WorkUnit;

/// Above this estimate, ask on a terminal.
const CONFIRM_ABOVE: f64 = 1.0;
/// Above this estimate, require `--force`.
const FORCE_ABOVE: f64 = 10.0;
/// Above this estimate, abort unless `--max-cost` raises the ceiling.
const ABORT_ABOVE: f64 = 100.0;

/// What a run is expected to call and cost.
#[derive(Debug, Clone, Copy)]
pub struct Estimate {
    /// Model calls in all: per-unit calls and aggregation calls.
    pub calls: usize,
    /// Of `calls`, the aggregation calls (summaries, syntheses).
    pub aggregate_calls: usize,
    pub input_tokens: u64,
    /// Of `input_tokens`, the per-unit calls' files' own text: what the run is about.
    pub content_tokens: u64,
    /// Of `input_tokens`, the rest of the per-unit calls' prompts: system prompts,
    /// delimiters, the instruction and its wrapping (issue 27). Aggregation calls are
    /// neither: `input_tokens` − content − framing.
    pub framing_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, expected to be read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, expected to be written to it (Anthropic).
    pub cache_write_tokens: u64,
    pub usd: f64,
    /// The price the per-unit calls are counted at: `batch` (half of list) under
    /// `--batch-api`.
    pub price_tier: PriceTier,
}

/// Of a unit's expected input tokens, its files' own text (never more than the whole).
pub fn content_tokens(unit: &WorkUnit) -> u64 {
    tokens::expected(unit.content_bytes).min(unit.estimated_input_tokens)
}

/// The expected answer of a unit with `input` prompt tokens.
fn answer_tokens(input: u64, max_out: u64) -> u64 {
    (64 + input / 4).min(max_out)
}

/// The estimate of the calls a run would make, each at the price it is billed at
/// (`delivery`: realtime, or the batch API's half price).
pub fn estimate(
    units: &[WorkUnit],
    pre: &Prepass,
    settings: &BatchSettings,
    model: &ModelInfo,
    delivery: Delivery,
) -> Estimate {
    let max_out = u64::from(settings.provider.max_tokens);
    let mut input = 0;
    let mut output = 0;
    let mut content = 0;
    for &i in &pre.misses {
        let tokens = units[i].estimated_input_tokens;
        input += tokens;
        content += content_tokens(&units[i]);
        output += answer_tokens(tokens, max_out);
    }
    let framing = input - content;
    let price = |input: u64, output: u64, tier: PriceTier| {
        let usage = crate::provider::Usage {
            input_tokens: input,
            output_tokens: output,
            ..Default::default()
        };
        model.cost_at(usage, tier)
    };
    // The per-unit calls share their prompts' prefixes through the provider's cache.
    let (cache_read_tokens, cache_write_tokens) = prompt_cache(units, pre, settings, model, delivery);
    let unit_usage = crate::provider::Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cache_read_tokens,
        cache_write_tokens,
    };
    let unit_usd = model.cost_at(unit_usage, delivery.unit_tier());
    // Every answer (cached or not) is read by the aggregation calls.
    let answers: u64 = pre
        .hits
        .iter()
        .map(|(_, entry)| crate::tokens::expected(entry.text.len() as u64))
        .sum::<u64>()
        + pre
            .misses
            .iter()
            .map(|&i| answer_tokens(units[i].estimated_input_tokens, max_out))
            .sum::<u64>();
    let aggregate_calls = aggregate_calls(units, pre, settings, model, answers);
    let mut aggregate_usd = 0.0;
    if aggregate_calls > 0 {
        // The answers are read once, and summaries of summaries once more.
        let summary_out = max_out.min(2048);
        let (agg_in, agg_out) = (
            answers + (aggregate_calls as u64 - 1) * summary_out,
            aggregate_calls as u64 * summary_out,
        );
        aggregate_usd = price(agg_in, agg_out, delivery.aggregate_tier());
        input += agg_in;
        output += agg_out;
    }
    let calls = pre.misses.len() + aggregate_calls;
    Estimate {
        calls,
        aggregate_calls,
        input_tokens: input,
        content_tokens: content,
        framing_tokens: framing,
        output_tokens: output,
        cache_read_tokens,
        cache_write_tokens,
        usd: unit_usd + aggregate_usd,
        price_tier: delivery.unit_tier(),
    }
}

/// The prompt-cache reads and writes the calls are expected to make (see the module doc).
fn prompt_cache(
    units: &[WorkUnit],
    pre: &Prepass,
    settings: &BatchSettings,
    model: &ModelInfo,
    delivery: Delivery,
) -> (u64, u64) {
    let (needs_marker, writes_cost_more) = match settings.provider.kind {
        ProviderKind::Anthropic => (true, true),
        ProviderKind::Openai => (false, false),
        ProviderKind::Command => return (0, 0),
    };
    let minimum = catalog::min_cacheable_tokens(&model.id);
    let mut groups: HashMap<u64, (u64, u64)> = HashMap::new();
    for &i in &pre.misses {
        let prefix = units[i].prefix;
        // The provider's rule (see provider::anthropic): the prefix must reach the minimum.
        if (prefix.marked || !needs_marker) && tokens::upper_bound(prefix.bytes) >= minimum {
            groups.entry(prefix.id).or_insert((tokens::expected(prefix.bytes), 0)).1 += 1;
        }
    }
    let at_once = match delivery {
        // Calls that start together all write: `-j` of them at once.
        Delivery::Realtime => settings.exec.parallelism.width.max(1) as u64,
        // A batch's hits are best effort: none is counted (see the module doc).
        Delivery::BatchApi { .. } => u64::MAX,
    };
    let (mut read, mut written) = (0, 0);
    for (tokens, calls) in groups.into_values() {
        let first = calls.min(at_once);
        read += (calls - first) * tokens;
        if writes_cost_more {
            written += first * tokens;
        }
    }
    (read, written)
}

/// The aggregation calls the strategy will make: summarize one (or one per group of
/// answers that fills the context, and one over their summaries); synthesize one per
/// content type when there are several, and the cross-type report.
fn aggregate_calls(
    units: &[WorkUnit],
    pre: &Prepass,
    settings: &BatchSettings,
    model: &ModelInfo,
    answers: u64,
) -> usize {
    let answered = pre.hits.len() + pre.misses.len();
    if answered == 0 {
        return 0;
    }
    match settings.task.aggregate {
        AggregateStrategy::Concat | AggregateStrategy::Merge => 0,
        AggregateStrategy::Summarize => {
            let room = model
                .context_window
                .saturating_sub(u64::from(settings.provider.max_tokens))
                .max(1);
            let groups = answers.div_ceil(room).max(1) as usize;
            if groups > 1 {
                groups + 1
            } else {
                1
            }
        }
        AggregateStrategy::Synthesize => {
            if settings.output.answer_on_stdout && answered == 1 {
                // `rlm query` on a file read in one piece: its answer is the answer.
                return 0;
            }
            let types: std::collections::BTreeSet<_> = units
                .iter()
                .filter(|u| u.blocked.is_none())
                .map(|u| match u.detection() {
                    Some(d) => d.content_type,
                    None => crate::content::detect(&u.label, "").content_type,
                })
                .collect();
            if types.len() > 1 {
                types.len() + 1
            } else {
                1
            }
        }
    }
}

/// What the thresholds say, short of asking: `Err` refuses the run, `Ok(true)` means it
/// asks for confirmation (or warns without a terminal).
pub fn verdict(settings: &BatchSettings, usd: f64) -> Result<bool, RlmError> {
    // `--max-cost` is the whole run's: a resume counts what the earlier attempts spent.
    let spent = settings.resume.as_ref().map_or(0.0, |t| t.spent_usd);
    budget_verdict(&settings.budget, usd, spent, Spender::Run)
}

/// [`verdict`] from the budget alone (`rlm job` has no [`BatchSettings`]), `spent` being what
/// earlier attempts of the work spent, `spender` what the refusal names.
pub fn budget_verdict(budget: &BudgetSettings, usd: f64, spent: f64, spender: Spender) -> Result<bool, RlmError> {
    let over = |limit: f64, threshold: Threshold| OverBudget::Threshold {
        estimate: usd,
        limit,
        threshold,
        spender,
    };
    if let Some(max) = budget.max_cost {
        // Nothing left to pay for (a run whose last calls crossed the budget, resumed): no
        // reason to refuse.
        if usd > 0.0 && usd + spent > max {
            if spent > 0.0 {
                return Err(OverBudget::WithSpent {
                    spent,
                    rest: usd,
                    max_cost: max,
                    spender,
                }
                .into());
            }
            return Err(over(max, Threshold::MaxCost).into());
        }
    } else if usd > ABORT_ABOVE {
        return Err(over(ABORT_ABOVE, Threshold::Abort).into());
    }
    if usd > FORCE_ABOVE && !budget.force {
        return Err(over(FORCE_ABOVE, Threshold::Force).into());
    }
    Ok(usd > CONFIRM_ABOVE && !budget.yes && !budget.force)
}

/// The thresholds, asking on a terminal. Returns the warning said instead of asking (no
/// terminal), for the report.
pub fn confirm(settings: &BatchSettings, estimate: &Estimate, printer: &Printer) -> Result<Option<String>, RlmError> {
    if !verdict(settings, estimate.usd)? {
        return Ok(None);
    }
    ask(&settings.output, estimate.usd, printer)
}

/// [`confirm`] from the budget and output settings alone, for a job; `spent` is what the job
/// spent before (`--max-cost` caps the whole, and a refusal says what was spent).
///
/// For `rlm job`, which listens to Ctrl-C from before it lists its items: once a listener
/// is there, Ctrl-C no longer ends the process, and a read of stdin would not hear it. So
/// the answer is read on a thread of its own while `interrupt` is listened to, and a
/// Ctrl-C at the question ends the command (exit 130) with nothing called.
pub async fn confirm_cost(
    budget: &BudgetSettings,
    output: &OutputSettings,
    usd: f64,
    spent: f64,
    printer: &Printer,
    interrupt: &mut Interrupt,
) -> Result<(), RlmError> {
    if !budget_verdict(budget, usd, spent, Spender::Job)? {
        return Ok(());
    }
    if !(output.stdin_is_terminal && output.stderr_is_terminal) {
        proceed_unasked(usd, printer);
        return Ok(());
    }
    printer.important(&question(usd));
    let (sender, answer) = tokio::sync::oneshot::channel();
    // A thread, not a blocking task of the runtime: its shutdown would wait for the read.
    std::thread::Builder::new()
        .name("cost-question".into())
        .spawn(move || drop(sender.send(read_answer())))
        .map_err(SystemFailure::AnswerThread)?;
    tokio::select! {
        biased;
        () = interrupt.recv() => Err(Interrupted::CostQuestion.into()),
        answer = answer => accepted(&answer.unwrap_or_default()),
    }
}

/// Asks on a terminal (or warns without one, and returns the warning) before spending
/// above $1.
fn ask(output: &OutputSettings, usd: f64, printer: &Printer) -> Result<Option<String>, RlmError> {
    if output.stdin_is_terminal && output.stderr_is_terminal {
        printer.important(&question(usd));
        accepted(&read_answer()).map(|()| None)
    } else {
        Ok(Some(proceed_unasked(usd, printer)))
    }
}

/// The question asked before spending above $1.
fn question(usd: f64) -> String {
    format!("Estimated cost is {}. Proceed? (y/n)", crate::money::usd(usd))
}

/// One line of stdin: the answer to [`question`] (empty when stdin ends or fails).
fn read_answer() -> String {
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer
}

/// Yes goes on; anything else cancels, with nothing called.
fn accepted(answer: &str) -> Result<(), RlmError> {
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        Err(Declined::Cost.into())
    }
}

/// Without a terminal to ask on, says the run goes on anyway; returns what it said.
fn proceed_unasked(usd: f64, printer: &Printer) -> String {
    let warning = format!(
        "estimated cost {} is above $1; no terminal to ask, proceeding (--yes silences this)",
        crate::money::usd(usd)
    );
    printer.warn(&warning);
    warning
}
