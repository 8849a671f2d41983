//! The schema summary the JSON analyst is given: field names and the JSON types seen for
//! them in a small sample (the first five elements of an array, the members of an object,
//! the first object of a JSONL file), so a chunk's analyst knows the data's shape without
//! reading other chunks.

use serde::Serialize;
use serde_json::Value;

/// How many elements of an array are sampled.
pub const SAMPLE_SIZE: usize = 5;
/// Fields beyond this many are left out of a summary (and counted in `more_fields`).
const MAX_FIELDS: usize = 60;
/// Nested objects are described down to `a.b` (two levels), as in the seed's examples.
const MAX_DEPTH: usize = 2;

/// Field names and types from a sample of JSON values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaSummary {
    /// How many values were sampled.
    pub sampled: usize,
    /// The types of the sampled values themselves (`object`, `array`, `string`, …).
    pub value_types: Vec<&'static str>,
    /// Fields of the sampled objects, dotted for nested objects (`metadata.source`).
    pub fields: Vec<SchemaField>,
    /// Fields not listed because the summary was full.
    pub more_fields: usize,
}

/// One field of a [`SchemaSummary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaField {
    pub name: String,
    pub types: Vec<&'static str>,
    /// In how many of the sampled values the field is present.
    pub present_in: usize,
}

impl SchemaSummary {
    /// The summary of `values` (the caller samples them).
    pub fn of_values(values: &[Value]) -> SchemaSummary {
        let mut summary = SchemaSummary {
            sampled: values.len(),
            value_types: Vec::new(),
            fields: Vec::new(),
            more_fields: 0,
        };
        for value in values {
            add_type(&mut summary.value_types, type_name(value));
            if let Value::Object(map) = value {
                let mut seen = Vec::new();
                summary.walk(map, "", 1, &mut seen);
            }
        }
        // serde_json's map order depends on a crate feature; sorted is the same everywhere.
        summary.fields.sort_by(|a, b| a.name.cmp(&b.name));
        summary
    }

    /// The summary of one object's members, given as `(name, type)` pairs: how a root
    /// object that is too large to parse twice is described.
    pub fn of_members<'a>(members: impl IntoIterator<Item = (String, &'a str)>) -> SchemaSummary {
        let mut summary = SchemaSummary {
            sampled: 1,
            value_types: vec!["object"],
            fields: Vec::new(),
            more_fields: 0,
        };
        for (name, kind) in members {
            let kind = static_type(kind);
            summary.note_field(&name, kind, &mut Vec::new());
        }
        summary
    }

    fn walk(&mut self, map: &serde_json::Map<String, Value>, prefix: &str, depth: usize, seen: &mut Vec<String>) {
        for (key, value) in map {
            let name = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            self.note_field(&name, type_name(value), seen);
            if let (Value::Object(inner), true) = (value, depth < MAX_DEPTH) {
                self.walk(inner, &name, depth + 1, seen);
            }
        }
    }

    /// Records that one sampled value has field `name` of type `kind`; `seen` holds the
    /// fields already counted for this value, so a field counts once per value.
    fn note_field(&mut self, name: &str, kind: &'static str, seen: &mut Vec<String>) {
        if let Some(field) = self.fields.iter_mut().find(|f| f.name == name) {
            add_type(&mut field.types, kind);
            if !seen.iter().any(|s| s == name) {
                field.present_in += 1;
            }
        } else if self.fields.len() < MAX_FIELDS {
            self.fields.push(SchemaField {
                name: name.to_owned(),
                types: vec![kind],
                present_in: 1,
            });
        } else {
            self.more_fields += 1;
        }
        seen.push(name.to_owned());
    }
}

impl SchemaSummary {
    /// The summary as one line of at most `max_bytes` bytes for a prompt: `id (number),
    /// name (string), meta.source (string; in 3 of 5)`, as many fields as fit (a name is
    /// cut at 80 bytes), then how many more there are.
    pub fn line(&self, max_bytes: usize) -> String {
        if self.fields.is_empty() {
            return format!("values of type {}", self.value_types.join(" | "));
        }
        // Room kept for the ", … and N more" that may close the line.
        const TAIL: usize = 32;
        let mut out = String::new();
        let mut shown = 0;
        for field in &self.fields {
            let mut text = String::new();
            if shown > 0 {
                text.push_str(", ");
            }
            text.push_str(&short_name(&field.name));
            text.push_str(&format!(" ({}", field.types.join(" | ")));
            if field.present_in < self.sampled {
                text.push_str(&format!("; in {} of {}", field.present_in, self.sampled));
            }
            text.push(')');
            if out.len() + text.len() + TAIL > max_bytes {
                break;
            }
            out.push_str(&text);
            shown += 1;
        }
        let more = self.fields.len() - shown + self.more_fields;
        if more > 0 {
            if shown > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("… and {more} more"));
        }
        out
    }
}

/// A field name shown in a summary is cut to this many bytes.
const MAX_NAME_BYTES: usize = 80;

/// `name`, cut at [`MAX_NAME_BYTES`] (at a character boundary, ending in `…`).
fn short_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= MAX_NAME_BYTES {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut end = MAX_NAME_BYTES - '…'.len_utf8();
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…", &name[..end]))
}

impl std::fmt::Display for SchemaSummary {
    /// One line for a prompt, without a cap (see [`SchemaSummary::line`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(usize::MAX))
    }
}

fn add_type(types: &mut Vec<&'static str>, kind: &'static str) {
    if !types.contains(&kind) {
        types.push(kind);
    }
}

/// The JSON type name of `value`.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The JSON type of a value from its first character, without parsing it.
pub(crate) fn type_of_text(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

fn static_type(kind: &str) -> &'static str {
    ["object", "array", "string", "boolean", "null", "number"]
        .into_iter()
        .find(|k| *k == kind)
        .unwrap_or("number")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summarizes_fields_types_and_presence() {
        let values = [
            json!({"id": 1, "event": "click", "metadata": {"source": "web", "user_id": 7}}),
            json!({"id": 2, "event": "view", "metadata": {"user_id": 8}}),
            json!({"id": "3", "event": null}),
        ];
        let s = SchemaSummary::of_values(&values);
        assert_eq!(s.sampled, 3);
        let source = s.fields.iter().find(|f| f.name == "metadata.source").unwrap();
        assert_eq!((source.present_in, source.types.clone()), (1, vec!["string"]));
        assert_eq!(
            s.to_string(),
            "event (string | null), id (number | string), metadata (object; in 2 of 3), \
             metadata.source (string; in 1 of 3), metadata.user_id (number; in 2 of 3)"
        );
    }

    #[test]
    fn scalars_and_member_lists() {
        assert_eq!(
            SchemaSummary::of_values(&[json!(1), json!("a")]).to_string(),
            "values of type number | string"
        );
        let s = SchemaSummary::of_members([("meta".to_owned(), "object"), ("events".to_owned(), "array")]);
        assert_eq!(s.to_string(), "meta (object), events (array)");
        assert_eq!(type_of_text("[1]"), "array");
        assert_eq!(type_of_text("-3"), "number");
    }

    #[test]
    fn a_line_keeps_to_its_bytes_and_says_how_many_fields_it_left_out() {
        let long = "k".repeat(500);
        let members = (0..60).map(|i| (format!("{long}{i}"), "string"));
        let s = SchemaSummary::of_members(members);
        let line = s.line(1_000);
        assert!(line.len() <= 1_000, "{}", line.len());
        assert!(line.ends_with("more"), "{line}");
        let shown = line.matches("(string)").count();
        assert!(shown >= 5, "{line}");
        assert!(line.ends_with(&format!("… and {} more", 60 - shown)), "{line}");
        // Short summaries are whole.
        let small = SchemaSummary::of_members([("a".to_owned(), "number")]);
        assert_eq!(small.line(1_000), "a (number)");
    }
}
