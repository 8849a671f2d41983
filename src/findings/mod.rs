//! Located findings: what a model reported about a file, with a path, maybe a line range, a
//! severity level and a message — and the outputs that CI shows them in.
//!
//! - [`crate::answer`] reads them out of every answer (whole files, chunks, batch members);
//! - [`FailOn`] decides whether they fail the run (`--fail-on`);
//! - [`sarif`] writes them as SARIF 2.1.0 for code scanning;
//! - [`github`] turns them into workflow-command annotations and a step summary.
//!
//! Paths in findings are as the user sees them (relative to the working directory);
//! [`ArtifactBase`] makes them relative to the repository root, which SARIF and GitHub want.

mod artifact_base;
pub mod github;
mod level;
pub mod sarif;

pub use artifact_base::ArtifactBase;
pub use level::{FailOn, Level, LevelCounts, UnknownLevel};

/// One located finding: what every answer's findings become, whatever shape the model
/// wrote them in, with its path and its line in the original file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    /// The file, relative to the working directory, as the run shows it: its own name when
    /// the finding is about a file of the run (`src/x\xFF.ts` for a name that is not
    /// UTF-8, see [`crate::input::display_path`]), else as the model wrote it (forward
    /// slashes, no leading `./`).
    pub path: String,
    /// The lines it concerns; `None` when the answer gave no usable line.
    pub region: Option<Region>,
    pub level: Level,
    /// One or more lines of text, as the model wrote it.
    pub message: String,
    /// The finding's type or rule (`sql-injection`); `None` when the answer gave none.
    pub rule: Option<String>,
    /// Where in the file, structurally: `function:login`, a CSV column, a JSON path.
    pub scope: Option<String>,
    /// The line or phrase that shows it, quoted by the model.
    pub evidence: Option<String>,
}

/// A 1-based, inclusive line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    pub start_line: u64,
    /// At or after `start_line` when present.
    pub end_line: Option<u64>,
}

impl Region {
    /// A region from a start line and an optional end line: `None` unless the start is at
    /// least 1; an end before the start is dropped.
    pub fn new(start_line: u64, end_line: Option<u64>) -> Option<Region> {
        (start_line >= 1).then(|| Region {
            start_line,
            end_line: end_line.filter(|end| *end >= start_line),
        })
    }
}

/// The rule id used for findings whose answer named no type.
pub const DEFAULT_RULE: &str = "rlm/finding";

impl Finding {
    /// The rule id this finding is reported under.
    pub fn rule_id(&self) -> &str {
        self.rule.as_deref().unwrap_or(DEFAULT_RULE)
    }
}
