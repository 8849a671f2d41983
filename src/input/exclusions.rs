//! The default exclusions of `multi-file-rlm-design.md`: VCS, dependencies, build output,
//! editor files, binaries and media, lock files and generated files — and rlm's own run
//! directories (an earlier `-o review`), whose reports and answers are no input. Each
//! applies unless the user's pattern names it explicitly (`node_modules/**/*.js`,
//! `**/*.d.ts`, `review/*.result.md`).

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
    /// Every directory name the pattern names (a run directory so named is walked).
    named_dirs: Vec<String>,
    suffixes: Vec<&'static str>,
    lock_files: Vec<&'static str>,
}

impl Exclusions {
    /// Drops every default the pattern names explicitly, in any of its brace alternatives
    /// (`*.{png,jpg}` names `.png`).
    pub fn for_pattern(pattern: &str) -> Self {
        Self::lifted_by(expand_braces(pattern))
    }

    /// The exclusions in force under the directory mode's `--include` globs: a default is
    /// lifted when any of them names it; with none, every default applies.
    pub fn for_patterns(patterns: &[String]) -> Self {
        Self::lifted_by(patterns.iter().flat_map(|p| expand_braces(p)).collect())
    }

    fn lifted_by(alternatives: Vec<String>) -> Self {
        let names_dir = |d: &str| alternatives.iter().any(|a| a.split('/').any(|c| c == d));
        let mentions = |text: &str| alternatives.iter().any(|a| a.contains(text));
        Exclusions {
            dirs: DIRS.iter().copied().filter(|d| !names_dir(d)).collect(),
            named_dirs: alternatives
                .iter()
                .flat_map(|a| a.split('/'))
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
            suffixes: SUFFIXES.iter().copied().filter(|s| !mentions(s)).collect(),
            lock_files: LOCK_FILES.iter().copied().filter(|f| !mentions(f)).collect(),
        }
    }

    pub fn excludes_dir(&self, name: &str) -> bool {
        self.dirs.contains(&name)
    }

    /// Whether the directory `path` (named `name`) is an rlm run directory the pattern does
    /// not name: an earlier run's `-o` directory, whose outputs a walk leaves out.
    pub fn excludes_run_dir(&self, name: &str, path: &std::path::Path) -> bool {
        !self.named_dirs.iter().any(|d| d == name) && crate::run_dir::is_run_dir(path)
    }

    pub fn excludes_file(&self, name: &str) -> bool {
        self.lock_files.contains(&name) || self.suffixes.iter().any(|s| name.ends_with(s))
    }

    /// Why a file named `name` under the directories `dirs` is excluded, if it is: what a
    /// list's skipped entry says (a walk never goes there, so says nothing).
    pub fn reason(&self, dirs: &[String], name: &str) -> Option<String> {
        if let Some(dir) = dirs.iter().find(|d| self.excludes_dir(d)) {
            return Some(format!("in {dir}/"));
        }
        if self.lock_files.contains(&name) {
            return Some("a lock file".into());
        }
        self.suffixes
            .iter()
            .find(|s| name.ends_with(*s))
            .map(|s| format!("a *{s} file"))
    }
}

/// A hidden name: one that starts with `.` (not `.` or `..`). A walk leaves hidden files and
/// directories out unless `--hidden` is given or a component of the pattern is hidden.
pub fn is_hidden(name: &[u8]) -> bool {
    name.starts_with(b".") && name != b"." && name != b".."
}

/// Most alternatives a pattern expands to; beyond it the rest stay unexpanded (they only
/// decide which defaults are lifted).
const MAX_ALTERNATIVES: usize = 256;

/// The brace alternatives of a glob: `{a,b}/x.{c,d}` → `a/x.c`, `a/x.d`, `b/x.c`, `b/x.d`.
/// Nested braces expand too; a backslash escapes; an unclosed brace is kept as written.
fn expand_braces(pattern: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut todo = vec![pattern.to_string()];
    while let Some(p) = todo.pop() {
        match first_group(&p) {
            Some((open, close)) if done.len() + todo.len() < MAX_ALTERNATIVES => {
                let (head, inner, tail) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
                for alt in split_top_level(inner) {
                    todo.push(format!("{head}{alt}{tail}"));
                }
            }
            _ => done.push(p),
        }
    }
    done
}

/// Byte offsets of the first top-level `{` and its matching `}`.
fn first_group(p: &str) -> Option<(usize, usize)> {
    let bytes = p.as_bytes();
    let (mut depth, mut open, mut i) = (0usize, None, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return open.map(|o| (o, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `a,{b,c},d` → `a`, `{b,c}`, `d`.
fn split_top_level(inner: &str) -> Vec<&str> {
    let bytes = inner.as_bytes();
    let (mut parts, mut depth, mut start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&inner[start..]);
    parts
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

    #[test]
    fn names_inside_braces_count() {
        let e = Exclusions::for_pattern("**/*.{png,jpg}");
        assert!(!e.excludes_file("a.png") && !e.excludes_file("a.jpg"));
        assert!(e.excludes_file("a.gif"));
        let e = Exclusions::for_pattern("{build,src}/*.ts");
        assert!(!e.excludes_dir("build"));
        assert!(e.excludes_dir("dist"));
        let e = Exclusions::for_pattern("{a,{dist,out}}/x");
        assert!(!e.excludes_dir("dist") && !e.excludes_dir("out"));
    }

    #[test]
    fn includes_lift_what_they_name() {
        let e = Exclusions::for_patterns(&[]);
        assert!(e.excludes_dir("vendor") && e.excludes_file("a.min.js"));
        let e = Exclusions::for_patterns(&["*.py".into(), "vendor/**".into(), "*.min.js".into()]);
        assert!(!e.excludes_dir("vendor") && !e.excludes_file("a.min.js"));
        assert!(e.excludes_dir("dist") && e.excludes_file("a.map"));
    }

    #[test]
    fn reasons_name_the_rule() {
        let e = Exclusions::for_pattern("**/*");
        let dirs = |d: &[&str]| d.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(
            e.reason(&dirs(&["src", "node_modules", "z"]), "y.js").as_deref(),
            Some("in node_modules/")
        );
        assert_eq!(e.reason(&[], "package-lock.json").as_deref(), Some("a lock file"));
        assert_eq!(e.reason(&[], "app.min.js").as_deref(), Some("a *.min.js file"));
        assert_eq!(e.reason(&dirs(&["src"]), "app.js"), None);
        assert!(is_hidden(b".env") && !is_hidden(b".") && !is_hidden(b"..") && !is_hidden(b"a.env"));
    }

    #[test]
    fn brace_expansion() {
        let mut got = expand_braces("{a,b}/x.{c,d}");
        got.sort();
        assert_eq!(got, ["a/x.c", "a/x.d", "b/x.c", "b/x.d"]);
        assert_eq!(expand_braces("no-braces"), ["no-braces"]);
        assert_eq!(expand_braces("open{a,b"), ["open{a,b"]);
        assert_eq!(expand_braces(r"lit\{a,b}"), [r"lit\{a,b}"]);
        let many = "{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}";
        assert!(expand_braces(many).len() <= MAX_ALTERNATIVES + 4);
    }
}
