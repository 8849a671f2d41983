//! `Interrupted`: Ctrl-C or SIGTERM before the work started (exit 130). The variant says
//! what was stopped, so the message says what was and was not done.

/// What Ctrl-C or SIGTERM stopped before any model was called.
#[derive(Debug, thiserror::Error)]
pub enum Interrupted {
    /// The job's `command` was stopped while it listed the items.
    #[error(
        "interrupted: the job's command {program} was stopped before it listed the items; nothing was sent to a \
         model"
    )]
    JobCommand { program: String },
    /// A call of gh (`what`: "gh pr list", …) was stopped.
    #[error("interrupted: {what} was stopped; nothing was sent to a model")]
    Gh { what: String },
    /// gh was stopped while it posted a comment, which may or may not be there now.
    #[error(
        "interrupted: gh was stopped while it posted on {repo}#{number}, which may or may not have its comment now \
         (it is not recorded as posted); {posted} comment(s) posted, the rest not"
    )]
    WhilePosting {
        repo: String,
        number: String,
        posted: usize,
    },
    /// `--post` stopped between two comments.
    #[error("interrupted: {posted} comment(s) posted, the rest not: --post again posts them")]
    Posting { posted: usize },
    /// Model discovery was stopped.
    #[error("interrupted while asking the server which model it serves: nothing was sent to a model")]
    ModelDiscovery,
    /// The cost question was answered by Ctrl-C.
    #[error("interrupted at the cost question: nothing was called")]
    CostQuestion,
}
