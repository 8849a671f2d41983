//! What `rlm status [RUN] [--tree] [--json]` and `rlm list [--json]` print, made from the
//! store's answers. Pure: text in, text out; the caller's Printer puts it on stdout.

use std::fmt::Write;
use std::time::Duration;

use serde::Serialize;

use super::batch_submissions::{BatchIntent, BatchSubmission};
use super::lifecycle::UnitState;
use super::liveness::Liveness;
use super::summary::{Failure, RunSummary, RunTree};
use super::timestamp::Timestamp;
use crate::money::usd as dollars;

/// Longest command shown in `rlm list` before it is cut (the JSON has it whole).
const LIST_COMMAND_WIDTH: usize = 60;

/// A run as JSON: its summary, plus the status people should read and the ETA.
#[derive(Serialize)]
struct RunView<'a> {
    #[serde(flatten)]
    run: &'a RunSummary,
    /// `CRASHED` or `STALLED` where `status` still says `RUNNING`.
    display_status: &'static str,
    eta_seconds: Option<u64>,
}

impl<'a> RunView<'a> {
    fn new(run: &'a RunSummary, now: Timestamp) -> Self {
        RunView {
            run,
            display_status: run.display_status(),
            eta_seconds: run.eta(now).map(|d| d.as_secs()),
        }
    }
}

#[derive(Serialize)]
struct StatusView<'a> {
    #[serde(flatten)]
    run: RunView<'a>,
    /// Units that failed or timed out.
    failures: &'a [&'a Failure],
    /// Units the run never finished (interrupted, or not run after a stop).
    cancelled: &'a [&'a Failure],
    /// Its batches at a provider's batch API (`--batch-api`), as last polled.
    #[serde(skip_serializing_if = "<[BatchSubmission]>::is_empty")]
    batches: &'a [BatchSubmission],
    /// Submissions whose create reply was lost: the provider may have made a batch of them.
    #[serde(skip_serializing_if = "<[BatchIntent]>::is_empty")]
    unresolved_submissions: &'a [BatchIntent],
}

#[derive(Serialize)]
struct TreeView<'a> {
    #[serde(flatten)]
    run: RunView<'a>,
    children: Vec<TreeView<'a>>,
}

impl<'a> TreeView<'a> {
    fn new(tree: &'a RunTree, now: Timestamp) -> Self {
        TreeView {
            run: RunView::new(&tree.run, now),
            children: tree.children.iter().map(|c| TreeView::new(c, now)).collect(),
        }
    }
}

/// `rlm status RUN`: the run, its unit counts, spend, ETA, its batches at the provider as
/// last polled (no network call), and failures.
pub fn status_text(
    run: &RunSummary,
    failures: &[Failure],
    (batches, unresolved): (&[BatchSubmission], &[BatchIntent]),
    now: Timestamp,
) -> String {
    let mut out = String::new();
    let owner = match &run.owner {
        Some(o) if o.liveness == Liveness::Gone => {
            // A job goes on with its own resume (as `rlm resume` says when given one).
            let resume = if run.subcommand() == Some("job") {
                "rlm job resume"
            } else {
                "rlm resume"
            };
            format!(" (its rlm process {} is gone; `{resume} {}` goes on)", o.pid, run.id)
        }
        Some(o) if o.liveness == Liveness::Stalled => {
            let age = o
                .heartbeat_at
                .map_or_else(|| "long".to_string(), |at| duration(now.since(at)));
            format!(" (rlm process {}, no heartbeat for {age})", o.pid)
        }
        Some(o) => format!(" (rlm process {})", o.pid),
        None => match &run.superseded_by {
            Some(by) => format!(" (run {by} took over its output directory: it cannot be resumed)"),
            None => String::new(),
        },
    };
    let _ = writeln!(out, "run       {}  {}{owner}", run.id, run.display_status());
    let _ = writeln!(out, "command   {}", shell_words(&run.command));
    if let Some(parent) = &run.parent {
        let _ = writeln!(out, "parent    {parent} (depth {})", run.depth);
    }
    let started = run.started_at.unwrap_or(run.created_at);
    let _ = writeln!(out, "started   {} UTC", started.to_minutes());
    if let Some(finished) = run.finished_at {
        let _ = writeln!(out, "finished  {} UTC", finished.to_minutes());
    }
    let _ = writeln!(out, "units     {}", unit_counts(run));
    let _ = writeln!(
        out,
        "cost      {} · {} tokens in · {} tokens out",
        dollars(run.cost_usd),
        thousands(run.tokens_in),
        thousands(run.tokens_out)
    );
    if run.attempts > 1 {
        let resumes = match run.attempts - 1 {
            1 => "1 resume".to_string(),
            n => format!("{n} resumes"),
        };
        let _ = writeln!(
            out,
            "attempts  {} (the start and {resumes}) · ran {} in all",
            run.attempts,
            duration(Duration::from_millis(run.elapsed_ms))
        );
    }
    if let Some(eta) = run.eta(now) {
        let _ = writeln!(out, "eta       about {}", duration(eta));
    }
    let _ = writeln!(out, "output    {}", run.output_dir.display());
    if run.not_cached > 0 {
        let _ = writeln!(
            out,
            "uncached  {} {} paid for but not cached: kept in {}; `rlm resume {}` caches {}",
            run.not_cached,
            if run.not_cached == 1 { "answer" } else { "answers" },
            run.output_dir.join("pending-cache").display(),
            run.id,
            if run.not_cached == 1 { "it" } else { "them" },
        );
    }
    batches_text(&mut out, batches, now);
    unresolved_text(&mut out, &run.id, unresolved);
    // A unit the run never finished (an interrupt, a budget) is not a failure (issue 17).
    let (cancelled, failed): (Vec<&Failure>, Vec<&Failure>) =
        failures.iter().partition(|f| f.state == UnitState::Cancelled);
    if !failed.is_empty() {
        let _ = writeln!(out, "\nfailures ({})", failed.len());
        for f in failed {
            let reason = f.reason.as_deref().unwrap_or("no reason recorded");
            let tries = if f.attempts == 1 { "attempt" } else { "attempts" };
            let _ = writeln!(out, "  {}  {} after {} {tries}: {reason}", f.label, f.state, f.attempts);
        }
    }
    cancelled_text(&mut out, &cancelled);
    out
}

/// Units shown by name under each reason they were cancelled for (the JSON has them all).
const CANCELLED_SHOWN: usize = 5;

/// The cancelled units, grouped by why (`cancelled (12): not finished: the run was
/// interrupted …`), the first few of each named.
fn cancelled_text(out: &mut String, cancelled: &[&Failure]) {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for f in cancelled {
        let reason = f.reason.as_deref().unwrap_or("no reason recorded");
        match reasons.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, labels)) => labels.push(&f.label),
            None => reasons.push((reason, vec![&f.label])),
        }
    }
    for (reason, labels) in reasons {
        let _ = writeln!(out, "\ncancelled ({}): {reason}", labels.len());
        for label in labels.iter().take(CANCELLED_SHOWN) {
            let _ = writeln!(out, "  {label}");
        }
        if labels.len() > CANCELLED_SHOWN {
            let _ = writeln!(out, "  … {} more", labels.len() - CANCELLED_SHOWN);
        }
    }
}

/// The run's batches: a summary line, then one line per batch (the newest
/// [`BATCHES_SHOWN`]).
fn batches_text(out: &mut String, batches: &[BatchSubmission], now: Timestamp) {
    if batches.is_empty() {
        return;
    }
    let (mut done, mut errored, mut total) = (0, 0, 0);
    let mut waiting = 0;
    for b in batches {
        total += b.request_count;
        done += b.counts.done().min(b.request_count);
        errored += b.counts.errored + b.counts.expired;
        waiting += usize::from(b.collected_at.is_none());
    }
    let polled = batches.iter().filter_map(|b| b.polled_at).max();
    let last = polled.map_or_else(
        || "not polled yet".to_string(),
        |at| format!("last polled {} UTC ({} ago)", at.to_minutes(), duration(now.since(at))),
    );
    // Each batch is collected at its own server: name it where they differ.
    let one_server = batches.iter().all(|b| b.server == batches[0].server);
    let at = if one_server {
        batches[0].server.clone()
    } else {
        let mut servers: Vec<&str> = batches.iter().map(|b| b.server.as_str()).collect();
        servers.sort_unstable();
        servers.dedup();
        format!("{} servers", servers.len())
    };
    let _ = writeln!(
        out,
        "batches   {} at {at} ({} waiting) · {done}/{total} done, {errored} errored · {last}",
        batches.len(),
        waiting,
    );
    if batches.len() > BATCHES_SHOWN {
        let _ = writeln!(out, "  … {} earlier batches", batches.len() - BATCHES_SHOWN);
    }
    for b in batches.iter().skip(batches.len().saturating_sub(BATCHES_SHOWN)) {
        let state = match (b.collected_at, b.cancel_requested_at) {
            (Some(_), _) => "collected".to_string(),
            (None, Some(_)) => format!("cancel asked; {}", b.status),
            (None, None) => b.status.to_string(),
        };
        let polls = match b.polls {
            0 => "not polled".to_string(),
            1 => "polled once".to_string(),
            n => format!("polled {n} times"),
        };
        let server = if one_server {
            String::new()
        } else {
            format!(" at {}", b.server)
        };
        let _ = writeln!(
            out,
            "  {}{server}  {state}  {}  {}/{} done, {} errored, {} expired, {} canceled · {polls}",
            b.batch_id,
            b.phase,
            b.counts.done().min(b.request_count),
            b.request_count,
            b.counts.errored,
            b.counts.expired,
            b.counts.canceled,
        );
    }
}

/// Submissions whose create reply never came back (a reset, a 5xx, a kill mid-request): the
/// provider may be running a batch of them that the store does not know yet.
fn unresolved_text(out: &mut String, run: &super::RunId, unresolved: &[BatchIntent]) {
    for i in unresolved {
        let _ = writeln!(
            out,
            "unsure    a submission of {} {} at {} ({} UTC, {}) got no reply: the provider may be running it; \
             `rlm resume {run}` looks for it there before sending anything again",
            i.request_count,
            if i.request_count == 1 { "request" } else { "requests" },
            i.server,
            i.recorded_at.to_minutes(),
            i.phase,
        );
    }
}

/// Batch lines `rlm status` shows (the JSON has them all).
const BATCHES_SHOWN: usize = 10;

/// `rlm status RUN --json`.
pub fn status_json(
    run: &RunSummary,
    failures: &[Failure],
    (batches, unresolved_submissions): (&[BatchSubmission], &[BatchIntent]),
    now: Timestamp,
) -> String {
    let (cancelled, failures): (Vec<&Failure>, Vec<&Failure>) =
        failures.iter().partition(|f| f.state == UnitState::Cancelled);
    let view = StatusView {
        run: RunView::new(run, now),
        failures: &failures,
        cancelled: &cancelled,
        batches,
        unresolved_submissions,
    };
    serde_json::to_string_pretty(&view).unwrap_or_default()
}

/// `rlm list`: one line per run, newest first (as given). FAILED counts the units that
/// failed or timed out, CANCELLED those not run to an end (interrupted, or kept from
/// running by a stop): the counts `rlm status` and `list --json` give.
pub fn list_text(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs yet; `rlm batch` starts one\n".to_string();
    }
    let header = [
        "ID",
        "STATUS",
        "STARTED (UTC)",
        "UNITS",
        "FAILED",
        "CANCELLED",
        "COST",
        "COMMAND",
    ];
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.id.to_string(),
                r.display_status().to_string(),
                r.started_at.unwrap_or(r.created_at).to_minutes(),
                format!("{}/{}", r.units.completed, r.units.total()),
                r.units.failed_for_good().to_string(),
                r.units.cancelled.to_string(),
                dollars(r.cost_usd),
                cut(&shell_words(&r.command), LIST_COMMAND_WIDTH),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_string));
    for row in &rows {
        line(row);
    }
    out
}

/// `rlm list --json`: an array of runs.
pub fn list_json(runs: &[RunSummary], now: Timestamp) -> String {
    let views: Vec<RunView<'_>> = runs.iter().map(|r| RunView::new(r, now)).collect();
    serde_json::to_string_pretty(&views).unwrap_or_default()
}

/// `rlm status RUN --tree`: the recursion tree, each node with its state and cost.
pub fn tree_text(tree: &RunTree) -> String {
    let mut out = String::new();
    tree_node(&mut out, tree, "", "");
    out
}

fn tree_node(out: &mut String, node: &RunTree, lead: &str, child_lead: &str) {
    let run = &node.run;
    let _ = writeln!(
        out,
        "{lead}{}  {}  {}/{} units  {}",
        run.id,
        run.display_status(),
        run.units.completed,
        run.units.total(),
        dollars(run.cost_usd)
    );
    for (i, child) in node.children.iter().enumerate() {
        let last = i + 1 == node.children.len();
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        tree_node(
            out,
            child,
            &format!("{child_lead}{branch}"),
            &format!("{child_lead}{next}"),
        );
    }
}

/// `rlm status RUN --tree --json`: nested runs with a `children` array each.
pub fn tree_json(tree: &RunTree, now: Timestamp) -> String {
    serde_json::to_string_pretty(&TreeView::new(tree, now)).unwrap_or_default()
}

/// `100: 60 completed, 10 running, 25 queued, 3 failed, 2 timed out` (zero counts left out).
fn unit_counts(run: &RunSummary) -> String {
    let order = [
        UnitState::Completed,
        UnitState::Running,
        UnitState::Queued,
        UnitState::Failed,
        UnitState::TimedOut,
        UnitState::Cancelled,
    ];
    let parts: Vec<String> = order
        .into_iter()
        .filter(|&s| run.units.get(s) > 0)
        .map(|s| format!("{} {}", thousands(run.units.get(s)), s.name().replace('_', " ")))
        .collect();
    if parts.is_empty() {
        return "none yet".to_string();
    }
    format!("{}: {}", thousands(run.units.total()), parts.join(", "))
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `35s`, `4m 10s`, `2h 5m`: whole seconds ([`crate::duration::format_duration`]).
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else {
        crate::duration::format_duration(s.saturating_mul(1000))
    }
}

/// The argv as a person would type it: plain words bare, others in single quotes.
fn shell_words(argv: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./=:@%+,-".contains(c);
    argv.iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(plain) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// At most `width` characters, the cut marked with `…`.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
