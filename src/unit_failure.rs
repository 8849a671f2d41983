//! [`UnitFailure`]: a unit (or an input file) that failed for good, of which kind and why —
//! what the dispatcher keeps of a failure and the aggregate lists under "Failed files".

use crate::provider::ErrorKind;

/// One failure: the unit's label (its file's path for a whole file), its kind, and the
/// reason shown to the user (already scrubbed of secrets).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitFailure {
    pub unit: String,
    pub kind: FailureKind,
    pub reason: String,
}

/// The kinds of failure a run tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The input file could not be read: nothing was sent for it.
    Unreadable,
    /// Its call failed for good, of this kind (after the retries the kind allows); a
    /// [`ErrorKind::Timeout`] is the store's `timed_out`.
    Call(ErrorKind),
    /// It failed here, not at the provider: its answer did not conform to `--schema` or
    /// could not be kept, its request could not be made, it was not cached under
    /// `--cache-only`, or rlm met an internal error.
    Local,
}

impl FailureKind {
    /// The kind of a unit's failure from the call error it carried, if any.
    pub fn of_call(error: Option<ErrorKind>) -> FailureKind {
        error.map_or(FailureKind::Local, FailureKind::Call)
    }
}
