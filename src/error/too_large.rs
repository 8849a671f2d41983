//! `TooLarge`: nothing can be sent, for every unit (or a job's item) is larger than the
//! model's context window.

use crate::escape;

/// Every unit, or an item of a job, is too large for the model: nothing is sent.
#[derive(Debug, thiserror::Error)]
pub enum TooLarge {
    /// Every unit of a run is blocked; the first is named with why, and how many more.
    #[error(
        "nothing can be sent: {}{}: {reason}",
        escape::name(first),
        match more { 0 => String::new(), n => format!(" (and {n} more)") }
    )]
    EveryUnit { first: String, reason: String, more: usize },
    /// An item of a job is larger than a phase's model's context window.
    #[error(
        "phase {number} ({phase}): item {} is about {tokens} tokens, more than the context window of {model} \
         ({window} tokens): no batch can carry it; leave it out of the input or trim its fields",
        escape::name(item)
    )]
    Item {
        number: usize,
        phase: String,
        item: String,
        tokens: u64,
        model: String,
        window: u64,
    },
}
