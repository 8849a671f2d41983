//! `ProcessError`: why a supervised command gave no result, and `FailureKind`, what the
//! retry policy should make of it.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// What a failure means for retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Every unit would fail the same way (the program is missing or not executable):
    /// stop the run.
    Fatal,
    /// Worth another try (a timeout, a broken pipe).
    Retryable,
    /// The program ran and failed: retry a limited number of times (it may be flaky, or
    /// it may fail on this input every time).
    ExitFailure,
    /// This unit cannot succeed as it is (its output is over the limit): do not retry.
    Permanent,
    /// Stopped on purpose (shutdown); the unit stays for resume.
    Cancelled,
}

/// Why a supervised command gave no result. Messages are one line.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// No program was given.
    #[error("the command is empty; give the program to run, e.g. --command 'claude -p'")]
    EmptyCommand,
    /// The program does not exist (on `PATH`, or at the path given).
    #[error("command not found: {program}; check --command, or install it and put it on PATH")]
    NotFound { program: String },
    /// The program exists but may not be executed.
    #[error("{program}: permission denied; make it executable (chmod +x) or run it through its interpreter")]
    NotExecutable { program: String },
    /// The working directory is missing.
    #[error("{}: the working directory for `{program}` does not exist", cwd.display())]
    NoWorkingDirectory { program: String, cwd: PathBuf },
    /// The program could not be started for another reason (too many processes, …).
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The program exited unsuccessfully.
    #[error("{program} {}{}", describe(*status), last_line(stderr_tail))]
    Exit {
        program: String,
        status: ExitStatus,
        /// The last few KiB of its stderr.
        stderr_tail: String,
    },
    /// The program ran past its timeout and was stopped (SIGTERM, then SIGKILL).
    #[error("{program} timed out after {}s and was stopped{}", after.as_secs_f32(), last_line(stderr_tail))]
    Timeout {
        program: String,
        after: Duration,
        stderr_tail: String,
    },
    /// The caller cancelled the call (shutdown); the program was stopped.
    #[error("{program} was stopped: the run is shutting down")]
    Cancelled { program: String },
    /// The program wrote more than the output limit and was stopped.
    #[error("{program} wrote more than {} MiB to stdout and was stopped; ask for a shorter answer", limit / (1024 * 1024))]
    StdoutTooLarge { program: String, limit: usize },
    /// Reading the program's output failed.
    #[error("reading the output of {program} failed: {source}")]
    Io {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

impl ProcessError {
    /// What the retry policy should make of this failure.
    pub fn kind(&self) -> FailureKind {
        match self {
            ProcessError::EmptyCommand
            | ProcessError::NotFound { .. }
            | ProcessError::NotExecutable { .. }
            | ProcessError::NoWorkingDirectory { .. }
            | ProcessError::Spawn { .. } => FailureKind::Fatal,
            ProcessError::Timeout { .. } | ProcessError::Io { .. } => FailureKind::Retryable,
            ProcessError::Exit { .. } => FailureKind::ExitFailure,
            ProcessError::StdoutTooLarge { .. } => FailureKind::Permanent,
            ProcessError::Cancelled { .. } => FailureKind::Cancelled,
        }
    }

    /// The tail of the program's stderr, when it got to write any.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            ProcessError::Exit { stderr_tail, .. } | ProcessError::Timeout { stderr_tail, .. } => Some(stderr_tail),
            _ => None,
        }
    }
}

/// `exited with status 2` or `was killed by signal 9`.
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended: {status}"),
    }
}

/// `: <the last non-blank line of stderr>` (cut to 300 characters), or nothing.
fn last_line(stderr: &str) -> String {
    match stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) if line.chars().count() > 300 => format!(": {}…", line.chars().take(299).collect::<String>()),
        Some(line) => format!(": {line}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn messages_are_one_line_with_the_last_stderr_line() {
        let err = ProcessError::Exit {
            program: "claude".into(),
            status: ExitStatus::from_raw(2 << 8),
            stderr_tail: "warming up\nError: invalid API key\n\n".into(),
        };
        assert_eq!(err.to_string(), "claude exited with status 2: Error: invalid API key");
        assert_eq!(err.kind(), FailureKind::ExitFailure);
        let killed = ProcessError::Exit {
            program: "agent".into(),
            status: ExitStatus::from_raw(9),
            stderr_tail: String::new(),
        };
        assert_eq!(killed.to_string(), "agent was killed by signal 9");
        let timeout = ProcessError::Timeout {
            program: "agent".into(),
            after: Duration::from_millis(1500),
            stderr_tail: "x".repeat(400),
        };
        let message = timeout.to_string();
        assert!(
            message.starts_with("agent timed out after 1.5s and was stopped: xxx"),
            "{message}"
        );
        assert_eq!(message.chars().filter(|&c| c == 'x').count(), 299);
        assert!(!message.contains('\n'));
        assert_eq!(timeout.kind(), FailureKind::Retryable);
    }

    #[test]
    fn a_missing_program_is_fatal_for_the_run() {
        let err = ProcessError::NotFound {
            program: "cluade".into(),
        };
        assert!(err.to_string().starts_with("command not found: cluade;"));
        assert_eq!(err.kind(), FailureKind::Fatal);
        assert_eq!(
            ProcessError::StdoutTooLarge {
                program: "a".into(),
                limit: 16 << 20
            }
            .to_string(),
            "a wrote more than 16 MiB to stdout and was stopped; ask for a shorter answer"
        );
    }
}
