//! The PR-review report, as the seed lays it out: the executive summary with the totals,
//! then the tables — merge, close as duplicate, close as off-vision, needs human review —
//! and the cluster details. Every number and row comes from the job's data.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::ingest::id_key;
use super::report::{cell, Report, ReportData};
use super::state::{JobRecord, Source};
use crate::store::Timestamp;

/// A vision score at or below this is off-vision.
const OFF_VISION_AT_MOST: f64 = 2.0;
/// A review less sure than this needs a person.
const SURE_AT_LEAST: f64 = 0.6;

pub fn build(record: &JobRecord, data: &ReportData, narrative: Option<&str>) -> Report {
    let repo = match &record.source {
        Source::GitHub { repo, .. } => repo.clone(),
        _ => record.definition.repo.clone().unwrap_or_default(),
    };
    let get = |id: &Value| {
        id_key(id)
            .and_then(|k| data.records.get(&k).cloned())
            .unwrap_or(Value::Null)
    };
    let pr = |id: &Value| format!("#{}", cell(id));

    // Duplicates: every non-canonical member named by a cluster's duplicate groups (never
    // the cluster's best candidate, which is reviewed).
    let mut duplicate_of: BTreeMap<String, (Value, Value, f64)> = BTreeMap::new();
    for c in &data.clusters {
        let best = id_key(&c["best_candidate"]);
        for g in c["duplicate_groups"].as_array().into_iter().flatten() {
            let confidence = g["confidence"].as_f64().unwrap_or(0.0);
            let canonical = id_key(&g["canonical"]);
            for d in g["duplicates"].as_array().into_iter().flatten() {
                if let Some(k) = id_key(d) {
                    if canonical.as_deref() != Some(k.as_str()) && best.as_deref() != Some(k.as_str()) {
                        duplicate_of
                            .entry(k)
                            .or_insert((d.clone(), g["canonical"].clone(), confidence));
                    }
                }
            }
        }
    }
    let cluster_of: BTreeMap<String, &Value> = data
        .clusters
        .iter()
        .flat_map(|c| {
            c["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(id_key)
                .map(move |k| (k, c))
        })
        .collect();
    let reviews: BTreeMap<String, &Value> = data
        .reviews()
        .filter_map(|r| Some((id_key(&r["number"])?, r)))
        .collect();
    // Each pull request some phase left unprocessed, with why (the first phase's reason).
    let mut unprocessed: BTreeMap<String, String> = BTreeMap::new();
    for p in &record.phases {
        for key in p.unprocessed.iter().filter_map(id_key) {
            let why = match p.unprocessed_reasons.get(&key) {
                Some(reason) => format!("not processed by {}: {reason}", p.name),
                None => format!("not processed by {}: its batch failed after the retries", p.name),
            };
            unprocessed.entry(key).or_insert(why);
        }
    }

    // Every pull request in exactly one table, in the order they were listed: one a phase
    // did not process goes to a person with why (nothing a later phase said of it is a
    // result); a duplicate is closed (never also merged); a reviewed one is merged or goes
    // to a person; an off-vision or spam one is closed; every other (classified, but not
    // reviewed in depth) goes to a person with its classification.
    let mut merge = Vec::new();
    let mut duplicates = Vec::new();
    let mut off_vision = Vec::new();
    let mut human = Vec::new();
    for (key, r) in data.records.iter() {
        let id = &r["number"];
        if let Some(why) = unprocessed.get(key) {
            human.push(json!({"number": id, "title": r["title"], "author": r["author"], "reason": why}));
        } else if let Some((d, canonical, confidence)) = duplicate_of.get(key) {
            duplicates.push(json!({"number": d, "duplicate_of": canonical, "confidence": confidence}));
        } else if let Some(review) = reviews.get(key) {
            let verdict = review["recommended_action"]
                .as_str()
                .or(review["verdict"].as_str())
                .unwrap_or("")
                .to_lowercase();
            let confidence = review["confidence"].as_f64().unwrap_or(1.0);
            if verdict == "merge" && confidence >= SURE_AT_LEAST {
                let cluster = cluster_of.get(key).map_or(String::new(), |c| {
                    format!(
                        "{} ({} dupes)",
                        cell(&c["theme"]),
                        c["size"].as_u64().unwrap_or(1).saturating_sub(1)
                    )
                });
                merge.push(json!({
                    "number": id, "title": r["title"], "author": r["author"], "cluster": cluster,
                    "quality": review["review"]["code_quality"], "vision": r["vision_alignment"],
                    "notes": review["action_notes"],
                }));
            } else {
                let why = if verdict == "merge" {
                    format!("merge, but the review is only {:.0}% sure", confidence * 100.0)
                } else {
                    format!(
                        "review says {}: {}",
                        if verdict.is_empty() { "nothing" } else { &verdict },
                        cell(&review["review"]["summary"])
                    )
                };
                human.push(json!({"number": id, "title": r["title"], "author": r["author"], "reason": why}));
            }
        } else if is_off_vision(r) {
            let spam = r["quick_verdict"]
                .as_str()
                .is_some_and(|v| v.eq_ignore_ascii_case("spam"));
            let reason = if spam {
                "spam".to_string()
            } else {
                cell(&r["vision_notes"])
            };
            off_vision.push(
                json!({"number": id, "title": r["title"], "vision": r["vision_alignment"],
                "reason": reason}),
            );
        } else {
            let verdict = r["quick_verdict"].as_str().unwrap_or("nothing");
            let notes = cell(&r["vision_notes"]);
            let reason = if notes.is_empty() {
                format!("not reviewed in depth; classified {verdict}")
            } else {
                format!("not reviewed in depth; classified {verdict}: {notes}")
            };
            human.push(json!({"number": id, "title": r["title"], "author": r["author"], "reason": reason}));
        }
    }
    let reviewed = reviews.keys().filter(|k| !unprocessed.contains_key(*k)).count();

    let total = data.records.count();
    debug_assert_eq!(merge.len() + duplicates.len() + off_vision.len() + human.len(), total);
    let closures = duplicates.len() + off_vision.len();
    let date = Timestamp::now().to_rfc3339();
    let mut md = String::new();
    let title = if repo.is_empty() {
        record.definition.name.clone()
    } else {
        repo.clone()
    };
    let _ = writeln!(md, "# {title} PR Review Report");
    let _ = writeln!(
        md,
        "**Date**: {} | **Total PRs scanned**: {total} | **Clusters found**: {}\n",
        &date[..10.min(date.len())],
        data.clusters.len()
    );
    let _ = writeln!(md, "## Executive Summary");
    // Themes among the pull requests that were analyzed: each cluster, and each one alone.
    let analyzed = total - unprocessed.len();
    // Of the analyzed: the unprocessed are in neither count.
    let unique = analyzed.saturating_sub(duplicates.len());
    let clustered = cluster_of.keys().filter(|k| !unprocessed.contains_key(*k)).count();
    let themes = data.clusters.len() + analyzed.saturating_sub(clustered);
    if unprocessed.is_empty() {
        let _ = writeln!(md, "- {total} open PRs analyzed across {themes} distinct themes");
    } else {
        let _ = writeln!(
            md,
            "- {total} open PRs scanned, {analyzed} analyzed across {themes} distinct themes"
        );
    }
    let _ = writeln!(
        md,
        "- {} PRs identified as duplicates (reducible to {unique} unique efforts)",
        duplicates.len()
    );
    let _ = writeln!(md, "- {} PRs recommended for immediate merge", merge.len());
    let _ = writeln!(
        md,
        "- {closures} PRs recommended for closure (duplicates, off-vision, spam)"
    );
    let _ = writeln!(md, "- {} PRs need human review", human.len());
    if !unprocessed.is_empty() {
        let _ = writeln!(
            md,
            "- {} PRs were not processed (a batch or a fetch failed): under Needs Human Review, with why; rlm job \
             rerun {} --phase PHASE takes them",
            unprocessed.len(),
            record.job_id
        );
    }
    let _ = writeln!(md, "- Cost: {}", crate::money::usd(record.cost_usd()));
    if let Some(text) = narrative {
        let _ = writeln!(md, "\n### Assessment (written by the model)\n\n{}", text.trim());
    }
    let _ = writeln!(md, "\n## Recommended Actions\n");
    let _ = writeln!(md, "### Merge ({} PRs)", merge.len());
    table(
        &mut md,
        &["PR", "Title", "Author", "Cluster", "Quality", "Vision", "Notes"],
        merge.iter().map(|m| {
            vec![
                pr(&m["number"]),
                cell(&m["title"]),
                cell(&m["author"]),
                cell(&m["cluster"]),
                score(&m["quality"]),
                score(&m["vision"]),
                cell(&m["notes"]),
            ]
        }),
    );
    let _ = writeln!(md, "### Close — Duplicates ({} PRs)", duplicates.len());
    table(
        &mut md,
        &["PR", "Duplicate Of", "Confidence"],
        duplicates.iter().map(|d| {
            vec![
                pr(&d["number"]),
                pr(&d["duplicate_of"]),
                format!("{:.0}%", d["confidence"].as_f64().unwrap_or(0.0) * 100.0),
            ]
        }),
    );
    let _ = writeln!(md, "### Close — Off-Vision ({} PRs)", off_vision.len());
    table(
        &mut md,
        &["PR", "Title", "Vision Score", "Reason"],
        off_vision.iter().map(|o| {
            vec![
                pr(&o["number"]),
                cell(&o["title"]),
                score(&o["vision"]),
                cell(&o["reason"]),
            ]
        }),
    );
    let _ = writeln!(md, "### Needs Human Review ({} PRs)", human.len());
    table(
        &mut md,
        &["PR", "Title", "Author", "Reason"],
        human.iter().map(|h| {
            vec![
                pr(&h["number"]),
                cell(&h["title"]),
                cell(&h["author"]),
                cell(&h["reason"]),
            ]
        }),
    );
    let _ = writeln!(md, "## Cluster Details");
    for c in &data.clusters {
        let best = &c["best_candidate"];
        let b = get(best);
        let _ = writeln!(md, "\n### Cluster: {} ({} PRs)", cell(&c["theme"]), cell(&c["size"]));
        let review = id_key(best).and_then(|k| reviews.get(&k).copied());
        let not_reviewed = id_key(best)
            .and_then(|k| unprocessed.get(&k))
            .map_or("not reviewed".to_string(), |why| format!("not reviewed: {why}"));
        let summary = review.map_or(not_reviewed, |r| {
            format!("{}: {}", cell(&r["verdict"]), cell(&r["review"]["summary"]))
        });
        let _ = writeln!(md, "- **Best**: {} by {} — {summary}", pr(best), cell(&b["author"]));
        let others: Vec<String> = c["members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| id_key(m) != id_key(best))
            .map(|m| format!("{} ({})", pr(m), cell(&get(m)["author"])))
            .collect();
        let _ = writeln!(md, "- **Duplicates**: {}", others.join(", "));
        let action = match review.and_then(|r| r["verdict"].as_str()) {
            Some(v) if v.eq_ignore_ascii_case("merge") => format!("Merge {}", pr(best)),
            Some(v) => format!("{} {}", v, pr(best)),
            None => format!("Review {}", pr(best)),
        };
        let _ = writeln!(
            md,
            "- **Recommendation**: {action}, close others with comment linking to {} (ranked {})",
            pr(best),
            cell(&c["source"])
        );
    }
    Report {
        markdown: md,
        json: json!({
            "job_id": record.job_id,
            "repo": repo,
            "generated_at": date,
            "cost_usd": record.cost_usd(),
            "totals": {
                "prs": total,
                "clusters": data.clusters.len(),
                "duplicates": duplicates.len(),
                "unique_efforts": unique,
                "merge": merge.len(),
                "close_duplicates": duplicates.len(),
                "close_off_vision": off_vision.len(),
                "needs_human_review": human.len(),
                "reviewed": reviewed,
                "unprocessed": unprocessed.len(),
            },
            "merge": merge,
            "close_duplicates": duplicates,
            "close_off_vision": off_vision,
            "needs_human_review": human,
            "clusters": data.clusters,
            "narrative": narrative,
        }),
    }
}

/// Classified off-vision (a low vision score, or flagged) or spam.
fn is_off_vision(r: &Value) -> bool {
    let flags: Vec<String> = r["flags"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_lowercase))
        .collect();
    let spam = r["quick_verdict"]
        .as_str()
        .is_some_and(|v| v.eq_ignore_ascii_case("spam"));
    let low = r["vision_alignment"].as_f64().is_some_and(|v| v <= OFF_VISION_AT_MOST);
    low || spam || flags.iter().any(|f| f == "off-vision" || f == "spam")
}

/// `8/10`, or nothing.
fn score(v: &Value) -> String {
    v.as_f64().map_or(String::new(), |s| format!("{s}/10"))
}

fn table(md: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(md, "| {} |", header.join(" | "));
    let _ = writeln!(md, "|{}|", header.iter().map(|_| "----").collect::<Vec<_>>().join("|"));
    for row in rows {
        let _ = writeln!(md, "| {} |", row.join(" | "));
    }
    md.push('\n');
}
