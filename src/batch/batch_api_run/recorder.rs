//! The run store's side of a phase's submissions ([`RunRecorder`]): each intent written before
//! its create request is sent, each batch (with its requests' unit ids) once it exists.

use std::collections::HashSet;

use crate::provider::batch_api::{new_token, Recorder, SubmissionTag, Submitted};
use crate::store::{NewBatchIntent, NewBatchSubmission, RunId, TaskStore};

/// The run store's side of a phase's submissions: each intent written before its create
/// request is sent, each batch (with its requests' unit ids) once it exists, settling the
/// intent in the same transaction.
///
/// Whoever submits — a batch run's phase, a job's phase — says through `request` which
/// unit and cache key a custom id (as stamped for a submission) stands for.
pub struct RunRecorder<'s> {
    pub store: &'s mut TaskStore,
    pub run: &'s RunId,
    /// The first failure to write the store.
    pub failure: &'s mut Option<String>,
    pub provider: &'static str,
    pub server: String,
    /// What the requests are (`map`, `aggregate`, a job's phase…), as the store records it.
    pub phase: &'s str,
    /// `(unit_id, cache_key)` of the request a stamped custom id names.
    pub request: &'s dyn Fn(&str) -> Option<(String, String)>,
    pub submissions: &'s mut u64,
    /// The batches recorded, in order.
    pub recorded: Vec<Submitted>,
    /// What the user should hear.
    pub notices: Vec<String>,
}

impl RunRecorder<'_> {
    /// `(custom_id, unit_id)` of the requests `custom_ids` (as stamped for a submission).
    fn requests(&self, custom_ids: &[String]) -> Vec<(String, String)> {
        custom_ids
            .iter()
            .filter_map(|c| (self.request)(c).map(|(unit, _)| (c.clone(), unit)))
            .collect()
    }

    fn failed(&mut self, e: &crate::store::StoreError) -> String {
        self.failure.get_or_insert(e.to_string());
        e.to_string()
    }
}

impl Recorder for RunRecorder<'_> {
    fn tag(&mut self) -> SubmissionTag {
        *self.submissions += 1;
        SubmissionTag {
            run: self.run.to_string(),
            token: new_token(*self.submissions),
        }
    }

    fn intend(&mut self, tag: &SubmissionTag, custom_ids: &[String]) -> Result<(), String> {
        let requests = self.requests(custom_ids);
        let keys: Vec<(String, String)> = custom_ids
            .iter()
            .filter_map(|c| (self.request)(c).map(|(_, key)| (c.clone(), key)))
            .collect();
        let intent = NewBatchIntent {
            token: &tag.token,
            provider: self.provider,
            server: &self.server,
            phase: self.phase,
            requests: &requests,
            keys: &keys,
        };
        match self.store.record_batch_intent(self.run, &intent) {
            Ok(()) => Ok(()),
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

    fn known(&mut self) -> HashSet<String> {
        match self.store.known_batch_ids() {
            Ok(known) => known,
            Err(e) => {
                // Only spares reading results: a batch of another submission never carries
                // this one's token, so an empty set still takes no batch that is not it.
                self.notices.push(format!(
                    "the run store could not list the batches it knows ({e}): each candidate's results tell"
                ));
                HashSet::new()
            }
        }
    }

    fn notice(&mut self, message: String) {
        self.notices.push(message);
    }
}
