//! The walk: which files of a project are graph nodes and which configure resolution.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::error::IndexError;
use super::language::Language;

/// Directories never walked into (besides hidden ones and what .gitignore excludes):
/// dependencies, build output, virtual environments, and rlm's own state.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    "dist",
    "build",
    "vendor",
    ".venv",
    "venv",
    "__pycache__",
    ".aiwg",
];

/// One source file of the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Project-relative, `/`-separated: the node name.
    pub path: String,
    pub absolute: PathBuf,
    pub language: Language,
}

/// The files of a project the index cares about, sorted by path.
#[derive(Debug, Clone, Default)]
pub struct ProjectFiles {
    pub sources: Vec<SourceFile>,
    /// Project-relative paths of files that steer resolution (`tsconfig*.json`,
    /// `jsconfig*.json`, `go.mod`, `Cargo.toml`, `pyproject.toml`, `setup.py`, `setup.cfg`).
    pub configs: Vec<String>,
}

/// Whether a file name configures resolution.
pub fn is_config(name: &str) -> bool {
    let json_config = |prefix: &str| name.starts_with(prefix) && name.ends_with(".json");
    json_config("tsconfig")
        || json_config("jsconfig")
        || matches!(
            name,
            "go.mod" | "Cargo.toml" | "pyproject.toml" | "setup.py" | "setup.cfg"
        )
}

/// Walks `root`, respecting .gitignore (also outside a git repository), skipping hidden
/// directories and `SKIPPED_DIRS`, never following symlinks (no loops, nothing outside).
pub fn walk(root: &Path) -> Result<ProjectFiles, IndexError> {
    if !root.is_dir() {
        return Err(IndexError::NotADirectory(root.to_path_buf()));
    }
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false);
    builder.filter_entry(|entry| {
        entry.depth() == 0
            || !entry.file_type().is_some_and(|t| t.is_dir())
            || !SKIPPED_DIRS.contains(&entry.file_name().to_string_lossy().as_ref())
    });
    let mut files = ProjectFiles::default();
    for entry in builder.build() {
        let entry = entry.map_err(|e| IndexError::Walk {
            root: root.to_path_buf(),
            message: e.to_string(),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        // A name that is not UTF-8 cannot be a node name; such files are left out.
        let Some(path) = relative.to_str().map(|p| p.replace('\\', "/")) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy();
        if is_config(&name) {
            files.configs.push(path.clone());
        }
        if let Some(language) = Language::from_file_name(&name) {
            files.sources.push(SourceFile {
                path,
                absolute: entry.path().to_path_buf(),
                language,
            });
        }
    }
    files.sources.sort_by(|a, b| a.path.cmp(&b.path));
    files.configs.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_ignored_hidden_and_dependency_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "src/a.ts",
            "src/gen/out.ts",
            "node_modules/x/index.js",
            ".hidden/h.py",
            "target/debug/build.rs",
            ".aiwg/rlm/x.py",
            "README.md",
            "web/tsconfig.json",
            "go.mod",
        ] {
            fs_err::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            fs_err::write(root.join(f), "").unwrap();
        }
        fs_err::write(root.join(".gitignore"), "src/gen/\n").unwrap();
        let files = walk(root).unwrap();
        let paths: Vec<&str> = files.sources.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, vec!["src/a.ts"]);
        assert_eq!(files.configs, vec!["go.mod", "web/tsconfig.json"]);
    }

    #[test]
    fn a_file_is_not_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.ts");
        fs_err::write(&f, "").unwrap();
        assert!(matches!(walk(&f), Err(IndexError::NotADirectory(_))));
    }
}
