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

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::exclusions::{is_hidden, Exclusions};
use super::walk::Walk;
use super::{display_path, Manifest, WalkOptions};
use crate::error::{NoMatch, RlmError};

/// Resolves `pattern` against `cwd` into a manifest. No match is not an error here: the
/// caller decides how to say so.
///
/// A pattern is matched by `globset`, which takes text; a name need not be text. So a
/// pattern that is not UTF-8 is taken as the literal name of a file or directory, and
/// refused with a clear message when it holds a glob character as well.
pub fn resolve_glob(cwd: &Path, pattern: &OsStr, opts: &WalkOptions) -> Result<Manifest, RlmError> {
    match pattern.to_str() {
        Some(text) => resolve_text(cwd, text, opts),
        None => resolve_name(cwd, pattern, opts),
    }
}

/// A pattern that is text: a glob (an existing directory means everything below it).
fn resolve_text(cwd: &Path, pattern: &str, opts: &WalkOptions) -> Result<Manifest, RlmError> {
    let mut pattern = pattern.trim();
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    // `nonexist/` names a directory, whatever its last component.
    let names_directory = pattern.len() > 1 && pattern.ends_with('/');
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

    let components: Vec<&OsStr> = pattern.split('/').map(OsStr::new).collect();
    let literal_len = components.iter().take_while(|c| !has_meta(c)).count();
    Search {
        cwd,
        shown: pattern.clone(),
        absolute,
        components,
        literal_len,
        names_directory,
        exclusions: Exclusions::for_pattern(&pattern),
    }
    .run(opts, &|written| matcher.is_match(written))
}

/// A pattern that is not UTF-8: the literal name of a file, or of a directory meaning
/// everything below it.
fn resolve_name(cwd: &Path, name: &OsStr, opts: &WalkOptions) -> Result<Manifest, RlmError> {
    let shown = display_path(Path::new(name));
    if has_meta(name) || name.as_encoded_bytes().contains(&b'\\') {
        return Err(RlmError::Usage(format!(
            "the pattern '{}' is not valid UTF-8 and holds glob characters: a glob must be text; \
             match such names with a glob around them (as in 'src/*.txt'), name the file itself, \
             or list the files with --files-from",
            crate::escape::name(&shown)
        )));
    }
    let components = split_name(name)?;
    let literal_len = components.len();
    Search {
        cwd,
        shown: shown.clone(),
        absolute: Path::new(name).is_absolute(),
        components,
        literal_len,
        names_directory: name.as_encoded_bytes().ends_with(b"/"),
        exclusions: Exclusions::for_pattern(&shown),
    }
    // The walk starts at the name itself: everything it finds is what the name names.
    .run(opts, &|_| true)
}

/// A name's components split at `/`, without the leading `./` and the trailing `/`s (an
/// absolute name keeps its leading empty one, as a text pattern split at `/` does).
fn split_name(name: &OsStr) -> Result<Vec<&OsStr>, RlmError> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut parts: Vec<&OsStr> = name.as_bytes().split(|b| *b == b'/').map(OsStr::from_bytes).collect();
        while parts.len() > 1 && parts.first().is_some_and(|p| *p == ".") {
            parts.remove(0);
        }
        while parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
        Ok(parts)
    }
    #[cfg(not(unix))]
    {
        Err(RlmError::Usage(format!(
            "the pattern '{}' is not valid Unicode: name the files with --files-from",
            crate::escape::name(&display_path(Path::new(name)))
        )))
    }
}

/// One pattern's walk: where it starts (the pattern's literal directories) and how a path
/// found below is written (that prefix, then the path below it).
struct Search<'a> {
    cwd: &'a Path,
    /// The pattern as cleaned, shown in messages.
    shown: String,
    absolute: bool,
    /// The pattern split at `/` (an empty first one when it is absolute).
    components: Vec<&'a OsStr>,
    /// How many leading components hold no glob character.
    literal_len: usize,
    /// The pattern ends with `/`: its last component is a directory too.
    names_directory: bool,
    exclusions: Exclusions,
}

impl Search<'_> {
    /// Walks from the literal prefix, keeping what `matches` accepts of the path as written.
    fn run(self, opts: &WalkOptions, matches: &dyn Fn(&Path) -> bool) -> Result<Manifest, RlmError> {
        let Search {
            cwd,
            shown,
            absolute,
            components,
            literal_len,
            names_directory,
            exclusions,
        } = self;
        let prefix = PathBuf::from(join(&components[..literal_len]));
        let root = match (prefix.as_os_str().is_empty(), absolute) {
            (true, true) => PathBuf::from("/"),
            (true, false) => cwd.to_path_buf(),
            // An absolute prefix replaces `cwd`.
            (false, _) => cwd.join(&prefix),
        };
        if fs_err::symlink_metadata(&root).is_err() {
            // `nonexist/**/*.py`: say which directory is missing, not that nothing matched.
            let base = if absolute {
                PathBuf::from("/")
            } else {
                cwd.to_path_buf()
            };
            if let Some(missing) = missing_directory(&base, &components, literal_len, names_directory) {
                return Err(NoMatch::MissingDirectory {
                    missing,
                    pattern: shown,
                    cwd: display_path(cwd),
                }
                .into());
            }
            return Ok(Manifest::default());
        }
        if !opts.follow_links {
            if let Some(reason) = super::walk::named_link_leaves(&root, cwd) {
                return Ok(super::walk::skipped_name(display_path(&prefix), reason));
            }
        }
        // The name as the user wrote it: the literal prefix, then the path below it. Matched as
        // the bytes it is (a name need not be UTF-8), shown through `display_path`.
        let as_written = |path: &Path| -> PathBuf {
            let below = super::walk::below(path, &root);
            if below.as_os_str().is_empty() {
                prefix.clone()
            } else {
                prefix.join(below)
            }
        };
        let display_of = |path: &Path| -> String { display_path(&as_written(path)) };

        let names_hidden = components.iter().any(|c| is_hidden(c.as_encoded_bytes()));
        let found = Walk {
            root: &root,
            opts,
            exclusions,
            hidden: opts.hidden || names_hidden,
            max_depth: None,
            keep: None,
        }
        .run(&display_of, &|path, _| matches(&as_written(path)));
        Ok(found.into_manifest())
    }
}

/// `components` joined with `/`, as written (an absolute pattern's empty first component
/// gives the leading `/`).
fn join(components: &[&OsStr]) -> OsString {
    let mut joined = OsString::new();
    for (i, component) in components.iter().enumerate() {
        if i > 0 {
            joined.push("/");
        }
        joined.push(component);
    }
    joined
}

/// The first of the pattern's literal directories that does not exist (`nonexist`, or
/// `src/nonexist`, or the last component when the pattern ends with `/`), as written; `None`
/// when they all exist and only the last, literal file name is missing (that is "no files
/// matched").
fn missing_directory(base: &Path, components: &[&OsStr], literal_len: usize, names_directory: bool) -> Option<String> {
    let mut path = base.to_path_buf();
    for (i, component) in components[..literal_len].iter().enumerate() {
        path.push(component);
        if fs_err::symlink_metadata(&path).is_err() {
            let is_directory = i + 1 < components.len() || names_directory;
            return is_directory.then(|| display_path(Path::new(&join(&components[..=i]))));
        }
    }
    None
}

/// Whether a glob (or one of its components) contains a metacharacter.
pub fn has_meta(s: impl AsRef<OsStr>) -> bool {
    s.as_ref()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
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
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, content).unwrap();
        }
        dir
    }

    fn displays(m: &Manifest) -> Vec<&str> {
        m.files.iter().map(|f| f.display.as_ref()).collect()
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
        let m = resolve_glob(&d, "src/**/*.{js,ts}".as_ref(), &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/a.js", "src/b.ts", "src/deep/c.ts"]);
        let m = resolve_glob(&d, "**/*.ts".as_ref(), &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/b.ts", "src/deep/c.ts", "top.ts"]);
        let m = resolve_glob(&d, "src/*.ts".as_ref(), &OPTS).unwrap();
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
        assert_eq!(
            displays(&resolve_glob(&d, "**/*.ts".as_ref(), &OPTS).unwrap()),
            ["kept.ts"]
        );
        let no_ignore = WalkOptions {
            respect_ignore: false,
            ..OPTS
        };
        assert_eq!(
            displays(&resolve_glob(&d, "**/*.ts".as_ref(), &no_ignore).unwrap()),
            ["ignored.ts", "kept.ts"]
        );
        assert_eq!(
            displays(&resolve_glob(&d, "node_modules/**/*.ts".as_ref(), &OPTS).unwrap()),
            ["node_modules/dep/index.ts"]
        );
        assert_eq!(
            displays(&resolve_glob(&d, "**/*.d.ts".as_ref(), &OPTS).unwrap()),
            ["types.d.ts"]
        );
        assert_eq!(
            displays(&resolve_glob(&d, ".hidden/*.ts".as_ref(), &OPTS).unwrap()),
            [".hidden/h.ts"]
        );
    }

    #[test]
    fn binary_and_empty_files_are_skipped_with_reasons() {
        let d = tree(&[("a.txt", b"text"), ("b.txt", b"bin\0ary"), ("c.txt", b"")]);
        let m = resolve_glob(&d, "*.txt".as_ref(), &OPTS).unwrap();
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
        assert_eq!(
            displays(&resolve_glob(&d, "./lib/x.py".as_ref(), &OPTS).unwrap()),
            ["lib/x.py"]
        );
        assert_eq!(
            displays(&resolve_glob(&d, "lib".as_ref(), &OPTS).unwrap()),
            ["lib/x.py", "lib/y.py"]
        );
        let app = d.join("app");
        assert_eq!(
            displays(&resolve_glob(&app, "../lib/*.py".as_ref(), &OPTS).unwrap()),
            ["../lib/x.py", "../lib/y.py"]
        );
        let abs = format!("{}/lib/*.py", d.display());
        let m = resolve_glob(&app, OsStr::new(&abs), &OPTS).unwrap();
        assert_eq!(m.files.len(), 2);
        assert!(m.files[0].display.starts_with('/'));
        assert!(resolve_glob(&d, "lib/*.rs".as_ref(), &OPTS).unwrap().files.is_empty());
        assert!(resolve_glob(&d, "lib/nope.py".as_ref(), &OPTS)
            .unwrap()
            .files
            .is_empty());
        let err = resolve_glob(&d, "nope/**/*.rs".as_ref(), &OPTS)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("RLM Batch: no directory nope/\n"), "{err}");
        let err = resolve_glob(&d, "lib/deeper/x.py".as_ref(), &OPTS)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("RLM Batch: no directory lib/deeper/\n"), "{err}");
    }

    #[test]
    fn the_output_dir_is_not_an_input() {
        let d = tree(&[("docs/a.md", b"a"), ("results/docs-a.md.result.md", b"r")]);
        let opts = WalkOptions {
            exclude_dir: Some(d.join("docs/../results")),
            ..OPTS
        };
        assert_eq!(
            displays(&resolve_glob(&d, "**/*.md".as_ref(), &opts).unwrap()),
            ["docs/a.md"]
        );
        // A pattern that starts inside it means it.
        assert_eq!(
            displays(&resolve_glob(&d, "results/*.md".as_ref(), &opts).unwrap()),
            ["results/docs-a.md.result.md"]
        );
    }

    #[test]
    fn invalid_pattern_is_a_usage_error() {
        let d = tree(&[("a", b"a")]);
        let err = resolve_glob(&d, "src/[a-".as_ref(), &OPTS).unwrap_err();
        assert!(err.to_string().contains("invalid pattern"));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_harmless() {
        let d = tree(&[("a/f.txt", b"x")]);
        std::os::unix::fs::symlink(d.join("a"), d.join("a/loop")).unwrap();
        let m = resolve_glob(&d, "**/*.txt".as_ref(), &OPTS).unwrap();
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
        let m = resolve_glob(&d, "**/*".as_ref(), &OPTS).unwrap();
        assert_eq!(displays(&m), ["inside.txt", "src/a.txt"]);
        let skipped: Vec<&str> = m.skipped.iter().map(|s| s.path.as_str()).collect();
        assert!(
            skipped.contains(&"keys") && skipped.contains(&"src/notes.txt"),
            "{skipped:?}"
        );
        // A dangling link cannot be read: a failure of the run, not a skip.
        assert!(!skipped.contains(&"dangling.txt"), "{skipped:?}");
        assert_eq!(m.unreadable[0].path, "dangling.txt");
        let follow = WalkOptions {
            follow_links: true,
            ..OPTS
        };
        let m = resolve_glob(&d, "**/*".as_ref(), &follow).unwrap();
        assert!(displays(&m).contains(&"keys/id_rsa"));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_unreadable_and_never_opened() {
        let d = tree(&[("a.txt", b"a")]);
        let status = std::process::Command::new("mkfifo")
            .arg(d.join("pipe.txt"))
            .status()
            .unwrap();
        assert!(status.success());
        let m = resolve_glob(&d, "*.txt".as_ref(), &OPTS).unwrap();
        assert_eq!(displays(&m), ["a.txt"]);
        assert!(m
            .unreadable
            .iter()
            .any(|s| s.path == "pipe.txt" && s.reason.contains("FIFO")));
    }
}
