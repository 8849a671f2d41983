//! The glob resolver: `src/**/*.{js,ts}` → a sorted [`Manifest`].
//!
//! The walk starts at the pattern's literal prefix (so `src/**` never looks outside
//! `src/`), respects `.gitignore` through the `ignore` crate and applies the default
//! exclusions. Symbolic links are followed only while they stay inside the directory being
//! searched: a link such as `keys -> ~/.ssh` is skipped and listed unless `--follow-links`
//! is given (ripgrep and fd do not follow links by default either), so only what the user
//! pointed at leaves the machine. Walk errors, dangling links and special files (FIFOs,
//! sockets) that match are listed in the report, never dropped. Every candidate is matched
//! as the user wrote it: the literal prefix plus the path below it, so `../lib/*.py` and
//! absolute patterns behave like relative ones.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::GlobBuilder;
use ignore::WalkBuilder;

use super::exclusions::Exclusions;
use super::read::read_candidates;
use super::{Manifest, SkippedFile, WalkOptions};
use crate::error::RlmError;

/// Resolves `pattern` against `cwd` into a manifest. No match is not an error here: the
/// caller decides how to say so.
pub fn resolve_glob(cwd: &Path, pattern: &str, opts: &WalkOptions) -> Result<Manifest, RlmError> {
    let mut pattern = pattern.trim();
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let pattern = pattern.trim_end_matches('/');
    let absolute = pattern.starts_with('/');
    // A pattern that names an existing directory means everything below it.
    let literal_dir = !has_meta(pattern) && {
        let p = if absolute {
            PathBuf::from(pattern)
        } else {
            cwd.join(pattern)
        };
        p.is_dir()
    };
    let pattern = if literal_dir {
        format!("{pattern}/**/*")
    } else {
        pattern.to_string()
    };

    let matcher = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| RlmError::Usage(format!("invalid pattern '{pattern}': {}", e.kind())))?
        .compile_matcher();

    let components: Vec<&str> = pattern.split('/').collect();
    let literal_len = components.iter().take_while(|c| !has_meta(c)).count();
    let prefix = components[..literal_len].join("/");
    let root = match (absolute, prefix.as_str()) {
        (true, "") => PathBuf::from("/"),
        (true, p) => PathBuf::from(p),
        (false, "") => cwd.to_path_buf(),
        (false, p) => cwd.join(p),
    };
    if std::fs::symlink_metadata(&root).is_err() {
        return Ok(Manifest::default());
    }
    let display_of = |path: &Path| -> String {
        let below = path.strip_prefix(&root).unwrap_or(path);
        let below = below.to_string_lossy().replace('\\', "/");
        match (prefix.as_str(), below.as_str()) {
            (p, "") => p.to_string(),
            ("", b) => b.to_string(),
            ("/", b) => format!("/{b}"),
            (p, b) => format!("{p}/{b}"),
        }
    };

    let exclusions = Exclusions::for_pattern(&pattern);
    let names_hidden = components.iter().any(|c| c.starts_with('.') && *c != "." && *c != "..");
    let respect = opts.respect_ignore;
    let mut builder = WalkBuilder::new(&root);
    builder
        .hidden(!(opts.hidden || names_hidden))
        .git_ignore(respect)
        .git_global(respect)
        .git_exclude(respect)
        .ignore(respect)
        .parents(respect)
        .require_git(false)
        .follow_links(true);
    // Compared canonically: the pattern may reach it as `../x/out` and the flag as `out`.
    let excluded_dir = opts.exclude_dir.as_deref().and_then(|d| d.canonicalize().ok());
    let boundary = (!opts.follow_links).then(|| root.canonicalize().unwrap_or_else(|_| root.clone()));
    // Filled by the walker's filter (which may run on any thread).
    let outside: Arc<Mutex<Vec<(PathBuf, String)>>> = Arc::default();
    let filter_exclusions = exclusions.clone();
    let filter_outside = outside.clone();
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        if entry.path_is_symlink() {
            if let Some(boundary) = &boundary {
                if let Some(reason) = link_leaves(entry.path(), boundary) {
                    lock(&filter_outside).push((entry.path().to_path_buf(), reason));
                    return false;
                }
            }
        }
        let name = entry.file_name().to_string_lossy();
        match entry.file_type() {
            Some(t) if t.is_dir() => {
                !filter_exclusions.excludes_dir(&name) && !is_same_dir(entry.path(), excluded_dir.as_deref())
            }
            _ => !filter_exclusions.excludes_file(&name),
        }
    });

    let mut candidates: Vec<(PathBuf, String)> = Vec::new();
    let mut skipped: Vec<SkippedFile> = Vec::new();
    for result in builder.build() {
        let entry = match result {
            Ok(entry) => entry,
            Err(e) => {
                // An unreadable directory, a dangling link, a loop: listed, never dropped.
                let (path, reason) = walk_error(&e);
                let path = path.map_or_else(|| "(walk)".to_string(), |p| display_of(&p));
                if reason.contains("File system loop") {
                    continue; // a loop only repeats what the walk already visits
                }
                skipped.push(SkippedFile { path, reason });
                continue;
            }
        };
        let Some(file_type) = entry.file_type() else { continue };
        if file_type.is_dir() {
            continue;
        }
        let display = display_of(entry.path());
        if !matcher.is_match(&display) {
            continue;
        }
        if file_type.is_file() {
            candidates.push((entry.into_path(), display));
        } else {
            skipped.push(SkippedFile {
                path: display,
                reason: format!("not a regular file ({})", special_kind(&file_type)),
            });
        }
    }
    for (path, reason) in lock(&outside).drain(..) {
        let display = display_of(&path);
        // Listed when it matches, or when it is a directory a match could lie under.
        if matcher.is_match(&display) || path.is_dir() {
            skipped.push(SkippedFile { path: display, reason });
        }
    }
    candidates.sort_by(|a, b| a.1.cmp(&b.1));
    candidates.dedup_by(|a, b| a.1 == b.1);
    let mut manifest = read_candidates(candidates);
    manifest.skipped.extend(skipped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(manifest)
}

/// Why a symbolic link is not followed: its target lies outside `boundary`, or it has none.
pub(super) fn link_leaves(link: &Path, boundary: &Path) -> Option<String> {
    match link.canonicalize() {
        Ok(target) if target.starts_with(boundary) => None,
        Ok(target) => Some(format!(
            "symbolic link to {} outside the searched directory: skipped (pass --follow-links to include it)",
            target.display()
        )),
        Err(e) => Some(format!("dangling symbolic link ({e})")),
    }
}

/// The path and message of a walk error.
fn walk_error(e: &ignore::Error) -> (Option<PathBuf>, String) {
    match e {
        ignore::Error::WithPath { path, err } => (Some(path.clone()), walk_error(err).1),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => walk_error(err),
        ignore::Error::Loop { child, .. } => (Some(child.clone()), "File system loop".into()),
        ignore::Error::Io(io) => (None, format!("cannot read: {io}")),
        other => (None, other.to_string()),
    }
}

fn special_kind(t: &std::fs::FileType) -> &'static str {
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
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `dir` is `excluded` (a canonical path); only a directory of the same name is
/// canonicalized, so the walk stays cheap.
fn is_same_dir(dir: &Path, excluded: Option<&Path>) -> bool {
    excluded.is_some_and(|ex| ex.file_name() == dir.file_name() && dir.canonicalize().is_ok_and(|d| d == ex))
}

/// Whether a glob component contains a metacharacter.
fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary tree, removed when dropped.
    struct Tree(tempfile::TempDir);

    impl std::ops::Deref for Tree {
        type Target = Path;
        fn deref(&self) -> &Path {
            self.0.path()
        }
    }

    fn tree(files: &[(&str, &[u8])]) -> Tree {
        let dir = Tree(tempfile::tempdir().unwrap());
        for (path, content) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    fn displays(m: &Manifest) -> Vec<&str> {
        m.files.iter().map(|f| f.display.as_str()).collect()
    }

    const OPTS: WalkOptions = WalkOptions {
        respect_ignore: true,
        hidden: false,
        follow_links: false,
        exclude_dir: None,
    };

    #[test]
    fn braces_double_star_and_sorting() {
        let d = tree(&[
            ("src/b.ts", b"b"),
            ("src/a.js", b"a"),
            ("src/deep/c.ts", b"c"),
            ("src/d.py", b"d"),
            ("top.ts", b"t"),
        ]);
        let m = resolve_glob(&d, "src/**/*.{js,ts}", &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/a.js", "src/b.ts", "src/deep/c.ts"]);
        let m = resolve_glob(&d, "**/*.ts", &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/b.ts", "src/deep/c.ts", "top.ts"]);
        let m = resolve_glob(&d, "src/*.ts", &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/b.ts"]);
    }

    #[test]
    fn gitignore_and_default_exclusions() {
        let d = tree(&[
            (".gitignore", b"ignored.ts\n"),
            ("ignored.ts", b"x"),
            ("kept.ts", b"x"),
            ("node_modules/dep/index.ts", b"x"),
            ("types.d.ts", b"x"),
            (".hidden/h.ts", b"x"),
        ]);
        assert_eq!(displays(&resolve_glob(&d, "**/*.ts", &OPTS).unwrap()), ["kept.ts"]);
        let no_ignore = WalkOptions {
            respect_ignore: false,
            ..OPTS
        };
        assert_eq!(
            displays(&resolve_glob(&d, "**/*.ts", &no_ignore).unwrap()),
            ["ignored.ts", "kept.ts"]
        );
        assert_eq!(
            displays(&resolve_glob(&d, "node_modules/**/*.ts", &OPTS).unwrap()),
            ["node_modules/dep/index.ts"]
        );
        assert_eq!(displays(&resolve_glob(&d, "**/*.d.ts", &OPTS).unwrap()), ["types.d.ts"]);
        assert_eq!(
            displays(&resolve_glob(&d, ".hidden/*.ts", &OPTS).unwrap()),
            [".hidden/h.ts"]
        );
    }

    #[test]
    fn binary_and_empty_files_are_skipped_with_reasons() {
        let d = tree(&[("a.txt", b"text"), ("b.txt", b"bin\0ary"), ("c.txt", b"")]);
        let m = resolve_glob(&d, "*.txt", &OPTS).unwrap();
        assert_eq!(displays(&m), ["a.txt"]);
        assert_eq!(m.skipped.len(), 2);
        assert!(m
            .skipped
            .iter()
            .any(|s| s.path == "b.txt" && s.reason.contains("binary")));
        assert_eq!(m.matched(), 3);
    }

    #[test]
    fn literal_paths_directories_and_parents() {
        let d = tree(&[("lib/x.py", b"x"), ("lib/y.py", b"y"), ("app/main.py", b"m")]);
        assert_eq!(displays(&resolve_glob(&d, "./lib/x.py", &OPTS).unwrap()), ["lib/x.py"]);
        assert_eq!(
            displays(&resolve_glob(&d, "lib", &OPTS).unwrap()),
            ["lib/x.py", "lib/y.py"]
        );
        let app = d.join("app");
        assert_eq!(
            displays(&resolve_glob(&app, "../lib/*.py", &OPTS).unwrap()),
            ["../lib/x.py", "../lib/y.py"]
        );
        let abs = format!("{}/lib/*.py", d.display());
        let m = resolve_glob(&app, &abs, &OPTS).unwrap();
        assert_eq!(m.files.len(), 2);
        assert!(m.files[0].display.starts_with('/'));
        assert!(resolve_glob(&d, "nope/**/*.rs", &OPTS).unwrap().files.is_empty());
    }

    #[test]
    fn the_output_dir_is_not_an_input() {
        let d = tree(&[("docs/a.md", b"a"), ("results/docs-a.md.result.md", b"r")]);
        let opts = WalkOptions {
            exclude_dir: Some(d.join("docs/../results")),
            ..OPTS
        };
        assert_eq!(displays(&resolve_glob(&d, "**/*.md", &opts).unwrap()), ["docs/a.md"]);
        // A pattern that starts inside it means it.
        assert_eq!(
            displays(&resolve_glob(&d, "results/*.md", &opts).unwrap()),
            ["results/docs-a.md.result.md"]
        );
    }

    #[test]
    fn invalid_pattern_is_a_usage_error() {
        let d = tree(&[("a", b"a")]);
        let err = resolve_glob(&d, "src/[a-", &OPTS).unwrap_err();
        assert!(err.to_string().contains("invalid pattern"));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_harmless() {
        let d = tree(&[("a/f.txt", b"x")]);
        std::os::unix::fs::symlink(d.join("a"), d.join("a/loop")).unwrap();
        let m = resolve_glob(&d, "**/*.txt", &OPTS).unwrap();
        assert_eq!(displays(&m), ["a/f.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn links_leaving_the_searched_directory_are_skipped_and_listed() {
        let outside = tree(&[("id_rsa", b"PRIVATE"), ("notes.txt", b"n")]);
        let d = tree(&[("src/a.txt", b"a")]);
        std::os::unix::fs::symlink(outside.0.path(), d.join("keys")).unwrap();
        std::os::unix::fs::symlink(outside.join("notes.txt"), d.join("src/notes.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("src/a.txt"), d.join("inside.txt")).unwrap();
        std::os::unix::fs::symlink(d.join("gone"), d.join("dangling.txt")).unwrap();
        let m = resolve_glob(&d, "**/*", &OPTS).unwrap();
        assert_eq!(displays(&m), ["inside.txt", "src/a.txt"]);
        let skipped: Vec<&str> = m.skipped.iter().map(|s| s.path.as_str()).collect();
        assert!(
            skipped.contains(&"keys") && skipped.contains(&"src/notes.txt"),
            "{skipped:?}"
        );
        assert!(skipped.contains(&"dangling.txt"), "{skipped:?}");
        let follow = WalkOptions {
            follow_links: true,
            ..OPTS
        };
        let m = resolve_glob(&d, "**/*", &follow).unwrap();
        assert!(displays(&m).contains(&"keys/id_rsa"));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_listed_not_read() {
        let d = tree(&[("a.txt", b"a")]);
        let status = std::process::Command::new("mkfifo")
            .arg(d.join("pipe.txt"))
            .status()
            .unwrap();
        assert!(status.success());
        let m = resolve_glob(&d, "*.txt", &OPTS).unwrap();
        assert_eq!(displays(&m), ["a.txt"]);
        assert!(m
            .skipped
            .iter()
            .any(|s| s.path == "pipe.txt" && s.reason.contains("FIFO")));
    }
}
