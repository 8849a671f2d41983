//! End-to-end against a real model server (issue 3): the bundled local model, or any
//! OpenAI-compatible server named by `RLM_LOCAL_MODEL_URL`.
//!
//! The model is tiny, so this asserts what rlm did — calls made, usage counted, results,
//! aggregates and reports written, caching — never the quality of the answers. It is
//! `#[ignore]`d by `cargo test`; run on its own (`cargo test --test it real_model --
//! --ignored`) it uses the server `RLM_LOCAL_MODEL_URL` names, else the bundled one
//! `scripts/local-model` runs — starting it (and installing it the first time) if need be.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn project() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("real-model-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = [
        (
            "src/math.ts",
            "export function add(a: number, b: number) { return a + b; }\n",
        ),
        ("src/greet.py", "def greet(name):\n    return f\"Hello, {name}!\"\n"),
        (
            "src/colors.ts",
            "export const RED = \"#f00\";\nexport function paint(c: string) { return c; }\n",
        ),
    ];
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    dir
}

/// Runs `rlm batch` over the project with `--json` and returns the report.
fn batch(dir: &Path, url: &str, aggregate: &str) -> Value {
    let out_dir = dir.join(format!("out-{aggregate}-{}", std::fs::read_dir(dir).unwrap().count()));
    let output = Command::new(env!("CARGO_BIN_EXE_rlm"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args([
            "batch",
            "src/*.{ts,py}",
            "Name the functions defined in {file}, as a Markdown list.",
        ])
        // No --model: rlm asks the server which model it serves (GET /v1/models).
        .args(["--provider", "openai", "--base-url", url])
        .args([
            "--max-tokens",
            "96",
            "--context-window",
            "4096",
            "--timeout",
            "120",
            "--json",
            "--yes",
        ])
        .args(["--aggregate", aggregate, "--output-dir"])
        .arg(&out_dir)
        .output()
        .expect("run rlm");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "rlm failed ({aggregate}):\n{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("--json prints the report");
    assert!(
        out_dir.join("aggregate.md").is_file(),
        "aggregate.md missing for {aggregate}"
    );
    assert!(out_dir.join("report.json").is_file());
    let aggregate_md = std::fs::read_to_string(out_dir.join("aggregate.md")).unwrap();
    if aggregate == "concat" {
        for file in ["src/math.ts", "src/greet.py", "src/colors.ts"] {
            assert!(
                aggregate_md.contains(&format!("## File: {file}")),
                "{file} has its own section, packed or not:\n{aggregate_md}"
            );
        }
    }
    for unit in report["units"].as_array().unwrap() {
        let file = out_dir.join(unit["result_file"].as_str().unwrap());
        assert!(
            std::fs::metadata(&file).unwrap().len() > 0,
            "{} is empty",
            file.display()
        );
    }
    report
}

fn sum(report: &Value, pointer_units: &str, pointer_calls: &str) -> u64 {
    let units: u64 = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u[pointer_units].as_u64().unwrap())
        .sum();
    let calls: u64 = report["aggregate_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.pointer(pointer_calls).and_then(Value::as_u64).unwrap())
        .sum();
    units + calls
}

/// The server to run against: `RLM_LOCAL_MODEL_URL`, else the one `scripts/local-model`
/// runs, started (and installed, the first time: its progress shows on the terminal) when
/// none is. The URL is the last line the script prints.
fn server_url() -> String {
    if let Ok(url) = std::env::var("RLM_LOCAL_MODEL_URL") {
        if !url.trim().is_empty() {
            return url.trim().to_string();
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/local-model");
    let last_line = |command: &str, stderr: std::process::Stdio| {
        let out = Command::new(&script)
            .arg(command)
            .stderr(stderr)
            .output()
            .unwrap_or_else(|e| panic!("{} {command} could not run: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let url = stdout.lines().last().unwrap_or_default().trim().to_string();
        (out.status.success() && url.starts_with("http")).then_some(url)
    };
    last_line("status", std::process::Stdio::null())
        .or_else(|| last_line("start", std::process::Stdio::inherit()))
        .unwrap_or_else(|| {
            panic!(
                "no model server: RLM_LOCAL_MODEL_URL is not set and `scripts/local-model start` failed (its \
                 messages are above); fix that, or set RLM_LOCAL_MODEL_URL to an OpenAI-compatible server"
            )
        })
}

/// Ignored by `cargo test` (it needs a model server); CI runs it explicitly with
/// `cargo test --test it real_model -- --ignored`, and then a missing server is a failure,
/// never a silent pass.
#[test]
#[ignore = "needs a real model server: cargo test --test it real_model -- --ignored (starts scripts/local-model)"]
fn batch_against_a_real_model_server() {
    let url = server_url();
    let dir = project();

    // Small files are packed into batch units by default, so the units (what is called and
    // cached) may be fewer than the files; every file still gets its own result.
    let mut units_planned = None;
    let mut answers = None;
    for (aggregate, first) in [("concat", true), ("merge", false), ("summarize", false)] {
        let report = batch(&dir, &url, aggregate);
        assert_eq!(report["status"], "SUCCESS");
        assert_eq!(report["files_matched"], 3);
        assert_eq!(report["files_succeeded"], 3);
        let units = report["units_planned"].as_u64().unwrap();
        assert!((1..=3).contains(&units), "{units} units for 3 files");
        assert_eq!(*units_planned.get_or_insert(units), units, "the same plan every run");
        assert_eq!(report["succeeded"], units);
        // A packed answer the toy model garbles sends its files again, one by one (sampling
        // decides whether it does; a cached garbled answer asks the cached ones again).
        let calls = units + report["asked_alone"].as_u64().unwrap();
        assert_eq!(*answers.get_or_insert(calls), calls, "the same answers every run");
        // Per-file answers do not depend on the aggregation: only the first run calls.
        let fresh = if first { calls } else { 0 };
        assert_eq!(report["cache_misses"], fresh, "{aggregate}");
        assert_eq!(report["cache_hits"], calls - fresh, "{aggregate}");
        assert_eq!(report["provider"], "openai");
        assert_eq!(report["model"], "smollm2", "the one model scripts/local-model serves");
        assert!(
            report["model_caution"]
                .as_str()
                .is_some_and(|c| c.contains("135 million parameters")),
            "the toy model's answers say so: {report:#}"
        );
        let tokens_in = report["tokens_in"].as_u64().unwrap();
        let tokens_out = report["tokens_out"].as_u64().unwrap();
        if aggregate != "merge" {
            assert!(tokens_in > 0 && tokens_out > 0, "{aggregate}: the server reports usage");
        }
        assert_eq!(tokens_in, sum(&report, "tokens_in", "/usage/input_tokens"));
        assert_eq!(tokens_out, sum(&report, "tokens_out", "/usage/output_tokens"));
        let calls = report["aggregate_calls"].as_array().unwrap();
        if aggregate == "summarize" {
            assert_eq!(calls.len(), 1, "summarize makes one more call");
            assert_eq!(calls[0]["cached"], false);
            assert!(calls[0]["usage"]["output_tokens"].as_u64().unwrap() > 0);
        } else {
            assert!(calls.is_empty());
        }
    }

    // The same command again: everything, the summary included, comes from the cache.
    let rerun = batch(&dir, &url, "summarize");
    assert_eq!(rerun["status"], "SUCCESS");
    assert_eq!(rerun["cache_hits"], answers.unwrap());
    assert_eq!(rerun["cache_misses"], 0);
    assert_eq!(rerun["tokens_in"], 0);
    assert_eq!(rerun["tokens_out"], 0);
    assert!(rerun["tokens_saved"].as_u64().unwrap() > 0);
    assert_eq!(rerun["aggregate_calls"][0]["cached"], true);
}
