//! What an answer says, read once: its text, its JSON (when it holds some) and its findings,
//! each with a path and a line in the original file.
//!
//! Every answer of a run — a whole file's, a chunk's, each member of a batch, `rlm query`'s
//! — becomes an [`Answer`] here, and everything downstream reads that: the result files,
//! SARIF, annotations, the step summary, `--fail-on`, `aggregate.json`, the findings counts,
//! merge and synthesis. [`json`] is the one place JSON is found in a model's prose.

mod findings;
pub mod json;
mod lines;

pub use findings::{is_findings_shaped, read_findings};

use serde_json::Value;

use crate::content::Chunk;
use crate::findings::Finding;

/// One file's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The text kept as the file's result (under `--schema`, the canonical JSON).
    pub text: String,
    /// The answer's JSON value, when it holds one.
    pub json: Option<Value>,
    /// Its findings, at lines of the original file.
    pub findings: Vec<Finding>,
    /// Said in the report and on stderr: the answer was kept, but something in it could
    /// not be read (an analyst's answer in prose has no findings to read).
    pub warning: Option<String>,
}

/// What an answer is about.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The file the answer is about (a finding that names no file is about it).
    pub path: &'a str,
    /// For a piece of a file: the chunk, to place findings at lines of the whole file.
    pub chunk: Option<&'a Chunk>,
    /// The answer was asked for as findings JSON (an analyst's): say so when it is not.
    pub expects_findings: bool,
}

/// Reads `text` as an answer about `scope` (see the module doc).
pub fn read(text: String, scope: &Scope<'_>) -> Answer {
    let values = json::json_values(&text);
    let mut found = read_findings(&values, scope.path);
    if let Some(chunk) = scope.chunk {
        lines::place(&mut found, scope.path, chunk);
    }
    let warning = (scope.expects_findings && !values.iter().any(is_findings_shaped)).then(|| {
        "the analyst answered in prose, not the findings JSON it was asked for: the answer is kept as text, \
         and its findings could not be read"
            .to_string()
    });
    Answer {
        json: values.into_iter().next(),
        findings: found,
        warning,
        text,
    }
}

/// Findings of several answers, with the ones reported twice — by two overlapping windows
/// of a log, say — kept once: the same path, line, level and message.
pub fn dedupe(findings: Vec<Finding>) -> Vec<Finding> {
    let mut seen = std::collections::HashSet::new();
    findings
        .into_iter()
        .filter(|f| {
            let message: String = f
                .message
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            seen.insert((f.path.clone(), f.region.map(|r| r.start_line), f.level, message))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Level, Region};

    fn scope(path: &str) -> Scope<'_> {
        Scope {
            path,
            chunk: None,
            expects_findings: true,
        }
    }

    #[test]
    fn an_analyst_answer_in_prose_is_kept_with_a_warning() {
        let a = read("This module parses arguments.".into(), &scope("a.py"));
        assert_eq!(a.text, "This module parses arguments.");
        assert!(a.findings.is_empty());
        assert!(a.warning.is_some());
        let a = read(
            r#"{"findings": [{"summary": "s", "line": 3, "severity": "low", "type": "bug"}]}"#.into(),
            &scope("a.py"),
        );
        assert_eq!(a.warning, None);
        assert_eq!(a.findings[0].level, Level::Note);
        assert_eq!(a.findings[0].region, Region::new(3, None));
        assert!(a.json.is_some());
    }

    #[test]
    fn duplicates_from_overlapping_windows_are_kept_once() {
        let f = |line, message: &str| Finding {
            path: "app.log".into(),
            region: Region::new(line, None),
            level: Level::Error,
            message: message.into(),
            rule: None,
            scope: None,
            evidence: None,
        };
        let all = dedupe(vec![f(190, "Timeout"), f(190, "timeout "), f(191, "Timeout")]);
        assert_eq!(all.len(), 2);
    }
}
