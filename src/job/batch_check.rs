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

/// Why no answer object could ever pass `schema`, when that is plain from the schema alone:
/// every batch's answer would be paid for, rejected and asked for again until the batch
/// failed. Each answer is an object that carries `id_field`; a schema that is `false` (or
/// `not` everything), whose `type` leaves out objects, or that forbids the id field cannot
/// hold one. Only what is certain is said: a schema this finds nothing wrong with may still
/// be one no model can satisfy.
pub fn unanswerable(schema: &Value, id_field: &str) -> Option<String> {
    let Value::Object(schema) = schema else {
        return (schema == &Value::Bool(false)).then(|| "it is `false`, which accepts nothing".to_string());
    };
    let everything = |n: &Value| n == &Value::Bool(true) || n.as_object().is_some_and(serde_json::Map::is_empty);
    if schema.get("not").is_some_and(everything) {
        return Some("its `not` accepts nothing".to_string());
    }
    let is_object = |t: &Value| t.as_str() == Some("object");
    match schema.get("type") {
        Some(t @ Value::String(_)) if !is_object(t) => {
            return Some(format!(
                "its `type` is {t}: each answer is an object that carries \"{id_field}\""
            ))
        }
        Some(Value::Array(types)) if !types.iter().any(is_object) => {
            return Some(format!(
                "its `type` {} leaves out \"object\": each answer is an object that carries \"{id_field}\"",
                Value::Array(types.clone())
            ))
        }
        _ => {}
    }
    let declared = schema.get("properties").and_then(|p| p.get(id_field));
    if declared == Some(&Value::Bool(false)) {
        return Some(format!("it forbids \"{id_field}\", which every answer carries"));
    }
    let closed =
        schema.get("additionalProperties") == Some(&Value::Bool(false)) && schema.get("patternProperties").is_none();
    if closed && declared.is_none() {
        return Some(format!(
            "it allows no property but those it lists (`additionalProperties: false`) and \"{id_field}\" is not \
             one of them: add it to `properties`"
        ));
    }
    None
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

    #[test]
    fn a_schema_no_answer_object_can_pass_is_named() {
        for (schema, says) in [
            (json!(false), "accepts nothing"),
            (json!({"not": {}}), "accepts nothing"),
            (json!({"type": "string"}), "`type` is \"string\""),
            (json!({"type": ["array", "null"]}), "leaves out \"object\""),
            (json!({"properties": {"n": false}}), "forbids \"n\""),
            (
                json!({"type": "object", "additionalProperties": false, "properties": {"v": {}}}),
                "add it",
            ),
        ] {
            let why = unanswerable(&schema, "n").unwrap_or_else(|| panic!("{schema} passes"));
            assert!(why.contains(says), "{schema}: {why}");
        }
        for schema in [
            json!(true),
            json!({}),
            json!({"type": ["object", "null"]}),
            json!({"type": "object", "additionalProperties": false, "properties": {"n": {}}}),
            json!({"additionalProperties": false, "patternProperties": {"^n$": {}}}),
            json!({"not": {"type": "string"}}),
        ] {
            assert_eq!(unanswerable(&schema, "n"), None, "{schema}");
        }
    }
}
