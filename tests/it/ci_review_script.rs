//! `scripts/ci-review` (the GitHub Action's shell step) against a stub `rlm` that records its
//! arguments: the flags built from the environment, the key's variable, `fail-on`
//! validation, "nothing to review", and the step outputs. The end-to-end run against the
//! mock model needs the engine's `--changed-since`/`--sarif`/`--fail-on` and lives beside it.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci-review");

/// A stub rlm: writes its arguments (NUL-separated) and the key variables it sees, prints
/// `STUB_STDERR` on stderr, creates `STUB_SARIF`, exits `STUB_EXIT`.
const STUB: &str = r#"#!/bin/sh
printf '%s\0' "$@" > "$STUB_DIR/args"
env | grep -E '^(ANTHROPIC|OPENAI|MY)_[A-Z_]*KEY=|^RLM_API_KEY=' | sort > "$STUB_DIR/keys" || true
if [ -n "${STUB_STDERR:-}" ]; then echo "$STUB_STDERR" >&2; fi
if [ -n "${STUB_SARIF:-}" ]; then echo '{}' > "$STUB_SARIF"; fi
echo "stdout of rlm"
exit "${STUB_EXIT:-0}"
"#;

struct Stub {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    args: Vec<String>,
    keys: String,
}

impl Stub {
    fn new() -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("rlm");
        std::fs::write(&bin, STUB).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Stub { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, env: &[(&str, &str)]) -> Ran {
        let _ = std::fs::remove_file(self.path().join("args"));
        let out = Command::new("bash")
            .arg(SCRIPT)
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RLM_BIN", self.path().join("rlm"))
            .env("STUB_DIR", self.path())
            .envs(env.iter().copied())
            .output()
            .expect("bash runs");
        let args = std::fs::read(self.path().join("args")).unwrap_or_default();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            args: args
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
            keys: std::fs::read_to_string(self.path().join("keys")).unwrap_or_default(),
        }
    }
}

fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

#[test]
fn flags_come_from_the_environment() {
    let stub = Stub::new();
    let ran = stub.run(&[
        ("RLM_PATTERN", "src/**/*.{ts,py}"),
        ("RLM_PROMPT", "Check {file} for \"quotes\" and $dollars"),
        ("RLM_CHANGED_SINCE", "abc123"),
        ("RLM_FAIL_ON", "warning"),
        ("RLM_MODEL", "haiku"),
        ("RLM_PROVIDER", "openai"),
        ("RLM_BASE_URL", "http://127.0.0.1:9/v1"),
        ("RLM_MAX_PARALLEL", "3"),
        ("RLM_SARIF", "out/review.sarif"),
        ("RLM_MAX_COST", "5"),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(
        &ran.args[..3],
        ["batch", "src/**/*.{ts,py}", "Check {file} for \"quotes\" and $dollars"]
    );
    for (flag, value) in [
        ("--sarif", "out/review.sarif"),
        ("--changed-since", "abc123"),
        ("--fail-on", "warning"),
        ("--model", "haiku"),
        ("--provider", "openai"),
        ("--base-url", "http://127.0.0.1:9/v1"),
        ("--max-parallel", "3"),
        ("--max-cost", "5"),
    ] {
        assert_eq!(after(&ran.args, flag), Some(value), "{flag} in {:?}", ran.args);
    }
    assert!(ran.args.iter().any(|a| a == "--force"), "a budget is consent above $10");
    assert!(!ran
        .args
        .iter()
        .any(|a| a == "--files-from" || a == "--null" || a == "--aggregate"));
    assert_eq!(ran.stdout, "stdout of rlm\n", "rlm's stdout passes through");
}

#[test]
fn defaults_review_every_matching_file_with_the_findings_prompt() {
    let stub = Stub::new();
    let ran = stub.run(&[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.args[1], "**/*");
    assert!(
        ran.args[2].contains("{\"findings\": [{\"path\": \"{file}\", \"line\""),
        "{}",
        ran.args[2]
    );
    assert_eq!(after(&ran.args, "--sarif"), Some("results.sarif"));
    assert!(!ran
        .args
        .iter()
        .any(|a| a == "--fail-on" || a == "--changed-since" || a == "--force"));
    assert!(
        ran.stderr.contains("reviewing every file that matches **/*"),
        "{}",
        ran.stderr
    );
}

#[test]
fn files_from_with_null() {
    let stub = Stub::new();
    let ran = stub.run(&[("RLM_FILES_FROM", "-"), ("RLM_NULL", "true"), ("RLM_FAIL_ON", "none")]);
    assert_eq!(after(&ran.args, "--files-from"), Some("-"));
    assert!(ran.args.iter().any(|a| a == "--null"));
    assert!(!ran.args.iter().any(|a| a == "--fail-on"));
}

#[test]
fn a_bad_fail_on_stops_before_rlm_runs() {
    let stub = Stub::new();
    let ran = stub.run(&[("RLM_FAIL_ON", "high")]);
    assert_eq!(ran.code, 2);
    assert!(ran.args.is_empty(), "rlm was not run");
    assert!(
        ran.stderr.contains("RLM_FAIL_ON must be error, warning, note or none"),
        "{}",
        ran.stderr
    );
}

#[test]
fn the_key_is_exported_under_the_providers_variable_and_never_passed_as_an_argument() {
    let stub = Stub::new();
    let anthropic = stub.run(&[("RLM_API_KEY", "sk-test-secret")]);
    assert_eq!(anthropic.keys, "ANTHROPIC_API_KEY=sk-test-secret\n");
    let openai = stub.run(&[("RLM_API_KEY", "sk-test-secret"), ("RLM_PROVIDER", "openai")]);
    assert_eq!(openai.keys, "OPENAI_API_KEY=sk-test-secret\n");
    let named = stub.run(&[("RLM_API_KEY", "sk-test-secret"), ("RLM_API_KEY_ENV", "MY_GATEWAY_KEY")]);
    assert_eq!(named.keys, "MY_GATEWAY_KEY=sk-test-secret\n");
    for ran in [&anthropic, &openai, &named] {
        assert!(!ran.args.iter().any(|a| a.contains("sk-test-secret")));
        assert!(!ran.stderr.contains("sk-test-secret") && !ran.stdout.contains("sk-test-secret"));
    }
    let masked = stub.run(&[("RLM_API_KEY", "sk-test-secret"), ("GITHUB_ACTIONS", "true")]);
    assert_eq!(masked.stdout.lines().next(), Some("::add-mask::sk-test-secret"));
    let bad = stub.run(&[("RLM_API_KEY", "k"), ("RLM_API_KEY_ENV", "X; rm -rf /")]);
    assert_eq!(bad.code, 2);
    assert!(bad.args.is_empty());
}

#[test]
fn rlms_exit_code_passes_through_or_is_deferred_to_the_outputs() {
    let stub = Stub::new();
    let ran = stub.run(&[("STUB_EXIT", "1"), ("STUB_STDERR", "rlm: 2 error findings")]);
    assert_eq!(ran.code, 1);
    assert!(
        ran.stderr.contains("rlm: 2 error findings"),
        "rlm's stderr reaches the log"
    );

    let output: PathBuf = stub.path().join("github_output");
    std::fs::write(&output, "earlier=1\n").unwrap();
    let sarif = stub.path().join("results.sarif");
    let deferred = stub.run(&[
        ("STUB_EXIT", "1"),
        ("STUB_SARIF", sarif.to_str().unwrap()),
        ("RLM_DEFER_EXIT", "true"),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
    ]);
    assert_eq!(deferred.code, 0);
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "earlier=1\nexit-code=1\nsarif=results.sarif\n"
    );
}

#[test]
fn no_changed_file_matching_is_nothing_to_review() {
    let stub = Stub::new();
    let ran = stub.run(&[
        ("STUB_EXIT", "2"),
        ("STUB_STDERR", "RLM Batch: No files matched pattern"),
        ("RLM_CHANGED_SINCE", "main"),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("nothing to review"));
    let usage = stub.run(&[
        ("STUB_EXIT", "2"),
        ("STUB_STDERR", "rlm: error: unknown git ref `main`"),
    ]);
    assert_eq!(usage.code, 2, "other usage errors still fail");
}
