//! The glob resolver: `src/**/*.{js,ts}` → a sorted [`Manifest`].
//!
//! The walk starts at the pattern's literal prefix (so `src/**` never looks outside
//! `src/`), respects `.gitignore` through the `ignore` crate, follows symlinks with loop
//! detection, and applies the default exclusions. Every candidate is matched as the user
//! wrote it: the literal prefix plus the path below it, so `../lib/*.py` and absolute
//! patterns behave like relative ones.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use ignore::WalkBuilder;

use super::exclusions::Exclusions;
use super::{sha256_hex, InputFile, Manifest, SkippedFile, WalkOptions};
use crate::error::RlmError;

/// Bytes sniffed for a NUL to call a file binary.
const BINARY_SNIFF: usize = 8 * 1024;

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
    if !root.exists() {
        return Ok(Manifest::default());
    }

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
    let filter_exclusions = exclusions.clone();
    // Compared canonically: the pattern may reach it as `../x/out` and the flag as `out`.
    let excluded_dir = opts.exclude_dir.as_deref().and_then(|d| d.canonicalize().ok());
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
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
    // Walk errors (a symlink loop, an unreadable directory) are not fatal: the walker
    // already stops descending there, and a file we cannot see cannot be processed.
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let below = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        let below = below.to_string_lossy().replace('\\', "/");
        let display = match (prefix.as_str(), below.as_str()) {
            (p, "") => p.to_string(),
            ("", b) => b.to_string(),
            ("/", b) => format!("/{b}"),
            (p, b) => format!("{p}/{b}"),
        };
        if matcher.is_match(&display) {
            candidates.push((entry.into_path(), display));
        }
    }
    candidates.sort_by(|a, b| a.1.cmp(&b.1));
    candidates.dedup_by(|a, b| a.1 == b.1);
    Ok(read_candidates(candidates))
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

/// Hashes every candidate (in parallel: this dominates a fully cached rerun) and sorts out
/// the binary, empty and unreadable ones.
fn read_candidates(candidates: Vec<(PathBuf, String)>) -> Manifest {
    enum Read {
        File(InputFile),
        Skip(SkippedFile),
    }
    let read_one = |(path, display): (PathBuf, String)| -> Read {
        let skip = |reason: String| {
            Read::Skip(SkippedFile {
                path: display.clone(),
                reason,
            })
        };
        match std::fs::read(&path) {
            Err(e) => skip(format!("cannot read: {e}")),
            Ok(bytes) if bytes.is_empty() => skip("empty file".into()),
            Ok(bytes) if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) => {
                skip("binary file (NUL byte in the first 8 KiB)".into())
            }
            Ok(bytes) => Read::File(InputFile {
                size: bytes.len() as u64,
                content_hash: sha256_hex(&bytes),
                path,
                display,
            }),
        }
    };

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    let chunk = candidates.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<(PathBuf, String)>> = Vec::new();
    let mut rest = candidates;
    while rest.len() > chunk {
        let tail = rest.split_off(chunk);
        chunks.push(rest);
        rest = tail;
    }
    chunks.push(rest);

    let results: Vec<Vec<Read>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|c| scope.spawn(move || c.into_iter().map(read_one).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });

    let mut manifest = Manifest::default();
    for read in results.into_iter().flatten() {
        match read {
            Read::File(f) => manifest.files.push(f),
            Read::Skip(s) => manifest.skipped.push(s),
        }
    }
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &[u8])]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rlm-glob-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
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
            hidden: false,
            exclude_dir: None,
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
}
