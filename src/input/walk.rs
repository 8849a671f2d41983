//! The directory walk shared by the glob and directory resolvers: ignore files, hidden
//! files, default exclusions, the run's output directory (and earlier runs' ones), and the
//! symbolic-link policy.
//!
//! Symbolic links are followed only while they stay inside the directory being walked: a
//! link such as `keys -> ~/.ssh` is skipped and listed unless `--follow-links` is given
//! (ripgrep and fd do not follow links by default either), so only what the user pointed
//! at leaves the machine. A matching name that cannot be read as a file — a dangling link, a
//! link loop, a FIFO, a socket or a device — is unreadable: a failure of the run, listed,
//! never silently skipped (a FIFO is never opened: reading one blocks). Other walk errors
//! (a directory that cannot be listed) are listed as skipped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::{DirEntry, WalkBuilder};

use super::exclusions::Exclusions;
use super::{SkippedFile, WalkOptions};

/// Decides, for a path below the walk's root, whether the walk keeps it: called for
/// directories (false prunes them) and files (false drops them) before the default
/// exclusions are checked.
pub type Prune = Box<dyn Fn(&Path, bool) -> bool + Send + Sync>;

/// One walk below `root`.
pub struct Walk<'a> {
    pub root: &'a Path,
    pub opts: &'a WalkOptions,
    pub exclusions: Exclusions,
    /// Walk into hidden files and directories.
    pub hidden: bool,
    /// `Some(1)`: only the root's own entries.
    pub max_depth: Option<usize>,
    /// An extra filter of the resolver (the directory mode's `--exclude`); `None` keeps all.
    pub keep: Option<Prune>,
}

/// What a walk found: files `(path, display)` that match, unsorted (each already being
/// read), what matched but is not sent, and what matched but cannot be read as a file.
pub struct Found {
    candidates: Vec<(PathBuf, String)>,
    pub skipped: Vec<SkippedFile>,
    pub unreadable: Vec<SkippedFile>,
    /// The skipped that lie outside (links leading out), as displayed.
    outside: Vec<String>,
    reading: super::read::ReadAhead,
}

impl Found {
    /// The manifest of what was found: each file once (sorted by path), read; the walk's
    /// skips and the reader's together, sorted by path.
    pub fn into_manifest(self) -> super::Manifest {
        let Found {
            candidates,
            skipped,
            unreadable,
            outside,
            reading,
        } = self;
        let mut manifest = reading.finish(candidates);
        manifest.warn_outside(outside);
        manifest.skipped.extend(skipped);
        manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        manifest.unreadable.extend(unreadable);
        manifest.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
        manifest
    }
}

impl Walk<'_> {
    /// Walks, naming every entry with `display_of` and keeping the files `matches` accepts
    /// (given the path and its display).
    pub fn run(self, display_of: &dyn Fn(&Path) -> String, matches: &dyn Fn(&Path, &str) -> bool) -> Found {
        let Walk {
            root,
            opts,
            exclusions,
            hidden,
            max_depth,
            keep,
        } = self;
        let respect = opts.respect_ignore;
        let mut builder = WalkBuilder::new(root);
        builder
            .hidden(!hidden)
            .git_ignore(respect)
            .git_global(respect)
            .git_exclude(respect)
            .ignore(respect)
            .parents(respect)
            .require_git(false)
            .max_depth(max_depth)
            .follow_links(true);
        // Compared canonically: the pattern may reach it as `../x/out` and the flag as `out`.
        let excluded_dir = opts.exclude_dir.as_deref().and_then(|d| d.canonicalize().ok());
        let boundary = (!opts.follow_links).then(|| root.canonicalize().unwrap_or_else(|_| root.to_path_buf()));
        // Filled by the walker's filter (which may run on any thread).
        let outside: Arc<Mutex<Vec<(PathBuf, LinkProblem)>>> = Arc::default();
        let filter_outside = outside.clone();
        builder.filter_entry(move |entry: &DirEntry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.path_is_symlink() {
                if let Some(boundary) = &boundary {
                    if let Some(problem) = link_leaves(entry.path(), boundary) {
                        lock(&filter_outside).push((entry.path().to_path_buf(), problem));
                        return false;
                    }
                }
            }
            let name = entry.file_name().to_string_lossy();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if keep.as_ref().is_some_and(|keep| !keep(entry.path(), is_dir)) {
                return false;
            }
            if is_dir {
                !exclusions.excludes_dir(&name)
                    && !is_same_dir(entry.path(), excluded_dir.as_deref())
                    && !exclusions.excludes_run_dir(&name, entry.path())
            } else {
                !exclusions.excludes_file(&name)
            }
        });

        let mut found = Found {
            candidates: Vec::new(),
            skipped: Vec::new(),
            unreadable: Vec::new(),
            outside: Vec::new(),
            reading: super::read::ReadAhead::start(),
        };
        for result in builder.build() {
            let entry = match result {
                Ok(entry) => entry,
                Err(e) => {
                    // An unreadable directory, a dangling link, a loop: listed, never dropped.
                    let WalkError::Unreadable { path, reason } = walk_error(&e) else {
                        continue; // a directory loop only repeats what the walk already visits
                    };
                    let Some(path) = path else {
                        found.skipped.push(SkippedFile {
                            path: "(walk)".into(),
                            reason,
                        });
                        continue;
                    };
                    let display = display_of(&path);
                    // A matching name that cannot be looked at is a file the run cannot read.
                    if matches(&path, &display) {
                        let reason = unreadable_link(&path).unwrap_or(reason);
                        found.unreadable.push(SkippedFile { path: display, reason });
                    } else {
                        found.skipped.push(SkippedFile { path: display, reason });
                    }
                    continue;
                }
            };
            let Some(file_type) = entry.file_type() else { continue };
            if file_type.is_dir() {
                continue;
            }
            let display = display_of(entry.path());
            if !matches(entry.path(), &display) {
                continue;
            }
            if file_type.is_file() {
                let path = entry.into_path();
                found.reading.read(path.clone(), display.clone());
                found.candidates.push((path, display));
            } else {
                // Never opened: a FIFO blocks its reader.
                found.unreadable.push(SkippedFile {
                    path: display,
                    reason: format!("not a regular file ({}): not read", special_kind(file_type)),
                });
            }
        }
        for (path, problem) in lock(&outside).drain(..) {
            let display = display_of(&path);
            match problem {
                LinkProblem::Broken(reason) if matches(&path, &display) => {
                    found.unreadable.push(SkippedFile { path: display, reason });
                }
                LinkProblem::Broken(_) => {}
                // Listed when it matches, or when it is a directory a match could lie under.
                LinkProblem::Outside(reason) => {
                    if matches(&path, &display) || path.is_dir() {
                        found.outside.push(display.clone());
                        found.skipped.push(SkippedFile { path: display, reason });
                    }
                }
            }
        }
        found
    }
}

/// What a resolver found when the name the user gave leads outside through a symbolic
/// link (see [`named_link_leaves`]): that name, skipped and listed.
pub fn skipped_name(display: String, reason: String) -> super::Manifest {
    let mut manifest = super::Manifest::default();
    manifest.warn_outside(vec![display.clone()]);
    manifest.skipped.push(SkippedFile { path: display, reason });
    manifest
}

/// Why the path a pattern or a directory names (`g/pw.txt`, `vendor/`) is not followed:
/// reaching it takes a symbolic link out of the working directory — `g/pw.txt ->
/// /etc/passwd`, or `g -> /etc` — the policy of a link met in a walk and of a listed path
/// (issue 17). A name written outside (`../lib`, `/srv/data`) is the user's explicit
/// choice, held only to a link of its own last component that leaves its directory.
/// `None`: follow it (also when it cannot be resolved: the walk reports that).
pub(super) fn named_link_leaves(root: &Path, cwd: &Path) -> Option<String> {
    let real = root.canonicalize().ok()?;
    let boundary = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    if real.starts_with(&boundary) {
        return None;
    }
    let written_inside = lexical(root).starts_with(lexical(cwd));
    let own_link_leaves = fs_err::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink())
        && root
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_none_or(|parent| !real.starts_with(parent));
    (written_inside || own_link_leaves).then(|| {
        format!(
            "a symbolic link leads it to {}, outside the working directory: skipped (pass --follow-links to \
             include it)",
            crate::escape::name(&super::display_path(&real))
        )
    })
}

/// `path` with `.` and `..` resolved by name, not by the file system.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` below `root`, where the walk of `root` found it. The walk's paths are `root`
/// joined with names, so this is a cut at a byte offset; `Path::strip_prefix` compares
/// component by component, which, done a few times for every file, was a visible part of
/// walking a large tree. Anything else falls back to it.
pub(super) fn below<'p>(path: &'p Path, root: &Path) -> &'p Path {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (p, r) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
        if let Some(rest) = p.strip_prefix(r) {
            let rest = if r.ends_with(b"/") {
                Some(rest)
            } else {
                rest.strip_prefix(b"/")
            };
            if let Some(rest) = rest.filter(|rest| !rest.starts_with(b"/")) {
                return Path::new(std::ffi::OsStr::from_bytes(rest));
            }
        }
    }
    path.strip_prefix(root).unwrap_or(path)
}

/// Why a symbolic link is not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum LinkProblem {
    /// Its target lies outside the searched directory: skipped and listed.
    Outside(String),
    /// It leads nowhere (dangling, or a loop): it cannot be read, a failure of the run.
    Broken(String),
}

/// Why a symbolic link is not followed: its target lies outside `boundary`, or it has none.
pub(super) fn link_leaves(link: &Path, boundary: &Path) -> Option<LinkProblem> {
    match link.canonicalize() {
        Ok(target) if target.starts_with(boundary) => None,
        Ok(target) => Some(LinkProblem::Outside(format!(
            "symbolic link to {} outside the searched directory: skipped (pass --follow-links to include it)",
            target.display()
        ))),
        Err(e) => Some(LinkProblem::Broken(broken_link_reason(link, &e))),
    }
}

/// The reason a symbolic link at `path` cannot be read, or `None` when `path` is no link.
pub(super) fn unreadable_link(path: &Path) -> Option<String> {
    let meta = fs_err::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let e = path.canonicalize().err()?;
    Some(broken_link_reason(path, &e))
}

/// "dangling symbolic link (to gone.txt)", "symbolic link loop".
fn broken_link_reason(link: &Path, e: &std::io::Error) -> String {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return "symbolic link loop: cannot be read".into();
    }
    match fs_err::read_link(link) {
        Ok(target) if e.kind() == std::io::ErrorKind::NotFound => {
            format!(
                "dangling symbolic link (to {}): cannot be read",
                crate::escape::name(&super::display_path(&target))
            )
        }
        _ => format!("broken symbolic link ({e}): cannot be read"),
    }
}

/// What an error of the walk is to it.
#[derive(Debug, PartialEq)]
enum WalkError {
    /// A directory loop (through a link): it only repeats what the walk already visits.
    Loop,
    /// Something that could not be looked at (at `path`, when the walk says where), and why.
    Unreadable { path: Option<PathBuf>, reason: String },
}

/// What a walk error is: a loop, or what could not be read and why.
fn walk_error(e: &ignore::Error) -> WalkError {
    match e {
        ignore::Error::WithPath { path, err } => match walk_error(err) {
            WalkError::Unreadable { reason, .. } => WalkError::Unreadable {
                path: Some(path.clone()),
                reason,
            },
            WalkError::Loop => WalkError::Loop,
        },
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => walk_error(err),
        ignore::Error::Loop { .. } => WalkError::Loop,
        ignore::Error::Io(io) => WalkError::Unreadable {
            path: None,
            reason: format!("cannot read: {io}"),
        },
        other => WalkError::Unreadable {
            path: None,
            reason: other.to_string(),
        },
    }
}

pub(super) fn special_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        } else if t.is_socket() {
            return "socket";
        } else if t.is_block_device() || t.is_char_device() {
            return "device";
        }
    }
    if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `dir` is `excluded` (a canonical path); only a directory of the same name is
/// canonicalized, so the walk stays cheap.
fn is_same_dir(dir: &Path, excluded: Option<&Path>) -> bool {
    excluded.is_some_and(|ex| ex.file_name() == dir.file_name() && dir.canonicalize().is_ok_and(|d| d == ex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_told_by_its_kind_and_an_unreadable_entry_keeps_its_path_and_reason() {
        let looped = ignore::Error::WithDepth {
            depth: 2,
            err: Box::new(ignore::Error::Loop {
                ancestor: "a".into(),
                child: "a/b/link".into(),
            }),
        };
        assert_eq!(walk_error(&looped), WalkError::Loop);
        // An error whose text only mentions a loop is no loop.
        let denied = ignore::Error::WithPath {
            path: "d/File system loop".into(),
            err: Box::new(ignore::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "File system loop? no: denied",
            ))),
        };
        match walk_error(&denied) {
            WalkError::Unreadable { path, reason } => {
                assert_eq!(path.as_deref(), Some(Path::new("d/File system loop")));
                assert!(reason.starts_with("cannot read: "), "{reason}");
            }
            WalkError::Loop => panic!("taken for a loop by its text"),
        }
    }

    #[test]
    fn below_cuts_the_root_off_as_strip_prefix_would() {
        for (path, root, want) in [
            ("/a/b/c.txt", "/a", "b/c.txt"),
            ("/a/b/c.txt", "/a/", "b/c.txt"),
            ("/x.txt", "/", "x.txt"),
            ("src//lib/x", "src//lib", "x"),
            ("/a/b", "/a/b", ""),
            ("/ab/c", "/a", "/ab/c"),
            ("/other/c", "/a", "/other/c"),
        ] {
            let (path, root) = (Path::new(path), Path::new(root));
            assert_eq!(below(path, root), Path::new(want), "{path:?} below {root:?}");
            assert_eq!(below(path, root), path.strip_prefix(root).unwrap_or(path));
        }
    }
}
