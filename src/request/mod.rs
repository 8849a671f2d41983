//! The one place a planned unit becomes the request that is sent.
//!
//! [`render`] turns a [`WorkUnit`] into its [`Rendered`] request — system message, user
//! message, the structured-output schema — what its answer must be ([`Expect`]), and the
//! cache key of exactly those bytes. The planner (keys, sizes), `--dry-run --json`, the
//! executor, the prompt kept in the run directory and the trajectory all use its output,
//! so what the dry run shows is what is sent. Rendering is deterministic: the delimiters
//! are derived from the content (see [`crate::prompt::Delimiter`]), so the same inputs give
//! byte-identical requests, and rendering twice (to plan, then to send) costs only time.
//!
//! Prompt caching: what every unit of a run shares comes first — the system prompt, then
//! the shared lines of the user's instruction ([`crate::prompt::Instruction`]) as the
//! request's `shared` text — and is marked for the providers' prompt caches
//! (`cache_prefix`) unless `--no-prompt-cache` says not to; the unit's file name, lines and
//! content follow, and the rest of the instruction comes last. The marker is not part of
//! the cache key: turning it off never asks again for an answer already paid for.
//!
//! Summary and synthesis calls (`--aggregate summarize|synthesize`) are rendered here too,
//! by [`render_summary`]: what they read ([`SummaryPrompt`]) becomes their request and the
//! cache key of their answer, a key that has not changed since the first summaries were
//! cached (`rlm-summarize/v1`). A job phase's calls over a batch of items are rendered
//! here as well, by [`job_phase::Rendering`].

pub mod job_phase;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::cache::{ArtifactRef, CacheKey};
use crate::content::{
    generic_batch_shape, render_batch, render_chunk, render_cross_synthesis, render_generic_batch,
    render_type_synthesis, Analyst, BatchFile, BatchPrompt, ChunkPrompt, ContentType, Focus, GenericBatchPrompt, Shape,
    Templates,
};
use crate::hash::sha256_hex;
use crate::prompt::{self, Delimiter};
use crate::provider::CompletionRequest;
use crate::schema::OutputSchema;
use crate::unit::{BatchReader, PromptPrefix, UnitBody, UnitInput, WorkUnit};
use sha2::Digest;

/// What every request of a run shares.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The user's instruction; `{file}` in it names the unit's file(s).
    pub sub_prompt: String,
    pub templates: Templates,
    pub focus: Focus,
    /// `--schema`: answers must conform to it.
    pub schema: Option<OutputSchema>,
    /// `--require-citations`: each input's citation block is in the prompt.
    pub require_citations: bool,
    pub max_tokens: u32,
    /// The model id and (for servers other than the providers' own) the endpoint: part of
    /// every cache key.
    pub model: String,
    pub endpoint: Option<String>,
    /// Mark the shared prefix for the provider's prompt cache (off: `--no-prompt-cache`).
    pub prompt_cache: bool,
    /// `rlm query`: the answer is printed for a person who asked a question. A file read
    /// in one piece is asked for the answer itself, in prose, not for findings; the chunks
    /// of a longer file still give findings, which the synthesis turns into prose.
    pub query: bool,
}

/// What a unit's answer must be, and so how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "shape")]
pub enum Expect {
    /// Any text; JSON and findings are read from it when it holds them.
    Text,
    /// The analyst's findings JSON, asked for through structured output. An answer in prose
    /// is kept as it is, with a warning that its findings could not be read: a paid answer
    /// is never failed for its format.
    Findings,
    /// `--schema`: JSON valid against it, after at most one retry; else the unit fails.
    Schema,
    /// A batch of small files: `{"files": [{"file", …}]}`, each file's entry of this shape;
    /// a file missing from the answer (or invalid under `--schema`) is retried alone.
    Batch(Shape),
}

/// A unit's request, exactly as it is sent.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub request: CompletionRequest,
    pub expect: Expect,
    /// Of the prompt's bytes, the files' own text (the rest is framing: system prompt,
    /// delimiters, the instruction and the lines around it).
    pub content_bytes: u64,
    /// Keyed by exactly what is sent, and the unit's inputs.
    pub key: CacheKey,
}

impl Rendered {
    /// The characters of the prompt (system and user).
    pub fn prompt_bytes(&self) -> u64 {
        (self.request.system.len() + self.request.shared.len() + self.request.user.len()) as u64
    }

    /// The prompt-cache prefix: system and shared text.
    pub fn prefix(&self) -> PromptPrefix {
        let digest = sha2::Sha256::new()
            .chain_update(self.request.system.as_bytes())
            .chain_update([0u8])
            .chain_update(self.request.shared.as_bytes())
            .finalize();
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        PromptPrefix {
            id: u64::from_le_bytes(id),
            bytes: (self.request.system.len() + self.request.shared.len()) as u64,
            marked: self.request.cache_prefix,
        }
    }
}

/// What `unit`'s answer must be (the [`Rendered::expect`] of its request, without
/// rendering it).
pub fn expect_of(unit: &WorkUnit, ctx: &RequestContext) -> Expect {
    let shape = shape_of(unit, ctx);
    match (&unit.body, shape) {
        (UnitBody::Plain, _) if ctx.schema.is_some() => Expect::Schema,
        (UnitBody::Plain, _) => Expect::Text,
        (UnitBody::Piece(_), Shape::Findings) => Expect::Findings,
        (UnitBody::Piece(_), Shape::Schema) => Expect::Schema,
        (UnitBody::Piece(_), _) => Expect::Text,
        (UnitBody::Batch(_), shape) => Expect::Batch(shape),
    }
}

/// The shape of `unit`'s answer: the user's prompt's (see [`Shape::of`]), except that
/// `rlm query` asks a file read in one piece for prose, and a batch read with the generic
/// prompt asks each file for what the generic prompt would ([`generic_batch_shape`]).
fn shape_of(unit: &WorkUnit, ctx: &RequestContext) -> Shape {
    if let UnitBody::Batch(batch) = &unit.body {
        if batch.reader == BatchReader::Generic {
            return generic_batch_shape(&ctx.sub_prompt, ctx.schema.is_some());
        }
    }
    let shape = Shape::of(&ctx.sub_prompt, ctx.schema.is_some());
    let whole_piece = matches!(unit.body, UnitBody::Piece(_)) && unit.inputs.first().is_some_and(|i| i.span.is_none());
    match shape {
        Shape::Findings if ctx.query && whole_piece => Shape::OwnText,
        shape => shape,
    }
}

/// Renders `unit` (see the module doc), whose text must be held: a unit of a plan is
/// rendered from [`WorkUnit::with_text`] (or by [`render_planned`]).
pub fn render(unit: &WorkUnit, ctx: &RequestContext) -> Rendered {
    debug_assert!(unit.text_held(), "{} rendered without its text", unit.label);
    render_text(unit, ctx)
}

/// Renders a planned unit whose answer has come: from its files read again, or — when
/// one changed since the request was sent — from what frames it, under its planned key,
/// with `false`: that request is not whole, and must not be sent again.
pub fn render_planned(unit: &WorkUnit, ctx: &RequestContext) -> (Rendered, bool) {
    match unit.with_text() {
        Ok(loaded) => (render(&loaded, ctx), true),
        Err(_) => (render_unread(unit, ctx), false),
    }
}

/// What a planned unit's answer is read with, without reading its files: the request's
/// frame (its schema, its limits; not its content) under the planned key. For keeping an
/// answer; never sent.
pub fn render_unread(unit: &WorkUnit, ctx: &RequestContext) -> Rendered {
    let mut rendered = render_text(unit, ctx);
    rendered.key = unit.cache_key.clone();
    rendered
}

fn render_text(unit: &WorkUnit, ctx: &RequestContext) -> Rendered {
    let delimiter = Delimiter::salted(&ctx.sub_prompt);
    // --require-citations: each input's hash16 (and a chunk's lines), before the content.
    let citations: String = match &unit.body {
        UnitBody::Piece(_) | UnitBody::Batch(_) if ctx.require_citations => unit
            .inputs
            .iter()
            .map(|i| format!("{}\n", crate::citation::input_block(i).trim_end()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let content_bytes = match &unit.body {
        UnitBody::Piece(piece) => piece.chunk.content.len(),
        UnitBody::Plain => unit.inputs.iter().map(|i| i.content().len()).sum(),
        UnitBody::Batch(_) => unit.inputs.iter().map(|i| i.source.text.len()).sum(),
    } as u64;
    let (system, shared, user, expect, schema) = match &unit.body {
        UnitBody::Plain => plain(unit, ctx, &delimiter),
        UnitBody::Piece(piece) => {
            let input = unit.inputs.first();
            let path = input.map_or("", |i| i.display.as_ref());
            let shape = shape_of(unit, ctx);
            let block = match input {
                Some(i) => delimiter.block_of_file(path, &piece.chunk.content, &i.content_hash),
                None => delimiter.block(path, &piece.chunk.content),
            };
            let prompt = render_chunk(
                &ctx.templates,
                &ChunkPrompt {
                    sub_prompt: &ctx.sub_prompt,
                    focus: ctx.focus,
                    path,
                    detection: &piece.detection,
                    file_lines: piece.file_lines,
                    chunk: &piece.chunk,
                    content_block: &block,
                    citations: &citations,
                    shape,
                },
            );
            let analyst = Analyst::for_content(piece.detection.content_type);
            let (expect, schema) = match shape {
                Shape::Findings => (Expect::Findings, Some(Arc::new(analyst.findings_schema()))),
                Shape::Schema => (Expect::Schema, ctx.schema.as_ref().map(|s| s.value.clone())),
                Shape::OwnJson | Shape::OwnText => (Expect::Text, None),
            };
            let system = match (&ctx.schema, shape) {
                (Some(s), Shape::Schema) => format!("{}{}", prompt.system, s.instruction()),
                _ => prompt.system,
            };
            (system, prompt.shared, prompt.user, expect, schema)
        }
        UnitBody::Batch(batch) => {
            let shape = shape_of(unit, ctx);
            let content: String = unit
                .inputs
                .iter()
                .map(|i| delimiter.block_of_file(&i.display, &i.source.text, &i.content_hash))
                .collect();
            let prompt = match batch.reader {
                BatchReader::Generic => render_generic_batch(
                    &ctx.templates,
                    &GenericBatchPrompt {
                        sub_prompt: &ctx.sub_prompt,
                        files: batch.members.len(),
                        content_block: &content,
                        citations: &citations,
                        shape,
                    },
                ),
                BatchReader::Analyst => {
                    let files: Vec<BatchFile<'_>> = batch
                        .members
                        .iter()
                        .map(|m| BatchFile {
                            path: &m.path,
                            lines: m.lines,
                        })
                        .collect();
                    render_batch(
                        &ctx.templates,
                        &BatchPrompt {
                            sub_prompt: &ctx.sub_prompt,
                            focus: ctx.focus,
                            detection: &batch.detection,
                            files: &files,
                            content_block: &content,
                            citations: &citations,
                            shape,
                        },
                    )
                }
            };
            let analyst = Analyst::for_content(batch.detection.content_type);
            let system = match (&ctx.schema, shape) {
                (Some(s), Shape::Schema) => format!("{}{}", prompt.system, s.member_instruction()),
                _ => prompt.system,
            };
            let schema = batch_schema(shape, analyst, ctx.schema.as_ref());
            (
                system,
                prompt.shared,
                prompt.user,
                Expect::Batch(shape),
                Some(Arc::new(schema)),
            )
        }
    };
    let request = CompletionRequest {
        system,
        shared,
        user,
        max_tokens: ctx.max_tokens,
        schema,
        cache_prefix: ctx.prompt_cache,
    };
    let key = key(&unit.inputs, &request, ctx);
    Rendered {
        request,
        expect,
        content_bytes,
        key,
    }
}

/// The messages of a request: system, shared, the unit's own user text, what the answer
/// must be, and the structured-output schema.
type Parts = (String, String, String, Expect, Option<Arc<Value>>);

/// A whole file with the generic prompt: the shared lines of the instruction, then its
/// name, its citation block, its content, the rest of the instruction.
fn plain(unit: &WorkUnit, ctx: &RequestContext, delimiter: &Delimiter) -> Parts {
    let shared = prompt::Instruction::split(&ctx.sub_prompt).shared_message();
    let mut user = String::new();
    for input in &unit.inputs {
        let citation_block = ctx.require_citations.then(|| crate::citation::input_block(input));
        let block = delimiter.block_of_file(&input.display, input.content(), &input.content_hash);
        user.push_str(&prompt::render_cited_file_message(
            &ctx.sub_prompt,
            &input.display,
            &block,
            citation_block.as_deref(),
        ));
    }
    match &ctx.schema {
        Some(s) => (
            format!("{}{}", prompt::BATCH_SYSTEM, s.instruction()),
            shared,
            user,
            Expect::Schema,
            Some(s.value.clone()),
        ),
        None => (prompt::BATCH_SYSTEM.to_string(), shared, user, Expect::Text, None),
    }
}

/// What a summary or synthesis call reads, and so which prompt asks it.
#[derive(Debug, Clone)]
pub enum SummaryPrompt {
    /// A level of `--aggregate summarize`: these sections, under the summarize prompt.
    Summarize(String),
    /// `--aggregate synthesize`, phase 1: the per-file results of one content type.
    TypeSynthesis { content_type: ContentType, results: String },
    /// `--aggregate synthesize`, phase 2: the report across the per-type summaries (or,
    /// when every result has one type, across the per-file results themselves).
    CrossSynthesis(String),
}

/// A summary or synthesis call's request, exactly as it is sent, and the cache key of its
/// answer.
#[derive(Debug, Clone)]
pub struct RenderedSummary {
    pub key: CacheKey,
    /// What the key names as its input: the hash of the user message.
    pub artifacts: Vec<ArtifactRef>,
    pub request: CompletionRequest,
}

/// Renders a summary or synthesis call. Its key is taken over the user message (as the
/// `summarize-input` artifact) and the system message's hash (in the `rlm-summarize/v1`
/// query), under the summarize mode: byte for byte the key it always had, so summaries
/// cached by earlier versions are still found.
pub fn render_summary(summary: &SummaryPrompt, ctx: &RequestContext) -> RenderedSummary {
    let (system, user) = match summary {
        SummaryPrompt::Summarize(sections) => (None, prompt::render_summarize(sections)),
        SummaryPrompt::TypeSynthesis { content_type, results } => {
            let p = render_type_synthesis(
                &ctx.templates,
                &synthesis_query(&ctx.sub_prompt),
                *content_type,
                results,
            );
            (Some(p.system), p.user)
        }
        SummaryPrompt::CrossSynthesis(summaries) => {
            let p = render_cross_synthesis(&ctx.templates, &synthesis_query(&ctx.sub_prompt), summaries);
            (Some(p.system), p.user)
        }
    };
    let artifacts = vec![ArtifactRef {
        artifact_id: "summarize-input".to_string(),
        content_hash: sha256_hex(user.as_bytes()),
    }];
    let system = summary_system(system.as_deref(), ctx.require_citations);
    let query = format!("rlm-summarize/v1:{}", &sha256_hex(system.as_bytes())[..16]);
    let key = CacheKey::new(
        &artifacts,
        &query,
        "",
        &ctx.model,
        Some("summarize"),
        ctx.endpoint.as_deref(),
    );
    let request = CompletionRequest {
        system,
        user,
        max_tokens: ctx.max_tokens,
        ..CompletionRequest::default()
    };
    RenderedSummary {
        key,
        artifacts,
        request,
    }
}

/// The system prompt of a summary or synthesis call (the summarizer's unless the synthesis
/// prompt brings its own); with `--require-citations`, the seed's rule never to drop a
/// citation (issue 10). Without it, exactly the base prompt (so old summaries stay cached).
fn summary_system(system: Option<&str>, require_citations: bool) -> String {
    let base = system.unwrap_or(prompt::SUMMARIZE_SYSTEM);
    if require_citations {
        format!("{}\n\n{}", base.trim_end(), crate::citation::SUMMARIZER_RULE)
    } else {
        base.to_string()
    }
}

/// The instruction as the synthesizer reads it: it was applied to each file.
fn synthesis_query(sub_prompt: &str) -> String {
    sub_prompt.replace("{file}", "each file")
}

/// Lines `start..=end` (1-based) of `text`, with their line endings.
pub fn slice_lines(text: &str, start: u64, end: u64) -> &str {
    let mut offsets = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let from = offsets.nth((start.saturating_sub(1)) as usize).unwrap_or(text.len());
    let mut to_iter = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let to = to_iter.nth(end as usize).unwrap_or(text.len());
    &text[from.min(text.len())..to.max(from).min(text.len())]
}

/// The structured-output schema of a batch's answer: `{"files": [{"file", …}]}` with each
/// file's answer in its shape.
fn batch_schema(shape: Shape, analyst: Analyst, user_schema: Option<&OutputSchema>) -> Value {
    let (answer, required): (Value, Vec<&str>) = match shape {
        Shape::Findings => {
            let findings = analyst.findings_schema();
            (
                json!({
                    "findings": findings["properties"]["findings"].clone(),
                    "metadata": {"type": "object"},
                }),
                vec!["file", "findings"],
            )
        }
        Shape::Schema => (
            json!({"answer": user_schema.map_or(json!({}), |s| (*s.value).clone())}),
            vec!["file", "answer"],
        ),
        Shape::OwnJson => (json!({"answer": {}}), vec!["file", "answer"]),
        Shape::OwnText => (json!({"answer": {"type": "string"}}), vec!["file", "answer"]),
    };
    let mut properties = json!({"file": {"type": "string"}});
    if let (Some(p), Value::Object(extra)) = (properties.as_object_mut(), answer) {
        p.extend(extra);
    }
    json!({
        "type": "object",
        "properties": {
            "files": {
                "type": "array",
                "items": {"type": "object", "properties": properties, "required": required},
            },
        },
        "required": ["files"],
    })
}

/// The cache key of a request: the seed's fields, with a `query` that names the hash of
/// every byte sent (system, user, schema), so any change to what is sent — a template, the
/// citation block, a schema, a chunk boundary — asks again, and nothing else does.
fn key(inputs: &[UnitInput], request: &CompletionRequest, ctx: &RequestContext) -> CacheKey {
    let artifacts: Vec<ArtifactRef> = inputs
        .iter()
        .map(|i| ArtifactRef {
            artifact_id: i.artifact_id(),
            content_hash: i.content_hash.to_string(),
        })
        .collect();
    CacheKey::new(
        &artifacts,
        &request_query(request),
        &ctx.sub_prompt,
        &ctx.model,
        None,
        ctx.endpoint.as_deref(),
    )
}

/// `rlm-request/v3:` and 16 hex digits of the hash of what a request sends.
pub fn request_query(request: &CompletionRequest) -> String {
    // The parts joined by NULs, hashed as they are rather than copied into one string.
    let mut hasher = crate::hash::Sha256Writer::default();
    for part in [&request.system, &request.shared, &request.user] {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    if let Some(schema) = &request.schema {
        // Writing into a hash cannot fail; this is the schema's `to_string()`.
        let _ = serde_json::to_writer(&mut hasher, schema.as_ref());
    }
    format!("rlm-request/v3:{}", &hasher.hex()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_query_hashes_the_parts_joined_by_nuls() {
        let mut request = CompletionRequest {
            system: "sys".into(),
            user: "user".into(),
            ..CompletionRequest::default()
        };
        let joined = |schema: &str| format!("sys\u{0}\u{0}user\u{0}{schema}");
        assert_eq!(
            request_query(&request),
            format!("rlm-request/v3:{}", &sha256_hex(joined("").as_bytes())[..16])
        );
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        request.schema = Some(Arc::new(schema.clone()));
        assert_eq!(
            request_query(&request),
            format!(
                "rlm-request/v3:{}",
                &sha256_hex(joined(&schema.to_string()).as_bytes())[..16]
            )
        );
    }

    #[test]
    fn a_summary_keeps_the_key_it_always_had() {
        let ctx = RequestContext {
            sub_prompt: "Review {file}".into(),
            templates: Templates::default(),
            focus: Focus::default(),
            schema: None,
            require_citations: false,
            max_tokens: 100,
            model: "m".into(),
            endpoint: None,
            prompt_cache: true,
            query: false,
        };
        let rendered = render_summary(&SummaryPrompt::Summarize("R".into()), &ctx);
        let user = prompt::render_summarize("R");
        let artifacts = vec![ArtifactRef {
            artifact_id: "summarize-input".to_string(),
            content_hash: sha256_hex(user.as_bytes()),
        }];
        let query = format!(
            "rlm-summarize/v1:{}",
            &sha256_hex(prompt::SUMMARIZE_SYSTEM.as_bytes())[..16]
        );
        assert_eq!(
            rendered.key,
            CacheKey::new(&artifacts, &query, "", "m", Some("summarize"), None)
        );
        assert_eq!(rendered.request.system, prompt::SUMMARIZE_SYSTEM);
        assert_eq!(rendered.request.user, user);
        assert!(!rendered.request.cache_prefix);
    }

    #[test]
    fn slices_lines_inclusively() {
        let text = "a\nb\nc\nd";
        assert_eq!(slice_lines(text, 1, 1), "a\n");
        assert_eq!(slice_lines(text, 2, 3), "b\nc\n");
        assert_eq!(slice_lines(text, 4, 4), "d");
        assert_eq!(slice_lines(text, 3, 10), "c\nd");
    }
}
