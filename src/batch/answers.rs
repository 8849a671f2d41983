//! A unit's answer, turned into the answers of its files — once, whether it was just paid
//! for or came from the cache — and written to their result files.
//!
//! A whole file or a chunk has one file answer. A batch's answer is one JSON object with an
//! entry per file; each entry is read on its own (and, under `--schema`, validated on its
//! own, as the JSON value it is). A file the answer has no valid entry for is not an answer:
//! it is retried alone (see [`crate::plan::member_unit`]), never reported as a success it
//! is not. Text of the batch's answer that names none of its files is said as a warning.

use std::sync::Arc;

use crate::answer::split_batch_answer;
use crate::answer::{self, Answer, Scope};
use crate::cache::{Cache, CacheKey};
use crate::content::{ContentType, Shape};
use crate::request::Expect;
use crate::run_dir::RunDir;
use crate::schema::{self, OutputSchema};
use crate::unit::{UnitBody, UnitId, WorkUnit};

/// One file's answer within a unit's.
#[derive(Debug, Clone)]
pub struct FileAnswer {
    /// The unit that answered (a batch's member retried alone: that member's unit).
    pub unit: UnitId,
    /// The file (a chunk's file; a batch member).
    pub path: Arc<str>,
    /// How the aggregate names it: the unit's label for a chunk (`a.py:301-600`), the path
    /// otherwise (the same string then, shared).
    pub label: Arc<str>,
    /// A batch's member: its index in the batch, whose member names its result file.
    pub member: Option<usize>,
    pub content_type: Option<ContentType>,
    pub answer: Answer,
}

/// What a unit's answer came to.
#[derive(Debug, Clone, Default)]
pub struct UnitAnswers {
    pub files: Vec<FileAnswer>,
    /// Members of a batch to retry alone, with why (their index in the batch).
    pub retry: Vec<(usize, String)>,
    /// A batch's answer text that names none of its files (kept in the batch's result
    /// file, and said); boxed, as nearly every answer has none and a run holds them all.
    pub unattributed: Option<Box<Unattributed>>,
}

/// Text of a batch's answer that names none of its files.
#[derive(Debug, Clone)]
pub struct Unattributed {
    pub parts: Vec<String>,
    /// The batch's result file, where that text is.
    pub result_file: String,
}

impl UnitAnswers {
    /// What the run says about these answers: each file's warning, and a batch's text
    /// that names none of its files.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| {
                Some(format!(
                    "{}: {}",
                    crate::escape::name(&f.label),
                    f.answer.warning.as_ref()?
                ))
            })
            .collect();
        if let Some(u) = &self.unattributed {
            warnings.push(format!(
                "part of a batch's answer names none of its files; it is kept in {}: \"{}\"",
                crate::escape::name(&u.result_file),
                excerpt(&u.parts.join("\n\n"), EXCERPT_CHARS)
            ));
        }
        warnings
    }
}

/// How much of an answer a warning quotes.
const EXCERPT_CHARS: usize = 120;

/// The start of `text` on one line, as a person reads it: every run of whitespace (the
/// newlines and indentation of pretty JSON) one space, at most `max` characters, `…` when
/// there is more — never `{\n  "file": …` escapes (issue 25).
fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = one_line.chars().take(max).collect();
    if shown.len() < one_line.len() {
        shown.push('…');
    }
    crate::escape::name(&shown).into_owned()
}

/// Reads `text`, the answer of `unit` (see the module doc).
pub fn read(unit: &WorkUnit, text: &str, expect: Expect, schema: Option<&OutputSchema>) -> UnitAnswers {
    match &unit.body {
        UnitBody::Batch(batch) => {
            let paths: Vec<&str> = batch.members.iter().map(|m| m.path.as_str()).collect();
            let split = split_batch_answer(text, &paths);
            let shape = match expect {
                Expect::Batch(shape) => shape,
                _ => Shape::OwnText,
            };
            let mut out = UnitAnswers {
                unattributed: (!split.unattributed.is_empty()).then(|| {
                    Box::new(Unattributed {
                        parts: split.unattributed,
                        result_file: unit.result_name.clone(),
                    })
                }),
                ..UnitAnswers::default()
            };
            let entries = split.per_file.into_iter().zip(split.values);
            for (i, (member, (part, value))) in batch.members.iter().zip(entries).enumerate() {
                let Some(part) = part else {
                    out.retry
                        .push((i, "the batch's answer has no entry for this file".to_string()));
                    continue;
                };
                let part = match (shape, schema) {
                    // Checked as the value it is: under a schema of strings, `"yes"`.
                    (Shape::Schema, Some(s)) => match value.map_or_else(|| s.check(&part), |v| s.check_value(v)) {
                        Ok(value) => schema::canonical_text(&value),
                        Err(rejection) => {
                            out.retry.push((
                                i,
                                format!("its entry in the batch's answer was rejected: {}", rejection.first()),
                            ));
                            continue;
                        }
                    },
                    _ => part,
                };
                let scope = Scope {
                    path: &member.path,
                    chunk: None,
                    span: None,
                    expects_findings: shape == Shape::Findings,
                };
                let path: Arc<str> = Arc::from(member.path.as_str());
                out.files.push(FileAnswer {
                    unit: unit.id.clone(),
                    label: path.clone(),
                    path,
                    member: Some(i),
                    content_type: Some(batch.detection.content_type),
                    answer: answer::read(part, &scope),
                });
            }
            out
        }
        UnitBody::Plain | UnitBody::Piece(_) => {
            let input = unit.inputs.first();
            let path: Arc<str> = input.map_or_else(|| unit.label.clone(), |i| i.display.clone());
            let (chunk, content_type) = match &unit.body {
                UnitBody::Piece(p) => (Some(&p.chunk), Some(p.detection.content_type)),
                _ => (None, None),
            };
            let scope = Scope {
                path: &path,
                chunk,
                span: input.and_then(|i| i.span).map(|s| (s.start, s.end)),
                expects_findings: expect == Expect::Findings,
            };
            let answer = answer::read(text.to_string(), &scope);
            UnitAnswers {
                files: vec![FileAnswer {
                    unit: unit.id.clone(),
                    label: unit.label.clone(),
                    path,
                    member: None,
                    content_type,
                    answer,
                }],
                ..UnitAnswers::default()
            }
        }
    }
}

/// Where a unit's answer is kept in the cache, so its result file can be a link to it.
#[derive(Clone, Copy)]
pub struct Cached<'a> {
    pub cache: &'a Cache,
    pub key: &'a CacheKey,
    /// The answer was just paid for: the cache has no answer file to link yet.
    pub fresh: bool,
}

/// Writes the unit's result file (the whole answer) and, for a batch, each answered
/// member's result file. With `cached`, each is a hard link to the cache's copy of its
/// text when that holds exactly the same text; else it is written and becomes that copy,
/// so the next rerun links it.
pub fn write(
    run_dir: &RunDir,
    cached: Option<Cached<'_>>,
    unit: &WorkUnit,
    text: &str,
    answers: &UnitAnswers,
) -> std::io::Result<()> {
    match cached {
        Some(Cached { cache, key, fresh }) => {
            if fresh || !run_dir.link_result(&unit.result_name, text, &cache.answer_file(key))? {
                let path = run_dir.write_result(&unit.result_name, text)?;
                cache.adopt_answer_file(key, &path);
            }
        }
        None => {
            run_dir.write_result(&unit.result_name, text)?;
        }
    }
    if let UnitBody::Batch(batch) = &unit.body {
        for file in &answers.files {
            let Some((i, member)) = file.member.and_then(|i| Some((i, batch.members.get(i)?))) else {
                continue;
            };
            let (name, text) = (&member.result_file, &file.answer.text);
            match cached {
                // Each file's part of a cached batch answer is kept beside it, as the
                // whole answer is: a rerun links the file's result instead of writing it.
                Some(Cached { cache, key, fresh }) => {
                    if fresh || !run_dir.link_result(name, text, &cache.member_answer_file(key, i))? {
                        let path = run_dir.write_result(name, text)?;
                        cache.adopt_member_answer_file(key, i, &path);
                    }
                }
                None => {
                    run_dir.write_result(name, text)?;
                }
            }
        }
    }
    Ok(())
}
