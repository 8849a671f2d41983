//! `rlm job pr-review OWNER/REPO --vision VISION.md`: the seed's four phases over a
//! repository's open pull requests — classify, cluster and de-duplicate, review the best
//! candidates with their diffs, report — with the prompts and schemas of
//! `examples/jobs/pr-review/` (embedded, so the example is exactly what runs), and gh's
//! JSON normalized into the seed's record.

use serde_json::{json, Map, Value};

use super::definition::{JobDefinition, PhaseDefinition, PhaseKind, Similarity};
use crate::error::RlmError;

pub const CLASSIFY_PROMPT: &str = include_str!("../../examples/jobs/pr-review/classify.md");
pub const CLASSIFY_SCHEMA: &str = include_str!("../../examples/jobs/pr-review/classification.schema.json");
pub const CLUSTER_PROMPT: &str = include_str!("../../examples/jobs/pr-review/cluster.md");
pub const CLUSTER_SCHEMA: &str = include_str!("../../examples/jobs/pr-review/cluster.schema.json");
pub const REVIEW_PROMPT: &str = include_str!("../../examples/jobs/pr-review/review.md");
pub const REVIEW_SCHEMA: &str = include_str!("../../examples/jobs/pr-review/review.schema.json");
pub const REPORT_PROMPT: &str = include_str!("../../examples/jobs/pr-review/report.md");

/// What the deep review takes (the seed: the best of each cluster): the best candidate of
/// every cluster, and every pull request in no cluster — a unique effort, its own best
/// candidate — that its classification says to merge or to review. A duplicate that is not
/// its cluster's best is never reviewed: the report closes it.
pub const REVIEW_SELECT: &str =
    "best_candidate or (not clustered and (quick_verdict == \"merge\" or quick_verdict == \"review\"))";

/// A pull request's body is cut to this many characters (the seed's ~500 bytes a PR).
const BODY_CHARS: usize = 500;

/// The job definition of a PR review of `repo`.
pub fn definition(repo: &str) -> JobDefinition {
    // Prompts and schemas are built in: their names say which example file they are.
    let builtin = |file: &str| Some(std::path::PathBuf::from(format!("builtin:pr-review/{file}")));
    let phase = |name: &str, title: &str, kind: PhaseKind, prompt: &str, schema: Option<&str>| PhaseDefinition {
        name: name.into(),
        kind,
        title: Some(title.into()),
        prompt: builtin(prompt),
        output_schema: schema.and_then(builtin),
        batch_size: None,
        model: None,
        provider: None,
        concurrency: None,
        timeout: None,
        retries: None,
        max_tokens: None,
        group_by: None,
        similar_by: Vec::new(),
        rank_by: Vec::new(),
        max_cluster_size: None,
        select: None,
        fetch: None,
        fetch_as: None,
    };
    JobDefinition {
        name: format!("pr-review {repo}"),
        input: None,
        command: None,
        id: "number".into(),
        context: None,
        repo: Some(repo.into()),
        items: "prs".into(),
        kind: Some(super::definition::PR_REVIEW.into()),
        phases: vec![
            PhaseDefinition {
                batch_size: Some(50),
                ..phase(
                    "classifications",
                    "Scan & classify",
                    PhaseKind::Map,
                    "classify.md",
                    Some("classification.schema.json"),
                )
            },
            PhaseDefinition {
                group_by: Some("fingerprint".into()),
                similar_by: vec![
                    Similarity {
                        field: "files".into(),
                        threshold: 0.5,
                    },
                    Similarity {
                        field: "intent".into(),
                        threshold: 0.6,
                    },
                ],
                rank_by: [
                    "-vision_alignment",
                    "-quality_signals.ci_passing",
                    "-quality_signals.has_tests",
                    "additions",
                    "number",
                ]
                .iter()
                .map(ToString::to_string)
                .collect(),
                batch_size: Some(20),
                ..phase(
                    "clusters",
                    "Cluster & de-duplicate",
                    PhaseKind::Reduce,
                    "cluster.md",
                    Some("cluster.schema.json"),
                )
            },
            PhaseDefinition {
                select: Some(REVIEW_SELECT.into()),
                fetch: Some(
                    ["gh", "pr", "diff", "{id}", "-R", "{repo}"]
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                ),
                fetch_as: Some("diff".into()),
                batch_size: Some(5),
                ..phase(
                    "reviews",
                    "Deep review",
                    PhaseKind::Review,
                    "review.md",
                    Some("review.schema.json"),
                )
            },
            phase("report", "Report", PhaseKind::Report, "report.md", None),
        ],
    }
}

/// Each phase's prompt and schema text, in phase order.
pub fn texts() -> Vec<(Option<String>, Option<String>)> {
    vec![
        (Some(CLASSIFY_PROMPT.into()), Some(CLASSIFY_SCHEMA.into())),
        (Some(CLUSTER_PROMPT.into()), Some(CLUSTER_SCHEMA.into())),
        (Some(REVIEW_PROMPT.into()), Some(REVIEW_SCHEMA.into())),
        (Some(REPORT_PROMPT.into()), None),
    ]
}

/// gh's pull requests (a JSON array, as `gh pr list --json …` prints it) as the seed's
/// records; `shown` names the source in errors.
pub fn normalize_all(text: &str, shown: &str) -> Result<Vec<Value>, RlmError> {
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
        RlmError::Input(format!(
            "{shown} is not the JSON array gh pr list --json prints (line {}: {e})",
            e.line()
        ))
    })?;
    let Value::Array(prs) = value else {
        return Err(RlmError::Input(format!(
            "{shown} is not a JSON array of pull requests: give the output of gh pr list --json …"
        )));
    };
    normalize_items(&prs, shown)
}

/// gh's pull requests, already parsed, as the seed's records.
pub fn normalize_items(prs: &[Value], shown: &str) -> Result<Vec<Value>, RlmError> {
    prs.iter()
        .enumerate()
        .map(|(i, pr)| {
            normalize(pr).ok_or_else(|| {
                RlmError::Input(format!(
                    "{shown}: pull request {} has no \"number\": give the output of gh pr list --json number,…",
                    i + 1
                ))
            })
        })
        .collect()
}

/// One pull request in the seed's shape; `None` without a number.
pub fn normalize(pr: &Value) -> Option<Value> {
    let number = pr.get("number").filter(|n| n.is_u64())?.clone();
    let text = |k: &str| pr.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let body = text("body");
    // Cut to BODY_CHARS characters in all, the ellipsis that says so included.
    let body = if body.chars().count() > BODY_CHARS {
        format!("{}…", body.chars().take(BODY_CHARS - 1).collect::<String>())
    } else {
        body
    };
    let author = match pr.get("author") {
        Some(Value::Object(a)) => a.get("login").cloned().unwrap_or(json!("ghost")),
        Some(Value::String(s)) => json!(s),
        _ => json!("ghost"),
    };
    let names = |k: &str, field: &str| -> Value {
        Value::Array(
            pr.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| match v {
                    Value::String(s) => Some(json!(s)),
                    Value::Object(o) => o.get(field).cloned(),
                    _ => None,
                })
                .collect(),
        )
    };
    let comments = match pr.get("comments") {
        Some(Value::Array(list)) => json!(list.len()),
        Some(Value::Number(n)) => json!(n),
        _ => json!(0),
    };
    let mut out = Map::new();
    out.insert("number".into(), number);
    out.insert("title".into(), json!(text("title")));
    out.insert("body".into(), json!(body));
    out.insert("author".into(), author);
    out.insert(
        "created_at".into(),
        pr.get("createdAt")
            .or(pr.get("created_at"))
            .cloned()
            .unwrap_or(Value::Null),
    );
    out.insert(
        "updated_at".into(),
        pr.get("updatedAt")
            .or(pr.get("updated_at"))
            .cloned()
            .unwrap_or(Value::Null),
    );
    out.insert("labels".into(), names("labels", "name"));
    out.insert("files".into(), names("files", "path"));
    out.insert("additions".into(), pr.get("additions").cloned().unwrap_or(json!(0)));
    out.insert("deletions".into(), pr.get("deletions").cloned().unwrap_or(json!(0)));
    out.insert("comments".into(), comments);
    out.insert(
        "ci_status".into(),
        pr.get("ci_status")
            .cloned()
            .unwrap_or_else(|| json!(ci_status(pr.get("statusCheckRollup")))),
    );
    out.insert(
        "review_status".into(),
        pr.get("review_status")
            .cloned()
            .unwrap_or_else(|| json!(review_status(pr.get("reviewDecision")))),
    );
    out.insert(
        "has_conflicts".into(),
        pr.get("has_conflicts")
            .cloned()
            .unwrap_or_else(|| match pr.get("mergeable").and_then(Value::as_str) {
                Some("CONFLICTING") => json!(true),
                Some("MERGEABLE") => json!(false),
                _ => Value::Null,
            }),
    );
    if let Some(draft) = pr.get("isDraft") {
        out.insert("is_draft".into(), draft.clone());
    }
    Some(Value::Object(out))
}

/// `success`, `failure`, `pending` or `none`, from the checks' conclusions (check runs) and
/// states (commit statuses).
pub fn ci_status(rollup: Option<&Value>) -> &'static str {
    let checks: Vec<&Value> = rollup.and_then(Value::as_array).into_iter().flatten().collect();
    if checks.is_empty() {
        return "none";
    }
    let field = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_uppercase();
    let failed = checks.iter().any(|c| {
        matches!(
            field(c, "conclusion").as_str(),
            "FAILURE" | "TIMED_OUT" | "CANCELLED" | "ACTION_REQUIRED" | "STARTUP_FAILURE"
        ) || matches!(field(c, "state").as_str(), "FAILURE" | "ERROR")
    });
    if failed {
        return "failure";
    }
    let pending = checks.iter().any(|c| {
        let status = field(c, "status");
        (!status.is_empty() && status != "COMPLETED") || matches!(field(c, "state").as_str(), "PENDING" | "EXPECTED")
    });
    if pending {
        "pending"
    } else {
        "success"
    }
}

/// `approved`, `changes_requested`, `review_required` or `none`.
pub fn review_status(decision: Option<&Value>) -> &'static str {
    match decision.and_then(Value::as_str) {
        Some("APPROVED") => "approved",
        Some("CHANGES_REQUESTED") => "changes_requested",
        Some("REVIEW_REQUIRED") => "review_required",
        _ => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_shapes_become_the_seed_record() {
        let gh = json!({
            "number": 12, "title": "Dark mode", "body": "x".repeat(600),
            "author": {"login": "alice", "name": "Alice", "is_bot": false},
            "createdAt": "2026-02-10T00:00:00Z", "updatedAt": "2026-02-14T00:00:00Z",
            "labels": [{"name": "ui", "color": "fff", "description": "", "id": "L1"}],
            "files": [{"path": "src/theme.ts", "additions": 10, "deletions": 1}],
            "additions": 10, "deletions": 1,
            "comments": [{"author": {"login": "bob"}, "body": "nice", "createdAt": "2026-02-11T00:00:00Z"}],
            "statusCheckRollup": [{"__typename": "CheckRun", "name": "ci", "status": "COMPLETED", "conclusion": "SUCCESS"}],
            "reviewDecision": "APPROVED", "mergeable": "CONFLICTING"
        });
        let r = normalize(&gh).unwrap();
        assert_eq!(r["author"], "alice");
        assert_eq!(r["labels"], json!(["ui"]));
        assert_eq!(r["files"], json!(["src/theme.ts"]));
        assert_eq!(r["comments"], 1);
        assert_eq!(r["ci_status"], "success");
        assert_eq!(r["review_status"], "approved");
        assert_eq!(r["has_conflicts"], true);
        assert_eq!(r["body"].as_str().unwrap().chars().count(), 500);
        assert!(r["body"].as_str().unwrap().ends_with("x…"));
        assert_eq!(r["created_at"], "2026-02-10T00:00:00Z");
    }

    #[test]
    fn ci_status_from_conclusions_and_states() {
        let s = |v: Value| ci_status(Some(&v));
        assert_eq!(s(json!([])), "none");
        assert_eq!(
            s(json!([{"status": "COMPLETED", "conclusion": "SUCCESS"}, {"state": "FAILURE"}])),
            "failure"
        );
        assert_eq!(s(json!([{"status": "IN_PROGRESS", "conclusion": ""}])), "pending");
        assert_eq!(
            s(json!([{"status": "COMPLETED", "conclusion": "NEUTRAL"}, {"state": "SUCCESS"}])),
            "success"
        );
        assert_eq!(review_status(Some(&json!(""))), "none");
    }

    #[test]
    fn the_example_job_file_is_the_preset() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs/pr-review/job.toml");
        let file = JobDefinition::load(&path).unwrap();
        let preset = definition("OWNER/REPO");
        assert_eq!(file.kind, preset.kind);
        assert_eq!(
            (&file.id, &file.items, &file.repo),
            (&preset.id, &preset.items, &preset.repo)
        );
        assert_eq!(file.phases.len(), preset.phases.len());
        // Every key of every phase but where its prompt and schema are read from.
        let keys = |p: &PhaseDefinition| {
            let mut v = serde_json::to_value(p).unwrap();
            v.as_object_mut().unwrap().remove("prompt");
            v.as_object_mut().unwrap().remove("output_schema");
            v
        };
        for (f, p) in file.phases.iter().zip(&preset.phases) {
            assert_eq!(keys(f), keys(p), "phase {}", p.name);
            let builtin = |path: &Option<std::path::PathBuf>| {
                path.as_ref()
                    .map(|p| p.display().to_string().replace("builtin:pr-review/", ""))
            };
            assert_eq!(f.prompt.as_ref().map(|p| p.display().to_string()), builtin(&p.prompt));
            assert_eq!(
                f.output_schema.as_ref().map(|p| p.display().to_string()),
                builtin(&p.output_schema)
            );
        }
        let argv = file.command.unwrap().join(" ");
        assert!(
            argv.ends_with(&format!("--json {}", super::super::github::PR_FIELDS)),
            "{argv}"
        );
    }

    #[test]
    fn the_embedded_schemas_compile() {
        for (_, schema) in texts() {
            if let Some(s) = schema {
                crate::schema::OutputSchema::from_text(&s, std::path::Path::new("s.json")).unwrap();
            }
        }
        assert!(definition("o/r").check("pr-review").is_ok());
    }
}
