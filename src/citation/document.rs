//! Reading the citations of an aggregate: markdown (inline citations and `## Sources`
//! footers) or JSON (citation objects `{artifact_id, content_hash, lines}` anywhere in the
//! document, and strings that are exactly one inline citation bracket).

use std::path::Path;

use serde_json::{Map, Value};

use super::error::CitationError;
use super::parser::parse_for_verification;
use super::tuple::{Citation, LineRange};

/// One citation as found in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub citation: Citation,
    /// 1-based line in the document (markdown only).
    pub line: Option<usize>,
    /// Why it is malformed (a JSON object with a bad field, a bracket with a bad hash or
    /// line range): it is then reported as malformed, never checked against a file.
    pub problem: Option<String>,
    /// The citation as written, when it is malformed (what the report shows).
    pub written: Option<String>,
}

/// The citations of the aggregate at `path`: JSON when it ends in `.json` or its content
/// is a JSON object or array, markdown otherwise.
pub fn load(path: &Path) -> Result<Vec<Found>, CitationError> {
    let text = fs_err::read_to_string(path).map_err(CitationError::Io)?;
    let json_name = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let trimmed = text.trim_start();
    if json_name || trimmed.starts_with('{') || trimmed.starts_with('[') {
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => return Ok(in_json(&value)),
            Err(e) if json_name => {
                return Err(CitationError::Json {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
            Err(_) => {} // markdown that starts with a bracket
        }
    }
    Ok(in_markdown(&text))
}

/// The citations of a markdown text, in order.
pub fn in_markdown(text: &str) -> Vec<Found> {
    parse_for_verification(text)
        .into_iter()
        .map(|l| Found {
            written: l.problem.is_some().then(|| text[l.span.clone()].to_string()),
            citation: l.citation,
            line: Some(l.line),
            problem: l.problem,
        })
        .collect()
}

/// The citations of a JSON document.
pub fn in_json(value: &Value) -> Vec<Found> {
    let mut out = Vec::new();
    walk(value, &mut out);
    out
}

fn walk(value: &Value, out: &mut Vec<Found>) {
    match value {
        Value::Object(map) if map.get("artifact_id").is_some_and(Value::is_string) => out.push(from_object(map)),
        Value::Object(map) => map.values().for_each(|v| walk(v, out)),
        Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
        Value::String(s) => {
            let s = s.trim();
            // A string that is exactly one bracket (which may hold several citations).
            let found = parse_for_verification(s);
            if !found.is_empty() && found.iter().all(|l| l.span == (0..s.len())) {
                out.extend(found.into_iter().map(|l| Found {
                    written: l.problem.is_some().then(|| s.to_string()),
                    citation: l.citation,
                    line: None,
                    problem: l.problem,
                }));
            }
        }
        _ => {}
    }
}

fn from_object(map: &Map<String, Value>) -> Found {
    let artifact_id = map
        .get("artifact_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut problem = None;
    let content_hash = match map.get("content_hash") {
        None | Some(Value::Null) => None,
        Some(Value::String(h)) => Some(h.clone()),
        Some(other) => {
            problem = Some(format!("content_hash is not a string: {other}"));
            None
        }
    };
    let lines = match map.get("lines") {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) => match l.parse::<LineRange>() {
            Ok(r) => Some(r),
            Err(e) => {
                problem = Some(e);
                None
            }
        },
        Some(other) => {
            problem = Some(format!("lines is not a string: {other}"));
            None
        }
    };
    Found {
        citation: Citation {
            artifact_id,
            content_hash,
            lines,
        },
        line: None,
        written: problem.is_some().then(|| Value::Object(map.clone()).to_string()),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "a8f9c2d4e5f60718";

    #[test]
    fn json_objects_anywhere_and_whole_string_citations() {
        let doc = serde_json::json!({
            "strategy": "merge",
            "prompt": "cite as [src/db/query.ts@<hash>, L42-58] please [x.ts@a8f9c2d4e5f60718, L1] inline",
            "findings": [
                {"text": "SQL injection", "citations": [
                    {"artifact_id": "src/db/user.ts", "content_hash": H, "lines": "L42-50"},
                    {"artifact_id": "src/legacy/auth.py", "content_hash": null, "lines": "L88"},
                    {"artifact_id": "src/bad.ts", "lines": "42-50"},
                    format!("[src/other.ts@{H}]")
                ]}
            ]
        });
        let found = in_json(&doc);
        let got: Vec<(String, Option<String>)> =
            found.iter().map(|f| (f.citation.inline(), f.problem.clone())).collect();
        assert_eq!(
            got,
            vec![
                (format!("[src/db/user.ts@{H}, L42-50]"), None),
                ("[src/legacy/auth.py, L88]".to_string(), None),
                (
                    "[src/bad.ts]".to_string(),
                    Some("`42-50` is not a line range (L42 or L42-58)".to_string())
                ),
                (format!("[src/other.ts@{H}]"), None),
            ]
        );
    }

    #[test]
    fn load_picks_the_format_and_rejects_broken_json() {
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path().join("aggregate.md");
        fs_err::write(&md, format!("[not json] but a claim [src/a.ts@{H}, L2]\n")).unwrap();
        let found = load(&md).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, Some(1));
        let json = dir.path().join("aggregate.json");
        fs_err::write(&json, "{ nope").unwrap();
        let err = load(&json).unwrap_err().to_string();
        assert!(err.contains("aggregate.json: not valid JSON"), "{err}");
        let missing = load(&dir.path().join("nothing.md")).unwrap_err();
        assert!(matches!(missing, CitationError::Io(_)));
    }
}
