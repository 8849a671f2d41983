//! Manifest → work units. Today one unit is one whole file; chunking (content-aware splits)
//! and small-file batching produce more units of the same shape later.

use crate::cache::{ArtifactRef, CacheKey};
use crate::input::{sha256_hex, InputFile, Manifest};
use crate::prompt;
use crate::run_store::result_names;
use crate::settings::BatchSettings;

/// One call's worth of work.
#[derive(Debug, Clone)]
pub struct WorkUnit {
    pub file: InputFile,
    /// `{sanitized}.result.md`, unique within the run.
    pub result_name: String,
    pub cache_key: CacheKey,
    /// A rough count (bytes / 4) for cost estimates.
    pub estimated_input_tokens: u64,
    /// Set when the unit cannot be sent (too large for the context budget): it fails with
    /// this reason and is never silently truncated.
    pub blocked: Option<String>,
}

/// The `query` field of per-file cache keys: names the system prompt, so editing the
/// embedded prompt invalidates old results.
pub fn batch_query() -> String {
    format!("rlm-batch/v1:{}", &sha256_hex(prompt::BATCH_SYSTEM.as_bytes())[..16])
}

/// Builds one unit per file with its cache key and budget check.
pub fn plan(manifest: &Manifest, settings: &BatchSettings) -> Vec<WorkUnit> {
    let query = batch_query();
    let names = result_names(&manifest.files.iter().map(|f| f.display.as_str()).collect::<Vec<_>>());
    let overhead = (prompt::BATCH_SYSTEM.len() + settings.sub_prompt.len() + 200) as u64;
    manifest
        .files
        .iter()
        .zip(names)
        .map(|(file, result_name)| {
            let bytes = file.size + 2 * file.display.len() as u64 + overhead;
            // Conservative for the budget (3 bytes a token), rough for the estimate (4).
            let budget_tokens = bytes.div_ceil(3);
            let available = settings.context_window.saturating_sub(u64::from(settings.max_tokens));
            let blocked = (settings.context_window_known && budget_tokens > available).then(|| {
                format!(
                    "too large for the model's context budget: ~{budget_tokens} input tokens + {} output > {} \
                     ({}); chunking is not available yet — split the file or pass --context-window",
                    settings.max_tokens, settings.context_window, settings.model
                )
            });
            WorkUnit {
                cache_key: unit_key(file, &file.content_hash, &query, settings),
                file: file.clone(),
                result_name,
                estimated_input_tokens: bytes.div_ceil(4),
                blocked,
            }
        })
        .collect()
}

/// The cache key of a file with the given content hash (recomputed at dispatch when the
/// file changed after it was planned).
pub fn unit_key(file: &InputFile, content_hash: &str, query: &str, settings: &BatchSettings) -> CacheKey {
    CacheKey::new(
        &[ArtifactRef {
            artifact_id: file.display.clone(),
            content_hash: content_hash.to_string(),
        }],
        query,
        &settings.sub_prompt,
        &settings.model,
        settings.aggregate.name(),
    )
}
