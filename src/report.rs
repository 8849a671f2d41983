//! The completion report: `report.json` in the output directory and the seed's markdown
//! report at `.aiwg/rlm/batch-{timestamp}-report.md`.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::ExitStatus;
use crate::input::SkippedFile;
use crate::provider::Usage;

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RunStatus {
    Success,
    Partial,
    Failed,
    Interrupted,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Success => "SUCCESS",
            RunStatus::Partial => "PARTIAL",
            RunStatus::Failed => "FAILED",
            RunStatus::Interrupted => "INTERRUPTED",
        }
    }

    pub fn exit_status(self) -> ExitStatus {
        match self {
            RunStatus::Success => ExitStatus::Success,
            RunStatus::Partial => ExitStatus::Partial,
            RunStatus::Failed => ExitStatus::Failed,
            RunStatus::Interrupted => ExitStatus::Interrupted,
        }
    }
}

/// What became of one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    Succeeded,
    Failed,
    /// Never finished: the run was interrupted or stopped first.
    NotRun,
}

/// One unit in the report.
#[derive(Debug, Clone, Serialize)]
pub struct UnitRecord {
    pub path: String,
    pub status: UnitStatus,
    /// Relative to the output directory.
    pub result_file: Option<String>,
    /// Served from the cache (no call made, `tokens_*` are zero).
    pub cached: bool,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cached_input_tokens: u64,
    /// Tokens a cache hit saved.
    pub tokens_saved: u64,
    pub attempts: u32,
    pub duration_ms: u64,
    pub truncated: bool,
    pub cost_usd: f64,
    pub reason: Option<String>,
}

impl UnitRecord {
    pub fn new(path: &str) -> Self {
        UnitRecord {
            path: path.to_string(),
            status: UnitStatus::NotRun,
            result_file: None,
            cached: false,
            tokens_in: 0,
            tokens_out: 0,
            cached_input_tokens: 0,
            tokens_saved: 0,
            attempts: 0,
            duration_ms: 0,
            truncated: false,
            cost_usd: 0.0,
            reason: None,
        }
    }
}

/// One aggregation call (summarize) in the report.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub label: String,
    pub usage: Usage,
    /// What a cache hit saved.
    pub saved: Usage,
    pub cached: bool,
    pub attempts: u32,
    pub truncated: bool,
    pub duration_ms: u64,
}

/// A file that failed, with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct FailedFile {
    pub path: String,
    pub reason: String,
}

/// Everything `report.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub status: RunStatus,
    pub pattern: String,
    pub sub_prompt: String,
    pub model: String,
    pub provider: String,
    pub aggregate: String,
    pub max_parallel: usize,
    pub files_matched: usize,
    pub succeeded: usize,
    pub failed: Vec<FailedFile>,
    pub skipped: Vec<SkippedFile>,
    pub not_run: Vec<String>,
    pub truncated: Vec<String>,
    pub cache_hits: usize,
    pub cache_misses: usize,
    pub tokens_saved: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    pub estimated_cost_usd: f64,
    /// False when the model is not in the price table (costs are then reported as 0).
    pub price_known: bool,
    pub duration_ms: u64,
    pub started_at: String,
    pub finished_at: String,
    pub output_dir: String,
    pub aggregate_path: Option<String>,
    pub aggregate_json_path: Option<String>,
    pub report_path: String,
    /// Why the run stopped early or the aggregate is not what was asked for.
    pub error: Option<String>,
    pub warnings: Vec<String>,
    pub units: Vec<UnitRecord>,
    pub aggregate_calls: Vec<CallRecord>,
}

impl RunReport {
    /// The run's status from its counts (see the README's exit codes).
    pub fn decide_status(&self, interrupted: bool, fatal: bool) -> RunStatus {
        if interrupted {
            RunStatus::Interrupted
        } else if fatal || self.succeeded == 0 {
            RunStatus::Failed
        } else if !self.failed.is_empty() || !self.not_run.is_empty() || self.error.is_some() {
            RunStatus::Partial
        } else {
            RunStatus::Success
        }
    }

    /// The seed's markdown completion report.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = write!(
            md,
            "# RLM Batch Completion Report\n\n\
             **Pattern**: {}\n**Sub-Prompt**: {}\n**Status**: {}\n**Files Processed**: {}\n\
             **Duration**: {}\n**Model**: {} ({})\n**Aggregate Strategy**: {}\n\n",
            self.pattern,
            self.sub_prompt,
            self.status.name(),
            self.succeeded,
            format_duration(self.duration_ms),
            self.model,
            self.provider,
            self.aggregate,
        );
        let _ = write!(md, "## Summary\n\n{}\n\n", self.summary_line());
        let _ = write!(
            md,
            "## Statistics\n\n\
             - Total files matched: {}\n- Successfully processed: {}\n- Failed: {}\n- Skipped: {}\n\
             - Not run: {}\n- Truncated results: {}\n- Cache hits: {}\n- Cache misses: {}\n\
             - Tokens saved by the cache: {}\n- Total tokens used: {} ({} in, {} out)\n- Total cost: {}\n\
             - Estimated cost before the run: {}\n- Max parallel: {}\n\n",
            self.files_matched,
            self.succeeded,
            self.failed.len(),
            self.skipped.len(),
            self.not_run.len(),
            self.truncated.len(),
            self.cache_hits,
            self.cache_misses,
            self.tokens_saved,
            self.tokens_in + self.tokens_out,
            self.tokens_in,
            self.tokens_out,
            self.cost_text(self.cost_usd),
            self.cost_text(self.estimated_cost_usd),
            self.max_parallel,
        );
        md.push_str("## Failed Files\n\n");
        if self.failed.is_empty() {
            md.push_str("None.\n");
        }
        for f in &self.failed {
            let _ = writeln!(md, "- {}: {}", f.path, f.reason);
        }
        if !self.skipped.is_empty() {
            md.push_str("\n## Skipped Files\n\n");
            for s in &self.skipped {
                let _ = writeln!(md, "- {}: {}", s.path, s.reason);
            }
        }
        if !self.truncated.is_empty() {
            md.push_str("\n## Truncated Results\n\nThese answers hit the output-token limit (--max-tokens):\n\n");
            for t in &self.truncated {
                let _ = writeln!(md, "- {t}");
            }
        }
        if !self.not_run.is_empty() {
            let _ = write!(
                md,
                "\n## Not Run\n\n{} files were not processed before the run stopped.\n",
                self.not_run.len()
            );
        }
        if let Some(e) = &self.error {
            let _ = write!(md, "\n## Error\n\n{e}\n");
        }
        if !self.warnings.is_empty() {
            md.push_str("\n## Warnings\n\n");
            for w in &self.warnings {
                let _ = writeln!(md, "- {w}");
            }
        }
        let _ = write!(md, "\n## Output Location\n\nResults: {}/\n", self.output_dir);
        match &self.aggregate_path {
            Some(p) => {
                let _ = writeln!(md, "Aggregate: {p}");
            }
            None => md.push_str("Aggregate: none (no file succeeded)\n"),
        }
        if let Some(p) = &self.aggregate_json_path {
            let _ = writeln!(md, "Aggregate (JSON): {p}");
        }
        let _ = write!(md, "\n## Next Steps\n\n");
        for step in self.next_steps() {
            let _ = writeln!(md, "- {step}");
        }
        md
    }

    /// One sentence on what the run did.
    pub fn summary_line(&self) -> String {
        let calls = self.units.iter().filter(|u| !u.cached && u.attempts > 0).count()
            + self.aggregate_calls.iter().filter(|c| !c.cached).count();
        format!(
            "Processed {} of {} matched files with {} ({} from the cache, {} model calls); {} failed, {} skipped{}.",
            self.succeeded,
            self.files_matched,
            self.model,
            self.cache_hits,
            calls,
            self.failed.len(),
            self.skipped.len(),
            if self.truncated.is_empty() {
                String::new()
            } else {
                format!(", {} truncated", self.truncated.len())
            }
        )
    }

    fn next_steps(&self) -> Vec<String> {
        let mut steps = Vec::new();
        if let Some(e) = &self.error {
            steps.push(format!("Fix the error above ({e}), then run the same command again."));
        }
        if !self.failed.is_empty() || !self.not_run.is_empty() {
            steps.push(format!(
                "Run the same command again: finished results are cached, so only the {} unfinished files are sent.",
                self.failed.len() + self.not_run.len()
            ));
        }
        if !self.truncated.is_empty() {
            steps.push(
                "Some answers were cut off: raise --max-tokens (cached answers are reused only up to the old limit)."
                    .into(),
            );
        }
        if let Some(p) = &self.aggregate_path {
            steps.push(format!("Read the aggregate: {p}"));
        }
        steps
    }

    fn cost_text(&self, usd: f64) -> String {
        format!("${usd:.4}{}", price_note(self.price_known, usd, &self.model))
    }
}

/// What a cost figure means when the model has no listed price: an upper bound on the
/// provider's own API (counted at the ceiling), nothing on another server.
pub fn price_note(price_known: bool, usd: f64, model: &str) -> String {
    let ceiling = crate::provider::catalog::CEILING_PRICE;
    match (price_known, usd > 0.0) {
        (true, _) => String::new(),
        (false, true) => format!(
            " (an upper bound: no price listed for {model}, counted at ${}/${} per million tokens; \
             add its price under rlm.prices in .aiwg/aiwg.config)",
            ceiling.input, ceiling.output
        ),
        (false, false) => format!(" (no price known for {model})"),
    }
}

/// `1m 05s`, `3.2s`, `850ms`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m {:02}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Replaces every occurrence of a secret with `[REDACTED]`: applied to everything rlm
/// writes, because an error body can echo what we sent.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.is_empty() && out.contains(s) {
            out = out.replace(s, "[REDACTED]");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(850), "850ms");
        assert_eq!(format_duration(3_250), "3.2s");
        assert_eq!(format_duration(65_000), "1m 05s");
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact("key sk-abc in body sk-abc", &["sk-abc"]),
            "key [REDACTED] in body [REDACTED]"
        );
    }
}
