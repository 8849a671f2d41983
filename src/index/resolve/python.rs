//! Python imports: modules (`a/b.py`, `a/b.pyi`) and packages (`a/b/__init__.py`) under
//! the source roots, relative imports against the importing file's package, and
//! `from X import name` where `name` may itself be a submodule.
//!
//! Roots, in order: the directory above the file's top-most package (its script
//! directory when it is in no package), the project root, `src/`, and every directory with
//! a `pyproject.toml` / `setup.py` / `setup.cfg` (and its `src/`).

use super::{join, parent, Layout};
use crate::index::parse::RawImport;

/// The project files one import statement depends on.
pub(super) fn resolve(file: &str, import: &RawImport, layout: &Layout) -> Vec<String> {
    let spec = import.specifier.as_str();
    let dots = spec.len() - spec.trim_start_matches('.').len();
    let segments: Vec<&str> = spec[dots..].split('.').filter(|s| !s.is_empty()).collect();
    let bases: Vec<String> = if dots > 0 {
        // `from . import x` is the file's own package; each further dot goes one up.
        let mut base = parent(file).to_string();
        for _ in 1..dots {
            if base.is_empty() {
                return Vec::new();
            }
            base = parent(&base).to_string();
        }
        vec![base]
    } else {
        roots_for(file, layout)
    };
    let mut out = Vec::new();
    let mut names_left = import.names.is_empty();
    for name in &import.names {
        let mut path = segments.clone();
        path.push(name);
        match bases.iter().find_map(|b| module_file(b, &path, layout)) {
            Some(sub) => out.push(sub),
            None => names_left = true,
        }
    }
    // The module itself: for `import a.b.c` the longest prefix that exists (`c` may be a
    // name inside `a/b.py`); for `from a.b import x` when some name is not a submodule.
    if names_left {
        let exact_only = dots > 0 || !import.names.is_empty();
        let module = bases.iter().find_map(|b| {
            let shortest = if exact_only { segments.len() } else { 1 };
            (shortest..=segments.len())
                .rev()
                .find_map(|n| module_file(b, &segments[..n], layout))
        });
        out.extend(module);
    }
    out
}

/// `dir/a/b.py`, `.pyi`, or `dir/a/b/__init__.py(i)`; with no segments, `dir`'s own
/// `__init__.py`.
fn module_file(dir: &str, segments: &[&str], layout: &Layout) -> Option<String> {
    let base = join(dir, &segments.join("/"))?;
    let mut candidates = Vec::new();
    if !segments.is_empty() {
        candidates.push(format!("{base}.py"));
        candidates.push(format!("{base}.pyi"));
    }
    for init in ["__init__.py", "__init__.pyi"] {
        candidates.extend(join(&base, init));
    }
    candidates.into_iter().find(|c| layout.has(c))
}

fn roots_for(file: &str, layout: &Layout) -> Vec<String> {
    let mut dir = parent(file);
    while !dir.is_empty() && module_file(dir, &[], layout).is_some() {
        dir = parent(dir);
    }
    let mut roots = vec![dir.to_string()];
    roots.extend(layout.python_roots.iter().filter(|r| *r != dir).cloned());
    roots
}
