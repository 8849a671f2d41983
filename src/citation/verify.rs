//! Checking citations against the files they cite, relative to a project root.
//!
//! A citation is **fresh** when its file exists inside the root, its hash is the first 16
//! hex of the file's current sha256 and its lines exist; **stale** when the file changed
//! since it was cited (stale evidence is not verifiable evidence, so it fails like a broken
//! one); **broken** when the file is missing, outside the root, unreadable, or the lines are
//! past its end; **malformed** when the citation itself is written wrongly (a hash that is
//! not 16 lowercase hex characters, a line range such as `L0` or `L50-5`): it is not
//! evidence, so it fails, and is never looked up as a file; **un-versioned** when it has no
//! hash (path-only) but the file and lines exist — a warning, an error under `--strict`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::content_hash;
use super::document::Found;
use super::tuple::{is_content_hash, Citation};
use crate::index::normalize_node_name;

/// The verdict on one citation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Fresh,
    Stale,
    Broken,
    Malformed,
    Unversioned,
}

impl Status {
    /// The word used in the human report.
    pub fn label(self) -> &'static str {
        match self {
            Status::Fresh => "fresh",
            Status::Stale => "stale",
            Status::Broken => "broken",
            Status::Malformed => "malformed",
            Status::Unversioned => "un-versioned",
        }
    }

    /// Whether this verdict fails verification.
    pub fn fails(self, strict: bool) -> bool {
        match self {
            Status::Fresh => false,
            Status::Stale | Status::Broken | Status::Malformed => true,
            Status::Unversioned => strict,
        }
    }
}

/// One distinct citation of a document, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    #[serde(flatten)]
    pub citation: Citation,
    pub status: Status,
    /// Why it is not fresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The file's hash now (when it could be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_hash: Option<String>,
    /// How many lines the file has now (when it could be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_lines: Option<usize>,
    /// The document lines it appears on (markdown), in order.
    pub occurrences: Vec<usize>,
    /// A malformed citation as it was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

/// Counts per verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub total: usize,
    pub fresh: usize,
    pub stale: usize,
    pub broken: usize,
    pub malformed: usize,
    pub unversioned: usize,
}

impl Summary {
    pub fn of(checks: &[Check]) -> Summary {
        let mut s = Summary {
            total: checks.len(),
            ..Summary::default()
        };
        for c in checks {
            *match c.status {
                Status::Fresh => &mut s.fresh,
                Status::Stale => &mut s.stale,
                Status::Broken => &mut s.broken,
                Status::Malformed => &mut s.malformed,
                Status::Unversioned => &mut s.unversioned,
            } += 1;
        }
        s
    }

    /// Whether nothing fails: no stale, broken or malformed citation (and, under `strict`,
    /// no un-versioned one, and at least one citation: a `--require-citations` answer that
    /// cites nothing is no evidence).
    pub fn passed(&self, strict: bool) -> bool {
        self.stale == 0
            && self.broken == 0
            && self.malformed == 0
            && (!strict || (self.unversioned == 0 && self.total > 0))
    }
}

/// Checks every distinct citation (identity, plus any problem) once, in first-seen order,
/// collecting the lines each appears on.
pub fn check_all(found: Vec<Found>, root: &Path) -> Vec<Check> {
    let mut checks: Vec<Check> = Vec::new();
    let mut problems: Vec<Option<String>> = Vec::new();
    for f in found {
        let same = checks
            .iter()
            .zip(&problems)
            .position(|(c, p)| c.citation == f.citation && *p == f.problem);
        let i = match same {
            Some(i) => i,
            None => {
                let check = match &f.problem {
                    // Not looked up: "no such file" would hide what is wrong with it.
                    Some(problem) => Check {
                        citation: f.citation.clone(),
                        status: Status::Malformed,
                        detail: Some(problem.clone()),
                        current_hash: None,
                        file_lines: None,
                        occurrences: Vec::new(),
                        written: f.written.clone(),
                    },
                    None => check(&f.citation, root),
                };
                checks.push(check);
                problems.push(f.problem);
                checks.len() - 1
            }
        };
        checks[i].occurrences.extend(f.line);
    }
    checks
}

/// Checks one citation against the file it cites under `root`.
pub fn check(citation: &Citation, root: &Path) -> Check {
    let mut result = Check {
        citation: citation.clone(),
        status: Status::Broken,
        detail: None,
        current_hash: None,
        file_lines: None,
        occurrences: Vec::new(),
        written: None,
    };
    if let Some(hash) = citation.content_hash.as_deref().filter(|h| !is_content_hash(h)) {
        result.status = Status::Malformed;
        result.detail = Some(format!("`{hash}` is not a content hash (16 lowercase hex characters)"));
        return result;
    }
    let path = match locate(root, &citation.artifact_id) {
        Ok(p) => p,
        Err(why) => {
            result.detail = Some(why);
            return result;
        }
    };
    // std::fs, not fs_err: the reason is shown beside the citation, which names the file.
    #[allow(clippy::disallowed_methods)]
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(_) if path.is_dir() => {
            result.detail = Some("is a directory, not a file".into());
            return result;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            result.detail = Some("no such file".into());
            return result;
        }
        Err(e) => {
            result.detail = Some(format!("cannot read it: {e}"));
            return result;
        }
    };
    let current = content_hash(&bytes);
    let lines = count_lines(&bytes);
    result.current_hash = Some(current.clone());
    result.file_lines = Some(lines);
    if let Some(hash) = &citation.content_hash {
        if *hash != current {
            result.status = Status::Stale;
            result.detail = Some(format!("the file changed since it was cited (now {current})"));
            return result;
        }
    }
    if let Some(range) = citation.lines {
        if range.end as usize > lines {
            let count = if lines == 1 {
                "1 line".to_string()
            } else {
                format!("{lines} lines")
            };
            result.detail = Some(format!("L{} is past the end of the file ({count})", range.end));
            return result;
        }
    }
    if citation.is_versioned() {
        result.status = Status::Fresh;
    } else {
        result.status = Status::Unversioned;
        result.detail = Some("path-only citation: no content hash to check the version against".into());
    }
    result
}

/// The file a citation names, refused when it lies outside `root` (by `..`, an absolute
/// path, or a symlink).
fn locate(root: &Path, artifact_id: &str) -> Result<PathBuf, String> {
    let relative = normalize_node_name(root, artifact_id).map_err(|_| "is outside the root".to_string())?;
    if relative.is_empty() {
        return Err("names the root directory, not a file".into());
    }
    let path = root.join(&relative);
    if let (Ok(real), Ok(real_root)) = (path.canonicalize(), root.canonicalize()) {
        if !real.starts_with(&real_root) {
            return Err("resolves (through a symlink) outside the root".into());
        }
    }
    Ok(path)
}

/// Lines as an editor numbers them: a final line without a newline counts.
fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count() + usize::from(bytes.last().is_some_and(|b| *b != b'\n'))
}
