//! Manifest → work units. Today one unit is one whole file; content-aware chunking and
//! small-file batching produce more units of the same shape.

use crate::cache::{ArtifactRef, CacheKey};
use crate::input::{sha256_hex, InputFile, Manifest};
use crate::prompt;
use crate::provider::ModelInfo;
use crate::run_dir::result_names;
use crate::schema::OutputSchema;
use crate::unit::{UnitId, UnitInput, WorkUnit};

/// What planning needs beyond the manifest.
#[derive(Debug, Clone)]
pub struct PlanContext<'a> {
    pub keys: &'a KeyParts,
    pub model: &'a ModelInfo,
    pub max_tokens: u32,
}

/// Everything in a per-unit cache key besides the inputs; shared by the planner and the
/// jobs, which re-key a unit by what they actually sent.
#[derive(Debug, Clone)]
pub struct KeyParts {
    pub query: String,
    pub sub_prompt: String,
    pub model: String,
    /// See [`crate::settings::ProviderSettings::endpoint_identity`].
    pub endpoint: Option<String>,
    /// `--require-citations` (issue 10): the prompt carries the citation instruction block,
    /// so the answer is keyed apart from an uncited one.
    pub require_citations: bool,
}

/// What `--require-citations` adds to the `query` of a key: the version of the citation
/// instruction block, so editing it invalidates cited answers only.
pub const CITATIONS_QUERY: &str = "+citations/v1";

/// The `query` field of per-file cache keys: names the prompt template and system prompt,
/// so editing either invalidates old results, and the `--schema` the answers conform to.
pub fn batch_query(schema: Option<&OutputSchema>) -> String {
    let base = format!("rlm-batch/v2:{}", &sha256_hex(prompt::BATCH_SYSTEM.as_bytes())[..16]);
    match schema {
        Some(s) => format!("{base}+schema:{}", s.hash16),
        None => base,
    }
}

/// Builds one unit per file with its cache key and budget check.
pub fn plan(manifest: &Manifest, ctx: &PlanContext<'_>) -> Vec<WorkUnit> {
    let names = result_names(&manifest.files.iter().map(|f| f.display.as_str()).collect::<Vec<_>>());
    manifest
        .files
        .iter()
        .zip(names)
        .map(|(file, result_name)| whole_file_unit(file, result_name, ctx))
        .collect()
}

/// The unit of one whole file, rendered with the generic prompt when it is dispatched.
pub fn whole_file_unit(file: &InputFile, result_name: String, ctx: &PlanContext<'_>) -> WorkUnit {
    let overhead = (prompt::BATCH_SYSTEM.len() + ctx.keys.sub_prompt.len() + 200) as u64;
    let inputs = vec![UnitInput::of_file(file, None)];
    let bytes = file.size + 2 * file.display.len() as u64 + overhead;
    // Conservative for the budget (3 bytes a token), rough for the estimate (4).
    let budget_tokens = bytes.div_ceil(3);
    let window = ctx.model.context_window;
    let available = window.saturating_sub(u64::from(ctx.max_tokens));
    let blocked = (ctx.model.context_window_known && budget_tokens > available).then(|| {
        format!(
            "too large for the model's context budget: ~{budget_tokens} input tokens + {} output > {window} \
             ({}); drop --chunking off so it is cut into chunks, or pass --context-window",
            ctx.max_tokens, ctx.model.id
        )
    });
    WorkUnit {
        id: UnitId::for_inputs(&inputs),
        label: file.display.clone(),
        cache_key: unit_key(&inputs, ctx.keys),
        inputs,
        result_name,
        estimated_input_tokens: bytes.div_ceil(4),
        blocked,
        content: None,
    }
}

/// The cache key of a unit over these inputs (recomputed at dispatch with the hashes of
/// what was actually sent). Per-file answers do not depend on the aggregation strategy,
/// so it is not part of their key: trying another `--aggregate` is free.
pub fn unit_key(inputs: &[UnitInput], keys: &KeyParts) -> CacheKey {
    let artifacts: Vec<ArtifactRef> = inputs
        .iter()
        .map(|i| ArtifactRef {
            artifact_id: i.artifact_id(),
            content_hash: i.content_hash.clone(),
        })
        .collect();
    let query = if keys.require_citations {
        format!("{}{CITATIONS_QUERY}", keys.query)
    } else {
        keys.query.clone()
    };
    CacheKey::new(
        &artifacts,
        &query,
        &keys.sub_prompt,
        &keys.model,
        None,
        keys.endpoint.as_deref(),
    )
}
