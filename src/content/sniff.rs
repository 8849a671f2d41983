//! Stage 2 of detection: heuristics over a file's first lines, tried in a fixed order
//! (first match wins): shebang and markup declarations, JSON, JSONL, log, CSV/TSV, source
//! code keywords, INI-style config, markdown headings.
//!
//! JSON and logs go before CSV because their lines are full of commas that would otherwise
//! look like a table. Every heuristic is plain string scanning; nothing is compiled per call.

use serde::de::IgnoredAny;

use super::content_type::{ContentType, Language};
use super::csv_chunker::record_field_counts;
use super::line_index::strip_terminator;

/// What sniffing found and how sure it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signal {
    pub content_type: ContentType,
    pub language: Option<Language>,
    /// Structural evidence (it parses, every line has the shape, a shebang) rather than a
    /// few keywords; only strong signals may overrule a medium-confidence extension.
    pub strong: bool,
}

impl Signal {
    fn strong(content_type: ContentType) -> Signal {
        Signal {
            content_type,
            language: None,
            strong: true,
        }
    }

    fn weak(content_type: ContentType, language: Option<Language>) -> Signal {
        Signal {
            content_type,
            language,
            strong: false,
        }
    }
}

/// Sniffs `head` (the first lines of a file).
pub(crate) fn sniff(head: &str) -> Option<Signal> {
    let head = head.strip_prefix('\u{feff}').unwrap_or(head);
    let lines: Vec<&str> = head.split_inclusive('\n').map(strip_terminator).collect();
    let first = lines.iter().copied().find(|l| !l.trim().is_empty())?;
    if let Some(shebang) = first.strip_prefix("#!") {
        let language = shebang_language(shebang);
        return Some(Signal {
            content_type: ContentType::SourceCode,
            language,
            strong: true,
        });
    }
    if first.trim_start().starts_with("<?php") {
        return Some(Signal {
            content_type: ContentType::SourceCode,
            language: Some(Language::Php),
            strong: true,
        });
    }
    if is_markup_start(first) {
        return Some(Signal::strong(ContentType::Markup));
    }
    sniff_json(head, &lines)
        .or_else(|| sniff_log(&lines))
        .or_else(|| sniff_delimited(&lines))
        .or_else(|| sniff_code(&lines))
        .or_else(|| sniff_ini(&lines))
        .or_else(|| sniff_markdown(&lines))
}

/// `/usr/bin/env -S python3 -u` → python; `/bin/bash` → shell.
fn shebang_language(shebang: &str) -> Option<Language> {
    let mut words = shebang.split_whitespace();
    let program = words.next()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    let interpreter = if program == "env" {
        words.find(|w| !w.starts_with('-'))?
    } else {
        program
    };
    Language::from_interpreter(interpreter)
}

/// `<?xml`, `<!DOCTYPE`, `<html`, `<svg`, in any case.
fn is_markup_start(line: &str) -> bool {
    let l = line.trim_start().as_bytes();
    ["<?xml", "<!doctype", "<html", "<svg"]
        .iter()
        .any(|p| l.len() >= p.len() && l[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
}

fn sniff_json(head: &str, lines: &[&str]) -> Option<Signal> {
    let trimmed = head.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    match serde_json::from_str::<IgnoredAny>(trimmed) {
        Ok(_) => return Some(Signal::strong(ContentType::Json)),
        // A document cut off by the 50-line head: valid so far.
        Err(e) if e.is_eof() => return Some(Signal::strong(ContentType::Json)),
        Err(_) => {}
    }
    // A head cut by a byte limit may end inside a line: that line is not held against it.
    let complete = if head.ends_with('\n') {
        lines
    } else {
        &lines[..lines.len().saturating_sub(1)]
    };
    let mut values = complete.iter().filter(|l| !l.trim().is_empty()).peekable();
    values.peek()?;
    values
        .all(|l| serde_json::from_str::<IgnoredAny>(l).is_ok())
        .then(|| Signal::strong(ContentType::Jsonl))
}

fn sniff_log(lines: &[&str]) -> Option<Signal> {
    // Continuation lines (stack frames, wrapped messages) are indented; they neither count
    // for nor against the pattern.
    let entries: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']))
        .collect();
    let matching = entries.iter().filter(|l| is_log_entry(l)).count();
    (matching >= 1 && matching * 2 >= entries.len() && (matching >= 2 || entries.len() == 1))
        .then(|| Signal::strong(ContentType::Log))
}

/// Whether `line` opens a log entry: `TIMESTAMP LEVEL message`, or a syslog line.
pub(crate) fn is_log_entry(line: &str) -> bool {
    let line = line.strip_prefix('[').unwrap_or(line);
    if syslog_prefix_len(line).is_some() {
        return true;
    }
    let Some(len) = timestamp_len(line) else { return false };
    let rest = &line[len..];
    if !rest.starts_with([' ', '\t', ']', ',', '.', 'Z', '+', '-']) {
        return false;
    }
    rest.split_whitespace().take(5).any(|token| {
        let token = token.trim_matches(|c: char| !c.is_ascii_alphabetic());
        LEVELS.iter().any(|level| token.eq_ignore_ascii_case(level))
    })
}

/// Whether `line` starts with a timestamp (optionally bracketed): a new log entry.
pub(crate) fn starts_with_timestamp(line: &str) -> bool {
    let line = line.strip_prefix('[').unwrap_or(line);
    timestamp_len(line).is_some() || syslog_prefix_len(line).is_some()
}

const LEVELS: &[&str] = &[
    "TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "ERR", "FATAL", "CRITICAL", "CRIT", "SEVERE",
    "ALERT", "EMERG", "PANIC",
];

/// The length of a leading `YYYY-MM-DD[ T]HH:MM:SS`, `YYYY/MM/DD …`, `HH:MM:SS` or epoch
/// seconds/milliseconds timestamp.
fn timestamp_len(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    let digits = |from: usize, n: usize| b.len() >= from + n && b[from..from + n].iter().all(u8::is_ascii_digit);
    let time_at = |at: usize| digits(at, 2) && b.get(at + 2) == Some(&b':') && digits(at + 3, 2);
    if digits(0, 4) && matches!(b.get(4), Some(b'-' | b'/')) && digits(5, 2) && b.get(7) == b.get(4) && digits(8, 2) {
        if matches!(b.get(10), Some(b' ' | b'T')) && time_at(11) {
            let mut end = 16;
            while end < b.len() && (b[end].is_ascii_digit() || b[end] == b':') {
                end += 1;
            }
            return Some(end);
        }
        return Some(10);
    }
    if time_at(0) && b.get(5) == Some(&b':') && digits(6, 2) {
        return Some(8);
    }
    let epoch = b.iter().take_while(|c| c.is_ascii_digit()).count();
    (epoch == 10 || epoch == 13).then_some(epoch)
}

/// The length of a syslog `Mon DD HH:MM:SS` prefix.
fn syslog_prefix_len(line: &str) -> Option<usize> {
    const MONTHS: &[&str] = &[
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = line.get(..3)?;
    if !MONTHS.contains(&month) {
        return None;
    }
    let rest = line[3..].trim_start_matches(' ');
    let day = rest.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&day) {
        return None;
    }
    let time = rest[day..].strip_prefix(' ')?;
    let tb = time.as_bytes();
    let ok =
        tb.len() >= 8 && tb[2] == b':' && tb[5] == b':' && [0, 1, 3, 4, 6, 7].iter().all(|&i| tb[i].is_ascii_digit());
    ok.then(|| line.len() - time.len() + 8)
}

/// A header of plain column names, then rows with the header's field count.
fn sniff_delimited(lines: &[&str]) -> Option<Signal> {
    let header = *lines.first()?;
    let delimiter = if header.contains('\t') { '\t' } else { ',' };
    let fields: Vec<&str> = header.split(delimiter).collect();
    let clean = |f: &&str| {
        let f = f.trim_matches('"');
        !f.is_empty() && f.len() <= 64 && f.trim() == f && !f.contains(['{', '[', '"', '(', '=', ';', '<'])
    };
    if fields.len() < 2 || !fields.iter().all(clean) || header.starts_with(['#', '/']) {
        return None;
    }
    // Quote-aware: a quoted field may span lines. The last record may be cut by the end of
    // the head, so it is not held against the file.
    let body = lines[1..].join("\n");
    let counts = record_field_counts(&body, delimiter as u8);
    let complete = counts.len().saturating_sub(1).max(1).min(counts.len());
    let rows = &counts[..complete];
    let agreeing = rows.iter().filter(|&&n| n == fields.len()).count();
    (!rows.is_empty() && agreeing * 5 >= rows.len() * 4).then(|| Signal::strong(ContentType::StructuredData))
}

fn sniff_code(lines: &[&str]) -> Option<Signal> {
    let mut score = 0;
    let mut strong_keyword = false;
    for line in lines {
        let l = line.trim_start();
        if ["#include", "package "].iter().any(|k| l.starts_with(k)) {
            strong_keyword = true;
        }
        if CODE_STARTS.iter().any(|k| l.starts_with(k)) {
            score += 1;
        }
    }
    (strong_keyword || score >= 2).then(|| Signal::weak(ContentType::SourceCode, guess_language(lines)))
}

const CODE_STARTS: &[&str] = &[
    "def ",
    "class ",
    "function ",
    "import ",
    "from ",
    "#include",
    "package ",
    "fn ",
    "pub fn ",
    "pub struct ",
    "func ",
    "use ",
    "const ",
    "let ",
    "var ",
    "export ",
    "require(",
    "module ",
    "public class ",
    "impl ",
    "async def ",
    "async function ",
    "interface ",
    "#define ",
];

/// A best guess at the language of sniffed code; `None` when the clues are absent.
fn guess_language(lines: &[&str]) -> Option<Language> {
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    let starts = |prefix: &str| lines.iter().any(|l| l.trim_start().starts_with(prefix));
    if starts("#include") {
        let cpp = has("std::") || has("namespace ") || has("template<") || has("template <") || starts("class ");
        return Some(if cpp { Language::Cpp } else { Language::C });
    }
    if starts("package ") {
        return if starts("func ") || has("package main") {
            Some(Language::Go)
        } else if has(";") {
            Some(Language::Java)
        } else {
            None
        };
    }
    if starts("fn ") || starts("pub fn ") || starts("impl ") || (starts("use ") && has("::")) {
        return Some(Language::Rust);
    }
    if starts("def ") || starts("async def ") || (starts("from ") && has(" import ")) {
        let python = lines.iter().any(|l| l.trim_end().ends_with(':'));
        return Some(if python { Language::Python } else { Language::Ruby });
    }
    if starts("function ") || starts("export ") || starts("const ") || has("require(") {
        let typed = starts("interface ") || has(": string") || has(": number");
        return Some(if typed {
            Language::TypeScript
        } else {
            Language::JavaScript
        });
    }
    None
}

/// Mostly `[section]` and `key = value` lines (comments aside): INI-style config.
fn sniff_ini(lines: &[&str]) -> Option<Signal> {
    let mut total = 0;
    let mut matching = 0;
    for line in lines.iter().map(|l| l.trim()) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        total += 1;
        let section = line.starts_with('[') && line.ends_with(']') && !line.contains(',');
        let key_len = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c)))
            .unwrap_or(line.len());
        let key_value = key_len > 0 && line[key_len..].trim_start().starts_with('=');
        matching += usize::from(section || key_value);
    }
    (total >= 3 && matching * 10 >= total * 8).then(|| Signal::weak(ContentType::Config, None))
}

fn sniff_markdown(lines: &[&str]) -> Option<Signal> {
    lines
        .iter()
        .any(|l| l.starts_with("# ") || l.starts_with("## "))
        .then_some(Signal::weak(ContentType::Prose, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(head: &str) -> Option<ContentType> {
        sniff(head).map(|s| s.content_type)
    }

    #[test]
    fn json_documents_even_when_cut_by_the_head() {
        assert_eq!(kind("{\"key\": \"value\"}\n"), Some(ContentType::Json));
        assert_eq!(
            kind("\u{feff}[\n  {\"id\": 1,\n   \"tags\": [\"a\",\n"),
            Some(ContentType::Json)
        );
        assert_eq!(
            kind("{\"event\": \"click\"}\n{\"event\": \"view\"}\n"),
            Some(ContentType::Jsonl)
        );
        assert_eq!(
            kind("{\"a\": 1}\n{\"a\": 2}\n{\"a\": "),
            Some(ContentType::Jsonl),
            "cut by a byte limit"
        );
        assert_eq!(
            kind("{\"a\": 1}\n{\"a\": 2}\n{\"a\": \n"),
            None,
            "a broken complete line"
        );
        assert_eq!(kind("{not json at all\n"), None);
    }

    #[test]
    fn logs_need_timestamp_and_level_on_most_entries() {
        let log = "2026-02-11 01:30:00 ERROR db timeout\n2026-02-11 01:30:01,123 INFO retrying\n    at conn.rs:12\n\
                   [2026-02-11T01:30:02Z] [WARN] slow\n";
        assert_eq!(kind(log), Some(ContentType::Log));
        let syslog = "Feb 11 01:30:00 host sshd[42]: Accepted key\nFeb  3 01:30:01 host cron[7]: run\n";
        assert_eq!(kind(syslog), Some(ContentType::Log));
        // Dates in a CSV column are not a log.
        let csv = "date,name,value\n2026-01-01,a,1\n2026-01-02,b,2\n";
        assert_eq!(kind(csv), Some(ContentType::StructuredData));
    }

    #[test]
    fn csv_headers_and_tsv() {
        let csv = "id,name,email,note\n1,Ann,a@x.io,\"multi\nline\"\n2,\"Bo, Jr\",b@x.io,x\n";
        assert_eq!(kind(csv), Some(ContentType::StructuredData));
        assert_eq!(kind("id\tname\n1\tAnn\n"), Some(ContentType::StructuredData));
        // Prose with commas: spaces after the delimiter.
        assert_eq!(kind("Hello, world\nThis is, text\n"), None);
        // Row counts must agree with the header.
        assert_eq!(kind("a,b,c\n1\n2\n3,4\n"), None);
    }

    #[test]
    fn code_by_shebang_and_keywords() {
        let s = sniff("#!/usr/bin/env python3\nprint('hi')\n").unwrap();
        assert_eq!(
            (s.content_type, s.language, s.strong),
            (ContentType::SourceCode, Some(Language::Python), true)
        );
        assert_eq!(sniff("#!/bin/bash\necho hi\n").unwrap().language, Some(Language::Shell));
        let py = sniff("import os\n\ndef process_data(df):\n    return df\n").unwrap();
        assert_eq!(
            (py.content_type, py.language, py.strong),
            (ContentType::SourceCode, Some(Language::Python), false)
        );
        assert_eq!(
            sniff("#include <stdio.h>\nint main(void) {}\n").unwrap().language,
            Some(Language::C)
        );
        assert_eq!(
            sniff("package main\n\nfunc main() {}\n").unwrap().language,
            Some(Language::Go)
        );
        assert_eq!(
            sniff("use std::io;\nfn main() {}\n").unwrap().language,
            Some(Language::Rust)
        );
        assert_eq!(sniff("<?php\necho 1;\n").unwrap().language, Some(Language::Php));
    }

    #[test]
    fn markup_config_markdown_and_nothing() {
        assert_eq!(kind("<!DOCTYPE html>\n<html>\n"), Some(ContentType::Markup));
        assert_eq!(kind("<?xml version=\"1.0\"?>\n<a/>\n"), Some(ContentType::Markup));
        assert_eq!(
            kind("[server]\nhost = example.org\nport = 8080\n"),
            Some(ContentType::Config)
        );
        assert_eq!(
            kind("## Introduction\n\nThis document explains.\n"),
            Some(ContentType::Prose)
        );
        assert_eq!(kind("just some words\nand more words\n"), None);
        assert_eq!(kind(""), None);
    }
}
