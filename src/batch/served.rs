//! A run whose units were answered by other runs of its plan — the shard runs `rlm merge`
//! combines. Each unit's answer is read from the result file of the run that answered it,
//! through the same [`answers::read`] a run uses for its own answers, written to this run's
//! directory, and recorded with what that run paid for it (tokens, cost, attempts), so the
//! aggregate, the findings and the report that follow are those of one run over the whole
//! plan. A batch member that its run retried alone is served as that run served it.

use std::collections::HashMap;
use std::path::PathBuf;

use super::answers::{self, UnitAnswers};
use super::dispatcher::Dispatcher;
use super::planning::Plan;
use crate::exec::Event;
use crate::plan::Budget;
use crate::provider::Usage;
use crate::report::{UnitRecord, UnitStatus};
use crate::run_dir::RunDir;
use crate::unit::{UnitId, UnitKind, WorkUnit};

/// A unit as another run of the plan recorded it.
#[derive(Debug, Clone)]
pub struct RecordedUnit {
    /// That run's directory (its result files are there).
    pub dir: PathBuf,
    pub record: UnitRecord,
}

/// The units other runs answered, by id.
pub type Recorded = HashMap<UnitId, RecordedUnit>;

/// Serves every unit of `plan` from `recorded` (see the module doc); a unit no run holds is
/// not run, and says so.
pub fn serve(dispatcher: &mut Dispatcher, run_dir: &RunDir, plan: &Plan, recorded: &Recorded, budget: Budget) {
    // Each unit served is announced first, as a run announces the units it dispatches: the
    // progress counts them all (`[k/N]`).
    for unit in plan.units.iter().filter(|u| recorded.contains_key(&u.id)) {
        dispatcher.emit(Event::Queued {
            unit: unit.id.clone(),
            label: unit.label.clone(),
            kind: UnitKind::Map,
        });
    }
    for unit in &plan.units {
        let Some(found) = recorded.get(&unit.id) else {
            dispatcher.emit(Event::Cancelled {
                unit: unit.id.clone(),
                label: unit.label.clone(),
                kind: UnitKind::Map,
                reason: "not run: none of the merged runs holds it (is a shard's run missing?)".into(),
            });
            continue;
        };
        let Some(mut answers) = serve_one(dispatcher, run_dir, plan, unit, found) else {
            continue;
        };
        // Members its run retried alone, each served as a unit of its own, its answer
        // joining the batch's (as in a run).
        for (index, _) in std::mem::take(&mut answers.retry) {
            let Some(member) = crate::plan::member_unit(unit, index, &plan.requests, budget) else {
                continue;
            };
            dispatcher.emit(Event::Queued {
                unit: member.id.clone(),
                label: member.label.clone(),
                kind: UnitKind::Map,
            });
            let Some(found) = recorded.get(&member.id) else {
                // Its batch did not answer for it, and no run asked it alone: not an answer.
                dispatcher.emit(Event::Cancelled {
                    unit: member.id.clone(),
                    label: member.label.clone(),
                    kind: UnitKind::Map,
                    reason: "not run: its batch's answer had no usable entry for it, and none of the merged runs \
                             asked it alone"
                        .into(),
                });
                continue;
            };
            if let Some(member_answers) = serve_one(dispatcher, run_dir, plan, &member, found) {
                dispatcher.answers.remove(&member.id);
                if let Some(parent) = dispatcher.answers.get_mut(&unit.id) {
                    parent.files.extend(member_answers.files);
                }
            }
        }
    }
}

/// One unit: its answer read, written and recorded (its answers, with the batch members it
/// left to retry), or its failure recorded.
fn serve_one(
    dispatcher: &mut Dispatcher,
    run_dir: &RunDir,
    plan: &Plan,
    unit: &WorkUnit,
    found: &RecordedUnit,
) -> Option<UnitAnswers> {
    let record = &found.record;
    let usage = Usage {
        input_tokens: record.tokens_in,
        output_tokens: record.tokens_out,
        cached_input_tokens: record.cached_input_tokens,
        cache_write_tokens: record.cache_write_tokens,
    };
    let failed = |reason: String| Event::Failed {
        unit: unit.id.clone(),
        label: unit.label.clone(),
        kind: UnitKind::Map,
        attempts: record.attempts,
        duration_ms: record.duration_ms,
        usage,
        cost_usd: record.cost_usd,
        error: None,
        reason,
    };
    match record.status {
        UnitStatus::Failed => {
            dispatcher.emit(failed(record.reason.clone().unwrap_or_else(|| "failed".into())));
            return None;
        }
        UnitStatus::NotRun => {
            dispatcher.emit(Event::Cancelled {
                unit: unit.id.clone(),
                label: unit.label.clone(),
                kind: UnitKind::Map,
                reason: record.reason.clone().unwrap_or_else(|| "not run".into()),
            });
            return None;
        }
        UnitStatus::Succeeded => {}
    }
    let file = record.result_file.as_deref().unwrap_or(&unit.result_name);
    let path = found.dir.join(file);
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            dispatcher.emit(failed(format!("its answer cannot be read from its run: {e}")));
            return None;
        }
    };
    let expect = crate::request::expect_of(unit, &plan.requests);
    let answers = answers::read(unit, &text, expect, plan.requests.schema.as_ref());
    if let Err(e) = answers::write(run_dir, None, unit, &text, &answers) {
        dispatcher.emit(failed(format!("cannot write its result file: {e}")));
        return None;
    }
    dispatcher.served(unit.id.clone(), answers.clone());
    dispatcher.emit(Event::Completed {
        unit: unit.id.clone(),
        label: unit.label.clone(),
        kind: UnitKind::Map,
        attempts: record.attempts,
        duration_ms: record.duration_ms,
        usage,
        saved: Usage {
            input_tokens: record.tokens_saved,
            ..Usage::default()
        },
        cost_usd: record.cost_usd,
        cache_saved_usd: record.prompt_cache_saved_usd,
        cached: record.cached,
        truncated: record.truncated,
        result_file: Some(unit.result_name.clone()),
    });
    Some(answers)
}
