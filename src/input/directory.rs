//! The directory resolver: `rlm batch DIR "prompt"` → a [`Manifest`] of the largest text
//! files below DIR (the multi-file mode of `multi-file-rlm-design.md`).
//!
//! The walk is the glob resolver's ([`super::walk`]): ignore files, hidden files, the
//! symbolic-link policy (nothing outside DIR unless `--follow-links`) and the default
//! exclusions, which a user `--include` lifts by naming them. `--include` globs keep what
//! they match and `--exclude` globs drop it, both matched against the path relative to
//! DIR; a glob without a `/` (`*.py`) matches at any depth. Files are listed largest first
//! (they drive the partition budget) and [`cap_largest`] keeps the `--max-files` largest.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::exclusions::Exclusions;
use super::walk::Walk;
use super::{display_path, Manifest, SkippedFile, WalkOptions};
use crate::error::{FlagError, RlmError};

/// What the user asked of the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryQuery<'a> {
    /// The directory as the user wrote it, relative to the working directory or absolute
    /// (a name need not be UTF-8).
    pub dir: &'a Path,
    pub include: &'a [String],
    pub exclude: &'a [String],
    pub recursive: bool,
}

/// The reason listed for each file dropped by `--max-files`.
pub const OVER_MAX_FILES: &str = "over --max-files";

/// Resolves a directory into a manifest, largest files first (the caller caps it with
/// [`cap_largest`]). A directory that does not exist gives an empty manifest: the caller
/// says "No files matched".
pub fn resolve_directory(cwd: &Path, query: &DirectoryQuery<'_>, opts: &WalkOptions) -> Result<Manifest, RlmError> {
    // As written, without a leading `./` or a trailing `/` (`.` is the working directory).
    let shown: PathBuf = query.dir.components().skip_while(|c| *c == Component::CurDir).collect();
    let shown = shown.as_path();
    let root: PathBuf = if shown.as_os_str().is_empty() {
        cwd.to_path_buf()
    } else {
        // An absolute directory replaces `cwd`.
        cwd.join(shown)
    };
    if !root.is_dir() {
        return Ok(Manifest::default());
    }
    if !opts.follow_links {
        if let Some(reason) = super::walk::named_link_leaves(&root, cwd) {
            return Ok(super::walk::skipped_name(display_path(shown), reason));
        }
    }
    let include = glob_set("--include", query.include)?;
    let exclude = glob_set("--exclude", query.exclude)?;
    // Globs match the path below DIR as the bytes it is; the display is `display_path`'s.
    let relative = {
        let root = root.clone();
        move |path: &Path| super::walk::below(path, &root).to_path_buf()
    };
    let display_of = |path: &Path| -> String {
        let below = relative(path);
        if below.as_os_str().is_empty() {
            display_path(shown)
        } else {
            display_path(&shown.join(below))
        }
    };
    let names_hidden = query.include.iter().any(|g| {
        g.split('/')
            .any(|c| c.starts_with('.') && c != "." && c != ".." && !c.starts_with(".*"))
    });
    // `--exclude` prunes directories too, so `--exclude tests` never walks into one.
    let prune_exclude = exclude.clone();
    let prune_relative = relative.clone();
    let found = Walk {
        root: &root,
        opts,
        exclusions: Exclusions::for_patterns(query.include),
        hidden: opts.hidden || names_hidden,
        max_depth: (!query.recursive).then_some(1),
        keep: (!query.exclude.is_empty())
            .then(|| -> super::walk::Prune { Box::new(move |path, _| !prune_exclude.is_match(prune_relative(path))) }),
    }
    .run(&display_of, &|path, _| {
        if query.include.is_empty() && query.exclude.is_empty() {
            return true;
        }
        let rel = relative(path);
        (query.include.is_empty() || include.is_match(&rel)) && !exclude.is_match(&rel)
    });
    let mut manifest = found.into_manifest();
    manifest
        .files
        .sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.display.cmp(&b.display)));
    Ok(manifest)
}

/// Keeps the `max_files` largest files (ties by path), in the order they were in; the rest
/// are listed as skipped ("over --max-files") and a warning says how many were found.
pub fn cap_largest(manifest: &mut Manifest, max_files: usize) {
    let count = manifest.files.len();
    if count <= max_files {
        return;
    }
    let mut by_size: Vec<usize> = (0..count).collect();
    let files = &manifest.files;
    by_size.sort_by(|&a, &b| {
        files[b]
            .size
            .cmp(&files[a].size)
            .then_with(|| files[a].display.cmp(&files[b].display))
    });
    let mut kept = vec![false; count];
    for &i in &by_size[..max_files] {
        kept[i] = true;
    }
    let mut dropped = Vec::new();
    let mut index = 0;
    manifest.files.retain(|f| {
        let keep = kept[index];
        index += 1;
        if !keep {
            dropped.push(SkippedFile {
                path: f.display.to_string(),
                reason: OVER_MAX_FILES.to_string(),
            });
        }
        keep
    });
    manifest.skipped.extend(dropped);
    manifest.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    manifest.warnings.push(format!(
        "Found {count} files, processing the {max_files} largest (raise --max-files)"
    ));
}

/// One glob set from the user's globs; a glob without a `/` matches at any depth.
fn glob_set(flag: &str, globs: &[String]) -> Result<GlobSet, RlmError> {
    let mut set = GlobSetBuilder::new();
    for glob in globs {
        let trimmed = glob.trim().trim_start_matches("./").trim_end_matches('/');
        let pattern = if trimmed.contains('/') || trimmed.starts_with("**") {
            trimmed.to_string()
        } else {
            format!("**/{trimmed}")
        };
        let compiled = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| RlmError::Usage(format!("{flag} '{glob}' is not a valid glob: {}", e.kind())))?;
        set.add(compiled);
    }
    set.build().map_err(|e| FlagError::invalid(flag)(e).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let p = dir.path().join(path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, content).unwrap();
        }
        dir
    }

    const OPTS: WalkOptions = WalkOptions {
        respect_ignore: true,
        hidden: false,
        follow_links: false,
        exclude_dir: None,
    };

    fn query<'a>(dir: &'a str, include: &'a [String], exclude: &'a [String]) -> DirectoryQuery<'a> {
        DirectoryQuery {
            dir: Path::new(dir),
            include,
            exclude,
            recursive: true,
        }
    }

    fn displays(m: &Manifest) -> Vec<&str> {
        m.files.iter().map(|f| f.display.as_ref()).collect()
    }

    #[test]
    fn largest_first_with_defaults_excluded() {
        let d = tree(&[
            ("src/a.py", b"1\n"),
            ("src/deep/b.py", b"1\n2\n3\n"),
            ("src/c.rs", b"1\n2\n"),
            ("src/node_modules/x.js", b"x"),
            ("src/app.min.js", b"x"),
        ]);
        let m = resolve_directory(d.path(), &query("./src/", &[], &[]), &OPTS).unwrap();
        assert_eq!(displays(&m), ["src/deep/b.py", "src/c.rs", "src/a.py"]);
        assert!(m.warnings.is_empty());
    }

    #[test]
    fn bare_globs_match_at_any_depth_and_slashes_anchor() {
        let d = tree(&[("a.py", b"a"), ("x/b.py", b"b"), ("x/c.rs", b"c"), ("tests/t.py", b"t")]);
        let inc = vec!["*.py".to_string()];
        let m = resolve_directory(d.path(), &query(".", &inc, &[]), &OPTS).unwrap();
        let mut got = displays(&m);
        got.sort_unstable();
        assert_eq!(got, ["a.py", "tests/t.py", "x/b.py"]);
        let exc = vec!["tests".to_string(), "x/*.rs".to_string()];
        let m = resolve_directory(d.path(), &query(".", &[], &exc), &OPTS).unwrap();
        let mut got = displays(&m);
        got.sort_unstable();
        assert_eq!(got, ["a.py", "x/b.py"]);
        let bad = vec!["[a-".to_string()];
        let e = resolve_directory(d.path(), &query(".", &bad, &[]), &OPTS).unwrap_err();
        assert!(e.to_string().contains("--include '[a-'"), "{e}");
    }

    #[test]
    fn cap_keeps_the_largest_and_lists_the_rest() {
        let d = tree(&[("a", b"1"), ("b", b"333"), ("c", b"22"), ("d", b"22")]);
        let mut m = resolve_directory(d.path(), &query(".", &[], &[]), &OPTS).unwrap();
        cap_largest(&mut m, 2);
        assert_eq!(displays(&m), ["b", "c"]);
        let dropped: Vec<(&str, &str)> = m.skipped.iter().map(|s| (s.path.as_str(), s.reason.as_str())).collect();
        assert_eq!(dropped, [("a", OVER_MAX_FILES), ("d", OVER_MAX_FILES)]);
        assert_eq!(
            m.warnings,
            ["Found 4 files, processing the 2 largest (raise --max-files)"]
        );
    }

    #[test]
    fn missing_directory_is_empty() {
        let d = tree(&[]);
        let m = resolve_directory(d.path(), &query("nope", &[], &[]), &OPTS).unwrap();
        assert_eq!(m.matched(), 0);
    }
}
