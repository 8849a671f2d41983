//! The report phase, and the report itself. The report is built from the data without a
//! model — counts and tables — so its numbers are never invented; the phase adds one model
//! call over the compressed results (its prompt's narrative), shown as the model's words.
//! `report.md` and `report.json` go to the top of the job directory; `export` builds the
//! same report for a job without a report phase.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{json, Value};

use super::batches::{run_batches, Batch};
use super::definition::PhaseKind;
use super::ingest::id_key;
use super::job_dir::{read_json, read_json_if_whole, write_bytes, write_json, JobDir};
use super::pr_report;
use super::records::{records_before, Records};
use super::reduce::clusters_of;
use super::runner::JobRun;
use super::state::{JobRecord, PhaseStatus};
use super::worker::AnswerCheck;
use crate::error::RlmError;
use crate::printer::plural;
use crate::request::job_phase::Rendering;
use crate::store::{Timestamp, UnitKind};

/// Fields with at most this many distinct values are counted in the report.
const MAX_DISTINCT: usize = 12;
/// Rows of a table in the compressed results the model sees.
const COMPRESSED_ROWS: usize = 50;

/// A report in both forms.
#[derive(Debug, Clone)]
pub struct Report {
    pub markdown: String,
    pub json: Value,
}

/// What a report is built from.
pub struct ReportData {
    pub records: Records,
    pub clusters: Vec<Value>,
    /// Each map and review phase's answers, by phase name.
    pub answers: Vec<(String, PhaseKind, Vec<Value>)>,
}

impl ReportData {
    pub fn load(dir: &JobDir, record: &JobRecord) -> Result<Self, RlmError> {
        let definition = &record.definition;
        let items: Vec<Value> = read_json(&dir.data(&definition.items))?;
        let records = records_before(dir, definition, &items, definition.phases.len());
        let answers = definition
            .phases
            .iter()
            .filter(|p| matches!(p.kind, PhaseKind::Map | PhaseKind::Review))
            .map(|p| {
                let answers = read_json_if_whole::<Value>(&dir.data(&p.name))
                    .and_then(|v| v.as_array().cloned())
                    .unwrap_or_default();
                (p.name.clone(), p.kind, answers)
            })
            .collect();
        Ok(ReportData {
            records,
            clusters: clusters_of(dir, definition),
            answers,
        })
    }

    /// The answers of the review phases.
    pub fn reviews(&self) -> impl Iterator<Item = &Value> {
        self.answers
            .iter()
            .filter(|(_, kind, _)| *kind == PhaseKind::Review)
            .flat_map(|(_, _, a)| a.iter())
    }
}

/// The report of a job, with the model's narrative when there is one.
pub fn build(dir: &JobDir, record: &JobRecord, narrative: Option<&str>) -> Result<Report, RlmError> {
    let data = ReportData::load(dir, record)?;
    Ok(if record.kind == "pr-review" {
        pr_report::build(record, &data, narrative)
    } else {
        generic(record, &data, narrative)
    })
}

pub async fn run(run: &mut JobRun, index: usize) -> Result<(), RlmError> {
    let phase = run.record.definition.phases[index].clone();
    let data_only = build(&run.dir, &run.record, None)?;
    let mut narrative = None;
    if let Some(prompt) = run.phases[index].prompt.clone() {
        let rendering = Rendering {
            prompt,
            item_schema: None,
            id_field: "report".into(),
            context: run.context.clone(),
            noun: "job's results".into(),
        };
        // Without what changes between runs (the date, the spend), so a rerun over the same
        // results is answered from the cache.
        let mut stable = data_only.json.clone();
        strip(&mut stable, &["generated_at", "cost_usd", "job_id"]);
        let compressed = compress(&stable, 0);
        let batch = Batch {
            n: 1,
            items: vec![compressed],
            ids: Vec::new(),
            check: Arc::new(TextCheck),
        };
        run.record.phases[index].items_total = 1;
        let outcome = run_batches(run, index, &rendering, vec![batch], UnitKind::Aggregate).await?;
        if run.stop.is_some() {
            return Ok(());
        }
        narrative = outcome.accepted.get(&1).and_then(Value::as_str).map(str::to_string);
        if let Some(failed) = outcome.failed.first() {
            run.record.phases[index].notes.push(format!(
                "the narrative failed ({}); the report has the data only",
                failed.reason
            ));
            let state = &mut run.record.phases[index];
            state.unprocessed.clear();
        }
    }
    let report = build(&run.dir, &run.record, narrative.as_deref())?;
    write_bytes(&run.dir.report_md(), report.markdown.as_bytes())?;
    write_json(&run.dir.report_json(), &report.json)?;
    write_json(&run.dir.data(&phase.name), &json!({"narrative": narrative}))?;
    run.record.phases[index].items_done = 1;
    Ok(())
}

/// Removes `keys` wherever they occur.
fn strip(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(o) => {
            o.retain(|k, _| !keys.contains(&k.as_str()));
            o.values_mut().for_each(|v| strip(v, keys));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip(v, keys)),
        _ => {}
    }
}

/// A narrative answer: any text.
struct TextCheck;

impl AnswerCheck for TextCheck {
    fn check(&self, answer: &Value) -> Result<Value, Vec<String>> {
        match answer.as_str() {
            Some(text) if !text.trim().is_empty() => Ok(answer.clone()),
            _ => Err(vec!["the answer is empty".into()]),
        }
    }
}

/// The results as the narrative call sees them: tables cut to their first rows, texts cut.
pub fn compress(v: &Value, depth: usize) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 300 => {
            Value::String(format!("{}…", s.chars().take(300).collect::<String>()))
        }
        Value::Array(rows) => {
            let mut out: Vec<Value> = rows
                .iter()
                .take(COMPRESSED_ROWS)
                .map(|r| compress(r, depth + 1))
                .collect();
            if rows.len() > COMPRESSED_ROWS {
                out.push(json!(format!("… and {} more", rows.len() - COMPRESSED_ROWS)));
            }
            Value::Array(out)
        }
        Value::Object(o) if depth < 4 => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), compress(v, depth + 1))).collect())
        }
        Value::Object(_) => json!("{…}"),
        other => other.clone(),
    }
}

/// A table cell: one line, no `|`.
pub fn cell(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    text.replace('|', "\\|")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The report of any job: per phase, counts of the answers' few-valued fields; the clusters;
/// the reviews; the items left unprocessed.
fn generic(record: &JobRecord, data: &ReportData, narrative: Option<&str>) -> Report {
    let definition = &record.definition;
    let mut md = String::new();
    let date = Timestamp::now().to_rfc3339();
    let _ = writeln!(md, "# {}: report\n", definition.name);
    let _ = writeln!(
        md,
        "**Job**: {} | **Date**: {} | **Items**: {} | **Cost**: {}\n",
        record.job_id,
        &date[..10.min(date.len())],
        record.items,
        crate::money::usd(record.cost_usd())
    );
    let _ = writeln!(md, "## Summary\n");
    let mut phases_json = Vec::new();
    for (p, state) in definition.phases.iter().zip(&record.phases) {
        let line = if state.status() == PhaseStatus::Pending {
            // Paused, stopped or failed before it: its batches are not even planned.
            "not run yet".to_string()
        } else if p.kind == PhaseKind::Report {
            // Its one call writes the narrative: it answers for no item.
            if state.batches_done > 0 {
                "the narrative written by the model".to_string()
            } else if state.batches_failed > 0 {
                "the narrative failed: the data only".to_string()
            } else {
                "the data only".to_string()
            }
        } else {
            format!(
                "{} of {} {}, {} answered, {} unprocessed",
                state.batches_done,
                state.batches_total,
                if state.batches_total == 1 { "batch" } else { "batches" },
                plural(state.items_done, "item"),
                state.unprocessed.len()
            )
        };
        let _ = writeln!(md, "- {} ({}): {line}", p.name, p.kind.name());
        phases_json.push(
            json!({"name": p.name, "kind": p.kind.name(), "batches_done": state.batches_done,
            "batches_total": state.batches_total, "items_done": state.items_done,
            "unprocessed": state.unprocessed.len(), "unprocessed_reasons": state.unprocessed_reasons,
            "cost_usd": state.cost_usd, "notes": state.notes}),
        );
    }
    if let Some(text) = narrative {
        let _ = writeln!(md, "\n## Narrative (written by the model)\n\n{}", text.trim());
    }
    let mut counts_json = serde_json::Map::new();
    for p in definition
        .phases
        .iter()
        .filter(|p| matches!(p.kind, PhaseKind::Map | PhaseKind::Review))
    {
        let answers: Vec<&Value> = data
            .answers
            .iter()
            .filter(|(n, _, _)| n == &p.name)
            .flat_map(|(_, _, a)| a.iter())
            .collect();
        let counts = field_counts(&answers, &definition.id);
        if counts.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n## {}\n", p.title.as_deref().unwrap_or(&p.name));
        for (field, values) in &counts {
            let _ = writeln!(md, "| {field} | count |\n|---|---|");
            for (value, n) in values {
                let _ = writeln!(md, "| {} | {n} |", cell(&json!(value)));
            }
            md.push('\n');
        }
        counts_json.insert(p.name.clone(), json!(counts));
    }
    if !data.clusters.is_empty() {
        let _ = writeln!(md, "\n## Clusters ({})\n", data.clusters.len());
        let _ = writeln!(
            md,
            "| Cluster | Theme | Size | Best | Ranked by |\n|---|---|---|---|---|"
        );
        for c in &data.clusters {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                cell(&c["cluster_id"]),
                cell(&c["theme"]),
                cell(&c["size"]),
                cell(&c["best_candidate"]),
                cell(&c["source"])
            );
        }
    }
    let unprocessed: Vec<Value> = record
        .phases
        .iter()
        .flat_map(|p| p.unprocessed.iter().cloned())
        .collect();
    if !unprocessed.is_empty() {
        let _ = writeln!(md, "\n## Unprocessed ({})\n", plural(record.unprocessed(), "item"));
        for state in &record.phases {
            let (why, batch_failed): (Vec<&Value>, Vec<&Value>) = state
                .unprocessed
                .iter()
                .partition(|id| id_key(id).is_some_and(|k| state.unprocessed_reasons.contains_key(&k)));
            if !batch_failed.is_empty() {
                let ids: Vec<String> = batch_failed.iter().filter_map(|id| id_key(id)).collect();
                let _ = writeln!(
                    md,
                    "- {}: {} — their batches failed after the retries",
                    state.name,
                    ids.join(", ")
                );
            }
            for id in why {
                let key = id_key(id).unwrap_or_default();
                let reason = state.unprocessed_reasons.get(&key).map_or("", String::as_str);
                let _ = writeln!(md, "- {}: {key} — {}", state.name, cell(&json!(reason)));
            }
        }
        md.push('\n');
    }
    Report {
        markdown: md,
        json: json!({
            "job_id": record.job_id,
            "name": definition.name,
            "generated_at": date,
            "items": record.items,
            "cost_usd": record.cost_usd(),
            "phases": phases_json,
            "counts": counts_json,
            "clusters": data.clusters,
            "unprocessed": unprocessed,
            "narrative": narrative,
        }),
    }
}

/// For each field whose values are few (strings, booleans, small integers), how many
/// answers have each value.
fn field_counts(answers: &[&Value], id_field: &str) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut all: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for a in answers {
        let Some(o) = a.as_object() else { continue };
        for (k, v) in o {
            if k == id_field {
                continue;
            }
            let key = match v {
                Value::String(s) if s.chars().count() <= 40 => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) if n.as_i64().is_some_and(|i| (0..=10).contains(&i)) => n.to_string(),
                _ => {
                    all.entry(k.clone())
                        .or_default()
                        .insert("\u{0}many".into(), usize::MAX / 2);
                    continue;
                }
            };
            *all.entry(k.clone()).or_default().entry(key).or_default() += 1;
        }
    }
    all.retain(|_, values| values.len() <= MAX_DISTINCT && !values.contains_key("\u{0}many"));
    all
}
