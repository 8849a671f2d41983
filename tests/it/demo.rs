//! `scripts/demo`, as a newcomer runs it on a fresh clone: against the mock model (through
//! `RLM_BASE_URL`, as the script documents), it must leave `git status` clean and every
//! path it prints must exist from where it was run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::mock_llm::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?} could not run: {e} (the demo test needs git)"));
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A clean clone of the committed repository (what a newcomer gets).
fn fresh_clone() -> (tempfile::TempDir, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let clone = tmp.path().join("rlm");
    git(
        tmp.path(),
        &["clone", "--quiet", "--no-hardlinks", &repo.display().to_string(), "rlm"],
    );
    (tmp, clone)
}

/// Absolute paths the demo printed after a label (`demo: report:        /…/report.md`).
fn printed_paths(stderr: &str) -> Vec<PathBuf> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("demo: "))
        .filter_map(|l| l.split_once(": ").map(|(_, rest)| rest.trim()))
        .filter(|rest| rest.starts_with('/'))
        .map(|rest| PathBuf::from(rest.split(" (").next().unwrap_or(rest).trim()))
        .collect()
}

fn run_demo(clone: &Path, cwd: &Path, url: &str) -> std::process::Output {
    Command::new(clone.join("scripts/demo"))
        .current_dir(cwd)
        .env("RLM_BIN", env!("CARGO_BIN_EXE_rlm"))
        .env("RLM_BASE_URL", url)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("scripts/demo runs")
}

#[test]
fn the_demo_on_a_fresh_clone_keeps_git_clean_and_prints_paths_that_exist() {
    let mock = MockLlm::start();
    let (_tmp, clone) = fresh_clone();
    // Run it from a subdirectory, as a user might: printed paths must still work.
    let cwd = clone.join("examples");
    let out = run_demo(&clone, &cwd, &mock.url());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "scripts/demo failed:\n{stderr}");
    // Its six small files are packed, a call per language, each file still answered.
    let sent: usize = mock
        .recorded()
        .iter()
        .map(|r| crate::support::mock_llm::delimited_paths(&r.user_text()).len())
        .sum();
    assert_eq!(sent, 6, "every demo file sent once:\n{stderr}");
    let calls = mock.requests();
    assert!(calls < 6, "{calls} calls:\n{stderr}");
    assert!(
        stderr.contains("demo: answered by"),
        "the summary names the model:\n{stderr}"
    );

    let paths = printed_paths(&stderr);
    assert!(paths.len() >= 3, "the demo prints where its outputs are:\n{stderr}");
    for path in &paths {
        assert!(
            path.exists(),
            "printed path {} does not exist:\n{stderr}",
            path.display()
        );
    }
    assert_eq!(
        git(&clone, &["status", "--porcelain"]),
        "",
        "the demo leaves git status clean"
    );

    // A second run is served from the cache and still clean.
    let again = run_demo(&clone, &clone, &mock.url());
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(mock.requests(), calls, "the rerun pays for nothing");
    assert_eq!(git(&clone, &["status", "--porcelain"]), "");
}

/// The first build is not silent: cargo runs without `--quiet`, so its progress reaches the
/// terminal (a stub cargo stands in for the minutes-long release build).
#[cfg(unix)]
#[test]
fn the_demo_build_shows_cargos_progress() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockLlm::start();
    let (tmp, clone) = fresh_clone();
    let bin = tmp.path().join("stub-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = tmp.path().join("cargo-args.txt");
    std::fs::write(
        bin.join("cargo"),
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$STUB_LOG\"\n\
         echo '   Compiling rlm v0.1.0 (stub)' >&2\n\
         mkdir -p target/release && ln -sf \"$REAL_RLM\" target/release/rlm\n",
    )
    .unwrap();
    std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(clone.join("scripts/demo"))
        .current_dir(&clone)
        .env("PATH", path)
        .env("STUB_LOG", &log)
        .env("REAL_RLM", env!("CARGO_BIN_EXE_rlm"))
        .env("RLM_BASE_URL", mock.url())
        .env_remove("RLM_BIN")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("scripts/demo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.lines().any(|a| a == "build") && !args.contains("--quiet"),
        "{args}"
    );
    let building = stderr.find("demo: building rlm").expect("the build is announced");
    let progress = stderr
        .find("Compiling rlm v0.1.0 (stub)")
        .expect("cargo's progress is shown");
    assert!(building < progress, "{stderr}");
}

/// Issue 25: with no key and no RLM_BASE_URL the demo uses the bundled local model (here a
/// stand-in `scripts/local-model` that prints the mock's URL); its last lines say the
/// server is still running, how to use it with rlm on one's own files, and how to stop it,
/// and rlm's own summary says the answers come from a 135M-parameter model.
#[cfg(unix)]
#[test]
fn the_demo_on_the_local_model_says_how_to_use_and_stop_it() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockLlm::start();
    mock.set_models(&["smollm2"]);
    let (_tmp, clone) = fresh_clone();
    let stand_in = clone.join("scripts/local-model");
    std::fs::write(&stand_in, "#!/bin/sh\n[ \"$1\" = start ] && echo \"$MOCK_URL\"\n").unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(clone.join("scripts/demo"))
        .current_dir(&clone)
        .env("RLM_BIN", env!("CARGO_BIN_EXE_rlm"))
        .env("MOCK_URL", mock.url())
        .env_remove("RLM_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("scripts/demo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let url = mock.url();
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    assert_eq!(
        tail[0], "demo: stop the server with: scripts/local-model stop",
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("demo: the local model server is still running at {url}"))
            && stderr.contains("scripts/local-model status prints the URL")
            && stderr.contains(&format!(
                "\"List the functions defined in {{file}}\" --base-url {url}\n"
            )),
        "{stderr}"
    );
    assert!(
        stdout.contains("Note: These answers come from SmolLM2-135M-Instruct, the bundled local model"),
        "{stdout}"
    );
}
