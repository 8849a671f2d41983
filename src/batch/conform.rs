//! `--schema`: an answer must be JSON valid against the user's schema. An invalid one is
//! asked for once more, quoting the errors; a second invalid answer fails the unit and is
//! kept in the run directory (`*.rejected.md`), never cached.
//!
//! Only `--schema` (which the user asked for) fails a unit for its format: an analyst's
//! answer that is not the findings JSON it was asked for is kept as text, with a warning
//! (see [`crate::answer`]).

use super::job::{call, JobContext, JobFailure, JobOutcome};
use crate::provider::CompletionRequest;
use crate::schema::{self, OutputSchema};
use crate::unit::WorkUnit;

/// Keeps an accepted answer in canonical form; asks once more, with the errors, when it is
/// not; fails the unit when the second answer is not either.
pub(super) async fn conform(
    ctx: &JobContext,
    schema: &OutputSchema,
    request: &CompletionRequest,
    unit: &WorkUnit,
    mut outcome: JobOutcome,
) -> JobOutcome {
    let Some(first) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    let rejection = match schema.check(&first) {
        Ok(value) => {
            outcome.text = Some(schema::canonical_text(&value));
            return outcome;
        }
        Err(r) => r,
    };
    tracing::debug!(unit = %unit.label, reason = %rejection.first(), "answer rejected: asking again");
    let again = CompletionRequest {
        user: schema.retry_message(&request.user, &first, &rejection),
        ..request.clone()
    };
    let first_usage = outcome.usage;
    let first_attempts = outcome.attempts;
    outcome.text = None;
    // The second call queues for a slot of its own.
    outcome.slot = None;
    let place = ctx.call.limiter.place();
    let mut outcome = call(ctx, &again, (&unit.id, &unit.label), outcome, place).await;
    outcome.usage.add(first_usage);
    outcome.attempts += first_attempts;
    let Some(second) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    match schema.check(&second) {
        Ok(value) => outcome.text = Some(schema::canonical_text(&value)),
        Err(rejection) => {
            let kept = rejected_name(&unit.result_name);
            let saved = ctx.run_dir.write(&kept, &second).is_ok();
            outcome.text = None;
            let mut reason = format!(
                "the answer does not conform to --schema {} after one retry: {}",
                schema.path.display(),
                rejection.first()
            );
            if saved {
                reason.push_str(&format!(" (the answer is in {kept})"));
            }
            outcome.failure = Some(JobFailure::Unit { kind: None, reason });
        }
    }
    outcome
}

/// Where a rejected answer is kept: `x.ts.result.md` → `x.ts.rejected.md`.
fn rejected_name(result_name: &str) -> String {
    let stem = result_name.strip_suffix(".result.md").unwrap_or(result_name);
    format!("{stem}.rejected.md")
}
