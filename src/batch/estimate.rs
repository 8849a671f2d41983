//! The cost estimate of the calls a run would make, and the seed's safety thresholds:
//! above $1 ask (on a terminal), above $10 require `--force`, above $100 refuse unless
//! `--max-cost` allows it.

use std::io::BufRead;

use super::prepass::Prepass;
use crate::aggregate::AggregateStrategy;
use crate::error::RlmError;
use crate::printer::Printer;
use crate::provider::ModelInfo;
use crate::settings::{BatchSettings, BudgetSettings, OutputSettings};
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
    pub calls: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
}

pub fn estimate(units: &[WorkUnit], pre: &Prepass, settings: &BatchSettings, model: &ModelInfo) -> Estimate {
    let max_out = u64::from(settings.provider.max_tokens);
    let mut input = 0;
    let mut output = 0;
    for &i in &pre.misses {
        let tokens = units[i].estimated_input_tokens;
        input += tokens;
        output += (64 + tokens / 4).min(max_out);
    }
    let mut calls = pre.misses.len();
    if settings.task.aggregate == AggregateStrategy::Summarize && !pre.misses.is_empty() {
        // One call over all answers (more when they need grouping: roughly proportional).
        calls += 1;
        input += output;
        output += max_out.min(2048);
    }
    Estimate {
        calls,
        input_tokens: input,
        output_tokens: output,
        usd: model.price.map_or(0.0, |p| p.cost(input, 0, output)),
    }
}

/// What the thresholds say, short of asking: `Err` refuses the run, `Ok(true)` means it
/// asks for confirmation (or warns without a terminal).
pub fn verdict(settings: &BatchSettings, usd: f64) -> Result<bool, RlmError> {
    budget_verdict(&settings.budget, usd)
}

/// [`verdict`] from the budget alone (`rlm job` has no [`BatchSettings`]).
pub fn budget_verdict(budget: &BudgetSettings, usd: f64) -> Result<bool, RlmError> {
    let over = |limit: f64, how: &str| {
        RlmError::Usage(format!(
            "Estimated cost (${usd:.2}) exceeds safety threshold (${limit:.2}). Options: {how}; reduce scope with a \
             more specific glob; use a cheaper model (--model haiku)"
        ))
    };
    if let Some(max) = budget.max_cost {
        if usd > max {
            return Err(over(max, "raise --max-cost"));
        }
    } else if usd > ABORT_ABOVE {
        return Err(over(ABORT_ABOVE, "pass --max-cost USD to allow it"));
    }
    if usd > FORCE_ABOVE && !budget.force {
        return Err(over(FORCE_ABOVE, "proceed anyway with --force"));
    }
    Ok(usd > CONFIRM_ABOVE && !budget.yes && !budget.force)
}

/// The thresholds, asking on a terminal.
pub fn confirm(settings: &BatchSettings, estimate: &Estimate, printer: &Printer) -> Result<(), RlmError> {
    confirm_cost(&settings.budget, &settings.output, estimate.usd, printer)
}

/// [`confirm`] from the budget and output settings alone.
pub fn confirm_cost(
    budget: &BudgetSettings,
    output: &OutputSettings,
    usd: f64,
    printer: &Printer,
) -> Result<(), RlmError> {
    if !budget_verdict(budget, usd)? {
        return Ok(());
    }
    if output.stdin_is_terminal && output.stderr_is_terminal {
        printer.important(&format!("Estimated cost is ${usd:.2}. Proceed? (y/n)"));
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            return Err(RlmError::Usage("cancelled: nothing was called".into()));
        }
    } else {
        printer.warn(&format!(
            "estimated cost ${usd:.2} is above $1; no terminal to ask, proceeding (--yes silences this)"
        ));
    }
    Ok(())
}
