//! JS/TS specifiers: relative paths with extension and `index` probing, then tsconfig
//! `paths` and `baseUrl` for bare specifiers. Anything else is a package: no edge.

use super::{join, parent, Layout};

/// Extensions tried after a specifier without one, in order.
const EXTENSIONS: &[&str] = &[".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"];

/// TypeScript's ESM convention: `import "./a.js"` names the source `a.ts`.
const SOURCE_FOR_EMITTED: &[(&str, &[&str])] = &[
    (".js", &[".ts", ".tsx", ".d.ts"]),
    (".jsx", &[".tsx"]),
    (".mjs", &[".mts"]),
    (".cjs", &[".cts"]),
];

/// The project file `spec` (imported from `file`) names, if any.
pub(super) fn resolve(file: &str, spec: &str, layout: &Layout) -> Option<String> {
    // Bundler suffixes (`./x.svg?raw`, `./x#frag`) are not part of the path.
    let spec = spec.split(['?', '#']).next().unwrap_or(spec);
    if spec.is_empty() || spec.starts_with('/') {
        return None;
    }
    if spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../") {
        return probe(&join(parent(file), spec)?, layout);
    }
    let aliases = layout.tsconfigs.for_file(file)?;
    aliases.candidates(spec).iter().find_map(|c| probe(c, layout))
}

/// `base` as a file, with an extension added or swapped, or as a directory's `index`.
fn probe(base: &str, layout: &Layout) -> Option<String> {
    let hit = |p: String| layout.has(&p).then_some(p);
    if let Some(p) = hit(base.to_string()) {
        return Some(p);
    }
    if let Some(p) = EXTENSIONS.iter().find_map(|ext| hit(format!("{base}{ext}"))) {
        return Some(p);
    }
    for (emitted, sources) in SOURCE_FOR_EMITTED {
        if let Some(stem) = base.strip_suffix(emitted) {
            if let Some(p) = sources.iter().find_map(|ext| hit(format!("{stem}{ext}"))) {
                return Some(p);
            }
        }
    }
    let dir = base.trim_end_matches('/');
    EXTENSIONS
        .iter()
        .find_map(|ext| hit(join(dir, &format!("index{ext}"))?))
}
