//! Interfaces that agents and CI parse (issue 17): `--json` always yields one document, even
//! for a run that never started; the shell-expansion hints; a repeated `--json`.

use serde_json::Value;

use crate::support::mock_llm::*;
use crate::support::*;

/// stdout is exactly one JSON document `{"status": "ERROR", "error": {kind, message},
/// "exit_code": 2}`, and stderr still has the human line.
fn assert_error_document(out: &Output, kind: &str, message_part: &str) -> Value {
    out.assert_exit(2);
    let doc = out.json();
    assert_eq!(doc["status"], "ERROR", "{doc:#}");
    assert_eq!(doc["exit_code"], 2, "{doc:#}");
    assert_eq!(doc["error"]["kind"], kind, "{doc:#}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains(message_part), "{message_part} not in {message}");
    assert!(
        out.stderr.contains(message_part),
        "the human message is on stderr too:\n{}",
        out.stderr
    );
    doc
}

#[test]
fn json_gives_an_error_document_for_every_refusal_before_a_run() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().ts_files(2);

    // No match.
    let out = p.rlm(&batch("nope/**/*.ts", &url, &["--json"])).run();
    assert_error_document(&out, "no_match", "No files matched");
    // A bad flag value (clap), and an unknown flag.
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--retries", "99"])).run();
    assert_error_document(&out, "usage", "--retries");
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--no-such-flag"])).run();
    assert_error_document(&out, "usage", "--no-such-flag");
    // The depth refusal.
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json"]))
        .env("RLM_DEPTH", "3")
        .run();
    assert_error_document(&out, "usage", "RLM_DEPTH is 3");
    // The cost refusal.
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--max-cost", "0"])).run();
    assert_error_document(&out, "usage", "exceeds safety threshold");
    // No provider.
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--json"])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    assert_error_document(&out, "usage", "no model provider configured");
    assert_eq!(mock.requests(), 0);

    // rlm query, resume, status and list (with a run in the store).
    p.rlm(&batch("src/*.ts", &url, &["-q"])).run().assert_exit(0);
    let out = p.rlm(&["query", "nope.ts", "What?", "--json"]).run();
    assert_error_document(&out, "usage", "is not a file");
    let out = p.rlm(&["query", "src/f00.ts", "What?", "--json", "--retries", "x"]).run();
    assert_error_document(&out, "usage", "--retries");
    let out = p.rlm(&["resume", "no-such-run", "--json"]).run();
    let doc = assert_error_document(&out, "usage", "no-such-run");
    assert_eq!(doc.as_object().unwrap().len(), 3, "{doc:#}");
    let out = p.rlm(&["status", "no-such-run", "--json"]).run();
    assert_error_document(&out, "usage", "no-such-run");
    let out = p.rlm(&["list", "--json", "--limit", "0"]).run();
    assert_error_document(&out, "usage", "--limit");

    // Without --json, stdout stays empty.
    let out = p.rlm(&batch("nope/**/*.ts", &url, &[])).run();
    out.assert_exit(2);
    assert_eq!(out.stdout, "");
}

/// A run that wrote its report as the document does not get a second one.
#[test]
fn a_finished_run_prints_one_document_only() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let out = p.rlm(&batch("src/*.ts", &mock.url(), &["--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
}
