//! Reads findings out of one answer's JSON: the one reader for every answer of a run.
//!
//! Three shapes mean the same thing and are all read: the analysts' (`{"findings":
//! [{"type", "scope", "summary", "evidence", "line", "severity": "high|medium|low"}]}`), the
//! CI prompt's (`{"findings": [{"path", "line", "end_line", "severity":
//! "error|warning|note", "type", "message"}]}`), and what models commonly drift to: a bare
//! array of findings, another wrapper (`issues`, `results`, `problems`), `file` for `path`,
//! `description` for `message`, a line written as `"L42-58"` or `"lines": [42, 58]`. The
//! reader drops only what it cannot place: an item with no text at all. Anything that is
//! not findings-shaped yields no findings, never an error.
//!
//! An item that was read can be written back ([`rewrite_item`]) saying what was read — the
//! file's path and lines of the original file — with every other field as the model wrote
//! it, so the aggregate shows the model's words at the right place.

use serde_json::{Map, Value};

use crate::findings::{Finding, Level, Region};

/// Keys of an object that hold its findings: the documented one first, then what models
/// drift to.
const WRAPPERS: [&str; 4] = ["findings", "issues", "results", "problems"];

const MESSAGE: [&str; 6] = ["message", "summary", "description", "title", "text", "issue"];
const PATH: [&str; 5] = ["path", "file", "file_path", "filePath", "uri"];
const LINE: [&str; 7] = [
    "line",
    "start_line",
    "startLine",
    "line_start",
    "line_number",
    "lineNumber",
    "lines",
];
const END_LINE: [&str; 3] = ["end_line", "endLine", "line_end"];
const SEVERITY: [&str; 3] = ["severity", "level", "priority"];

/// The findings in the answer's JSON values (see [`super::json::json_values`]), in the
/// order written, exact duplicates removed.
///
/// `default_path` is the file the answer is about: it is used when a finding names no path,
/// and when the finding names it or a shorter form of it (`login.ts` for
/// `src/auth/login.ts`), since models often shorten the path they were given. Other paths
/// are kept as written (with forward slashes). A finding without a usable line keeps its
/// path and has no region; a missing or unknown severity is a warning (SARIF's default level).
pub fn read_findings(values: &[Value], default_path: &str) -> Vec<Finding> {
    let mut seen = std::collections::HashSet::new();
    values
        .iter()
        .flat_map(|value| read_items(value, default_path))
        .map(|(_, finding)| finding)
        .filter(|f| seen.insert(f.clone()))
        .collect()
}

/// The findings of one JSON value, each with the index of the item it was read from (in
/// [`findings_items`]).
pub(super) fn read_items(value: &Value, default_path: &str) -> Vec<(usize, Finding)> {
    findings_items(value)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, item)| Some((i, finding_from(item, default_path)?)))
        .collect()
}

/// Whether `value` has the findings shape (an object with a `findings` array, or another
/// wrapper or a bare array of objects that holds at least one finding).
pub fn is_findings_shaped(value: &Value) -> bool {
    findings_items(value).is_some()
}

/// Whether `item` reads as a finding.
pub(super) fn is_finding(item: &Value) -> bool {
    finding_from(item, "").is_some()
}

/// The finding objects of a value of the findings shape.
pub(super) fn findings_items(value: &Value) -> Option<&[Value]> {
    match value {
        Value::Object(map) => {
            let (key, items) = WRAPPERS.iter().find_map(|k| Some((*k, map.get(*k)?)))?;
            match items {
                Value::Array(items) if key == "findings" || drifted(items) => Some(items),
                Value::Null if key == "findings" => Some(&[]),
                _ => None,
            }
        }
        Value::Array(items) if drifted(items) => Some(items),
        _ => None,
    }
}

/// [`findings_items`], to write to.
pub(super) fn findings_items_mut(value: &mut Value) -> Option<&mut Vec<Value>> {
    findings_items(value)?;
    match value {
        Value::Object(map) => WRAPPERS
            .iter()
            .find(|k| map.contains_key(**k))
            .and_then(|k| map.get_mut(*k))
            .and_then(Value::as_array_mut),
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// An array not under the documented key counts as findings only if it holds objects and
/// at least one of them reads as a finding: `["a", "b"]` is a list, `[{"name": "x"}]` data.
fn drifted(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(Value::is_object) && items.iter().any(is_finding)
}

fn finding_from(item: &Value, default_path: &str) -> Option<Finding> {
    let obj = item.as_object()?;
    let message = text_field(obj, &MESSAGE)?;
    let path = match named_file(obj) {
        Some(p) => resolve_path(&p, default_path),
        None => default_path.to_string(),
    };
    let start = field(obj, &LINE).and_then(line_range);
    let end = field(obj, &END_LINE).and_then(line_range).map(|(first, _)| first);
    let region = start.and_then(|(first, range_end)| Region::new(first, end.or(range_end)));
    let level = level_of(obj);
    let rule = text_field(obj, &["type", "rule", "ruleId", "rule_id", "category", "kind"]);
    let scope = text_field(obj, &["scope", "column", "function", "symbol"]).or_else(|| json_path(obj));
    let evidence = text_field(obj, &["evidence", "snippet", "code"]);
    Some(Finding {
        path,
        region,
        level,
        message,
        rule,
        scope,
        evidence,
    })
}

/// The file an item names. The JSON analyst names a JSON path (`$.events[*]`) in `path`:
/// that is a place in the file, not another file.
fn named_file(obj: &Map<String, Value>) -> Option<String> {
    text_field(obj, &PATH).filter(|p| !p.starts_with('$'))
}

fn json_path(obj: &Map<String, Value>) -> Option<String> {
    text_field(obj, &["path"]).filter(|p| p.starts_with('$'))
}

fn level_of(obj: &Map<String, Value>) -> Level {
    text_field(obj, &SEVERITY)
        .and_then(|w| Level::from_severity(&w))
        .unwrap_or(Level::Warning)
}

/// `item` (one that read as `finding`) saying what was read: the file's path, the lines
/// of the original file (none when they could not be placed), the level when it was
/// raised; every other field as the model wrote it.
pub(super) fn rewrite_item(item: &Value, finding: &Finding) -> Value {
    let Some(obj) = item.as_object() else {
        return item.clone();
    };
    let mut obj = obj.clone();
    let json_path = json_path(&obj);
    for key in PATH.iter().chain(&LINE).chain(&END_LINE) {
        obj.remove(*key);
    }
    match json_path {
        // The JSON analyst's `path` stays a JSON path; the file goes beside it.
        Some(p) => {
            obj.insert("path".into(), Value::String(p));
            obj.insert("file".into(), Value::String(finding.path.clone()));
        }
        None => {
            obj.insert("path".into(), Value::String(finding.path.clone()));
        }
    }
    if let Some(region) = finding.region {
        obj.insert("line".into(), region.start_line.into());
        if let Some(end) = region.end_line {
            obj.insert("end_line".into(), end.into());
        }
    }
    if level_of(&obj) != finding.level {
        for key in SEVERITY {
            obj.remove(key);
        }
        obj.insert("severity".into(), finding.level.name().into());
    }
    Value::Object(obj)
}

fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| obj.get(*n).filter(|v| !v.is_null()))
}

/// The first of `names` that holds a non-blank string (trimmed).
fn text_field(obj: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        let s = obj.get(*n)?.as_str()?.trim();
        (!s.is_empty()).then(|| s.to_string())
    })
}

/// A line or line range: `42`, `42.0`, `"42"`, `"L42"`, `"42-58"`, `"L42-L58"`, `[42, 58]`.
fn line_range(value: &Value) -> Option<(u64, Option<u64>)> {
    match value {
        Value::Number(n) => {
            let line = n.as_u64().or_else(|| {
                let f = n.as_f64()?;
                (f.fract() == 0.0 && f >= 1.0 && f < u64::MAX as f64).then_some(f as u64)
            })?;
            Some((line, None))
        }
        Value::String(s) => {
            let number = |t: &str| t.trim().trim_start_matches(['L', 'l']).trim().parse::<u64>().ok();
            match s.split_once(['-', '–']) {
                Some((a, b)) => Some((number(a)?, number(b))),
                None => Some((number(s)?, None)),
            }
        }
        Value::Array(items) => match items.as_slice() {
            [one] => line_range(one),
            [first, .., last] => Some((line_range(first)?.0, line_range(last).map(|(l, _)| l))),
            [] => None,
        },
        _ => None,
    }
}

/// A path a model wrote: forward slashes, no leading `./`.
fn normalize_path(path: &str) -> String {
    let mut p = path.trim().replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    p
}

/// The finding's path: `default_path` — the file's own name, exactly as the run shows it
/// (`src/x\xFF.ts` for a name that is not UTF-8: its backslash is an escape, not a
/// separator) — when the finding names it or a shorter form of it, or names a list that
/// holds it (a batch's `{file}` is its members' names joined by ", ", and a model that
/// copies a template's `"path": "{file}"` writes that list into each member's findings);
/// else the path as the model wrote it, normalized.
fn resolve_path(path: &str, default_path: &str) -> String {
    let trimmed = path.trim();
    if names(trimmed, default_path) {
        return default_path.to_string();
    }
    if trimmed.contains(", ")
        && (trimmed.split(", ").any(|part| names(part, default_path))
            || format!(", {trimmed}, ").contains(&format!(", {default_path}, ")))
    {
        // The second test: a member whose own name holds ", ".
        return default_path.to_string();
    }
    let path = normalize_path(trimmed);
    if leaves_the_project(&path) {
        // `../../etc/passwd`, `/etc/passwd`: no file of the project, and nothing SARIF or an
        // annotation should point at; the finding was in this file's answer.
        return default_path.to_string();
    }
    path
}

/// Whether a path a model wrote points outside the project: absolute, or climbing above it.
fn leaves_the_project(path: &str) -> bool {
    if path.starts_with('/') || path.as_bytes().get(1) == Some(&b':') {
        return true;
    }
    let mut depth: i64 = 0;
    for part in path.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// Whether `written` (trimmed) names the file `default_path`: empty, the same name, or a
/// shorter form of it.
fn names(written: &str, default_path: &str) -> bool {
    let written = written.trim();
    if written.is_empty() || written == default_path || written.strip_prefix("./") == Some(default_path) {
        return true;
    }
    let path = normalize_path(written);
    let default_normalized = normalize_path(default_path);
    path == default_normalized || default_normalized.ends_with(&format!("/{path}"))
}

#[cfg(test)]
#[path = "findings_tests.rs"]
mod tests;
