//! Error types and the exit codes they map to.
//!
//! Every error the user can see is one line that names the thing at fault and says what to
//! do; the exit code says which class of failure it was. The table is documented once, in
//! the README, and mirrored by [`ExitStatus`].

use std::path::PathBuf;

mod cache_failure;
mod config_failure;
mod declined;
mod env_failure;
mod flag_error;
mod in_use;
mod input_failure;
mod interrupted;
mod no_match;
mod output_failure;
mod over_budget;
mod provider_failure;
mod store_failure;
mod store_refusal;
mod system_failure;
mod too_large;

pub use cache_failure::{CacheFailure, CacheMiss};
pub use config_failure::ConfigFailure;
pub use declined::Declined;
pub use env_failure::{EnvBlame, EnvFailure, ShownValue};
pub use flag_error::FlagError;
pub use in_use::{InUse, LockHolder};
pub use input_failure::InputFailure;
pub use interrupted::Interrupted;
pub use no_match::NoMatch;
pub use output_failure::OutputFailure;
pub use over_budget::{budget_reached, OverBudget, Spender, Threshold};
pub use provider_failure::ProviderFailure;
pub use store_failure::StoreFailure;
pub use store_refusal::StoreRefusal;
pub use system_failure::SystemFailure;
pub use too_large::TooLarge;

/// The documented exit codes of `rlm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ExitStatus {
    /// Every unit succeeded.
    Success = 0,
    /// Some units failed, some succeeded (or answers were paid for but could not all be
    /// written: they are cached, and a rerun pays nothing for them).
    Partial = 1,
    /// Bad usage or bad input: nothing was sent to a model.
    Usage = 2,
    /// Nothing succeeded, or the provider refused us (authentication, quota, bad request).
    Failed = 3,
    /// Interrupted by Ctrl-C or SIGTERM.
    Interrupted = 130,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The class of an error that ended a command: the `kind` of the `--json` error document
/// (what an agent reading it acts on) and, through [`ErrorKind::exit_status`], its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Usage,
    Config,
    Input,
    TooLarge,
    Cache,
    Store,
    InUse,
    Output,
    OverBudget,
    Declined,
    Interrupted,
    NoMatch,
    Io,
    Provider,
    System,
}

impl ErrorKind {
    /// The `kind` of the `--json` error document.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::Config => "config",
            ErrorKind::Input => "input",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::Cache => "cache",
            ErrorKind::Store => "store",
            ErrorKind::InUse => "in_use",
            ErrorKind::Output => "output",
            ErrorKind::OverBudget => "over_budget",
            ErrorKind::Declined => "declined",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::NoMatch => "no_match",
            ErrorKind::Io => "io",
            ErrorKind::Provider => "provider",
            ErrorKind::System => "system",
        }
    }

    /// The exit code of an error of this kind: the provider's refusal is a failure (3), an
    /// interruption 130, and everything else ended the command before any model call (2).
    pub fn exit_status(self) -> ExitStatus {
        match self {
            ErrorKind::Provider => ExitStatus::Failed,
            ErrorKind::Interrupted => ExitStatus::Interrupted,
            ErrorKind::Usage
            | ErrorKind::Config
            | ErrorKind::Input
            | ErrorKind::TooLarge
            | ErrorKind::Cache
            | ErrorKind::Store
            | ErrorKind::InUse
            | ErrorKind::Output
            | ErrorKind::OverBudget
            | ErrorKind::Declined
            | ErrorKind::NoMatch
            | ErrorKind::Io
            | ErrorKind::System => ExitStatus::Usage,
        }
    }
}

/// An [`ErrorKind`] is written as its [`name`](ErrorKind::name) in JSON documents.
impl serde::Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// What `--json` prints for a command that never ran: `ERROR` is the status of a run that
/// never started (issue 17), so an agent reading stdout always gets a document.
pub fn error_document(kind: ErrorKind, message: &str) -> serde_json::Value {
    serde_json::json!({
        "status": "ERROR",
        "error": {"kind": kind, "message": message},
        "exit_code": kind.exit_status().code(),
    })
}

/// An error that ends a command before any model call was made (exit 2), or a refusal by
/// the provider that ends it at the start (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum RlmError {
    /// Bad flags, arguments or flag values: the command line is wrong.
    #[error("{0}")]
    Usage(String),
    /// A flag's value is wrong; the error of what read it is the source.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// No usable provider configuration (no key, no server, a bad config file or
    /// environment variable, a prompt override, a program a job needs not installed).
    #[error("{0}")]
    Config(String),
    /// The provider configuration cannot serve the command; its error is the source.
    #[error(transparent)]
    ConfigFailed(#[from] ConfigFailure),
    /// An environment variable rlm reads has a value it cannot use (a `usage` or a `config`
    /// error, as [`EnvFailure::kind`] says).
    #[error(transparent)]
    Env(#[from] EnvFailure),
    /// The inputs: nothing sendable matched, a list of files or a git reference is bad, a
    /// file a flag names (a prompt, a schema) or a job's file or items cannot be used.
    #[error("{0}")]
    Input(String),
    /// An input cannot be used; the error of the stage that found it is the source.
    #[error(transparent)]
    InputFailed(#[from] InputFailure),
    /// Every unit is too large for the model's context: nothing can be sent.
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
    /// The answer cache cannot be read or made ready for writing, cannot take the answers
    /// a run kept, or (`--cache-only`) misses.
    #[error(transparent)]
    CacheFailed(#[from] CacheFailure),
    /// The run store does not know the run or cannot do what was asked of it; a job
    /// directory does not know the job.
    #[error(transparent)]
    Store(#[from] StoreRefusal),
    /// The run store failed, or a file rlm keeps for a run or a job is not what it wrote.
    /// (Boxed: the store's errors are large, and every `Result` of a command carries this.)
    #[error(transparent)]
    StoreFailed(Box<StoreFailure>),
    /// Another rlm process works on the run or its directory.
    #[error(transparent)]
    InUse(#[from] InUse),
    /// The run directory (or another file rlm writes) cannot be created or written, or
    /// holds files rlm will not replace.
    #[error(transparent)]
    Output(#[from] OutputFailure),
    /// The estimate exceeds `--max-cost` or a safety threshold.
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
    /// The user answered no to the cost confirmation.
    #[error(transparent)]
    Declined(#[from] Declined),
    /// Ctrl-C or SIGTERM before the work started (while a job's items were listed, at the
    /// cost question): whatever rlm had started was stopped, and nothing was sent.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The pattern matched nothing (the message is the seed's multi-line help).
    #[error(transparent)]
    NoMatch(#[from] NoMatch),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The provider refused us before any work could be done.
    /// (Boxed: a batch API error is large, and every `Result` of a command carries this.)
    #[error(transparent)]
    Provider(Box<ProviderFailure>),
    /// The system cannot give rlm what it needs to start: threads for its runtime, the
    /// working directory, a home directory.
    #[error(transparent)]
    System(#[from] SystemFailure),
    /// An I/O error from `fs_err`, whose message already names the path.
    #[error("{0}")]
    File(#[from] std::io::Error),
    /// Another error, its message led by what was being done ("phase review: …").
    #[error("{context}: {source}")]
    InContext {
        context: String,
        #[source]
        source: Box<RlmError>,
    },
}

impl From<StoreFailure> for RlmError {
    fn from(e: StoreFailure) -> Self {
        RlmError::StoreFailed(Box::new(e))
    }
}

impl From<crate::store::StoreError> for RlmError {
    fn from(e: crate::store::StoreError) -> Self {
        StoreFailure::from(e).into()
    }
}

impl From<ProviderFailure> for RlmError {
    fn from(e: ProviderFailure) -> Self {
        RlmError::Provider(Box::new(e))
    }
}

impl RlmError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RlmError::Io {
            path: path.into(),
            source,
        }
    }

    /// The same error, its message led by `context` ("phase review: …"), its kind kept.
    pub fn in_context(self, context: &str) -> Self {
        RlmError::InContext {
            context: context.to_owned(),
            source: Box::new(self),
        }
    }

    /// The exit code this error maps to (see [`ErrorKind::exit_status`]).
    pub fn exit_status(&self) -> ExitStatus {
        self.kind().exit_status()
    }

    /// The class of this error: the one place a variant is mapped to the `--json` error
    /// document's `kind` and, through it, to the exit code.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RlmError::Usage(_) | RlmError::Flag(_) => ErrorKind::Usage,
            RlmError::Config(_) | RlmError::ConfigFailed(_) => ErrorKind::Config,
            RlmError::Env(e) => e.kind(),
            RlmError::Input(_) | RlmError::InputFailed(_) => ErrorKind::Input,
            RlmError::TooLarge(_) => ErrorKind::TooLarge,
            RlmError::CacheFailed(_) => ErrorKind::Cache,
            RlmError::Store(_) | RlmError::StoreFailed(_) => ErrorKind::Store,
            RlmError::InUse(_) => ErrorKind::InUse,
            RlmError::Output(_) => ErrorKind::Output,
            RlmError::OverBudget(_) => ErrorKind::OverBudget,
            RlmError::Declined(_) => ErrorKind::Declined,
            RlmError::Interrupted(_) => ErrorKind::Interrupted,
            RlmError::NoMatch(_) => ErrorKind::NoMatch,
            RlmError::Io { .. } | RlmError::File(_) => ErrorKind::Io,
            RlmError::Provider(_) => ErrorKind::Provider,
            RlmError::System(_) => ErrorKind::System,
            RlmError::InContext { source, .. } => source.kind(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::discovery::DiscoveryError;
    use crate::store::StoreError;

    #[test]
    fn a_typed_source_reads_as_the_sentence_its_site_used_to_format() {
        let e = RlmError::from(StoreFailure::ReserveRunId(StoreError::UnknownRun("r1".into())));
        assert_eq!(
            e.to_string(),
            "cannot reserve a run id in the task store (no run `r1` in the task store; `rlm list` shows the runs); \
             nothing was sent"
        );
        assert_eq!((e.kind().name(), e.exit_status()), ("store", ExitStatus::Usage));
        let e = RlmError::from(CacheFailure::UnwritableBeforePaying(std::io::Error::other("disk full")));
        assert_eq!(
            e.to_string(),
            "disk full: the cache must be writable before anything is paid for"
        );
        assert_eq!((e.kind().name(), e.exit_status()), ("cache", ExitStatus::Usage));
    }

    #[test]
    fn context_leads_the_message_and_keeps_the_kind_and_exit_code() {
        let e = RlmError::from(DiscoveryError::Refused("the server refused the key".into())).in_context("phase review");
        assert_eq!(e.to_string(), "phase review: the server refused the key");
        assert_eq!((e.kind().name(), e.exit_status()), ("provider", ExitStatus::Failed));
        let e = RlmError::io("/x", std::io::Error::other("denied")).in_context("phase a");
        assert_eq!(e.to_string(), "phase a: /x: denied");
        assert_eq!(e.kind(), ErrorKind::Io);
    }

    #[test]
    fn an_interruption_before_the_work_started_exits_130() {
        let e = RlmError::from(Interrupted::CostQuestion).in_context("job");
        assert_eq!(
            (e.kind().name(), e.exit_status()),
            ("interrupted", ExitStatus::Interrupted)
        );
        assert_eq!(e.exit_status().code(), 130);
    }
}
