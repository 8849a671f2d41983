//! What a newcomer tries in the first ten minutes, through the binary: the rough edges
//! a first session hit, each with the behaviour they expected.

use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;

#[test]
fn trying_another_aggregation_is_free() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(5);
    let url = mock.url();
    p.rlm(&batch("src/*.ts", &url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 5);
    for strategy in ["merge", "concat"] {
        p.rlm(&batch("src/*.ts", &url, &["--aggregate", strategy]))
            .run()
            .assert_exit(0);
    }
    assert_eq!(mock.requests(), 5, "no per-file answer is paid twice");
    let out = p.rlm(&batch("src/*.ts", &url, &["--aggregate", "summarize"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 6, "summarize pays for the summary only");
    assert!(out.stdout.contains("1 model call)"), "singular: {}", out.stdout);
}

#[test]
fn quiet_never_hides_a_failure() {
    let mock = MockLlm::start();
    mock.push_faults(vec![Fault::ServerError; 2]);
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p.rlm(&batch("src/f00.ts", &url, &["-q", "--retries", "1"])).run();
    out.assert_exit(3);
    assert!(out.stdout.is_empty(), "no aggregate to name: {}", out.stdout);
    assert!(out.stderr.contains("src/f00.ts: server error (500)"), "{}", out.stderr);
    assert!(!out.stderr.contains("RLM Batch Initialized"), "quiet hides the banner");
}

#[test]
fn a_base_url_alone_means_an_openai_compatible_server() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--base-url", &url])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(mock.recorded()[0].path, "/v1/chat/completions");
    assert_eq!(mock.recorded()[0].body["model"], "mock-model", "the one model it lists");
}

#[test]
fn an_unquoted_glob_gets_a_hint_to_quote_it() {
    let p = Project::new().ts_files(3);
    // What the shell passes for an unquoted src/*.ts.
    let out = p
        .rlm(&["batch", "src/f00.ts", "src/f01.ts", "src/f02.ts", "List {file}"])
        .run();
    out.assert_exit(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("quote the pattern"), "{}", out.stderr);
}

#[test]
fn output_dirs_hold_the_whole_run_and_are_never_mixed() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(3).file("notes/mine.txt", "mine\n");
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "results"])).run();
    out.assert_exit(0);
    assert!(p.exists("results/report.md") && p.exists("results/report.json"));
    assert!(out.stdout.contains("Report: results/report.md"), "{}", out.stdout);
    assert!(
        p.markdown_reports().is_empty(),
        "nothing lands in .aiwg/rlm/ of the cwd"
    );

    // Reusing it for a run over fewer files replaces the old results cleanly.
    p.rlm(&batch("src/f00.ts", &url, &["-o", "results"]))
        .run()
        .assert_exit(0);
    let results: Vec<String> = file_names(&p.path().join("results"))
        .into_iter()
        .filter(|n| n.ends_with(".result.md"))
        .collect();
    assert_eq!(results, ["src-f00.ts.result.md"]);

    // A directory that is not an earlier run is not touched.
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "notes"])).run();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("not empty") && out.stderr.contains("notes"),
        "{}",
        out.stderr
    );
    assert_eq!(file_names(&p.path().join("notes")), ["mine.txt"]);
    let out = p.rlm(&batch("src/*.ts", &url, &["-o", "notes/mine.txt"])).run();
    out.assert_exit(2);
    assert!(out.stderr.contains("is a file"), "{}", out.stderr);
}

#[test]
fn a_local_model_costs_are_said_once_as_free() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(2);
    let url = mock.url();
    let out = p
        .rlm(&[
            "batch",
            "src/*.ts",
            "List {file}",
            "--base-url",
            &url,
            "--model",
            "llama3",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains("Estimated cost: free (local model"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("Total cost: free (local model"), "{}", out.stdout);
    assert!(
        !out.stderr.contains("rlm.prices") && !out.stdout.contains("rlm.prices"),
        "no nagging for a price"
    );
    assert!(!out.stderr.contains("$0.0000"), "{}", out.stderr);
}

#[test]
fn the_clamp_warning_comes_before_the_banner() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p.rlm(&batch("src/*.ts", &url, &["-j", "50"])).run();
    out.assert_exit(0);
    let warning = out.stderr.find("--max-parallel 50 clamped to 7").expect("a warning");
    let banner = out.stderr.find("Max parallel: 7").expect("the banner");
    assert!(warning < banner, "{}", out.stderr);
}

#[test]
fn model_discovery_waits_for_a_busy_server_and_says_so() {
    let mock = MockLlm::start();
    mock.set_models_latency(Duration::from_secs(4));
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&["batch", "src/*.ts", "List {file}", "--base-url", &url])
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr.contains("waiting for") && out.stderr.contains("/v1/models"),
        "{}",
        out.stderr
    );
}

/// Issue 25: `rlm query` on one file speaks of a file and a question, not of a batch;
/// a missing file is said not to exist (a directory to be one), and a missing
/// `--prompt-file` names the flag and the path — each one line, exit 2, nothing sent.
#[test]
fn query_speaks_of_one_file_and_its_errors_name_what_is_wrong() {
    let mock = MockLlm::start();
    let p = Project::new().ts_files(1);
    let url = mock.url();
    let out = p
        .rlm(&["query", "src/f00.ts", "What does it do?", "--base-url", &url])
        .run();
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("rlm query: src/f00.ts\nQuestion: What does it do?\nModel: "),
        "{}",
        out.stderr
    );
    for batch_word in ["RLM Batch", "Max parallel", "Pattern:", "Aggregate:"] {
        assert!(!out.stderr.contains(batch_word), "{batch_word}: {}", out.stderr);
    }
    assert!(
        out.stderr.contains("RLM Query: SUCCESS") && out.stderr.contains("\nFile: src/f00.ts\n"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.is_empty(), "the answer on stdout");
    let sent = mock.requests();

    let refusals: [(&[&str], &str); 3] = [
        (
            &["query", "missing.py", "What?"],
            "rlm query: missing.py does not exist: name one file that does (use rlm batch for many)",
        ),
        (
            &["query", "src", "What?"],
            "rlm query: src is a directory, not a file: name one file (use rlm batch for many)",
        ),
        (
            &["batch", "src/*.ts", "--prompt-file", "nope.txt"],
            "--prompt-file nope.txt: no such file; give the path of a file that holds the prompt (or - to read it \
             from standard input)",
        ),
    ];
    for (args, said) in refusals {
        let mut args = args.to_vec();
        args.extend(["--base-url", &url]);
        let out = p.rlm(&args).run();
        out.assert_exit(2);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
    }
    assert_eq!(mock.requests(), sent, "nothing sent");
}

/// Issue 25: when the server serves the bundled local model (it lists `smollm2`, the name
/// scripts/local-model gives it), rlm knows its window and gives it a short answer budget
/// unless --max-tokens says otherwise, and its toy answers say where they come from: in
/// report.md, aggregate.md, report.json and the terminal summary, and its findings reach
/// SARIF as notes, never errors. Another model gets none of it.
#[test]
fn the_bundled_local_model_is_known_by_its_name_and_its_answers_say_so() {
    let mock = MockLlm::start();
    mock.set_models(&["smollm2"]);
    let findings = serde_json::json!({"findings": [
        {"file": "src/a.py", "line": 1, "summary": "an invented SQL injection", "severity": "critical", "type": "sqli"}
    ], "metadata": {}})
    .to_string();
    let p = Project::new().file("src/a.py", &format!("x = 1\n# {}\n", reply_marker(&findings)));
    let url = mock.url();
    let args = [
        "batch",
        "src/*.py",
        "Find the bugs in {file}",
        "--base-url",
        &url,
        "--sarif",
        "r.sarif",
        "-o",
    ];
    let out = p
        .rlm(&[&args[..], &["out"]].concat())
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(max_tokens_sent(&mock), Some(512), "{:#}", mock.recorded()[0].body);
    assert!(
        !out.stderr.contains("context window of smollm2 is not known"),
        "{}",
        out.stderr
    );
    let said = "These answers come from SmolLM2-135M-Instruct, the bundled local model: it has 135 million parameters";
    assert!(out.stdout.contains(&format!("Note: {said}")), "{}", out.stdout);
    assert!(p.read("out/report.md").contains(&format!("> **Note:** {said}")));
    assert!(
        p.aggregate_md().starts_with(&format!("> **Note:** {said}")),
        "{}",
        p.aggregate_md()
    );
    assert!(p.report()["model_caution"].as_str().unwrap().starts_with(said));
    let sarif = read_json(&p.path().join("r.sarif"));
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["level"], "note", "{sarif:#}");
    assert!(
        result["message"]["text"].as_str().unwrap().contains("unverified"),
        "{sarif:#}"
    );

    // --max-tokens given is kept; another model is no toy and gets the general default.
    let out = p
        .rlm(&[&args[..], &["out2", "--max-tokens", "100", "--no-cache"]].concat())
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(max_tokens_sent(&mock), Some(100));
    mock.set_models(&["mock-model"]);
    let out = p
        .rlm(&[&args[..], &["out3"]].concat())
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    out.assert_exit(0);
    assert_eq!(max_tokens_sent(&mock), Some(4096));
    assert!(
        !out.stdout.contains("Note: ") && !p.read("out3/report.md").contains("**Note:**"),
        "{}",
        out.stdout
    );
    assert!(p.report()["model_caution"].is_null() || !p.read("out3/report.json").contains("model_caution"));
    assert_eq!(
        read_json(&p.path().join("r.sarif"))["runs"][0]["results"][0]["level"],
        "error"
    );
}

/// The answer budget of the latest call the mock received.
fn max_tokens_sent(mock: &MockLlm) -> Option<u64> {
    let body = mock.recorded().last()?.body.clone();
    body["max_tokens"].as_u64().or(body["max_completion_tokens"].as_u64())
}
