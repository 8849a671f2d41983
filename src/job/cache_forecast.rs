//! What the cache already holds of the calls a job is about to make, so the estimate — and
//! the `--max-cost` and $1 / $10 / $100 checks made with it — counts only what will be
//! paid: a rerun answered by the cache is neither refused nor asked about.
//!
//! A map phase's batches are known before it runs (the items, cut as the phase will cut
//! them, after the batches planned on disk), so their cache keys are looked up one by one.
//! A later phase's inputs depend on earlier answers; it is expected from the cache whole
//! when a rerun redoes it with the prompt it had, after it completed without a failure, and
//! every phase redone before it is itself answered by the cache (its inputs are then the
//! ones it had).

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

use super::batches::{covered_ids, planned_inputs};
use super::definition::{JobDefinition, PhaseKind};
use super::ingest::id_key;
use super::job_dir::JobDir;
use super::settings::JobSettings;
use super::state::PhaseState;
use crate::cache::Cache;
use crate::provider::ModelInfo;
use crate::request::job_phase::Rendering;

/// What the cache already holds of one phase's calls.
#[derive(Debug, Clone, Default)]
pub struct CacheHits {
    /// A map phase's batches still to send, exactly: the items of each, and whether the
    /// cache holds its answer.
    pub map_batches: Option<Vec<(usize, bool)>>,
    /// A later phase expected to be answered from the cache whole.
    pub expected: bool,
}

impl CacheHits {
    /// Every call of the phase is answered by the cache (or it has none to make).
    fn whole(&self) -> bool {
        match &self.map_batches {
            Some(batches) => batches.iter().all(|(_, cached)| *cached),
            None => self.expected,
        }
    }
}

/// The job as it stands before this invocation.
pub struct Before<'a> {
    /// Its directory (`None` for a job not created yet).
    pub dir: Option<&'a JobDir>,
    /// The files a rerun moves aside before it starts.
    pub moved: &'a [(PathBuf, PathBuf)],
    /// Each phase's state before a rerun reset it.
    pub states: Option<&'a [PhaseState]>,
    /// The phase a rerun redoes, and whether it has a new prompt.
    pub rerun: Option<(usize, bool)>,
}

/// What a phase's calls are made of.
pub struct PhaseInputs<'a> {
    pub definition: &'a JobDefinition,
    /// Each phase's state now (after a rerun's reset).
    pub states: Option<&'a [PhaseState]>,
    pub items: &'a [Value],
    /// Each phase's prompt and schema text.
    pub texts: &'a [(Option<String>, Option<String>)],
    pub context: Option<&'a str>,
    pub models: &'a [ModelInfo],
}

/// Per phase, what the cache holds of its calls.
pub fn forecast(settings: &JobSettings, job: &PhaseInputs<'_>, before: &Before<'_>) -> Vec<CacheHits> {
    let phases = &job.definition.phases;
    if !settings.exec.cache_mode.reads() {
        return vec![CacheHits::default(); phases.len()];
    }
    let cache = Cache::new(&settings.rlm_dir());
    let mut out: Vec<CacheHits> = Vec::with_capacity(phases.len());
    for (i, phase) in phases.iter().enumerate() {
        let done = job.states.and_then(|s| s.get(i)).is_some_and(|s| s.status().is_done());
        let hits = if done {
            CacheHits::default()
        } else if phase.kind == PhaseKind::Map {
            CacheHits {
                map_batches: map_batches(settings, job, before, i, &cache),
                expected: false,
            }
        } else {
            CacheHits {
                map_batches: None,
                expected: expected_whole(before, i, &out),
            }
        };
        out.push(hits);
    }
    out
}

/// A later phase redone by a rerun is answered by the cache when it had completed
/// cleanly, keeps its prompt, and every phase redone before it is answered by the cache.
fn expected_whole(before: &Before<'_>, index: usize, earlier: &[CacheHits]) -> bool {
    let (Some((from, new_prompt)), Some(states)) = (before.rerun, before.states) else {
        return false;
    };
    if index < from || (index == from && new_prompt) {
        return false;
    }
    let clean = states
        .get(index)
        .is_some_and(|s| s.status().is_done() && s.batches_failed == 0 && s.unprocessed.is_empty());
    clean && earlier[from..index].iter().all(CacheHits::whole)
}

/// A map phase's batches still to send, as the phase will plan them, each looked up in
/// the cache.
fn map_batches(
    settings: &JobSettings,
    job: &PhaseInputs<'_>,
    before: &Before<'_>,
    index: usize,
    cache: &Cache,
) -> Option<Vec<(usize, bool)>> {
    let phase = &job.definition.phases[index];
    let id_field = &job.definition.id;
    let (prompt, schema) = job.texts.get(index)?;
    let item_schema: Value = serde_json::from_str(schema.as_deref()?).ok()?;
    let provider = settings.phase_provider(phase).ok()?;
    let model = job.models.get(index)?;
    let failed: Vec<usize> = job
        .states
        .and_then(|s| s.get(index))
        .map(|s| s.failed_batches.clone())
        .unwrap_or_default();
    let moved: HashSet<&PathBuf> = before.moved.iter().map(|(from, _)| from).collect();

    // The batches planned on disk (unless a rerun moves them aside), as `map::run` finds
    // them; then the items they do not cover, cut by the batch size.
    let planned = match before.dir {
        Some(dir) if !moved.contains(&dir.batches(&phase.name)) => {
            let mut planned = planned_inputs(dir, &phase.name);
            planned.retain(|n, _| !moved.contains(&dir.batch_input(&phase.name, *n)));
            planned
        }
        _ => Default::default(),
    };
    let covered = covered_ids(&planned, id_field);
    let mut batches: Vec<Vec<Value>> = planned
        .into_iter()
        .filter(|(n, _)| !failed.contains(n))
        .filter(|(n, _)| before.dir.is_none_or(|d| !d.batch_output(&phase.name, *n).is_file()))
        .map(|(_, items)| items)
        .collect();
    let new: Vec<Value> = job
        .items
        .iter()
        .filter(|item| {
            item.get(id_field)
                .and_then(id_key)
                .is_some_and(|k| !covered.contains(&k))
        })
        .cloned()
        .collect();
    batches.extend(new.chunks(phase.batch_size().max(1)).map(<[Value]>::to_vec));

    let rendering = Rendering {
        prompt: prompt.clone().unwrap_or_default(),
        item_schema: Some(item_schema),
        id_field: id_field.clone(),
        context: job.context.map(str::to_string),
        noun: "items".into(),
    };
    let endpoint = provider.endpoint_identity();
    Some(
        batches
            .iter()
            .map(|items| {
                let (key, _) = rendering.cache_key(items, &model.id, endpoint.as_deref());
                let cached = matches!(cache.get(&key, provider.max_tokens), Ok(Some(_)));
                (items.len(), cached)
            })
            .collect(),
    )
}
