//! `CacheFailure`: the answer cache could not be read or made ready for writing, could not
//! take the answers a run kept, or (`--cache-only`) does not hold every answer. The I/O
//! error (whose message names the cache's path) is kept as the source; the variant says
//! what it stopped and what to do.

use std::path::PathBuf;

/// An input `--cache-only` would have to call for: its name and the start of its cache key.
#[derive(Debug, Clone)]
pub struct CacheMiss {
    pub label: String,
    pub key: String,
}

/// The answer cache failed a command before anything was called or paid for.
#[derive(Debug, thiserror::Error)]
pub enum CacheFailure {
    /// `--cache-only`, and some inputs are not in the cache: each is listed on a line.
    #[error(
        "--cache-only: {} of {inputs} inputs would miss the cache (nothing was called):{}",
        misses.len(),
        listed(misses)
    )]
    CacheOnlyMisses { misses: Vec<CacheMiss>, inputs: usize },
    /// A thread that read the cache ended without its answer.
    #[error("internal error: a cache reader thread failed (nothing was called)")]
    ReaderLost,
    /// The answers a run kept (in its directory) cannot be moved into the cache; `kept`
    /// says how many and where.
    #[error(
        "the cache cannot take the {kept} ({reason}): make room in {}, then run again (they stay kept, and are \
         never paid for twice); nothing was sent",
        cache.display()
    )]
    KeptUntaken {
        kept: String,
        reason: String,
        cache: PathBuf,
    },
    /// The cache could not be made ready for writing; the message names the cache.
    #[error(transparent)]
    Unprepared(std::io::Error),
    /// A resume pays for answers only once the cache can keep them.
    #[error("{0}: the cache must be writable before anything is paid for")]
    UnwritableBeforePaying(#[source] std::io::Error),
    /// An entry could not be read.
    #[error("{0}: fix its permissions, or pass --no-cache (nothing was called)")]
    Unreadable(#[source] std::io::Error),
}

/// The misses of `--cache-only`, one indented line each.
fn listed(misses: &[CacheMiss]) -> String {
    misses
        .iter()
        .map(|m| format!("\n  {} (key {})", crate::escape::name(&m.label), m.key))
        .collect()
}
