//! What an answer says, read once: its text, its JSON (when it holds some) and its findings,
//! each with a path and a line in the original file.
//!
//! Every answer of a run — a whole file's, a chunk's, each member of a batch, `rlm query`'s
//! — becomes an [`Answer`] here, and everything downstream reads that: the result files
//! (the model's own words), SARIF, annotations, the step summary, `--fail-on`, the findings
//! counts, and the aggregate — `concat`, `merge`, `aggregate.json`, summaries and synthesis
//! read [`Answer::value`] and [`Answer::shown_text`], where each finding the model wrote
//! says what was read (its file, its lines of the original file), never a chunk-relative
//! line. [`json`] is the one place JSON is found in a model's prose; [`dedupe`] keeps a
//! finding reported by two overlapping windows once.

mod batch_split;
mod dedupe;
mod findings;
pub mod json;
mod lines;

pub use batch_split::{split_batch_answer, BatchSplit};
pub use dedupe::dedupe;
pub use findings::{is_findings_shaped, read_findings};

use serde_json::Value;

use crate::content::Chunk;
use crate::findings::Finding;

/// One file's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The text kept as the file's result (under `--schema`, the canonical JSON).
    pub text: String,
    /// Which of the text's JSON values is the answer's ([`Answer::json`]): an index, not
    /// the parsed tree, which is several times the text's size and a run holds every
    /// answer until its aggregate is written.
    main: Option<u32>,
    /// Its findings, at lines of the original file.
    pub findings: Vec<Finding>,
    /// Said in the report and on stderr: the answer was kept, but something in it could
    /// not be read (an analyst's answer in prose has no findings to read).
    pub warning: Option<String>,
    /// For a chunk's answer: the lines of its file the chunk held (overlapping windows
    /// report a line twice; see [`dedupe`]).
    /// Boxed: most answers are of whole files, and a run holds every answer.
    pub window: Option<Box<Window>>,
    /// For each finding, the index of the item it was read from in `json`'s findings
    /// (`None`: another JSON value of the answer held it).
    items: Vec<Option<usize>>,
}

/// The lines of one file a chunk held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
}

impl Window {
    fn holds(&self, path: &str, line: u64) -> bool {
        self.path == path && (self.start_line..=self.end_line).contains(&line)
    }
}

/// What an answer is about.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The file the answer is about (a finding that names no file is about it).
    pub path: &'a str,
    /// For a piece of a file: the chunk, to place findings at lines of the whole file.
    pub chunk: Option<&'a Chunk>,
    /// The lines of the file the unit read (a chunk's span), when it read part of it.
    pub span: Option<(u64, u64)>,
    /// The answer was asked for as findings JSON (an analyst's): say so when it is not.
    pub expects_findings: bool,
}

/// Reads `text` as an answer about `scope` (see the module doc).
pub fn read(text: String, scope: &Scope<'_>) -> Answer {
    let values = json::json_values(&text);
    // Read from every value; the one that holds findings is the answer's JSON.
    let main = values
        .iter()
        .position(is_findings_shaped)
        .or_else(|| values.iter().position(|v| v.is_object() || v.is_array()))
        .or_else(|| (values.len() == 1 && serde_json::from_str::<Value>(text.trim()).is_ok()).then_some(0));
    let mut found: Vec<Finding> = Vec::new();
    let mut items: Vec<Option<usize>> = Vec::new();
    for (v, value) in values.iter().enumerate() {
        for (item, finding) in findings::read_items(value, scope.path) {
            found.push(finding);
            items.push((Some(v) == main).then_some(item));
        }
    }
    if let Some(chunk) = scope.chunk {
        lines::place(&mut found, scope.path, chunk);
    }
    let warning = (scope.expects_findings && !values.iter().any(is_findings_shaped)).then(|| {
        "the analyst answered in prose, not the findings JSON it was asked for: the answer is kept as text, \
         and its findings could not be read"
            .to_string()
    });
    let mut answer = Answer {
        main: main.map(|m| m as u32),
        findings: found,
        warning,
        text,
        window: scope.span.map(|(start_line, end_line)| {
            Box::new(Window {
                path: scope.path.to_string(),
                start_line,
                end_line,
            })
        }),
        items,
    };
    answer.drop_exact_duplicates();
    answer
}

impl Answer {
    /// The answer's JSON as the aggregate shows it: each finding item the model wrote
    /// rewritten to say what was read (its file, its lines of the original file, or none
    /// when they could not be placed), items of findings kept elsewhere (duplicates) left
    /// out, everything else as written.
    pub fn value(&self) -> Option<Value> {
        self.json().map(|json| self.rewritten(json))
    }

    /// The answer's JSON value, when it holds one (the first that holds findings, else
    /// the first object or array; a scalar only when it is the whole answer), as written:
    /// read from the text again.
    pub fn json(&self) -> Option<Value> {
        let main = self.main? as usize;
        json::json_values(&self.text).into_iter().nth(main)
    }

    /// `value` (the answer's JSON) with its finding items rewritten (see [`Answer::value`]).
    fn rewritten(&self, mut value: Value) -> Value {
        if let Some(slot) = findings::findings_items_mut(&mut value) {
            let written = std::mem::take(slot);
            // Item index → the finding read from it.
            let read: std::collections::HashMap<usize, usize> = self
                .items
                .iter()
                .enumerate()
                .filter_map(|(f, at)| Some(((*at)?, f)))
                .collect();
            for (i, item) in written.into_iter().enumerate() {
                match read.get(&i).copied() {
                    Some(f) => slot.push(findings::rewrite_item(&item, &self.findings[f])),
                    // A finding read and then dropped as a duplicate.
                    None if findings::is_finding(&item) => {}
                    None => slot.push(item),
                }
            }
        }
        value
    }

    /// The text the aggregate shows: an answer that holds findings, as its [`value`]
    /// (pretty JSON); any other answer, as written. The result file keeps the model's
    /// words in full.
    ///
    /// [`value`]: Answer::value
    pub fn shown_text(&self) -> String {
        match self.json() {
            Some(json) if is_findings_shaped(&json) => {
                serde_json::to_string_pretty(&self.rewritten(json)).unwrap_or_else(|_| self.text.clone())
            }
            _ => self.text.clone(),
        }
    }

    /// What the aggregate shows of the answer ([`Answer::shown_text`] and, when `keep` says
    /// so, [`Answer::value`]), taken out of it: the answer keeps its findings, not a second
    /// copy of every text of a run.
    pub fn take_shown(&mut self, keep: impl Fn(&Value) -> bool) -> (String, Option<Value>) {
        let json = self.json();
        let findings_shaped = json.as_ref().is_some_and(is_findings_shaped);
        let value = json.map(|json| self.rewritten(json));
        let pretty = if findings_shaped {
            value.as_ref().and_then(|v| serde_json::to_string_pretty(v).ok())
        } else {
            None
        };
        let text = pretty.unwrap_or_else(|| std::mem::take(&mut self.text));
        self.main = None;
        (text, value.filter(|v| keep(v)))
    }

    /// Keeps the findings for which `keep` says so (and their items' places).
    fn retain_findings(&mut self, mut keep: impl FnMut(usize, &Finding) -> bool) {
        let mut index = 0;
        let mut kept_items = Vec::with_capacity(self.items.len());
        let items = std::mem::take(&mut self.items);
        self.findings.retain(|f| {
            let kept = keep(index, f);
            if kept {
                kept_items.push(items.get(index).copied().flatten());
            }
            index += 1;
            kept
        });
        self.items = kept_items;
    }

    /// The same finding written twice in one answer (after placing) is one finding.
    fn drop_exact_duplicates(&mut self) {
        let mut seen = std::collections::HashSet::new();
        self.retain_findings(|_, f| seen.insert(f.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Level, Region};

    fn scope(path: &str) -> Scope<'_> {
        Scope {
            path,
            chunk: None,
            span: None,
            expects_findings: true,
        }
    }

    #[test]
    fn an_analyst_answer_in_prose_is_kept_with_a_warning() {
        let a = read("This module parses arguments.".into(), &scope("a.py"));
        assert_eq!(a.text, "This module parses arguments.");
        assert!(a.findings.is_empty());
        assert!(a.warning.is_some());
        assert_eq!(a.value(), None);
        let a = read(
            r#"{"findings": [{"summary": "s", "line": 3, "severity": "low", "type": "bug"}]}"#.into(),
            &scope("a.py"),
        );
        assert_eq!(a.warning, None);
        assert_eq!(a.findings[0].level, Level::Note);
        assert_eq!(a.findings[0].region, Region::new(3, None));
        assert!(a.json().is_some());
    }

    #[test]
    fn the_value_says_what_was_read_in_the_models_words() {
        let a = read(
            r#"Found these:
```json
{"findings": [
  {"summary": "s", "lines": [3, 5], "severity": "low", "file": "a.py", "fix": "f"},
  {"summary": "s", "lines": [3, 5], "severity": "low", "file": "a.py", "fix": "f"},
  {"note": "not a finding"}
], "metadata": {"k": 1}}
```"#
                .into(),
            &scope("src/a.py"),
        );
        let value = a.value().unwrap();
        assert_eq!(
            value,
            serde_json::json!({"findings": [
                {"summary": "s", "line": 3, "end_line": 5, "severity": "low", "path": "src/a.py", "fix": "f"},
                {"note": "not a finding"}
            ], "metadata": {"k": 1}}),
            "the duplicate is gone, the item names the file and its lines"
        );
        assert!(a.shown_text().starts_with("{\n"), "{}", a.shown_text());
        // A scalar is JSON only when it is the whole answer.
        assert_eq!(
            read("\"yes\"".into(), &scope("a")).json(),
            Some(serde_json::json!("yes"))
        );
        assert_eq!(read("I counted 42.".into(), &scope("a")).json(), None);
    }

    #[test]
    fn drift_wrappers_and_line_arrays_are_read() {
        for text in [
            r#"{"issues": [{"message": "m", "lines": [42, 58]}]}"#,
            r#"{"results": [{"message": "m", "lines": [42, 58]}]}"#,
            r#"{"problems": [{"message": "m", "line": "42-58"}]}"#,
        ] {
            let a = read(text.into(), &scope("a.py"));
            assert_eq!(a.warning, None, "{text}");
            assert_eq!(a.findings.len(), 1, "{text}");
            assert_eq!(a.findings[0].region, Region::new(42, Some(58)), "{text}");
        }
        // Data under those names is not findings.
        for text in [r#"{"results": ["a", "b"]}"#, r#"{"results": [{"name": "x"}]}"#] {
            let a = read(text.into(), &scope("a.py"));
            assert!(a.findings.is_empty());
            assert_eq!(a.value(), a.json(), "{text}: left as written");
        }
    }
}
