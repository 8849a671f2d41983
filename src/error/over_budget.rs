//! `OverBudget`: the estimate is above `--max-cost` or one of the safety thresholds. The
//! amounts and the work that would spend them are kept, so a job's refusal is worded for a
//! job from the start rather than by rewriting a run's sentence.

use std::fmt;

/// Whether `spent` has reached `--max-cost` `max_cost`: the one test of every path (a run's
/// dispatcher, a job's). At the cap counts as reached, so the spend never passes it; a cap
/// of 0 is reached before anything is spent.
pub fn budget_reached(spent: f64, max_cost: f64) -> bool {
    spent >= max_cost && (spent > 0.0 || max_cost == 0.0)
}

/// What would spend the money: the refusal names it, and says how to make it smaller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spender {
    /// An `rlm batch` (or `rlm query`, `rlm merge`, `rlm resume`) run.
    Run,
    /// An `rlm job`, whose `--max-cost` caps the whole job's spend.
    Job,
}

impl Spender {
    /// How to make the work smaller.
    fn smaller(self) -> &'static str {
        match self {
            Spender::Run => "a more specific glob",
            Spender::Job => "fewer items (--limit, a smaller input)",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Spender::Run => "run",
            Spender::Job => "job",
        }
    }

    /// The command that goes on with the work.
    fn resume(self) -> &'static str {
        match self {
            Spender::Run => "rlm resume",
            Spender::Job => "rlm job resume",
        }
    }
}

/// The limit an estimate crossed, each with its way past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// `--max-cost`.
    MaxCost,
    /// The cap without `--max-cost`.
    Abort,
    /// The threshold above which rlm asks for `--force`.
    Force,
}

impl Threshold {
    fn way_past(self) -> &'static str {
        match self {
            Threshold::MaxCost => "raise --max-cost",
            Threshold::Abort => "pass --max-cost USD to allow it",
            Threshold::Force => "proceed anyway with --force",
        }
    }
}

/// The estimate exceeds `--max-cost` or a safety threshold: the work is refused; or the
/// spend reached `--max-cost` while the work ran: nothing more is dispatched.
#[derive(Debug, Clone)]
pub enum OverBudget {
    /// The estimate alone is above `limit`.
    Threshold {
        estimate: f64,
        limit: f64,
        threshold: Threshold,
        spender: Spender,
    },
    /// What the work spent before, and the rest estimated, are above `--max-cost` together.
    WithSpent {
        spent: f64,
        rest: f64,
        max_cost: f64,
        spender: Spender,
    },
    /// The spend so far (`spent_before` of it by earlier attempts) reached `max_cost` while
    /// the work ran: dispatching stopped.
    Reached {
        spent: f64,
        spent_before: f64,
        max_cost: f64,
        spender: Spender,
    },
}

impl std::error::Error for OverBudget {}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OverBudget::Threshold {
                estimate,
                limit,
                threshold,
                spender,
            } => {
                let (shown, limit) = crate::money::usd_pair(estimate, limit);
                write!(
                    f,
                    "Estimated cost ({shown}) exceeds safety threshold ({limit}). Options: {}; reduce scope with \
                     {}; use a cheaper model (--model haiku)",
                    threshold.way_past(),
                    spender.smaller()
                )
            }
            OverBudget::WithSpent {
                spent,
                rest,
                max_cost,
                spender,
            } => {
                let (total, limit) = crate::money::usd_pair(spent + rest, max_cost);
                write!(
                    f,
                    "the {} has spent {} and the rest is estimated at {}: {total} in all exceeds --max-cost \
                     ({limit}); resume with a higher --max-cost",
                    spender.name(),
                    crate::money::usd(spent),
                    crate::money::usd(rest)
                )
            }
            OverBudget::Reached {
                spent,
                spent_before,
                max_cost,
                spender,
            } => {
                let (shown, limit) = crate::money::usd_pair(spent, max_cost);
                let earlier = if spent_before > 0.0 {
                    format!(", {} of it before this resume", crate::money::usd(spent_before))
                } else {
                    String::new()
                };
                write!(
                    f,
                    "the cost so far ({shown}{earlier}) reached --max-cost ({limit}): dispatching stopped; calls in \
                     flight finish and are recorded ({} --max-cost with a higher budget goes on: finished answers are \
                     cached)",
                    spender.resume()
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_reached_at_the_cap_not_past_it() {
        assert!(budget_reached(0.05, 0.05), "at the cap: no more is spent");
        assert!(budget_reached(0.06, 0.05));
        assert!(!budget_reached(0.049, 0.05));
        assert!(budget_reached(0.0, 0.0), "a cap of 0 allows nothing");
        assert!(!budget_reached(0.0, 0.05));
    }

    #[test]
    fn a_job_is_told_to_take_fewer_items_and_what_it_spent() {
        let run = OverBudget::Threshold {
            estimate: 3.0,
            limit: 2.0,
            threshold: Threshold::MaxCost,
            spender: Spender::Run,
        };
        assert_eq!(
            run.to_string(),
            "Estimated cost ($3.00) exceeds safety threshold ($2.00). Options: raise --max-cost; reduce scope with a \
             more specific glob; use a cheaper model (--model haiku)"
        );
        let job = OverBudget::WithSpent {
            spent: 1.0,
            rest: 2.0,
            max_cost: 2.5,
            spender: Spender::Job,
        };
        assert!(job
            .to_string()
            .starts_with("the job has spent $1.00 and the rest is estimated at $2.00: $3.00"));
    }

    #[test]
    fn a_spend_that_reached_the_budget_is_told_how_to_go_on_with_the_work_it_stopped() {
        let job = OverBudget::Reached {
            spent: 0.000_123_4,
            spent_before: 0.0,
            max_cost: 0.0001,
            spender: Spender::Job,
        };
        assert_eq!(
            job.to_string(),
            "the cost so far ($0.000123) reached --max-cost ($0.0001): dispatching stopped; calls in flight finish \
             and are recorded (rlm job resume --max-cost with a higher budget goes on: finished answers are cached)"
        );
        let run = OverBudget::Reached {
            spent: 2.0,
            spent_before: 1.0,
            max_cost: 2.0,
            spender: Spender::Run,
        };
        assert!(run
            .to_string()
            .starts_with("the cost so far ($2.00, $1.00 of it before this resume) reached --max-cost ($2.00)"));
        assert!(run.to_string().contains("(rlm resume --max-cost with"));
    }
}
