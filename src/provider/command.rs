//! `--provider command`: a command-line agent (`claude -p`, `codex exec`, `llm -m …`) as the
//! model. The command is split into argv (never run by a shell); each call runs it once in
//! its own process group with the prompt on stdin; stdout is the answer and the exit status
//! decides success. A timeout stops the whole group (SIGTERM, then SIGKILL), and a call that
//! is dropped (Ctrl-C, a fatal error) kills it at once: no orphans.
//!
//! What the agent gets (issue 17): rlm's own environment, minus the provider secrets rlm
//! reads ([`WITHHELD`]: the API keys and base URLs, which may carry a password), plus
//! `RLM_DEPTH` and `RLM_PARENT_RUN`. An agent reads untrusted files and may run tools, so it
//! gets no credential of rlm's unless the user passes one by name with `--agent-env`.

use std::time::Duration;

use super::{BoxFuture, CallError, Completion, CompletionRequest, ErrorKind, Provider, ProviderKind, Usage};
use crate::process::{self, CommandSpec, FailureKind, ProcessError};

/// A command-line agent.
#[derive(Debug)]
pub struct CommandProvider {
    spec: CommandSpec,
    /// `command:<program>`, as reports name the model.
    label: String,
}

/// The variables rlm withholds from an agent unless `--agent-env` names them: the keys and
/// base URLs rlm reads, and those its CI script (`scripts/ci-review`) passes a key in.
pub const WITHHELD: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "RLM_API_KEY",
    "RLM_BASE_URL",
];

/// The variables to remove from an agent's environment, given those `--agent-env` passes.
pub fn withheld(passed: &[String]) -> Vec<String> {
    WITHHELD
        .iter()
        .filter(|name| !passed.iter().any(|p| p == *name))
        .map(ToString::to_string)
        .collect()
}

impl CommandProvider {
    /// `argv` (already split), with `env` added to every call's environment (`RLM_DEPTH`,
    /// `RLM_PARENT_RUN`), the variables `withheld` removed from it, and `timeout` per call.
    pub fn new(argv: Vec<String>, env: Vec<(String, String)>, withheld: Vec<String>, timeout: Duration) -> Self {
        let label = label(&argv);
        let mut spec = CommandSpec::new(argv);
        spec.env = env;
        spec.env_remove = withheld;
        spec.timeout = Some(timeout);
        CommandProvider { spec, label }
    }

    async fn call(&self, request: &CompletionRequest) -> Result<Completion, CallError> {
        // A CLI agent takes one prompt: the instructions, then the task.
        let stdin = if request.system.trim().is_empty() {
            request.user_text()
        } else {
            format!("{}\n\n{}", request.system.trim_end(), request.user_text())
        };
        match process::run(&self.spec, &stdin, std::future::pending()).await {
            Ok(out) => Ok(Completion {
                text: out.stdout,
                // The agent does not say; its own billing counts it.
                usage: Usage::default(),
                stop_reason: Some(format!("exit {}", out.status.code().unwrap_or(0))),
                truncated: false,
            }),
            Err(e) => Err(classify(&e)),
        }
    }
}

/// `command:claude` for `claude -p --model haiku`.
pub fn label(argv: &[String]) -> String {
    let program = argv.first().map(String::as_str).unwrap_or("");
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    format!("command:{name}")
}

fn classify(e: &ProcessError) -> CallError {
    let kind = match (e, e.kind()) {
        (ProcessError::Timeout { .. }, _) => ErrorKind::Timeout,
        (_, FailureKind::Fatal) => ErrorKind::Fatal,
        (_, FailureKind::Retryable) => ErrorKind::Transient,
        // The agent ran and failed on this input, or its answer was over the limit.
        (_, FailureKind::ExitFailure | FailureKind::Permanent | FailureKind::Cancelled) => ErrorKind::Unit,
    };
    CallError::new(kind, e.to_string())
}

impl Provider for CommandProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }

    fn model(&self) -> &str {
        &self.label
    }

    fn complete<'a>(&'a self, request: &'a CompletionRequest) -> BoxFuture<'a, Result<Completion, CallError>> {
        Box::pin(self.call(request))
    }
}
