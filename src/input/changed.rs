//! `--changed-since REF`: the files a branch changed since it left REF — what a pull request
//! review looks at — from `git diff --name-only -z --diff-filter=ACMR REF...HEAD`.
//!
//! - `REF...HEAD` diffs from the merge base, so commits that landed on REF after the branch
//!   was cut are not counted as the branch's changes.
//! - Added, copied, modified and renamed files (under their new name) are listed; deleted
//!   files never are. Only committed changes count (CI checks out a commit).
//! - Paths come back relative to the working directory, and files outside it are left out
//!   (`git diff --relative`): the pattern rlm intersects them with is relative to the working
//!   directory too, so running in `packages/web` reviews that package's changes only.
//! - Entries that are directories in the work tree (submodules) are left out.
//!
//! git runs as a program with arguments, never through a shell, in the working directory,
//! with messages in English (`LC_ALL=C`) so its refusals can be recognised.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Why the changed files could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ChangedError {
    #[error("cannot run git for --changed-since: {0}; install git, or list the files with --files-from")]
    GitMissing(#[source] std::io::Error),
    #[error("{dir} is not inside a git work tree; --changed-since needs one (or list the files with --files-from)")]
    NotWorkTree { dir: PathBuf },
    #[error("`{reference}` is not a usable git ref for --changed-since: name a branch, tag or commit")]
    BadRef { reference: String },
    #[error("unknown git ref `{reference}` for --changed-since: fetch it (in GitHub Actions use `fetch-depth: 0` with actions/checkout)")]
    UnknownRef { reference: String },
    #[error("HEAD has no commit yet; --changed-since compares commits, so commit first")]
    NoHead,
    #[error("`{reference}` and HEAD share no history (a shallow clone?): fetch more of it (in GitHub Actions use `fetch-depth: 0` with actions/checkout)")]
    NoMergeBase { reference: String },
    #[error("`git {command}` failed: {message}")]
    GitFailed { command: String, message: String },
    /// Only on systems whose paths are not bytes (Windows).
    #[error("git listed a changed path that is not UTF-8: {0}")]
    NotUtf8(String),
}

/// The files changed between `reference` and `HEAD` (see the module doc), relative to `cwd`,
/// in git's order (sorted by path).
pub fn changed_since(reference: &str, cwd: &Path) -> Result<Vec<PathBuf>, ChangedError> {
    if reference.trim().is_empty() || reference.starts_with('-') {
        return Err(ChangedError::BadRef {
            reference: reference.to_string(),
        });
    }
    let git = Git { cwd };
    git.check_work_tree()?;
    let base = git.verify_commit(reference)?.ok_or_else(|| ChangedError::UnknownRef {
        reference: reference.to_string(),
    })?;
    git.verify_commit("HEAD")?.ok_or(ChangedError::NoHead)?;
    let range = format!("{base}...HEAD");
    let args = [
        "diff",
        "--name-only",
        "-z",
        "--diff-filter=ACMR",
        "--relative",
        "--no-ext-diff",
        &range,
        "--",
    ];
    let out = git.run(&args)?;
    if !out.status.success() {
        let message = first_line(&out.stderr);
        if message.contains("no merge base") {
            return Err(ChangedError::NoMergeBase {
                reference: reference.to_string(),
            });
        }
        return Err(ChangedError::GitFailed {
            command: args.join(" "),
            message,
        });
    }
    let mut paths = Vec::new();
    for entry in out.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let path = path_from_bytes(entry)?;
        if !cwd.join(&path).is_dir() {
            paths.push(path);
        }
    }
    Ok(paths)
}

/// The top directory of the work tree `cwd` is in (for placing findings relative to the
/// repository root), or `None` outside a work tree.
pub fn repository_root(cwd: &Path) -> Result<Option<PathBuf>, ChangedError> {
    let out = Git { cwd }.run(&["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let top = text.trim_end_matches(['\n', '\r']);
    Ok((!top.is_empty()).then(|| PathBuf::from(top)))
}

/// git run in one directory.
struct Git<'a> {
    cwd: &'a Path,
}

impl Git<'_> {
    fn run(&self, args: &[&str]) -> Result<Output, ChangedError> {
        Command::new("git")
            .args(args)
            .current_dir(self.cwd)
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(ChangedError::GitMissing)
    }

    fn check_work_tree(&self) -> Result<(), ChangedError> {
        let out = self.run(&["rev-parse", "--is-inside-work-tree"])?;
        if out.status.success() && out.stdout.trim_ascii() == b"true" {
            Ok(())
        } else {
            Err(ChangedError::NotWorkTree {
                dir: self.cwd.to_path_buf(),
            })
        }
    }

    /// The commit id `reference` names, or `None` when it names no commit.
    fn verify_commit(&self, reference: &str) -> Result<Option<String>, ChangedError> {
        let spec = format!("{reference}^{{commit}}");
        let out = self.run(&["rev-parse", "--verify", "--quiet", &spec])?;
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.status.success() && !id.is_empty()).then_some(id))
    }
}

fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim();
    line.strip_prefix("fatal: ").unwrap_or(line).to_string()
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf, ChangedError> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf, ChangedError> {
    std::str::from_utf8(bytes)
        .map(PathBuf::from)
        .map_err(|_| ChangedError::NotUtf8(String::from_utf8_lossy(bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs git in `dir` with a fixed identity and no signing, failing the test on error.
    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=rlm test",
                "-c",
                "user.email=test@example.com",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn write(dir: &Path, path: &str, content: &str) {
        let p = dir.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, content).unwrap();
    }

    /// A repository whose branch `feature` added, modified, renamed and deleted files after
    /// leaving `main`, while `main` moved on (changing `keep.txt`).
    fn repository() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        let long = "a line that makes the file long enough for rename detection\n".repeat(5);
        for (path, content) in [
            ("keep.txt", "keep\n"),
            ("modify.txt", "before\n"),
            ("rename_me.txt", long.as_str()),
            ("delete.txt", "gone soon\n"),
            ("sub/inner.txt", "inner\n"),
            ("other/outside.txt", "outside\n"),
        ] {
            write(d, path, content);
        }
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "base"]);
        git(d, &["checkout", "-qb", "feature"]);
        write(d, "modify.txt", "after\n");
        git(d, &["mv", "rename_me.txt", "renamed.txt"]);
        git(d, &["rm", "-q", "delete.txt"]);
        write(d, "with space.txt", "spaced\n");
        write(d, "new\nline.txt", "newline in the name\n");
        write(d, "sub/added.txt", "added\n");
        write(d, "other/outside.txt", "changed\n");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "feature"]);
        git(d, &["checkout", "-q", "main"]);
        write(d, "keep.txt", "main moved on\n");
        git(d, &["commit", "-qam", "main moves"]);
        git(d, &["checkout", "-q", "feature"]);
        dir
    }

    fn names(paths: Vec<PathBuf>) -> Vec<String> {
        let mut v: Vec<String> = paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn added_modified_renamed_listed_deleted_not_and_main_moving_on_ignored() {
        let repo = repository();
        let changed = changed_since("main", repo.path()).unwrap();
        assert_eq!(
            names(changed),
            [
                "modify.txt",
                "new\nline.txt",
                "other/outside.txt",
                "renamed.txt",
                "sub/added.txt",
                "with space.txt"
            ]
        );
    }

    #[test]
    fn from_a_subdirectory_paths_are_relative_and_outside_files_left_out() {
        let repo = repository();
        let changed = changed_since("main", &repo.path().join("sub")).unwrap();
        assert_eq!(names(changed), ["added.txt"]);
    }

    #[test]
    fn a_commit_id_works_as_well_as_a_branch() {
        let repo = repository();
        let out = Command::new("git")
            .args(["rev-parse", "main~1"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        let base = String::from_utf8(out.stdout).unwrap();
        let changed = changed_since(base.trim(), repo.path()).unwrap();
        assert_eq!(changed.len(), 6);
        assert!(changed_since("HEAD", repo.path()).unwrap().is_empty());
    }

    #[test]
    fn an_unknown_ref_says_how_to_fetch_it() {
        let repo = repository();
        let err = changed_since("origin/nope", repo.path()).unwrap_err();
        assert!(matches!(err, ChangedError::UnknownRef { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "unknown git ref `origin/nope` for --changed-since: fetch it (in GitHub Actions use `fetch-depth: 0` with actions/checkout)"
        );
    }

    #[test]
    fn a_ref_that_looks_like_an_option_is_refused_before_git_sees_it() {
        let repo = repository();
        for reference in ["--output=/tmp/x", "-p", "", "  "] {
            let err = changed_since(reference, repo.path()).unwrap_err();
            assert!(matches!(err, ChangedError::BadRef { .. }), "{reference}: {err:?}");
        }
    }

    #[test]
    fn outside_a_work_tree_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = changed_since("main", dir.path()).unwrap_err();
        assert!(matches!(err, ChangedError::NotWorkTree { .. }), "{err:?}");
        assert!(err.to_string().contains("is not inside a git work tree"), "{err}");
        assert_eq!(repository_root(dir.path()).unwrap(), None);
    }

    #[test]
    fn unrelated_history_has_no_merge_base() {
        let repo = repository();
        let d = repo.path();
        git(d, &["checkout", "-q", "--orphan", "island"]);
        git(d, &["rm", "-rqf", "."]);
        write(d, "island.txt", "alone\n");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "island"]);
        let err = changed_since("main", d).unwrap_err();
        assert!(matches!(err, ChangedError::NoMergeBase { .. }), "{err:?}");
    }

    #[test]
    fn an_unborn_branch_has_no_head() {
        let repo = repository();
        git(repo.path(), &["checkout", "-q", "--orphan", "unborn"]);
        let err = changed_since("main", repo.path()).unwrap_err();
        assert!(matches!(err, ChangedError::NoHead), "{err:?}");
    }

    #[test]
    fn the_repository_root_is_found_from_a_subdirectory() {
        let repo = repository();
        let root = repository_root(&repo.path().join("sub")).unwrap().unwrap();
        assert_eq!(root.canonicalize().unwrap(), repo.path().canonicalize().unwrap());
    }
}
