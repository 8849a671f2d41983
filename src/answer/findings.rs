//! Reads findings out of one answer's JSON: the one reader for every answer of a run.
//!
//! Three shapes mean the same thing and are all read: the analysts' (`{"findings":
//! [{"type", "scope", "summary", "evidence", "line", "severity": "high|medium|low"}]}`), the
//! CI prompt's (`{"findings": [{"path", "line", "end_line", "severity":
//! "error|warning|note", "type", "message"}]}`), and what models commonly drift to: a bare
//! array of findings, `file` for `path`, `description` for `message`, a line written as
//! `"L42-58"`. The reader drops only what it cannot place: an item with no text at all.
//! Anything that is not findings-shaped yields no findings, never an error.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::findings::{Finding, Level, Region};

/// The findings in the answer's JSON values (see [`super::json::json_values`]), in the
/// order written, exact duplicates removed.
///
/// `default_path` is the file the answer is about: it is used when a finding names no path,
/// and when the finding names a shorter form of it (`login.ts` for `src/auth/login.ts`),
/// since models often shorten the path they were given. Other paths are kept as written.
/// A finding without a usable line keeps its path and has no region; a missing or unknown
/// severity is a warning (SARIF's default level).
pub fn read_findings(values: &[Value], default_path: &str) -> Vec<Finding> {
    let mut seen = HashSet::new();
    values
        .iter()
        .filter_map(findings_items)
        .flatten()
        .filter_map(|item| finding_from(item, default_path))
        .filter(|f| seen.insert(f.clone()))
        .collect()
}

/// Whether `value` has the findings shape (an object with a `findings` array, or a bare
/// array of objects).
pub fn is_findings_shaped(value: &Value) -> bool {
    findings_items(value).is_some()
}

/// The finding objects of a value of the findings shape.
fn findings_items(value: &Value) -> Option<&[Value]> {
    match value {
        Value::Object(map) => match map.get("findings")? {
            Value::Array(items) => Some(items),
            Value::Null => Some(&[]),
            _ => None,
        },
        // A bare array counts only if it holds objects: `["a", "b"]` is a list, not findings.
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => Some(items),
        _ => None,
    }
}

fn finding_from(item: &Value, default_path: &str) -> Option<Finding> {
    let obj = item.as_object()?;
    let message = text_field(obj, &["message", "summary", "description", "title", "text", "issue"])?;
    // The JSON analyst names a JSON path (`$.events[*]`) in `path`: that is a place in the
    // file, not another file.
    let named_path = text_field(obj, &["path", "file", "file_path", "filePath", "uri"]).filter(|p| !p.starts_with('$'));
    let path = match named_path {
        Some(p) => resolve_path(&p, default_path),
        None => normalize_path(default_path),
    };
    let start = field(
        obj,
        &[
            "line",
            "start_line",
            "startLine",
            "line_start",
            "line_number",
            "lineNumber",
            "lines",
        ],
    )
    .and_then(line_range);
    let end = field(obj, &["end_line", "endLine", "line_end"])
        .and_then(line_range)
        .map(|(first, _)| first);
    let region = start.and_then(|(first, range_end)| Region::new(first, end.or(range_end)));
    let level = text_field(obj, &["severity", "level", "priority"])
        .and_then(|w| Level::from_severity(&w))
        .unwrap_or(Level::Warning);
    let rule = text_field(obj, &["type", "rule", "ruleId", "rule_id", "category", "kind"]);
    let scope = text_field(obj, &["scope", "column", "function", "symbol"])
        .or_else(|| text_field(obj, &["path"]).filter(|p| p.starts_with('$')));
    let evidence = text_field(obj, &["evidence", "snippet", "code"]);
    Some(Finding {
        path,
        region,
        level,
        message,
        rule,
        scope,
        evidence,
    })
}

fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| obj.get(*n).filter(|v| !v.is_null()))
}

/// The first of `names` that holds a non-blank string (trimmed).
fn text_field(obj: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        let s = obj.get(*n)?.as_str()?.trim();
        (!s.is_empty()).then(|| s.to_string())
    })
}

/// A line or line range: `42`, `42.0`, `"42"`, `"L42"`, `"42-58"`, `"L42-L58"`.
fn line_range(value: &Value) -> Option<(u64, Option<u64>)> {
    match value {
        Value::Number(n) => {
            let line = n.as_u64().or_else(|| {
                let f = n.as_f64()?;
                (f.fract() == 0.0 && f >= 1.0 && f < u64::MAX as f64).then_some(f as u64)
            })?;
            Some((line, None))
        }
        Value::String(s) => {
            let number = |t: &str| t.trim().trim_start_matches(['L', 'l']).trim().parse::<u64>().ok();
            match s.split_once(['-', '–']) {
                Some((a, b)) => Some((number(a)?, number(b))),
                None => Some((number(s)?, None)),
            }
        }
        _ => None,
    }
}

/// Forward slashes, no leading `./`.
fn normalize_path(path: &str) -> String {
    let mut p = path.trim().replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    p
}

/// The finding's path, or `default_path` when the finding names it in a shorter form.
fn resolve_path(path: &str, default_path: &str) -> String {
    let path = normalize_path(path);
    let default_path = normalize_path(default_path);
    if path.is_empty() || default_path.ends_with(&format!("/{path}")) {
        default_path
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(answer: &str, default_path: &str) -> Vec<Finding> {
        read_findings(&crate::answer::json::json_values(answer), default_path)
    }

    fn one(answer: &str) -> Finding {
        let mut all = extract(answer, "src/auth/login.ts");
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn the_documented_shape_with_every_field() {
        let f = one(
            r#"{"findings": [{"path": "src/auth/login.ts", "line": 42, "end_line": 58,
               "severity": "high", "message": "SQL built from user input", "type": "sql-injection"}]}"#,
        );
        assert_eq!(
            f,
            Finding {
                path: "src/auth/login.ts".into(),
                region: Region::new(42, Some(58)),
                level: Level::Error,
                message: "SQL built from user input".into(),
                rule: Some("sql-injection".into()),
                scope: None,
                evidence: None,
            }
        );
    }

    #[test]
    fn fenced_json_amid_prose() {
        let answer = "Here is what I found:\n\n```json\n{\"findings\": [{\"line\": 7, \"severity\": \"medium\", \
                      \"message\": \"Token expiry hardcoded\"}]}\n```\n\nLet me know if you need more.";
        let f = one(answer);
        assert_eq!(f.path, "src/auth/login.ts");
        assert_eq!(f.region, Region::new(7, None));
        assert_eq!(f.level, Level::Warning);
        assert_eq!(f.rule, None);
        assert_eq!(f.rule_id(), "rlm/finding");
    }

    #[test]
    fn a_bare_array_of_findings() {
        let all = extract(
            r#"[{"line": 1, "severity": "low", "message": "a"}, {"line": 2, "severity": "critical", "message": "b"}]"#,
            "x.py",
        );
        let levels: Vec<Level> = all.iter().map(|f| f.level).collect();
        assert_eq!(levels, [Level::Note, Level::Error]);
        assert!(all.iter().all(|f| f.path == "x.py"));
    }

    #[test]
    fn json_embedded_in_prose_without_a_fence() {
        let f = one("Result: {\"findings\": [{\"line\": 3, \"message\": \"m\"}]} (end)");
        assert_eq!(f.region, Region::new(3, None));
    }

    #[test]
    fn several_fenced_blocks_are_all_read() {
        let answer = "```json\n{\"findings\":[{\"line\":1,\"message\":\"a\"}]}\n```\ntext\n```\n[{\"line\":2,\"message\":\"b\"}]\n```\n```ts\nconst x = [{}];\n```";
        let messages: Vec<String> = extract(answer, "a.ts").into_iter().map(|f| f.message).collect();
        assert_eq!(messages, ["a", "b"]);
    }

    #[test]
    fn no_usable_line_keeps_the_path_without_a_region() {
        for line in [
            r#""line": null"#,
            r#""line": "n/a""#,
            r#""line": 0"#,
            r#""line": -3"#,
            r#""other": 1"#,
        ] {
            let f = one(&format!(
                r#"{{"findings": [{{"path": "lib/a.rs", {line}, "message": "m"}}]}}"#
            ));
            assert_eq!(f.path, "lib/a.rs", "{line}");
            assert_eq!(f.region, None, "{line}");
        }
    }

    #[test]
    fn lines_written_as_strings_and_ranges() {
        let cases = [
            (r#""line": "42""#, Region::new(42, None)),
            (r#""line": "L42""#, Region::new(42, None)),
            (r#""line": "L42-58""#, Region::new(42, Some(58))),
            (r#""line": "42-L58""#, Region::new(42, Some(58))),
            (r#""line": 42.0"#, Region::new(42, None)),
            (r#""startLine": 5, "endLine": 9"#, Region::new(5, Some(9))),
            (r#""line": 9, "end_line": 5"#, Region::new(9, None)),
            (r#""line": "L42-58", "end_line": 60"#, Region::new(42, Some(60))),
        ];
        for (fields, region) in cases {
            let f = one(&format!(r#"{{"findings": [{{{fields}, "message": "m"}}]}}"#));
            assert_eq!(f.region, region, "{fields}");
        }
    }

    #[test]
    fn synonyms_for_fields() {
        let f = one(r#"[{"file": ".\\src\\auth\\login.ts", "level": "note", "description": "d", "rule": "R1"}]"#);
        assert_eq!(f.path, "src/auth/login.ts");
        assert_eq!(f.level, Level::Note);
        assert_eq!(f.message, "d");
        assert_eq!(f.rule.as_deref(), Some("R1"));
    }

    #[test]
    fn a_shortened_path_becomes_the_file_the_answer_is_about() {
        let f = one(r#"[{"path": "login.ts", "line": 1, "message": "m"}]"#);
        assert_eq!(f.path, "src/auth/login.ts");
        let f = one(r#"[{"path": "./auth/login.ts", "line": 1, "message": "m"}]"#);
        assert_eq!(f.path, "src/auth/login.ts");
        // A different file the model points at is kept: it may be the real location.
        let f = one(r#"[{"path": "src/auth/session.ts", "line": 1, "message": "m"}]"#);
        assert_eq!(f.path, "src/auth/session.ts");
    }

    #[test]
    fn the_analyst_shape_is_read() {
        let f = one(
            r##"{"findings": [{"type": "bug", "scope": "function:login", "summary": "TODO left in", "evidence": "# TODO", "line": 7, "severity": "medium"}], "metadata": {"content_type": "source_code"}}"##,
        );
        assert_eq!(f.message, "TODO left in");
        assert_eq!(f.level, Level::Warning);
        assert_eq!(f.rule.as_deref(), Some("bug"));
        assert_eq!(f.scope.as_deref(), Some("function:login"));
        assert_eq!(f.evidence.as_deref(), Some("# TODO"));
        assert_eq!(f.region, Region::new(7, None));
        assert_eq!(f.path, "src/auth/login.ts");
        // The JSON analyst's `path` is a JSON path, not a file.
        let f = one(
            r#"{"findings": [{"type": "schema_variation", "path": "$.events[*]", "summary": "s", "severity": "high"}]}"#,
        );
        assert_eq!(f.path, "src/auth/login.ts");
        assert_eq!(f.scope.as_deref(), Some("$.events[*]"));
        assert_eq!(f.level, Level::Error);
    }

    #[test]
    fn unknown_or_missing_severity_is_a_warning() {
        let all = extract(r#"[{"message": "a", "severity": "purple"}, {"message": "b"}]"#, "a");
        assert!(all.iter().all(|f| f.level == Level::Warning));
    }

    #[test]
    fn items_without_a_message_are_dropped_and_duplicates_removed() {
        let all = extract(
            r#"{"findings": [{"line": 1}, "text", {"line": 2, "message": "  "}, {"line": 3, "message": "m"}, {"line": 3, "message": "m"}]}"#,
            "a.ts",
        );
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].region, Region::new(3, None));
    }

    #[test]
    fn answers_without_findings_yield_none() {
        for answer in [
            "",
            "No issues found.",
            "- **[HIGH]** SQL injection at line 42",
            r#"{"functions": ["a", "b"]}"#,
            r#"["a", "b"]"#,
            r#"{"findings": "none"}"#,
            "```json\n{\"findings\": [\n```",
            "```json\n{\"findings\": []}",
        ] {
            assert!(extract(answer, "a.ts").is_empty(), "{answer}");
        }
        assert!(extract(r#"{"findings": null}"#, "a.ts").is_empty());
    }
}
