//! `merge`: one list of everything the answers said, each item naming the files it came
//! from (issue 25).
//!
//! - JSON answers merge key by key ([`SourcedJson`]): `aggregate.json` keeps the answers'
//!   shape (a merged list stays a list of their values) and `aggregate.sources.json` beside
//!   it says which files gave each value; `aggregate.md` lists each value with its files.
//! - List answers ([`answer_list`]) merge item by item, in the order the files were read:
//!   identical items (with what is nested under them) become one, followed by every file
//!   that gave it; nested items stay under their parent.
//! - Any other answer is kept whole under its file's heading: nothing is dropped or cut up.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

use super::answer_list::{self, ListItem};
use super::sourced_json::SourcedJson;
use super::{Aggregate, ResultItem};
use crate::escape;

/// Where `aggregate.json`'s provenance is written, beside it.
pub const SOURCES_FILE: &str = "aggregate.sources.json";

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
        other => other.to_string(),
    }
}

/// ` — a.py, b.py`: the files an item came from.
fn from_files(files: &[String]) -> String {
    let names: Vec<_> = files.iter().map(|f| escape::name(f)).collect();
    format!(" — {}", names.join(", "))
}

/// One merged list item and the files that gave it.
struct MergedItem {
    item: ListItem,
    files: Vec<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Merges the results; see the module doc.
pub fn merge(results: &[ResultItem]) -> Aggregate {
    let mut sourced: Option<SourcedJson> = None;
    let mut json_total = 0;
    let mut json_answers = 0;
    let mut items: Vec<MergedItem> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut list_total = 0;
    let mut list_answers = 0;
    let mut whole: Vec<&ResultItem> = Vec::new();
    for r in results {
        if let Some(v) = &r.json {
            json_total += count_items(v);
            json_answers += 1;
            let answer = SourcedJson::from_answer(v, &r.path);
            sourced = Some(match sourced {
                Some(m) => m.merge(answer),
                None => answer,
            });
            continue;
        }
        let Some(found) = answer_list::read(&r.text).filter(|f| !f.is_empty()) else {
            whole.push(r);
            continue;
        };
        list_answers += 1;
        list_total += found.len();
        for item in found {
            match seen.get(&item.key()) {
                Some(&i) => {
                    if !items[i].files.contains(&r.path) {
                        items[i].files.push(r.path.clone());
                    }
                }
                None => {
                    seen.insert(item.key(), items.len());
                    items.push(MergedItem {
                        item,
                        files: vec![r.path.clone()],
                    });
                }
            }
        }
    }
    let sourced = sourced.map(SourcedJson::normalized);
    let merged_json = sourced.as_ref().map(SourcedJson::value);

    let mut md = String::from("# Merged Results\n\n");
    let merged_answers = json_answers + list_answers;
    if merged_answers > 0 {
        md.push_str("Every item the answers gave, identical ones merged; each names the files it came from.\n\n");
    }
    let mut total = list_total;
    let mut unique = items.len();
    if let (Some(sourced), Some(json)) = (&sourced, &merged_json) {
        total += json_total;
        unique += count_items(json);
        render_json(&mut md, sourced);
    }
    if !items.is_empty() {
        if sourced.is_some() {
            md.push_str("## List items\n\n");
        }
        for MergedItem { item, files } in &items {
            let _ = writeln!(md, "- {}{}", item.head, from_files(files));
            for line in &item.body {
                let _ = writeln!(md, "{line}");
            }
        }
        md.push('\n');
    }
    if merged_answers > 0 {
        let _ = writeln!(
            md,
            "({} from {}; {unique} after merging identical ones)",
            plural(total, "item", "items"),
            plural(merged_answers, "answer", "answers"),
        );
        if sourced.is_some() {
            let _ = writeln!(md, "(Which files gave each JSON value: {SOURCES_FILE})");
        }
    }
    if !whole.is_empty() {
        if merged_answers > 0 {
            md.push('\n');
        }
        md.push_str(
            "## Answers kept whole\n\nThese answers are not lists, so each is shown as written, under its file.\n\n",
        );
        for r in whole {
            let _ = write!(md, "### File: {}\n\n{}\n\n", escape::name(&r.path), r.text.trim_end());
        }
    }
    Aggregate {
        markdown: md,
        json: merged_json,
        sources: sourced.as_ref().map(SourcedJson::sources),
    }
}

/// The merged JSON as markdown: one section per list, each value with its files.
fn render_json(md: &mut String, sourced: &SourcedJson) {
    match sourced {
        SourcedJson::Object(map) => {
            for (key, value) in map {
                match value {
                    SourcedJson::Items(items) => {
                        let _ = writeln!(md, "## {key}\n");
                        for i in items {
                            let _ = writeln!(md, "- {}{}", render_value(&i.value), from_files(&i.files));
                        }
                        md.push('\n');
                    }
                    SourcedJson::Scalar(v) => {
                        let _ = writeln!(md, "- **{key}**: {}{}\n", render_value(&v.value), from_files(&v.files));
                    }
                    object @ SourcedJson::Object(_) => {
                        let mut files = Vec::new();
                        object.collect_files(&mut files);
                        let _ = writeln!(md, "- **{key}**: {}{}\n", object.value(), from_files(&files));
                    }
                }
            }
        }
        SourcedJson::Items(items) => {
            for i in items {
                let _ = writeln!(md, "- {}{}", render_value(&i.value), from_files(&i.files));
            }
            md.push('\n');
        }
        SourcedJson::Scalar(v) => {
            let _ = writeln!(md, "- {}{}\n", render_value(&v.value), from_files(&v.files));
        }
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
    fn json_arrays_union_dedupe_sort_with_their_files() {
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
        assert!(agg
            .markdown
            .contains("## functions\n\n- alpha — b\n- Format — a\n- parse — a, b\n"));
        assert!(agg
            .markdown
            .contains("(6 items from 2 answers; 5 after merging identical ones)"));
        assert_eq!(
            agg.sources.unwrap()["functions"][2],
            json!({"value": "parse", "files": ["a", "b"]})
        );
    }

    #[test]
    fn list_items_name_their_files_and_prose_is_kept_whole() {
        let agg = merge(&[
            item("a", "- b\n- a\n  - nested under a\n"),
            item("b", "Functions:\n\n* a\n  - nested under a\n1. c"),
            item("c", "just prose\n\n- and a list\n\nthen prose"),
        ]);
        assert!(agg.json.is_none() && agg.sources.is_none());
        assert_eq!(
            agg.markdown,
            "# Merged Results\n\n\
             Every item the answers gave, identical ones merged; each names the files it came from.\n\n\
             - b — a\n- a — a, b\n  - nested under a\n- c — b\n\n\
             (4 items from 2 answers; 3 after merging identical ones)\n\n\
             ## Answers kept whole\n\nThese answers are not lists, so each is shown as written, under its file.\n\n\
             ### File: c\n\njust prose\n\n- and a list\n\nthen prose\n\n"
        );
    }

    #[test]
    fn top_level_arrays_union() {
        let agg = merge(&[item("a", "[1, 2]"), item("b", "[2, 3]")]);
        assert_eq!(agg.json.unwrap(), json!([1, 2, 3]));
        assert!(agg.markdown.contains("- 2 — a, b\n"));
    }
}
