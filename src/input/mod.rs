//! Input resolvers: each turns what the user named into a [`Manifest`] of files.
//!
//! Globs, directories, file lists, git diffs and graph neighbours each have a resolver
//! producing the same type.

pub mod changed;
mod directory;
mod display_path;
mod exclusions;
pub mod files_from;
mod glob;
mod list;
pub mod neighbors;
mod read;
mod walk;

pub use directory::{cap_largest, resolve_directory, DirectoryQuery, OVER_MAX_FILES};
pub use display_path::{display_path, serialize_shown, serialize_shown_option, shown_name};
pub use glob::{has_meta, resolve_glob};
pub use list::{resolve_list, ListFilter};
pub use neighbors::{resolve_neighbors, NeighborInputs, NeighborsQuery};
pub use read::count_lines;
pub(crate) use read::read_regular;

use std::path::PathBuf;

use serde::Serialize;

/// One file to process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputFile {
    /// Where to read it.
    #[serde(skip)]
    pub path: std::sync::Arc<std::path::Path>,
    /// How the user sees it: relative to the working directory (or absolute when outside
    /// it); this is `{file}` in prompts and the `artifactId` in cache keys. Made by
    /// [`display_path`], so two different paths never share it (bytes that are not UTF-8
    /// are `\xHH`). May hold any character a file name can: escape it where it is printed
    /// ([`crate::escape`]).
    #[serde(rename = "path")]
    pub display: std::sync::Arc<str>,
    #[serde(rename = "bytes")]
    pub size: u64,
    pub lines: u64,
    /// sha256 of the content, lowercase hex.
    pub content_hash: std::sync::Arc<str>,
    /// The decoded text, from the one read that hashed it (`None` only for files that are
    /// not read, such as a list's entries in tests).
    #[serde(skip)]
    pub source: Option<std::sync::Arc<crate::source::SourceText>>,
    /// Its content type, detected from its name and first lines as it was read (on the
    /// reading threads, while the text is at hand).
    #[serde(skip)]
    pub detection: Option<crate::content::Detection>,
}

impl InputFile {
    /// The file's text: the one read's, while it is held, else read again and checked
    /// against the hash (see [`crate::source::SourceText::reread`]).
    pub fn text(&self) -> Result<std::sync::Arc<crate::source::SourceText>, String> {
        match &self.source {
            Some(source) if source.is_held() => Ok(source.clone()),
            _ => crate::source::SourceText::reread(&self.path, &self.content_hash),
        }
    }
}

/// A matched file that will not be processed, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// The resolved inputs of a run, sorted by display path.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Manifest {
    pub files: Vec<InputFile>,
    /// Matched but not for a model: binary, empty, links that leave the searched directory,
    /// directories that cannot be listed.
    pub skipped: Vec<SkippedFile>,
    /// Matched names that could not be read — permissions, FIFOs, sockets, devices, dangling
    /// links, link loops: failures of the run, not skips.
    pub unreadable: Vec<SkippedFile>,
    /// Said to the user before the run starts (files dropped by `--max-files`, paths
    /// skipped for lying outside).
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// Files let go of once the run's units were made ([`Manifest::let_go_of_files`]):
    /// matched still.
    #[serde(skip)]
    pub let_go: usize,
}

/// Outside paths named in the warning (the report lists them all).
const OUTSIDE_SHOWN: usize = 5;

impl Manifest {
    /// Matched files, processed or not.
    pub fn matched(&self) -> usize {
        self.files.len() + self.let_go + self.skipped.len() + self.unreadable.len()
    }

    /// Lets go of the files' list once a run's units are made and it has been described:
    /// the units hold what they need of each file (its path and hash are shared), and a
    /// list of 100,000 files would be held to the end for nothing.
    pub fn let_go_of_files(&mut self) {
        self.let_go += self.files.len();
        self.files = Vec::new();
    }

    /// Says which of the skipped paths were skipped for lying outside the working or the
    /// searched directory (`outside`, as displayed): a warning on stderr before the run,
    /// which `--quiet` does not hide, and not only a line of `report.json` (issue 17).
    fn warn_outside(&mut self, mut outside: Vec<String>) {
        if outside.is_empty() {
            return;
        }
        outside.sort();
        let mut named: Vec<String> = outside
            .iter()
            .take(OUTSIDE_SHOWN)
            .map(|p| crate::escape::name(p).into_owned())
            .collect();
        if outside.len() > OUTSIDE_SHOWN {
            named.push(format!("and {} more", outside.len() - OUTSIDE_SHOWN));
        }
        let (count, were, them) = match outside.len() {
            1 => ("1 path".to_string(), "was", "it"),
            n => (format!("{n} paths"), "were", "them"),
        };
        self.warnings.push(format!(
            "{count} outside the directory searched {were} not sent: {} (pass --follow-links to include {them})",
            named.join(", ")
        ));
    }
}

/// Options shared by the resolvers.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    pub respect_ignore: bool,
    pub hidden: bool,
    /// Follow symbolic links whose targets lie outside the searched directory.
    pub follow_links: bool,
    /// A directory never walked into: the run's `--output-dir`, so one run's results do not
    /// become the next run's inputs (unless the pattern starts inside it).
    pub exclude_dir: Option<PathBuf>,
}
