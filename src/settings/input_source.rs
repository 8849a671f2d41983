//! Which files a run reads: its one input axis, decided from the positionals and the input
//! flags.
//!
//! `rlm batch PATTERN PROMPT` names the inputs with a glob. Input flags name them another
//! way, and then the one positional left is the prompt. Every input axis is a variant of
//! [`InputSource`]; the resolvers in [`crate::input`] turn it into a manifest.

use serde::Serialize;

use crate::error::RlmError;

/// How the inputs of a run are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "axis", rename_all = "snake_case")]
pub enum InputSource {
    /// A glob relative to the working directory, or absolute.
    Glob { pattern: String },
    /// `--neighbors-of`: the files within `depth` hops of `node` in a dependency graph
    /// (the node itself excluded).
    Neighbors {
        node: String,
        direction: crate::index::Direction,
        depth: u32,
        /// `project` (this project's index) or the `--graph-file` given.
        graph: String,
        /// The `--graph-file`, when one was given.
        #[serde(skip_serializing_if = "Option::is_none")]
        graph_file: Option<std::path::PathBuf>,
    },
}

impl InputSource {
    /// What the user named, as the banner and the report show it.
    pub fn label(&self) -> String {
        match self {
            InputSource::Glob { pattern } => pattern.clone(),
            InputSource::Neighbors {
                node,
                direction,
                depth,
                graph,
                ..
            } => format!("--neighbors-of {node} (direction {direction}, depth {depth}, graph {graph})"),
        }
    }
}

/// The positionals of `rlm batch`, sorted into the pattern and the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Positionals {
    pub pattern: Option<String>,
    pub prompt: Option<String>,
}

/// Sorts up to two positionals. `axis_flag` is the input flag given instead of a pattern
/// (`--files-from`, …), if any; `filter_allowed` says whether that flag still takes a
/// pattern as a filter; `prompt_from_file` is `--prompt-file`.
pub fn sort_positionals(
    first: Option<String>,
    second: Option<String>,
    axis_flag: Option<&str>,
    filter_allowed: bool,
    prompt_from_file: bool,
) -> Result<Positionals, RlmError> {
    let given: Vec<String> = first.into_iter().chain(second).collect();
    let prompt_needed = !prompt_from_file;
    let pattern_needed = axis_flag.is_none();
    let (pattern, prompt) = match (given.len(), pattern_needed, prompt_needed) {
        (0, true, _) => {
            return Err(RlmError::Usage(
                "no files named: pass a pattern such as 'src/**/*.ts' and a prompt".into(),
            ))
        }
        (0, false, true) | (1, true, true) => {
            return Err(RlmError::Usage(
                "no prompt: pass it after the pattern, or with --prompt-file FILE".into(),
            ))
        }
        (0, false, false) => (None, None),
        (1, true, false) => (Some(given[0].clone()), None),
        (1, false, true) => (None, Some(given[0].clone())),
        (1, false, false) | (2, false, true) if filter_allowed => (Some(given[0].clone()), given.get(1).cloned()),
        (2, true, true) => (Some(given[0].clone()), Some(given[1].clone())),
        (2, true, false) => {
            return Err(RlmError::Usage(
                "the prompt is given twice: as an argument and with --prompt-file; keep one".into(),
            ))
        }
        (_, false, _) => {
            let flag = axis_flag.unwrap_or("the input flag");
            return Err(RlmError::Usage(format!(
                "{flag} names the inputs, so a pattern cannot also be given: pass only the prompt \
                 (exactly one input axis per run)"
            )));
        }
        _ => return Err(RlmError::Usage(
            "too many arguments: quote the pattern and the prompt, as in: rlm batch \"src/**/*.ts\" \"your prompt\""
                .into(),
        )),
    };
    Ok(Positionals { pattern, prompt })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn a_pattern_and_a_prompt() {
        let p = sort_positionals(s("src/*.ts"), s("List"), None, false, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (s("src/*.ts"), s("List")));
    }

    #[test]
    fn with_an_input_flag_the_one_positional_is_the_prompt() {
        let p = sort_positionals(s("List"), None, Some("--files-from"), true, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (None, s("List")));
        let p = sort_positionals(s("*.rs"), s("List"), Some("--files-from"), true, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (s("*.rs"), s("List")));
    }

    #[test]
    fn an_axis_that_takes_no_filter_refuses_a_pattern() {
        let e = sort_positionals(s("*.rs"), s("List"), Some("--neighbors-of"), false, false).unwrap_err();
        assert!(e.to_string().contains("exactly one input axis"), "{e}");
    }

    #[test]
    fn prompt_file_leaves_only_the_pattern() {
        let p = sort_positionals(s("*.rs"), None, None, false, true).unwrap();
        assert_eq!((p.pattern, p.prompt), (s("*.rs"), None));
        let e = sort_positionals(s("*.rs"), s("x"), None, false, true).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        let p = sort_positionals(None, None, Some("--changed-since"), true, true).unwrap();
        assert_eq!((p.pattern, p.prompt), (None, None));
    }

    #[test]
    fn missing_pieces_are_named() {
        let e = sort_positionals(s("*.rs"), None, None, false, false).unwrap_err();
        assert!(e.to_string().contains("no prompt"), "{e}");
        let e = sort_positionals(None, None, None, false, false).unwrap_err();
        assert!(e.to_string().contains("no files named"), "{e}");
    }
}
