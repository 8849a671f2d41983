//! Which files a run reads: its one input axis, decided from the positionals and the input
//! flags.
//!
//! `rlm batch PATTERN PROMPT` names the inputs with a glob. Input flags name them another
//! way, and then the one positional left is the prompt. Every input axis is a variant of
//! [`InputSource`]; the resolvers in [`crate::input`] turn it into a manifest.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::RlmError;
use crate::escape;
use crate::input::shown_name as shown;

/// How the inputs of a run are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "axis", rename_all = "snake_case")]
pub enum InputSource {
    /// A glob relative to the working directory, or absolute; one that is not UTF-8 is the
    /// literal name of a file or directory (see [`crate::input::resolve_glob`]).
    Glob {
        #[serde(serialize_with = "crate::input::serialize_shown")]
        pattern: OsString,
    },
    /// `--files-from LIST` (`-` for stdin; `--null` for NUL-separated), optionally filtered
    /// by a pattern.
    FilesFrom {
        #[serde(serialize_with = "crate::input::serialize_shown")]
        list: std::path::PathBuf,
        null: bool,
        filter: Option<String>,
    },
    /// `--changed-since REF`: files added, copied, modified or renamed between the merge
    /// base of REF and HEAD, optionally filtered by a pattern.
    ChangedSince { reference: String, filter: Option<String> },
    /// Directory mode: the text files below a directory, filtered, largest first, capped.
    Directory {
        /// As the user wrote it, relative to the working directory or absolute.
        #[serde(serialize_with = "crate::input::serialize_shown")]
        dir: PathBuf,
        /// `--include` globs (relative to `dir`; none means every file).
        include: Vec<String>,
        /// `--exclude` globs, on top of the default exclusions.
        exclude: Vec<String>,
        /// `false` with `--no-recursive`.
        recursive: bool,
        /// `--max-files` (default [`DEFAULT_DIRECTORY_MAX_FILES`]).
        max_files: usize,
    },
    /// `--neighbors-of`: the files within `depth` hops of `node` in a dependency graph
    /// (the node itself excluded).
    Neighbors {
        node: String,
        direction: crate::index::Direction,
        depth: u32,
        /// `project` (this project's index) or the `--graph-file` given.
        graph: String,
        /// The `--graph-file`, when one was given.
        #[serde(
            skip_serializing_if = "Option::is_none",
            serialize_with = "crate::input::serialize_shown_option"
        )]
        graph_file: Option<std::path::PathBuf>,
    },
}

/// The directory mode's `--max-files` when none is given (the seed's safety cap).
pub const DEFAULT_DIRECTORY_MAX_FILES: usize = 20;

impl InputSource {
    /// What the user named, as the banner and the report show it.
    pub fn label(&self) -> String {
        let filtered = |what: String, filter: &Option<String>| match filter {
            Some(f) => format!("{what} matching {f}"),
            None => what,
        };
        match self {
            InputSource::Glob { pattern } => shown(pattern),
            InputSource::FilesFrom { list, filter, .. } => {
                filtered(format!("files listed in {}", list.display()), filter)
            }
            InputSource::ChangedSince { reference, filter } => {
                filtered(format!("files changed since {reference}"), filter)
            }
            InputSource::Directory {
                dir,
                include,
                exclude,
                recursive,
                max_files,
            } => {
                let files = if *max_files == 1 { "file" } else { "files" };
                let mut parts = vec![format!("directory, at most {max_files} {files}")];
                if !include.is_empty() {
                    parts.push(format!("include {}", include.join(", ")));
                }
                if !exclude.is_empty() {
                    parts.push(format!("exclude {}", exclude.join(", ")));
                }
                if !recursive {
                    parts.push("not recursive".into());
                }
                format!("{} ({})", shown(dir.as_os_str()), parts.join("; "))
            }
            InputSource::Neighbors {
                node,
                direction,
                depth,
                graph,
                ..
            } => format!("--neighbors-of {node} (direction {direction}, depth {depth}, graph {graph})"),
        }
    }

    /// A list-based axis: an empty selection is a successful run with nothing to do (a pull
    /// request that touches no matching file), not a usage error.
    pub fn empty_is_success(&self) -> bool {
        matches!(self, InputSource::FilesFrom { .. } | InputSource::ChangedSince { .. })
    }
}

/// The directory mode's flags, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryFlags {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub no_recursive: bool,
    pub max_files: Option<usize>,
}

impl DirectoryFlags {
    /// The flags that only mean something for a directory, as the user typed them.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if !self.include.is_empty() {
            given.push("--include");
        }
        if !self.exclude.is_empty() {
            given.push("--exclude");
        }
        if self.no_recursive {
            given.push("--no-recursive");
        }
        given
    }

    /// The first directory-only flag given, if any.
    pub fn first_given(&self) -> Option<&'static str> {
        self.given().first().copied()
    }
}

/// A pattern as text, where only a glob will do (a list's filter); one that is not UTF-8 is
/// refused by name.
pub fn glob_text(pattern: OsString) -> Result<String, RlmError> {
    pattern.into_string().map_err(|pattern| {
        RlmError::Usage(format!(
            "the pattern '{}' is not valid UTF-8: a glob must be text; match such names with a glob \
             around them (as in 'src/*.txt')",
            escape::name(&shown(&pattern))
        ))
    })
}

/// The source a pattern names: an existing directory (no glob characters) means directory
/// mode, anything else a glob. The directory-only flags with a glob, or with a path that is
/// a file, are usage errors; with a path that does not exist they keep directory mode, so
/// the user hears "No files matched" naming it. A pattern that is not UTF-8 is a name (it
/// cannot be a glob), so it may still be a directory.
pub fn source_for_pattern(pattern: OsString, cwd: &Path, flags: DirectoryFlags) -> Result<InputSource, RlmError> {
    let trimmed: OsString = match pattern.to_str() {
        Some(text) => text.trim().into(),
        None => pattern.clone(),
    };
    let literal = !crate::input::has_meta(&trimmed);
    // An absolute name replaces `cwd`.
    let path = cwd.join(&trimmed);
    let given = flags.given();
    let directory = literal && (path.is_dir() || (!given.is_empty() && fs_err::symlink_metadata(&path).is_err()));
    if directory {
        return Ok(InputSource::Directory {
            dir: PathBuf::from(trimmed),
            include: flags.include,
            exclude: flags.exclude,
            recursive: !flags.no_recursive,
            max_files: flags.max_files.unwrap_or(DEFAULT_DIRECTORY_MAX_FILES),
        });
    }
    if !given.is_empty() {
        let what = if literal { "the file" } else { "the glob" };
        let verb = if given.len() == 1 { "applies" } else { "apply" };
        return Err(RlmError::Usage(format!(
            "{} {verb} to a directory, not to {what} '{}': pass a directory, as in \
             rlm batch src \"prompt\" --include '*.py', or put the filter in the glob",
            given.join(", "),
            escape::name(&shown(&trimmed))
        )));
    }
    Ok(InputSource::Glob { pattern })
}

/// The positionals of `rlm batch`, sorted into the pattern and the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Positionals {
    pub pattern: Option<OsString>,
    pub prompt: Option<String>,
}

/// Sorts up to two positionals: the first may name files (so it need not be UTF-8), the
/// second is text. `axis_flag` is the input flag given instead of a pattern
/// (`--files-from`, …), if any; `filter_allowed` says whether that flag still takes a
/// pattern as a filter; `prompt_from_file` is `--prompt-file`.
pub fn sort_positionals(
    first: Option<OsString>,
    second: Option<String>,
    axis_flag: Option<&str>,
    filter_allowed: bool,
    prompt_from_file: bool,
) -> Result<Positionals, RlmError> {
    let count = usize::from(first.is_some()) + usize::from(second.is_some());
    let prompt_needed = !prompt_from_file;
    let pattern_needed = axis_flag.is_none();
    // clap fills the first positional before the second.
    let (pattern, prompt) = match (count, pattern_needed, prompt_needed) {
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
        (1, true, false) => (first, None),
        (1, false, true) => (None, first.map(prompt_text).transpose()?),
        (1, false, false) | (2, false, true) if filter_allowed => (first, second),
        (2, true, true) => (first, second),
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

/// The first positional as the prompt (an input flag names the files): it must be text.
fn prompt_text(prompt: OsString) -> Result<String, RlmError> {
    prompt.into_string().map_err(|prompt| {
        RlmError::Usage(format!(
            "the prompt '{}' is not valid UTF-8: write the prompt as text",
            escape::name(&shown(&prompt))
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn o(v: &str) -> Option<OsString> {
        Some(v.into())
    }

    #[test]
    fn a_pattern_and_a_prompt() {
        let p = sort_positionals(o("src/*.ts"), s("List"), None, false, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (o("src/*.ts"), s("List")));
    }

    #[test]
    fn with_an_input_flag_the_one_positional_is_the_prompt() {
        let p = sort_positionals(o("List"), None, Some("--files-from"), true, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (None, s("List")));
        let p = sort_positionals(o("*.rs"), s("List"), Some("--files-from"), true, false).unwrap();
        assert_eq!((p.pattern, p.prompt), (o("*.rs"), s("List")));
    }

    #[test]
    fn an_axis_that_takes_no_filter_refuses_a_pattern() {
        let e = sort_positionals(o("*.rs"), s("List"), Some("--neighbors-of"), false, false).unwrap_err();
        assert!(e.to_string().contains("exactly one input axis"), "{e}");
    }

    #[test]
    fn prompt_file_leaves_only_the_pattern() {
        let p = sort_positionals(o("*.rs"), None, None, false, true).unwrap();
        assert_eq!((p.pattern, p.prompt), (o("*.rs"), None));
        let e = sort_positionals(o("*.rs"), s("x"), None, false, true).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        let p = sort_positionals(None, None, Some("--changed-since"), true, true).unwrap();
        assert_eq!((p.pattern, p.prompt), (None, None));
    }

    #[test]
    fn an_existing_directory_means_directory_mode() {
        let d = tempfile::tempdir().unwrap();
        fs_err::create_dir(d.path().join("src")).unwrap();
        fs_err::write(d.path().join("a.txt"), "a").unwrap();
        let source = source_for_pattern("src".into(), d.path(), DirectoryFlags::default()).unwrap();
        assert!(matches!(
            source,
            InputSource::Directory {
                max_files: 20,
                recursive: true,
                ..
            }
        ));
        let glob = source_for_pattern("src/*.rs".into(), d.path(), DirectoryFlags::default()).unwrap();
        assert_eq!(
            glob,
            InputSource::Glob {
                pattern: "src/*.rs".into()
            }
        );
        let flags = DirectoryFlags {
            no_recursive: true,
            ..DirectoryFlags::default()
        };
        let e = source_for_pattern("src/*.rs".into(), d.path(), flags.clone()).unwrap_err();
        assert!(e.to_string().contains("--no-recursive applies to a directory"), "{e}");
        let e = source_for_pattern("a.txt".into(), d.path(), flags.clone()).unwrap_err();
        assert!(e.to_string().contains("not to the file 'a.txt'"), "{e}");
        let missing = source_for_pattern("nope".into(), d.path(), flags).unwrap();
        assert!(matches!(missing, InputSource::Directory { .. }));
    }

    #[test]
    fn missing_pieces_are_named() {
        let e = sort_positionals(o("*.rs"), None, None, false, false).unwrap_err();
        assert!(e.to_string().contains("no prompt"), "{e}");
        let e = sort_positionals(None, None, None, false, false).unwrap_err();
        assert!(e.to_string().contains("no files named"), "{e}");
    }
}
