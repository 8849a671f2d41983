//! The GitHub CLI (`gh`), the way people already authenticate: listing a repository's open
//! pull requests and posting comments. Run supervised, with argv (never a shell string);
//! a missing `gh`, an unauthenticated `gh` and an unknown repository are one clear line each.

use std::path::Path;
use std::time::Duration;

use crate::error::RlmError;
use crate::process::{self, CommandSpec, ProcessError};

/// The fields `gh pr list --json` is asked for.
pub const PR_FIELDS: &str = "number,title,body,author,createdAt,updatedAt,labels,files,additions,deletions,comments,\
statusCheckRollup,reviewDecision,mergeable";

/// `gh` exits with this code when it is not logged in.
const GH_AUTH_EXIT: i32 = 4;
/// How long listing may take (gh pages through thousands of pull requests).
const LIST_TIMEOUT: Duration = Duration::from_secs(900);
/// How long one comment may take.
const COMMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// `--limit` when the user gives none: every open pull request.
const EVERY_PR: u32 = 100_000;

/// `OWNER/REPO`, or a usage error saying so.
pub fn check_repo(repo: &str) -> Result<(), RlmError> {
    let ok_part = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    match repo.split_once('/') {
        Some((owner, name)) if ok_part(owner) && ok_part(name) => Ok(()),
        _ => Err(RlmError::Usage(format!(
            "'{repo}' is not a repository: give OWNER/REPO, e.g. cli/cli"
        ))),
    }
}

/// `gh pr list -R REPO --state open --limit N --json …`: gh's JSON array.
pub async fn pr_list(repo: &str, limit: Option<u32>, cwd: &Path) -> Result<String, RlmError> {
    let argv: Vec<String> = [
        "gh",
        "pr",
        "list",
        "-R",
        repo,
        "--state",
        "open",
        "--limit",
        &limit.unwrap_or(EVERY_PR).to_string(),
        "--json",
        PR_FIELDS,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let spec = CommandSpec {
        cwd: Some(cwd.to_path_buf()),
        timeout: Some(LIST_TIMEOUT),
        ..CommandSpec::new(argv)
    };
    process::run(&spec, "", std::future::pending())
        .await
        .map(|o| o.stdout)
        .map_err(|e| explain(&e, repo, "gh pr list"))
}

/// `gh pr comment N -R REPO --body-file -` with the body on stdin.
pub async fn pr_comment(repo: &str, number: &str, body: &str, cwd: &Path) -> Result<(), RlmError> {
    let argv: Vec<String> = ["gh", "pr", "comment", number, "-R", repo, "--body-file", "-"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let spec = CommandSpec {
        cwd: Some(cwd.to_path_buf()),
        timeout: Some(COMMENT_TIMEOUT),
        ..CommandSpec::new(argv)
    };
    process::run(&spec, body, std::future::pending())
        .await
        .map(drop)
        .map_err(|e| explain(&e, repo, &format!("gh pr comment {number}")))
}

/// One line that says what went wrong with gh and what to do: a missing or logged-out gh
/// is setup (`config`); an unknown repository or a failed listing is the input.
pub fn explain(e: &ProcessError, repo: &str, what: &str) -> RlmError {
    match e {
        ProcessError::NotFound { .. } | ProcessError::NotExecutable { .. } => RlmError::Config(
            "gh (the GitHub CLI) is not installed or not on PATH: install it from https://cli.github.com and run \
             gh auth login, or pass --input prs.json (the output of gh pr list --json …)"
                .to_string(),
        ),
        ProcessError::Exit {
            status, stderr_tail, ..
        } => {
            let tail = stderr_tail.to_lowercase();
            if status.code() == Some(GH_AUTH_EXIT) || tail.contains("gh auth login") || tail.contains("not logged") {
                RlmError::Config(
                    "gh is not logged in to GitHub: run gh auth login (or set GH_TOKEN), then try again".into(),
                )
            } else if tail.contains("could not resolve to a repository") || tail.contains("not found") {
                RlmError::Input(format!(
                    "{repo}: no such repository on GitHub, or the account gh uses cannot see it: check OWNER/REPO \
                     (gh repo view {repo})"
                ))
            } else if tail.contains("unknown json field") {
                RlmError::Config(format!(
                    "{what} failed: {}: this gh does not know a field rlm asks for ({PR_FIELDS}); update gh \
                     (https://cli.github.com), or pass --input with a file of gh pr list's output",
                    first_line(stderr_tail)
                ))
            } else {
                RlmError::Input(format!("{what} failed: {}", first_line(stderr_tail)))
            }
        }
        other => RlmError::Input(format!("{what} failed: {other}")),
    }
}

/// gh says what went wrong first (a list of what it knows may follow).
fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn an_unknown_field_is_named_not_the_last_field_gh_lists() {
        use std::os::unix::process::ExitStatusExt;
        let e = ProcessError::Exit {
            program: "gh".into(),
            status: std::process::ExitStatus::from_raw(1 << 8),
            stderr_tail: "Unknown JSON field: \"bogus\"\nAvailable fields:\n  additions\n  author\n".into(),
        };
        let line = explain(&e, "o/r", "gh pr list").to_string();
        assert!(
            line.starts_with("gh pr list failed: Unknown JSON field: \"bogus\": "),
            "{line}"
        );
        assert!(line.contains("update gh") && !line.contains('\n'), "{line}");
    }

    #[test]
    fn repositories_are_owner_slash_name() {
        assert!(check_repo("cli/cli").is_ok());
        assert!(check_repo("a-b/c.d_e").is_ok());
        for bad in ["cli", "/x", "a/b/c", "a b/c", ""] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
    }
}
