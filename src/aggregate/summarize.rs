//! `summarize`: one more model call with the seed's summarization prompt over all results.
//!
//! When the results do not fit the model's context, they are summarized in groups and the
//! group summaries summarized again (as often as needed) — never truncated. Every
//! summarization call goes through the cache, so a rerun over unchanged results is free.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::ResultItem;
use crate::cache::{ArtifactRef, Cache, CacheEntry, CacheKey};
use crate::exec::{call_with_retries, CallContext, CallFailure};
use crate::input::sha256_hex;
use crate::prompt;
use crate::provider::{CompletionRequest, Usage};
use crate::report::CallRecord;

/// Levels of summaries-of-summaries before we give up (each level shrinks the text).
const MAX_LEVELS: usize = 6;

/// The final summary and every call it took.
#[derive(Debug, Clone)]
pub struct SummaryOutcome {
    pub text: String,
    pub calls: Vec<CallRecord>,
}

/// What one summarization call needs to know beyond its prompt.
#[derive(Debug, Clone)]
pub struct SummarizeLimits {
    pub context_window: u64,
    pub max_tokens: u32,
    pub width: usize,
    pub read_cache: bool,
    /// False under `--cache-only`: a summary that is not cached is an error, not a call.
    pub may_call: bool,
}

/// Summarizes `results`, in groups when they do not fit. On failure, the calls made so far
/// are returned with the reason.
pub async fn summarize(
    ctx: Arc<CallContext>,
    cache: Cache,
    limits: SummarizeLimits,
    results: &[ResultItem],
) -> Result<SummaryOutcome, (CallFailure, Vec<CallRecord>)> {
    let overhead = (prompt::SUMMARIZE.len() + prompt::SUMMARIZE_SYSTEM.len()) as u64 / 3 + 64;
    let available = limits
        .context_window
        .saturating_sub(u64::from(limits.max_tokens))
        .saturating_sub(overhead);
    // 3 characters a token: conservative, so a group never overflows the window.
    let budget = (available * 3).max(1_000) as usize;

    let mut sections: Vec<String> = results
        .iter()
        .map(|r| format!("## File: {}\n\n{}\n", r.path, r.text.trim()))
        .collect();
    let mut calls = Vec::new();
    for level in 0..MAX_LEVELS {
        let total: usize = sections.iter().map(|s| s.len() + 1).sum();
        if total <= budget {
            let joined = sections.join("\n");
            let label = if level == 0 {
                "summarize".to_string()
            } else {
                format!("summarize (final, level {level})")
            };
            let (text, record) = summarize_one(&ctx, &cache, &limits, joined, label)
                .await
                .map_err(|f| (f, calls.clone()))?;
            calls.push(record);
            return Ok(SummaryOutcome { text, calls });
        }
        let groups = pack(&sections, budget);
        let count = groups.len();
        let semaphore = Arc::new(Semaphore::new(limits.width.max(1)));
        let mut tasks = JoinSet::new();
        for (i, group) in groups.into_iter().enumerate() {
            let (ctx, cache, limits, semaphore) = (ctx.clone(), cache.clone(), limits.clone(), semaphore.clone());
            tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let label = format!("summarize (level {}, group {}/{count})", level + 1, i + 1);
                (i, summarize_one(&ctx, &cache, &limits, group, label).await)
            });
        }
        let mut summaries = vec![String::new(); count];
        let mut failure = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((i, Ok((text, record)))) => {
                    calls.push(record);
                    summaries[i] = format!("## Summary of part {}/{count}\n\n{}\n", i + 1, text.trim());
                }
                Ok((_, Err(f))) => failure = failure.or(Some(f)),
                Err(e) => failure = failure.or(Some(CallFailure::Unit(format!("summarization task failed: {e}")))),
            }
        }
        if let Some(f) = failure {
            return Err((f, calls));
        }
        sections = summaries;
    }
    Err((
        CallFailure::Unit(format!(
            "the results did not shrink to fit the {}-token context after {MAX_LEVELS} levels of summaries; \
             use a model with a larger context window",
            limits.context_window
        )),
        calls,
    ))
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

/// One summarization call over `all_results`, through the cache.
async fn summarize_one(
    ctx: &CallContext,
    cache: &Cache,
    limits: &SummarizeLimits,
    all_results: String,
    label: String,
) -> Result<(String, CallRecord), CallFailure> {
    let user = prompt::render_summarize(&all_results);
    let model = ctx.provider.model().to_string();
    let inputs = [ArtifactRef {
        artifact_id: "summarize-input".to_string(),
        content_hash: sha256_hex(user.as_bytes()),
    }];
    let query = format!(
        "rlm-summarize/v1:{}",
        &sha256_hex(prompt::SUMMARIZE_SYSTEM.as_bytes())[..16]
    );
    let key = CacheKey::new(&inputs, &query, "", &model, "summarize");
    if limits.read_cache {
        if let Some(entry) = cache.get(&key, limits.max_tokens) {
            let record = CallRecord {
                label,
                usage: Usage::default(),
                saved: entry.usage,
                cached: true,
                attempts: 0,
                truncated: entry.truncated,
                duration_ms: 0,
            };
            return Ok((entry.text, record));
        }
    }
    if !limits.may_call {
        return Err(CallFailure::Unit("--cache-only: this summary is not cached".into()));
    }
    let started = Instant::now();
    let request = CompletionRequest {
        system: prompt::SUMMARIZE_SYSTEM,
        user: &user,
        max_tokens: limits.max_tokens,
    };
    let result = call_with_retries(ctx, &request, &label).await;
    let completion = result.outcome?;
    let _ = cache.put(&CacheEntry {
        key: key.0,
        model,
        inputs: inputs.to_vec(),
        text: completion.text.clone(),
        usage: completion.usage,
        truncated: completion.truncated,
        max_tokens: limits.max_tokens,
        created_unix: crate::report::unix_now(),
    });
    let record = CallRecord {
        label,
        usage: completion.usage,
        saved: Usage::default(),
        cached: false,
        attempts: result.attempts,
        truncated: completion.truncated,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    Ok((completion.text, record))
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
