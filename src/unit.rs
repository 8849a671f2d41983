//! The unit of work: one model call's worth of input.
//!
//! A unit has a stable id derived from its inputs (never its position in a list), one or
//! more inputs — each a file with its content hash, its text and an optional 1-based line
//! span — and the name of its result file. Its [`UnitBody`] says how it is asked: a whole
//! file with the generic prompt, one piece of a file through its type's analyst, or a batch
//! of small files. What it sends is rendered from this by [`crate::request::render`], the
//! one place a unit becomes a request.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cache::CacheKey;
use crate::content::{Chunk, Detection};
use crate::hash::sha256_hex;
use crate::source::SourceText;

/// A unit's id: `u-` and 16 hex characters of the hash of its inputs' artifact ids (and,
/// for a unit that holds part of its lines, which part), so the same inputs get the same id
/// in every run (resume and events rely on it) and two units of one run never share one.
///
/// Shared, not copied (`Arc<str>`): a run keeps its units' ids in many places (the
/// store's reporter, the progress, the report, the batches' custom ids), and a copy of a
/// string each would grow with the corpus.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnitId(Arc<str>);

impl UnitId {
    /// The id of a unit over these inputs.
    pub fn for_inputs(inputs: &[UnitInput]) -> Self {
        Self::for_part(inputs, None)
    }

    /// The id of a unit over these inputs that holds only `part` of their lines: a piece of
    /// a line too long for one chunk (`bytes 0-24000`), or JSON elements that share their
    /// lines with others (`$[0..349]` of a one-line document). Units over the same lines
    /// differ only there.
    pub fn for_part(inputs: &[UnitInput], part: Option<&str>) -> Self {
        let mut ids: Vec<String> = inputs.iter().map(UnitInput::artifact_id).collect();
        ids.extend(part.map(|p| format!("#{p}")));
        UnitId(format!("u-{}", &sha256_hex(ids.join("\n").as_bytes())[..16]).into())
    }

    /// An id given by name (aggregation calls: `summarize-1-2`).
    pub fn named(name: impl Into<String>) -> Self {
        UnitId(name.into().into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Looked up by its text in maps keyed by ids (hashed and compared as that text).
impl std::borrow::Borrow<str> for UnitId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for UnitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a unit is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    /// One model call over inputs (a file, a chunk, a batch of small files).
    Map,
    /// A call that combines results (a summary, or a summary of summaries).
    Aggregate,
}

/// Lines `start..=end` of a file, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineSpan {
    pub start: u64,
    pub end: u64,
}

impl LineSpan {
    pub fn contains(&self, line: u64) -> bool {
        (self.start..=self.end).contains(&line)
    }
}

/// One input of a unit.
#[derive(Debug, Clone, Serialize)]
pub struct UnitInput {
    /// Where it was read from.
    #[serde(skip)]
    pub path: Arc<std::path::Path>,
    /// The path as the user sees it (see [`crate::input::InputFile::display`]).
    #[serde(rename = "path")]
    pub display: Arc<str>,
    /// sha256 of the whole file as read.
    pub content_hash: Arc<str>,
    /// The lines this unit covers; `None` is the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<LineSpan>,
    /// The whole file's text, from the run's one read of it, until the plan lets go of it
    /// ([`WorkUnit::release_text`]).
    #[serde(skip)]
    pub source: Arc<SourceText>,
    /// Bytes of what it sends of its file (of the text as read: a file decoded from UTF-16
    /// counts its UTF-8), set when the unit is sized.
    #[serde(skip)]
    pub bytes: u64,
}

impl UnitInput {
    /// `file`, whole (`span: None`) or the lines of `span`.
    pub fn of_file(file: &crate::input::InputFile, span: Option<LineSpan>) -> UnitInput {
        UnitInput {
            path: file.path.clone(),
            display: file.display.clone(),
            content_hash: file.content_hash.clone(),
            span,
            source: file.source.clone().unwrap_or_default(),
            bytes: 0,
        }
    }

    /// The cache key's `artifactId`: the path, or `path#Lstart-Lend` for a span.
    pub fn artifact_id(&self) -> String {
        match self.span {
            Some(s) => format!("{}#L{}-L{}", self.display, s.start, s.end),
            None => self.display.to_string(),
        }
    }

    /// What it sends of its file: its span's lines, or the whole text.
    pub fn content(&self) -> &str {
        match self.span {
            Some(span) => self.source.lines(span.start, span.end),
            None => &self.source.text,
        }
    }

    /// The first 16 hex characters of the content hash (citations name it).
    pub fn hash16(&self) -> &str {
        &self.content_hash[..self.content_hash.len().min(16)]
    }
}

/// One call's worth of work.
#[derive(Debug, Clone, Serialize)]
pub struct WorkUnit {
    pub id: UnitId,
    /// How progress lines and the report name it (the path for a whole file).
    pub label: Arc<str>,
    pub inputs: Vec<UnitInput>,
    /// `{sanitized}.result.md`, unique within the run.
    pub result_name: String,
    /// How it is asked.
    #[serde(flatten)]
    pub body: UnitBody,
    /// Keyed by exactly what it sends (set when planned, from the rendered request).
    pub cache_key: CacheKey,
    /// Tokens of the rendered request, by [`crate::tokens::expected`] (for cost estimates).
    pub estimated_input_tokens: u64,
    /// Bytes of the rendered prompt (system and user).
    #[serde(skip)]
    pub prompt_bytes: u64,
    /// Of `prompt_bytes`, the files' own text; the rest is framing — the system prompt, the
    /// delimiters, the instruction and its wrapping (issue 27 shows the two apart).
    #[serde(skip)]
    pub content_bytes: u64,
    /// The prompt-cache prefix its request starts with (system and shared text), for the
    /// estimate: units with the same prefix read it from the provider's cache.
    #[serde(skip)]
    pub prefix: PromptPrefix,
    /// Set when the unit cannot be sent (too large for the context budget): it fails with
    /// this reason and is never silently truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// The start of a request that every unit of its kind shares: the system prompt and the
/// shared part of the user message (see [`crate::request`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptPrefix {
    /// The first 8 bytes of sha256 over it: the same prefix, the same id.
    pub id: u64,
    pub bytes: u64,
    /// Marked for the provider's cache (not under `--no-prompt-cache`).
    pub marked: bool,
}

/// How a unit is asked.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "unit_kind", rename_all = "snake_case")]
pub enum UnitBody {
    /// One whole file with the generic per-file prompt (glob mode's default).
    Plain,
    /// One piece of one file — a chunk, or the whole file — read by its type's analyst.
    Piece(Box<Piece>),
    /// Small files of one type in one call, the answer split back per file.
    Batch(Box<Batch>),
}

/// Who reads a batch of small files: the same as would read each of them alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchReader {
    /// Their type's analyst (directory mode): findings, or the format the instruction asks.
    Analyst,
    /// The generic per-file prompt (every other input mode): each file's answer is what the
    /// instruction asks of it, as if it had been sent alone.
    Generic,
}

/// A piece of a file read by an analyst.
#[derive(Debug, Clone, Serialize)]
pub struct Piece {
    pub detection: Detection,
    /// Lines in the whole file.
    pub file_lines: usize,
    /// What the analyst reads ([`Chunk::whole`] for an uncut file).
    #[serde(skip)]
    pub chunk: Chunk,
    /// The chunk's content was its input's text, let go of with it
    /// ([`WorkUnit::release_text`]): [`WorkUnit::with_text`] puts it back.
    #[serde(skip)]
    pub content_released: bool,
}

/// A batch of small files.
#[derive(Debug, Clone, Serialize)]
pub struct Batch {
    pub detection: Detection,
    pub reader: BatchReader,
    /// One per input, in the same order.
    #[serde(rename = "batch_files")]
    pub members: Vec<BatchMember>,
}

/// One file of a batch of small files.
#[derive(Debug, Clone, Serialize)]
pub struct BatchMember {
    pub path: String,
    pub lines: usize,
    pub result_file: String,
}

impl WorkUnit {
    /// Lets go of the text the unit would send (its files', and a chunk's that is its
    /// file's lines): a plan of any size then holds no text. [`WorkUnit::with_text`]
    /// reads it again when the unit is sent. The chunks of a cut file keep their content,
    /// which is not its lines as they are (a JSON chunk is a document of its own).
    pub fn release_text(&mut self) {
        for (i, input) in self.inputs.iter_mut().enumerate() {
            if !input.source.is_held() {
                continue;
            }
            if let (0, UnitBody::Piece(piece)) = (i, &mut self.body) {
                if !piece.content_released && piece.chunk.content == input.content() {
                    piece.chunk.content = String::new();
                    piece.content_released = true;
                }
            }
            input.source = input.source.released();
        }
    }

    /// Whether the text the unit sends is in memory (see [`WorkUnit::release_text`]).
    pub fn text_held(&self) -> bool {
        let piece_released = matches!(&self.body, UnitBody::Piece(p) if p.content_released);
        !piece_released && self.inputs.iter().all(|i| i.source.is_held())
    }

    /// The unit with the text it sends: itself when that is held, else a copy with its
    /// files read again, each checked against the hash it was planned with
    /// ([`crate::source::CHANGED`] when one was edited since).
    pub fn with_text(&self) -> Result<std::borrow::Cow<'_, WorkUnit>, String> {
        if self.text_held() {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        let mut unit = self.clone();
        for input in &mut unit.inputs {
            if !input.source.is_held() {
                input.source = SourceText::reread(&input.path, &input.content_hash)?;
            }
        }
        if let (UnitBody::Piece(piece), Some(input)) = (&mut unit.body, unit.inputs.first()) {
            if piece.content_released {
                piece.chunk.content = input.content().to_string();
                piece.content_released = false;
            }
        }
        Ok(std::borrow::Cow::Owned(unit))
    }

    /// The files a unit answers for, each with its result file: the batch's members, or
    /// the unit's one file.
    pub fn answer_files(&self) -> Vec<(&str, &str)> {
        match &self.body {
            UnitBody::Batch(b) => b
                .members
                .iter()
                .map(|m| (m.path.as_str(), m.result_file.as_str()))
                .collect(),
            _ => self
                .inputs
                .first()
                .map(|i| vec![(i.display.as_ref(), self.result_name.as_str())])
                .unwrap_or_default(),
        }
    }

    /// Which part of its inputs' lines the unit holds, when other units may hold other
    /// parts of the same lines (see [`UnitId::for_part`]).
    pub fn part(&self) -> Option<String> {
        let UnitBody::Piece(piece) = &self.body else {
            return None;
        };
        match (&piece.chunk.partial_line, &piece.chunk.context.json_path) {
            (Some(p), _) => Some(format!("bytes {}-{}", p.start, p.end)),
            (None, Some(path)) => Some(path.clone()),
            (None, None) => None,
        }
    }

    /// The content type of what the unit reads, when it was detected.
    pub fn detection(&self) -> Option<&Detection> {
        match &self.body {
            UnitBody::Plain => None,
            UnitBody::Piece(p) => Some(&p.detection),
            UnitBody::Batch(b) => Some(&b.detection),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str, span: Option<LineSpan>) -> UnitInput {
        UnitInput {
            path: std::path::Path::new(path).into(),
            display: path.into(),
            content_hash: "h".into(),
            span,
            source: Arc::default(),
            bytes: 0,
        }
    }

    #[test]
    fn ids_are_stable_and_spans_are_artifacts() {
        let whole = input("src/a.py", None);
        let span = input("src/a.py", Some(LineSpan { start: 1, end: 200 }));
        assert_eq!(span.artifact_id(), "src/a.py#L1-L200");
        assert_eq!(
            UnitId::for_inputs(std::slice::from_ref(&whole)),
            UnitId::for_inputs(std::slice::from_ref(&whole))
        );
        assert_ne!(UnitId::for_inputs(&[whole]), UnitId::for_inputs(&[span]));
        assert!(UnitId::for_inputs(&[input("x", None)]).as_str().starts_with("u-"));
    }

    #[test]
    fn parts_of_the_same_lines_get_their_own_ids() {
        let line = [input("big.log", Some(LineSpan { start: 300, end: 300 }))];
        let first = UnitId::for_part(&line, Some("bytes 0-24000"));
        let second = UnitId::for_part(&line, Some("bytes 24000-48000"));
        assert_ne!(first, second);
        assert_ne!(first, UnitId::for_inputs(&line));
        assert_eq!(first, UnitId::for_part(&line, Some("bytes 0-24000")));
    }
}
