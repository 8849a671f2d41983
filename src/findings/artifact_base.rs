//! Where the working directory sits in the repository, so that finding paths (relative to
//! the working directory) become paths relative to the repository root — what SARIF's
//! `%SRCROOT%` and GitHub's `file=` expect.
//!
//! A finding's path is the file's name as the run shows it (see
//! [`crate::input::display_path`]): `/` separates, and a backslash is an escape — `\xFF`
//! a byte of a name that is not UTF-8, `\\` a backslash — never a separator. A SARIF URI
//! is made of the name's real bytes, percent-encoded (`x%FF.ts`); an annotation shows the
//! escaped name.

use std::path::{Component, Path};

use std::borrow::Cow;

use percent_encoding::{percent_encode, AsciiSet, CONTROLS};

/// Characters escaped in a SARIF artifact URI path: those not allowed in a URI path
/// segment. `/` stays, so the URI keeps the directory structure.
const URI_PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The working directory's place in the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArtifactBase {
    /// The working directory relative to the repository root: forward slashes, no leading
    /// or trailing slash, empty at the root.
    prefix: String,
    /// The repository root as given, to recognise absolute paths inside it.
    root: Option<String>,
}

/// A finding path seen from the repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoPath {
    /// Inside the repository: relative to its root, forward slashes, no `.` or `..`.
    Inside(String),
    /// Outside it (or not placeable): the path as best known, absolute when it was.
    Outside(String),
}

impl ArtifactBase {
    /// The working directory is the repository root.
    pub fn at_root() -> ArtifactBase {
        ArtifactBase::default()
    }

    /// The working directory `cwd` inside the repository at `repo_root` (both absolute and
    /// canonical, as `git rev-parse --show-toplevel` and `std::env::current_dir` give them).
    /// A `cwd` outside `repo_root` is treated as the root.
    pub fn new(repo_root: &Path, cwd: &Path) -> ArtifactBase {
        let prefix = cwd
            .strip_prefix(repo_root)
            .map(|rel| {
                rel.components()
                    .filter_map(|c| match c {
                        Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        ArtifactBase {
            prefix,
            root: Some(slashes(&repo_root.to_string_lossy())),
        }
    }

    /// The working directory given as its path relative to the root (`git rev-parse
    /// --show-prefix` prints it: `sub/dir/`).
    pub fn with_prefix(prefix: &str) -> ArtifactBase {
        ArtifactBase {
            prefix: slashes(prefix).trim_matches('/').to_string(),
            root: None,
        }
    }

    /// `path` (relative to the working directory, or absolute) seen from the repository root.
    pub fn repo_path(&self, path: &str) -> RepoPath {
        let path = path.to_string();
        let joined = if path.starts_with('/') || has_drive(&path) {
            match self.root.as_deref().and_then(|root| strip_dir(&path, root)) {
                Some(inside) => inside.to_string(),
                None => return RepoPath::Outside(path),
            }
        } else if self.prefix.is_empty() {
            path.clone()
        } else {
            format!("{}/{}", self.prefix, path)
        };
        let mut parts: Vec<&str> = Vec::new();
        for part in joined.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return RepoPath::Outside(path);
                    }
                }
                p => parts.push(p),
            }
        }
        if parts.is_empty() {
            RepoPath::Outside(path)
        } else {
            RepoPath::Inside(parts.join("/"))
        }
    }

    /// The SARIF `artifactLocation`: `(uri, Some("%SRCROOT%"))` for a file in the repository
    /// (relative URI, percent-encoded), `(file URI or relative reference, None)` otherwise.
    pub fn sarif_uri(&self, path: &str) -> (String, Option<&'static str>) {
        match self.repo_path(path) {
            RepoPath::Inside(rel) => (encode(&rel), Some(SRCROOT)),
            RepoPath::Outside(p) if p.starts_with('/') => (format!("file://{}", encode(&p)), None),
            RepoPath::Outside(p) if has_drive(&p) => (format!("file:///{}", encode(&p)), None),
            RepoPath::Outside(p) => (encode(&p), None),
        }
    }

    /// The path GitHub's `file=` property wants: relative to the repository root when inside
    /// it, else as given.
    pub fn annotation_path(&self, path: &str) -> String {
        match self.repo_path(path) {
            RepoPath::Inside(p) | RepoPath::Outside(p) => p,
        }
    }
}

/// The `uriBaseId` GitHub code scanning resolves to the checkout's root.
pub const SRCROOT: &str = "%SRCROOT%";

fn slashes(path: &str) -> String {
    path.replace('\\', "/")
}

/// `C:/…` on Windows.
fn has_drive(path: &str) -> bool {
    let b = path.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/'
}

/// `path` below directory `dir`, without the leading slash.
fn strip_dir<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    let dir = dir.trim_end_matches('/');
    path.strip_prefix(dir)?.strip_prefix('/')
}

/// A URI path of the name's bytes, percent-encoded.
fn encode(path: &str) -> String {
    percent_encode(&name_bytes(path), URI_PATH).to_string()
}

/// The bytes a shown name stands for: `\xHH` is the byte HH, `\\` a backslash (see
/// [`crate::input::display_path`]); a name without a backslash is its UTF-8.
fn name_bytes(shown: &str) -> Cow<'_, [u8]> {
    if !shown.contains('\\') {
        return Cow::Borrowed(shown.as_bytes());
    }
    let mut bytes = Vec::with_capacity(shown.len());
    let mut rest = shown;
    while let Some(at) = rest.find('\\') {
        bytes.extend_from_slice(&rest.as_bytes()[..at]);
        let escape = &rest[at..];
        let byte = escape
            .get(2..4)
            .filter(|_| escape.starts_with("\\x"))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (byte, escape.starts_with("\\\\")) {
            (Some(b), _) => {
                bytes.push(b);
                rest = &escape[4..];
            }
            (None, true) => {
                bytes.push(b'\\');
                rest = &escape[2..];
            }
            (None, false) => {
                bytes.push(b'\\');
                rest = &escape[1..];
            }
        }
    }
    bytes.extend_from_slice(rest.as_bytes());
    Cow::Owned(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_root_paths_are_cleaned_only() {
        let base = ArtifactBase::at_root();
        assert_eq!(base.repo_path("src/a.ts"), RepoPath::Inside("src/a.ts".into()));
        assert_eq!(base.repo_path("./src/../lib/b.ts"), RepoPath::Inside("lib/b.ts".into()));
        // A backslash is an escape in a shown name, not a separator.
        assert_eq!(
            base.repo_path("src/x\\xFF.ts"),
            RepoPath::Inside("src/x\\xFF.ts".into())
        );
        assert_eq!(
            base.repo_path("../elsewhere.ts"),
            RepoPath::Outside("../elsewhere.ts".into())
        );
    }

    #[test]
    fn a_subdirectory_is_prefixed() {
        let base = ArtifactBase::new(Path::new("/repo"), Path::new("/repo/packages/web"));
        assert_eq!(
            base.repo_path("src/a.ts"),
            RepoPath::Inside("packages/web/src/a.ts".into())
        );
        assert_eq!(
            base.repo_path("../api/b.ts"),
            RepoPath::Inside("packages/api/b.ts".into())
        );
        assert_eq!(base.repo_path("../../../x"), RepoPath::Outside("../../../x".into()));
        assert_eq!(
            ArtifactBase::with_prefix("packages/web/"),
            ArtifactBase { root: None, ..base }
        );
    }

    #[test]
    fn absolute_paths_inside_and_outside_the_repository() {
        let base = ArtifactBase::new(Path::new("/repo"), Path::new("/repo/sub"));
        assert_eq!(base.repo_path("/repo/sub/a.rs"), RepoPath::Inside("sub/a.rs".into()));
        assert_eq!(
            base.repo_path("/repository/a.rs"),
            RepoPath::Outside("/repository/a.rs".into())
        );
        assert_eq!(base.repo_path("/etc/hosts"), RepoPath::Outside("/etc/hosts".into()));
    }

    #[test]
    fn cwd_outside_the_root_counts_as_the_root() {
        let base = ArtifactBase::new(Path::new("/repo"), Path::new("/tmp"));
        assert_eq!(base.repo_path("a"), RepoPath::Inside("a".into()));
    }

    #[test]
    fn sarif_uris_are_percent_encoded_relative_to_srcroot() {
        let base = ArtifactBase::with_prefix("my dir");
        assert_eq!(
            base.sarif_uri("src/a b#1%.ts"),
            ("my%20dir/src/a%20b%231%25.ts".to_string(), Some(SRCROOT))
        );
        assert_eq!(base.sarif_uri("naïve.py").0, "my%20dir/na%C3%AFve.py");
        // A name that is not UTF-8: its bytes; a backslash in a name: %5C.
        assert_eq!(base.sarif_uri("src/x\\xFF.ts").0, "my%20dir/src/x%FF.ts");
        assert_eq!(base.sarif_uri("src/a\\\\b\\xC3.ts").0, "my%20dir/src/a%5Cb%C3.ts");
        assert_eq!(base.sarif_uri("/opt/x y.c"), ("file:///opt/x%20y.c".to_string(), None));
        assert_eq!(
            ArtifactBase::at_root().sarif_uri("../up.c"),
            ("../up.c".to_string(), None)
        );
    }

    #[test]
    fn annotation_paths_are_repository_relative() {
        let base = ArtifactBase::with_prefix("web");
        assert_eq!(base.annotation_path("./src/a b.ts"), "web/src/a b.ts");
        assert_eq!(base.annotation_path("/abs/x"), "/abs/x");
    }
}
