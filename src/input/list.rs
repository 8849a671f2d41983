//! Inputs named by a list (`--files-from`, `--changed-since`) rather than a walk: each path
//! is checked the way the glob walker checks what it finds — missing (deleted) files,
//! directories are skipped with a reason; special files, dangling links and link loops are
//! unreadable (failures of the run); a path outside the working directory — a symbolic link
//! whose target lies there, or a listed `/etc/passwd` or `../../x` — is skipped and listed
//! without `--follow-links` — and an optional pattern keeps only the paths it matches.
//!
//! A list made by git (`--changed-since`), or filtered by a pattern, selects what that
//! pattern would select in a walk: the default exclusions and the hidden-file rule apply,
//! each lifted as the pattern lifts it for a glob, and what they leave out is listed as
//! skipped with the rule. `--changed-since main '**/*'` and `--files-from <(git diff …)
//! '**/*'` then select the same files, and a changed `.env` is sent by neither. A bare
//! `--files-from` list names each file, as a literal pattern does: its entries are sent,
//! and those a walk would have left out are named in a warning.

use std::collections::hash_map::{Entry, HashMap};
use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

use super::exclusions::{is_hidden, Exclusions};
use super::read::read_candidates;
use super::walk::{link_leaves, special_kind, LinkProblem};
use super::{display_path, Manifest, SkippedFile, WalkOptions};
use crate::error::RlmError;

/// How the list is filtered.
#[derive(Debug, Clone, Copy)]
pub struct ListFilter<'a> {
    /// A glob the display path must match (`src/**/*.ts`).
    pub pattern: Option<&'a str>,
    /// Leave out what a walk under the pattern would leave out — dependency and build
    /// folders, lock files, minified and generated files, hidden files (see the module
    /// doc). Without it every entry is taken as named, and those are only warned about.
    pub walk_rules: bool,
}

/// Listed entries named in the warning about files sent though a walk leaves them out.
const NAMED_SHOWN: usize = 5;

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
    let boundary = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let rules = WalkRules::new(filter.pattern.unwrap_or(""), opts.hidden);
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    let mut unreadable = Vec::new();
    let mut outside = Vec::new();
    // Entries sent though a walk would leave them out (a bare list), with the rule.
    let mut named_anyway: Vec<(String, String)> = Vec::new();
    // One file named twice (`a.txt` and `/abs/proj/a.txt`, or through a link) is sent
    // once, under the name listed first, and paid once (issue 17).
    let mut seen: HashMap<FileIdentity, String> = HashMap::new();
    for path in paths {
        let display = display_path(&path);
        if matcher.as_ref().is_some_and(|m| !m.is_match(&path)) {
            continue;
        }
        if let Some(rule) = rules.leaves_out(&path, cwd, &boundary) {
            if filter.walk_rules {
                skipped.push(SkippedFile {
                    path: display.clone(),
                    reason: rule.skip_reason(),
                });
                continue;
            }
            named_anyway.push((display.clone(), rule.short()));
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
    named_anyway.retain(|(display, _)| manifest.files.iter().any(|f| *f.display == **display));
    if let Some(warning) = named_anyway_warning(&named_anyway) {
        manifest.warnings.push(warning);
    }
    manifest.skipped.extend(skipped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    manifest.unreadable.extend(unreadable);
    manifest.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(manifest)
}

/// The walk's rules a listed path is held to: the default exclusions and the hidden-file
/// rule, as the pattern lifts them (see [`super::glob`]).
struct WalkRules {
    exclusions: Exclusions,
    /// `--hidden`, or a component of the pattern is hidden (`.github/**`).
    hidden: bool,
}

/// The rule that leaves a listed path out.
enum LeftOut {
    Hidden,
    /// Excluded by default: why (`in node_modules/`, `a lock file`).
    Excluded(String),
}

impl LeftOut {
    fn short(&self) -> String {
        match self {
            LeftOut::Hidden => "hidden".into(),
            LeftOut::Excluded(why) => why.clone(),
        }
    }

    fn skip_reason(&self) -> String {
        match self {
            LeftOut::Hidden => "hidden: not sent (pass --hidden, or name it in the pattern)".into(),
            LeftOut::Excluded(why) => {
                format!("excluded by default ({why}): not sent (name it in the pattern to include it)")
            }
        }
    }
}

impl WalkRules {
    fn new(pattern: &str, hidden: bool) -> WalkRules {
        let pattern = pattern.trim().trim_start_matches("./");
        WalkRules {
            exclusions: Exclusions::for_pattern(pattern),
            hidden: hidden || pattern.split('/').any(|c| is_hidden(c.as_bytes())),
        }
    }

    /// Which rule leaves `path` out, looking at its components below the working
    /// directory (as a walk from there would).
    fn leaves_out(&self, path: &Path, cwd: &Path, boundary: &Path) -> Option<LeftOut> {
        let below = if path.is_absolute() {
            path.strip_prefix(cwd)
                .or_else(|_| path.strip_prefix(boundary))
                .unwrap_or(path)
        } else {
            path
        };
        let parts: Vec<&std::ffi::OsStr> = below
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        if !self.hidden && parts.iter().any(|p| is_hidden(p.as_encoded_bytes())) {
            return Some(LeftOut::Hidden);
        }
        let (name, dirs) = parts.split_last()?;
        let dirs: Vec<String> = dirs.iter().map(|d| d.to_string_lossy().into_owned()).collect();
        self.exclusions
            .reason(&dirs, &name.to_string_lossy())
            .map(LeftOut::Excluded)
    }
}

/// The warning naming the entries of a bare list sent though a walk leaves such files out.
fn named_anyway_warning(named: &[(String, String)]) -> Option<String> {
    if named.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = named
        .iter()
        .take(NAMED_SHOWN)
        .map(|(path, why)| format!("{} ({why})", crate::escape::name(path)))
        .collect();
    if named.len() > NAMED_SHOWN {
        shown.push(format!("and {} more", named.len() - NAMED_SHOWN));
    }
    let (count, them) = match named.len() {
        1 => ("1 listed file is".to_string(), "it"),
        n => (format!("{n} listed files are"), "them"),
    };
    Some(format!(
        "{count} sent because the list names {them}, though a pattern would leave {them} out: {}; add a pattern \
         ('**/*') after --files-from to hold the list to the default exclusions and hidden-file rule",
        shown.join(", ")
    ))
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
pub(super) fn outside_reason(full: &Path, boundary: &Path) -> Option<String> {
    let real = full.canonicalize().ok()?;
    (!real.starts_with(boundary)).then(|| {
        format!(
            "outside the working directory ({}): skipped (pass --follow-links to include it)",
            crate::escape::name(&display_path(&real))
        )
    })
}
