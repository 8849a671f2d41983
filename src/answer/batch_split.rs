//! Splitting the answer of a batch of small files (see [`crate::content::batch_small`])
//! back into one result per file.
//!
//! The batch prompt (see [`crate::content::analyst`]) asks for one of two answer shapes, and
//! [`split_batch_answer`] reads both, plus the near misses models produce:
//! - Markdown: a `### File: <path>` heading before each file's section.
//! - JSON: `{"files": [{"file": "<path>", …}]}`; also accepted: findings that each name
//!   their `file` (an answer about every file of the batch: a file no finding names has
//!   none), or an object keyed by path.
//!
//! A JSON entry keeps its value as well as its text, so it is checked as the value it is
//! (under a schema of strings, `"yes"` is a string, not the text `yes`). Text that names no
//! file of the batch is returned as unattributed, never dropped.

use serde_json::{Map, Value};

/// A batch answer split by file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSplit {
    /// One entry per path given to [`split_batch_answer`], in that order; `None` when the
    /// answer has nothing for that file.
    pub per_file: Vec<Option<String>>,
    /// For each path, the JSON value its text was written from, when the answer was JSON
    /// and held one entry for the file.
    pub values: Vec<Option<Value>>,
    /// Parts of the answer that name no file of the batch, in answer order.
    pub unattributed: Vec<String>,
}

impl BatchSplit {
    /// The indices of the files the answer said nothing about.
    pub fn missing(&self) -> Vec<usize> {
        self.per_file
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_none())
            .map(|(i, _)| i)
            .collect()
    }

    fn new(files: usize) -> BatchSplit {
        BatchSplit {
            per_file: vec![None; files],
            values: vec![None; files],
            unattributed: Vec::new(),
        }
    }

    /// [`BatchSplit::add`] for a JSON entry: its text, and its value.
    fn add_value(&mut self, file: usize, value: Value) {
        let first = self.per_file[file].is_none();
        self.add(Some(file), pretty(&value));
        // Two entries for one file are one text, and no one value.
        self.values[file] = first.then_some(value);
    }

    fn add(&mut self, file: Option<usize>, text: String) {
        match file {
            Some(i) => match &mut self.per_file[i] {
                Some(existing) => {
                    existing.push_str("\n\n");
                    existing.push_str(&text);
                }
                slot => *slot = Some(text),
            },
            None => self.unattributed.push(text),
        }
    }
}

/// Splits the answer of a batch call over `paths` into per-file texts; see the module doc
/// for the shapes read. JSON results are pretty-printed JSON.
pub fn split_batch_answer(answer: &str, paths: &[&str]) -> BatchSplit {
    if let Ok(value) = crate::answer::json::find_json(answer) {
        if let Some(split) = split_json(value, paths) {
            return split;
        }
    }
    split_markdown(answer, paths)
}

fn split_markdown(answer: &str, paths: &[&str]) -> BatchSplit {
    let mut split = BatchSplit::new(paths.len());
    let mut section: Option<(Option<usize>, Vec<&str>)> = None;
    let mut preamble: Vec<&str> = Vec::new();
    let mut in_fence = false;
    for line in answer.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        let header = if in_fence { None } else { file_header(line) };
        if let Some(named) = header {
            if let Some((file, lines)) = section.take() {
                split.add(file, section_text(&lines));
            }
            let file = match_path(named, paths);
            // A section for an unknown file keeps its heading, so its text can be placed.
            section = Some((file, if file.is_some() { Vec::new() } else { vec![line] }));
            continue;
        }
        match &mut section {
            Some((_, lines)) => lines.push(line),
            None => preamble.push(line),
        }
    }
    if let Some((file, lines)) = section {
        split.add(file, section_text(&lines));
    }
    let preamble = section_text(&preamble);
    if !preamble.is_empty() {
        split.unattributed.insert(0, preamble);
    }
    split.unattributed.retain(|t| !t.is_empty());
    for slot in &mut split.per_file {
        if slot.as_deref() == Some("") {
            *slot = None;
        }
    }
    split
}

/// The path named by a `### File: <path>` heading (any heading level, or bold).
fn file_header(line: &str) -> Option<&str> {
    let t = line
        .trim()
        .trim_start_matches('#')
        .trim_start()
        .trim_start_matches("**")
        .trim_start();
    if t.len() == line.trim().len() {
        return None; // not a heading or bold line
    }
    let rest = t
        .get(..5)
        .filter(|p| p.eq_ignore_ascii_case("file:"))
        .map(|_| &t[5..])?;
    let named = rest
        .trim()
        .trim_end_matches("**")
        .trim()
        .trim_matches(['`', '"', '\''])
        .trim();
    (!named.is_empty()).then_some(named)
}

/// The section's text without leading and trailing blank lines or a trailing `---` rule.
fn section_text(lines: &[&str]) -> String {
    let mut lines = lines;
    loop {
        match lines {
            [first, rest @ ..] if first.trim().is_empty() => lines = rest,
            [rest @ .., last] if last.trim().is_empty() || matches!(last.trim(), "---" | "***" | "___") => {
                lines = rest;
            }
            _ => break,
        }
    }
    lines.join("\n")
}

/// Which of `paths` a model meant by `named`: the same path, the same without `./`, a
/// trailing `(280 lines)` dropped, or the only path that ends with it (or it ends with).
fn match_path(named: &str, paths: &[&str]) -> Option<usize> {
    // A file named exactly (as it is, or as the prompt showed it) is that file, before any
    // near miss is forgiven: `"a.txt"` may be a file of the batch beside `a.txt`.
    let exact = named.trim();
    if let Some(i) = paths
        .iter()
        .position(|p| *p == exact || crate::escape::name(p) == exact)
    {
        return Some(i);
    }
    let clean = |p: &str| {
        p.trim()
            .trim_matches(['`', '"', '\''])
            .trim_start_matches("./")
            .replace('\\', "/")
    };
    let without_note = named.rsplit_once(" (").map_or(named, |(head, _)| head);
    for candidate in [named, without_note] {
        let candidate = clean(candidate);
        // The prompt shows names escaped (a newline as `\n`): a model names them so.
        if let Some(i) = paths
            .iter()
            .position(|p| clean(p) == candidate || clean(&crate::escape::name(p)) == candidate)
        {
            return Some(i);
        }
        let suffix_matches: Vec<usize> = (0..paths.len())
            .filter(|&i| {
                let p = clean(paths[i]);
                p.ends_with(&format!("/{candidate}")) || candidate.ends_with(&format!("/{p}"))
            })
            .collect();
        if let [only] = suffix_matches.as_slice() {
            return Some(*only);
        }
    }
    None
}

/// Reads the JSON shapes; `None` when the document has none of them (then the answer is
/// treated as text).
fn split_json(value: Value, paths: &[&str]) -> Option<BatchSplit> {
    let mut split = BatchSplit::new(paths.len());
    // The key naming an entry's file, and the name.
    let named_file = |entry: &Map<String, Value>| {
        ["file", "file_path", "path"]
            .into_iter()
            .find_map(|k| entry.get(k).and_then(Value::as_str).map(|name| (k, name.to_owned())))
    };
    let entries = match value {
        Value::Object(mut map) => {
            if let Some(Value::Array(files)) = map.remove("files") {
                files
            } else if let Some(Value::Array(findings)) = map.remove("findings") {
                // Findings that each name their file: regrouped per file.
                let mut grouped: Vec<Vec<Value>> = vec![Vec::new(); paths.len()];
                for finding in findings {
                    let file = finding
                        .as_object()
                        .and_then(named_file)
                        .and_then(|(_, n)| match_path(&n, paths));
                    match file {
                        Some(i) => grouped[i].push(finding),
                        None => split.unattributed.push(pretty(&finding)),
                    }
                }
                // The findings of the whole batch: a file none names has none.
                for (i, findings) in grouped.into_iter().enumerate() {
                    split.add_value(i, serde_json::json!({ "findings": findings }));
                }
                // The analysts' `metadata` says nothing about a file; anything else is kept.
                map.remove("metadata");
                if !map.is_empty() {
                    split.unattributed.push(pretty(&Value::Object(map)));
                }
                return Some(split);
            } else if !map.is_empty() && map.keys().all(|k| match_path(k, paths).is_some()) {
                for (k, v) in map {
                    match match_path(&k, paths) {
                        Some(i) => split.add_value(i, v),
                        None => split.unattributed.push(pretty(&v)),
                    }
                }
                return Some(split);
            } else {
                return None;
            }
        }
        Value::Array(entries) => entries,
        _ => return None,
    };
    for entry in entries {
        let Value::Object(mut map) = entry else {
            split.unattributed.push(pretty(&entry));
            continue;
        };
        let Some((key, file)) = named_file(&map).and_then(|(k, n)| Some((k, match_path(&n, paths)?))) else {
            split.unattributed.push(pretty(&Value::Object(map)));
            continue;
        };
        map.remove(key);
        let result = match map.remove("result").or_else(|| map.remove("answer")) {
            Some(result) if map.is_empty() => result,
            Some(result) => {
                map.insert("result".into(), result);
                Value::Object(map)
            }
            None => Value::Object(map),
        };
        split.add_value(file, result);
    }
    Some(split)
}

/// The text of a JSON entry: a string as it is, anything else pretty-printed.
fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[cfg(test)]
#[path = "batch_split_tests.rs"]
mod tests;
