//! Inputs named by a list (`--files-from`, `--changed-since`) rather than a walk: each path
//! is checked the way the glob walker checks what it finds — missing (deleted) files,
//! directories are skipped with a reason; special files, dangling links and link loops are
//! unreadable (failures of the run); a path outside the working directory — a symbolic link
//! whose target lies there, or a listed `/etc/passwd` or `../../x` — is skipped and listed
//! without `--follow-links` — and an optional pattern keeps only the paths it matches.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::exclusions::Exclusions;
use super::read::read_candidates;
use super::walk::{link_leaves, special_kind, LinkProblem};
use super::{display_path, Manifest, SkippedFile, WalkOptions};
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
    let mut unreadable = Vec::new();
    for path in paths {
        let display = display_path(&path);
        if matcher.as_ref().is_some_and(|m| !m.is_match(&path)) {
            continue;
        }
        if let Some(ex) = &exclusions {
            let mut parts: Vec<String> = path
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let name = parts.pop().unwrap_or_default();
            if ex.excludes_file(&name) || parts.iter().any(|d| ex.excludes_dir(d)) {
                continue;
            }
        }
        let full = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(&path)
        };
        let entry = |reason: String| SkippedFile {
            path: display.clone(),
            reason,
        };
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                skipped.push(entry("does not exist (deleted?)".into()));
                continue;
            }
            Err(e) => {
                unreadable.push(entry(format!("cannot be read: {e}")));
                continue;
            }
        };
        if meta.file_type().is_symlink() {
            match link_leaves(&full, &boundary) {
                Some(LinkProblem::Broken(reason)) => {
                    unreadable.push(entry(reason));
                    continue;
                }
                Some(LinkProblem::Outside(reason)) if !opts.follow_links => {
                    skipped.push(entry(reason));
                    continue;
                }
                _ => {}
            }
        } else if !opts.follow_links {
            // A listed path that leaves the working directory (`/etc/passwd`, `../../x`)
            // is held to the policy of a link that does (issue 17).
            if let Some(reason) = outside_reason(&full, &boundary) {
                skipped.push(entry(reason));
                continue;
            }
        }
        // The target's type, looked at before anything opens it (a FIFO blocks its reader).
        match std::fs::metadata(&full) {
            Ok(m) if m.is_file() => candidates.push((full, display)),
            Ok(m) if m.is_dir() => skipped.push(entry("a directory: list files, not directories".into())),
            Ok(m) => unreadable.push(entry(format!(
                "not a regular file ({}): not read",
                special_kind(&m.file_type())
            ))),
            Err(e) => unreadable.push(entry(format!("cannot be read: {e}"))),
        }
    }
    candidates.sort_by(|a, b| a.1.cmp(&b.1));
    candidates.dedup_by(|a, b| a.1 == b.1);
    let mut manifest = read_candidates(candidates);
    manifest.skipped.extend(skipped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    manifest.unreadable.extend(unreadable);
    manifest.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(manifest)
}

/// Why a listed path that is no link is not taken: it lies outside the working directory.
fn outside_reason(full: &Path, boundary: &Path) -> Option<String> {
    let real = full.canonicalize().ok()?;
    (!real.starts_with(boundary)).then(|| {
        format!(
            "outside the working directory ({}): skipped (pass --follow-links to include it)",
            crate::escape::name(&display_path(&real))
        )
    })
}
