//! `EnvFailure`: an environment variable rlm reads holds a value it cannot use (issue 24).
//!
//! The variable, its value as it may be shown, and what it should hold are kept, so every
//! such error reads the same: `RLM_BATCH_LIMITS='0' is not REQUESTS or REQUESTS,BYTES: …`.
//! A value is shown only as far as it is no secret: a URL without its credentials, and a
//! key (or token, password) variable's value not at all — keys never reach the terminal.

use std::fmt;

use super::ErrorKind;

/// Whose mistake a bad value is, which decides its [`ErrorKind`] (both exit 2): a knob the
/// user set for this command, or the setting rlm was started in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvBlame {
    /// A knob of the command (`RLM_BATCH_POLL_MS`, a base URL): `usage`.
    Usage,
    /// The setting rlm runs in (`RLM_DEPTH`, `RLM_BACKOFF_BASE_MS`): `config`.
    Config,
}

/// A variable's value as an error may show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShownValue {
    /// The value as it was set.
    Plain(String),
    /// A URL, its credentials (`user:password@`) removed.
    Url(String),
    /// A secret's value: not kept, not shown.
    Withheld,
}

impl fmt::Display for ShownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShownValue::Plain(value) | ShownValue::Url(value) => write!(f, "='{value}'"),
            ShownValue::Withheld => f.write_str(" (its value not shown)"),
        }
    }
}

/// An environment variable rlm reads cannot be used: nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum EnvFailure {
    /// `var` holds a value that is not `expected`.
    #[error("{var}{value_shown} is not {expected}")]
    BadValue {
        var: &'static str,
        value_shown: ShownValue,
        /// What the variable should hold, and what it is for or how to fix it.
        expected: String,
        blame: EnvBlame,
    },
}

impl EnvFailure {
    /// `var` holds `value`, which is not `expected`. The value is left out when `var` names
    /// a secret.
    pub fn bad_value(var: &'static str, value: &str, expected: impl Into<String>, blame: EnvBlame) -> Self {
        let value_shown = if names_a_secret(var) {
            ShownValue::Withheld
        } else {
            ShownValue::Plain(value.to_string())
        };
        EnvFailure::BadValue {
            var,
            value_shown,
            expected: expected.into(),
            blame,
        }
    }

    /// [`EnvFailure::bad_value`] for a URL: shown without its credentials.
    pub fn bad_url(var: &'static str, url: &str, expected: impl Into<String>, blame: EnvBlame) -> Self {
        EnvFailure::BadValue {
            var,
            value_shown: ShownValue::Url(crate::secret::redact_url(url).into_owned()),
            expected: expected.into(),
            blame,
        }
    }

    /// The class of this error (see [`super::RlmError::kind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            EnvFailure::BadValue { blame, .. } => match blame {
                EnvBlame::Usage => ErrorKind::Usage,
                EnvBlame::Config => ErrorKind::Config,
            },
        }
    }
}

/// Whether `var` holds a secret by its name (`ANTHROPIC_API_KEY`, `GH_TOKEN`).
fn names_a_secret(var: &str) -> bool {
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|word| var.split('_').any(|part| part == *word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_value_names_the_variable_its_value_and_what_it_should_hold() {
        let e = EnvFailure::bad_value("RLM_DEPTH", "abc", "a whole number", EnvBlame::Config);
        assert_eq!(e.to_string(), "RLM_DEPTH='abc' is not a whole number");
        assert_eq!(e.kind(), ErrorKind::Config);
    }

    #[test]
    fn a_secret_is_never_shown_and_a_urls_credentials_neither() {
        let key = EnvFailure::bad_value("ANTHROPIC_API_KEY", "sk-ant-secret", "a key", EnvBlame::Usage);
        assert_eq!(key.to_string(), "ANTHROPIC_API_KEY (its value not shown) is not a key");
        assert_eq!(key.kind(), ErrorKind::Usage);
        let url = EnvFailure::bad_url("OPENAI_BASE_URL", "ftp://me:pw@host", "an http(s) URL", EnvBlame::Usage);
        let shown = url.to_string();
        assert!(shown.starts_with("OPENAI_BASE_URL='ftp://"), "{shown}");
        assert!(!shown.contains("pw"), "{shown}");
    }
}
