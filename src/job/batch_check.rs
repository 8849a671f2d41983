//! Whether a map or review worker's answer covers its batch: `{"items": [...]}` (or the
//! bare array), one object per input item — every id once, no id that is not in the batch
//! — each object valid against the phase's schema. Every error is listed, so the model's
//! second attempt can fix them all at once.

use std::collections::HashMap;

use serde_json::Value;

use super::ingest::id_key;
use super::worker::AnswerCheck;
use crate::schema::{OutputSchema, Rejection};

/// The check of one batch.
pub struct BatchCheck {
    /// The batch's ids, in input order (as the items carry them).
    ids: Vec<Value>,
    id_field: String,
    schema: OutputSchema,
}

impl BatchCheck {
    pub fn new(ids: Vec<Value>, id_field: &str, schema: OutputSchema) -> Self {
        BatchCheck {
            ids,
            id_field: id_field.to_string(),
            schema,
        }
    }
}

/// The answer objects of `{"items": [...]}` or of a bare array.
pub fn answer_items(answer: &Value) -> Option<&Vec<Value>> {
    match answer {
        Value::Array(items) => Some(items),
        Value::Object(o) => o.get("items").and_then(Value::as_array),
        _ => None,
    }
}

impl AnswerCheck for BatchCheck {
    fn check(&self, answer: &Value) -> Result<Value, Vec<String>> {
        let Some(items) = answer_items(answer) else {
            return Err(vec![
                "the answer must be a JSON object {\"items\": [...]} holding one object per input item".into(),
            ]);
        };
        let field = &self.id_field;
        let position: HashMap<String, usize> = self
            .ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| Some((id_key(id)?, i)))
            .collect();
        let mut placed: Vec<Option<Value>> = vec![None; self.ids.len()];
        let mut errors = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(key) = item.get(field).and_then(id_key) else {
                errors.push(format!(
                    "items[{i}] has no \"{field}\": every object carries its item's \"{field}\""
                ));
                continue;
            };
            let Some(&at) = position.get(&key) else {
                errors.push(format!("items[{i}]: \"{field}\" {key} is not in this batch"));
                continue;
            };
            if placed[at].is_some() {
                errors.push(format!("items[{i}]: \"{field}\" {key} is answered more than once"));
                continue;
            }
            match self.schema.check(&item.to_string()) {
                Ok(mut valid) => {
                    // The id exactly as the item carries it (a model may quote a number).
                    if let Some(o) = valid.as_object_mut() {
                        o.insert(field.clone(), self.ids[at].clone());
                    }
                    placed[at] = Some(valid);
                }
                Err(Rejection::Invalid(found)) => {
                    errors.extend(found.into_iter().map(|e| format!("items[{i}] (\"{field}\" {key}) {e}")));
                    // Counted as answered, so it is not also reported missing.
                    placed[at] = Some(Value::Null);
                }
                Err(other) => errors.push(format!("items[{i}] (\"{field}\" {key}): {}", other.first())),
            }
        }
        let missing: Vec<String> = self
            .ids
            .iter()
            .zip(&placed)
            .filter(|(_, p)| p.is_none())
            .map(|(id, _)| id_key(id).unwrap_or_default())
            .collect();
        if !missing.is_empty() {
            errors.push(format!(
                "no object for \"{field}\" {}: answer for every item of the batch",
                missing.join(", ")
            ));
        }
        if errors.is_empty() {
            Ok(Value::Array(placed.into_iter().flatten().collect()))
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn check() -> BatchCheck {
        let schema = OutputSchema::from_text(
            r#"{"type":"object","properties":{"n":{},"v":{"enum":["a","b"]}},"required":["n","v"]}"#,
            Path::new("s.json"),
        )
        .unwrap();
        BatchCheck::new(vec![json!(1), json!(2), json!(3)], "n", schema)
    }

    #[test]
    fn a_complete_answer_is_kept_in_input_order() {
        let ok = check()
            .check(&json!({"items": [{"n": 3, "v": "a"}, {"n": "1", "v": "b"}, {"n": 2, "v": "a"}]}))
            .unwrap();
        assert_eq!(ok, json!([{"n": 1, "v": "b"}, {"n": 2, "v": "a"}, {"n": 3, "v": "a"}]));
        assert!(check()
            .check(&json!([{"n": 1, "v": "a"}, {"n": 2, "v": "a"}, {"n": 3, "v": "a"}]))
            .is_ok());
    }

    #[test]
    fn every_error_is_listed() {
        let errors = check()
            .check(&json!({"items": [{"n": 1, "v": "zzz"}, {"n": 1, "v": "a"}, {"n": 9, "v": "a"}, {"v": "a"}]}))
            .unwrap_err();
        let all = errors.join("\n");
        assert!(all.contains("items[0] (\"n\" 1) at /v"), "{all}");
        assert!(all.contains("answered more than once"), "{all}");
        assert!(all.contains("\"n\" 9 is not in this batch"), "{all}");
        assert!(all.contains("items[3] has no \"n\""), "{all}");
        assert!(all.contains("no object for \"n\" 2, 3"), "{all}");
        assert!(check().check(&json!("text")).is_err());
    }
}
