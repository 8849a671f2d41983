//! The GitHub CLI (`gh`), the way people already authenticate: listing a repository's open
//! pull requests and posting comments. Run supervised, with argv (never a shell string);
//! a missing `gh`, an unauthenticated `gh` and an unknown repository are one clear line each.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use crate::error::{Interrupted, RlmError};
use crate::process::{self, CommandSpec, ProcessError};

/// The fields `gh pr list --json` is asked for.
pub const PR_FIELDS: &str = "number,title,body,author,createdAt,updatedAt,labels,files,additions,deletions,comments,\
statusCheckRollup,reviewDecision,mergeable";

/// `gh` exits with this code when it is not logged in.
const GH_AUTH_EXIT: i32 = 4;
/// How long listing may take (gh pages through thousands of pull requests).
const LIST_TIMEOUT: Duration = Duration::from_secs(900);
/// How long asking gh whether it can see the repository may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
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

/// `gh pr list -R REPO --state open --limit N --json …`: gh's JSON array. `cancel`
/// (Ctrl-C) stops gh, as in [`check_access`].
pub async fn pr_list(
    repo: &str,
    limit: Option<u32>,
    cwd: &Path,
    cancel: impl Future<Output = ()>,
) -> Result<String, RlmError> {
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
    process::run(&spec, "", cancel)
        .await
        .map(|o| o.stdout)
        .map_err(|e| explain(&e, repo, "gh pr list"))
}

/// `gh repo view REPO --json name`: that gh is logged in and can see the repository, asked
/// once before a job whose review fetches each pull request's diff with gh (its items came
/// from a file, so nothing else has asked gh yet), so a bad setup fails before anything
/// is paid, not after the phases before the review. When `cancel` completes first (Ctrl-C),
/// gh's process group is stopped and reaped, and the error is [`RlmError::Interrupted`].
pub async fn check_access(repo: &str, cwd: &Path, cancel: impl Future<Output = ()>) -> Result<(), RlmError> {
    let argv: Vec<String> = ["gh", "repo", "view", repo, "--json", "name"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let spec = CommandSpec {
        cwd: Some(cwd.to_path_buf()),
        timeout: Some(CHECK_TIMEOUT),
        ..CommandSpec::new(argv)
    };
    process::run(&spec, "", cancel)
        .await
        .map(drop)
        .map_err(|e| explain(&e, repo, &format!("gh repo view {repo}")))
}

/// A failed gh call: what it says (one line, see [`explain`]), and whether every other call
/// would fail the same way.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct GhError {
    /// gh is missing, or not logged in: no call about any repository can succeed.
    pub every_call_fails: bool,
    pub error: RlmError,
}

impl GhError {
    /// The failure of a gh call about `repo` (`what`: the command, as shown).
    fn of(e: &ProcessError, repo: &str, what: &str) -> Self {
        let every_call_fails = matches!(e, ProcessError::NotFound { .. } | ProcessError::NotExecutable { .. })
            || SetupProblem::of(e) == Some(SetupProblem::NotLoggedIn);
        GhError {
            every_call_fails,
            error: explain(e, repo, what),
        }
    }
}

/// `gh pr comment N -R REPO --body-file -` with the body on stdin. When `cancel` completes
/// first, gh is stopped (its error is [`RlmError::Interrupted`]).
pub async fn pr_comment(
    repo: &str,
    number: &str,
    body: &str,
    cwd: &Path,
    cancel: impl Future<Output = ()>,
) -> Result<(), GhError> {
    let argv: Vec<String> = ["gh", "pr", "comment", number, "-R", repo, "--body-file", "-"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let spec = CommandSpec {
        cwd: Some(cwd.to_path_buf()),
        timeout: Some(COMMENT_TIMEOUT),
        ..CommandSpec::new(argv)
    };
    process::run(&spec, body, cancel)
        .await
        .map(drop)
        .map_err(|e| GhError::of(&e, repo, &format!("gh pr comment {number}")))
}

/// A failure of gh that every call about the repository meets the same way: the setup,
/// not one pull request. gh exits 4 when it has no credentials, and names `gh auth login`
/// in its advice (also when GitHub refused its token: `HTTP 401: Bad credentials … Try
/// authenticating with: gh auth login`); an unknown repository, or one the account cannot
/// see, is GraphQL's `Could not resolve to a Repository with the name 'OWNER/REPO'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupProblem {
    NotLoggedIn,
    NoRepository,
}

impl SetupProblem {
    /// What a failed gh call says about the setup, if it is one of these.
    pub fn of(e: &ProcessError) -> Option<Self> {
        let ProcessError::Exit {
            status, stderr_tail, ..
        } = e
        else {
            return None;
        };
        let tail = stderr_tail.to_lowercase();
        if status.code() == Some(GH_AUTH_EXIT) || tail.contains("gh auth login") || tail.contains("not logged") {
            Some(SetupProblem::NotLoggedIn)
        } else if tail.contains("could not resolve to a repository") {
            Some(SetupProblem::NoRepository)
        } else {
            None
        }
    }

    /// The one line that says so, ending with `then` (what to do once it is fixed): a
    /// logged-out gh is setup (`config`); an unknown repository is the input.
    pub fn error(self, repo: &str, then: &str) -> RlmError {
        match self {
            SetupProblem::NotLoggedIn => RlmError::Config(format!(
                "gh is not logged in to GitHub: run gh auth login (or set GH_TOKEN), {then}"
            )),
            SetupProblem::NoRepository => RlmError::Input(format!(
                "{repo}: no such repository on GitHub, or the account gh uses cannot see it: check OWNER/REPO \
                 (gh repo view {repo}), {then}"
            )),
        }
    }
}

/// One line that says what went wrong with gh and what to do: a missing or logged-out gh
/// is setup (`config`); an unknown repository or a failed listing is the input; a call
/// stopped by Ctrl-C is an interruption (exit 130).
pub fn explain(e: &ProcessError, repo: &str, what: &str) -> RlmError {
    if let Some(problem) = SetupProblem::of(e) {
        return problem.error(repo, "then try again");
    }
    match e {
        ProcessError::Cancelled { .. } => Interrupted::Gh { what: what.to_string() }.into(),
        ProcessError::NotFound { .. } | ProcessError::NotExecutable { .. } => RlmError::Config(
            // Not "--input prs.json instead": a PR review fetches its diffs with gh too.
            "gh (the GitHub CLI) is not installed or not on PATH: install it from https://cli.github.com and run \
             gh auth login, then try again"
                .to_string(),
        ),
        ProcessError::Exit { stderr_tail, .. } => {
            let tail = stderr_tail.to_lowercase();
            // Listing is about the repository as a whole: a 404 there is the repository's.
            if tail.contains("not found") {
                SetupProblem::NoRepository.error(repo, "then try again")
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

    #[cfg(unix)]
    #[test]
    fn a_missing_or_logged_out_gh_fails_every_call_and_a_refused_comment_only_its_own() {
        use std::os::unix::process::ExitStatusExt;
        let exit = |code: i32, tail: &str| ProcessError::Exit {
            program: "gh".into(),
            status: std::process::ExitStatus::from_raw(code << 8),
            stderr_tail: tail.into(),
        };
        let missing = ProcessError::NotFound { program: "gh".into() };
        for (e, every) in [
            (missing, true),
            (
                exit(4, "To get started with GitHub CLI, please run:  gh auth login"),
                true,
            ),
            (
                exit(1, "GraphQL: Could not resolve to a Repository with the name 'o/r'"),
                false,
            ),
            (exit(1, "GraphQL: the pull request is locked"), false),
        ] {
            let failure = GhError::of(&e, "o/r", "gh pr comment 7");
            assert_eq!(failure.every_call_fails, every, "{e}");
            assert_eq!(failure.to_string(), explain(&e, "o/r", "gh pr comment 7").to_string());
        }
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
