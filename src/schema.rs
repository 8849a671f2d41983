//! `--schema FILE`: every answer is one JSON value that conforms to a JSON Schema.
//!
//! The schema is loaded and compiled once, before anything is sent, so a broken schema is a
//! usage error. Providers are asked to constrain their output to it (OpenAI
//! `response_format`, an Anthropic forced tool); whatever comes back is still parsed and
//! validated here, because a local server may ignore the request. The answer that is kept is
//! the canonical pretty-printed JSON, so `--aggregate merge` works on typed data.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::answer::json::NoJson;
use crate::error::RlmError;
use crate::hash::sha256_hex;

/// Most validation errors quoted back to the model or the user.
const MAX_ERRORS: usize = 8;

/// A loaded, compiled `--schema`.
#[derive(Clone, Serialize)]
pub struct OutputSchema {
    /// As the user gave it (shown in messages).
    #[serde(serialize_with = "crate::input::serialize_shown")]
    pub path: PathBuf,
    /// First 16 hex of sha256 of the canonical schema JSON: part of every cache key.
    pub hash16: String,
    #[serde(skip)]
    pub value: Arc<Value>,
    #[serde(skip)]
    validator: Arc<jsonschema::Validator>,
}

// The schema and its compiled validator are large; the path and hash name it.
#[allow(clippy::missing_fields_in_debug)]
impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("path", &self.path)
            .field("hash16", &self.hash16)
            .finish()
    }
}

/// Why an answer was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// No JSON value could be read from the answer.
    NotJson(NoJson),
    /// JSON, but not what the schema allows (one line per error, at most [`MAX_ERRORS`]).
    Invalid(Vec<String>),
}

impl Rejection {
    /// The errors, one line each, as a re-ask quotes them.
    pub fn into_errors(self) -> Vec<String> {
        match self {
            Rejection::NotJson(e) => vec![format!("the answer is not JSON ({e})")],
            Rejection::Invalid(errors) => errors,
        }
    }

    /// The first error, for the report.
    pub fn first(&self) -> String {
        match self {
            Rejection::NotJson(e) => format!("the answer is not JSON ({e})"),
            Rejection::Invalid(errors) => first_error(errors),
        }
    }
}

/// The first of an answer's errors, and how many more there are: a rejection as one line
/// of a report.
pub fn first_error(errors: &[String]) -> String {
    let first = errors.first().cloned().unwrap_or_default();
    match errors.len().saturating_sub(1) {
        0 => first,
        more => format!("{first} (and {more} more)"),
    }
}

impl OutputSchema {
    /// Reads and compiles FILE (relative to `cwd`). Remote `$ref`s are not fetched: a schema
    /// that needs one fails here with the reason.
    pub fn load(file: &Path, cwd: &Path) -> Result<Self, RlmError> {
        let full = if file.is_absolute() {
            file.to_path_buf()
        } else {
            cwd.join(file)
        };
        let text = fs_err::read_to_string(&full)
            .map_err(|e| RlmError::Input(format!("--schema: {e}: pass a JSON Schema file")))?;
        Self::from_text(&text, file)
    }

    /// Compiles a schema given as text; `path` names it in messages.
    pub fn from_text(text: &str, path: &Path) -> Result<Self, RlmError> {
        let shown = path.display();
        let value: Value = serde_json::from_str(text).map_err(|e| {
            RlmError::Input(format!(
                "--schema {shown} is not JSON (line {}, column {}: {e}): fix the file",
                e.line(),
                e.column()
            ))
        })?;
        if !matches!(value, Value::Object(_) | Value::Bool(_)) {
            return Err(RlmError::Input(format!(
                "--schema {shown} is not a JSON Schema (a schema is a JSON object such as \
                 {{\"type\": \"object\", \"properties\": {{…}}}})"
            )));
        }
        let validator = jsonschema::validator_for(&value).map_err(|e| {
            RlmError::Input(format!(
                "--schema {shown} is not a valid JSON Schema: {}",
                one_line(&e.to_string())
            ))
        })?;
        let hash16 = sha256_hex(value.to_string().as_bytes())[..16].to_string();
        Ok(OutputSchema {
            path: path.to_path_buf(),
            hash16,
            value: Arc::new(value),
            validator: Arc::new(validator),
        })
    }

    /// The JSON value in `answer`, if it conforms; else why not.
    pub fn check(&self, answer: &str) -> Result<Value, Rejection> {
        let value = crate::answer::json::find_json(answer).map_err(Rejection::NotJson)?;
        self.check_value(value)
    }

    /// `value`, if it conforms; else why not.
    pub fn check_value(&self, value: Value) -> Result<Value, Rejection> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {}", one_line(&e.to_string()))
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(Rejection::Invalid(errors))
        }
    }

    /// What the system prompt adds: the schema itself and the one-JSON-value rule.
    pub fn instruction(&self) -> String {
        let pretty = serde_json::to_string_pretty(&*self.value).unwrap_or_default();
        format!(
            "\n\nAnswer with one JSON value and nothing else (no prose, no code fence). It must \
             conform to this JSON Schema:\n{pretty}\n"
        )
    }

    /// What a batch's system message says of this schema: each file's `answer` conforms.
    pub fn member_instruction(&self) -> String {
        let pretty = serde_json::to_string_pretty(&*self.value).unwrap_or_default();
        format!("\n\nThe JSON Schema every file's `answer` must conform to:\n{pretty}\n")
    }
}

/// The canonical text kept for a conforming answer.
pub fn canonical_text(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> OutputSchema {
        OutputSchema::from_text(
            r#"{"type":"object","properties":{"functions":{"type":"array","items":{"type":"string"}}},
                "required":["functions"],"additionalProperties":false}"#,
            Path::new("f.json"),
        )
        .unwrap()
    }

    #[test]
    fn accepts_conforming_answers_in_prose_or_fences() {
        let s = schema();
        assert_eq!(s.check(r#"{"functions":["a"]}"#).unwrap()["functions"][0], "a");
        assert!(s.check("```json\n{\"functions\":[]}\n```").is_ok());
        assert!(s.check("Here it is: {\"functions\":[\"b\"]} hope it helps").is_ok());
    }

    #[test]
    fn rejects_with_located_errors() {
        let s = schema();
        match s.check(r#"{"functions":[1], "extra": true}"#) {
            Err(Rejection::Invalid(errors)) => {
                assert!(errors.iter().any(|e| e.starts_with("at /functions/0:")), "{errors:?}");
                assert!(errors.len() >= 2);
            }
            other => panic!("{other:?}"),
        }
        let not_json = s.check("no json here").unwrap_err();
        assert!(matches!(not_json, Rejection::NotJson(_)));
        assert!(not_json.into_errors()[0].starts_with("the answer is not JSON ("));
    }

    #[test]
    fn broken_schemas_are_input_errors() {
        let p = Path::new("s.json");
        for (text, needle) in [
            ("{", "is not JSON"),
            ("[1]", "is not a JSON Schema"),
            (r#"{"type": "no-such-type"}"#, "not a valid JSON Schema"),
        ] {
            let e = OutputSchema::from_text(text, p).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Input, "{e}");
            let e = e.to_string();
            assert!(e.contains("--schema s.json") && e.contains(needle), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn the_hash_follows_the_schema() {
        let a = OutputSchema::from_text(r#"{"type":"object"}"#, Path::new("a")).unwrap();
        let b = OutputSchema::from_text(r#"{"type":"array"}"#, Path::new("a")).unwrap();
        assert_ne!(a.hash16, b.hash16);
        assert_eq!(a.hash16.len(), 16);
    }
}
