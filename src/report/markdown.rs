//! The seed's markdown completion report, and the one-line summary.

use std::fmt::Write;

use super::RunReport;
use crate::duration::format_duration;
use crate::escape;
use crate::provider::catalog::PriceTier;
use crate::provider::model::{cost_text, PriceBasis};

impl RunReport {
    /// The seed's markdown completion report.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = write!(
            md,
            "# RLM Batch Completion Report\n\n\
             **Pattern**: {}\n**Sub-Prompt**: {}\n**Status**: {}{}\n**Files Processed**: {}/{}\n\
             **Duration**: {}\n**Model**: {} ({})\n**Aggregate Strategy**: {}\n\n",
            escape::name(&self.pattern),
            crate::prompt::shorten(&self.sub_prompt, 300),
            self.status.name(),
            match self.gate {
                Some(super::Gate::Failed) => "\n**Gate (--fail-on)**: failed",
                Some(super::Gate::Passed) => "\n**Gate (--fail-on)**: passed",
                None => "",
            },
            self.files_succeeded,
            self.files_matched,
            format_duration(self.duration_ms),
            self.model,
            self.provider,
            self.aggregate,
        );
        if let Some(caution) = &self.model_caution {
            let _ = write!(md, "> **Note:** {caution}\n\n");
        }
        let _ = write!(md, "## Summary\n\n{}\n\n", self.summary_line());
        let _ = write!(
            md,
            "## Statistics\n\n\
             - Total files matched: {}\n- Successfully processed: {}\n- Units succeeded: {}\n- Failed: {}\n- Skipped: {}\n\
             - Not run: {}\n- Truncated results: {}\n- Cache hits: {}\n- Cache misses: {}\n\
             - Tokens saved by the cache: {}\n- Total tokens used: {} ({} in, {} out)\n- Input of the per-unit calls: {} tokens of the files' \
             content, {} of framing\n- Total cost: {}\n\
             - Estimated cost before the run: {}\n- Max parallel: {}\n\n",
            self.files_matched,
            self.files_succeeded,
            self.units_text(),
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
            self.content_tokens,
            self.framing_tokens,
            self.total_cost_text(),
            self.cost_text(self.estimated_cost_usd),
            self.max_parallel,
        );
        if let Some(text) = self.prompt_cache_text() {
            // After the statistics' blank line: one more item of the list.
            md.truncate(md.trim_end().len());
            let _ = write!(md, "\n- Prompt cache: {text}\n\n");
        }
        md.push_str("## Failed Files\n\n");
        if self.failed.is_empty() {
            md.push_str("None.\n");
        }
        for f in &self.failed {
            let _ = writeln!(md, "- {}: {}", escape::name(&f.path), f.reason);
        }
        if !self.skipped.is_empty() {
            md.push_str("\n## Skipped Files\n\n");
            for s in &self.skipped {
                let _ = writeln!(md, "- {}: {}", escape::name(&s.path), s.reason);
            }
        }
        if !self.truncated.is_empty() {
            md.push_str("\n## Truncated Results\n\nThese answers hit the output-token limit (--max-tokens):\n\n");
            for t in &self.truncated {
                let _ = writeln!(md, "- {}", escape::name(t));
            }
        }
        if !self.not_run.is_empty() {
            const LISTED: usize = 20;
            let n = self.not_run.len();
            let were_not = if n == 1 {
                "1 unit was not".to_string()
            } else {
                format!("{n} units were not")
            };
            let _ = if self.merged_from.is_empty() {
                write!(
                    md,
                    "\n## Not Run\n\n{were_not} run before the run stopped (`rlm resume {}` runs {}):\n\n",
                    self.run_id,
                    if n == 1 { "it" } else { "them" },
                )
            } else {
                write!(
                    md,
                    "\n## Not Run\n\n{were_not} run: none of the merged runs holds {} (merge again with the run \
                     that does; is a shard's run missing?):\n\n",
                    if n == 1 { "it" } else { "them" },
                )
            };
            for label in self.not_run.iter().take(LISTED) {
                let _ = writeln!(md, "- {}", escape::name(label));
            }
            if n > LISTED {
                let _ = writeln!(md, "- … and {} more (report.json lists them all)", n - LISTED);
            }
        }
        if let Some(dir) = self.pending_cache_dir.as_ref().filter(|_| !self.not_cached.is_empty()) {
            let _ = write!(
                md,
                "\n## Not Cached\n\nThese answers were paid for, but the cache could not take them; they are kept in \
                 {dir}/ (and in their result files) until `rlm resume {}` caches them:\n\n",
                self.run_id
            );
            for path in &self.not_cached {
                let _ = writeln!(md, "- {}", escape::name(path));
            }
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
        if let Some(f) = &self.findings {
            let _ = writeln!(
                md,
                "Findings: {} error, {} warning, {} note{}",
                f.error,
                f.warning,
                f.note,
                f.sarif.as_deref().map(|p| format!(" (SARIF: {p})")).unwrap_or_default()
            );
            if let Some(why) = &f.failed_on {
                let _ = writeln!(md, "Failed on: {why}");
            }
        }
        let _ = write!(md, "\n## Next Steps\n\n");
        for step in self.next_steps() {
            let _ = writeln!(md, "- {step}");
        }
        md
    }

    /// One sentence on what the run did.
    /// What the provider's prompt cache did, when it did anything: `12000 tokens read and
    /// 1500 written by the provider's prompt cache, saving $0.0123`.
    pub fn prompt_cache_text(&self) -> Option<String> {
        if self.cache_read_tokens == 0 && self.cache_write_tokens == 0 {
            return None;
        }
        let money = match self.price_basis {
            crate::provider::model::PriceBasis::Listed | crate::provider::model::PriceBasis::Ceiling => {
                if self.prompt_cache_saved_usd >= 0.0 {
                    format!(", saving {}", crate::money::usd(self.prompt_cache_saved_usd))
                } else {
                    format!(
                        ", costing {} more (a prefix written is cheaper only once it is read back)",
                        crate::money::usd(-self.prompt_cache_saved_usd)
                    )
                }
            }
            _ => String::new(),
        };
        Some(format!(
            "{} tokens read and {} written by the provider's prompt cache{money}",
            self.cache_read_tokens, self.cache_write_tokens
        ))
    }

    /// "26 of 26 planned", and how many batch members were asked again alone.
    fn units_text(&self) -> String {
        let alone = match self.asked_alone {
            0 => String::new(),
            1 => " (and 1 batch member asked again alone)".to_string(),
            n => format!(" (and {n} batch members asked again alone)"),
        };
        format!("{} of {} planned{alone}", self.succeeded, self.units_planned)
    }

    pub fn summary_line(&self) -> String {
        let calls = self.units.iter().filter(|u| !u.cached && u.attempts > 0).count()
            + self.aggregate_calls.iter().filter(|c| !c.cached).count();
        let earlier = match self.files_answered_earlier {
            0 => String::new(),
            n => format!(", {n} answered by earlier attempts"),
        };
        let not_run = match self.not_run.len() {
            0 => String::new(),
            n => format!(", {n} not run"),
        };
        format!(
            "Processed {} of {} matched files with {} ({} from the cache{earlier}, {} model call{}); {} failed, {} \
             skipped{not_run}{}.",
            self.files_succeeded,
            self.files_matched,
            self.model,
            self.files_from_cache,
            calls,
            if calls == 1 { "" } else { "s" },
            self.failed.len(),
            self.skipped.len(),
            if self.truncated.is_empty() {
                String::new()
            } else {
                format!(", {} truncated", self.truncated.len())
            }
        )
    }

    /// What to do next, true to how the run ended: answers kept outside the cache, and a
    /// budget or deadline that counts the whole run, are `rlm resume RUN`'s to take up — a
    /// plain rerun would start the budget and the deadline again.
    fn next_steps(&self) -> Vec<String> {
        use super::RunStatus;
        let mut steps = Vec::new();
        let unfinished = self.failed.len() + self.not_run.len();
        let run = &self.run_id;
        if !self.merged_from.is_empty() {
            // A merge sends nothing and `rlm resume` refuses it: the units it lacks are the
            // merged runs' to finish.
            if let Some(e) = &self.error {
                steps.push(format!("Fix the error above ({e}), then merge again."));
            }
            if unfinished > 0 {
                let (units, them) = match unfinished {
                    1 => ("1 unit is".to_string(), "it"),
                    n => (format!("{n} units are"), "them"),
                };
                steps.push(format!(
                    "{units} unfinished: finish {them} where the merged runs left {them} — `rlm resume RUN --failed` in \
                     a run that failed {them}, or the shard whose run is missing — then merge again."
                ));
            }
        } else if !self.not_cached.is_empty() {
            if let Some(e) = &self.error {
                steps.push(format!("Fix the error above ({e})."));
            }
            let rest = match self.not_run.len() {
                0 => String::new(),
                n => format!(", and sends only the {n} units not run"),
            };
            steps.push(format!(
                "Run `rlm resume {run}` once the cache has room: it caches the {} answers kept in {}/ without paying \
                 for them again{rest}.",
                self.not_cached.len(),
                self.pending_cache_dir
                    .as_deref()
                    .unwrap_or(crate::run_dir::PENDING_CACHE_DIR)
            ));
        } else if self.status == RunStatus::BudgetExceeded {
            steps.push(format!(
                "Run `rlm resume {run} --max-cost USD` with a higher budget (it counts the whole run, {} so far): \
                 finished results are cached, so only the {unfinished} unfinished units are sent.",
                crate::money::usd(self.cost_usd)
            ));
        } else if self.status == RunStatus::DeadlineExceeded {
            steps.push(format!(
                "Run `rlm resume {run} --deadline DURATION` with more time (it counts the whole run): finished results \
                 are cached, so only the {unfinished} unfinished units are sent."
            ));
        } else if self.status == RunStatus::Interrupted && !self.not_run.is_empty() {
            // Ctrl-C: the run goes on where it stopped, as the terminal summary says too.
            steps.push(format!(
                "Run `rlm resume {run}`: it sends only the {} not run; finished results are not paid for again.",
                match self.not_run.len() {
                    1 => "1 unit".to_string(),
                    n => format!("{n} units"),
                }
            ));
        } else {
            if let Some(e) = &self.error {
                steps.push(format!("Fix the error above ({e}), then run the same command again."));
            }
            if unfinished > 0 {
                steps.push(format!(
                    "Run the same command again: finished results are cached, so only the {unfinished} unfinished \
                     files are sent."
                ));
            }
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

    /// The `rlm resume RUN` that goes on with a run that stopped before every unit ran (or
    /// whose answers the cache could not take), for the terminal summary: report.md says it
    /// in its *Not Run* section, the terminal must too (issue 25).
    pub fn resume_step(&self) -> Option<String> {
        use super::RunStatus;
        let run = &self.run_id;
        let left = self.not_run.len();
        let units = |n: usize| {
            if n == 1 {
                "1 unit".to_string()
            } else {
                format!("{n} units")
            }
        };
        if left == 0 {
            return (!self.not_cached.is_empty())
                .then(|| format!("rlm resume {run} caches the answers kept outside the cache, without paying again"));
        }
        if !self.merged_from.is_empty() {
            // `rlm resume` refuses a merge: it was not started by rlm batch.
            return Some(format!(
                "none of the merged runs holds the {} not run: merge again with the run that does (is a shard's \
                 run missing?)",
                units(left)
            ));
        }
        Some(match self.status {
            RunStatus::BudgetExceeded => format!(
                "rlm resume {run} --max-cost USD, with a higher budget for the whole run, sends the {} not run",
                units(left)
            ),
            RunStatus::DeadlineExceeded => format!(
                "rlm resume {run} --deadline DURATION, with more time for the whole run, sends the {} not run",
                units(left)
            ),
            _ => format!(
                "rlm resume {run} sends the {} not run; the finished ones are not paid for again",
                units(left)
            ),
        })
    }

    /// The run's cost, and after a resume the earlier attempts' part of it and the answers
    /// they paid for.
    pub fn total_cost_text(&self) -> String {
        let total = self.cost_text(self.cost_usd);
        if self.earlier_cost_usd <= 0.0 && self.earlier_answers == 0 {
            return total;
        }
        if self.earlier_cost_usd <= 0.0 {
            // A free model: nothing was paid, so nothing "paid for" the earlier answers.
            return total;
        }
        format!(
            "{total} ({} of it in earlier attempts, for the {} answered then)",
            crate::money::usd(self.earlier_cost_usd),
            match self.earlier_answers {
                1 => "1 unit".to_string(),
                n => format!("{n} units"),
            }
        )
    }

    /// A cost as the user reads it (see [`cost_text`]), and whether it is at the batch
    /// price.
    pub fn cost_text(&self, usd: f64) -> String {
        let text = cost_text(self.price_basis, &self.model, usd);
        match (self.price_tier, self.price_basis) {
            (PriceTier::Batch, PriceBasis::Listed | PriceBasis::Ceiling) => {
                format!("{text} at the batch price (half of list)")
            }
            _ => text,
        }
    }
}
