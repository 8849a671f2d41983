//! Go imports: a path inside a module of the project (`go.mod`'s `module` line is its
//! prefix) names a package directory; the edge goes to every non-test `.go` file there.

use super::{join, Layout};

/// The files of the package `spec` names, if it is inside one of the project's modules.
pub(super) fn resolve(spec: &str, layout: &Layout) -> Vec<String> {
    let Some((module, dir)) = layout
        .go_modules
        .iter()
        .find(|(m, _)| spec == m || spec.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('/')))
    else {
        return Vec::new();
    };
    let Some(package_dir) = join(dir, spec[module.len()..].trim_start_matches('/')) else {
        return Vec::new();
    };
    layout
        .files_in(&package_dir)
        .iter()
        .filter(|f| f.ends_with(".go") && !f.ends_with("_test.go"))
        .cloned()
        .collect()
}

/// The module path of a `go.mod` (`module example.com/m`, quotes and comments allowed).
pub(super) fn module_path(go_mod: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let line = line.split("//").next().unwrap_or("").trim();
        let rest = line.strip_prefix("module")?;
        if !rest.starts_with([' ', '\t', '"']) {
            return None;
        }
        let path = rest.trim().trim_matches(|c| c == '"' || c == '`');
        (!path.is_empty()).then(|| path.to_string())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn module_line() {
        assert_eq!(
            super::module_path("// x\nmodule example.com/m // the module\n\ngo 1.22\n").as_deref(),
            Some("example.com/m")
        );
        assert_eq!(
            super::module_path("module \"example.com/q\"\n").as_deref(),
            Some("example.com/q")
        );
        assert_eq!(super::module_path("go 1.22\n"), None);
    }
}
