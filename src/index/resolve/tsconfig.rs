//! `tsconfig.json` / `jsconfig.json`: `compilerOptions.baseUrl` and `paths`, following
//! relative `extends`. The files are JSON with comments and trailing commas, so they are
//! cleaned before parsing; a file that still does not parse is ignored (no aliases), since
//! a broken tsconfig must not stop the index.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{file_name, join, parent};

/// How deep an `extends` chain is followed (a cycle stops here too).
const MAX_EXTENDS: usize = 8;

/// The module-resolution settings of one tsconfig, after `extends`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Aliases {
    /// `baseUrl` as a project-relative directory.
    pub(crate) base_url: Option<String>,
    /// `paths` patterns and their targets, targets already project-relative.
    pub(crate) paths: Vec<(String, Vec<String>)>,
}

/// Every tsconfig of the project, by the directory it governs.
#[derive(Debug, Default)]
pub(crate) struct Tsconfigs {
    by_dir: BTreeMap<String, Aliases>,
}

impl Tsconfigs {
    /// Loads every `tsconfig.json` / `jsconfig.json` among `configs` (tsconfig wins in a
    /// directory that has both).
    pub(crate) fn load(root: &Path, configs: &[String]) -> Self {
        let mut by_dir = BTreeMap::new();
        for name in ["jsconfig.json", "tsconfig.json"] {
            for config in configs.iter().filter(|c| file_name(c) == name) {
                if let Some(aliases) = load_chain(root, config, 0) {
                    by_dir.insert(parent(config).to_string(), aliases);
                }
            }
        }
        Tsconfigs { by_dir }
    }

    /// The settings of the nearest tsconfig above `file`.
    pub(crate) fn for_file(&self, file: &str) -> Option<&Aliases> {
        let mut dir = parent(file);
        loop {
            if let Some(a) = self.by_dir.get(dir) {
                return Some(a);
            }
            if dir.is_empty() {
                return None;
            }
            dir = parent(dir);
        }
    }
}

/// Loads `config` and what it extends; `None` if it cannot be read or parsed.
fn load_chain(root: &Path, config: &str, depth: usize) -> Option<Aliases> {
    if depth > MAX_EXTENDS {
        return None;
    }
    let text = fs_err::read_to_string(root.join(config)).ok()?;
    let json: Value = serde_json::from_str(&strip_jsonc(&text)).ok()?;
    let dir = parent(config);
    let mut aliases = Aliases::default();
    // Bases first, so this file's own settings override them.
    let extends: Vec<&str> = match json.get("extends") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for base in extends.into_iter().filter(|b| b.starts_with('.')) {
        let Some(mut path) = join(dir, base) else { continue };
        if !path.ends_with(".json") {
            path.push_str(".json");
        }
        if let Some(inherited) = load_chain(root, &path, depth + 1) {
            aliases.base_url = inherited.base_url.or(aliases.base_url);
            if !inherited.paths.is_empty() {
                aliases.paths = inherited.paths;
            }
        }
    }
    let options = json.get("compilerOptions");
    if let Some(base_url) = options.and_then(|o| o.get("baseUrl")).and_then(Value::as_str) {
        aliases.base_url = join(dir, base_url);
    }
    if let Some(Value::Object(paths)) = options.and_then(|o| o.get("paths")) {
        // `paths` targets are relative to baseUrl, or to this file without one (TS ≥ 4.1).
        let base = aliases.base_url.clone().unwrap_or_else(|| dir.to_string());
        aliases.paths = paths
            .iter()
            .map(|(pattern, targets)| {
                let targets = targets
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .filter_map(|t| join(&base, t))
                            .collect()
                    })
                    .unwrap_or_default();
                (pattern.clone(), targets)
            })
            .collect();
    }
    Some(aliases)
}

impl Aliases {
    /// The candidate paths (before extension probing) for a bare specifier: the `paths`
    /// entry that matches it (exact first, then the longest prefix before `*`), then
    /// `baseUrl/spec`.
    pub(crate) fn candidates(&self, spec: &str) -> Vec<String> {
        let mut best: Option<(usize, &Vec<String>, &str)> = None;
        for (pattern, targets) in &self.paths {
            let hit: Option<(&str, usize)> = match pattern.split_once('*') {
                None => (pattern == spec).then_some(("", usize::MAX)),
                Some((pre, post)) => {
                    let fits = spec.len() >= pre.len() + post.len() && spec.starts_with(pre) && spec.ends_with(post);
                    fits.then(|| (&spec[pre.len()..spec.len() - post.len()], pre.len()))
                }
            };
            if let Some((star, rank)) = hit {
                if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
                    best = Some((rank, targets, star));
                }
            }
        }
        let mut out: Vec<String> = best
            .map(|(_, targets, star)| targets.iter().map(|t| t.replacen('*', star, 1)).collect())
            .unwrap_or_default();
        if let Some(base) = &self.base_url {
            if let Some(p) = join(base, spec) {
                out.push(p);
            }
        }
        out
    }
}

/// JSON with `//` and `/* */` comments and trailing commas → plain JSON.
pub(crate) fn strip_jsonc(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                out.push(c);
                i += 1;
                while i < chars.len() {
                    out.push(chars[i]);
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        out.push(chars[i + 1]);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if chars[i - 1] == '"' {
                        break;
                    }
                }
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
            }
            ',' => {
                // A comma whose next significant character closes a container is dropped.
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        Some(w) if w.is_whitespace() => j += 1,
                        Some('/') if chars.get(j + 1) == Some(&'/') => {
                            while j < chars.len() && chars[j] != '\n' {
                                j += 1;
                            }
                        }
                        Some('/') if chars.get(j + 1) == Some(&'*') => {
                            j += 2;
                            while j < chars.len() && !(chars[j] == '*' && chars.get(j + 1) == Some(&'/')) {
                                j += 1;
                            }
                            j += 2;
                        }
                        _ => break,
                    }
                }
                if !matches!(chars.get(j), Some('}' | ']')) {
                    out.push(',');
                }
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_removed_but_not_inside_strings() {
        let text = r#"{
  // line comment
  "compilerOptions": { /* block */
    "baseUrl": "./src", // after
    "paths": { "@/*": ["./*",], "url": ["http://x//y"], },
  },
}"#;
        let v: Value = serde_json::from_str(&strip_jsonc(text)).unwrap();
        assert_eq!(v["compilerOptions"]["baseUrl"], "./src");
        assert_eq!(v["compilerOptions"]["paths"]["url"][0], "http://x//y");
    }

    #[test]
    fn extends_and_path_patterns() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("web")).unwrap();
        fs_err::write(
            dir.path().join("tsconfig.base.json"),
            r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@lib/*": ["libs/*/src"], } } }"#,
        )
        .unwrap();
        fs_err::write(
            dir.path().join("web/tsconfig.json"),
            "{ \"extends\": \"../tsconfig.base\", // inherit\n \"compilerOptions\": { \"strict\": true } }",
        )
        .unwrap();
        let configs = vec!["tsconfig.base.json".to_string(), "web/tsconfig.json".to_string()];
        let ts = Tsconfigs::load(dir.path(), &configs);
        let aliases = ts.for_file("web/src/app.ts").expect("web/tsconfig.json governs web/");
        assert_eq!(aliases.base_url.as_deref(), Some(""));
        assert_eq!(aliases.candidates("@lib/auth"), vec!["libs/auth/src", "@lib/auth"]);
        assert!(ts.for_file("other/x.ts").is_none());
    }

    #[test]
    fn exact_pattern_beats_wildcard_and_longer_prefix_beats_shorter() {
        let aliases = Aliases {
            base_url: None,
            paths: vec![
                ("*".into(), vec!["types/*".into()]),
                ("@app/*".into(), vec!["src/*".into()]),
                ("@app/config".into(), vec!["config/index".into()]),
            ],
        };
        assert_eq!(aliases.candidates("@app/config"), vec!["config/index"]);
        assert_eq!(aliases.candidates("@app/ui/button"), vec!["src/ui/button"]);
        assert_eq!(aliases.candidates("lodash"), vec!["types/lodash"]);
    }
}
