//! What an analyst reports: the content-aware seed's output schema (`findings` with type,
//! scope/column/path, summary, evidence, line, severity; `metadata` with content_type and
//! key_topics), parsed leniently, and the check that keeps cited lines inside the chunk.
//!
//! Lines are absolute: the analyst prompt tells the model which lines of the original file
//! its chunk holds ("lines 301–600 of 2800"), so no remapping is done. A cited line outside
//! the chunk (and outside the lines prepended to it) cannot be trusted either way; it is
//! moved to `unverified_line` rather than guessed at or dropped.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::chunk::Chunk;
use super::line_range::LineRange;

/// One analyst's answer in the findings schema.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnalystReport {
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub metadata: ReportMetadata,
    /// Anything else the model sent (`relevant`, `file_path`, …), kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `metadata` object of a report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReportMetadata {
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_list")]
    pub key_topics: Vec<String>,
    /// Type-specific fields (`language`, `structures`, `columns`, `row_count`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One finding. Models vary in small ways (a severity of "critical", a line given as
/// `"42-45"`, evidence as a list); parsing accepts those rather than fail the unit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Finding {
    /// `vulnerability`, `distribution`, `schema_variation`, … (the seed's per-analyst lists).
    #[serde(rename = "type", default, deserialize_with = "lenient_string")]
    pub kind: String,
    /// The file the finding is about, in batches of small files.
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Code: `function:name`, `class:Name`, `module`.
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Data: the column.
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// JSON: the JSON path (`$.events[*].metadata`).
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub summary: String,
    #[serde(default, deserialize_with = "lenient_text", skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// A 1-based line of the original file.
    #[serde(default, deserialize_with = "lenient_line", skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(
        default,
        deserialize_with = "lenient_severity",
        skip_serializing_if = "Option::is_none"
    )]
    pub severity: Option<Severity>,
    /// A line the model cited that lies outside what it was shown; see the module doc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified_line: Option<usize>,
    /// Type-specific fields (`distribution`, `total_rows`, …), kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The seed's three severities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    /// Reads the words models use for severities; `None` for anything else.
    pub fn parse(word: &str) -> Option<Severity> {
        match word.trim().to_ascii_lowercase().as_str() {
            "high" | "critical" | "severe" | "error" | "blocker" => Some(Severity::High),
            "medium" | "moderate" | "warning" | "warn" | "major" => Some(Severity::Medium),
            "low" | "minor" | "info" | "informational" | "note" | "trivial" => Some(Severity::Low),
            _ => None,
        }
    }
}

/// Why an answer is not a findings report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("the analyst's answer is not the findings JSON ({0}); ask again with this error appended")]
    NotJson(String),
}

impl AnalystReport {
    /// Parses an answer in the findings schema, tolerating a code fence or a sentence
    /// around the JSON object.
    pub fn parse(answer: &str) -> Result<AnalystReport, ReportError> {
        serde_json::from_str(json_body(answer)).map_err(|e| ReportError::NotJson(e.to_string()))
    }
}

/// How many cited lines [`map_lines`] kept and set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineCheck {
    pub kept: usize,
    pub unverified: usize,
}

/// Validates the lines `findings` cite against what `chunk` showed: its own lines and any
/// lines prepended to it. Lines outside move to `unverified_line`.
pub fn map_lines(findings: &mut [Finding], chunk: &Chunk) -> LineCheck {
    let shown: Vec<LineRange> = std::iter::once(chunk.lines()).chain(chunk.context.prepended).collect();
    check_lines(findings, &shown)
}

/// Validates cited lines against `shown` ranges (for a batched file: its whole range).
pub fn check_lines(findings: &mut [Finding], shown: &[LineRange]) -> LineCheck {
    let mut check = LineCheck::default();
    for finding in findings {
        let Some(line) = finding.line else { continue };
        if shown.iter().any(|r| r.contains(line)) {
            check.kept += 1;
        } else {
            finding.unverified_line = Some(line);
            finding.line = None;
            check.unverified += 1;
        }
    }
    check
}

/// The JSON inside an answer: the body of a code fence if there is one, else from the
/// first `{` or `[` to the last matching bracket; the trimmed answer when neither is found.
pub(crate) fn json_body(answer: &str) -> &str {
    let t = answer.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.split_once('\n').map_or("", |(_, body)| body);
        return rest.rsplit_once("```").map_or(rest, |(body, _)| body).trim();
    }
    if t.starts_with(['{', '[']) {
        return t;
    }
    let open = t.find(['{', '[']);
    let close = t.rfind(['}', ']']);
    match (open, close) {
        (Some(a), Some(b)) if a < b => &t[a..=b],
        _ => t,
    }
}

fn lenient_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Null => None,
        Value::String(s) => Some(s),
        Value::Array(items) => Some(items.iter().map(text_of).collect::<Vec<_>>().join("; ")),
        other => Some(other.to_string()),
    })
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient_text(d)?.unwrap_or_default())
}

fn lenient_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items.iter().map(text_of).collect(),
        Value::Null => Vec::new(),
        other => vec![text_of(&other)],
    })
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `42`, `42.0`, `"42"`, `"L42"`, `"42-45"` → 42; anything else → none.
fn lenient_line<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => {
            let digits: String = s
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        }
        Value::Array(items) => items.first().and_then(Value::as_u64),
        _ => None,
    }
    .and_then(|n| usize::try_from(n).ok()))
}

fn lenient_severity<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Severity>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Severity::parse(&s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::chunk::{ChunkContext, ChunkStrategy};

    const SEED_EXAMPLE: &str = r#"{ "file_path": "/tmp/rlm-chunks/chunk-01.py", "relevant": true,
      "findings": [
        { "type": "vulnerability", "scope": "function:DataLoader.load_from_url",
          "summary": "Unsanitized URL passed to subprocess.run",
          "evidence": "subprocess.run(['curl', url], shell=False)", "line": 145, "severity": "high" },
        { "type": "distribution", "column": "region", "summary": "NA dominates",
          "distribution": {"NA": 3200, "EMEA": 1100}, "total_rows": 5000 }
      ],
      "metadata": { "content_type": "source_code", "language": "python", "key_topics": ["data loading"] } }"#;

    #[test]
    fn parses_the_seeds_examples_and_keeps_extra_fields() {
        let report = AnalystReport::parse(SEED_EXAMPLE).unwrap();
        assert_eq!(report.findings.len(), 2);
        let f = &report.findings[0];
        assert_eq!(
            (f.kind.as_str(), f.line, f.severity),
            ("vulnerability", Some(145), Some(Severity::High))
        );
        assert_eq!(f.scope.as_deref(), Some("function:DataLoader.load_from_url"));
        assert_eq!(report.findings[1].extra["total_rows"], 5000);
        assert_eq!(report.metadata.content_type.as_deref(), Some("source_code"));
        assert_eq!(report.metadata.extra["language"], "python");
        assert_eq!(report.extra["relevant"], true);
        // Round trip keeps the shape.
        let again: AnalystReport = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(again, report);
    }

    #[test]
    fn lenient_about_what_models_vary() {
        let answer = "Here you go:\n```json\n{\"findings\": [{\"type\": \"bug\", \"summary\": \"x\", \"line\": \"42-45\", \
                      \"severity\": \"Critical\", \"evidence\": [\"a\", \"b\"]}, {\"summary\": \"y\", \"line\": 3.0, \"severity\": \"urgent\"}]}\n```";
        let report = AnalystReport::parse(answer).unwrap();
        let (a, b) = (&report.findings[0], &report.findings[1]);
        assert_eq!(
            (a.line, a.severity, a.evidence.as_deref()),
            (Some(42), Some(Severity::High), Some("a; b"))
        );
        assert_eq!((b.line, b.severity, b.kind.as_str()), (Some(3), None, ""));
        assert!(report.metadata.key_topics.is_empty());
        let err = AnalystReport::parse("I found nothing.").unwrap_err();
        assert!(err.to_string().contains("not the findings JSON"));
    }

    #[test]
    fn lines_outside_the_chunk_are_set_aside() {
        let mut context = ChunkContext::new(ChunkStrategy::Boundaries);
        context.prepended = Some(LineRange::new(1, 12));
        let chunk = Chunk {
            index: 1,
            total: 3,
            start_line: 301,
            end_line: 600,
            content: String::new(),
            context,
            partial_line: None,
            layout: Vec::new(),
        };
        let mut findings: Vec<Finding> = [Some(5), Some(301), Some(600), Some(42), Some(601), None]
            .into_iter()
            .map(|line| Finding {
                line,
                ..Finding::default()
            })
            .collect();
        let check = map_lines(&mut findings, &chunk);
        assert_eq!(check, LineCheck { kept: 3, unverified: 2 });
        let lines: Vec<_> = findings.iter().map(|f| (f.line, f.unverified_line)).collect();
        assert_eq!(
            lines,
            vec![
                (Some(5), None),
                (Some(301), None),
                (Some(600), None),
                (None, Some(42)),
                (None, Some(601)),
                (None, None)
            ]
        );
    }

    #[test]
    fn json_body_finds_the_document() {
        assert_eq!(json_body("```\n[1]\n```"), "[1]");
        assert_eq!(json_body("Result: {\"a\": 1}. Done"), "{\"a\": 1}");
        assert_eq!(json_body("  {\"a\": 1}  "), "{\"a\": 1}");
        assert_eq!(json_body("no json"), "no json");
    }
}
