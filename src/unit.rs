//! The unit of work: one model call's worth of input.
//!
//! A unit has a stable id derived from its inputs (never its position in a list), one or
//! more inputs — each a file with its content hash and an optional 1-based line span — and
//! the name of its result file. A whole file is the special case of one input without a
//! span; chunks of a file and batches of small files are units of the same shape.

use std::path::PathBuf;

use serde::Serialize;

use crate::cache::CacheKey;
use crate::input::sha256_hex;

/// A unit's id: `u-` and 16 hex characters of the hash of its inputs' artifact ids, so the
/// same inputs get the same id in every run (resume and events rely on it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UnitId(String);

impl UnitId {
    /// The id of a unit over these inputs.
    pub fn for_inputs(inputs: &[UnitInput]) -> Self {
        let ids: Vec<String> = inputs.iter().map(UnitInput::artifact_id).collect();
        UnitId(format!("u-{}", &sha256_hex(ids.join("\n").as_bytes())[..16]))
    }

    /// An id given by name (aggregation calls: `summarize-1-2`).
    pub fn named(name: impl Into<String>) -> Self {
        UnitId(name.into())
    }

    pub fn as_str(&self) -> &str {
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

/// One input of a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitInput {
    /// Where to read it.
    #[serde(skip)]
    pub path: PathBuf,
    /// The path as the user sees it (see [`crate::input::InputFile::display`]).
    #[serde(rename = "path")]
    pub display: String,
    /// sha256 of the whole file as planned.
    pub content_hash: String,
    /// The lines this unit covers; `None` is the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<LineSpan>,
}

impl UnitInput {
    /// `file`, whole (`span: None`) or the lines of `span`.
    pub fn of_file(file: &crate::input::InputFile, span: Option<LineSpan>) -> UnitInput {
        UnitInput {
            path: file.path.clone(),
            display: file.display.clone(),
            content_hash: file.content_hash.clone(),
            span,
        }
    }

    /// The cache key's `artifactId`: the path, or `path#Lstart-Lend` for a span.
    pub fn artifact_id(&self) -> String {
        match self.span {
            Some(s) => format!("{}#L{}-L{}", self.display, s.start, s.end),
            None => self.display.clone(),
        }
    }
}

/// One call's worth of work.
#[derive(Debug, Clone, Serialize)]
pub struct WorkUnit {
    pub id: UnitId,
    /// How progress lines and the report name it (the path for a whole file).
    pub label: String,
    pub inputs: Vec<UnitInput>,
    /// `{sanitized}.result.md`, unique within the run.
    pub result_name: String,
    pub cache_key: CacheKey,
    /// A rough count (bytes / 4) for cost estimates.
    pub estimated_input_tokens: u64,
    /// Set when the unit cannot be sent (too large for the context budget): it fails with
    /// this reason and is never silently truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// Content-aware units (chunks, batches of small files) carry the prompt they send,
    /// rendered when planned; a whole-file unit without it is rendered at dispatch.
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub content: Option<Box<UnitContent>>,
}

/// What a content-aware unit sends, and for a batch the files its answer is split into.
#[derive(Debug, Clone, Serialize)]
pub struct UnitContent {
    pub content_type: crate::content::ContentType,
    pub analyst: crate::content::Analyst,
    /// Exactly what the analyst reads, without the delimiters.
    #[serde(skip)]
    pub content: String,
    #[serde(skip)]
    pub system: String,
    #[serde(skip)]
    pub user: String,
    /// A batch's files, each with its own result file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<BatchMember>,
}

/// One file of a batch of small files.
#[derive(Debug, Clone, Serialize)]
pub struct BatchMember {
    pub path: String,
    pub result_file: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str, span: Option<LineSpan>) -> UnitInput {
        UnitInput {
            path: PathBuf::from(path),
            display: path.into(),
            content_hash: "h".into(),
            span,
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
}
