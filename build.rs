//! Sets `RLM_GIT_COMMIT` (the 12-character commit rlm is built from, or `unknown` outside a
//! git checkout) for `rlm --version`. A packager can set `RLM_GIT_COMMIT` themselves.
//!
//! Cargo reruns this only when HEAD or the branch it points at moves (works in linked
//! worktrees, where `.git` is a file), so an ordinary edit-compile cycle does not rerun it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RLM_GIT_COMMIT");
    let commit = match std::env::var("RLM_GIT_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => {
            let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
            watch_head(&dir);
            git(&dir, &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=RLM_GIT_COMMIT={commit}");
}

/// Asks cargo to rerun when HEAD, the ref it points at, or the packed refs change. Only
/// existing files are named: cargo reruns every build for a path that does not exist.
fn watch_head(dir: &Path) {
    let Some(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) else {
        return;
    };
    let git_dir = PathBuf::from(git_dir);
    let common = git(dir, &["rev-parse", "--git-common-dir"])
        .map(|c| {
            if Path::new(&c).is_absolute() {
                PathBuf::from(c)
            } else {
                dir.join(c)
            }
        })
        .unwrap_or_else(|| git_dir.clone());
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(reference) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common.join(&reference));
        watched.push(git_dir.join(&reference));
    }
    for path in watched.into_iter().filter(|p| p.is_file()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `git ARGS` in `dir`: its trimmed stdout, or `None` if git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
