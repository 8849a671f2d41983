//! The default exclusions of `multi-file-rlm-design.md`: VCS, dependencies, build output,
//! editor files, binaries and media, lock files and generated files. Each applies unless
//! the user's pattern names it explicitly (`node_modules/**/*.js`, `**/*.d.ts`).

/// Directory names never descended into unless the pattern names them.
const DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "vendor",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".eggs",
    "dist",
    "build",
    "target",
    "out",
    ".next",
    ".idea",
    ".vscode",
    ".aiwg",
];

/// File-name suffixes excluded unless the pattern contains them.
const SUFFIXES: &[&str] = &[
    ".swp", ".swo", "~", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".svg", ".pdf", ".doc", ".docx", ".zip", ".tar",
    ".gz", ".bz2", ".exe", ".dll", ".so", ".dylib", ".wasm", ".pyc", ".class", ".min.js", ".min.css", ".map", ".d.ts",
];

/// Lock files excluded unless the pattern names them.
const LOCK_FILES: &[&str] = &[
    "package-lock.json",
    "yarn.lock",
    "Gemfile.lock",
    "poetry.lock",
    "Cargo.lock",
    "pnpm-lock.yaml",
    "composer.lock",
];

/// The exclusions in force for one pattern.
#[derive(Debug, Clone)]
pub struct Exclusions {
    dirs: Vec<&'static str>,
    suffixes: Vec<&'static str>,
    lock_files: Vec<&'static str>,
}

impl Exclusions {
    /// Drops every default the pattern names explicitly.
    pub fn for_pattern(pattern: &str) -> Self {
        let components: Vec<&str> = pattern.split('/').collect();
        Exclusions {
            dirs: DIRS.iter().copied().filter(|d| !components.contains(d)).collect(),
            suffixes: SUFFIXES.iter().copied().filter(|s| !pattern.contains(s)).collect(),
            lock_files: LOCK_FILES.iter().copied().filter(|f| !pattern.contains(f)).collect(),
        }
    }

    pub fn excludes_dir(&self, name: &str) -> bool {
        self.dirs.contains(&name)
    }

    pub fn excludes_file(&self, name: &str) -> bool {
        self.lock_files.contains(&name) || self.suffixes.iter().any(|s| name.ends_with(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply() {
        let e = Exclusions::for_pattern("**/*");
        assert!(e.excludes_dir("node_modules"));
        assert!(e.excludes_dir(".git"));
        assert!(!e.excludes_dir(".github"));
        assert!(e.excludes_file("types.d.ts"));
        assert!(e.excludes_file("app.min.js"));
        assert!(e.excludes_file("Cargo.lock"));
        assert!(!e.excludes_file("main.ts"));
    }

    #[test]
    fn named_exclusions_are_lifted() {
        let e = Exclusions::for_pattern("node_modules/**/*.d.ts");
        assert!(!e.excludes_dir("node_modules"));
        assert!(!e.excludes_file("types.d.ts"));
        assert!(e.excludes_dir("dist"));
        assert!(!Exclusions::for_pattern("**/Cargo.lock").excludes_file("Cargo.lock"));
    }
}
