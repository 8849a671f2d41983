//! Ingest: the job's items — objects from a JSON array or JSONL file, or from a command's
//! stdout — each identified by its `id` field, checked present and unique before anything
//! is paid for.

use std::collections::HashSet;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::error::{InputFailure, RlmError};
use crate::process::{self, CommandSpec, ProcessError};

/// How long an ingest command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The items of a JSON array or JSONL text; `shown` names the source in errors.
pub fn parse_items(text: &str, shown: &str) -> Result<Vec<Value>, RlmError> {
    let trimmed = text.trim_start();
    let values: Vec<Value> = if trimmed.starts_with('[') {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Array(items)) => items,
            Ok(_) => return Err(RlmError::Input(format!("{shown} is not a JSON array"))),
            Err(e) => {
                return Err(RlmError::Input(format!(
                    "{shown} is not a JSON array (line {}, column {}: {e}): give a JSON array or JSONL of objects",
                    e.line(),
                    e.column()
                )))
            }
        }
    } else {
        let mut items = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| {
                RlmError::Input(format!(
                    "{shown}: line {} is not JSON ({e}): give a JSON array or JSONL of objects",
                    n + 1
                ))
            })?;
            items.push(value);
        }
        items
    };
    if let Some(n) = values.iter().position(|v| !v.is_object()) {
        return Err(RlmError::Input(format!(
            "{shown}: item {} is not a JSON object: every item must be an object with an id",
            n + 1
        )));
    }
    Ok(values)
}

/// The items of a file.
pub fn read_items_file(path: &Path) -> Result<Vec<Value>, RlmError> {
    let text = fs_err::read_to_string(path).map_err(InputFailure::unreadable("the job's input"))?;
    parse_items(&text, &path.display().to_string())
}

/// Runs an ingest command (argv, never a shell) and returns its stdout. When `cancel`
/// completes first (Ctrl-C), the command's whole process group is stopped and reaped, and
/// the answer is [`ProcessError::Cancelled`].
pub async fn command_output(
    argv: &[String],
    cwd: &Path,
    cancel: impl Future<Output = ()>,
) -> Result<String, ProcessError> {
    let spec = CommandSpec {
        cwd: Some(cwd.to_path_buf()),
        timeout: Some(COMMAND_TIMEOUT),
        ..CommandSpec::new(argv.to_vec())
    };
    process::run(&spec, "", cancel).await.map(|o| o.stdout)
}

/// Every item has an id (a string or a number) and no two share one.
pub fn check_ids(items: &[Value], field: &str, shown: &str) -> Result<(), RlmError> {
    let mut seen = HashSet::new();
    for (n, item) in items.iter().enumerate() {
        let Some(key) = item.get(field).and_then(id_key) else {
            return Err(RlmError::Input(format!(
                "{shown}: item {} has no \"{field}\" (a string or a number): set `id` in the job to the field that \
                 identifies an item",
                n + 1
            )));
        };
        if !seen.insert(key.clone()) {
            return Err(RlmError::Input(format!(
                "{shown}: two items have \"{field}\" {key}: ids must be unique"
            )));
        }
    }
    Ok(())
}

/// An id as a map key: a string as it is, a number as written.
pub fn id_key(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_and_jsonl_parse_and_ids_are_checked() {
        let a = parse_items("[{\"id\":1},{\"id\":\"b\"}]", "a").unwrap();
        assert_eq!(a.len(), 2);
        check_ids(&a, "id", "a").unwrap();
        let l = parse_items("{\"id\":1}\n\n{\"id\":2}\n", "l").unwrap();
        assert_eq!(l.len(), 2);
        assert!(parse_items("[1]", "x")
            .unwrap_err()
            .to_string()
            .contains("not a JSON object"));
        assert!(parse_items("{\"id\":1}\nnope", "x")
            .unwrap_err()
            .to_string()
            .contains("line 2"));
        let dup = vec![json!({"id": 1}), json!({"id": 1})];
        assert!(check_ids(&dup, "id", "d").unwrap_err().to_string().contains("unique"));
        let missing = vec![json!({"n": 1})];
        assert!(check_ids(&missing, "id", "m")
            .unwrap_err()
            .to_string()
            .contains("has no \"id\""));
    }
}
