//! What a run says: the start-up banner, the dry-run plan, and the completion summary.
//! Rendering only; everything is printed through the run's [`Printer`].

use super::estimate::Estimate;
use super::planning::Plan;
use crate::duration::format_duration;
use crate::error::ExitStatus;
use crate::escape;
use crate::printer::Printer;
use crate::prompt;
use crate::provider::catalog::PriceTier;
use crate::report::{Gate, RunReport, RunStatus};
use crate::settings::BatchSettings;
use crate::unit::{UnitBody, WorkUnit};

/// Prompts longer than this are shortened on the banner.
const PROMPT_SHOWN: usize = 160;
/// Failed files listed on the terminal (the report has them all).
const FAILURES_SHOWN: usize = 5;

/// The seed's "RLM Batch Initialized" block.
pub fn init_block(settings: &BatchSettings, plan: &Plan) -> String {
    let Plan {
        model,
        manifest,
        pre,
        estimate,
        units,
        ..
    } = plan;
    let not_sent = manifest.skipped.len() + manifest.unreadable.len();
    let skipped = if not_sent == 0 {
        String::new()
    } else {
        format!(" ({not_sent} not sent: binary, empty, unreadable, outside the searched directory or over --max-files)")
    };
    let cost = if model.is_free() {
        model.cost_text(0.0)
    } else if estimate.price_tier == PriceTier::Batch {
        let which = if plan.delivery.aggregate_tier() == PriceTier::Batch || estimate.aggregate_calls == 0 {
            ""
        } else {
            " for the per-unit calls"
        };
        format!("{} at batch price (half of list{which})", model.cost_text(estimate.usd))
    } else {
        model.cost_text(estimate.usd)
    };
    let mut units_line = if units.len() == manifest.files.len() && settings.input.shard.is_none() {
        String::new()
    } else {
        match units.len() {
            0 => "Units: 0\n".to_string(),
            n => format!("Units: {n} ({})\n", unit_breakdown(units)),
        }
    };
    if let Some(shard) = settings.input.shard {
        units_line.push_str(&format!(
            "Shard: {shard} ({} of the plan's {} units; plan {})\n",
            units.len(),
            plan.plan_units,
            plan.plan_id
        ));
    }
    format!(
        "RLM Batch Initialized\nPattern: {}\nFiles matched: {}{skipped}\n{units_line}Sub-prompt: {}\nModel: {} ({} at {})\n\
         Max parallel: {}\nAggregate: {}\nCache: {}{}\n\
         Estimated cost: {cost} ({}, ~{} input tokens{}{}, ~{} output tokens)\n",
        escape::name(&settings.input.pattern),
        manifest.matched(),
        prompt::shorten(&settings.task.sub_prompt, PROMPT_SHOWN),
        model.id,
        settings.provider.kind.name(),
        settings.provider.shown_base_url(),
        settings.exec.parallelism.width,
        settings.task.aggregate.name(),
        cache_text(settings, plan),
        if pre.blocked.is_empty() {
            String::new()
        } else {
            format!(", {} too large to send", pre.blocked.len())
        },
        calls_text(estimate),
        estimate.input_tokens,
        framing_text(estimate),
        if estimate.cache_read_tokens > 0 {
            format!(" of which ~{} read from the prompt cache", estimate.cache_read_tokens)
        } else {
            String::new()
        },
        estimate.output_tokens,
    )
}

/// `rlm query`'s opening lines: the file, the model, what it will cost — no batch words
/// (pattern, parallelism, aggregate) for a question about one file.
pub fn query_block(settings: &BatchSettings, plan: &Plan) -> String {
    let Plan {
        model,
        manifest,
        estimate,
        units,
        ..
    } = plan;
    let file = manifest
        .files
        .first()
        .map_or_else(|| settings.input.pattern.clone(), |f| f.display.to_string());
    let read_in = match units.len() {
        1 => String::new(),
        n => format!(" (read in {n} parts)"),
    };
    let cached = match plan.pre.hits.len() {
        0 => String::new(),
        n => format!(", {n} answered from the cache"),
    };
    format!(
        "rlm query: {}{read_in}\nQuestion: {}\nModel: {} ({} at {})\nEstimated cost: {} ({}{cached})\n",
        escape::name(&file),
        prompt::shorten(&settings.task.sub_prompt, PROMPT_SHOWN),
        model.id,
        settings.provider.kind.name(),
        settings.provider.shown_base_url(),
        model.cost_text(estimate.usd),
        calls_text(estimate),
    )
}

/// `3 hits, 2 misses`; on a resume, the answers earlier attempts of the run paid for are
/// said apart (`0 hits, 1 miss, 4 answered by earlier attempts`): they are the run's own,
/// and the completion block counts them so too.
fn cache_text(settings: &BatchSettings, plan: &Plan) -> String {
    let earlier = settings.resume.as_ref().map_or(0, |target| {
        plan.pre
            .hits
            .iter()
            .filter(|(i, _)| target.earlier_completed.contains(plan.units[*i].id.as_str()))
            .count()
    });
    let hits = plan.pre.hits.len() - earlier;
    let misses = plan.pre.misses.len();
    let mut text = format!(
        "{hits} hit{}, {misses} miss{}",
        if hits == 1 { "" } else { "s" },
        if misses == 1 { "" } else { "es" }
    );
    if earlier > 0 {
        text.push_str(&format!(", {earlier} answered by earlier attempts"));
    }
    text
}

/// `12 calls` or `12 calls: 10 per unit, 2 to aggregate`.
pub fn calls_text(estimate: &Estimate) -> String {
    let plural = |n: usize| if n == 1 { "call" } else { "calls" };
    if estimate.aggregate_calls == 0 {
        format!("{} {}", estimate.calls, plural(estimate.calls))
    } else {
        format!(
            "{} {}: {} per unit, {} to aggregate",
            estimate.calls,
            plural(estimate.calls),
            estimate.calls - estimate.aggregate_calls,
            estimate.aggregate_calls
        )
    }
}

/// ` (~C of the files' content, ~F framing)`: how much of the per-unit calls' input is what
/// the run is about, and how much the prompts around it (empty when nothing is called).
pub fn framing_text(estimate: &Estimate) -> String {
    if estimate.content_tokens + estimate.framing_tokens == 0 {
        return String::new();
    }
    format!(
        " (~{} of the files' content, ~{} framing)",
        estimate.content_tokens, estimate.framing_tokens
    )
}

/// `3 whole files, 14 chunks, 2 batches`.
pub fn unit_breakdown(units: &[WorkUnit]) -> String {
    let (mut whole, mut chunks, mut batches) = (0, 0, 0);
    for u in units {
        match &u.body {
            UnitBody::Batch(_) => batches += 1,
            _ if u.inputs.first().is_some_and(|i| i.span.is_some()) => chunks += 1,
            _ => whole += 1,
        }
    }
    let mut parts = Vec::new();
    for (n, one, many) in [
        (whole, "whole file", "whole files"),
        (chunks, "chunk", "chunks"),
        (batches, "batch", "batches"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    }
    parts.join(", ")
}

/// The seed's completion block on stdout (the report with `--json`, the aggregate's path
/// with `--quiet`), and the failures on stderr, which `--quiet` never hides.
/// With an `answer` (`rlm query`), stdout holds only the answer and the completion block
/// goes to stderr. The `--json` document carries `exit`, the code the process ends with, as
/// every other document on stdout does (an error's, a job's).
pub fn completion(printer: &Printer, report: &RunReport, exit: ExitStatus, quiet: bool, answer: Option<&str>) {
    if report.status != RunStatus::Success && (quiet || printer.mode().json) {
        if let Some(e) = &report.error {
            printer.error(e);
        }
        for line in failure_lines(report) {
            printer.important(&line);
        }
    }
    if quiet || printer.mode().json {
        // A run that succeeded but exits 1: say why where `--quiet` leaves only stderr.
        if let Some(line) = gate_line(report) {
            printer.important(&line);
        }
    }
    if printer.mode().json {
        // The report and its exit code; `rlm query --json`: the answer itself beside them.
        #[derive(serde::Serialize)]
        struct Document<'a> {
            #[serde(flatten)]
            report: &'a RunReport,
            exit_code: u8,
            #[serde(skip_serializing_if = "Option::is_none")]
            answer: Option<&'a str>,
        }
        printer.json(&Document {
            report,
            exit_code: exit.code(),
            answer,
        });
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
    // `rlm query` asked about one file: its pattern is that file's name, escaped as a glob.
    let (what, input) = match answer {
        Some(_) => (
            "RLM Query",
            format!("File: {}", escape::name(&unescape_glob(&report.pattern))),
        ),
        None => ("RLM Batch", format!("Pattern: {}", escape::name(&report.pattern))),
    };
    let mut text = format!(
        "{rule}\n{what}: {}\n{rule}\n\n{input}\nFiles processed: {}/{} ({} from cache{})\n",
        report.status.name(),
        report.files_succeeded,
        report.files_matched,
        report.files_from_cache,
        match report.files_answered_earlier {
            0 => String::new(),
            n => format!(", {n} answered by earlier attempts"),
        }
    );
    if !report.not_run.is_empty() {
        text.push_str(&format!("Not run: {}\n", report.not_run.len()));
    }
    if !report.failed.is_empty() {
        text.push_str(&format!("Failed: {}\n", report.failed.len()));
        for line in failure_lines(report) {
            text.push_str(&format!("{line}\n"));
        }
    }
    if !report.skipped.is_empty() {
        text.push_str(&format!("Skipped: {}\n", report.skipped.len()));
    }
    if let Some(line) = gate_line(report) {
        text.push_str(&format!("{line}\n"));
    }
    text.push_str(&format!(
        "Duration: {}\nTokens: {} in{}, {} out{} ({} saved by the cache)\nTotal cost: {}\n\n",
        format_duration(report.duration_ms),
        report.tokens_in,
        if report.content_tokens + report.framing_tokens > 0 {
            format!(
                " ({} of the files' content, {} framing)",
                report.content_tokens, report.framing_tokens
            )
        } else {
            String::new()
        },
        report.tokens_out,
        // A resume's tokens are its own; its cost below is the whole run's.
        if report.earlier_answers > 0 || report.earlier_cost_usd > 0.0 {
            " in this attempt"
        } else {
            ""
        },
        report.tokens_saved,
        report.total_cost_text(),
    ));
    if let Some(cache) = report.prompt_cache_text() {
        // Before the blank line that ends the figures.
        text.truncate(text.trim_end().len());
        text.push_str(&format!("\nPrompt cache: {cache}\n\n"));
    }
    if let Some(p) = &report.aggregate_path {
        text.push_str(&format!("Results: {p}\n"));
    }
    text.push_str(&format!("Report: {}\n", report.report_path));
    if let Some(e) = &report.error {
        text.push_str(&format!("\nError: {e}\n"));
    }
    if let Some(next) = report.resume_step() {
        text.push_str(&format!("\nNext: {next}\n"));
    }
    text.push_str(&format!("\nSummary:\n{}\n", report.summary_line()));
    if let Some(caution) = &report.model_caution {
        text.push_str(&format!("Note: {caution}\n"));
    }
    text.push_str(rule);
    match answer {
        Some(answer) => {
            printer.banner(&text);
            printer.data(answer.trim_end());
        }
        None => printer.data(&text),
    }
}

/// A glob that matches only one path (`rlm query`'s, `src/\[a\].ts`) as that path.
fn unescape_glob(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len());
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// `--fail-on` failed the run: the gate and how many findings reached it (a run whose
/// every unit succeeded says SUCCESS and exits 1; this line says why).
fn gate_line(report: &RunReport) -> Option<String> {
    if report.gate != Some(Gate::Failed) {
        return None;
    }
    let why = report
        .findings
        .as_ref()
        .and_then(|f| f.failed_on.as_deref())
        .unwrap_or("a finding reached --fail-on");
    Some(format!("Gate failed: {why}"))
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
