//! `SourcedJson`: the JSON answers merged, each part knowing which answers gave it (issue
//! 25).
//!
//! The merge itself is the one `merge` always did: objects merge key by key, arrays under
//! the same key are unioned, exact duplicates removed (by canonical JSON) and sorted, and
//! differing scalars under one key become a sorted list of the distinct values. Two
//! projections come out of it: [`SourcedJson::value`], the merged JSON in the answers' own
//! shape (`aggregate.json`, which scripts read), and [`SourcedJson::sources`], the same
//! shape with every list element and scalar as `{"value": …, "files": [...]}`
//! (`aggregate.sources.json`, beside it).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// A value and the answers (unit labels) it came from, in first-seen order.
#[derive(Debug, Clone)]
pub struct SourcedValue {
    pub value: Value,
    pub files: Vec<String>,
}

impl SourcedValue {
    fn add_files(&mut self, files: Vec<String>) {
        for f in files {
            if !self.files.contains(&f) {
                self.files.push(f);
            }
        }
    }
}

/// Merged JSON with provenance; see the module doc.
#[derive(Debug, Clone)]
pub enum SourcedJson {
    Object(BTreeMap<String, SourcedJson>),
    /// An array, or the distinct scalars several answers gave under one key.
    Items(Vec<SourcedValue>),
    Scalar(SourcedValue),
}

/// Alphabetical (case-insensitive first, then exact, so the order is total).
pub fn alphabetical(a: &str, b: &str) -> Ordering {
    a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b))
}

fn canonical(v: &Value) -> String {
    v.to_string()
}

fn sort_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => canonical(other),
    }
}

/// Deduplicates and sorts every array inside a value, recursively.
fn normalize_value(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, normalize_value(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(normalize_value).collect();
            items.sort_by(|a, b| alphabetical(&sort_key(a), &sort_key(b)));
            items.dedup_by(|a, b| canonical(a) == canonical(b));
            Value::Array(items)
        }
        other => other,
    }
}

impl SourcedJson {
    /// One answer's JSON, every part from `file`.
    pub fn from_answer(value: &Value, file: &str) -> SourcedJson {
        let sourced = |value: &Value| SourcedValue {
            value: value.clone(),
            files: vec![file.to_string()],
        };
        match value {
            Value::Object(map) => SourcedJson::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), SourcedJson::from_answer(v, file)))
                    .collect(),
            ),
            Value::Array(items) => SourcedJson::Items(items.iter().map(sourced).collect()),
            other => SourcedJson::Scalar(sourced(other)),
        }
    }

    /// Combines two merged values (see the module doc); call [`Self::normalized`] after the
    /// last.
    pub fn merge(self, other: SourcedJson) -> SourcedJson {
        match (self, other) {
            (SourcedJson::Object(mut a), SourcedJson::Object(b)) => {
                for (k, vb) in b {
                    let merged = match a.remove(&k) {
                        Some(va) => va.merge(vb),
                        None => vb,
                    };
                    a.insert(k, merged);
                }
                SourcedJson::Object(a)
            }
            (SourcedJson::Items(mut a), SourcedJson::Items(b)) => {
                a.extend(b);
                SourcedJson::Items(a)
            }
            (SourcedJson::Items(mut a), other) | (other, SourcedJson::Items(mut a)) => {
                a.push(other.flattened());
                SourcedJson::Items(a)
            }
            (SourcedJson::Scalar(mut a), SourcedJson::Scalar(b)) if a.value == b.value => {
                a.add_files(b.files);
                SourcedJson::Scalar(a)
            }
            (a, b) => SourcedJson::Items(vec![a.flattened(), b.flattened()]),
        }
    }

    /// The whole as one value, from every answer any part came from.
    fn flattened(self) -> SourcedValue {
        match self {
            SourcedJson::Scalar(v) => v,
            other => {
                let mut files = Vec::new();
                other.collect_files(&mut files);
                SourcedValue {
                    value: other.value(),
                    files,
                }
            }
        }
    }

    /// Every answer any part came from, in first-seen order.
    pub fn collect_files(&self, into: &mut Vec<String>) {
        let mut add = |files: &[String]| {
            for f in files {
                if !into.contains(f) {
                    into.push(f.clone());
                }
            }
        };
        match self {
            SourcedJson::Object(map) => map.values().for_each(|v| v.collect_files(into)),
            SourcedJson::Items(items) => items.iter().for_each(|i| add(&i.files)),
            SourcedJson::Scalar(v) => add(&v.files),
        }
    }

    /// Every list sorted and deduplicated, recursively; a duplicate's answers join the
    /// element it duplicates.
    pub fn normalized(self) -> SourcedJson {
        match self {
            SourcedJson::Object(map) => {
                SourcedJson::Object(map.into_iter().map(|(k, v)| (k, v.normalized())).collect())
            }
            SourcedJson::Items(items) => {
                let mut items: Vec<SourcedValue> = items
                    .into_iter()
                    .map(|i| SourcedValue {
                        value: normalize_value(i.value),
                        files: i.files,
                    })
                    .collect();
                items.sort_by(|a, b| alphabetical(&sort_key(&a.value), &sort_key(&b.value)));
                let mut unique: Vec<SourcedValue> = Vec::with_capacity(items.len());
                for item in items {
                    match unique.last_mut() {
                        Some(last) if canonical(&last.value) == canonical(&item.value) => last.add_files(item.files),
                        _ => unique.push(item),
                    }
                }
                SourcedJson::Items(unique)
            }
            scalar @ SourcedJson::Scalar(_) => scalar,
        }
    }

    /// The merged JSON in the answers' own shape (`aggregate.json`).
    pub fn value(&self) -> Value {
        match self {
            SourcedJson::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), v.value())).collect()),
            SourcedJson::Items(items) => Value::Array(items.iter().map(|i| i.value.clone()).collect()),
            SourcedJson::Scalar(v) => v.value.clone(),
        }
    }

    /// The same shape, with every list element and scalar as `{"value", "files"}`
    /// (`aggregate.sources.json`).
    pub fn sources(&self) -> Value {
        let entry = |v: &SourcedValue| json!({ "value": v.value, "files": v.files });
        match self {
            SourcedJson::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), v.sources())).collect()),
            SourcedJson::Items(items) => Value::Array(items.iter().map(entry).collect()),
            SourcedJson::Scalar(v) => entry(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(answers: &[(&str, Value)]) -> SourcedJson {
        answers
            .iter()
            .map(|(file, v)| SourcedJson::from_answer(v, file))
            .reduce(SourcedJson::merge)
            .unwrap()
            .normalized()
    }

    #[test]
    fn value_keeps_the_shape_and_sources_say_where_each_came_from() {
        let m = merged(&[
            (
                "a",
                json!({"functions": ["parse", "Format"], "file": "a", "lang": "py"}),
            ),
            ("b", json!({"functions": ["parse", "alpha"], "file": "b", "lang": "py"})),
        ]);
        assert_eq!(
            m.value(),
            json!({"file": ["a", "b"], "functions": ["alpha", "Format", "parse"], "lang": "py"})
        );
        assert_eq!(
            m.sources(),
            json!({
                "file": [{"value": "a", "files": ["a"]}, {"value": "b", "files": ["b"]}],
                "functions": [
                    {"value": "alpha", "files": ["b"]},
                    {"value": "Format", "files": ["a"]},
                    {"value": "parse", "files": ["a", "b"]}
                ],
                "lang": {"value": "py", "files": ["a", "b"]}
            })
        );
    }

    #[test]
    fn top_level_arrays_union_and_nested_arrays_sort() {
        let m = merged(&[("a", json!([1, {"x": [2, 1]}])), ("b", json!([{"x": [1, 2]}, 3]))]);
        assert_eq!(m.value(), json!([1, 3, {"x": [1, 2]}]));
        assert_eq!(m.sources()[2], json!({"value": {"x": [1, 2]}, "files": ["a", "b"]}));
    }
}
