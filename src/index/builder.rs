//! Building the index incrementally, and telling whether the stored one is stale.
//!
//! A build walks the project and hashes every source file; a file whose hash (and
//! language) matches the stored record keeps its parsed imports, any other is parsed
//! again, and records of files that are gone are dropped. Resolution then runs over all
//! files (see [`crate::index::resolve`]). The index is written only when it changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::IndexError;
use super::parse::extract_imports;
use super::project_files::{walk, ProjectFiles};
use super::project_index::{FileRecord, ProjectIndex, INDEX_VERSION};
use super::resolve::{resolve_all, SourceImports};
use crate::hash::sha256_hex;
use crate::printer::plural;

/// Files larger than this are nodes but are not parsed (minified bundles, generated code).
const MAX_PARSE_BYTES: usize = 4 * 1024 * 1024;

/// What a build did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildReport {
    /// The index file.
    pub index: PathBuf,
    /// Whether an index existed before (a usable one, of this version).
    pub existed: bool,
    /// Source files now indexed.
    pub files: usize,
    /// Files parsed: new ones plus changed ones.
    pub parsed: usize,
    /// Of `parsed`, files the previous index did not have.
    pub added: usize,
    /// Of `parsed`, files whose content changed.
    pub changed: usize,
    /// Files whose stored imports were reused unparsed.
    pub reused: usize,
    /// Files the previous index had that are gone.
    pub removed: usize,
    /// Edges in the new index.
    pub edges: usize,
    /// Whether the index file was (re)written; false when nothing changed.
    pub written: bool,
}

impl BuildReport {
    /// The one-line notice for a build done on the way to a query, or `None` when the index
    /// was already up to date.
    pub fn notice(&self) -> Option<String> {
        if !self.written {
            return None;
        }
        Some(if self.existed {
            format!(
                "the dependency index was stale ({} changed, {} added, {} removed): rebuilt {}",
                self.changed,
                self.added,
                self.removed,
                self.index.display()
            )
        } else {
            format!(
                "no dependency index yet: built {} ({}, {})",
                self.index.display(),
                plural(self.files, "file"),
                plural(self.edges, "edge")
            )
        })
    }
}

/// Builds (or brings up to date) the index of the project at `root` and stores it.
pub fn build(root: &Path) -> Result<(ProjectIndex, BuildReport), IndexError> {
    let files = walk(root)?;
    let previous = ProjectIndex::load(root)?;
    let old = previous.as_ref().map(|p| &p.files);
    let mut report = BuildReport {
        index: ProjectIndex::path(root),
        existed: previous.is_some(),
        files: 0,
        parsed: 0,
        added: 0,
        changed: 0,
        reused: 0,
        removed: 0,
        edges: 0,
        written: false,
    };
    let mut records: BTreeMap<String, FileRecord> = BTreeMap::new();
    for source in &files.sources {
        // A file deleted since the walk saw it is simply not indexed.
        let Some(bytes) = read_if_present(&source.absolute)? else {
            continue;
        };
        let sha256 = sha256_hex(&bytes);
        let prior = old.and_then(|o| o.get(&source.path));
        let imports = match prior {
            Some(p) if p.sha256 == sha256 && p.language == source.language => {
                report.reused += 1;
                p.imports.clone()
            }
            _ => {
                report.parsed += 1;
                if prior.is_some() {
                    report.changed += 1;
                } else {
                    report.added += 1;
                }
                if bytes.len() > MAX_PARSE_BYTES {
                    Vec::new()
                } else {
                    extract_imports(source.language, &String::from_utf8_lossy(&bytes))
                }
            }
        };
        records.insert(
            source.path.clone(),
            FileRecord {
                sha256,
                language: source.language,
                imports,
                edges: Vec::new(),
            },
        );
    }
    report.removed = old.map_or(0, |o| o.keys().filter(|k| !records.contains_key(*k)).count());
    let sources: BTreeMap<String, SourceImports<'_>> = records
        .iter()
        .map(|(path, r)| {
            let s = SourceImports {
                language: r.language,
                imports: &r.imports,
            };
            (path.clone(), s)
        })
        .collect();
    let mut edges = resolve_all(root, &sources, &files.configs);
    drop(sources);
    for (path, record) in &mut records {
        record.edges = edges.remove(path).unwrap_or_default();
    }
    let index = ProjectIndex {
        version: INDEX_VERSION,
        files: records,
        configs: config_hashes(root, &files)?,
    };
    report.files = index.files.len();
    report.edges = index.edge_count();
    if previous.as_ref() != Some(&index) {
        index.save(root)?;
        report.written = true;
    }
    Ok((index, report))
}

/// Whether the stored index of `root` is missing or out of date: a source file added,
/// removed or changed, or a configuration file resolution reads changed.
pub fn is_stale(root: &Path) -> Result<bool, IndexError> {
    let Some(index) = ProjectIndex::load(root)? else {
        return Ok(true);
    };
    let files = walk(root)?;
    if files.sources.len() != index.files.len() || config_hashes(root, &files)? != index.configs {
        return Ok(true);
    }
    for source in &files.sources {
        let Some(record) = index.files.get(&source.path) else {
            return Ok(true);
        };
        match read_if_present(&source.absolute)? {
            Some(bytes) if sha256_hex(&bytes) == record.sha256 => {}
            _ => return Ok(true),
        }
    }
    Ok(false)
}

/// The up-to-date index of `root`, building it first when it is missing or stale; the
/// notice says what was built (for the caller to show on stderr).
pub fn load_or_build(root: &Path) -> Result<(ProjectIndex, Option<String>), IndexError> {
    let (index, report) = build(root)?;
    Ok((index, report.notice()))
}

fn config_hashes(root: &Path, files: &ProjectFiles) -> Result<BTreeMap<String, String>, IndexError> {
    let mut out = BTreeMap::new();
    for config in &files.configs {
        if let Some(bytes) = read_if_present(&root.join(config))? {
            out.insert(config.clone(), sha256_hex(&bytes));
        }
    }
    Ok(out)
}

fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, IndexError> {
    match fs_err::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}
