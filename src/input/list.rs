//! Inputs named by a list (`--files-from`, `--changed-since`) rather than a walk: each path
//! is checked the way the glob walker checks what it finds — missing (deleted) files,
//! directories and special files are skipped with a reason, a symbolic link whose target
//! lies outside the working directory is not followed without `--follow-links` — and an
//! optional pattern keeps only the paths it matches.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::exclusions::Exclusions;
use super::read::read_candidates;
use super::walk::link_leaves;
use super::{Manifest, SkippedFile, WalkOptions};
use crate::error::RlmError;

/// How the list is filtered.
#[derive(Debug, Clone, Copy)]
pub struct ListFilter<'a> {
    /// A glob the display path must match (`src/**/*.ts`).
    pub pattern: Option<&'a str>,
    /// Leave out what a walk leaves out by default (dependency and build folders, lock
    /// files, minified and generated files): for lists made by a tool, such as git.
    pub default_exclusions: bool,
}

/// The manifest of the listed paths (relative to `cwd`, or absolute).
pub fn resolve_list(
    cwd: &Path,
    paths: Vec<PathBuf>,
    filter: ListFilter<'_>,
    opts: &WalkOptions,
) -> Result<Manifest, RlmError> {
    let matcher = filter
        .pattern
        .map(|p| {
            let p = p.trim().trim_start_matches("./");
            GlobBuilder::new(p)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| RlmError::Usage(format!("invalid pattern '{p}': {}", e.kind())))
        })
        .transpose()?;
    let exclusions = filter
        .default_exclusions
        .then(|| Exclusions::for_pattern(filter.pattern.unwrap_or("")));
    let boundary = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    for path in paths {
        let display = path.to_string_lossy().replace('\\', "/");
        let display = display.trim_start_matches("./").to_string();
        if matcher.as_ref().is_some_and(|m| !m.is_match(&display)) {
            continue;
        }
        if let Some(ex) = &exclusions {
            let mut parts: Vec<&str> = display.split('/').collect();
            let name = parts.pop().unwrap_or("");
            if ex.excludes_file(name) || parts.iter().any(|d| ex.excludes_dir(d)) {
                continue;
            }
        }
        let full = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(&path)
        };
        let skip = |reason: String| SkippedFile {
            path: display.clone(),
            reason,
        };
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                skipped.push(skip("does not exist (deleted?)".into()));
                continue;
            }
            Err(e) => {
                skipped.push(skip(format!("cannot be read: {e}")));
                continue;
            }
        };
        if meta.file_type().is_symlink() && !opts.follow_links {
            if let Some(reason) = link_leaves(&full, &boundary) {
                skipped.push(skip(reason));
                continue;
            }
        }
        let target = std::fs::metadata(&full);
        match target {
            Ok(m) if m.is_file() => candidates.push((full, display)),
            Ok(m) if m.is_dir() => skipped.push(skip("a directory: list files, not directories".into())),
            Ok(_) => skipped.push(skip("not a regular file".into())),
            Err(e) => skipped.push(skip(format!("cannot be read: {e}"))),
        }
    }
    candidates.sort_by(|a, b| a.1.cmp(&b.1));
    candidates.dedup_by(|a, b| a.1 == b.1);
    let mut manifest = read_candidates(candidates);
    manifest.skipped.extend(skipped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(manifest)
}
