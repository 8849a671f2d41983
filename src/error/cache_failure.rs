//! `CacheFailure`: the answer cache could not be read or made ready for writing. The I/O
//! error (whose message names the cache's path) is kept as the source; the variant says
//! what it stopped and what to do.

/// The answer cache failed a command before anything was called or paid for.
#[derive(Debug, thiserror::Error)]
pub enum CacheFailure {
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
