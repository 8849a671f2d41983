//! Inputs named by a list (`--files-from`, `--changed-since`) rather than a walk: each path
//! is checked the way the glob walker checks what it finds — missing (deleted) files,
//! directories are skipped with a reason; special files, dangling links and link loops are
//! unreadable (failures of the run); a path outside the working directory — a symbolic link
//! whose target lies there, or a listed `/etc/passwd` or `../../x` — is skipped and listed
//! without `--follow-links` — and an optional pattern keeps only the paths it matches.

use std::collections::hash_map::{Entry, HashMap};
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
    let mut outside = Vec::new();
    // One file named twice (`a.txt` and `/abs/proj/a.txt`, or through a link) is sent
    // once, under the name listed first, and paid once (issue 17).
    let mut seen: HashMap<FileIdentity, String> = HashMap::new();
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
        // std::fs, not fs_err, here and below: a reason is shown beside the file's name.
        #[allow(clippy::disallowed_methods)]
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
                    outside.push(display.clone());
                    skipped.push(entry(reason));
                    continue;
                }
                _ => {}
            }
        } else if !opts.follow_links {
            // A listed path that leaves the working directory (`/etc/passwd`, `../../x`)
            // is held to the policy of a link that does (issue 17).
            if let Some(reason) = outside_reason(&full, &boundary) {
                outside.push(display.clone());
                skipped.push(entry(reason));
                continue;
            }
        }
        // The target's type, looked at before anything opens it (a FIFO blocks its reader).
        #[allow(clippy::disallowed_methods)]
        match std::fs::metadata(&full) {
            Ok(m) if m.is_file() => match seen.entry(FileIdentity::of(&full, &m)) {
                Entry::Occupied(first) if *first.get() != display => {
                    let first = crate::escape::name(first.get()).into_owned();
                    skipped.push(entry(format!("the same file as {first}, listed too: sent once")));
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(slot) => {
                    slot.insert(display.clone());
                    candidates.push((full, display));
                }
            },
            Ok(m) if m.is_dir() => skipped.push(entry("a directory: list files, not directories".into())),
            Ok(m) => unreadable.push(entry(format!(
                "not a regular file ({}): not read",
                special_kind(m.file_type())
            ))),
            Err(e) => unreadable.push(entry(format!("cannot be read: {e}"))),
        }
    }
    candidates.sort_by(|a, b| a.1.cmp(&b.1));
    let mut manifest = read_candidates(candidates);
    manifest.warn_outside(outside);
    manifest.skipped.extend(skipped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    manifest.unreadable.extend(unreadable);
    manifest.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(manifest)
}

/// What makes two listed names one file: its device and inode where there are such
/// (which also joins hard links), else its canonical path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FileIdentity {
    #[cfg(unix)]
    Inode { device: u64, inode: u64 },
    #[cfg(not(unix))]
    Path(PathBuf),
}

impl FileIdentity {
    fn of(path: &Path, meta: &std::fs::Metadata) -> FileIdentity {
        #[cfg(unix)]
        {
            let _ = path;
            use std::os::unix::fs::MetadataExt;
            FileIdentity::Inode {
                device: meta.dev(),
                inode: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            FileIdentity::Path(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
        }
    }
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
