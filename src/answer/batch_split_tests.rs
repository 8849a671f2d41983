//! Answer-splitting tests, on the multi-file seed's examples.

use super::*;
use proptest::prelude::*;

#[test]
fn markdown_answers_split_at_file_headings() {
    let answer = "Here is the review.\n\n### File: src/utils.py\n- unused import `os` (line 3)\n\n---\n\n\
                  ## File: `src/config.py` (450 lines)\nNo issues.\n\n### File: helpers.py\n- `eval` on input (line 12)\n\
                  ```python\n### File: not a heading inside code\n```\n### File: src/other.py\nStray.\n";
    let paths = ["src/utils.py", "src/config.py", "src/helpers.py", "src/missing.py"];
    let split = split_batch_answer(answer, &paths);
    assert_eq!(split.per_file[0].as_deref(), Some("- unused import `os` (line 3)"));
    assert_eq!(split.per_file[1].as_deref(), Some("No issues."));
    assert_eq!(
        split.per_file[2].as_deref(),
        Some("- `eval` on input (line 12)\n```python\n### File: not a heading inside code\n```")
    );
    assert_eq!(split.per_file[3], None);
    assert_eq!(split.missing(), vec![3]);
    assert_eq!(
        split.unattributed,
        vec![
            "Here is the review.".to_owned(),
            "### File: src/other.py\nStray.".to_owned()
        ]
    );
}

#[test]
fn json_answers_in_the_files_envelope() {
    let answer = r#"```json
{"files": [
  {"file": "a.py", "findings": [{"type": "bug", "summary": "x", "line": 3}], "metadata": {"content_type": "source_code"}},
  {"file": "./b.py", "result": {"count": 2}},
  {"file": "c.py", "result": "no"},
  {"file": "zzz.py", "result": 1}
]}
```"#;
    let split = split_batch_answer(answer, &["a.py", "b.py", "c.py"]);
    let a: serde_json::Value = serde_json::from_str(split.per_file[0].as_deref().unwrap()).unwrap();
    assert_eq!(a["findings"][0]["line"], 3);
    assert!(a.get("file").is_none());
    assert_eq!(split.per_file[1].as_deref(), Some("{\n  \"count\": 2\n}"));
    assert_eq!(split.per_file[2].as_deref(), Some("no"));
    assert_eq!(
        split.unattributed,
        vec!["{\n  \"file\": \"zzz.py\",\n  \"result\": 1\n}".to_owned()]
    );
}

#[test]
fn json_findings_that_name_their_file_are_regrouped() {
    let answer = r#"{"findings": [
        {"file": "src/a.py", "type": "bug", "summary": "one"},
        {"file": "src/b.py", "type": "bug", "summary": "two"},
        {"file": "src/a.py", "type": "smell", "summary": "three"},
        {"type": "note", "summary": "nobody's"}
    ], "metadata": {"key_topics": ["x"]}}"#;
    let split = split_batch_answer(answer, &["src/a.py", "src/b.py", "src/c.py"]);
    let a: serde_json::Value = serde_json::from_str(split.per_file[0].as_deref().unwrap()).unwrap();
    assert_eq!(a["findings"].as_array().unwrap().len(), 2);
    assert_eq!(a["findings"][1]["summary"], "three");
    assert_eq!(split.values[0].as_ref(), Some(&a));
    // The answer is about every file: one no finding names has none (it is not missing).
    assert_eq!(
        split.values[2],
        Some(serde_json::json!({"findings": []})),
        "{:?}",
        split.per_file
    );
    assert!(split.missing().is_empty());
    assert_eq!(split.unattributed.len(), 1, "the file-less finding is kept");
    assert!(split.unattributed[0].contains("nobody's"));
    assert!(!split.unattributed[0].contains("key_topics"), "metadata is no answer");
}

#[test]
fn an_entry_keeps_its_json_value() {
    let split = split_batch_answer(
        r#"{"files": [{"file": "a.ts", "answer": "yes"}, {"file": "b.ts", "answer": 3}, {"file": "a.ts", "answer": "no"}]}"#,
        &["a.ts", "b.ts"],
    );
    assert_eq!(split.per_file[1].as_deref(), Some("3"));
    assert_eq!(split.values[1], Some(serde_json::json!(3)));
    // A string is its text for reading, and still a string for checking.
    assert_eq!(split.per_file[0].as_deref(), Some("yes\n\nno"));
    assert_eq!(split.values[0], None, "two entries for one file are no one value");
    let split = split_batch_answer(r#"{"files": [{"file": "a.ts", "answer": "yes"}]}"#, &["a.ts"]);
    assert_eq!(split.values[0], Some(serde_json::json!("yes")));
}

#[test]
fn objects_keyed_by_path_and_unknown_json() {
    let split = split_batch_answer(
        r#"{"a.csv": {"rows": 3}, "b.csv": {"rows": 5}}"#,
        &["data/a.csv", "data/b.csv"],
    );
    assert_eq!(split.per_file[1].as_deref(), Some("{\n  \"rows\": 5\n}"));
    // JSON of no known shape is kept whole, never dropped.
    let split = split_batch_answer(r#"{"total": 8}"#, &["a.csv"]);
    assert_eq!(
        (split.per_file[0].clone(), split.unattributed),
        (None, vec![r#"{"total": 8}"#.to_owned()])
    );
}

#[test]
fn ambiguous_short_names_are_not_guessed() {
    let split = split_batch_answer("### File: mod.rs\ntext\n", &["src/a/mod.rs", "src/b/mod.rs"]);
    assert_eq!(split.per_file, vec![None, None]);
    assert_eq!(split.unattributed, vec!["### File: mod.rs\ntext".to_owned()]);
}

proptest! {
    #[test]
    fn markdown_sections_round_trip(bodies in prop::collection::vec("[a-z ]{1,20}(\n[a-z ]{1,20}){0,3}", 1..6)) {
        let paths: Vec<String> = (0..bodies.len()).map(|i| format!("dir/file_{i}.txt")).collect();
        let answer: String = paths.iter().zip(&bodies).map(|(p, b)| format!("### File: {p}\n{b}\n\n")).collect();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let split = split_batch_answer(&answer, &refs);
        for (got, want) in split.per_file.iter().zip(&bodies) {
            let want = want.lines().collect::<Vec<_>>().join("\n");
            let want = want.trim_matches('\n');
            if want.trim().is_empty() {
                prop_assert!(got.is_none());
            } else {
                prop_assert_eq!(got.as_deref().map(str::trim), Some(want.trim()));
            }
        }
        prop_assert!(split.unattributed.is_empty());
    }
}
