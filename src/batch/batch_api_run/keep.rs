//! Keeping one succeeded batch result as a realtime answer is kept: the reply read against
//! the request it answers, an invalid `--schema` answer asked for once more in realtime, then
//! cached and its result files written ([`job::keep_paid`]).

use std::sync::Arc;

use tokio::time::Instant;

use super::phase::{Owned, Work};
use crate::batch::conform::{conform, Asking};
use crate::batch::job::{self, JobContext, JobOutcome};
use crate::exec::{Event, JobMeta, Start};
use crate::provider::batch_api::Reply;
use crate::request::{self, Expect};

/// Keeps one succeeded result as a realtime answer is kept: read against the request it
/// answers (rendered again: the same bytes), an invalid `--schema` answer asked for once
/// more in realtime (unless `may_call` is false: `rlm cancel` calls no model, and the
/// unit fails), then cached and written.
pub(super) async fn keep_result(
    ctx: Arc<JobContext>,
    work: Owned,
    reply: Reply,
    submitted: Instant,
    may_call: bool,
) -> JobOutcome {
    let waited = u64::try_from(submitted.elapsed().as_millis()).unwrap_or(u64::MAX);
    match work {
        Owned::Unit(unit) => {
            let meta = Work::Unit(&unit).meta();
            // (A file changed since the request was sent: its answer is kept, never asked
            // again from a request without it.)
            // The files are read again only when the request itself is wanted: to ask
            // again, or to log it.
            let schema = ctx.requests.schema.is_some() && request::expect_of(&unit, &ctx.requests) == Expect::Schema;
            let (rendered, whole) = if (schema && may_call) || ctx.trajectory.is_some() {
                request::render_planned(&unit, &ctx.requests)
            } else {
                (request::render_unread(&unit, &ctx.requests), false)
            };
            let mut outcome = answered(&ctx, meta, &reply, &rendered.request, waited);
            let schema = ctx
                .requests
                .schema
                .as_ref()
                .filter(|_| rendered.expect == Expect::Schema);
            if let Some((schema, text)) = schema.zip(outcome.text.clone()) {
                let start = Start::Answered {
                    text,
                    truncated: outcome.truncated,
                };
                outcome.text = None;
                outcome = conform(
                    &ctx,
                    schema,
                    &rendered.request,
                    &unit,
                    outcome,
                    start,
                    Asking {
                        may_reask: may_call && whole,
                        fault_retries: None,
                    },
                )
                .await;
                outcome.duration_ms = waited;
            }
            match outcome.text.take().filter(|_| outcome.failure.is_none()) {
                Some(text) => job::keep_paid(ctx, unit, rendered, text, outcome, None).await,
                None => outcome,
            }
        }
        Owned::Summary(summary) => {
            let meta = Work::Summary(&summary).meta();
            let call = request::render_summary(&summary.prompt, &ctx.requests);
            let mut outcome = answered(&ctx, meta, &reply, &call.request, waited);
            match outcome.text.take().filter(|_| outcome.failure.is_none()) {
                Some(text) => job::keep_summary(&ctx, call, &summary.label, text, outcome, None).await,
                None => outcome,
            }
        }
    }
}

/// A reply read as the realtime call's would be: its text (an empty one is a failure) and
/// its usage, at the batch price; logged to `--save-trajectory`.
fn answered(
    ctx: &JobContext,
    meta: JobMeta,
    reply: &Reply,
    request: &crate::provider::CompletionRequest,
    waited: u64,
) -> JobOutcome {
    let mut outcome = JobOutcome::new(meta);
    outcome.duration_ms = waited;
    outcome.batch_usage = reply.usage();
    let completion = reply.completion(request);
    if let Some(trajectory) = &ctx.trajectory {
        let (response, error) = match &completion {
            Ok(c) => (Some(c.text.as_str()), None),
            Err(e) => (None, Some(e.as_str())),
        };
        let warning = trajectory.record(&crate::batch::trajectory::CallRecord {
            unit: outcome.meta.unit.as_str(),
            label: &outcome.meta.label,
            model: &ctx.requests.model,
            request,
            response,
            error,
            usage: outcome.batch_usage,
            duration_ms: waited,
            attempts: 1,
        });
        if let Some(message) = warning {
            let _ = ctx.call.events.send(Event::Warning { message });
        }
    }
    match completion {
        Ok(c) if c.text.trim().is_empty() => outcome.failed(format!(
            "the model returned an empty answer (stop reason: {})",
            c.stop_reason.as_deref().unwrap_or("none")
        )),
        Ok(c) => {
            outcome.truncated = c.truncated;
            outcome.text = Some(c.text);
            outcome
        }
        Err(reason) => outcome.failed(format!("the batch result could not be read: {reason}")),
    }
}
