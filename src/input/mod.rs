//! Input resolvers: each turns what the user named into a [`Manifest`] of files.
//!
//! Today there is the glob resolver; directory mode, graph neighbours, git diffs and JSONL
//! data sets arrive as further resolvers producing the same type.

pub mod changed;
mod exclusions;
pub mod files_from;
mod glob;

pub use glob::resolve_glob;

use std::path::PathBuf;

/// One file to process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Where to read it.
    pub path: PathBuf,
    /// How the user sees it: relative to the working directory (or absolute when outside
    /// it); this is `{file}` in prompts and the `artifactId` in cache keys.
    pub display: String,
    pub size: u64,
    /// sha256 of the content, lowercase hex.
    pub content_hash: String,
}

/// A matched file that will not be processed, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// The resolved inputs of a run, sorted by display path.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    pub files: Vec<InputFile>,
    pub skipped: Vec<SkippedFile>,
}

impl Manifest {
    /// Matched files, processed or not.
    pub fn matched(&self) -> usize {
        self.files.len() + self.skipped.len()
    }
}

/// Options shared by the resolvers.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    pub respect_ignore: bool,
    pub hidden: bool,
    /// A directory never walked into: the run's `--output-dir`, so one run's results do not
    /// become the next run's inputs (unless the pattern starts inside it).
    pub exclude_dir: Option<PathBuf>,
}

/// Lowercase hex of sha256(bytes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write;
        let _ = write!(out, "{b:02x}");
    }
    out
}
