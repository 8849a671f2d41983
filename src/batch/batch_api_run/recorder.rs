//! The run store's side of a phase's submissions ([`RunRecorder`]): each intent written before
//! its create request is sent, each batch (with its requests' unit ids) once it exists.

use std::collections::{HashMap, HashSet};

use super::phase::Work;
use crate::provider::batch_api::{new_token, Recorder, SubmissionTag, Submitted};
use crate::store::{NewBatchIntent, NewBatchSubmission, RunId, TaskStore};

/// The run store's side of a phase's submissions: each intent written before its create
/// request is sent, each batch (with its requests' unit ids) once it exists, settling the
/// intent in the same transaction.
pub(super) struct RunRecorder<'s, 'w> {
    pub(super) store: &'s mut TaskStore,
    pub(super) run: &'s RunId,
    /// The first failure to write the store.
    pub(super) failure: &'s mut Option<String>,
    pub(super) provider: &'static str,
    pub(super) server: String,
    pub(super) phase: &'static str,
    pub(super) work: &'s [Work<'w>],
    pub(super) by_custom: &'s HashMap<String, usize>,
    pub(super) submissions: &'s mut u64,
    /// The batches recorded, in order.
    pub(super) recorded: Vec<Submitted>,
    /// What the user should hear.
    pub(super) notices: Vec<String>,
}

impl RunRecorder<'_, '_> {
    /// `(custom_id, unit_id)` of the requests `custom_ids`.
    fn requests(&self, custom_ids: &[String]) -> Vec<(String, String)> {
        custom_ids
            .iter()
            .filter_map(|c| {
                self.by_custom
                    .get(c.as_str())
                    .map(|&i| (c.clone(), self.work[i].id().to_string()))
            })
            .collect()
    }

    fn failed(&mut self, e: &crate::store::StoreError) -> String {
        self.failure.get_or_insert(e.to_string());
        e.to_string()
    }
}

impl Recorder for RunRecorder<'_, '_> {
    fn intend(&mut self, custom_ids: &[String]) -> Result<SubmissionTag, String> {
        *self.submissions += 1;
        let tag = SubmissionTag {
            run: self.run.to_string(),
            token: new_token(*self.submissions),
        };
        let requests = self.requests(custom_ids);
        let intent = NewBatchIntent {
            token: &tag.token,
            provider: self.provider,
            server: &self.server,
            phase: self.phase,
            requests: &requests,
        };
        match self.store.record_batch_intent(self.run, &intent) {
            Ok(()) => Ok(tag),
            Err(e) => Err(self.failed(&e)),
        }
    }

    fn record(&mut self, submitted: &Submitted, tag: &SubmissionTag) -> Result<(), String> {
        let requests = self.requests(&submitted.custom_ids);
        let batch = NewBatchSubmission {
            state: &submitted.state,
            provider: self.provider,
            server: &self.server,
            phase: self.phase,
            requests: &requests,
            token: Some(&tag.token),
        };
        if let Err(e) = self.store.record_batch_submission(self.run, &batch) {
            return Err(self.failed(&e));
        }
        self.recorded.push(submitted.clone());
        Ok(())
    }

    fn void(&mut self, tag: &SubmissionTag) {
        if let Err(e) = self.store.drop_batch_intent(self.run, &tag.token) {
            // Left in the store, the intent is looked for at the next resume: harmless.
            tracing::debug!("the run store could not drop an intent: {e}");
        }
    }

    fn known(&self) -> HashSet<String> {
        self.store.known_batch_ids().unwrap_or_default()
    }

    fn notice(&mut self, message: String) {
        self.notices.push(message);
    }
}
