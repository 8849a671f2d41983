//! `rlm cancel`: every batch of the run not collected yet, whatever its phase, is canceled at
//! the provider first ([`BatchApiRun::cancel_all`]), then collected as any batch (what had
//! finished is kept); nothing is submitted and no model is called. Under `--forget`, a batch
//! that cannot be reached is given up instead. While another rlm waits for the run's batches,
//! they are only canceled at the provider ([`cancel_at_provider`]) and that rlm collects them.

use super::host::Stage;
use super::BatchApiRun;
use crate::error::{ConfigFailure, InUse, LockHolder, ProviderFailure, RlmError};
use crate::exec::Event;
use crate::printer::Printer;
use crate::provider::batch_api::{BatchApi, BatchError};
use crate::provider::ErrorKind;
use crate::settings::BatchSettings;
use crate::store::{RequestOutcome, RunId, TaskStore};

use super::delivery::client;

/// `rlm cancel` while another rlm (`holder`) waits for the run's batches: each is canceled
/// at the provider and the cancel recorded; the waiting rlm sees it at its next poll and
/// collects what had finished.
pub async fn cancel_at_provider(
    settings: &BatchSettings,
    run: &RunId,
    batches: &[String],
    holder: LockHolder,
    printer: &Printer,
) -> Result<(), RlmError> {
    if settings.exec.batch_api.forget {
        return Err(InUse::CollectedElsewhere {
            run: run.clone(),
            holder,
        }
        .into());
    }
    let model = settings.provider.model.as_deref().unwrap_or("unknown");
    let api = client(settings, model).map_err(ConfigFailure::BatchApi)?;
    let mut store = TaskStore::open(&settings.rlm_dir())?;
    let asked = cancel_each(api.as_ref(), &mut store, run, batches, printer).await?;
    printer.banner(&format!(
        "rlm: asked {} to cancel {asked} of the {} {} of run {run}; {holder} waits for them and collects what had \
         finished",
        api.server(),
        batches.len(),
        if batches.len() == 1 { "batch" } else { "batches" },
    ));
    Ok(())
}

/// Asks `api` to cancel each of `batches` of `run`, recording each cancel asked for in the
/// store (whoever collects the batch then knows it was canceled). A batch whose cancel the
/// provider refuses as a request (most likely over already) is said and left to be
/// collected as it is; a fault, or a refusal of the key, ends it. Returns how many were
/// asked.
pub async fn cancel_each(
    api: &dyn BatchApi,
    store: &mut TaskStore,
    run: &RunId,
    batches: &[String],
    printer: &Printer,
) -> Result<usize, RlmError> {
    let mut asked = 0;
    for batch_id in batches {
        match api.cancel(batch_id).await {
            Ok(_) => {
                asked += 1;
                if let Err(e) = store.record_batch_cancel_requested(run, batch_id) {
                    printer.warn(&format!("the run store could not record the cancel of {batch_id}: {e}"));
                }
            }
            Err(e @ BatchError::Call { .. }) if !e.is_retryable() && !is_refusal_of_us(&e) => {
                // Most likely over already: its results are collected as they are.
                printer.warn(&format!("batch {batch_id}: {e}"));
            }
            Err(source) => {
                return Err(ProviderFailure::Cancel {
                    batch: batch_id.clone(),
                    source,
                }
                .into())
            }
        }
    }
    Ok(asked)
}

/// A refusal of the key or the account (not of the request).
fn is_refusal_of_us(e: &BatchError) -> bool {
    matches!(e, BatchError::Call { error, .. } if error.kind == ErrorKind::Fatal)
}

/// What `rlm cancel` did, for its last line.
#[derive(Debug, Default, Clone)]
pub struct CancelSummary {
    /// Batches canceled (by this cancel, or an earlier one that asked).
    pub batches: usize,
    /// Batches whose cancel the provider refused (most likely already ended): collected as
    /// they are.
    pub not_canceled: Vec<String>,
    /// Given up without a cancel (`--forget`).
    pub forgotten: usize,
    pub kept: usize,
    pub not_run: usize,
}

/// The end of `rlm cancel`: its last line, and whether a batch may still run, and bill,
/// because rlm cannot tell which it is (exit 1).
#[derive(Debug, Clone)]
pub struct CancelEnd {
    pub line: String,
    pub unresolved: bool,
}

impl BatchApiRun {
    /// `rlm cancel`: what it did.
    pub fn cancel_end(&self) -> Option<CancelEnd> {
        if !self.cancel || self.refused {
            // A batch that could not be reached: the run's own status says so.
            return None;
        }
        let c = &self.cancel_summary;
        let run = &self.run;
        let server = self.api.server();
        let forgotten = match c.forgotten {
            0 => String::new(),
            1 => " and 1 given up (--forget)".to_string(),
            n => format!(" and {n} given up (--forget)"),
        };
        let not_canceled = match c.not_canceled.as_slice() {
            [] => String::new(),
            [one] => format!(" (batch {one} was not: it had already ended, and is collected as it is)"),
            many => format!(
                " (batches {} were not: they had already ended, and are collected as they are)",
                many.join(", ")
            ),
        };
        let kept = format!(
            "{} finished {} kept (cached, result files written)",
            c.kept,
            if c.kept == 1 { "answer" } else { "answers" },
        );
        if !self.unresolved.is_empty() {
            // A submission whose reply was lost, and whose batch cannot be told: it may
            // run, and bill, and a batch that may be another's is not rlm's to cancel.
            let candidates: Vec<&str> = self.unresolved.iter().flatten().map(String::as_str).collect();
            let which = match candidates.as_slice() {
                [] => format!(
                    "rlm cannot tell whether {server} created a batch for it, so it canceled nothing for it: a batch \
                     may still run and bill"
                ),
                [one] => format!(
                    "batch {one} at {server} may be it: rlm cannot tell whether it is the run's, so it did not cancel \
                     it, and it may still run and bill"
                ),
                many => format!(
                    "batches {} at {server} may be it: rlm cannot tell which is the run's, so it canceled none of \
                     them, and one may still run and bill",
                    many.join(", ")
                ),
            };
            let done = match c.batches {
                0 => String::new(),
                1 => format!("1 batch canceled{not_canceled}{forgotten}; "),
                n => format!("{n} batches canceled{not_canceled}{forgotten}; "),
            };
            return Some(CancelEnd {
                line: format!(
                    "rlm: run {run}: {done}{kept}; the reply to a submission of the run was lost, and {which}; \
                     `rlm cancel {run}` again once the batches have ended tells (their results name the run's \
                     requests), or `rlm cancel {run} --forget` gives the submission up"
                ),
                unresolved: true,
            });
        }
        Some(CancelEnd {
            line: format!(
                "rlm: run {run}: {} {} canceled at {server}{not_canceled}{forgotten}; {kept}, {} not run \
                 (`rlm resume {run}` sends {})",
                c.batches,
                if c.batches == 1 { "batch" } else { "batches" },
                c.not_run,
                if c.not_run == 1 { "it" } else { "them" },
            ),
            unresolved: false,
        })
    }

    /// `rlm cancel`: asks the provider to cancel every batch of the run not collected yet,
    /// whatever its phase, before anything is collected (so none keeps running, and billed,
    /// whatever happens next). Under `--forget`, a batch recorded at another server, or one
    /// the server does not know, is given up instead.
    pub(super) async fn cancel_all(&mut self, exec: &mut impl Stage) {
        let server = self.api.server().to_string();
        let mut kept = Vec::with_capacity(self.earlier.len());
        for mut e in std::mem::take(&mut self.earlier) {
            let custom_ids: Vec<String> = e.requests.iter().map(|(c, _)| c.clone()).collect();
            if e.server != server {
                // Only under `--forget` (`start` refused it otherwise).
                let why = format!("it was recorded at {}, and the settings point at {server}", e.server);
                self.give_up(exec, &e.batch_id, &custom_ids, &why);
                continue;
            }
            if e.cancel_requested {
                self.cancel_summary.batches += 1;
            } else {
                match self.api.cancel(&e.batch_id).await {
                    Ok(state) => {
                        self.store_write(|s, run| s.record_batch_cancel_requested(run, &state.batch_id));
                        e.cancel_requested = true;
                        self.cancel_summary.batches += 1;
                        self.printer
                            .progress(&format!("rlm: asked {server} to cancel batch {}", e.batch_id));
                    }
                    Err(err @ BatchError::UnknownBatch { .. }) if self.forget => {
                        self.give_up(exec, &e.batch_id, &custom_ids, &err.to_string());
                        continue;
                    }
                    // Already over, or unknown (the poll says which): its results are
                    // collected as they are.
                    Err(err) => {
                        exec.emit(Event::Warning {
                            message: format!(
                                "batch {}: the cancel was refused ({err}); collecting what it has",
                                e.batch_id
                            ),
                        });
                        self.cancel_summary.not_canceled.push(e.batch_id.clone());
                    }
                }
            }
            kept.push(e);
        }
        self.earlier = kept;
    }

    /// `rlm cancel --forget`: batch `batch_id` is given up without being collected (its
    /// requests recorded `canceled`, the batch collected): `rlm resume` sends them again.
    pub(super) fn give_up(&mut self, exec: &mut impl Stage, batch_id: &str, custom_ids: &[String], why: &str) {
        exec.emit(Event::Warning {
            message: format!(
                "batch {batch_id} given up (rlm cancel --forget: {why}); it was not canceled, so if it still runs at \
                 its provider it is billed there"
            ),
        });
        let reason = format!("given up by rlm cancel --forget: {why}");
        let rows: Vec<RequestOutcome<'_>> = custom_ids
            .iter()
            .map(|c| RequestOutcome {
                custom_id: c,
                outcome: "canceled",
                reason: Some(&reason),
            })
            .collect();
        self.store_write(|s, run| s.record_batch_outcomes(run, batch_id, &rows));
        self.store_write(|s, run| s.record_batch_collected(run, batch_id));
        self.cancel_summary.forgotten += 1;
    }
}
