//! `summarize`: one more model call with the seed's summarization prompt over all results.
//!
//! When the results do not fit the model's context, they are summarized in groups and the
//! group summaries summarized again (as often as needed) — never truncated. This module
//! only plans the levels; the calls run in the run's one pool like every other call (they
//! show in progress, count toward `--max-cost`, are cancelled by Ctrl-C and are cached).

use super::ResultItem;
use crate::escape;
use crate::prompt;

/// Levels of summaries-of-summaries before we give up (each level shrinks the text).
pub const MAX_LEVELS: usize = 6;

/// The next step of a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryStep {
    /// Everything fits: one final call over this text.
    Final(String),
    /// Too much: summarize each of these groups first.
    Groups(Vec<String>),
}

/// Sizes summary calls for a model's context window.
#[derive(Debug, Clone, Copy)]
pub struct SummaryPlanner {
    /// Characters one call may carry.
    budget: usize,
}

impl SummaryPlanner {
    pub fn new(context_window: u64, max_tokens: u32) -> Self {
        let overhead = (prompt::SUMMARIZE.len() + prompt::SUMMARIZE_SYSTEM.len()) as u64 / 3 + 64;
        let available = context_window
            .saturating_sub(u64::from(max_tokens))
            .saturating_sub(overhead);
        // 3 characters a token: conservative, so a group never overflows the window.
        SummaryPlanner {
            budget: (available * 3).max(1_000) as usize,
        }
    }

    /// The first level's sections: one per result.
    pub fn sections(results: &[ResultItem]) -> Vec<String> {
        results
            .iter()
            .map(|r| format!("## File: {}\n\n{}\n", escape::name(&r.path), r.text.trim()))
            .collect()
    }

    /// The sections of the next level, from the summaries of the groups (in order).
    pub fn summary_sections(summaries: &[String]) -> Vec<String> {
        let count = summaries.len();
        summaries
            .iter()
            .enumerate()
            .map(|(i, text)| format!("## Summary of part {}/{count}\n\n{}\n", i + 1, text.trim()))
            .collect()
    }

    /// What to do with these sections.
    pub fn next(&self, sections: &[String]) -> SummaryStep {
        let total: usize = sections.iter().map(|s| s.len() + 1).sum();
        if total <= self.budget {
            SummaryStep::Final(sections.join("\n"))
        } else {
            SummaryStep::Groups(pack(sections, self.budget))
        }
    }
}

/// Packs sections greedily into groups of at most `budget` characters, splitting any
/// section that alone is larger (at line boundaries where possible).
fn pack(sections: &[String], budget: usize) -> Vec<String> {
    let mut pieces: Vec<&str> = Vec::new();
    for s in sections {
        let mut rest = s.as_str();
        while rest.len() > budget {
            let mut cut = budget;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let cut = rest[..cut]
                .rfind('\n')
                .filter(|&i| i > budget / 2)
                .map_or(cut, |i| i + 1);
            pieces.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        if !rest.is_empty() {
            pieces.push(rest);
        }
    }
    let mut groups: Vec<String> = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        if !current.is_empty() && current.len() + piece.len() + 1 > budget {
            groups.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(piece);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_respects_budget_and_keeps_everything() {
        let sections: Vec<String> = (0..10)
            .map(|i| format!("## File: {i}\n\n{}\n", "x".repeat(30)))
            .collect();
        let groups = pack(&sections, 100);
        assert!(groups.len() > 1);
        assert!(groups.iter().all(|g| g.len() <= 100));
        let joined: String = groups.concat();
        for i in 0..10 {
            assert!(joined.contains(&format!("## File: {i}")));
        }
        let big = vec!["line\n".repeat(100)];
        let groups = pack(&big, 64);
        assert!(groups.iter().all(|g| g.len() <= 64));
        assert_eq!(groups.concat().len(), 500);
    }
}
