//! The review phase: only the selected items (`select`: the best candidate of each cluster,
//! or a filter on earlier answers), each with its cluster's context and, when the phase
//! has a `fetch` command, that command's output (a pull request's diff) cut to the context
//! budget — and the item says when it was cut. Then batches as in a map phase.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::batch_check::BatchCheck;
use super::batches::{covered_ids, merged, plan, planned_inputs, run_batches, Layout};
use super::github::SetupProblem;
use super::ingest::id_key;
use super::job_dir::write_json;
use super::records::processed_before;
use super::reduce::clusters_of;
use super::runner::{JobRun, Stop};
use super::select::{ClusterPlace, Filter};
use super::worker::AnswerCheck;
use crate::error::{RlmError, StoreRefusal};
use crate::process::{self, CommandSpec, ProcessError};
use crate::request::job_phase::Rendering;
use crate::store::UnitKind;

/// How long one `fetch` command may run.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);
/// How the phase's note on failed fetches begins (a resume fetches them again and drops it).
const FETCH_FAILED_NOTE: &str = "not reviewed, their fetch failed";
/// `fetch` commands run at once.
const FETCH_WIDTH: usize = 4;

/// What an item is in its cluster.
#[derive(Debug, Clone)]
pub struct Membership {
    pub cluster_id: Value,
    pub theme: Value,
    pub size: usize,
    pub is_best: bool,
    /// The other members.
    pub others: Vec<Value>,
}

/// Each clustered item's membership, by id key.
pub fn memberships(clusters: &[Value]) -> HashMap<String, Membership> {
    let mut out = HashMap::new();
    for c in clusters {
        let members: Vec<Value> = c["members"].as_array().cloned().unwrap_or_default();
        let best = id_key(&c["best_candidate"]);
        for m in &members {
            let Some(key) = id_key(m) else { continue };
            out.insert(
                key.clone(),
                Membership {
                    cluster_id: c["cluster_id"].clone(),
                    theme: c["theme"].clone(),
                    size: members.len(),
                    is_best: best.as_deref() == Some(key.as_str()),
                    others: members
                        .iter()
                        .filter(|o| id_key(o).as_deref() != Some(key.as_str()))
                        .cloned()
                        .collect(),
                },
            );
        }
    }
    out
}

/// The records a review phase selects, each with its cluster context, in item order.
pub fn selected(run: &JobRun, index: usize, items: &[Value]) -> Result<Vec<Value>, RlmError> {
    let phase = &run.record.definition.phases[index];
    let filter = Filter::parse(phase.select.as_deref().unwrap_or("best_candidate"))
        .map_err(|e| RlmError::Input(format!("phase {}: select: {e}", phase.name)))?;
    // An item an earlier phase did not process has nothing to select it by: never reviewed.
    let (records, _) = processed_before(&run.dir, &run.record, items, index);
    let member = memberships(&clusters_of(&run.dir, &run.record.definition));
    Ok(records
        .iter()
        .filter_map(|(key, record)| {
            let m = member.get(key);
            let place = ClusterPlace {
                clustered: m.is_some(),
                best: m.is_some_and(|m| m.is_best),
            };
            if !filter.matches(record, place) {
                return None;
            }
            let mut item = record.clone();
            if let (Some(m), Some(o)) = (m, item.as_object_mut()) {
                o.insert(
                    "cluster".into(),
                    json!({"cluster_id": m.cluster_id, "theme": m.theme, "size": m.size,
                           "is_best_candidate": m.is_best, "others": m.others}),
                );
            }
            Some(item)
        })
        .collect())
}

pub async fn run(run: &mut JobRun, index: usize) -> Result<(), RlmError> {
    let phase = run.record.definition.phases[index].clone();
    let id_field = run.record.definition.id.clone();
    let resolved = run.phases[index].clone();
    let schema = resolved.schema.ok_or_else(|| StoreRefusal::NoOutputSchema {
        phase: phase.name.clone(),
    })?;
    let items = run.items()?;
    let chosen = selected(run, index, &items)?;
    run.record.phases[index].items_total = chosen.len();
    let planned = planned_inputs(&run.dir, &phase.name);
    let covered = covered_ids(&planned, &id_field);
    let mut new: Vec<Value> = chosen
        .into_iter()
        .filter(|i| i.get(&id_field).and_then(id_key).is_some_and(|k| !covered.contains(&k)))
        .collect();
    if let Some(argv) = &phase.fetch {
        // Fetched again now: whatever an earlier fetch of them said no longer holds.
        let again: std::collections::HashSet<String> =
            new.iter().filter_map(|i| i.get(&id_field).and_then(id_key)).collect();
        let state = &mut run.record.phases[index];
        state
            .unprocessed
            .retain(|id| id_key(id).is_none_or(|k| !again.contains(&k)));
        state.unprocessed_reasons.retain(|k, _| !again.contains(k));
        state.notes.retain(|n| !n.starts_with(FETCH_FAILED_NOTE));
        let budget = fetch_budget(run, index);
        let command = FetchCommand {
            argv,
            field: phase.fetch_as(),
            id_field: &id_field,
            budget,
        };
        let Some(fetched) = fetch_all(run, &command, new).await? else {
            // Ctrl-C or the deadline while fetching: nothing of the phase was sent, and
            // `resume` fetches again.
            run.stop = Some(if run.interrupt.deadline_passed {
                Stop::Deadline
            } else {
                Stop::Interrupted
            });
            return Ok(());
        };
        new = fetched.items;
        if fetched.cut > 0 {
            run.progress.note(&format!(
                "  {} fetched text(s) cut to about {} KiB to fit the context budget (the item says so)",
                fetched.cut,
                budget / 1024
            ));
            run.record.phases[index]
                .notes
                .push(format!("{} fetched text(s) cut to fit the context budget", fetched.cut));
        }
        left_out(run, index, &fetched.failed);
    }
    let rendering = Rendering {
        prompt: resolved.prompt.unwrap_or_default(),
        item_schema: Some((*schema.value).clone()),
        id_field: id_field.clone(),
        context: run.context.clone(),
        noun: "items".into(),
    };
    let check = |ids| -> Arc<dyn AnswerCheck> { Arc::new(BatchCheck::new(ids, &id_field, schema.clone())) };
    let failed = run.record.phases[index].failed_batches.clone();
    let layout = Layout {
        phase: &phase.name,
        size: phase.batch_size(),
        failed: &failed,
        id_field: &id_field,
    };
    let batches = plan(&run.dir, &layout, planned, new, &check)?;
    let outcome = run_batches(run, index, &rendering, batches, UnitKind::Map).await?;
    write_json(&run.dir.data(&phase.name), &merged(&outcome, &items, &id_field))?;
    Ok(())
}

/// The bytes one item's fetched text may take: the model's window less the answer, the
/// context document and a margin, shared by the items of a batch.
fn fetch_budget(run: &JobRun, index: usize) -> usize {
    let phase = &run.record.definition.phases[index];
    let model = &run.models[index];
    let max_out = run
        .settings
        .phase_provider(phase)
        .map_or(16_000, |p| u64::from(p.max_tokens));
    let context = run
        .context
        .as_ref()
        .map_or(0, |c| crate::tokens::upper_bound(c.len() as u64));
    let per_batch = model
        .context_window
        .saturating_sub(max_out)
        .saturating_sub(context)
        .saturating_sub(4_000);
    let per_item = per_batch / phase.batch_size().max(1) as u64;
    // Each item also carries its record (about 2 KiB): keep room for it.
    (crate::tokens::bytes_within(per_item) as usize)
        .saturating_sub(2_048)
        .max(1_024)
}

/// A review phase's `fetch` command.
struct FetchCommand<'a> {
    argv: &'a [String],
    /// The field its output goes to.
    field: &'a str,
    id_field: &'a str,
    /// Bytes of output one item may carry.
    budget: usize,
}

/// What fetching gave: the items with their fetched text, in their order; the ids whose
/// fetch failed, with why; how many texts were cut.
struct Fetched {
    items: Vec<Value>,
    failed: Vec<(Value, String)>,
    cut: usize,
}

/// Runs `fetch` for every item (a few at once) and stores its output in the item, cut to
/// the budget. An item whose fetch failed is left out (it is not reviewed without what
/// its review needs). A failure that every item would meet ends the phase at once, before
/// its batches are paid for: a program that cannot be started, a gh that is not logged in,
/// a repository gh cannot see. Ctrl-C (or the deadline) stops the commands running, and
/// reaps them: `None`.
async fn fetch_all(
    run: &mut JobRun,
    command: &FetchCommand<'_>,
    items: Vec<Value>,
) -> Result<Option<Fetched>, RlmError> {
    let repo = run.record.definition.repo.clone().unwrap_or_default();
    let cwd = run.settings.cwd.clone();
    let job = run.record.job_id.clone();
    let interrupt = &mut run.interrupt;
    // Each command stops when this turns true.
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut fetched = Fetched {
        items: Vec::with_capacity(items.len()),
        failed: Vec::new(),
        cut: 0,
    };
    // An id that starts with `-` where an argument starts with it is read as an option by
    // the program (`git show {id}` with the id `--output=FILE` writes FILE): such an item
    // is not fetched, so not reviewed.
    let whole_arg = command.argv.iter().any(|a| a.starts_with("{id}"));
    let (items, option_like): (Vec<Value>, Vec<Value>) = items.into_iter().partition(|item| {
        !whole_arg
            || !item
                .get(command.id_field)
                .and_then(id_key)
                .is_some_and(|id| id.starts_with('-'))
    });
    for item in option_like {
        let id = item.get(command.id_field).cloned().unwrap_or(Value::Null);
        fetched.failed.push((
            id,
            "its id starts with '-', which the fetch command would read as an option: not run".to_string(),
        ));
    }
    for chunk in items.chunks(FETCH_WIDTH) {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, item) in chunk.iter().enumerate() {
            let id = item.get(command.id_field).and_then(id_key).unwrap_or_default();
            let spec = CommandSpec {
                cwd: Some(cwd.clone()),
                timeout: Some(FETCH_TIMEOUT),
                ..CommandSpec::new(
                    command
                        .argv
                        .iter()
                        .map(|a| a.replace("{id}", &id).replace("{repo}", &repo))
                        .collect(),
                )
            };
            let mut stopping = stopping.clone();
            let cancel = async move {
                if stopping.wait_for(|stop| *stop).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tasks.spawn(async move { (i, process::run(&spec, "", cancel).await) });
        }
        let mut results: Vec<Option<Result<process::ProcessOutput, ProcessError>>> =
            (0..chunk.len()).map(|_| None).collect();
        let mut interrupted = false;
        loop {
            tokio::select! {
                biased;
                () = interrupt.recv(), if !interrupted => {
                    // The commands are stopped and reaped; the loop waits for them.
                    interrupted = true;
                    let _ = stop.send(true);
                }
                joined = tasks.join_next() => match joined {
                    None => break,
                    Some(Ok((i, result))) => {
                        if let Some(slot) = results.get_mut(i) {
                            *slot = Some(result);
                        }
                    }
                    Some(Err(_)) => {}
                },
            }
        }
        if interrupted {
            return Ok(None);
        }
        for (item, result) in chunk.iter().zip(results) {
            let id = item.get(command.id_field).cloned().unwrap_or(Value::Null);
            match result {
                Some(Ok(output)) => {
                    let mut item = item.clone();
                    if let Some(o) = item.as_object_mut() {
                        let (text, was_cut) = cut_to(&output.stdout, command.budget);
                        if was_cut {
                            fetched.cut += 1;
                            o.insert(format!("{}_truncated", command.field), json!(true));
                        }
                        o.insert(command.field.to_string(), json!(text));
                    }
                    fetched.items.push(item);
                }
                Some(Err(e)) => {
                    if let Some(stop) = stops_the_phase(&job, &e, &repo) {
                        return Err(stop);
                    }
                    fetched.failed.push((id, e.to_string()));
                }
                None => fetched
                    .failed
                    .push((id, "the fetch command ended without a result".to_string())),
            }
        }
    }
    Ok(Some(fetched))
}

/// The error that ends the phase when a fetch failed in a way every item would: the
/// program is gone (it was checked before the job started), or gh cannot reach the
/// repository. Nothing of the phase's batches was sent; `resume` fetches again.
fn stops_the_phase(job: &str, e: &ProcessError, repo: &str) -> Option<RlmError> {
    match e {
        ProcessError::NotFound { program } => Some(RlmError::Config(format!(
            "the phase's fetch command cannot run: {program} is not found any more: install it again and put it \
             on PATH, then rlm job resume {job}"
        ))),
        ProcessError::NotExecutable { program } => Some(RlmError::Config(format!(
            "the phase's fetch command cannot run: {program} is not executable any more: chmod +x it, then rlm job \
             resume {job}"
        ))),
        _ => SetupProblem::of(e).map(|problem| {
            problem.error(
                repo,
                &format!("then rlm job resume {job} (nothing of this phase was sent)"),
            )
        }),
    }
}

/// Items whose fetch failed are unprocessed items of the phase, each with why: said on
/// stderr, in `events.jsonl` and in the phase's notes; a rerun of the phase takes them.
fn left_out(run: &mut JobRun, index: usize, failed: &[(Value, String)]) {
    if failed.is_empty() {
        return;
    }
    let name = run.record.phases[index].name.clone();
    for (id, reason) in failed {
        let key = id_key(id).unwrap_or_default();
        run.progress.item_left_out(&key, &format!("its fetch failed: {reason}"));
        run.dir
            .event(&json!({"event": "item:fetch_failed", "phase": name, "id": id, "reason": reason}));
        let state = &mut run.record.phases[index];
        state.unprocessed.push(id.clone());
        state
            .unprocessed_reasons
            .insert(key, format!("its fetch failed: {reason}"));
    }
    let (first_id, first_reason) = &failed[0];
    run.record.phases[index].notes.push(format!(
        "{FETCH_FAILED_NOTE}: {} item(s) (first: {}: {first_reason}); rlm job rerun {} --phase {name} takes them",
        failed.len(),
        id_key(first_id).unwrap_or_default(),
        run.record.job_id
    ));
}

/// `text` cut at a line end to at most `budget` bytes, with a line that says so.
pub fn cut_to(text: &str, budget: usize) -> (String, bool) {
    if text.len() <= budget {
        return (text.to_string(), false);
    }
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |n| n + 1);
    (
        format!(
            "{}\n[rlm: cut to {end} of {} bytes to fit the context budget]\n",
            &text[..end],
            text.len()
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_line_and_say_so() {
        let (t, cut) = cut_to("aaaa\nbbbb\ncccc\n", 12);
        assert!(cut);
        assert!(t.starts_with("aaaa\nbbbb\n\n[rlm: cut to 10 of 15 bytes"), "{t}");
        assert_eq!(cut_to("short", 100), ("short".to_string(), false));
    }

    #[test]
    fn memberships_mark_the_best_candidate() {
        let m =
            memberships(&[json!({"cluster_id": "cluster-1", "theme": "t", "members": [3, 1], "best_candidate": 3})]);
        assert!(m["3"].is_best && !m["1"].is_best);
        assert_eq!(m["1"].others, vec![json!(3)]);
    }
}
