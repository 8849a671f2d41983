//! The citation tuple `{artifact_id, content_hash, lines}` and its line range.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An inclusive range of 1-based lines: `L42` (one line) or `L42-58`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    /// `start..=end`; `None` unless `1 <= start <= end`.
    pub fn new(start: u32, end: u32) -> Option<LineRange> {
        (start >= 1 && start <= end).then_some(LineRange { start, end })
    }
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end {
            write!(f, "L{}", self.start)
        } else {
            write!(f, "L{}-{}", self.start, self.end)
        }
    }
}

impl FromStr for LineRange {
    type Err = String;

    /// `L42`, `L42-58` (and `L42-L58`; an en or em dash, as models often write, is the
    /// same hyphen); nothing else, no surrounding space.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a line range (L42 or L42-58)");
        let number = |n: &str| {
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse::<u32>().ok())
                .flatten()
        };
        let rest = s.strip_prefix('L').ok_or_else(bad)?;
        let (start, end) = match rest.split_once(['-', '\u{2013}', '\u{2014}']) {
            Some((a, b)) => (number(a), number(b.strip_prefix('L').unwrap_or(b))),
            None => (number(rest), number(rest)),
        };
        match (start, end) {
            (Some(0), Some(_)) => Err(format!("`{s}` is not a line range: lines start at L1")),
            (Some(a), Some(b)) if b < a => Err(format!("`{s}` is not a line range: it ends before it starts")),
            (Some(a), Some(b)) => LineRange::new(a, b).ok_or_else(bad),
            _ => Err(bad()),
        }
    }
}

impl Serialize for LineRange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LineRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A claim's pointer to its evidence: a project file, the version of it that was read
/// (first 16 hex characters of its sha256) and optionally the lines.
///
/// Identity is the whole triple `(artifact_id, content_hash, lines)` (the derived
/// equality and order): two ranges in the same file version are different evidence.
/// A citation without a hash is *path-only* (un-versioned).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Citation {
    /// Project-relative path of the cited file.
    pub artifact_id: String,
    /// sha256 of the file content, first 16 lowercase hex characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// The cited lines; none for a whole-file citation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
}

impl Citation {
    /// A citation of a file version.
    pub fn versioned(
        artifact_id: impl Into<String>,
        content_hash: impl Into<String>,
        lines: Option<LineRange>,
    ) -> Self {
        Citation {
            artifact_id: artifact_id.into(),
            content_hash: Some(content_hash.into()),
            lines,
        }
    }

    /// A path-only (un-versioned) citation.
    pub fn path_only(artifact_id: impl Into<String>, lines: Option<LineRange>) -> Self {
        Citation {
            artifact_id: artifact_id.into(),
            content_hash: None,
            lines,
        }
    }

    pub fn is_versioned(&self) -> bool {
        self.content_hash.is_some()
    }

    /// The inline markdown form: `[path@hash, L42-58]`, `[path@hash]`, `[path, L88]`.
    pub fn inline(&self) -> String {
        format!("[{}]", self.target())
    }

    /// The `## Sources` footer form: `path@hash (L42-58)`, `path (L88) [un-versioned]`.
    pub fn source_entry(&self) -> String {
        let mut s = match &self.content_hash {
            Some(h) => format!("{}@{h}", self.artifact_id),
            None => self.artifact_id.clone(),
        };
        if let Some(lines) = self.lines {
            s.push_str(&format!(" ({lines})"));
        }
        if !self.is_versioned() {
            s.push_str(" [un-versioned]");
        }
        s
    }

    fn target(&self) -> String {
        let mut s = self.artifact_id.clone();
        if let Some(h) = &self.content_hash {
            s.push('@');
            s.push_str(h);
        }
        if let Some(lines) = self.lines {
            s.push_str(", ");
            s.push_str(&lines.to_string());
        }
        s
    }
}

impl fmt::Display for Citation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inline())
    }
}

/// Whether `s` is a content hash: exactly 16 lowercase hex characters.
pub fn is_content_hash(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ranges_parse_strictly() {
        assert_eq!("L42".parse(), Ok(LineRange { start: 42, end: 42 }));
        assert_eq!("L42-58".parse(), Ok(LineRange { start: 42, end: 58 }));
        assert_eq!("L42-L58".parse(), Ok(LineRange { start: 42, end: 58 }));
        assert_eq!("L42\u{2013}58".parse(), Ok(LineRange { start: 42, end: 58 }));
        assert_eq!("L42\u{2014}L58".parse(), Ok(LineRange { start: 42, end: 58 }));
        for bad in [
            "42",
            "L",
            "L0",
            "L58-42",
            "L4 2",
            " L42",
            "L42-",
            "L-3",
            "l42",
            "L+4",
            "L99999999999",
        ] {
            assert!(bad.parse::<LineRange>().is_err(), "{bad}");
        }
        assert_eq!(LineRange::new(7, 7).unwrap().to_string(), "L7");
    }

    #[test]
    fn serde_shape_and_forms() {
        let c = Citation::versioned("src/a.ts", "a8f9c2d4e5f60718", LineRange::new(42, 58));
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({"artifact_id": "src/a.ts", "content_hash": "a8f9c2d4e5f60718", "lines": "L42-58"})
        );
        let back: Citation =
            serde_json::from_str(r#"{"artifact_id":"src/a.ts","content_hash":"a8f9c2d4e5f60718","lines":"L42-58"}"#)
                .unwrap();
        assert_eq!(back, c);
        let p: Citation = serde_json::from_str(r#"{"artifact_id":"x.py","content_hash":null}"#).unwrap();
        assert_eq!(p, Citation::path_only("x.py", None));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"artifact_id": "x.py"})
        );
        assert_eq!(c.inline(), "[src/a.ts@a8f9c2d4e5f60718, L42-58]");
        assert_eq!(c.source_entry(), "src/a.ts@a8f9c2d4e5f60718 (L42-58)");
        let legacy = Citation::path_only("src/legacy/auth.py", LineRange::new(88, 88));
        assert_eq!(legacy.inline(), "[src/legacy/auth.py, L88]");
        assert_eq!(legacy.source_entry(), "src/legacy/auth.py (L88) [un-versioned]");
    }

    #[test]
    fn hashes_are_sixteen_lowercase_hex() {
        assert!(is_content_hash("a8f9c2d4e5f60718"));
        assert!(!is_content_hash("A8F9C2D4E5F60718"));
        assert!(!is_content_hash("a8f9c2d4e5f6071"));
        assert!(!is_content_hash("a8f9c2d4e5f60718a"));
        assert!(!is_content_hash("g8f9c2d4e5f60718"));
    }
}
