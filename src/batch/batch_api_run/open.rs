//! Opening the stage of a run: its batch API, and what the run store knows of its batches
//! (those an earlier attempt did not collect, the submissions whose reply never came), for a
//! batch run or one phase of a job.

use std::collections::HashMap;

use super::delivery::{client, elsewhere_for_a_job, elsewhere_message};
use super::{BatchApiRun, CancelSummary, Delivery, Earlier};
use crate::error::{ConfigFailure, RlmError, StoreFailure, SystemFailure};
use crate::printer::Printer;
use crate::provider::batch_api::BatchApi;
use crate::provider::ModelInfo;
use crate::settings::{BatchApiMode, BatchApiSettings, BatchSettings};
use crate::store::{RunId, TaskStore};
use crate::unit::UnitId;

impl BatchApiRun {
    /// The stage of run `run`: its batch API, and what the store knows of its batches
    /// (a resume waits for those an earlier attempt did not collect).
    pub fn start(
        settings: &BatchSettings,
        model: &ModelInfo,
        run: RunId,
        delivery: Delivery,
        printer: &Printer,
    ) -> Result<Self, RlmError> {
        let Delivery::BatchApi { aggregation } = delivery else {
            return Err(SystemFailure::NoBatchApiPlanned.into());
        };
        let api = client(settings, &model.id).map_err(ConfigFailure::BatchApi)?;
        let store = TaskStore::open(&settings.rlm_dir()).map_err(StoreFailure::BatchApiUnrecorded)?;
        let resume = format!("rlm resume {run}");
        let mut stage = Self::open(api, store, run, &settings.exec.batch_api, printer, (resume, None))?;
        stage.aggregation = aggregation;
        stage.retries = settings.exec.retries;
        Ok(stage)
    }

    /// The stage of run `run` (a batch run, or a job: its id) with the batch API `api`, and
    /// what the store knows of its batches (see [`BatchApiRun::start`]): `resume` is the
    /// command that resumes the run, and `only` the phase whose batches this stage
    /// collects (a job's, each on its own stage; `None`: every phase of the run).
    pub fn open(
        api: Box<dyn BatchApi>,
        store: TaskStore,
        run: RunId,
        settings: &BatchApiSettings,
        printer: &Printer,
        (resume, only): (String, Option<&str>),
    ) -> Result<Self, RlmError> {
        let ours = |phase: &str| only.is_none_or(|only| only == phase);
        // A job's stage (one phase of it) cannot give a batch up: a job's batches are
        // canceled (`rlm cancel JOB`), never forgotten.
        let forgettable = only.is_none();
        let elsewhere = |batch: &str, server: &str| {
            if forgettable {
                elsewhere_message(&run, batch, server, 0, api.server())
            } else {
                elsewhere_for_a_job(&run, batch, server, api.server())
            }
        };
        let mut earlier = Vec::new();
        let mut sent: HashMap<UnitId, u32> = HashMap::new();
        let submissions = store.batch_submissions(&run)?;
        let recorded = submissions.iter().map(|b| b.batch_id.clone()).collect();
        for batch in submissions {
            let requests = store.batch_requests(&run, &batch.batch_id)?;
            for r in &requests {
                *sent.entry(UnitId::named(r.unit_id.as_str())).or_default() += 1;
            }
            if batch.collected_at.is_none() && ours(&batch.phase) {
                if batch.server != api.server() && !settings.forget {
                    return Err(RlmError::Config(elsewhere(&batch.batch_id, &batch.server)));
                }
                earlier.push(Earlier {
                    batch_id: batch.batch_id,
                    phase: batch.phase,
                    server: batch.server,
                    requests: requests.into_iter().map(|r| (r.custom_id, r.unit_id)).collect(),
                    cancel_requested: batch.cancel_requested_at.is_some(),
                });
            }
        }
        let mut intents = store.batch_intents(&run)?;
        intents.retain(|i| ours(&i.phase));
        if let Some(other) = intents.iter().find(|i| i.server != api.server() && !settings.forget) {
            return Err(RlmError::Config(elsewhere(
                &format!("submission {}", other.token),
                &other.server,
            )));
        }
        Ok(BatchApiRun {
            api,
            aggregation: false,
            fallback: settings.fallback,
            schedule: settings.poll,
            retries: 0,
            cancel: settings.cancel,
            forget: settings.forget,
            wait_line: settings.wait_line,
            refused: false,
            auto: settings.mode == BatchApiMode::Auto,
            store,
            run,
            printer: printer.clone(),
            earlier,
            recorded,
            sent,
            store_failure: None,
            intents,
            held: HashMap::new(),
            unresolved: Vec::new(),
            submissions: 0,
            cancel_wait: settings.cancel_wait,
            cancel_summary: CancelSummary::default(),
            resume,
            submit_new: true,
            forgettable,
        })
    }

    /// `--retries`: how many more times an errored or expired request is sent.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Only the batches sent before are collected; the other requests go realtime.
    pub fn collect_only(mut self) -> Self {
        self.submit_new = false;
        self
    }

    /// Also collects batch `batch_id` of phase `phase`, sent by an older rlm that recorded
    /// it outside the store: `(custom_id, unit_id)` of its requests.
    pub fn collect_also(&mut self, batch_id: String, phase: &str, requests: Vec<(String, String)>) {
        if self.earlier.iter().any(|e| e.batch_id == batch_id) {
            return;
        }
        self.earlier.push(Earlier {
            batch_id,
            phase: phase.to_string(),
            server: self.api.server().to_string(),
            requests,
            cancel_requested: false,
        });
    }
}
