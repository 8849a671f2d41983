//! What the process environment provides, captured once so tests can build one without
//! touching the real environment. Its `Debug` names variables but never shows values: a
//! key must not reach a log through a debug print.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{RlmError, SystemFailure};

/// The environment of one invocation.
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub stderr_is_terminal: bool,
    pub stdin_is_terminal: bool,
    /// The command line, as given.
    pub argv: Vec<String>,
}

// The variables' values are left out: they hold the API keys.
#[allow(clippy::missing_fields_in_debug)]
impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("stderr_is_terminal", &self.stderr_is_terminal)
            .field("stdin_is_terminal", &self.stdin_is_terminal)
            .finish()
    }
}

impl Environment {
    /// Reads the real process environment.
    pub fn from_process() -> Result<Self, RlmError> {
        use std::io::IsTerminal;
        let cwd = std::env::current_dir().map_err(SystemFailure::CurrentDirectory)?;
        Ok(Environment {
            // Non-UTF-8 values are skipped rather than aborting the run.
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            cwd,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            stdin_is_terminal: std::io::stdin().is_terminal(),
            argv: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
        })
    }

    /// An environment with these variables (for tests).
    pub fn with_vars(vars: &[(&str, &str)], cwd: PathBuf) -> Self {
        Environment {
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            cwd,
            ..Environment::default()
        }
    }

    /// A variable's value; unset and blank are the same.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_values() {
        let env = Environment::with_vars(&[("ANTHROPIC_API_KEY", "sk-ant-secret")], PathBuf::from("/"));
        let shown = format!("{env:?}");
        assert!(
            shown.contains("ANTHROPIC_API_KEY") && !shown.contains("sk-ant-secret"),
            "{shown}"
        );
    }
}
