//! Content awareness (issue 7, the pure parts): what a file is, how to cut it, how to
//! batch small files, and what to ask of it.
//!
//! - [`decode`] / [`looks_binary`]: a file's bytes as text (UTF-8, UTF-16 with a BOM,
//!   windows-1252), and what is binary.
//! - [`detect`]: content type by extension, then by sniffing the first 50 lines.
//! - [`chunk`]: one chunking strategy per content type; every [`Chunk`] names the 1-based
//!   lines of the original file it holds.
//! - [`windows`]: windows of whole lines within a budget, the rule every chunker falls back
//!   on, and a line too long for any window cut alone.
//! - [`batch_small`]: small files of one type in one call (its answer is split back per
//!   file by [`crate::answer::split_batch_answer`]).
//! - [`Analyst`] / [`render_chunk`] / [`render_batch`] / synthesis: the analyst for a
//!   content type and its prompts (embedded from `prompts/`, overridable).
//!
//! Nothing here reads files, prints or calls a model: the planner and the engine do that.

mod analyst;
mod answer_format;
mod chunk;
mod code_chunker;
pub(crate) mod code_grammar;
mod code_rules;
mod code_scan;
mod content_type;
mod csv_chunker;
mod decode;
mod detect;
mod json_chunker;
mod json_schema;
mod jsonl_chunker;
mod line_index;
mod line_range;
mod prompt_templates;
mod prose_chunker;
mod small_batch;
mod sniff;
mod windows;

pub use analyst::{
    context_max_bytes, generic_batch_shape, render_batch, render_chunk, render_cross_synthesis, render_generic_batch,
    render_type_synthesis, Analyst, BatchFile, BatchPrompt, ChunkPrompt, Focus, GenericBatchPrompt, Prompt,
};
pub use answer_format::{asks_for_format, AnswerFormat, Shape};
pub use chunk::{
    chunk, needs_chunking, Chunk, ChunkContext, ChunkOptions, ChunkStrategy, ContentSpan, PartialLine, WindowSize,
    MIN_CHUNK_TOKENS,
};
pub use content_type::{ContentType, Language, SizeTier};
pub use decode::{decode, looks_binary, Decoded, BINARY_SNIFF_BYTES};
pub use detect::{detect, Confidence, DetectedBy, Detection, SNIFF_LINES};
pub use json_schema::{SchemaField, SchemaSummary};
pub use line_index::{count_lines, head_lines, LineIndex};
pub use line_range::LineRange;
pub use prompt_templates::{TemplateName, Templates, UnknownTemplate};
pub use small_batch::{batch_small, BatchCandidate};
