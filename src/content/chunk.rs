//! Chunking: one strategy per content type (the content-aware seed's tables are the
//! defaults in [`ChunkOptions`]), all returning [`Chunk`]s that name the lines of the
//! original file they hold.
//!
//! Every chunker is linear in the file's size. A line is never split; a chunk's `content`
//! is what the analyst reads — for code the import block comes first, for CSV the header,
//! for JSON a valid document — and its line range is always in the original file.

use serde::Serialize;

use super::code_chunker::chunk_code;
use super::content_type::{ContentType, SizeTier};
use super::csv_chunker::chunk_delimited;
use super::detect::Detection;
use super::json_chunker::chunk_json;
use super::json_schema::SchemaSummary;
use super::jsonl_chunker::chunk_jsonl;
use super::line_index::LineIndex;
use super::line_range::{windows, LineRange};
use super::prose_chunker::chunk_prose;
use super::sniff::starts_with_timestamp;

/// One piece of a file, ready for an analyst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    /// 0-based position among the file's chunks.
    pub index: usize,
    /// How many chunks the file was cut into.
    pub total: usize,
    /// First line of the original file this chunk holds (1-based, inclusive). Lines that
    /// are repeated at the top of `content` (imports, a CSV header) are in
    /// `context.prepended`, not in this range.
    pub start_line: usize,
    /// Last line of the original file this chunk holds (1-based, inclusive).
    pub end_line: usize,
    /// Exactly what the analyst reads. For code, CSV/TSV, JSONL, logs, prose and config it
    /// is the original text of its lines, after any prepended ones (and, for code, one
    /// comment line naming the lines left out between them); for JSON it is a valid
    /// document built from the original text of whole elements, and the line range is
    /// where those elements are.
    pub content: String,
    pub context: ChunkContext,
}

impl Chunk {
    /// The chunk's own lines of the original file.
    pub fn lines(&self) -> LineRange {
        LineRange::new(self.start_line, self.end_line)
    }

    /// "chunk 3 of 10" (1-based), the reading order the seed gives every analyst.
    pub fn position_label(&self) -> String {
        format!("chunk {} of {}", self.index + 1, self.total)
    }

    /// The whole of `text` as one chunk, for files that are not cut.
    pub fn whole(text: &str) -> Chunk {
        let lines = LineIndex::new(text).len();
        Chunk {
            index: 0,
            total: 1,
            start_line: 1,
            end_line: lines,
            content: text.to_owned(),
            context: ChunkContext::new(ChunkStrategy::Whole),
        }
    }
}

/// What an analyst is told about where its chunk came from, besides its line range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkContext {
    pub strategy: ChunkStrategy,
    /// Lines of the file repeated at the top of `content`: the import block of source code,
    /// the header row of CSV/TSV.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepended: Option<LineRange>,
    /// Field names and types: of the first five elements of the JSON array (or the keys of
    /// the object) this chunk was cut from, or of the first object of a JSONL file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSummary>,
    /// Where in a JSON document the chunk's elements sit, e.g. `$[350..699]` or
    /// `$.events[0..349]` (both ends inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// Why the type's own strategy was not used (invalid JSON, no boundaries…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ChunkContext {
    pub(crate) fn new(strategy: ChunkStrategy) -> ChunkContext {
        ChunkContext {
            strategy,
            prepended: None,
            schema: None,
            json_path: None,
            note: None,
        }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> ChunkContext {
        self.note = Some(note.into());
        self
    }
}

/// How a chunk was cut; shown in plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkStrategy {
    /// The file was not cut.
    Whole,
    /// Code cut at top-level (or, inside a long item, nested) definitions.
    Boundaries,
    /// Prose cut at `#`/`##` headings.
    Headings,
    /// Fixed line windows with overlap.
    Windows,
    /// CSV/TSV rows, the header first.
    Rows,
    /// Elements of a JSON array, or members of a JSON object.
    Elements,
    /// Whole JSONL lines.
    Lines,
}

/// A window size and the overlap between consecutive windows, in lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    pub lines: usize,
    pub overlap: usize,
}

/// Chunk targets per content type. `Default` is the seeds' defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkOptions {
    /// Code chunks fill up to this many lines (the seed's 150–300): a chunk is closed at the
    /// last boundary that keeps it within the limit, never inside a function.
    pub code_max_lines: usize,
    /// The import block prepended to every code chunk is cut after this many lines, so a
    /// file with a huge header does not multiply it into every chunk.
    pub max_import_lines: usize,
    /// Code without boundaries, config, markup and unknown content: 200 lines, 20 overlap.
    pub fallback: WindowSize,
    /// Logs: 200 lines, 20 overlap.
    pub log: WindowSize,
    /// A log window grows over at most this many continuation lines (indented stack frames,
    /// lines without a timestamp) rather than end inside an entry.
    pub log_max_extend: usize,
    /// Prose without headings, and sections longer than this: 250 lines, 25 overlap.
    pub prose: WindowSize,
    /// CSV rows per chunk = `csv_cells / columns`, clamped to `csv_rows` (the seed's
    /// 500–1000: fewer columns, more rows).
    pub csv_cells: usize,
    pub csv_rows: (usize, usize),
    /// JSON elements (or object members) per chunk (the seed's 200–500).
    pub json_elements: usize,
    /// JSONL lines per chunk (the seed's 500–1000).
    pub jsonl_lines: usize,
    /// Row-shaped chunks (CSV, JSON, JSONL) are also kept under this many bytes, so wide
    /// rows or large elements do not make a chunk that no model can read.
    pub max_chunk_bytes: usize,
}

impl Default for ChunkOptions {
    fn default() -> ChunkOptions {
        ChunkOptions {
            code_max_lines: 300,
            max_import_lines: 60,
            fallback: WindowSize {
                lines: 200,
                overlap: 20,
            },
            log: WindowSize {
                lines: 200,
                overlap: 20,
            },
            log_max_extend: 50,
            prose: WindowSize {
                lines: 250,
                overlap: 25,
            },
            csv_cells: 8_000,
            csv_rows: (500, 1000),
            json_elements: 350,
            jsonl_lines: 750,
            max_chunk_bytes: 100_000,
        }
    }
}

/// Whether a file must be cut: over [`SizeTier::SMALL_MAX_LINES`] lines, or over the model's
/// context budget when one is known (`budget_bytes`, the caller's conversion of tokens).
pub fn needs_chunking(lines: usize, bytes: u64, budget_bytes: Option<u64>) -> bool {
    lines > SizeTier::SMALL_MAX_LINES || budget_bytes.is_some_and(|budget| bytes > budget)
}

/// Cuts `text` by the strategy of `detection`'s content type. An empty text has no chunks;
/// a text that needs no cut comes back as one chunk covering all its lines.
pub fn chunk(detection: &Detection, text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    let index = LineIndex::new(text);
    if index.is_empty() {
        return Vec::new();
    }
    let drafts = match detection.content_type {
        ContentType::SourceCode => chunk_code(&index, detection.language, opts),
        ContentType::StructuredData => chunk_delimited(&index, opts),
        ContentType::Json => chunk_json(&index, opts),
        ContentType::Jsonl => chunk_jsonl(&index, opts),
        ContentType::Log => chunk_log(&index, opts),
        ContentType::Prose => chunk_prose(&index, opts),
        ContentType::Markup | ContentType::Config => window_drafts(&index, all_lines(&index), opts.fallback, None),
    };
    let total = drafts.len();
    drafts
        .into_iter()
        .enumerate()
        .map(|(index, d)| Chunk {
            index,
            total,
            start_line: d.lines.start,
            end_line: d.lines.end,
            content: d.content,
            context: d.context,
        })
        .collect()
}

/// A chunk before its position among the file's chunks is known.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub lines: LineRange,
    pub content: String,
    pub context: ChunkContext,
}

impl Draft {
    /// A chunk whose content is exactly its lines.
    pub(crate) fn verbatim(index: &LineIndex<'_>, lines: LineRange, context: ChunkContext) -> Draft {
        Draft {
            lines,
            content: index.slice(lines.start, lines.end).to_owned(),
            context,
        }
    }
}

pub(crate) fn all_lines(index: &LineIndex<'_>) -> LineRange {
    LineRange::new(1, index.len())
}

/// Plain windows over `range`, each chunk verbatim; `note` says why, when this is a fallback.
pub(crate) fn window_drafts(
    index: &LineIndex<'_>,
    range: LineRange,
    size: WindowSize,
    note: Option<&str>,
) -> Vec<Draft> {
    windows(range, size.lines, size.overlap, 0, |_| false)
        .into_iter()
        .map(|lines| {
            let context = ChunkContext::new(ChunkStrategy::Windows);
            let context = match note {
                Some(n) => context.with_note(n),
                None => context,
            };
            Draft::verbatim(index, lines, context)
        })
        .collect()
}

/// Log windows that do not end inside a multi-line entry (a stack trace) when they can
/// help it; the overlap then covers what an extension could not.
fn chunk_log(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let timestamped = (1..=index.len().min(50)).any(|n| starts_with_timestamp(index.line(n)));
    let continues = |n: usize| {
        let line = index.line(n);
        !line.trim().is_empty()
            && (line.starts_with([' ', '\t'])
                || ["Caused by", "Traceback", "...", "at "]
                    .iter()
                    .any(|p| line.starts_with(p))
                || (timestamped && !starts_with_timestamp(line)))
    };
    windows(
        all_lines(index),
        opts.log.lines,
        opts.log.overlap,
        opts.log_max_extend,
        continues,
    )
    .into_iter()
    .map(|lines| Draft::verbatim(index, lines, ChunkContext::new(ChunkStrategy::Windows)))
    .collect()
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
pub(crate) mod tests;
