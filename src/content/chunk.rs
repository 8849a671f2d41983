//! Chunking: one strategy per content type (the content-aware seed's tables are the
//! defaults in [`ChunkOptions`]), all returning [`Chunk`]s that name the lines of the
//! original file they hold.
//!
//! Every chunk fits the budget: `tokens::upper_bound(content.len())` is at most
//! [`ChunkOptions::max_chunk_tokens`], the same estimate the planner's block check uses, so
//! a planned chunk is never blocked. The budget wins over the line targets. A line longer
//! than the budget is the only thing ever cut inside: it is cut alone into
//! [`PartialLine`] chunks, and the windows around it still hold their other lines. No byte
//! of the file is dropped.
//!
//! A chunk's `content` is what the analyst reads — for code the import block (and, inside a
//! class cut between its members, the class header) comes first, for CSV the header, for
//! JSON a valid document — and its line range is always in the original file;
//! [`Chunk::original_line`] maps a line of `content` back to the file.
//!
//! Every chunker is linear in the file's size.

use serde::Serialize;

use super::code_chunker::chunk_code;
use super::content_type::{ContentType, SizeTier};
use super::csv_chunker::chunk_delimited;
use super::detect::Detection;
use super::json_chunker::chunk_json;
use super::json_schema::SchemaSummary;
use super::jsonl_chunker::chunk_jsonl;
use super::line_index::{count_lines, LineIndex};
use super::line_range::LineRange;
use super::prose_chunker::chunk_prose;
use super::sniff::starts_with_timestamp;
use super::windows::{all_lines, budget_windows, pieces_to_drafts, window_drafts};
use crate::tokens;

/// One piece of a file, ready for an analyst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    /// 0-based position among the file's chunks.
    pub index: usize,
    /// How many chunks the file was cut into.
    pub total: usize,
    /// First line of the original file this chunk holds (1-based, inclusive). Lines that
    /// are repeated at the top of `content` (imports, a class header, a CSV header) are in
    /// `context.prepended` / `context.header`, not in this range.
    pub start_line: usize,
    /// Last line of the original file this chunk holds (1-based, inclusive).
    pub end_line: usize,
    /// Exactly what the analyst reads. For code, CSV/TSV, JSONL, logs, prose and config it
    /// is the original text of its lines, after any prepended ones (and, for code, comment
    /// lines naming the lines left out between them); for JSON it is a valid document
    /// built from the original text of whole elements, and the line range is where those
    /// elements are. For a [`PartialLine`] it is one piece of that line.
    pub content: String,
    pub context: ChunkContext,
    /// Set when this chunk holds only a piece of one line, too long for any chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_line: Option<PartialLine>,
    /// Which original lines the lines of `content` are, in order (see
    /// [`Chunk::original_line`]).
    pub layout: Vec<ContentSpan>,
}

/// A piece of one line too long for a chunk: `part` (1-based) of `parts`, bytes
/// `start..end` of the line. The byte range tells apart the pieces of one line, and the
/// pieces of two values cut on one line (a minified JSON document): a unit's id names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PartialLine {
    pub line: usize,
    pub part: usize,
    pub parts: usize,
    pub start: usize,
    pub end: usize,
}

/// `lines` consecutive lines of a chunk's content: original lines `original..` of the
/// file, or lines rlm wrote (a marker comment, JSON brackets) when `original` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContentSpan {
    pub lines: usize,
    pub original: Option<usize>,
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

    /// The 1-based line of the original file that line `content_line` (1-based) of
    /// `content` is: prepended lines map to where they are in the file, lines rlm wrote
    /// (markers, JSON brackets) and lines past the end map to `None`. A chunk without a
    /// layout is taken to be its own lines, verbatim.
    pub fn original_line(&self, content_line: usize) -> Option<usize> {
        if content_line == 0 {
            return None;
        }
        if self.layout.is_empty() {
            let line = self.start_line + content_line - 1;
            return (line <= self.end_line).then_some(line);
        }
        let mut before = 0;
        for span in &self.layout {
            if content_line <= before + span.lines {
                return span.original.map(|first| first + (content_line - before - 1));
            }
            before += span.lines;
        }
        None
    }

    /// The whole of `text` as one chunk, for files that are not cut.
    pub fn whole(text: &str) -> Chunk {
        let mut chunk = Chunk::whole_unread(LineIndex::new(text).len());
        chunk.content = text.to_owned();
        chunk
    }

    /// [`Chunk::whole`] of a file of `lines` lines whose text is not in memory: its content
    /// is empty until the file is read again (see [`crate::unit::WorkUnit::with_text`]).
    pub fn whole_unread(lines: usize) -> Chunk {
        Chunk {
            index: 0,
            total: 1,
            start_line: 1,
            end_line: lines,
            content: String::new(),
            context: ChunkContext::new(ChunkStrategy::Whole),
            partial_line: None,
            layout: vec![ContentSpan {
                lines,
                original: Some(1),
            }],
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
    /// Code cut between the members of a class (impl, struct, interface…): the header
    /// lines of the enclosing classes, repeated after the import block (outermost first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<LineRange>,
    /// Lines at the start of this chunk that the previous chunk also holds (overlapping
    /// windows): a finding on them may be reported twice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap_before: Option<LineRange>,
    /// Field names and types: of the first five elements of the JSON array (or the keys of
    /// the object) this chunk was cut from, or of the first object of a JSONL file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSummary>,
    /// Where in a JSON document the chunk's elements sit, e.g. `$[350..699]` or
    /// `$.events[0..349]` (both ends inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// Why the type's own strategy was not used (invalid JSON, an item longer than a
    /// chunk, a piece of a long line…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ChunkContext {
    pub fn new(strategy: ChunkStrategy) -> ChunkContext {
        ChunkContext {
            strategy,
            prepended: None,
            header: Vec::new(),
            overlap_before: None,
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
    /// Code cut between top-level items, or between the members of a class.
    Boundaries,
    /// Prose cut at headings.
    Headings,
    /// Fixed line windows with overlap.
    Windows,
    /// CSV/TSV rows, the header first.
    Rows,
    /// Elements of a JSON array, or members of a JSON object.
    Elements,
    /// Whole JSONL lines.
    Lines,
    /// A piece of one line longer than the budget.
    PartialLine,
}

/// A window size and the overlap between consecutive windows, in lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    pub lines: usize,
    pub overlap: usize,
}

/// Budgets below this many tokens are raised to it: a chunk must hold a few characters.
pub const MIN_CHUNK_TOKENS: u64 = 16;

/// Chunk targets per content type. `Default` is the seeds' defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkOptions {
    /// The most tokens (by [`tokens::upper_bound`]) a chunk's `content` may take, prepended
    /// and marker lines included: the model's input budget left for it. Every chunk of
    /// every type keeps to it; it wins over the line targets below. At least
    /// [`MIN_CHUNK_TOKENS`].
    pub max_chunk_tokens: u64,
    /// Code chunks fill up to this many lines (the seed's 150–300): a chunk is closed at the
    /// last boundary that keeps it within the limit. One function longer than this is
    /// kept whole while it fits `max_chunk_tokens`.
    pub code_max_lines: usize,
    /// The import block prepended to every code chunk is cut after this many lines, so a
    /// file with a huge header does not multiply it into every chunk.
    pub max_import_lines: usize,
    /// Config, markup, unknown content and code items longer than the budget: 200 lines,
    /// 20 overlap.
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
    /// JSON elements (or object members) per chunk at most (the seed's 200–500).
    pub json_elements: usize,
    /// JSONL lines per chunk (the seed's 500–1000).
    pub jsonl_lines: usize,
}

impl Default for ChunkOptions {
    fn default() -> ChunkOptions {
        ChunkOptions {
            max_chunk_tokens: 32_000,
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
        }
    }
}

impl ChunkOptions {
    /// The most bytes a chunk's content may have: `max_chunk_tokens` by
    /// [`tokens::bytes_within`], so that `upper_bound(bytes) <= max_chunk_tokens`.
    pub(crate) fn max_bytes(&self) -> usize {
        let bytes = tokens::bytes_within(self.max_chunk_tokens.max(MIN_CHUNK_TOKENS));
        usize::try_from(bytes).unwrap_or(usize::MAX)
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
        ContentType::Markup | ContentType::Config => {
            window_drafts(&index, all_lines(&index), opts.fallback, None, opts)
        }
    };
    let drafts = enforce_budget(&index, drafts, opts);
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
            partial_line: d.partial_line,
            layout: d.layout,
        })
        .collect()
}

/// A chunk before its position among the file's chunks is known.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub lines: LineRange,
    pub content: String,
    pub layout: Vec<ContentSpan>,
    pub context: ChunkContext,
    pub partial_line: Option<PartialLine>,
}

impl Draft {
    /// A chunk whose content is exactly its lines.
    pub(crate) fn verbatim(index: &LineIndex<'_>, lines: LineRange, context: ChunkContext) -> Draft {
        let mut content = Content::default();
        content.lines(index, lines);
        content.into_draft(lines, context)
    }
}

/// A chunk's content being written, with the layout that maps its lines back to the file.
#[derive(Debug, Default)]
pub(crate) struct Content {
    text: String,
    layout: Vec<ContentSpan>,
}

impl Content {
    /// Appends `text`, whose first line is line `first` of the file (`None`: rlm wrote it).
    /// Text appended in the middle of a line continues that line, which keeps its mapping.
    pub(crate) fn push(&mut self, text: &str, first: Option<usize>) {
        let mut rest = text;
        let mut first = first;
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            match rest.find('\n') {
                Some(i) => {
                    self.text.push_str(&rest[..=i]);
                    rest = &rest[i + 1..];
                    first = first.map(|f| f + 1);
                }
                None => {
                    self.text.push_str(rest);
                    return;
                }
            }
        }
        if rest.is_empty() {
            return;
        }
        let lines = count_lines(rest);
        self.text.push_str(rest);
        match self.layout.last_mut() {
            Some(last) if last.original.is_none() && first.is_none() => last.lines += lines,
            Some(last) if last.original.is_some_and(|o| Some(o + last.lines) == first) => last.lines += lines,
            _ => self.layout.push(ContentSpan { lines, original: first }),
        }
    }

    /// Appends lines `range` of the file, verbatim.
    pub(crate) fn lines(&mut self, index: &LineIndex<'_>, range: LineRange) {
        self.push(index.slice(range.start, range.end), Some(range.start));
    }

    /// Ends the current line, when the text so far does not end with one.
    pub(crate) fn end_line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }

    /// Appends one line rlm wrote (a marker comment), on a line of its own.
    pub(crate) fn marker(&mut self, line: &str) {
        self.end_line();
        self.push(line, None);
        self.end_line();
    }

    pub(crate) fn into_draft(self, lines: LineRange, context: ChunkContext) -> Draft {
        Draft {
            lines,
            content: self.text,
            layout: self.layout,
            context,
            partial_line: None,
        }
    }
}

/// The last guard of the budget: a draft a chunker could not keep within it (it should
/// not happen) is replaced by windows over its own lines, with a note, so no chunk is ever
/// planned to be blocked.
fn enforce_budget(index: &LineIndex<'_>, drafts: Vec<Draft>, opts: &ChunkOptions) -> Vec<Draft> {
    let max_bytes = opts.max_bytes();
    if drafts.iter().all(|d| d.content.len() <= max_bytes) {
        return drafts;
    }
    let mut out = Vec::with_capacity(drafts.len() + 4);
    for d in drafts {
        if d.content.len() <= max_bytes {
            out.push(d);
            continue;
        }
        let pieces = budget_windows(
            index,
            d.lines,
            WindowSize {
                lines: usize::MAX,
                overlap: 0,
            },
            0,
            |_| false,
            max_bytes,
        );
        let note = "this part did not fit the budget with its context; cut into plain windows";
        out.extend(pieces_to_drafts(index, &pieces, Some(note), max_bytes));
    }
    out
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
    let max_bytes = opts.max_bytes();
    let pieces = budget_windows(
        index,
        all_lines(index),
        opts.log,
        opts.log_max_extend,
        continues,
        max_bytes,
    );
    pieces_to_drafts(index, &pieces, None, max_bytes)
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
pub(crate) mod tests;
