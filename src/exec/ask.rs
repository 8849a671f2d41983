//! One answer asked for until it passes its check: the call (with its retries for faults
//! and rate limits, [`super::call_within_retries`]), the check, and a re-ask that carries
//! the errors, up to the caller's number of retries. Every answer is counted as it comes
//! (calls and tokens), a rejected one too: it was paid for.
//!
//! It is the one re-ask loop of rlm. `rlm batch --schema` asks once more, quoting the
//! answer it rejects; a job phase asks as often as its `retries`, never again for an answer
//! cut off at the output limit (the same request would be cut off again), and says each
//! re-ask aloud. What differs is data ([`AskPolicy`]) and the check ([`ReplyCheck`]), not a
//! second loop.
//!
//! The first call waits at the place its job took when it was dispatched; each re-ask
//! queues anew, after the slot of the answer it replaces is handed back, so a re-ask never
//! holds one slot while it waits for another.

use std::fmt::Write as _;
use std::time::Instant;

use super::call::call_within_retries;
use super::{CallContext, CallFailure, CallResult, Event, Place, Slot};
use crate::provider::{CompletionRequest, Usage};
use crate::unit::UnitId;

/// How many errors a re-ask quotes back to the model.
const MAX_QUOTED_ERRORS: usize = 20;

/// How much of a rejected answer a re-ask quotes back, in bytes.
const MAX_QUOTED_ANSWER: usize = 4000;

/// What a caller makes of an answer.
pub trait ReplyCheck: Send + Sync {
    /// What an accepted answer becomes (its canonical text, its JSON value).
    type Accepted: Send;

    /// The accepted form of `text`, or every error found in it.
    fn check(&self, text: &str) -> Result<Self::Accepted, Vec<String>>;

    /// Hears every call as it ends, before its answer is checked (to log it).
    fn called(&self, _request: &CompletionRequest, _result: &CallResult) {}
}

/// How one kind of answer is asked for again.
#[derive(Debug, Clone, Copy)]
pub struct AskPolicy {
    /// Answers asked for after the first one is rejected.
    pub retries: u32,
    /// An answer cut off at the output limit ends the asking unchecked
    /// ([`AskEnd::CutOff`]): the same request would be cut off again.
    pub stop_at_cut_off: bool,
    /// Each re-ask is said as a warning ([`Event::Warning`]), not only logged.
    pub announce_reasks: bool,
    /// How the re-ask's message reads.
    pub wording: ReaskWording,
    /// Fault retries of each call, when fewer than the run's `--retries` (`None`: the
    /// call context's): a job's batch whose provider batch sends spent part of them.
    pub fault_retries: Option<u32>,
}

/// The parts of a re-ask's message that differ between kinds of answers (see
/// [`reask_message`]).
#[derive(Debug, Clone, Copy)]
pub struct ReaskWording {
    /// What the answer failed, after "Your previous answer was rejected" (empty when the
    /// errors say it).
    pub because: &'static str,
    /// The rejected answer is quoted back (clipped): a short answer is easier to fix seen
    /// whole. A long one (a batch of items) is not: its errors name what to fix.
    pub quote_answer: bool,
    /// The last sentence: how to answer again.
    pub closing: &'static str,
}

/// Where the asking starts.
#[derive(Debug)]
pub enum Start {
    /// With a call, which waits at this place in the limiter's queue.
    Call(Place),
    /// With an answer already paid for (a provider batch's result), checked first.
    Answered { text: String, truncated: bool },
    /// With an answer already paid for and rejected: the first call is its re-ask, and
    /// waits at `place`.
    Rejected {
        text: String,
        errors: Vec<String>,
        place: Place,
    },
}

/// How the asking ended.
#[derive(Debug)]
pub enum AskEnd<A> {
    /// An answer passed the check.
    Accepted(A),
    /// The retries are spent: the last answer, and what was wrong with it.
    Rejected { text: String, errors: Vec<String> },
    /// The last answer was cut off at the output limit, and the policy asks no more.
    CutOff { text: String },
    /// A call failed (its own retries spent, the run stopped, the provider refused).
    Failed(CallFailure),
}

/// The end of the asking, and what it paid for.
#[derive(Debug)]
pub struct Asked<A> {
    pub end: AskEnd<A>,
    /// Model requests sent (fault retries and re-asks included).
    pub calls: u32,
    /// What every answer of these calls used, the rejected ones included.
    pub usage: Usage,
    /// What the last answer's call used (nothing for an answer given at the start).
    pub last_usage: Usage,
    /// Answers read: the one given at the start, if any, and each call's.
    pub answers: u32,
    /// Re-asks made (or tried: a re-ask whose call failed counts).
    pub reasked: u32,
    /// The last answer was cut off at the output limit.
    pub truncated: bool,
    /// When the first call got its slot and was sent (`None`: no call was sent).
    pub dispatched: Option<Instant>,
    /// The last call's slot, still held when its answer came (see [`CallResult::slot`]).
    pub slot: Option<Slot>,
}

/// Asks for `request`'s answer until one passes `check`, the policy's retries are spent, or
/// a call fails. A re-ask is `request` with [`reask_message`] as its user message.
pub async fn ask<C: ReplyCheck>(
    ctx: &CallContext,
    request: &CompletionRequest,
    (unit, label): (&UnitId, &str),
    start: Start,
    check: &C,
    policy: &AskPolicy,
) -> Asked<C::Accepted> {
    /// What the next step reads: a call to make, or an answer (checked or not) in hand.
    enum Next {
        Call(Option<Place>),
        Answer { text: String, truncated: bool },
        Rejected { text: String, errors: Vec<String> },
    }
    let mut asked = Asked {
        end: AskEnd::Failed(CallFailure::Halted),
        calls: 0,
        usage: Usage::default(),
        last_usage: Usage::default(),
        answers: 0,
        reasked: 0,
        truncated: false,
        dispatched: None,
        slot: None,
    };
    let mut sent: Option<CompletionRequest> = None;
    let mut next_place = None;
    let mut next = match start {
        Start::Call(place) => Next::Call(Some(place)),
        Start::Answered { text, truncated } => Next::Answer { text, truncated },
        Start::Rejected { text, errors, place } => {
            next_place = Some(place);
            asked.answers = 1;
            Next::Rejected { text, errors }
        }
    };
    asked.end = loop {
        next = match next {
            Next::Call(place) => {
                let place = place.unwrap_or_else(|| ctx.limiter.place());
                let sending = sent.as_ref().unwrap_or(request);
                let retries = policy.fault_retries.unwrap_or(ctx.policy.retries);
                let result = call_within_retries(ctx, sending, unit, label, place, retries).await;
                check.called(sending, &result);
                asked.calls += result.attempts;
                asked.dispatched = asked.dispatched.or(result.dispatched);
                match result.outcome {
                    Ok(completion) => {
                        asked.usage.add(completion.usage);
                        asked.last_usage = completion.usage;
                        asked.slot = result.slot;
                        Next::Answer {
                            text: completion.text,
                            truncated: completion.truncated,
                        }
                    }
                    Err(failure) => break AskEnd::Failed(failure),
                }
            }
            Next::Answer { text, truncated } => {
                asked.answers += 1;
                asked.truncated = truncated;
                if truncated && policy.stop_at_cut_off {
                    break AskEnd::CutOff { text };
                }
                match check.check(&text) {
                    Ok(accepted) => break AskEnd::Accepted(accepted),
                    Err(errors) => Next::Rejected { text, errors },
                }
            }
            Next::Rejected { text, errors } => {
                if asked.answers > policy.retries {
                    break AskEnd::Rejected { text, errors };
                }
                asked.reasked += 1;
                tracing::debug!(unit = %label, errors = errors.len(), "answer rejected: asking again");
                if policy.announce_reasks {
                    let _ = ctx.events.send(Event::Warning {
                        message: format!(
                            "{label}: answer rejected ({} error{}), asking again",
                            errors.len(),
                            if errors.len() == 1 { "" } else { "s" }
                        ),
                    });
                }
                sent = Some(CompletionRequest {
                    user: reask_message(&request.user, &text, &errors, &policy.wording),
                    ..request.clone()
                });
                // The rejected answer's slot is handed back before the re-ask queues.
                asked.slot = None;
                Next::Call(next_place.take())
            }
        };
    };
    asked
}

/// The user message of a re-ask: the original message, then what was wrong with the
/// previous answer (at most [`MAX_QUOTED_ERRORS`] errors), the answer itself when the
/// wording quotes it, and how to answer again.
pub fn reask_message(user: &str, answer: &str, errors: &[String], wording: &ReaskWording) -> String {
    let mut message = format!("{user}\n\nYour previous answer was rejected{}:\n", wording.because);
    for error in errors.iter().take(MAX_QUOTED_ERRORS) {
        let _ = writeln!(message, "- {error}");
    }
    let more = errors.len().saturating_sub(MAX_QUOTED_ERRORS);
    if more > 0 {
        let _ = writeln!(message, "- and {more} more");
    }
    if wording.quote_answer {
        let _ = write!(message, "\nThe rejected answer was:\n{}\n\n", clip(answer));
    }
    message.push_str(wording.closing);
    message.push('\n');
    message
}

/// An answer as quoted back to the model: at most [`MAX_QUOTED_ANSWER`] bytes.
fn clip(answer: &str) -> String {
    let mut answer = answer.trim().to_string();
    if answer.len() > MAX_QUOTED_ANSWER {
        let cut = (0..=MAX_QUOTED_ANSWER)
            .rev()
            .find(|i| answer.is_char_boundary(*i))
            .unwrap_or(0);
        answer.truncate(cut);
        answer.push_str(" …");
    }
    answer
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::exec::{Limiter, RetryPolicy};
    use crate::provider::{BoxFuture, CallError, Completion, Provider, ProviderKind};

    /// A provider that answers from a script, and keeps what it was sent.
    #[derive(Debug, Default)]
    struct Scripted {
        answers: Mutex<VecDeque<(&'static str, bool)>>,
        sent: Mutex<Vec<String>>,
    }

    impl Provider for Scripted {
        fn kind(&self) -> ProviderKind {
            ProviderKind::Openai
        }

        fn model(&self) -> &'static str {
            "scripted"
        }

        fn complete<'a>(&'a self, request: &'a CompletionRequest) -> BoxFuture<'a, Result<Completion, CallError>> {
            self.sent.lock().unwrap().push(request.user.clone());
            let (text, truncated) = self.answers.lock().unwrap().pop_front().unwrap_or(("", false));
            Box::pin(async move {
                Ok(Completion {
                    text: text.to_string(),
                    usage: Usage {
                        input_tokens: 10,
                        output_tokens: 1,
                        ..Usage::default()
                    },
                    stop_reason: None,
                    truncated,
                })
            })
        }
    }

    /// Accepts an answer that is a number, as that number.
    struct Number;

    impl ReplyCheck for Number {
        type Accepted = u32;

        fn check(&self, text: &str) -> Result<u32, Vec<String>> {
            text.trim()
                .parse()
                .map_err(|_| vec![format!("{text:?} is not a number")])
        }
    }

    const WORDING: ReaskWording = ReaskWording {
        because: " because it is not a number",
        quote_answer: true,
        closing: "Answer with a number.",
    };

    fn policy(retries: u32, stop_at_cut_off: bool) -> AskPolicy {
        AskPolicy {
            retries,
            stop_at_cut_off,
            announce_reasks: true,
            wording: WORDING,
            fault_retries: None,
        }
    }

    /// Asks the scripted provider, starting where `start` says (`None`: with a call), and
    /// returns the end and the user messages it was sent.
    async fn run(
        answers: &[(&'static str, bool)],
        start: Option<fn(Place) -> Start>,
        policy: AskPolicy,
    ) -> (Asked<u32>, Vec<String>) {
        let provider = Arc::new(Scripted {
            answers: Mutex::new(answers.iter().copied().collect()),
            ..Scripted::default()
        });
        let (events, _heard) = tokio::sync::mpsc::unbounded_channel();
        let retry = RetryPolicy {
            retries: 0,
            rate_limit_wait: Duration::from_secs(1),
            base: Duration::from_millis(1),
            max: Duration::from_millis(1),
        };
        let limiter = Limiter::new(1);
        let ctx = CallContext::new(provider.clone(), retry, limiter.clone(), events, "scripted".into());
        let request = CompletionRequest {
            user: "Count.".into(),
            ..CompletionRequest::default()
        };
        let start = start.unwrap_or(Start::Call)(limiter.place());
        let asked = ask(&ctx, &request, (&UnitId::named("u"), "u"), start, &Number, &policy).await;
        let sent = provider.sent.lock().unwrap().clone();
        (asked, sent)
    }

    #[tokio::test]
    async fn a_rejected_answer_is_asked_for_again_with_its_errors_and_every_answer_is_counted() {
        let (asked, sent) = run(
            &[("many", false), ("three", false), ("3", false)],
            None,
            policy(2, true),
        )
        .await;
        assert!(matches!(asked.end, AskEnd::Accepted(3)), "{:?}", asked.end);
        assert_eq!((asked.calls, asked.answers, asked.reasked), (3, 3, 2));
        assert_eq!(asked.usage.input_tokens, 30, "the rejected answers were paid for");
        assert_eq!(asked.last_usage.input_tokens, 10);
        assert!(
            asked.slot.is_some(),
            "the accepted answer's slot is handed to the caller"
        );
        assert_eq!(sent[0], "Count.");
        assert!(
            sent[2].starts_with("Count.\n\nYour previous answer was rejected because it is not a number:\n")
                && sent[2].contains("- \"three\" is not a number\n")
                && sent[2].contains("The rejected answer was:\nthree\n")
                && sent[2].ends_with("Answer with a number.\n"),
            "each re-ask carries the last answer's errors: {}",
            sent[2]
        );
    }

    #[tokio::test]
    async fn the_retries_bound_the_asking_and_the_last_answer_is_returned() {
        let (asked, sent) = run(&[("a", false), ("b", false), ("4", false)], None, policy(1, true)).await;
        match asked.end {
            AskEnd::Rejected { text, errors } => {
                assert_eq!(text, "b");
                assert_eq!(errors, ["\"b\" is not a number"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!((sent.len(), asked.calls, asked.answers), (2, 2, 2));
    }

    #[tokio::test]
    async fn a_cut_off_answer_is_not_asked_again_when_the_policy_says_so() {
        let (asked, sent) = run(&[("7", true), ("8", false)], None, policy(3, true)).await;
        assert!(
            matches!(asked.end, AskEnd::CutOff { ref text } if text == "7"),
            "{:?}",
            asked.end
        );
        assert!(asked.truncated);
        assert_eq!(sent.len(), 1);
        let (asked, sent) = run(&[("7", true)], None, policy(3, false)).await;
        assert!(matches!(asked.end, AskEnd::Accepted(7)), "checked like any answer");
        assert_eq!(sent.len(), 1);
    }

    #[tokio::test]
    async fn a_given_answer_is_checked_first_and_a_rejected_one_starts_at_its_reask() {
        let answered: fn(Place) -> Start = |_| Start::Answered {
            text: "5".into(),
            truncated: false,
        };
        let (asked, sent) = run(&[], Some(answered), policy(1, true)).await;
        assert!(matches!(asked.end, AskEnd::Accepted(5)));
        assert_eq!((sent.len(), asked.calls, asked.answers), (0, 0, 1));

        let rejected: fn(Place) -> Start = |place| Start::Rejected {
            text: "five".into(),
            errors: vec!["paid, and not a number".into()],
            place,
        };
        let (asked, sent) = run(&[("5", false)], Some(rejected), policy(1, true)).await;
        assert!(matches!(asked.end, AskEnd::Accepted(5)));
        assert_eq!((asked.calls, asked.answers, asked.reasked), (1, 2, 1));
        assert!(sent[0].contains("- paid, and not a number\n"), "{}", sent[0]);

        let (asked, sent) = run(&[], Some(rejected), policy(0, true)).await;
        assert!(matches!(asked.end, AskEnd::Rejected { .. }), "no retries: no call");
        assert!(sent.is_empty());
    }

    #[test]
    fn a_reask_quotes_at_most_twenty_errors_and_a_clipped_answer() {
        let errors: Vec<String> = (0..25).map(|i| format!("e{i}")).collect();
        let long = "x".repeat(5000);
        let message = reask_message("U", &long, &errors, &WORDING);
        assert!(
            message.contains("- e19\n- and 5 more\n") && !message.contains("e20"),
            "{message}"
        );
        assert!(message.contains(&format!("{} …\n", "x".repeat(4000))));
        let unquoted = ReaskWording {
            because: "",
            quote_answer: false,
            closing: "Again.",
        };
        assert_eq!(
            reask_message("U", "bad", &errors[..1], &unquoted),
            "U\n\nYour previous answer was rejected:\n- e0\nAgain.\n"
        );
    }
}
