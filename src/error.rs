//! Error types and the exit codes they map to.
//!
//! Every error the user can see is one line that names the thing at fault and says what to
//! do; the exit code says which class of failure it was. The table is documented once, in
//! the README, and mirrored by [`ExitStatus`].

use std::path::PathBuf;

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

/// What `--json` prints for a command that never ran: `ERROR` is the status of a run that
/// never started (issue 17), so an agent reading stdout always gets a document.
pub fn error_document(kind: &str, message: &str, status: ExitStatus) -> serde_json::Value {
    serde_json::json!({
        "status": "ERROR",
        "error": {"kind": kind, "message": message},
        "exit_code": status.code(),
    })
}

/// An error that ends a command before any model call was made (exit 2), or a refusal by
/// the provider that ends it at the start (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum RlmError {
    /// Bad flags, arguments or flag values: the command line is wrong.
    #[error("{0}")]
    Usage(String),
    /// No usable provider configuration (no key, no server, a bad config file or
    /// environment variable, a prompt override, a program a job needs not installed).
    #[error("{0}")]
    Config(String),
    /// The inputs: nothing sendable matched, a list of files or a git reference is bad, a
    /// file a flag names (a prompt, a schema) or a job's file or items cannot be used.
    #[error("{0}")]
    Input(String),
    /// Every unit is too large for the model's context: nothing can be sent.
    #[error("{0}")]
    TooLarge(String),
    /// The answer cache cannot be read or written, or `--cache-only` misses.
    #[error("{0}")]
    Cache(String),
    /// The run store cannot be opened or does not know the run; a job directory does not
    /// know the job, or holds a file rlm did not write.
    #[error("{0}")]
    Store(String),
    /// Another rlm process works on the run or its directory.
    #[error("{0}")]
    InUse(String),
    /// The run directory (or another file rlm writes) cannot be created or written, or
    /// holds files rlm will not replace.
    #[error("{0}")]
    Output(String),
    /// The estimate exceeds `--max-cost` or a safety threshold.
    #[error("{0}")]
    OverBudget(String),
    /// The user answered no to the cost confirmation.
    #[error("{0}")]
    Declined(String),
    /// The pattern matched nothing (the message is the seed's multi-line help).
    #[error("{0}")]
    NoMatch(String),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The provider refused us before any work could be done.
    #[error("{0}")]
    Provider(String),
    /// The system cannot give rlm what it needs to start: threads for its runtime, the
    /// working directory, a home directory.
    #[error("{0}")]
    System(String),
    /// An I/O error from `fs_err`, whose message already names the path.
    #[error("{0}")]
    File(#[from] std::io::Error),
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
        let led = |message: String| format!("{context}: {message}");
        match self {
            RlmError::Usage(m) => RlmError::Usage(led(m)),
            RlmError::Config(m) => RlmError::Config(led(m)),
            RlmError::Input(m) => RlmError::Input(led(m)),
            RlmError::TooLarge(m) => RlmError::TooLarge(led(m)),
            RlmError::Cache(m) => RlmError::Cache(led(m)),
            RlmError::Store(m) => RlmError::Store(led(m)),
            RlmError::InUse(m) => RlmError::InUse(led(m)),
            RlmError::Output(m) => RlmError::Output(led(m)),
            RlmError::OverBudget(m) => RlmError::OverBudget(led(m)),
            RlmError::Declined(m) => RlmError::Declined(led(m)),
            RlmError::NoMatch(m) => RlmError::NoMatch(led(m)),
            RlmError::Provider(m) => RlmError::Provider(led(m)),
            RlmError::System(m) => RlmError::System(led(m)),
            RlmError::Io { path, source } => RlmError::File(std::io::Error::new(
                source.kind(),
                led(format!("{}: {source}", path.display())),
            )),
            RlmError::File(e) => RlmError::File(std::io::Error::new(e.kind(), led(e.to_string()))),
        }
    }

    /// The exit code this error maps to.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            RlmError::Provider(_) => ExitStatus::Failed,
            _ => ExitStatus::Usage,
        }
    }

    /// The `kind` of the `--json` error document: what an agent reading it acts on.
    pub fn kind(&self) -> &'static str {
        match self {
            RlmError::Usage(_) => "usage",
            RlmError::Config(_) => "config",
            RlmError::Input(_) => "input",
            RlmError::TooLarge(_) => "too_large",
            RlmError::Cache(_) => "cache",
            RlmError::Store(_) => "store",
            RlmError::InUse(_) => "in_use",
            RlmError::Output(_) => "output",
            RlmError::OverBudget(_) => "over_budget",
            RlmError::Declined(_) => "declined",
            RlmError::NoMatch(_) => "no_match",
            RlmError::Io { .. } | RlmError::File(_) => "io",
            RlmError::Provider(_) => "provider",
            RlmError::System(_) => "system",
        }
    }
}
