//! `--schema`: an answer must be JSON valid against the user's schema. An invalid one is
//! asked for once more, quoting it and its errors (through the one re-ask loop,
//! [`exec::ask`]); a second invalid answer fails the unit and is kept in the run directory
//! (`*.rejected.md`), never cached.
//!
//! Only `--schema` (which the user asked for) fails a unit for its format: an analyst's
//! answer that is not the findings JSON it was asked for is kept as text, with a warning
//! (see [`crate::answer`]).

use super::job::{record_call, unit_failure, JobContext, JobFailure, JobOutcome};
use crate::exec::{self, AskEnd, AskPolicy, CallResult, ReaskWording, ReplyCheck, Start};
use crate::provider::CompletionRequest;
use crate::schema::{self, OutputSchema};
use crate::unit::WorkUnit;

/// How a `--schema` answer is asked for: once more when it does not conform, with the
/// answer quoted (it is one value, short enough to fix seen whole). An answer cut off at the
/// output limit is checked as any other: what was cut may be only trailing text.
const SCHEMA_POLICY: AskPolicy = AskPolicy {
    retries: 1,
    stop_at_cut_off: false,
    announce_reasks: false,
    wording: ReaskWording {
        because: " because it does not conform to the JSON Schema",
        quote_answer: true,
        closing: "Answer again with only a JSON value that conforms to the schema.",
    },
    fault_retries: None,
};

/// A unit's answer read against `--schema`: its canonical text, or the schema's errors.
/// Each call is logged to `--save-trajectory` as `call` logs it.
struct SchemaReply<'a> {
    ctx: &'a JobContext,
    schema: &'a OutputSchema,
    unit: &'a WorkUnit,
}

impl ReplyCheck for SchemaReply<'_> {
    type Accepted = String;

    fn check(&self, text: &str) -> Result<String, Vec<String>> {
        match self.schema.check(text) {
            Ok(value) => Ok(schema::canonical_text(&value)),
            Err(rejection) => Err(rejection.into_errors()),
        }
    }

    fn called(&self, request: &CompletionRequest, result: &CallResult) {
        record_call(self.ctx, request, (&self.unit.id, &self.unit.label), result);
    }
}

/// How far asking for a `--schema` answer may go.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asking {
    /// A non-conforming answer may be asked for again.
    pub may_reask: bool,
    /// Fault retries of each call, when fewer than `--retries` (a provider batch's realtime
    /// fallback); `None`: `--retries`.
    pub fault_retries: Option<u32>,
}

/// Asks for `unit`'s answer from `start` (a call, or a provider batch's answer) and keeps
/// it in canonical form when it conforms; asks once more, with the errors, when it does not
/// and `asking.may_reask`; fails the unit when no answer conforms, keeping the last one.
pub(super) async fn conform(
    ctx: &JobContext,
    schema: &OutputSchema,
    request: &CompletionRequest,
    unit: &WorkUnit,
    mut outcome: JobOutcome,
    start: Start,
    asking: Asking,
) -> JobOutcome {
    let policy = AskPolicy {
        retries: if asking.may_reask { SCHEMA_POLICY.retries } else { 0 },
        fault_retries: asking.fault_retries,
        ..SCHEMA_POLICY
    };
    let reply = SchemaReply { ctx, schema, unit };
    let asked = exec::ask(&ctx.call, request, (&unit.id, &unit.label), start, &reply, &policy).await;
    outcome.attempts += asked.calls;
    outcome.usage.add(asked.usage);
    outcome.truncated = asked.truncated;
    outcome.slot = asked.slot;
    outcome.dispatched = outcome.dispatched.or(asked.dispatched);
    outcome.duration_ms = outcome.dispatched.map_or(0, |t| t.elapsed().as_millis() as u64);
    let (text, errors) = match asked.end {
        AskEnd::Accepted(text) => {
            outcome.text = Some(text);
            return outcome;
        }
        AskEnd::Failed(failure) => {
            outcome.failure = Some(unit_failure(failure));
            return outcome;
        }
        AskEnd::Rejected { text, errors } => (text, errors),
        AskEnd::CutOff { text } => (text, vec!["the answer was cut off at the output limit".into()]),
    };
    let kept = rejected_name(&unit.result_name);
    let saved = ctx.run_dir.write(&kept, &text).is_ok();
    let mut reason = if asked.reasked > 0 {
        format!(
            "the answer does not conform to --schema {} after one retry: {}",
            schema.path.display(),
            schema::first_error(&errors)
        )
    } else {
        format!(
            "the answer does not conform to --schema {}: {}; not asked again (rlm cancel calls no model; rlm \
             resume --failed asks again)",
            schema.path.display(),
            schema::first_error(&errors)
        )
    };
    if saved {
        reason.push_str(&format!(" (the answer is in {kept})"));
    }
    outcome.failure = Some(JobFailure::Unit { kind: None, reason });
    outcome
}

/// Where a rejected answer is kept: `x.ts.result.md` → `x.ts.rejected.md`.
fn rejected_name(result_name: &str) -> String {
    let stem = result_name.strip_suffix(".result.md").unwrap_or(result_name);
    format!("{stem}.rejected.md")
}
