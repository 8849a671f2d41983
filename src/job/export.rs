//! `rlm job export JOB --format json|markdown|github-comments [--post] [-o FILE]`: a job's
//! results for people and programs. `github-comments` writes one comment per reviewed pull
//! request to `comments.jsonl`; only `--post` posts them (`gh pr comment N -R OWNER/REPO
//! --body-file -`), after asking — never without a terminal unless `--yes` — and a comment
//! already posted is not posted twice: Ctrl-C lets the comment being posted finish.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, Write};

use serde_json::{json, Value};

use super::github::{self, GhError};
use super::ingest::id_key;
use super::job_dir::{read_json_if_whole, write_bytes, JobDir};
use super::report::{self, cell, ReportData};
use super::review::memberships;
use super::state::{JobRecord, Source};
use crate::error::{Declined, ExitStatus, Interrupted, RlmError};
use crate::exec::Interrupt;
use crate::hash::sha256_hex;
use crate::printer::Printer;
use crate::settings::Environment;

/// What `rlm job export` is asked for.
#[derive(Debug)]
pub struct ExportOptions {
    /// The job id (or its unique beginning).
    pub job: String,
    pub format: ExportFormat,
    /// `-o FILE`: where the export goes instead of stdout.
    pub output: Option<std::path::PathBuf>,
    /// Post each GitHub comment on its pull request (after asking, unless `yes`).
    pub post: bool,
    pub yes: bool,
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The report's data and every item's results, one JSON document.
    Json,
    /// The report (`report.md`).
    Markdown,
    /// One comment per reviewed pull request, as JSON lines.
    GithubComments,
}

/// Runs an export; posting needs the async runtime the caller provides.
pub async fn export(args: ExportOptions, env: &Environment, printer: &Printer) -> Result<ExitStatus, RlmError> {
    let dir = JobDir::open(&env.cwd, Some(&args.job))?;
    let record = dir.read_record()?;
    if args.post && args.format != ExportFormat::GithubComments {
        return Err(RlmError::Usage(
            "--post posts GitHub comments: use it with --format github-comments".into(),
        ));
    }
    let text = match args.format {
        ExportFormat::Markdown => match fs_err::read_to_string(dir.report_md()) {
            Ok(md) => md,
            Err(_) => report::build(&dir, &record, None)?.markdown,
        },
        ExportFormat::Json => {
            let report = match read_json_if_whole::<Value>(&dir.report_json()) {
                Some(r) => r,
                None => report::build(&dir, &record, None)?.json,
            };
            let data = ReportData::load(&dir, &record)?;
            let items: Vec<&Value> = data.records.iter().map(|(_, r)| r).collect();
            let mut doc = super::runner::summary_json(&dir, &record);
            doc["report"] = report;
            doc["records"] = json!(items);
            let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
            s.push('\n');
            s
        }
        ExportFormat::GithubComments => {
            let (repo, comments) = comments(&dir, &record)?;
            let mut jsonl = String::new();
            for c in &comments {
                let _ = writeln!(jsonl, "{c}");
            }
            write_bytes(&dir.comments(), jsonl.as_bytes())?;
            printer.progress(&format!(
                "{} comment(s) written to {}",
                comments.len(),
                dir.comments().display()
            ));
            if args.post {
                output(&args, &jsonl)?;
                return post(&dir, &repo, &comments, args.yes, env, printer).await;
            }
            jsonl
        }
    };
    output(&args, &text)?;
    Ok(ExitStatus::Success)
}

/// To `-o FILE`, or stdout (a closed pipe is not an error).
fn output(args: &ExportOptions, text: &str) -> Result<(), RlmError> {
    match &args.output {
        Some(path) => write_bytes(path, text.as_bytes()),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(RlmError::io("<stdout>", e)),
                _ => Ok(()),
            }
        }
    }
}

/// The repository and one comment per reviewed pull request: `{number, repo, body}`.
pub fn comments(dir: &JobDir, record: &JobRecord) -> Result<(String, Vec<Value>), RlmError> {
    let repo = match &record.source {
        Source::GitHub { repo, .. } => Some(repo.clone()),
        _ => record.definition.repo.clone(),
    }
    .ok_or_else(|| {
        RlmError::Input(format!(
            "job {} names no repository: GitHub comments need a job started by rlm job pr-review, or repo = \
             \"OWNER/REPO\" in the job file",
            record.job_id
        ))
    })?;
    let data = ReportData::load(dir, record)?;
    let reviews: Vec<&Value> = data.reviews().collect();
    if reviews.is_empty() {
        return Err(RlmError::Input(format!(
            "job {} has no reviews to comment on: it has no review phase, or that phase has not run (rlm job status {})",
            record.job_id, record.job_id
        )));
    }
    let member = memberships(&data.clusters);
    let id_field = &record.definition.id;
    let mut out = Vec::new();
    for review in reviews {
        let id = &review[id_field.as_str()];
        let Some(key) = id_key(id) else { continue };
        let mut body = String::new();
        let verdict = cell(&review["verdict"]);
        let sure = review["confidence"]
            .as_f64()
            .map_or(String::new(), |c| format!(" ({:.0}% sure)", c * 100.0));
        let _ = writeln!(body, "**rlm PR review**: verdict **{verdict}**{sure}\n");
        let r = &review["review"];
        if let Some(summary) = r["summary"].as_str() {
            let _ = writeln!(body, "{}\n", summary.trim());
        }
        for (title, field) in [("Strengths", "strengths"), ("Concerns", "concerns")] {
            let list: Vec<String> = r[field].as_array().into_iter().flatten().map(cell).collect();
            if !list.is_empty() {
                let _ = writeln!(body, "**{title}**");
                for item in list {
                    let _ = writeln!(body, "- {item}");
                }
                body.push('\n');
            }
        }
        let scores: Vec<String> = [
            ("code quality", "code_quality"),
            ("tests", "test_coverage"),
            ("architecture fit", "architecture_fit"),
        ]
        .iter()
        .filter_map(|(name, f)| r[*f].as_f64().map(|v| format!("{name} {v}/10")))
        .collect();
        if !scores.is_empty() {
            let _ = writeln!(body, "Scores: {}\n", scores.join(" · "));
        }
        if let Some(next) = review["action_notes"].as_str() {
            let _ = writeln!(body, "**Next**: {}\n", next.trim());
        }
        if let Some(m) = member.get(&key) {
            let others: Vec<String> = m.others.iter().map(|o| format!("#{}", cell(o))).collect();
            let role = if m.is_best { "the best candidate" } else { "one" };
            let _ = writeln!(
                body,
                "This pull request is {role} of {} similar ones ({}): {}.\n",
                m.size,
                cell(&m.theme),
                others.join(", ")
            );
        }
        let _ = writeln!(
            body,
            "<sub>Written by a model in rlm job {}; a maintainer should confirm it.</sub>",
            record.job_id
        );
        out.push(json!({"number": id, "repo": repo, "body": body}));
    }
    Ok((repo, out))
}

/// Posts the comments not posted before, after asking.
async fn post(
    dir: &JobDir,
    repo: &str,
    comments: &[Value],
    yes: bool,
    env: &Environment,
    printer: &Printer,
) -> Result<ExitStatus, RlmError> {
    let posted_before = posted(dir);
    let todo: Vec<&Value> = comments
        .iter()
        .filter(|c| !posted_before.contains(&fingerprint(c)))
        .collect();
    // gh pr comment reads anything but a number as a branch name: a comment could land
    // on whichever pull request has that branch.
    if let Some(id) = todo
        .iter()
        .map(|c| id_key(&c["number"]).unwrap_or_default())
        .find(|id| !is_pr_number(id))
    {
        return Err(RlmError::Input(format!(
            "--post: '{id}' is not a pull request number (gh pr comment would take it for a branch name): posting \
             needs a job whose ids are pull request numbers, as rlm job pr-review's are; nothing was posted"
        )));
    }
    if todo.is_empty() {
        printer.important(&format!("every comment was posted to {repo} before: nothing to post"));
        return Ok(ExitStatus::Success);
    }
    if !yes {
        if !(env.stdin_is_terminal && env.stderr_is_terminal) {
            return Err(RlmError::Usage(format!(
                "--post would post {} comment(s) on {repo}'s pull requests: without a terminal to ask, add --yes",
                todo.len()
            )));
        }
        printer.important(&format!(
            "Post {} comment(s) on {repo}'s pull requests? (y/n)",
            todo.len()
        ));
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            return Err(Declined::Post.into());
        }
    }
    // Listened to from here on only: the question above reads stdin, where a listener would
    // keep Ctrl-C from being heard.
    let mut interrupt = Interrupt::new();
    let mut stopping = false;
    let (mut posted_now, mut failed) = (0, 0);
    for c in &todo {
        if stopping {
            break;
        }
        let number = id_key(&c["number"]).unwrap_or_default();
        let body = c["body"].as_str().unwrap_or_default();
        // The first Ctrl-C lets the comment being posted finish, so that it is recorded and
        // never posted twice, and posts no more; a second one stops gh.
        let cancel = async {
            interrupt.recv().await;
            stopping = true;
            interrupt.recv().await;
        };
        match github::pr_comment(repo, &number, body, &env.cwd, cancel).await {
            Ok(()) => {
                posted_now += 1;
                printer.progress(&format!("posted on {repo}#{number}"));
                let line = json!({"number": c["number"], "fingerprint": fingerprint(c)});
                let appended = fs_err::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.posted())
                    .and_then(|mut f| writeln!(f, "{line}"));
                if let Err(e) = appended {
                    printer.warn(&format!("cannot record the post: {e}"));
                }
            }
            Err(GhError {
                error: RlmError::Interrupted(_),
                ..
            }) => {
                return Err(Interrupted::WhilePosting {
                    repo: repo.to_string(),
                    number,
                    posted: posted_now,
                }
                .into());
            }
            Err(e) => {
                failed += 1;
                printer.error(&format!("{repo}#{number}: {e}"));
                if e.every_call_fails {
                    break;
                }
            }
        }
    }
    if stopping {
        return Err(Interrupted::Posting { posted: posted_now }.into());
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Partial
    })
}

/// A pull request number: digits only.
fn is_pr_number(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
}

/// What identifies a comment: its pull request and its text.
fn fingerprint(c: &Value) -> String {
    sha256_hex(format!("{}\u{0}{}", c["number"], c["body"]).as_bytes())[..16].to_string()
}

/// The fingerprints of the comments posted before.
fn posted(dir: &JobDir) -> HashSet<String> {
    fs_err::read_to_string(dir.posted())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["fingerprint"].as_str().map(str::to_string))
        .collect()
}
