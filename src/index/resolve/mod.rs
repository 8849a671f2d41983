//! Resolution: raw imports → edges between project files.
//!
//! Resolution sees the whole project (which files exist, `tsconfig.json`, `go.mod`, Python
//! source roots, C include roots) and is re-run over every file on every build — it is cheap
//! and in memory — so a new file can satisfy an import of an unchanged one. A specifier that
//! names nothing in the project (a package, the standard library, a system header) makes no
//! edge: only project files are nodes.

mod c;
mod go;
mod javascript;
mod python;
mod rust;
mod tsconfig;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::language::{EdgeKind, Language};
use super::parse::RawImport;
use tsconfig::Tsconfigs;

/// One dependency: the file this edge's owner depends on, and how.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Edge {
    /// Project-relative path with `/` separators.
    pub to: String,
    #[serde(rename = "type")]
    pub kind: EdgeKind,
}

/// What resolution needs to know about one source file.
pub struct SourceImports<'a> {
    pub language: Language,
    pub imports: &'a [RawImport],
}

/// Resolves the imports of every file to edges, each list sorted and without duplicates or
/// self-edges. `configs` are the project-relative paths of the configuration files found
/// by the walk (`tsconfig*.json`, `go.mod`, `pyproject.toml`, …), read from `root`.
pub fn resolve_all(
    root: &Path,
    sources: &BTreeMap<String, SourceImports<'_>>,
    configs: &[String],
) -> BTreeMap<String, Vec<Edge>> {
    let layout = Layout::new(root, sources.keys().cloned().collect(), configs);
    let rust_modules = rust::ModuleTree::new(sources, &layout);
    let mut out = BTreeMap::new();
    for (file, source) in sources {
        let mut edges = BTreeSet::new();
        for import in source.imports {
            let targets = match source.language {
                Language::JavaScript | Language::TypeScript => javascript::resolve(file, &import.specifier, &layout)
                    .into_iter()
                    .collect(),
                Language::Python => python::resolve(file, import, &layout),
                Language::Rust => rust_modules.resolve(file, import),
                Language::Go => go::resolve(&import.specifier, &layout),
                Language::C | Language::Cpp => c::resolve(file, &import.specifier, &layout).into_iter().collect(),
            };
            for to in targets {
                if to != *file {
                    edges.insert(Edge { to, kind: import.kind });
                }
            }
        }
        out.insert(file.clone(), edges.into_iter().collect());
    }
    out
}

/// The project as resolution sees it.
pub(crate) struct Layout {
    files: BTreeSet<String>,
    /// Files directly in each directory (`""` is the root).
    by_dir: HashMap<String, Vec<String>>,
    tsconfigs: Tsconfigs,
    /// `(module path, directory of its go.mod)`, longest module path first.
    go_modules: Vec<(String, String)>,
    /// `(crate name, its library root file)` of every Cargo package with a `src/lib.rs`
    /// (or `[lib] path`), so `use demo::x` in its tests and binaries reaches it.
    rust_crates: Vec<(String, String)>,
    /// Directories that hold Python top-level packages, in search order.
    python_roots: Vec<String>,
    /// Directories searched for C/C++ includes after the including file's own.
    include_roots: Vec<String>,
}

impl Layout {
    pub(crate) fn new(root: &Path, files: BTreeSet<String>, configs: &[String]) -> Self {
        let mut by_dir: HashMap<String, Vec<String>> = HashMap::new();
        let mut dirs = BTreeSet::new();
        for f in &files {
            let mut d = parent(f);
            by_dir.entry(d.to_string()).or_default().push(f.clone());
            while !d.is_empty() && dirs.insert(d.to_string()) {
                d = parent(d);
            }
        }
        let named = |name: &'static str| {
            configs
                .iter()
                .filter(move |c| file_name(c) == name)
                .map(|c| parent(c).to_string())
        };
        let mut go_modules: Vec<(String, String)> = named("go.mod")
            .filter_map(|dir| {
                let text = fs_err::read_to_string(root.join(&dir).join("go.mod")).ok()?;
                Some((go::module_path(&text)?, dir))
            })
            .collect();
        go_modules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        let rust_crates = named("Cargo.toml")
            .filter_map(|dir| {
                let text = fs_err::read_to_string(root.join(&dir).join("Cargo.toml")).ok()?;
                let (name, lib) = rust::crate_library(&text)?;
                let lib = join(&dir, &lib)?;
                files.contains(&lib).then_some((name, lib))
            })
            .collect();
        let mut python_roots = vec![String::new(), "src".to_string()];
        for marker in ["pyproject.toml", "setup.py", "setup.cfg"] {
            for dir in named(marker) {
                python_roots.push(join(&dir, "src").unwrap_or_default());
                python_roots.push(dir);
            }
        }
        dedupe_in_order(&mut python_roots);
        let mut include_roots: Vec<String> = dirs
            .iter()
            .filter(|d| matches!(file_name(d), "include" | "inc"))
            .cloned()
            .collect();
        include_roots.sort_by_key(|d| (d.matches('/').count(), d.clone()));
        include_roots.push("src".to_string());
        include_roots.push(String::new());
        dedupe_in_order(&mut include_roots);
        Layout {
            tsconfigs: Tsconfigs::load(root, configs),
            files,
            by_dir,
            go_modules,
            rust_crates,
            python_roots,
            include_roots,
        }
    }

    /// Whether `path` is a source file of the project (a node).
    pub(crate) fn has(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// The source files directly in `dir`.
    pub(crate) fn files_in(&self, dir: &str) -> &[String] {
        self.by_dir.get(dir).map(Vec::as_slice).unwrap_or_default()
    }
}

fn dedupe_in_order(v: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    v.retain(|x| seen.insert(x.clone()));
}

/// The directory part of a project-relative path (`""` for a file in the root).
pub(crate) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// The last component of a project-relative path.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map(|(_, n)| n).unwrap_or(path)
}

/// `dir/rel` with `.` and `..` folded; `None` when it climbs out of the project.
pub(crate) fn join(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_folds_dots_and_refuses_to_climb_out() {
        assert_eq!(join("src/a", "../b/./c.ts").as_deref(), Some("src/b/c.ts"));
        assert_eq!(join("", "./x.ts").as_deref(), Some("x.ts"));
        assert_eq!(join("src", "../../etc/passwd"), None);
        assert_eq!(parent("src/a.ts"), "src");
        assert_eq!(parent("a.ts"), "");
        assert_eq!(file_name("src/a.ts"), "a.ts");
    }
}
