//! `merge`: union and deduplicate structured results.
//!
//! JSON results merge key by key: arrays under the same key are unioned, exact duplicates
//! removed (by canonical JSON), and sorted; differing scalars under one key become a sorted
//! list of the distinct values. Markdown list items are deduplicated by exact text and
//! sorted. A result with neither is kept verbatim in its own section: nothing is dropped.

use std::cmp::Ordering;
use std::fmt::Write;

use serde_json::{Map, Value};

use super::{Aggregate, ResultItem};
use crate::escape;

/// The list items of a markdown result (`- x`, `* x`, `+ x`, `1. x`, `1) x`).
fn list_items(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let l = line.trim_start();
            let rest = if let Some(r) = l.strip_prefix(['-', '*', '+']) {
                r
            } else {
                let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                if digits == 0 {
                    return None;
                }
                l[digits..].strip_prefix(['.', ')'])?
            };
            if !rest.starts_with([' ', '\t']) {
                return None;
            }
            let item = rest.trim();
            (!item.is_empty()).then(|| item.to_string())
        })
        .collect()
}

/// Alphabetical (case-insensitive first, then exact, so the order is total).
fn alphabetical(a: &str, b: &str) -> Ordering {
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

/// Combines two JSON values (see the module doc).
fn merge_values(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, vb) in b {
                let merged = match a.remove(&k) {
                    Some(va) => merge_values(va, vb),
                    None => vb,
                };
                a.insert(k, merged);
            }
            Value::Object(a)
        }
        (Value::Array(mut a), Value::Array(b)) => {
            a.extend(b);
            Value::Array(a)
        }
        (Value::Array(mut a), other) | (other, Value::Array(mut a)) => {
            a.push(other);
            Value::Array(a)
        }
        (a, b) if a == b => a,
        (a, b) => Value::Array(vec![a, b]),
    }
}

/// Deduplicates and sorts every array, recursively.
fn normalize(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, normalize(v))).collect::<Map<_, _>>()),
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(normalize).collect();
            items.sort_by(|a, b| alphabetical(&sort_key(a), &sort_key(b)));
            items.dedup_by(|a, b| canonical(a) == canonical(b));
            Value::Array(items)
        }
        other => other,
    }
}

/// Array elements anywhere in a value (what "items" means for JSON results).
fn count_items(v: &Value) -> usize {
    match v {
        Value::Object(m) => m
            .values()
            .map(|v| match v {
                Value::Object(_) | Value::Array(_) => count_items(v),
                _ => 1,
            })
            .sum(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}

fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => canonical(other),
    }
}

/// Merges the results; see the module doc.
pub fn merge(results: &[ResultItem]) -> Aggregate {
    let mut merged_json: Option<Value> = None;
    let mut json_total = 0;
    let mut items: Vec<String> = Vec::new();
    let mut unstructured: Vec<&ResultItem> = Vec::new();
    for r in results {
        if let Some(v) = r.json.clone() {
            json_total += count_items(&v);
            merged_json = Some(match merged_json {
                Some(m) => merge_values(m, v),
                None => v,
            });
            continue;
        }
        let found = list_items(&r.text);
        if found.is_empty() {
            unstructured.push(r);
        } else {
            items.extend(found);
        }
    }
    let merged_json = merged_json.map(normalize);
    let list_total = items.len();
    items.sort_by(|a, b| alphabetical(a, b));
    items.dedup();

    let mut md = String::from("# Merged Results\n\nUnique items across all sub-agents:\n");
    let mut total = list_total;
    let mut unique = items.len();
    if let Some(json) = &merged_json {
        total += json_total;
        unique += count_items(json);
        md.push('\n');
        match json {
            Value::Object(map) => {
                for (key, value) in map {
                    match value {
                        Value::Array(a) => {
                            let _ = writeln!(md, "## {key}\n");
                            for item in a {
                                let _ = writeln!(md, "- {}", render_value(item));
                            }
                            md.push('\n');
                        }
                        other => {
                            let _ = writeln!(md, "- **{key}**: {}\n", render_value(other));
                        }
                    }
                }
            }
            Value::Array(a) => {
                for item in a {
                    let _ = writeln!(md, "- {}", render_value(item));
                }
                md.push('\n');
            }
            _ => {}
        }
    }
    if !items.is_empty() {
        if merged_json.is_some() {
            md.push_str("## List items\n\n");
        }
        for item in &items {
            let _ = writeln!(md, "- {item}");
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "(Duplicates removed, sorted alphabetically: {total} total items, {unique} unique after deduplication)"
    );
    if !unstructured.is_empty() {
        md.push_str(
            "\n## Unmerged results\n\nThese results had neither JSON nor list items and are kept verbatim.\n\n",
        );
        for r in unstructured {
            let _ = write!(md, "### File: {}\n\n{}\n\n", escape::name(&r.path), r.text.trim_end());
        }
    }
    Aggregate {
        markdown: md,
        json: merged_json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(path: &str, text: &str) -> ResultItem {
        ResultItem {
            path: path.into(),
            text: text.into(),
            json: crate::answer::json::json_values(text)
                .into_iter()
                .find(|v| v.is_object() || v.is_array()),
        }
    }

    #[test]
    fn json_arrays_union_dedupe_sort() {
        let agg = merge(&[
            item("a", r#"{"functions": ["parse", "Format"], "file": "a"}"#),
            item(
                "b",
                "```json\n{\"functions\": [\"parse\", \"alpha\"], \"file\": \"b\"}\n```",
            ),
        ]);
        assert_eq!(
            agg.json.unwrap(),
            json!({"file": ["a", "b"], "functions": ["alpha", "Format", "parse"]})
        );
        assert!(agg.markdown.contains("## functions\n\n- alpha\n- Format\n- parse\n"));
        assert!(agg.markdown.contains("6 total items, 5 unique"));
    }

    #[test]
    fn markdown_lists_dedupe_and_unstructured_kept() {
        let agg = merge(&[
            item("a", "- b\n- a\n"),
            item("b", "* a\n1. c\nsome prose"),
            item("c", "just prose"),
        ]);
        assert!(agg.json.is_none());
        assert_eq!(
            agg.markdown,
            "# Merged Results\n\nUnique items across all sub-agents:\n- a\n- b\n- c\n\n\
             (Duplicates removed, sorted alphabetically: 4 total items, 3 unique after deduplication)\n\n\
             ## Unmerged results\n\nThese results had neither JSON nor list items and are kept verbatim.\n\n\
             ### File: c\n\njust prose\n\n"
        );
    }

    #[test]
    fn list_item_syntax() {
        assert_eq!(list_items("-a\n- x\n  * y\n10) z\n3.w\n**bold**"), ["x", "y", "z"]);
    }

    #[test]
    fn top_level_arrays_union() {
        let agg = merge(&[item("a", "[1, 2]"), item("b", "[2, 3]")]);
        assert_eq!(agg.json.unwrap(), json!([1, 2, 3]));
    }
}
