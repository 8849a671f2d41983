//! What a run says: the start-up banner, the dry-run plan, and the completion summary.
//! Rendering only; everything is printed through the run's [`Printer`].

use std::collections::HashSet;

use serde_json::json;

use super::estimate::{self, Estimate};
use super::prepass::Prepass;
use crate::escape;
use crate::input::Manifest;
use crate::printer::Printer;
use crate::prompt;
use crate::provider::ModelInfo;
use crate::report::{format_duration, RunReport, RunStatus};
use crate::settings::BatchSettings;
use crate::unit::WorkUnit;

/// Prompts longer than this are shortened on the banner.
const PROMPT_SHOWN: usize = 160;
/// Failed files listed on the terminal (the report has them all).
const FAILURES_SHOWN: usize = 5;

/// A run's plan, as the banner and the dry run show it.
pub struct PlanView<'a> {
    pub settings: &'a BatchSettings,
    pub model: &'a ModelInfo,
    pub manifest: &'a Manifest,
    pub units: &'a [WorkUnit],
    pub pre: &'a Prepass,
    pub estimate: &'a Estimate,
    pub delimiter: &'a crate::prompt::Delimiter,
}

/// The seed's "RLM Batch Initialized" block.
pub fn init_block(view: &PlanView<'_>) -> String {
    let PlanView {
        settings,
        model,
        manifest,
        pre,
        estimate,
        ..
    } = view;
    let not_sent = manifest.skipped.len() + manifest.unreadable.len();
    let skipped = if not_sent == 0 {
        String::new()
    } else {
        format!(" ({not_sent} not sent: binary, empty, unreadable, outside the searched directory or over --max-files)")
    };
    let cost = if model.is_free() {
        model.cost_text(0.0)
    } else {
        model.cost_text(estimate.usd)
    };
    let calls = if estimate.calls == 1 { "call" } else { "calls" };
    format!(
        "RLM Batch Initialized\nPattern: {}\nFiles matched: {}{skipped}\nSub-prompt: {}\nModel: {} ({} at {})\n\
         Max parallel: {}\nAggregate: {}\nCache: {} hits, {} misses{}\n\
         Estimated cost: {cost} ({} {calls}, ~{} input tokens, ~{} output tokens)\n",
        escape::name(&settings.input.pattern),
        manifest.matched(),
        prompt::shorten(&settings.task.sub_prompt, PROMPT_SHOWN),
        model.id,
        settings.provider.kind.name(),
        settings.provider.shown_base_url(),
        settings.exec.parallelism.width,
        settings.task.aggregate.name(),
        pre.hits.len(),
        pre.misses.len(),
        if pre.blocked.is_empty() {
            String::new()
        } else {
            format!(", {} too large to send", pre.blocked.len())
        },
        estimate.calls,
        estimate.input_tokens,
        estimate.output_tokens,
    )
}

/// What a dry run prints: the plan, and what the real run would do.
pub fn dry_run(printer: &Printer, view: &PlanView<'_>, blocker: Option<&str>) {
    let PlanView {
        settings,
        model,
        manifest,
        units,
        pre,
        estimate,
        delimiter,
    } = view;
    let verdict = match (blocker, estimate::verdict(settings, estimate.usd)) {
        (Some(b), _) => format!("cannot start: {b}"),
        (None, Ok(false)) => "proceeds".to_string(),
        (None, Ok(true)) => format!("asks to confirm the ${:.2} (pass --yes)", estimate.usd),
        (None, Err(e)) => format!("refused: {e}"),
    };
    let hit: HashSet<usize> = pre.hits.iter().map(|(i, _)| *i).collect();
    let by_path: std::collections::HashMap<&str, &crate::input::InputFile> =
        manifest.files.iter().map(|f| (f.display.as_str(), f)).collect();
    // What a unit reads: the sizes of its inputs (a chunk counts its whole file).
    let size_of = |u: &WorkUnit| -> u64 {
        u.inputs
            .iter()
            .filter_map(|i| by_path.get(i.display.as_str()))
            .map(|f| f.size)
            .sum()
    };
    if settings.output.json {
        let plan: Vec<serde_json::Value> = units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let size = size_of(u);
                let mut entry = json!({
                    "id": u.id,
                    "path": u.label,
                    "bytes": size,
                    "content_hash": u.inputs.first().map(|i| i.content_hash.as_str()),
                    "cache_key": u.cache_key.as_str(),
                    "cached": hit.contains(&i),
                    "result_file": u.result_name,
                    "estimated_input_tokens": u.estimated_input_tokens,
                    "blocked": u.blocked,
                    "batch_files": u.content.as_ref().map(|c| &c.members),
                });
                let extra = super::plan_json::unit(
                    u,
                    &by_path,
                    &settings.task.sub_prompt,
                    delimiter,
                    settings.task.schema.as_ref(),
                );
                if let (Some(entry), serde_json::Value::Object(extra)) = (entry.as_object_mut(), extra) {
                    entry.extend(extra);
                }
                entry
            })
            .collect();
        let estimate_json = json!({
            "calls": estimate.calls,
            "input_tokens": estimate.input_tokens,
            "output_tokens": estimate.output_tokens,
            "cost_usd": estimate.usd,
            "price_basis": model.price_basis,
        });
        printer.json(&json!({
            "dry_run": true,
            "model": model.id,
            "provider": settings.provider.kind.name(),
            "max_parallel": settings.exec.parallelism.width,
            "aggregate": settings.task.aggregate.name(),
            "files": manifest.files.iter().map(super::plan_json::file).collect::<Vec<_>>(),
            "skipped": manifest.skipped,
            "unreadable": manifest.unreadable,
            "cache_hits": pre.hits.len(),
            "cache_misses": pre.misses.len(),
            "estimated_calls": estimate.calls,
            "estimated_input_tokens": estimate.input_tokens,
            "estimated_output_tokens": estimate.output_tokens,
            "estimated_cost_usd": estimate.usd,
            "price_known": model.price_basis == crate::provider::model::PriceBasis::Listed,
            "estimate": estimate_json,
            "cost_check": verdict,
            "units": plan,
        }));
        return;
    }
    let mut text = String::new();
    for (i, u) in units.iter().enumerate() {
        let state = match (&u.blocked, hit.contains(&i)) {
            (Some(_), _) => "too-large",
            (None, true) => "cached",
            (None, false) => "call",
        };
        let size = size_of(u);
        text.push_str(&format!("{state:<9} {size:>9} B  {}\n", escape::name(&u.label)));
    }
    text.push_str(&format!(
        "dry run: {} files, {} cached, {} call{}, estimated {}; nothing was called\nthe real run {verdict}",
        units.len(),
        pre.hits.len(),
        estimate.calls,
        if estimate.calls == 1 { "" } else { "s" },
        model.cost_text(estimate.usd)
    ));
    printer.data(&text);
}

/// The seed's completion block on stdout (the report with `--json`, the aggregate's path
/// with `--quiet`), and the failures on stderr, which `--quiet` never hides.
/// With an `answer` (`rlm query`), stdout holds only the answer and the completion block
/// goes to stderr.
pub fn completion(printer: &Printer, report: &RunReport, quiet: bool, answer: Option<&str>) {
    if report.status != RunStatus::Success && (quiet || printer.mode().json) {
        if let Some(e) = &report.error {
            printer.error(e);
        }
        for line in failure_lines(report) {
            printer.important(&line);
        }
    }
    if printer.mode().json {
        printer.json(&serde_json::to_value(report).unwrap_or_default());
        return;
    }
    if let (Some(answer), true) = (answer, quiet) {
        printer.data(answer.trim_end());
        return;
    }
    if quiet {
        if let Some(p) = &report.aggregate_path {
            printer.data(p);
        }
        return;
    }
    let rule = "═══════════════════════════════════════════";
    let mut text = format!(
        "{rule}\nRLM Batch: {}\n{rule}\n\nPattern: {}\nFiles processed: {}/{} ({} from cache)\n",
        report.status.name(),
        escape::name(&report.pattern),
        report.files_succeeded,
        report.files_matched,
        report.cache_hits
    );
    if !report.failed.is_empty() {
        text.push_str(&format!("Failed: {}\n", report.failed.len()));
        for line in failure_lines(report) {
            text.push_str(&format!("{line}\n"));
        }
    }
    if !report.skipped.is_empty() {
        text.push_str(&format!("Skipped: {}\n", report.skipped.len()));
    }
    text.push_str(&format!(
        "Duration: {}\nTokens: {} in, {} out ({} saved by the cache)\nTotal cost: {}\n\n",
        format_duration(report.duration_ms),
        report.tokens_in,
        report.tokens_out,
        report.tokens_saved,
        report.cost_text(report.cost_usd),
    ));
    if let Some(p) = &report.aggregate_path {
        text.push_str(&format!("Results: {p}\n"));
    }
    text.push_str(&format!("Report: {}\n", report.report_path));
    if let Some(e) = &report.error {
        text.push_str(&format!("\nError: {e}\n"));
    }
    text.push_str(&format!("\nSummary:\n{}\n{rule}", report.summary_line()));
    match answer {
        Some(answer) => {
            printer.banner(&text);
            printer.data(answer.trim_end());
        }
        None => printer.data(&text),
    }
}

/// The first failed files with their reasons.
fn failure_lines(report: &RunReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .failed
        .iter()
        .take(FAILURES_SHOWN)
        .map(|f| format!("  {}: {}", escape::name(&f.path), f.reason))
        .collect();
    if report.failed.len() > FAILURES_SHOWN {
        lines.push(format!(
            "  … {} more in the report",
            report.failed.len() - FAILURES_SHOWN
        ));
    }
    lines
}
