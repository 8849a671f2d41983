//! The persisted index: per file its content hash, language, raw imports and resolved
//! edges, plus the hashes of the configuration files resolution read. Stored as
//! `.aiwg/rlm/index/graph-v1.json`; the version is in the name and in the document, so a
//! format change never reads old data wrongly (an unreadable index is rebuilt).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::IndexError;
use super::language::Language;
use super::parse::RawImport;
use super::resolve::Edge;

/// The format version of [`ProjectIndex`].
pub const INDEX_VERSION: u32 = 1;

/// Where the index lives, relative to the project root.
pub const INDEX_DIR: &str = ".aiwg/rlm/index";

/// The index file name (carries the version).
pub const INDEX_FILE: &str = "graph-v1.json";

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// sha256 of the content, lowercase hex (64 characters).
    pub sha256: String,
    pub language: Language,
    /// What the file imports as written; kept so an unchanged file is never re-parsed.
    pub imports: Vec<RawImport>,
    /// Its outgoing edges: the project files it depends on.
    pub edges: Vec<Edge>,
}

/// The dependency index of one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectIndex {
    pub version: u32,
    /// Every source file, by project-relative path.
    pub files: BTreeMap<String, FileRecord>,
    /// sha256 of each configuration file resolution read (`tsconfig.json`, `go.mod`, …).
    pub configs: BTreeMap<String, String>,
}

impl ProjectIndex {
    /// The number of edges over all files.
    pub fn edge_count(&self) -> usize {
        self.files.values().map(|f| f.edges.len()).sum()
    }

    /// The path of the index file of the project at `root`.
    pub fn path(root: &Path) -> PathBuf {
        root.join(INDEX_DIR).join(INDEX_FILE)
    }

    /// The stored index of `root`, or `None` when there is none or it cannot be used (another
    /// version, unparsable): both mean "build it".
    pub fn load(root: &Path) -> Result<Option<ProjectIndex>, IndexError> {
        let path = Self::path(root);
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(serde_json::from_str::<ProjectIndex>(&text)
            .ok()
            .filter(|i| i.version == INDEX_VERSION))
    }

    /// Writes the index atomically: a temporary file in the same directory, flushed to disk,
    /// then renamed over the old one, so a reader or a crash sees the old index or the new.
    pub fn save(&self, root: &Path) -> Result<PathBuf, IndexError> {
        let path = Self::path(root);
        let dir = root.join(INDEX_DIR);
        fs_err::create_dir_all(&dir)?;
        let mut json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        json.push(b'\n');
        // The error names the path already.
        crate::fs_atomic::write_atomic(&path, &json, crate::fs_atomic::Durability::Synced)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::language::EdgeKind;

    #[test]
    fn save_then_load_round_trips_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = BTreeMap::new();
        files.insert(
            "src/a.ts".to_string(),
            FileRecord {
                sha256: "ab".repeat(32),
                language: Language::TypeScript,
                imports: vec![RawImport::new("./b", EdgeKind::Import)],
                edges: vec![Edge {
                    to: "src/b.ts".into(),
                    kind: EdgeKind::Import,
                }],
            },
        );
        let index = ProjectIndex {
            version: INDEX_VERSION,
            files,
            configs: BTreeMap::new(),
        };
        let path = index.save(dir.path()).unwrap();
        index.save(dir.path()).unwrap();
        assert_eq!(ProjectIndex::load(dir.path()).unwrap(), Some(index));
        let names: Vec<_> = fs_err::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(INDEX_FILE)]);
        let json: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["files"]["src/a.ts"]["edges"][0]["type"], "import");
    }

    #[test]
    fn another_version_or_garbage_reads_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ProjectIndex::load(dir.path()).unwrap(), None);
        fs_err::create_dir_all(dir.path().join(INDEX_DIR)).unwrap();
        let path = ProjectIndex::path(dir.path());
        fs_err::write(&path, r#"{"version": 2, "files": {}, "configs": {}}"#).unwrap();
        assert_eq!(ProjectIndex::load(dir.path()).unwrap(), None);
        fs_err::write(&path, "{ not json").unwrap();
        assert_eq!(ProjectIndex::load(dir.path()).unwrap(), None);
    }
}
