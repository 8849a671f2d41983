//! The reduce phase: the programmatic clusters (`cluster::precluster`, written to
//! `data/preclusters.json`), then the model's refinement of each cluster — theme, duplicate
//! groups, best candidate, ranking — in shards that fit the context. An answer must name
//! only members of its cluster; a cluster whose answer stays invalid after the retries (or
//! that is too large to send) keeps the programmatic ranking, and the phase says so. The
//! clusters go to `data/{phase}.json`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Value};

use super::batch_check::answer_items;
use super::batches::{covered_ids, plan, planned_inputs, run_batches, BatchesOutcome, Layout};
use super::cluster::{precluster, ClusterConfig, PreCluster};
use super::ingest::id_key;
use super::job_dir::{read_json_if_whole, write_json, JobDir};
use super::records::{processed_before, Records};
use super::runner::JobRun;
use super::worker::AnswerCheck;
use crate::error::RlmError;
use crate::request::job_phase::Rendering;
use crate::schema::OutputSchema;
use crate::store::UnitKind;

/// The schema of one cluster's refinement when the phase brings none (the seed's; the
/// PR-review example ships it as a file).
pub const CLUSTER_SCHEMA: &str = include_str!("../../examples/jobs/pr-review/cluster.schema.json");

/// Longest text of a member shown to the refinement (bodies are cut).
const MEMBER_TEXT: usize = 200;
/// Most elements of a member's list shown (file lists are cut).
const MEMBER_LIST: usize = 10;

/// Where the programmatic clusters go: `data/preclusters.json`.
pub fn preclusters_path(dir: &JobDir) -> std::path::PathBuf {
    dir.data("preclusters")
}

pub async fn run(run: &mut JobRun, index: usize) -> Result<(), RlmError> {
    let phase = run.record.definition.phases[index].clone();
    let id_field = run.record.definition.id.clone();
    let items = run.items()?;
    let (records, left_out) = processed_before(&run.dir, &run.record, &items, index);
    let config = ClusterConfig {
        id_field: id_field.clone(),
        group_by: phase.group_by.clone(),
        similar_by: phase.similar_by.clone(),
        rank_by: phase.rank_by.clone(),
        max_size: phase.max_cluster_size(),
    };
    let pre = precluster(&records, &config);
    write_json(&preclusters_path(&run.dir), &pre)?;
    run.record.phases[index].items_total = pre.len();
    let resolved = run.phases[index].clone();

    let mut notes = Vec::new();
    if left_out > 0 {
        notes.push(format!(
            "{left_out} item(s) left out of the clusters: an earlier phase did not process them (a rerun of that \
             phase takes them, and this one after it)"
        ));
    }
    let (refinable, too_large): (Vec<&PreCluster>, Vec<&PreCluster>) =
        pre.iter().partition(|c| c.members.len() <= phase.max_cluster_size());
    if !too_large.is_empty() {
        notes.push(format!(
            "{} cluster(s) larger than max_cluster_size {} kept the programmatic ranking",
            too_large.len(),
            phase.max_cluster_size()
        ));
    }
    let mut refined: HashMap<String, Value> = HashMap::new();
    match resolved.prompt {
        Some(prompt) if !refinable.is_empty() => {
            let schema = match resolved.schema {
                Some(s) => s,
                None => OutputSchema::from_text(CLUSTER_SCHEMA, std::path::Path::new("cluster.schema.json"))?,
            };
            let rendering = Rendering {
                prompt,
                item_schema: Some((*schema.value).clone()),
                id_field: "cluster_id".into(),
                context: run.context.clone(),
                noun: "clusters".into(),
            };
            let inputs: Vec<Value> = refinable.iter().map(|c| cluster_input(c, &records)).collect();
            let members: Arc<HashMap<String, HashSet<String>>> = Arc::new(
                refinable
                    .iter()
                    .map(|c| (c.id.clone(), c.members.iter().filter_map(id_key).collect()))
                    .collect(),
            );
            let planned = planned_inputs(&run.dir, &phase.name);
            let covered = covered_ids(&planned, "cluster_id");
            let new: Vec<Value> = shards(
                inputs
                    .into_iter()
                    .filter(|c| {
                        c.get("cluster_id")
                            .and_then(id_key)
                            .is_some_and(|k| !covered.contains(&k))
                    })
                    .collect(),
                shard_bytes(run, index),
                phase.batch_size(),
            );
            let check = |ids: Vec<Value>| -> Arc<dyn AnswerCheck> {
                Arc::new(ClusterCheck {
                    ids,
                    members: members.clone(),
                    schema: schema.clone(),
                })
            };
            let failed = run.record.phases[index].failed_batches.clone();
            // Shards are planned as whole batches: `plan` cuts `new` by the shard sizes.
            let batches = plan_shards(run, &phase.name, planned, new, &failed, &check)?;
            let outcome = run_batches(run, index, &rendering, batches, UnitKind::Aggregate).await?;
            if run.stop.is_some() {
                return Ok(());
            }
            collect(&outcome, &check, &mut refined, &mut notes);
            // Failed shards fell back: nothing is left unprocessed by a reduce.
            let state = &mut run.record.phases[index];
            state.unprocessed.clear();
            state.failed_batches.clear();
        }
        Some(_) => {}
        None => notes.push("no prompt: every cluster keeps the programmatic ranking".into()),
    }
    let clusters: Vec<Value> = pre
        .iter()
        .map(|c| match refined.remove(&c.id) {
            Some(answer) => finish(c, answer, "model"),
            None => finish(c, c.proposal(), "programmatic"),
        })
        .collect();
    let programmatic = clusters.iter().filter(|c| c["source"] == "programmatic").count();
    if programmatic > 0 && resolved_has_prompt(run, index) {
        notes.push(format!(
            "{programmatic} of {} clusters kept the programmatic ranking",
            clusters.len()
        ));
    }
    write_json(&run.dir.data(&phase.name), &clusters)?;
    let state = &mut run.record.phases[index];
    state.items_done = clusters.len();
    state.notes = notes.clone();
    for note in notes {
        run.progress.note(&format!("  {note}"));
    }
    Ok(())
}

fn resolved_has_prompt(run: &JobRun, index: usize) -> bool {
    run.phases[index].prompt.is_some()
}

/// What the refinement is shown of a cluster: its members (compacted) and the first
/// pass's proposal, which it confirms or corrects.
fn cluster_input(c: &PreCluster, records: &Records) -> Value {
    let members: Vec<Value> = c
        .members
        .iter()
        .filter_map(|id| records.get(&id_key(id)?).map(|r| compact(r, 0)))
        .collect();
    let mut input = c.proposal();
    input["members"] = Value::Array(members);
    input["size"] = json!(c.members.len());
    input
}

/// A record cut for a refinement: long texts and lists shortened, nesting bounded.
fn compact(v: &Value, depth: usize) -> Value {
    match v {
        Value::String(s) if s.chars().count() > MEMBER_TEXT => {
            Value::String(format!("{}…", s.chars().take(MEMBER_TEXT).collect::<String>()))
        }
        Value::Array(items) => Value::Array(items.iter().take(MEMBER_LIST).map(|i| compact(i, depth + 1)).collect()),
        Value::Object(o) if depth < 3 => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), compact(v, depth + 1))).collect())
        }
        Value::Object(_) => Value::String("{…}".into()),
        other => other.clone(),
    }
}

/// The bytes of clusters one refinement call may carry: the model's window, less the
/// answer and a margin for the prompt, by the token bound used for every size decision.
fn shard_bytes(run: &JobRun, index: usize) -> usize {
    let model = &run.models[index];
    let max_out = run
        .settings
        .phase_provider(&run.record.definition.phases[index])
        .map_or(16_000, |p| u64::from(p.max_tokens));
    let context = run.context.as_ref().map_or(0, |c| c.len() as u64);
    let budget = model
        .context_window
        .saturating_sub(max_out)
        .saturating_sub(crate::tokens::upper_bound(context))
        .saturating_sub(4_000);
    crate::tokens::bytes_within(budget.max(2_000)) as usize
}

/// Groups clusters into shards of at most `max` clusters and `bytes` bytes (a cluster
/// larger than `bytes` goes alone); returns them flattened with a `shard` marker.
fn shards(clusters: Vec<Value>, bytes: usize, max: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut shard = 0;
    let (mut count, mut size) = (0, 0);
    for c in clusters {
        let len = c.to_string().len();
        if count > 0 && (count >= max || size + len > bytes) {
            shard += 1;
            count = 0;
            size = 0;
        }
        count += 1;
        size += len;
        out.push(json!({"shard": shard, "cluster": c}));
    }
    out
}

/// The shards as batches: those planned before, then one batch per new shard.
fn plan_shards(
    run: &JobRun,
    phase: &str,
    planned: std::collections::BTreeMap<usize, Vec<Value>>,
    new: Vec<Value>,
    failed: &[usize],
    check: &dyn Fn(Vec<Value>) -> Arc<dyn AnswerCheck>,
) -> Result<Vec<super::batches::Batch>, RlmError> {
    let mut next = planned.keys().max().copied().unwrap_or(0) + 1;
    let layout = Layout {
        phase,
        size: 1,
        failed,
        id_field: "cluster_id",
    };
    let mut batches = plan(&run.dir, &layout, planned, Vec::new(), check)?;
    let mut groups: Vec<Vec<Value>> = Vec::new();
    let mut current = None;
    for entry in new {
        let shard = entry["shard"].as_u64();
        if shard != current || groups.is_empty() {
            groups.push(Vec::new());
            current = shard;
        }
        if let (Some(group), Some(c)) = (groups.last_mut(), entry.get("cluster")) {
            group.push(c.clone());
        }
    }
    for group in groups {
        write_json(&run.dir.batch_input(phase, next), &group)?;
        let ids: Vec<Value> = group.iter().map(|c| c["cluster_id"].clone()).collect();
        batches.push(super::batches::Batch {
            n: next,
            check: check(ids.clone()),
            ids,
            items: group,
        });
        next += 1;
    }
    Ok(batches)
}

/// The refinements accepted, and those of failed shards that are valid on their own.
fn collect(
    outcome: &BatchesOutcome,
    check: &dyn Fn(Vec<Value>) -> Arc<dyn AnswerCheck>,
    refined: &mut HashMap<String, Value>,
    notes: &mut Vec<String>,
) {
    for answer in outcome.accepted.values() {
        for c in answer.as_array().into_iter().flatten() {
            if let Some(id) = c.get("cluster_id").and_then(id_key) {
                refined.insert(id, c.clone());
            }
        }
    }
    for failed in &outcome.failed {
        let Some(last) = &failed.last_value else { continue };
        let mut saved = 0;
        for c in answer_items(last).into_iter().flatten() {
            let Some(id) = c.get("cluster_id").cloned() else {
                continue;
            };
            if !failed.ids.contains(&id) {
                continue;
            }
            if let Ok(Value::Array(ok)) = check(vec![id.clone()]).check(&json!({"items": [c]})) {
                if let (Some(key), Some(valid)) = (id_key(&id), ok.into_iter().next()) {
                    refined.insert(key, valid);
                    saved += 1;
                }
            }
        }
        if saved > 0 {
            notes.push(format!(
                "batch-{:03}: {saved} cluster(s) of an answer that stayed invalid were valid on their own and kept",
                failed.n
            ));
        }
    }
}

/// A cluster as `data/{phase}.json` holds it: the answer (or the proposal), its members,
/// and where the ranking came from.
fn finish(c: &PreCluster, answer: Value, source: &str) -> Value {
    let mut out = answer;
    out["cluster_id"] = json!(c.id);
    out["members"] = json!(c.members);
    out["size"] = json!(c.members.len());
    out["basis"] = json!(c.basis);
    out["source"] = json!(source);
    if out.get("theme").and_then(Value::as_str).is_none_or(str::is_empty) {
        out["theme"] = json!(c.theme);
    }
    out
}

/// A refinement answer: every cluster of the shard once, every id it names a member of its
/// cluster, the best candidate one of them.
struct ClusterCheck {
    ids: Vec<Value>,
    members: Arc<HashMap<String, HashSet<String>>>,
    schema: OutputSchema,
}

impl AnswerCheck for ClusterCheck {
    fn check(&self, answer: &Value) -> Result<Value, Vec<String>> {
        let Some(items) = answer_items(answer) else {
            return Err(vec![
                "the answer must be a JSON object {\"items\": [...]} with one object per cluster".into(),
            ]);
        };
        let wanted: Vec<String> = self.ids.iter().filter_map(id_key).collect();
        let mut placed: HashMap<String, Value> = HashMap::new();
        let mut errors = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(id) = item.get("cluster_id").and_then(id_key) else {
                errors.push(format!("items[{i}] has no \"cluster_id\""));
                continue;
            };
            if !wanted.contains(&id) {
                errors.push(format!("items[{i}]: cluster \"{id}\" is not in this batch"));
                continue;
            }
            if placed.contains_key(&id) {
                errors.push(format!("items[{i}]: cluster \"{id}\" is answered more than once"));
                continue;
            }
            if let Err(e) = self.schema.check(&item.to_string()) {
                errors.push(format!("items[{i}] (cluster \"{id}\"): {}", e.first()));
                placed.insert(id, Value::Null);
                continue;
            }
            let members = self.members.get(&id).cloned().unwrap_or_default();
            let before = errors.len();
            let mut problems = Vec::new();
            let mut named = |what: &str, v: &Value| {
                if !id_key(v).is_some_and(|k| members.contains(&k)) {
                    problems.push(format!(
                        "items[{i}] (cluster \"{id}\"): {what} {v} is not a member of the cluster"
                    ));
                }
            };
            named("best_candidate", &item["best_candidate"]);
            let mut seen = HashSet::new();
            let mut twice = Vec::new();
            for r in item["ranking"].as_array().into_iter().flatten() {
                named("ranking entry", r);
                if !seen.insert(id_key(r).unwrap_or_default()) {
                    twice.push(format!("items[{i}] (cluster \"{id}\"): ranking lists {r} twice"));
                }
            }
            for g in item
                .get("duplicate_groups")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                named("duplicate_groups canonical", &g["canonical"]);
                for d in g["duplicates"].as_array().into_iter().flatten() {
                    named("duplicate_groups duplicate", d);
                }
            }
            errors.extend(problems);
            errors.extend(twice);
            if errors.len() == before {
                placed.insert(id, item.clone());
            } else {
                placed.insert(id, Value::Null);
            }
        }
        for id in &wanted {
            if !placed.contains_key(id) {
                errors.push(format!(
                    "no object for cluster \"{id}\": answer for every cluster of the batch"
                ));
            }
        }
        if errors.is_empty() {
            Ok(Value::Array(wanted.iter().filter_map(|id| placed.remove(id)).collect()))
        } else {
            Err(errors)
        }
    }
}

/// The clusters of a job's reduce phase, if it has run.
pub fn clusters_of(dir: &JobDir, definition: &super::definition::JobDefinition) -> Vec<Value> {
    definition
        .phases
        .iter()
        .find(|p| p.kind == super::definition::PhaseKind::Reduce)
        .and_then(|p| read_json_if_whole::<Value>(&dir.data(&p.name)))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}
