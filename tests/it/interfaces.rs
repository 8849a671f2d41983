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

    // No match, and a pattern whose directory does not exist.
    let out = p.rlm(&batch("src/**/*.py", &url, &["--json"])).run();
    assert_error_document(&out, "no_match", "No files matched");
    let out = p.rlm(&batch("nope/**/*.ts", &url, &["--json"])).run();
    assert_error_document(&out, "no_match", "no directory nope/");
    // A bad flag value (clap), and an unknown flag.
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--retries", "99"])).run();
    assert_error_document(&out, "usage", "--retries");
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--no-such-flag"])).run();
    assert_error_document(&out, "usage", "--no-such-flag");
    // The depth refusal.
    let out = p.rlm(&batch("src/*.ts", &url, &["--json"])).env("RLM_DEPTH", "3").run();
    assert_error_document(&out, "usage", "RLM_DEPTH is 3");
    // An environment variable with a bad value: named with its value (a URL without its
    // credentials), each with the kind it had as a string error.
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json"]))
        .env("RLM_DEPTH", "abc")
        .run();
    assert_error_document(&out, "config", "RLM_DEPTH='abc' is not a whole number: unset it");
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--json"])
        .env("ANTHROPIC_BASE_URL", "ftp://me:hunter2@example.test")
        .run();
    assert_error_document(
        &out,
        "usage",
        "ANTHROPIC_BASE_URL='ftp://***@example.test' is not an http(s) URL",
    );
    assert!(
        !out.stderr.contains("hunter2") && !out.stdout.contains("hunter2"),
        "{}",
        out.stderr
    );
    // The cost refusal.
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--max-cost", "0"])).run();
    assert_error_document(&out, "over_budget", "exceeds safety threshold");
    // No provider.
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--json"])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    assert_error_document(&out, "config", "no model provider configured");
    assert_eq!(mock.requests(), 0);

    // rlm query, resume, status and list (with a run in the store).
    p.rlm(&batch("src/*.ts", &url, &["-q"])).run().assert_exit(0);
    let out = p.rlm(&["query", "nope.ts", "What?", "--json"]).run();
    assert_error_document(&out, "usage", "nope.ts does not exist");
    let out = p
        .rlm(&["query", "src/f00.ts", "What?", "--json", "--retries", "x"])
        .run();
    assert_error_document(&out, "usage", "--retries");
    let out = p.rlm(&["resume", "no-such-run", "--json"]).run();
    let doc = assert_error_document(&out, "store", "no-such-run");
    assert_eq!(doc.as_object().unwrap().len(), 3, "{doc:#}");
    let out = p.rlm(&["status", "no-such-run", "--json"]).run();
    assert_error_document(&out, "store", "no-such-run");
    let out = p.rlm(&["list", "--json", "--limit", "0"]).run();
    assert_error_document(&out, "usage", "--limit");
    // And the other commands with --json.
    let out = p.rlm(&["verify-citations", "missing.md", "--json"]).run();
    assert_error_document(&out, "io", "missing.md");
    let out = p.rlm(&["index", "neighbors", "--node", "nope.ts", "--json"]).run();
    assert_error_document(&out, "usage", "nope.ts");

    // Without --json, stdout stays empty.
    let out = p.rlm(&batch("src/**/*.py", &url, &[])).run();
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

/// Citations written wrongly are reported as malformed — their own status and count, in
/// text and JSON — never as "no such file", and they fail the check.
#[test]
fn verify_citations_reports_malformed_citations() {
    let login = "fn a() {}\nfn b() {}\nfn c() {}\n";
    let hash = rlm::citation::content_hash(login.as_bytes());
    let upper = hash.to_uppercase();
    let p = Project::new().file("src/login.ts", login).file(
        "aggregate.md",
        &format!(
            "- a [src/login.ts@{hash}, L50-5]\n- b [src/login.ts@{hash}, L0]\n\
             - c [src/login.ts@{}, L1]\n- d [src/login.ts@{upper}, L2]\n- e [src/login.ts@{hash}, L2]\n",
            &hash[..8]
        ),
    );
    let out = p.rlm(&["verify-citations", "aggregate.md"]).run();
    out.assert_exit(1);
    let text = &out.stdout;
    assert!(
        text.contains(&format!(
            "aggregate.md:1: malformed: [src/login.ts@{hash}, L50-5]: `L50-5` is not a line range: it ends before it starts"
        )),
        "{text}"
    );
    assert!(
        text.contains("aggregate.md:2: malformed:") && text.contains("lines start at L1"),
        "{text}"
    );
    assert!(
        text.contains(&format!("aggregate.md:3: malformed: [src/login.ts@{}, L1]", &hash[..8])),
        "{text}"
    );
    assert!(
        text.contains(&format!("aggregate.md:4: malformed: [src/login.ts@{upper}, L2]")),
        "{text}"
    );
    assert!(!text.contains("no such file"), "{text}");
    assert!(
        text.ends_with("5 citations: 1 fresh, 0 stale, 0 broken, 4 malformed, 0 un-versioned: FAILED\n"),
        "{text}"
    );
    let out = p.rlm(&["verify-citations", "aggregate.md", "--json", "--strict"]).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["summary"]["malformed"], 4);
    assert_eq!(doc["citations"][0]["status"], "malformed");
    assert_eq!(doc["citations"][0]["written"], format!("[src/login.ts@{hash}, L50-5]"));
}

/// A `--require-citations` run whose answers cite nothing: verification passes with a note,
/// and fails under `--strict` (no citation is no evidence).
#[test]
fn verify_citations_strict_fails_when_nothing_is_cited() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    p.rlm(&batch(
        "src/*.ts",
        &mock.url(),
        &["--require-citations", "-o", "out", "-q"],
    ))
    .run()
    .assert_exit(0);
    let out = p.rlm(&["verify-citations", "out/aggregate.md"]).run();
    out.assert_exit(0);
    assert!(
        out.stdout.starts_with("no citations found in out/aggregate.md"),
        "{}",
        out.stdout
    );
    let out = p.rlm(&["verify-citations", "out/aggregate.md", "--strict"]).run();
    out.assert_exit(1);
    assert!(
        out.stdout.contains("FAILED (--strict needs at least one citation)"),
        "{}",
        out.stdout
    );
    let out = p
        .rlm(&["verify-citations", "out/aggregate.md", "--strict", "--json"])
        .run();
    out.assert_exit(1);
    assert_eq!(out.json()["passed"], false);
    assert_eq!(out.json()["summary"]["total"], 0);
}

/// The /rlm-batch command appends `--json` itself: a user's own `--json` must not make the
/// line a usage error. Every `--json` may be given twice.
#[test]
fn json_may_be_given_twice() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let out = p.rlm(&batch("src/*.ts", &mock.url(), &["--json", "--json"])).run();
    out.assert_exit(0);
    assert_eq!(out.json()["status"], "SUCCESS");
    p.rlm(&["status", "--json", "--json"]).run().assert_exit(0);
    p.rlm(&["list", "--json", "--json"]).run().assert_exit(0);
    let out = p
        .rlm(&[
            "query",
            "src/f00.ts",
            "What?",
            "--json",
            "--base-url",
            &mock.url(),
            "--json",
        ])
        .run();
    out.assert_exit(0);
    out.json();
}

/// What the shell makes of an unquoted pattern: two files and a prompt (clap's "unexpected
/// argument"), two files and no prompt (a file name as the prompt), one file and no prompt.
/// Each is exit 2 with "quote the pattern"; nothing is sent.
#[test]
fn an_expanded_pattern_says_quote_the_pattern() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new()
        .file("src/a.py", "a = 1\n")
        .file("src/b.py", "b = 2\n")
        .file("src/auth/x.ts", "export const x = 1;\n")
        .file("src/auth/y.ts", "export const y = 1;\n");
    let out = p
        .rlm(&["batch", "src/a.py", "src/b.py", "Summarize {file}", "--base-url", &url])
        .run();
    out.assert_exit(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("the shell expanded an unquoted pattern into 2 files (src/a.py, src/b.py)")
            && out.stderr.contains("quote the pattern, as in: rlm batch \"src/*.py\""),
        "{}",
        out.stderr
    );
    // The prompt forgotten: the second file would have been the prompt.
    let out = p
        .rlm(&["batch", "src/auth/x.ts", "src/auth/y.ts", "--base-url", &url])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("quote the pattern") && out.stderr.contains("src/auth/*.ts"),
        "{}",
        out.stderr
    );
    // One file, no prompt.
    let out = p.rlm(&["batch", "src/auth/x.ts", "--base-url", &url]).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("no prompt") && out.stderr.contains("quote the pattern"),
        "{}",
        out.stderr
    );
    // A mixed expansion (`src/*`: files and a directory) suggests what it came from.
    let out = p
        .rlm(&["batch", "src/a.py", "src/auth", "src/b.py", "Summarize {file}"])
        .run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("into 3 files (src/a.py, src/auth, src/b.py)")
            && out.stderr.contains("rlm batch \"src/*\" \"your prompt\""),
        "{}",
        out.stderr
    );
    let out = p.rlm(&["batch", "src/a.py", "src/auth/x.ts", "Summarize {file}"]).run();
    assert!(out.stderr.contains("rlm batch \"src/**/*.{py,ts}\""), "{}", out.stderr);
    // With --json, the same as a document.
    let out = p
        .rlm(&["batch", "src/a.py", "src/b.py", "Summarize {file}", "--json"])
        .run();
    assert_error_document(&out, "usage", "quote the pattern");
    assert_eq!(mock.requests(), 0);
    // Another command's stray file name is not taken for a pattern: clap names it.
    for args in [
        &["index", "neighbors", "src/a.py"][..],
        &["index", "neighbors", "--node", "src/a.py", "src/b.py"][..],
        &["query", "src/a.py", "What?", "src/b.py"][..],
    ] {
        let out = p.rlm(args).run();
        out.assert_exit(2);
        assert!(
            out.stderr.contains("unexpected argument") && !out.stderr.contains("quote the pattern"),
            "{args:?}: {}",
            out.stderr
        );
    }
    // The quoted pattern runs.
    p.rlm(&batch("src/*.py", &url, &["-q"])).run().assert_exit(0);
}

/// A pattern whose directory does not exist says which, not "no files matched".
#[test]
fn a_missing_directory_in_a_pattern_is_named() {
    let p = Project::new().ts_files(1);
    let out = p.rlm(&["batch", "nonexist/**/*.py", "List {file}"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("no directory nonexist/"), "{}", out.stderr);
    assert!(!out.stderr.contains("No files matched"), "{}", out.stderr);
    let out = p.rlm(&["batch", "src/deeper/*.ts", "List {file}"]).run();
    assert!(out.stderr.contains("no directory src/deeper/"), "{}", out.stderr);
    // A trailing slash says the name is a directory.
    let out = p.rlm(&["batch", "nonexist/", "List {file}"]).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("no directory nonexist/"), "{}", out.stderr);
    assert!(!out.stderr.contains("No files matched"), "{}", out.stderr);
}

/// An argument that is not UTF-8 (a file name can be anything) on a line clap refuses is a
/// usage error like any other: one line, exit 2, the `--json` document — never a panic.
#[test]
fn a_non_utf8_argument_on_a_refused_line_is_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"x\xff");
    let p = Project::new().ts_files(2);
    let out = p.rlm(&["batch", "--bogus"]).arg(bad).run();
    out.assert_exit(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("unexpected argument '--bogus' found (see rlm batch --help)"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let out = p.rlm(&["batch", "--bogus", "--json"]).arg(bad).run();
    assert_error_document(&out, "usage", "'--bogus'");
    let out = p
        .rlm(&["batch", "src/*.ts", "S", "--bogus", "--prompt-file"])
        .arg(bad)
        .run();
    out.assert_exit(2);
    assert!(out.stderr.contains("'--bogus'"), "{}", out.stderr);
    // The shell-expansion hint still reads the files before a non-UTF-8 argument.
    let out = p.rlm(&["batch", "src/f00.ts", "src/f01.ts", "Summ"]).arg(bad).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("quote the pattern"), "{}", out.stderr);
    // A prompt that is not UTF-8 is named, escaped.
    let out = p.rlm(&["batch", "src/*.ts"]).arg(bad).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("the argument 'x\\xFF' is not valid UTF-8"),
        "{}",
        out.stderr
    );
}

/// clap's "missing required argument" keeps the names of what is missing, on one line, for
/// every command; a missing subcommand lists the subcommands.
#[test]
fn a_missing_argument_is_named() {
    let p = Project::new().ts_files(1);
    for (args, names, help) in [
        (&["query"][..], "<FILE> <PROMPT>", "rlm query --help"),
        (&["query", "src/f00.ts"], "<PROMPT>", "rlm query --help"),
        (
            &["--color", "never", "index", "neighbors"],
            "--node <PATH>",
            "rlm index neighbors --help",
        ),
        (&["merge", "a"], "--output-dir <DIR>", "rlm merge --help"),
        (&["verify-citations"], "<FILE>", "rlm verify-citations --help"),
        (&["job", "run"], "<JOB_FILE>", "rlm job run --help"),
    ] {
        let out = p.rlm(args).run();
        out.assert_exit(2);
        let want = format!("rlm: error: the following required arguments were not provided: {names} (see {help})\n");
        assert_eq!(out.stderr, want, "rlm {args:?}");
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let out = p.rlm(&with_json).run();
        let doc = assert_error_document(&out, "usage", names);
        assert_eq!(
            doc["error"]["message"],
            format!("the following required arguments were not provided: {names} (see {help})"),
            "rlm {with_json:?}"
        );
    }
    let out = p.rlm(&["job"]).run();
    out.assert_exit(2);
    assert!(
        out.stderr
            .starts_with("rlm: error: 'rlm job' needs a subcommand: run, pr-review, list, status"),
        "{}",
        out.stderr
    );
}

/// A file whose mock answer holds one finding at `level`.
fn with_finding(path: &str, level: &str) -> String {
    let answer = format!(
        r#"{{"findings": [{{"path": "{path}", "line": 1, "severity": "{level}", "type": "bug", "message": "a {level} here"}}]}}"#
    );
    format!("export const x = 1;\n// {}\n", reply_marker(&answer))
}

/// `--fail-on` reached with every unit succeeded: the run is SUCCESS and exits 1, and one
/// line says which gate failed and how many findings reached it — in the closing summary,
/// and on stderr under `--quiet` and `--json`.
#[test]
fn a_failed_gate_says_why() {
    let mock = MockLlm::start();
    let p = Project::new()
        .file("src/a.ts", &with_finding("src/a.ts", "error"))
        .file("src/b.ts", &with_finding("src/b.ts", "error"))
        .file("src/c.ts", &with_finding("src/c.ts", "warning"));
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["--fail-on", "error"])).run();
    out.assert_exit(1);
    assert!(out.stdout.contains("RLM Batch: SUCCESS"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("\nGate failed: 2 findings at or above error (--fail-on error)\n"),
        "{}",
        out.stdout
    );
    assert!(
        p.report_md()
            .contains("Failed on: 2 findings at or above error (--fail-on error)"),
        "{}",
        p.report_md()
    );
    // Quiet: stdout is the aggregate's path, the reason is on stderr.
    let out = p.rlm(&batch("src/*.ts", &url, &["--fail-on", "warning", "-q"])).run();
    out.assert_exit(1);
    assert_eq!(
        out.stderr,
        "Gate failed: 3 findings at or above warning (--fail-on warning)\n"
    );
    let out = p.rlm(&batch("src/*.ts", &url, &["--fail-on", "error", "--json"])).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(
        (doc["status"].as_str(), doc["gate"].as_str()),
        (Some("SUCCESS"), Some("failed"))
    );
    assert!(
        out.stderr
            .contains("Gate failed: 2 findings at or above error (--fail-on error)"),
        "{}",
        out.stderr
    );
    // A gate that passes says nothing.
    let out = p.rlm(&batch("src/c.ts", &url, &["--fail-on", "error", "-q"])).run();
    out.assert_exit(0);
    assert!(!out.stderr.contains("Gate"), "{}", out.stderr);
    assert_eq!(mock.requests(), 3, "the reruns are served from the cache");
}

/// An interrupted run: every unit the task store records as cancelled has its
/// `task:cancelled` line in `events.jsonl` (before `batch:completed`), every queued unit
/// ends exactly once there, and `rlm status` lists the cancelled units as cancelled, not
/// under "failures".
#[test]
fn every_unit_an_interrupt_stops_has_its_cancelled_event() {
    use std::time::Duration;
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(300));
    let p = Project::new().ts_files(12);
    let url = mock.url();
    let running = p.rlm(&batch("src/*.ts", &url, &["-j", "2", "-o", "out"])).spawn();
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(p.path().join("out/events.jsonl"))
            .is_ok_and(|log| log.matches("\"task:completed\"").count() >= 2)
    }));
    running.signal("INT");
    running.wait().assert_exit(130);

    let status = p.rlm(&["status", "--json"]).run();
    status.assert_exit(0);
    let status = status.json();
    let cancelled = status["units"]["cancelled"].as_u64().unwrap();
    let completed = status["units"]["completed"].as_u64().unwrap();
    assert!(cancelled >= 2, "the interrupt left units unfinished: {status}");
    assert_eq!(cancelled + completed, 12, "{status}");
    assert_eq!(status["failures"].as_array().unwrap().len(), 0, "{status}");
    assert_eq!(
        status["cancelled"].as_array().unwrap().len() as u64,
        cancelled,
        "{status}"
    );

    let log = p.read("out/events.jsonl");
    let events: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let named = |name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["event"] == name)
            .map(|e| e["unit"].as_str().unwrap().to_string())
            .collect()
    };
    let queued = named("task:queued");
    let mut ended = named("task:completed");
    ended.extend(named("task:failed"));
    ended.extend(named("task:cancelled"));
    assert_eq!(named("task:cancelled").len() as u64, cancelled, "{log}");
    ended.sort();
    let mut queued_sorted = queued.clone();
    queued_sorted.sort();
    assert_eq!(ended, queued_sorted, "every queued unit ends once:\n{log}");
    assert_eq!(events.last().unwrap()["event"], "batch:completed");
    let reasons: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "task:cancelled")
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    // Those the pool had admitted say so; the rest, closed by the log, say why too.
    assert!(
        reasons
            .iter()
            .all(|r| r.starts_with("not started: the run stopped dispatching") || r.contains("the run was interrupted")),
        "{reasons:?}"
    );

    let text = p.rlm(&["status"]).run();
    text.assert_exit(0);
    assert!(!text.stdout.contains("failures"), "{}", text.stdout);
    // Grouped by why: the groups add up to the cancelled units.
    let shown: u64 = text
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("cancelled (")?.split_once("): "))
        .map(|(n, _)| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(shown, cancelled, "{}", text.stdout);
}

/// The edge cases of a citation written wrongly: 16 characters that are not hex where the
/// hash goes, and line ranges `L-3`, `Lx` and a bare `12` are each malformed — counted, and
/// failing the check (also under `--strict`) — never "no such file", never ignored.
#[test]
fn verify_citations_finds_a_non_hex_hash_and_ranges_that_are_no_ranges() {
    let login = "fn a() {}\nfn b() {}\nfn c() {}\n";
    let hash = rlm::citation::content_hash(login.as_bytes());
    let p = Project::new().file("src/login.ts", login).file(
        "aggregate.md",
        &format!(
            "- a [src/login.ts@zzzzzzzzzzzzzzzz, L1]\n- b [src/login.ts@{hash}, L-3]\n\
             - c [src/login.ts@{hash}, Lx]\n- d [src/login.ts@{hash}, 12]\n- e [src/login.ts@{hash}, L2]\n"
        ),
    );
    let out = p.rlm(&["verify-citations", "aggregate.md"]).run();
    out.assert_exit(1);
    let text = &out.stdout;
    assert!(!text.contains("no such file"), "{text}");
    for (line, written, problem) in [
        (
            1,
            "[src/login.ts@zzzzzzzzzzzzzzzz, L1]".to_string(),
            "`zzzzzzzzzzzzzzzz` is not a content hash",
        ),
        (2, format!("[src/login.ts@{hash}, L-3]"), "`L-3` is not a line range"),
        (3, format!("[src/login.ts@{hash}, Lx]"), "`Lx` is not a line range"),
        (4, format!("[src/login.ts@{hash}, 12]"), "`12` is not a line range"),
    ] {
        assert!(
            text.contains(&format!("aggregate.md:{line}: malformed: {written}: {problem}")),
            "{text}"
        );
    }
    assert!(
        text.ends_with("5 citations: 1 fresh, 0 stale, 0 broken, 4 malformed, 0 un-versioned: FAILED\n"),
        "{text}"
    );
    let out = p.rlm(&["verify-citations", "aggregate.md", "--strict", "--json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["summary"]["malformed"], 4, "{doc:#}");
    assert_eq!(doc["summary"]["broken"], 0, "{doc:#}");
    assert_eq!(doc["passed"], false);
}

/// Citations written almost right (issue 17 audit): an en dash range, a hash and a range
/// with no comma between them, `lines 3-5`, several ranges or several citations in one
/// bracket. Each is read as meant where the meaning is plain (dashes, ranges, `;`) or
/// reported as malformed with its text — never dropped, never "no such file" for a file
/// that exists — and `--strict` fails on them.
#[test]
fn verify_citations_reads_dashes_and_multi_citation_brackets_and_reports_near_misses() {
    let a: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let h = rlm::citation::content_hash(a.as_bytes());
    let p = Project::new()
        .file("src/a.rs", &a)
        .file(
            "mixed.md",
            &format!(
                "A [src/a.rs@{h}, L3-5].\nB [src/a.rs@{h}, L50\u{2013}5].\nC [src/a.rs@{h} L0].\n\
                 D [src/a.rs@{h}, lines 3-5].\n"
            ),
        )
        .file(
            "multi.md",
            &format!(
                "D [src/a.rs@{h}, L3, L7].\nE [src/a.rs@{h}, L3-5; src/a.rs@{h}, L8]\n\
                 F [src/a.rs@{h}, L10\u{2013}12]\n"
            ),
        );
    let out = p.rlm(&["verify-citations", "mixed.md", "--strict"]).run();
    out.assert_exit(1);
    let text = &out.stdout;
    assert!(!text.contains("no such file"), "{text}");
    for (line, written, problem) in [
        (
            2,
            format!("[src/a.rs@{h}, L50\u{2013}5]"),
            "is not a line range: it ends before it starts".to_string(),
        ),
        (
            3,
            format!("[src/a.rs@{h} L0]"),
            format!("a comma must separate the hash from the line range: `{h}, L0`"),
        ),
        (
            4,
            format!("[src/a.rs@{h}, lines 3-5]"),
            "`lines 3-5` is not a line range (L42 or L42-58)".to_string(),
        ),
    ] {
        assert!(
            text.contains(&format!("mixed.md:{line}: malformed: {written}: ")) && text.contains(&problem),
            "line {line}: {text}"
        );
    }
    assert!(
        text.ends_with("4 citations: 1 fresh, 0 stale, 0 broken, 3 malformed, 0 un-versioned: FAILED\n"),
        "{text}"
    );

    let out = p.rlm(&["verify-citations", "multi.md", "--strict", "--json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    let cited: Vec<(String, String)> = doc["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["lines"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let fresh = |l: &str| (l.to_string(), "fresh".to_string());
    assert_eq!(
        cited,
        vec![fresh("L3"), fresh("L7"), fresh("L3-5"), fresh("L8"), fresh("L10-12")],
        "{doc:#}"
    );
    assert_eq!(doc["summary"]["total"], 5);
    assert_eq!(doc["passed"], true);
}

/// A refusal's `kind` says what to fix: the command line (`usage`), a file a flag or a job
/// names (`input`), the setup (`config`), the job directory (`store`), the system rlm runs
/// on (`system`). Nothing is sent for any of them.
#[test]
fn a_refusal_kind_says_what_to_fix() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new()
        .ts_files(2)
        .file("job.toml", "name = \"\"\n")
        .file("prompt.md", "List {file}");

    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json", "--schema", "missing.json"]))
        .run();
    assert_error_document(&out, "input", "--schema: failed to open file");
    let out = p
        .rlm(&[
            "batch",
            "src/*.ts",
            "--prompt-file",
            "missing.md",
            "--base-url",
            &url,
            "--json",
        ])
        .run();
    assert_error_document(
        &out,
        "input",
        "--prompt-file missing.md: no such file; give the path of a file",
    );
    let out = p.rlm(&["job", "run", "job.toml", "--base-url", &url, "--json"]).run();
    assert_error_document(&out, "input", "`name` is empty");

    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json"]))
        .env("RLM_BACKOFF_BASE_MS", "soon")
        .run();
    assert_error_document(&out, "config", "RLM_BACKOFF_BASE_MS='soon'");
    p.write(".aiwg/rlm/prompts/no-such-template.md", "text");
    let out = p.rlm(&batch("src/*.ts", &url, &["--json"])).run();
    assert_error_document(&out, "config", "no-such-template.md");
    fs_err::remove_file(p.path().join(".aiwg/rlm/prompts/no-such-template.md")).unwrap();

    let out = p.rlm(&["job", "status", "job-nope", "--json"]).run();
    assert_error_document(&out, "store", "no jobs in");

    // A working directory removed under rlm's feet: the system, not the user's line.
    let out = p
        .rlm(&batch("src/*.ts", &url, &["--json"]))
        .via(&[
            "sh",
            "-c",
            "mkdir gone && cd gone && rmdir ../gone && exec \"$0\" \"$@\"",
        ])
        .run();
    assert_error_document(&out, "system", "cannot read the current directory");
    assert_eq!(mock.requests(), 0, "nothing was sent");
}

/// The `--json` document of a run that ran carries `exit_code`, as the error document does:
/// 0 for a run that succeeded, 1 for one that ended PARTIAL (it had none).
#[test]
fn the_json_report_of_a_run_carries_its_exit_code() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = Project::new().ts_files(2);
    let out = p.rlm(&batch("src/*.ts", &url, &["--json"])).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["status"], "SUCCESS", "{doc:#}");
    assert_eq!(doc["exit_code"], 0, "{doc:#}");

    mock.fault_when("f01.ts", vec![Fault::Status(413, "too large".into()); 10]);
    let out = p.rlm(&batch("src/*.ts", &url, &["--json", "--no-cache"])).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["status"], "PARTIAL", "{doc:#}");
    assert_eq!(doc["exit_code"], 1, "{doc:#}");
}
