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
fn a_path_outside_the_project_is_the_file_the_answer_is_about() {
    for outside in ["../../etc/passwd", "/etc/passwd", "src/../../x.ts", "C:/x.ts"] {
        let f = one(&format!(r#"[{{"path": "{outside}", "line": 1, "message": "m"}}]"#));
        assert_eq!(f.path, "src/auth/login.ts", "{outside}");
    }
    let f = one(r#"[{"path": "src/../lib/x.ts", "line": 1, "message": "m"}]"#);
    assert_eq!(f.path, "src/../lib/x.ts", "inside, kept as written");
}

#[test]
fn a_batch_members_list_copied_into_a_path_is_the_member() {
    // A batch's `{file}` is its members joined by ", ": a template's `"path": "{file}"`
    // copied as written names every member, and the finding is the member's.
    let f = one(r#"[{"path": "src/a.ts, src/auth/login.ts, src/b.ts", "line": 4, "message": "m"}]"#);
    assert_eq!(f.path, "src/auth/login.ts");
    let f = one(r#"[{"path": "src/a.ts, src/b.ts", "line": 4, "message": "m"}]"#);
    assert_eq!(f.path, "src/a.ts, src/b.ts");
    // A member whose own name holds ", ".
    let f = read_findings(
        &crate::answer::json::json_values(r#"[{"path": "x.ts, notes, v2.md, y.ts", "line": 1, "message": "m"}]"#),
        "notes, v2.md",
    );
    assert_eq!(f[0].path, "notes, v2.md");
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
