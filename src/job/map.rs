//! The map phase: every item, in batches of `batch_size`; each worker answers one object per
//! item, checked against the phase's schema and the batch; the answers merge into
//! `data/{phase}.json` in item order.

use std::sync::Arc;

use super::batch_check::BatchCheck;
use super::batches::{covered_ids, merged, plan, planned_inputs, run_batches, Layout};
use super::ingest::id_key;
use super::job_dir::write_json;
use super::runner::JobRun;
use super::worker::AnswerCheck;
use crate::error::{RlmError, StoreRefusal};
use crate::request::job_phase::Rendering;
use crate::store::UnitKind;

pub async fn run(run: &mut JobRun, index: usize) -> Result<(), RlmError> {
    let phase = run.record.definition.phases[index].clone();
    let id_field = run.record.definition.id.clone();
    let resolved = run.phases[index].clone();
    let schema = resolved.schema.ok_or_else(|| StoreRefusal::NoOutputSchema {
        phase: phase.name.clone(),
    })?;
    let rendering = Rendering {
        prompt: resolved.prompt.unwrap_or_default(),
        item_schema: Some((*schema.value).clone()),
        id_field: id_field.clone(),
        context: run.context.clone(),
        noun: "items".into(),
    };
    let items = run.items()?;
    let order = items.clone();
    run.record.phases[index].items_total = items.len();
    let planned = planned_inputs(&run.dir, &phase.name);
    let covered = covered_ids(&planned, &id_field);
    let new: Vec<_> = items
        .into_iter()
        .filter(|item| {
            item.get(&id_field)
                .and_then(id_key)
                .is_some_and(|k| !covered.contains(&k))
        })
        .collect();
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
    write_json(&run.dir.data(&phase.name), &merged(&outcome, &order, &id_field))?;
    Ok(())
}
