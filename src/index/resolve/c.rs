//! C/C++ includes: `"x.h"` relative to the including file, then the include roots
//! (directories named `include` or `inc`, then `src`, then the project root); `<x.h>` only
//! against the include roots, so a system header makes no edge unless the project has it.

use super::{join, parent, Layout};

pub(super) fn resolve(file: &str, spec: &str, layout: &Layout) -> Option<String> {
    let (path, quoted) = match spec.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
        Some(angle) => (angle, false),
        None => (spec, true),
    };
    let own_dir = quoted.then(|| parent(file));
    own_dir
        .into_iter()
        .chain(layout.include_roots.iter().map(String::as_str))
        .filter_map(|dir| join(dir, path))
        .find(|candidate| layout.has(candidate))
}
