//! `rlm batch --schema FILE`: answers constrained to a JSON Schema, on both wire formats,
//! validated, retried once with the errors, cached by schema, merged as typed data.

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::{json, Value};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": { "functions": { "type": "array", "items": { "type": "string" } } },
  "required": ["functions"],
  "additionalProperties": false
}"#;

fn project() -> Project {
    Project::new().ts_files(3).file("functions.schema.json", SCHEMA)
}

/// An OpenAI-compatible server with no key (a local server).
fn openai(p: &Project, url: &str, extra: &[&str]) -> Output {
    let mut args = batch("src/*.ts", url, &["--schema", "functions.schema.json", "-o", "out"]);
    args.extend_from_slice(extra);
    p.rlm(&args).env_remove("ANTHROPIC_API_KEY").run()
}

#[test]
fn openai_servers_get_the_schema_as_response_format_and_answers_are_kept_as_json() {
    let mock = MockLlm::start();
    let p = project();
    openai(&p, &mock.url(), &["--aggregate", "merge"]).assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 3);
    for r in &recorded {
        assert_eq!(r.path, "/v1/chat/completions");
        let format = &r.body["response_format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["schema"]["required"], json!(["functions"]));
        assert!(
            r.system_text().contains("conform to this JSON Schema"),
            "the schema is in the system prompt too: {}",
            r.system_text()
        );
    }
    for i in 0..3 {
        let text = p.read(&format!("out/src-f{i:02}.ts.result.md"));
        let value: Value = serde_json::from_str(&text).expect("the result file is the JSON answer");
        assert_eq!(value, json!({"functions": ["mock"]}));
    }
    assert!(
        p.aggregate_md()
            .contains("## functions\n\n- mock — src/f00.ts, src/f01.ts, src/f02.ts\n"),
        "merge works on the typed answers: {}",
        p.aggregate_md()
    );
}

#[test]
fn anthropic_gets_a_forced_tool_and_its_input_is_the_answer() {
    let mock = MockLlm::start();
    let p = project();
    let url = mock.url();
    p.rlm(&batch(
        "src/*.ts",
        &url,
        &["--schema", "functions.schema.json", "--model", "haiku", "-o", "out"],
    ))
    .run()
    .assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 3);
    for r in &recorded {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.body["tool_choice"], json!({"type": "tool", "name": "answer"}));
        assert_eq!(r.body["tools"][0]["input_schema"]["required"], json!(["functions"]));
    }
    let value: Value = serde_json::from_str(&p.read("out/src-f00.ts.result.md")).unwrap();
    assert_eq!(value, json!({"functions": ["mock"]}));
}

#[test]
fn a_nonconforming_answer_is_asked_for_again_once_then_the_file_fails() {
    let mock = MockLlm::start();
    let p = project().file(
        "src/bad.ts",
        &format!("// {}\n", reply_marker(r#"{"functions": [1, 2], "extra": true}"#)),
    );
    let out = openai(&p, &mock.url(), &["-j", "1"]);
    out.assert_exit(1);
    assert_eq!(mock.requests(), 5, "3 good files, the bad one twice");
    let bad: Vec<_> = mock
        .recorded()
        .into_iter()
        .filter(|r| r.user_text().contains("bad.ts"))
        .collect();
    assert_eq!(bad.len(), 2);
    let retry = bad[1].user_text();
    assert!(retry.contains("does not conform to the JSON Schema"), "{retry}");
    assert!(retry.contains("at /functions/0"), "the errors are quoted: {retry}");
    assert!(
        out.stderr
            .contains("does not conform to --schema functions.schema.json after one retry"),
        "{}",
        out.stderr
    );
    assert!(
        p.exists("out/src-bad.ts.rejected.md"),
        "the paid, rejected answer is kept for inspection"
    );
    assert!(!p.exists("out/src-bad.ts.result.md"));
    let report = p.report();
    assert_eq!(report["succeeded"], 3);
    assert_eq!(report["failed"][0]["path"], "src/bad.ts");

    // Only conforming answers are cached: the rerun pays for the bad file alone.
    mock.reset_counts();
    openai(&p, &mock.url(), &["-j", "1"]).assert_exit(1);
    assert_eq!(mock.requests(), 2);
}

#[test]
fn answers_in_prose_or_fences_are_accepted_and_kept_canonical() {
    let mock = MockLlm::start();
    let p = Project::new().file("functions.schema.json", SCHEMA).file(
        "src/a.ts",
        &format!("// {}\n", reply_marker("Sure!\n```json\n{\"functions\": [\"a\"]}\n```")),
    );
    openai(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 1, "no retry for a fenced answer");
    assert_eq!(
        p.read("out/src-a.ts.result.md"),
        "{\n  \"functions\": [\n    \"a\"\n  ]\n}\n"
    );
}

#[test]
fn a_server_that_refuses_json_schema_gets_json_object_with_the_schema() {
    // llama-cpp-python answers 500 "Input should be 'text' or 'json_object'".
    let mock = MockLlm::start();
    mock.fault_when(
        r#""type":"json_schema""#,
        vec![Fault::Status(
            500,
            "1 validation error: response_format.type Input should be 'text' or 'json_object'".into(),
        )],
    );
    let p = project();
    openai(&p, &mock.url(), &["-j", "1"]).assert_exit(0);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 4, "one refusal, then one call per file");
    assert_eq!(recorded[0].body["response_format"]["type"], "json_schema");
    for r in &recorded[1..] {
        assert_eq!(r.body["response_format"]["type"], "json_object");
        assert_eq!(r.body["response_format"]["schema"]["required"], json!(["functions"]));
    }
}

#[test]
fn the_cache_is_keyed_by_the_schema() {
    let mock = MockLlm::start();
    let p = project();
    openai(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 3);
    openai(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 3, "the rerun is served from the cache");
    p.write(
        "functions.schema.json",
        &SCHEMA.replace("\"functions\": {", "\"functions\": {\"minItems\": 2, "),
    );
    openai(&p, &mock.url(), &[]).assert_exit(0);
    assert_eq!(mock.requests(), 6, "another schema, other answers");
    let value: Value = serde_json::from_str(&p.read("out/src-f00.ts.result.md")).unwrap();
    assert_eq!(value["functions"].as_array().unwrap().len(), 2);
    // Without --schema the free-text answers are separate again.
    p.rlm(&batch("src/*.ts", &mock.url(), &["-o", "out"]))
        .env_remove("ANTHROPIC_API_KEY")
        .run()
        .assert_exit(0);
    assert_eq!(mock.requests(), 9);
}

#[test]
fn a_broken_schema_is_an_input_error_before_anything_is_sent() {
    let mock = MockLlm::start();
    let p = project()
        .file("broken.json", "{\"type\": ")
        .file("odd.json", "{\"type\": \"thing\"}");
    for (file, needle) in [
        ("broken.json", "--schema broken.json is not JSON"),
        ("odd.json", "--schema odd.json is not a valid JSON Schema"),
        ("missing.json", "--schema: failed to open file `"),
    ] {
        let out = p
            .rlm(&batch("src/*.ts", &mock.url(), &["--schema", file]))
            .env_remove("ANTHROPIC_API_KEY")
            .run();
        out.assert_exit(2);
        let line = out.stderr.trim();
        assert!(line.contains(needle), "{line}");
        assert_eq!(line.lines().count(), 1, "one line: {line}");
    }
    assert_eq!(mock.requests(), 0);
}
