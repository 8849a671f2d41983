//! A batch run's lost submissions: those of earlier attempts (their intents still in the run
//! store) settled before anything is sent, and one lost in this attempt settled before its
//! requests go again — each by [`crate::batch::lost_submission`], the one way every path
//! settles them, with the run's events and waits; under `rlm cancel --forget`, what cannot
//! be told is given up.

use tokio::time::Instant;

use super::host::Stage;
use super::{BatchApiRun, Earlier};
use crate::batch::execution::Pause;
use crate::batch::lost_submission::{Host, Settle};
pub(super) use crate::batch::lost_submission::{Lost, Settled};
use crate::exec::Event;

impl BatchApiRun {
    /// The submissions of earlier attempts whose batch was never recorded (killed between
    /// the create request and its reply, or the reply lost), each settled before anything
    /// is sent (see the module doc). Runs once, before anything is sent; each batch found
    /// joins the store's known batches before the next intent is looked for.
    pub(super) async fn reconcile_intents(&mut self, exec: &mut impl Stage) {
        for intent in std::mem::take(&mut self.intents) {
            let requests = match self.store.batch_intent_requests(&self.run, &intent.token) {
                Ok(requests) => requests,
                Err(e) => {
                    self.printer.warn(&format!(
                        "the run store could not read submission {}: {e}",
                        intent.token
                    ));
                    continue;
                }
            };
            if intent.server != self.api.server() {
                // Only under `--forget` (`start` refused it otherwise).
                exec.emit(Event::Warning {
                    message: format!(
                        "submission {} of {} requests given up (rlm cancel --forget): it was sent to {}, and the \
                         settings point at {}; if it created a batch there, that batch is billed there",
                        intent.token,
                        intent.request_count,
                        intent.server,
                        self.api.server()
                    ),
                });
                self.store_write(|s, run| s.drop_batch_intent(run, &intent.token));
                continue;
            }
            let lost = Lost {
                token: &intent.token,
                recorded_at_ms: intent.recorded_at.as_millis(),
                requests: &requests,
                phase: &intent.phase,
                what: format!(
                    "the reply to submission {} ({} requests, sent by an earlier attempt) was never recorded",
                    intent.token, intent.request_count
                ),
            };
            match self.settle(exec, &lost).await {
                Settled::Found(state) => {
                    for (_, unit) in &requests {
                        *self.sent.entry(crate::unit::UnitId::named(unit.as_str())).or_default() += 1;
                    }
                    self.recorded.push(state.batch_id.clone());
                    self.earlier.push(Earlier {
                        batch_id: state.batch_id,
                        phase: intent.phase,
                        server: intent.server,
                        requests,
                        cancel_requested: false,
                    });
                }
                Settled::NotCreated => {}
                Settled::Held { why, .. } => self.hold(&requests, &why),
            }
        }
    }

    /// Settles lost submission `lost` (see [`crate::batch::lost_submission`]); under
    /// `rlm cancel --forget`, what cannot be told is given up.
    pub(super) async fn settle(&mut self, exec: &mut impl Stage, lost: &Lost<'_>) -> Settled {
        let mut host = RunHost {
            exec,
            printer: &self.printer,
            store_failure: &mut self.store_failure,
        };
        let settled = Settle {
            api: self.api.as_ref(),
            store: &mut self.store,
            run: &self.run,
            schedule: &self.schedule,
            wait: !self.cancel,
        }
        .settle(&mut host, lost)
        .await;
        let Settled::Held { why, candidates } = settled else {
            return settled;
        };
        if self.forget {
            exec.emit(Event::Warning {
                message: format!(
                    "{why}; given up (rlm cancel --forget): if it created a batch, that batch is billed and nothing \
                     collects it"
                ),
            });
            self.store_write(|s, run| s.drop_batch_intent(run, lost.token));
            return Settled::NotCreated;
        }
        self.unresolved.push(candidates.clone());
        let (run, resume) = (&self.run, &self.resume);
        exec.emit(Event::Warning {
            message: format!(
                "{why}; its requests are not sent again (that could pay twice): `{resume}` looks again, `rlm cancel \
                 {run} --forget` gives the submission up"
            ),
        });
        Settled::Held { why, candidates }
    }

    /// Requests of a submission whose batch cannot be told yet: not sent, not run.
    pub(super) fn hold(&mut self, requests: &[(String, String)], why: &str) {
        let reason = format!("not run: {why} (`{}` looks for its batch again)", self.resume);
        for (_, unit) in requests {
            self.held.insert(unit.clone(), reason.clone());
        }
    }
}

/// The stage's side of a settle: its warnings are the run's events, its waits the run's.
struct RunHost<'a, S> {
    exec: &'a mut S,
    printer: &'a crate::printer::Printer,
    store_failure: &'a mut Option<String>,
}

impl<S: Stage> Host for RunHost<'_, S> {
    fn say(&mut self, message: String) {
        self.exec.emit(Event::Warning { message });
    }

    fn store_failed(&mut self, e: &crate::store::StoreError) {
        if self.store_failure.is_none() {
            self.printer.warn(&format!(
                "the run store could not record a batch ({e}); rlm status may not show it"
            ));
            *self.store_failure = Some(e.to_string());
        }
    }

    async fn pause(&mut self, until: Instant) -> Pause {
        self.exec.pause(until).await
    }
}
