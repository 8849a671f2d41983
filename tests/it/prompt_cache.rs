//! Prompt caching through the binary: the part of the prompt every unit shares goes first,
//! byte for byte, marked for the provider's cache (Anthropic `cache_control`; OpenAI caches
//! by itself); the cache reads and writes the provider reports, and the money they saved,
//! are in `report.json` per unit and per run and in the summary; `--no-prompt-cache` takes
//! the marker off without asking again for answers already paid for; the estimate counts
//! the reads once the prefix is known.

use serde_json::{json, Value};

use crate::support::mock_llm::*;
use crate::support::*;

/// A review rubric long enough for the models' prompt caches (about 1,500 tokens), then the
/// line that names the file.
fn rubric_prompt() -> String {
    let mut prompt = String::from("Our review rules:\n");
    for i in 0..60 {
        prompt.push_str(&format!(
            "- Rule {i}: functions stay short, names say what they hold, errors are handled.\n"
        ));
    }
    prompt.push_str("\nReview {file} against them.");
    prompt
}

fn project() -> Project {
    Project::new()
        .file("src/a.py", "import os\nprint(os.getcwd())\n")
        .file("src/b.py", "def f(x):\n    return x + 1\n")
        .file("src/c.py", "y = 2\n")
        .file("src/d.py", "z = [1, 2, 3]\n")
}

/// `rlm batch src/*.py RUBRIC --provider P --base-url URL -o out --json EXTRA…`
fn run(p: &Project, url: &str, provider: &str, extra: &[&str]) -> Output {
    let prompt = rubric_prompt();
    let mut args = vec![
        "batch",
        "src/*.py",
        prompt.as_str(),
        "--provider",
        provider,
        "--base-url",
        url,
        "-o",
        "out",
        "--json",
        "--no-batch-small",
    ];
    args.extend_from_slice(extra);
    let run = p.rlm(&args);
    let run = if provider == "openai" {
        run.env_remove("ANTHROPIC_API_KEY")
    } else {
        run
    };
    run.run()
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn anthropic_caches_the_shared_prefix_and_the_report_says_what_it_saved() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = project();
    let out = run(&p, &url, "anthropic", &[]);
    out.assert_exit(0);
    let report = out.json();

    // On the wire: the shared part is its own first block, marked, the same in every call.
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 4);
    let first = &recorded[0].body["messages"][0]["content"][0];
    assert_eq!(first["cache_control"], json!({"type": "ephemeral"}));
    assert!(first["text"].as_str().unwrap().contains("Rule 59"));
    for r in &recorded {
        assert_eq!(r.body["messages"][0]["content"][0], *first, "a byte-identical prefix");
        let own = &r.body["messages"][0]["content"][1];
        assert!(
            own.get("cache_control").is_none(),
            "the unit's own text is never marked"
        );
        assert!(own["text"].as_str().unwrap().ends_with(" against them.\n"));
        assert!(
            r.body["system"].is_string(),
            "one breakpoint, at the end of the shared part"
        );
    }

    // The mock wrote the prefix once and read it three times: so says the report.
    assert_eq!(mock.prompt_cache_counts(), (1, 3));
    let written = u64_of(&report["cache_write_tokens"]);
    let read = u64_of(&report["cache_read_tokens"]);
    assert!(written > 1024, "{report:#}");
    assert_eq!(read, 3 * written);
    // Sonnet: input $2, cache reads $0.20, writes $2.50 per million tokens.
    let saved = f64_of(&report["prompt_cache_saved_usd"]);
    let expected = (read as f64 * 1.8 - written as f64 * 0.5) / 1e6;
    assert!((saved - expected).abs() < 1e-9, "{saved} vs {expected}");
    let units = report["units"].as_array().unwrap();
    let unit_reads: u64 = units.iter().map(|u| u64_of(&u["cached_input_tokens"])).sum();
    let unit_writes: u64 = units.iter().map(|u| u64_of(&u["cache_write_tokens"])).sum();
    let unit_saved: f64 = units.iter().map(|u| f64_of(&u["prompt_cache_saved_usd"])).sum();
    assert_eq!((unit_reads, unit_writes), (read, written));
    assert!((unit_saved - saved).abs() < 1e-12);
    assert_eq!(
        units
            .iter()
            .filter(|u| f64_of(&u["prompt_cache_saved_usd"]) < 0.0)
            .count(),
        1,
        "the call that wrote the prefix paid the write premium"
    );
    // The cost is what the provider billed: cheaper than the same tokens all fresh.
    let cost = f64_of(&report["cost_usd"]);
    assert!(cost > 0.0);
    let uncached = (u64_of(&report["tokens_in"]) as f64 * 2.0 + u64_of(&report["tokens_out"]) as f64 * 10.0) / 1e6;
    assert!((uncached - cost - saved).abs() < 1e-9, "{uncached} - {cost} = {saved}");

    assert!(p.report_md().contains("- Prompt cache: "));
}

#[test]
fn no_prompt_cache_takes_the_marker_off_and_keeps_the_answers_already_paid_for() {
    let mock = MockLlm::start();
    let url = mock.url();
    let p = project();
    let out = run(&p, &url, "anthropic", &["--no-prompt-cache"]);
    out.assert_exit(0);
    let report = out.json();
    assert_eq!(mock.requests(), 4);
    assert!(mock
        .recorded()
        .iter()
        .all(|r| !r.body.to_string().contains("cache_control")));
    assert_eq!(mock.prompt_cache_counts(), (0, 0));
    assert_eq!(report["cache_read_tokens"], 0);
    assert_eq!(report["cache_write_tokens"], 0);
    assert_eq!(f64_of(&report["prompt_cache_saved_usd"]), 0.0);
    assert!(!p.report_md().contains("Prompt cache"));

    // The marker is no part of the result cache's key: with it on again, every answer is
    // served from the cache, nothing is asked again.
    let again = run(&p, &url, "anthropic", &[]);
    again.assert_exit(0);
    assert_eq!(mock.requests(), 4);
    assert_eq!(again.json()["cache_hits"], 4);

    // The config key does what the flag does.
    let fresh = MockLlm::start();
    p.write(".aiwg/aiwg.config", r#"{"rlm": {"prompt_cache": false}}"#);
    run(&p, &fresh.url(), "anthropic", &["--no-cache"]).assert_exit(0);
    assert_eq!(fresh.requests(), 4);
    assert!(fresh
        .recorded()
        .iter()
        .all(|r| !r.body.to_string().contains("cache_control")));
}

#[test]
fn the_summary_line_says_what_the_prompt_cache_saved() {
    let mock = MockLlm::start();
    let p = project();
    let prompt = rubric_prompt();
    let out = p
        .rlm(&[
            "batch",
            "src/*.py",
            &prompt,
            "--provider",
            "anthropic",
            "--base-url",
            &mock.url(),
            "--no-batch-small",
        ])
        .run();
    out.assert_exit(0);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Prompt cache: "))
        .unwrap_or_else(|| panic!("no prompt-cache line in {}", out.stdout));
    assert!(
        line.contains("tokens read and") && line.contains("written by the provider's prompt cache, saving $"),
        "{line}"
    );
    assert!(p.report_md().contains("- Prompt cache: "));
}

#[test]
fn openai_caches_the_same_prefix_by_itself_and_the_report_prices_its_reads() {
    let mock = MockLlm::start();
    mock.set_openai_prompt_cache(true);
    let url = mock.url();
    let p = project();
    let out = run(&p, &url, "openai", &["--model", "gpt-4.1-mini"]);
    out.assert_exit(0);
    let report = out.json();
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 4);
    // One user message that starts with the shared part, the same bytes in every call.
    let users: Vec<String> = recorded.iter().map(Recorded::user_text).collect();
    let shared_end = users[0].find("File: ").unwrap();
    for u in &users {
        assert_eq!(u[..shared_end], users[0][..shared_end]);
        assert!(u.contains("Rule 59"));
    }
    // A local server never gets prompt_cache_key (api.openai.com does; see the provider).
    assert!(recorded.iter().all(|r| r.body.get("prompt_cache_key").is_none()));
    let read = u64_of(&report["cache_read_tokens"]);
    assert!(read >= 3 * 1024, "{report:#}");
    assert_eq!(report["cache_write_tokens"], 0, "OpenAI reports no writes");
    // gpt-4.1-mini: input $0.40, cached input $0.10 per million tokens.
    let saved = f64_of(&report["prompt_cache_saved_usd"]);
    assert!((saved - read as f64 * 0.30 / 1e6).abs() < 1e-12, "{saved}");

    // OpenAI caches a repeated prefix whatever the client says: --no-prompt-cache sends the
    // same messages, and the reads it gets are still reported.
    let again = run(
        &p,
        &url,
        "openai",
        &["--model", "gpt-4.1-mini", "--no-cache", "--no-prompt-cache"],
    );
    again.assert_exit(0);
    let after: Vec<String> = mock.recorded()[4..].iter().map(Recorded::user_text).collect();
    let mut before = users.clone();
    let mut now = after.clone();
    before.sort();
    now.sort();
    assert_eq!(before, now, "the same bytes, with or without the marker");
    assert!(u64_of(&again.json()["cache_read_tokens"]) > 0);
}

#[test]
fn the_estimate_counts_the_prefix_read_from_the_cache() {
    let p = project();
    let mock = MockLlm::start();
    let url = mock.url();
    let plan = |extra: &[&str]| {
        let mut args = vec!["--dry-run"];
        args.extend_from_slice(extra);
        let out = run(&p, &url, "anthropic", &args);
        out.assert_exit(0);
        out.json()
    };
    let cached = plan(&["-j", "1"]);
    let uncached = plan(&["-j", "1", "--no-prompt-cache"]);
    assert_eq!(mock.requests(), 0);
    let estimate = &cached["estimate"];
    // One call at a time: the first writes the prefix, the three others read it.
    let written = u64_of(&estimate["cache_write_tokens"]);
    assert!(written > 1024, "{estimate}");
    assert_eq!(u64_of(&estimate["cache_read_tokens"]), 3 * written);
    assert_eq!(uncached["estimate"]["cache_read_tokens"], 0);
    assert_eq!(uncached["estimate"]["input_tokens"], estimate["input_tokens"]);
    assert!(f64_of(&estimate["cost_usd"]) < f64_of(&uncached["estimate"]["cost_usd"]));
    // Calls that start together all write: with four at once, nothing is read.
    let parallel = plan(&["-j", "4"]);
    assert_eq!(parallel["estimate"]["cache_read_tokens"], 0);
    assert_eq!(u64_of(&parallel["estimate"]["cache_write_tokens"]), 4 * written);
    // A prompt too short for the model's minimum is never counted as cached.
    let short = p
        .rlm(&[
            "batch",
            "src/*.py",
            "Review {file}",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--dry-run",
            "--json",
        ])
        .run();
    short.assert_exit(0);
    assert_eq!(short.json()["estimate"]["cache_read_tokens"], 0);
    assert_eq!(short.json()["estimate"]["cache_write_tokens"], 0);
}
