//! Whether a unit's answer is what was asked for — valid against `--schema`, or JSON when
//! the analyst asked for JSON — with one more call, quoting the errors, when it is not.

use std::time::Instant;

use super::job::{call, JobContext, JobFailure, JobOutcome};
use crate::content::AnswerFormat;
use crate::provider::CompletionRequest;
use crate::schema::{self, OutputSchema};
use crate::unit::WorkUnit;

/// What a unit's answer must be: valid against `--schema`, or — for an analyst that asked
/// for JSON (the findings schema, or JSON the user's prompt asked for) — JSON at all.
#[derive(Clone, Copy)]
pub(super) enum Expect<'a> {
    Schema(&'a OutputSchema),
    Json,
}

impl<'a> Expect<'a> {
    /// What `unit`'s answer must be, if anything: `--schema` for every unit; JSON for an
    /// analyst that asked for it. A batch's answer is not checked: it is split per file,
    /// from JSON or from Markdown sections.
    pub(super) fn for_unit(ctx: &'a JobContext, unit: &WorkUnit) -> Option<Expect<'a>> {
        match (&ctx.schema, unit.content.as_deref()) {
            (Some(schema), _) => Some(Expect::Schema(schema)),
            (None, Some(c)) if c.members.is_empty() && AnswerFormat::of(&ctx.keys.sub_prompt).is_json() => {
                Some(Expect::Json)
            }
            _ => None,
        }
    }

    /// What to keep of an accepted answer (`--schema`: its canonical JSON), or why not.
    fn check(self, answer: &str) -> Result<String, schema::Rejection> {
        match self {
            Expect::Schema(s) => s.check(answer).map(|v| schema::canonical_text(&v)),
            Expect::Json => schema::extract_json(answer)
                .map(|_| answer.to_string())
                .map_err(schema::Rejection::NotJson),
        }
    }

    /// The user message of the second attempt.
    fn retry_message(self, user: &str, answer: &str, rejection: &schema::Rejection) -> String {
        match self {
            Expect::Schema(s) => s.retry_message(user, answer, rejection),
            Expect::Json => schema::json_retry_message(user, answer, rejection),
        }
    }

    /// Why the unit failed after the second attempt.
    fn failure(self, rejection: &schema::Rejection) -> String {
        match self {
            Expect::Schema(s) => format!(
                "the answer does not conform to --schema {} after one retry: {}",
                s.path.display(),
                rejection.first()
            ),
            Expect::Json => format!("the analyst asked for JSON; after one retry {}", rejection.first()),
        }
    }
}

/// Keeps an accepted answer (in canonical form under `--schema`); asks once more, with
/// the errors, when it is not; fails the unit when the second answer is not either. A
/// rejected answer is kept in the run directory (`*.rejected.md`), never cached.
pub(super) async fn conform(
    ctx: &JobContext,
    expect: Expect<'_>,
    request: &CompletionRequest,
    unit: &WorkUnit,
    mut outcome: JobOutcome,
    started: Instant,
) -> JobOutcome {
    let Some(first) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    let rejection = match expect.check(&first) {
        Ok(text) => {
            outcome.text = Some(text);
            return outcome;
        }
        Err(r) => r,
    };
    tracing::debug!(unit = %unit.label, reason = %rejection.first(), "answer rejected: asking again");
    let again = CompletionRequest {
        user: expect.retry_message(&request.user, &first, &rejection),
        ..request.clone()
    };
    let first_usage = outcome.usage;
    let first_attempts = outcome.attempts;
    outcome.text = None;
    let place = ctx.call.limiter.place();
    let mut outcome = call(ctx, &again, (&unit.id, &unit.label), outcome, started, place).await;
    outcome.usage.add(first_usage);
    outcome.attempts += first_attempts;
    let Some(second) = outcome.text.clone().filter(|_| outcome.failure.is_none()) else {
        return outcome;
    };
    match expect.check(&second) {
        Ok(text) => outcome.text = Some(text),
        Err(rejection) => {
            let kept = rejected_name(&unit.result_name);
            let saved = ctx.run_dir.write(&kept, &second).is_ok();
            outcome.text = None;
            let mut reason = expect.failure(&rejection);
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
