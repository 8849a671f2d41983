//! Rust: `mod` declarations to files, then `use` paths through the module tree.
//!
//! `mod x;` in `lib.rs`, `main.rs`, `mod.rs` or a crate root (`tests/*.rs`,
//! `examples/*.rs`, `benches/*.rs`, `src/bin/*.rs`, `build.rs`) is `x.rs` or `x/mod.rs`
//! beside it; in any other `foo.rs` it is under `foo/`. Files no `mod` reaches are crate
//! roots; walking `mod` edges from them gives every file its crate, so `crate::a::b` can
//! follow the modules `a`, `a/b` as far as they are files and land on the deepest one
//! (an item in it, or an inline module, stops the walk there). A path that starts with
//! the name of a Cargo package of the project (`use demo::cli` in `tests/`, in
//! `src/main.rs` or in another workspace member) walks from that package's `src/lib.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::{file_name, join, parent, Layout, SourceImports};
use crate::index::language::{EdgeKind, Language};
use crate::index::parse::RawImport;

/// A module: a file, and the inline `mod … { }` blocks inside it.
type Module = (String, Vec<String>);

/// The module tree of every Rust crate in the project.
pub(super) struct ModuleTree {
    /// Per file, its `mod` declarations: key `inline/…/name` → the file it names.
    children: BTreeMap<String, BTreeMap<String, String>>,
    /// The module that declares each file (a file, and the inline path inside it).
    declared_by: HashMap<String, Module>,
    /// The crate root of each file.
    crate_root: HashMap<String, String>,
    /// Library crates by name (`-` already `_`): their root file.
    libraries: HashMap<String, String>,
}

impl ModuleTree {
    pub(super) fn new(sources: &BTreeMap<String, SourceImports<'_>>, layout: &Layout) -> Self {
        let mut children: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, source) in sources.iter().filter(|(_, s)| s.language == Language::Rust) {
            for import in source.imports.iter().filter(|i| i.kind == EdgeKind::Mod) {
                if let Some((key, target)) = mod_target(file, &import.specifier, layout) {
                    children.entry(file.clone()).or_default().insert(key, target);
                }
            }
        }
        let mut declared_by = HashMap::new();
        for (file, mods) in &children {
            for (key, target) in mods {
                let inline: Vec<String> = key.split('/').map(String::from).collect();
                let inline = inline[..inline.len() - 1].to_vec();
                declared_by.entry(target.clone()).or_insert((file.clone(), inline));
            }
        }
        // Breadth-first from every root, so each file gets the nearest crate.
        let mut crate_root = HashMap::new();
        let mut queue: VecDeque<(String, String)> = sources
            .iter()
            .filter(|(f, s)| s.language == Language::Rust && !declared_by.contains_key(*f))
            .map(|(f, _)| (f.clone(), f.clone()))
            .collect();
        while let Some((file, root)) = queue.pop_front() {
            if crate_root.contains_key(&file) {
                continue;
            }
            for child in children.get(&file).into_iter().flat_map(|m| m.values()) {
                queue.push_back((child.clone(), root.clone()));
            }
            crate_root.insert(file, root);
        }
        ModuleTree {
            children,
            declared_by,
            crate_root,
            libraries: layout.rust_crates.iter().cloned().collect(),
        }
    }

    /// The files one Rust import depends on (at most one).
    pub(super) fn resolve(&self, file: &str, import: &RawImport) -> Vec<String> {
        let target = if import.kind == EdgeKind::Mod {
            self.children.get(file).and_then(|m| {
                let key = import
                    .specifier
                    .split_once("#path=")
                    .map_or(import.specifier.as_str(), |(n, _)| n);
                m.get(key).cloned()
            })
        } else {
            self.resolve_use(file, &import.specifier)
        };
        target.into_iter().collect()
    }

    fn resolve_use(&self, file: &str, spec: &str) -> Option<String> {
        if let Some(target) = spec
            .strip_prefix("?self::")
            .and_then(|rest| self.resolve_in_library(file, rest))
        {
            return Some(target);
        }
        let mut segments = spec.split("::").peekable();
        let own: Module = (file.to_string(), Vec::new());
        let (mut module, local_guess) = match segments.next()? {
            "crate" => ((self.crate_root.get(file)?.clone(), Vec::new()), false),
            "self" => (own, false),
            "?self" => (own, true),
            "super" => {
                let mut m = self.parent(&own)?;
                while segments.peek() == Some(&"super") {
                    segments.next();
                    m = self.parent(&m)?;
                }
                (m, false)
            }
            _ => return None,
        };
        let mut matched = 0;
        for segment in segments {
            match self.child(&module, segment) {
                Some(child) => {
                    module = child;
                    matched += 1;
                }
                None => break,
            }
        }
        // A 2018-style path that does not start with a child module names another crate.
        if local_guess && matched == 0 {
            return None;
        }
        Some(module.0)
    }

    /// `name::a::b` where `name` is a library crate of the project and not a child module
    /// of `file`: the deepest module file of `a::b` in that library (its root at least).
    fn resolve_in_library(&self, file: &str, path: &str) -> Option<String> {
        let mut segments = path.split("::");
        let first = segments.next()?;
        let lib = self.libraries.get(first)?;
        if self.child(&(file.to_string(), Vec::new()), first).is_some() {
            return None;
        }
        let mut module: Module = (lib.clone(), Vec::new());
        for segment in segments {
            match self.child(&module, segment) {
                Some(child) => module = child,
                None => break,
            }
        }
        Some(module.0)
    }

    /// The module `name` inside `module`: a file it declares, or an inline block that
    /// declares files.
    fn child(&self, module: &Module, name: &str) -> Option<Module> {
        let mods = self.children.get(&module.0)?;
        let mut path = module.1.clone();
        path.push(name.to_string());
        let key = path.join("/");
        if let Some(file) = mods.get(&key) {
            return Some((file.clone(), Vec::new()));
        }
        let prefix = format!("{key}/");
        mods.keys()
            .any(|k| k.starts_with(&prefix))
            .then(|| (module.0.clone(), path))
    }

    fn parent(&self, module: &Module) -> Option<Module> {
        match module.1.split_last() {
            Some((_, outer)) => Some((module.0.clone(), outer.to_vec())),
            None => self.declared_by.get(&module.0).cloned(),
        }
    }
}

/// The key (`inline/…/name`) and file of one `mod` declaration in `file`.
fn mod_target(file: &str, spec: &str, layout: &Layout) -> Option<(String, String)> {
    if let Some((name, path)) = spec.split_once("#path=") {
        let target = join(parent(file), path)?;
        return layout.has(&target).then(|| (name.to_string(), target));
    }
    let dir = parent(file);
    let name = file_name(file);
    let own_dir = matches!(name, "lib.rs" | "main.rs" | "mod.rs" | "build.rs")
        || matches!(file_name(dir), "tests" | "examples" | "benches" | "bin");
    let stem_dir = join(dir, name.trim_end_matches(".rs"))?;
    // The rule's directory first; the other one catches crate roots the rule misses.
    let dirs = if own_dir {
        [dir, stem_dir.as_str()]
    } else {
        [stem_dir.as_str(), dir]
    };
    dirs.iter().find_map(|d| {
        [format!("{spec}.rs"), format!("{spec}/mod.rs")]
            .iter()
            .filter_map(|rel| join(d, rel))
            .find(|candidate| layout.has(candidate))
            .map(|target| (spec.to_string(), target))
    })
}

/// The library crate of a `Cargo.toml`: its name (`-` as `_`) and root file, when it has
/// a `[package]` (`[lib] name` / `path` override the defaults `src/lib.rs`). A minimal
/// reader of the two tables, not a TOML parser.
pub(super) fn crate_library(cargo_toml: &str) -> Option<(String, String)> {
    let mut section = "";
    let (mut package, mut lib_name, mut lib_path) = (None, None, None);
    for line in cargo_toml.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_string();
        match (section, key.trim()) {
            ("[package]", "name") => package = Some(value),
            ("[lib]", "name") => lib_name = Some(value),
            ("[lib]", "path") => lib_path = Some(value),
            _ => {}
        }
    }
    let name = lib_name.or(package)?.replace('-', "_");
    Some((name, lib_path.unwrap_or_else(|| "src/lib.rs".to_string())))
}

#[cfg(test)]
mod tests {
    #[test]
    fn crate_library_reads_package_and_lib() {
        let toml = "[package]\nname = \"my-tool\" # comment\nversion = \"0.1.0\"\n\n[dependencies]\nname = \"x\"\n";
        assert_eq!(
            super::crate_library(toml),
            Some(("my_tool".into(), "src/lib.rs".into()))
        );
        let toml = "[package]\nname = \"a\"\n[lib]\nname = \"core_lib\"\npath = \"lib/mod.rs\"\n";
        assert_eq!(
            super::crate_library(toml),
            Some(("core_lib".into(), "lib/mod.rs".into()))
        );
        assert_eq!(super::crate_library("[workspace]\nmembers = [\"a\"]\n"), None);
    }
}
