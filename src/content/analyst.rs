//! Analyst routing and prompt rendering: which analyst reads a content type (the seed's
//! routing matrix), how `--focus` steers it, and the system and user messages of analyst,
//! batch and synthesis calls.
//!
//! The system message depends only on the analyst, the focus and the answer format, so it
//! is the same for every unit of a kind; the user message starts with the shared lines of
//! the user's instruction ([`crate::prompt::Instruction`]), the same for every unit, so
//! providers can cache system and shared part together. Everything about the unit — path,
//! line range, "chunk M of N", schema summary — comes after, then the content, then the
//! rest of the instruction. The content block is rendered by the caller (it owns the
//! delimiters), and line numbers are always those of the original file.

use serde::{Deserialize, Serialize};

use super::answer_format::Shape;
use super::chunk::{Chunk, ChunkStrategy};
use super::content_type::ContentType;
use super::detect::{DetectedBy, Detection};
use super::prompt_templates::{fill, TemplateName, Templates};
use crate::prompt::Instruction;

/// The four analyst families of the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Analyst {
    Code,
    Data,
    Json,
    /// Logs, prose, config, markup and anything unknown.
    General,
}

impl Analyst {
    /// The routing matrix's analyst for a content type.
    pub fn for_content(content_type: ContentType) -> Analyst {
        match content_type {
            ContentType::SourceCode => Analyst::Code,
            ContentType::StructuredData => Analyst::Data,
            ContentType::Json | ContentType::Jsonl => Analyst::Json,
            ContentType::Log | ContentType::Prose | ContentType::Markup | ContentType::Config => Analyst::General,
        }
    }

    /// `code`, `data`, `json`, `general`.
    pub fn as_str(self) -> &'static str {
        match self {
            Analyst::Code => "code",
            Analyst::Data => "data",
            Analyst::Json => "json",
            Analyst::General => "general",
        }
    }

    fn template(self) -> TemplateName {
        match self {
            Analyst::Code => TemplateName::AnalystCode,
            Analyst::Data => TemplateName::AnalystData,
            Analyst::Json => TemplateName::AnalystJson,
            Analyst::General => TemplateName::AnalystGeneral,
        }
    }
}

/// The analysis goal (`--focus`). Per the routing matrix only the code analyst varies with
/// it; every other cell of the matrix falls back to the type's general analyst, because the
/// data and JSON analysts report distributions and shapes whatever the goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Focus {
    #[default]
    General,
    Security,
    Architecture,
    Performance,
}

impl Focus {
    /// The focus fragment `analyst` gets, if any.
    fn template_for(self, analyst: Analyst) -> Option<TemplateName> {
        match (analyst, self) {
            (Analyst::Code, Focus::Security) => Some(TemplateName::FocusSecurity),
            (Analyst::Code, Focus::Architecture) => Some(TemplateName::FocusArchitecture),
            (Analyst::Code, Focus::Performance) => Some(TemplateName::FocusPerformance),
            _ => None,
        }
    }
}

impl std::str::FromStr for Focus {
    type Err = String;
    fn from_str(s: &str) -> Result<Focus, String> {
        match s {
            "general" => Ok(Focus::General),
            "security" => Ok(Focus::Security),
            "architecture" => Ok(Focus::Architecture),
            "performance" => Ok(Focus::Performance),
            other => Err(format!(
                "unknown focus {other:?}; use general, security, architecture or performance"
            )),
        }
    }
}

impl Analyst {
    /// The JSON Schema of this analyst's answer, sent as structured output (OpenAI
    /// `response_format`, an Anthropic forced tool), so a model that can be constrained
    /// answers in the shape the prompt describes. Lenient where models differ (any extra
    /// field is allowed; only `findings` and each finding's `summary` are required).
    pub fn findings_schema(self) -> serde_json::Value {
        let place = match self {
            Analyst::Code | Analyst::General => "scope",
            Analyst::Data => "column",
            Analyst::Json => "path",
        };
        serde_json::json!({
            "type": "object",
            "properties": {
                "findings": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string"},
                            place: {"type": "string"},
                            "summary": {"type": "string"},
                            "evidence": {"type": "string"},
                            "line": {"type": "integer", "minimum": 1},
                            "severity": {"type": "string", "enum": ["high", "medium", "low"]},
                        },
                        "required": ["type", "summary", "severity"],
                    },
                },
                "metadata": {"type": "object"},
            },
            "required": ["findings"],
        })
    }
}

/// The two messages of one call; the user message is `shared` then `user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    pub system: String,
    /// The start of the user message every unit of the run shares (empty for synthesis).
    pub shared: String,
    /// The rest of the user message: this unit's own.
    pub user: String,
}

/// Everything the analyst prompt of one chunk (or one whole file) needs.
#[derive(Debug, Clone, Copy)]
pub struct ChunkPrompt<'a> {
    /// The user's instruction; `{file}` in it is replaced by the path.
    pub sub_prompt: &'a str,
    pub focus: Focus,
    pub path: &'a str,
    pub detection: &'a Detection,
    /// How many lines the whole file has.
    pub file_lines: usize,
    /// The chunk ([`Chunk::whole`] for an uncut file).
    pub chunk: &'a Chunk,
    /// `chunk.content`, wrapped in the caller's delimiters.
    pub content_block: &'a str,
    /// `--require-citations`: the file's citation block (empty without it), before the
    /// content.
    pub citations: &'a str,
    /// What the answer must be.
    pub shape: Shape,
}

/// The system and user messages for one chunk.
pub fn render_chunk(templates: &Templates, input: &ChunkPrompt<'_>) -> Prompt {
    let analyst = Analyst::for_content(input.detection.content_type);
    let system = system_message(templates, analyst, input.focus, input.shape, false);
    let chunk = input.chunk;
    let mut user = format!(
        "File: {}\nContent type: {}\n",
        crate::escape::name(input.path),
        describe_type(*input.detection)
    );
    let range = format!("{}–{}", chunk.start_line, chunk.end_line);
    if chunk.total == 1 && chunk.start_line <= 1 && chunk.end_line >= input.file_lines {
        user.push_str(&format!("Lines: {range}, the whole file.\n"));
    } else {
        user.push_str(&format!(
            "Lines: {range} of {} ({}). Cite these line numbers of the original file.\n",
            input.file_lines,
            chunk.position_label()
        ));
    }
    user.push_str(&context_lines(chunk, input.detection.content_type));
    let instruction = Instruction::split(input.sub_prompt);
    push_body(
        &mut user,
        input.citations,
        input.content_block,
        &instruction.closing_line(&[input.path]),
    );
    Prompt {
        system,
        shared: instruction.shared_message(),
        user,
    }
}

/// The lines about a chunk's context, each capped (see [`context_max_bytes`]): what is
/// prepended and why, the overlap with the previous chunk, a JSON chunk's schema and place,
/// and the chunker's note.
fn context_lines(chunk: &Chunk, content_type: ContentType) -> String {
    let context = &chunk.context;
    let mut out = String::new();
    if let Some(p) = context.prepended {
        let what = match context.strategy {
            ChunkStrategy::Rows => "the header row",
            _ => "the file's import block",
        };
        out.push_str(&format!(
            "Prepended for context, not part of this chunk: lines {p}, {what}.\n"
        ));
    }
    if !context.header.is_empty() {
        let lines: Vec<String> = context.header.iter().map(ToString::to_string).collect();
        out.push_str(&format!(
            "Also prepended, not part of this chunk: lines {}, the header of the class (or block) its lines are members of.\n",
            capped(&lines.join(", "), HEADER_LIST_MAX_BYTES)
        ));
    }
    if let Some(overlap) = context.overlap_before {
        // Overlapping windows: the model is told which lines the previous chunk held, so
        // it reports what spans the seam once (findings are also deduplicated after).
        out.push_str(&format!(
            "Lines {overlap} were also in the previous chunk, for continuity: report a finding on them only if it \
             needs lines after {} to be seen.\n",
            overlap.end
        ));
    }
    if let Some(schema) = &context.schema {
        let sample = match content_type {
            ContentType::Jsonl => "fields of the file's first object".to_owned(),
            _ if schema.sampled == 1 && schema.value_types == ["object"] => "the members of the object".to_owned(),
            _ => format!("field types of the first {} elements", schema.sampled),
        };
        out.push_str(&format!("Schema ({sample}): {}\n", schema.line(SCHEMA_MAX_BYTES)));
    }
    if let Some(path) = &context.json_path {
        out.push_str(&format!("Place in the document: {}\n", capped(path, PLACE_MAX_BYTES)));
    }
    if let Some(note) = &context.note {
        out.push_str(&format!("Note: {}\n", capped(note, NOTE_MAX_BYTES)));
    }
    out
}

/// Caps of the context lines, so that their bytes are bounded (see
/// [`context_max_bytes`]).
const HEADER_LIST_MAX_BYTES: usize = 200;
const SCHEMA_MAX_BYTES: usize = 1_000;
const PLACE_MAX_BYTES: usize = 300;
const NOTE_MAX_BYTES: usize = 400;

/// The most bytes [`render_chunk`] writes about a chunk's context (its prepended lines,
/// class headers, overlap, schema, place in the document, note) for a file of this type.
/// The planner sizes chunks by rendering a chunk without context and adding this, so a
/// planned chunk never exceeds the budget whatever its context says; the caps keep it
/// small. Only JSON chunks have a schema and a place.
pub fn context_max_bytes(content_type: ContentType) -> usize {
    // Each line's fixed words and capped values, with room to spare (a unit test renders
    // every line at its longest against these).
    const PREPENDED: usize = 160;
    const HEADER: usize = 120 + HEADER_LIST_MAX_BYTES;
    const OVERLAP: usize = 240;
    const SCHEMA: usize = 80 + SCHEMA_MAX_BYTES;
    const PLACE: usize = 30 + PLACE_MAX_BYTES;
    const NOTE: usize = 10 + NOTE_MAX_BYTES;
    let common = PREPENDED + HEADER + OVERLAP + NOTE;
    match content_type {
        ContentType::Json | ContentType::Jsonl => common + SCHEMA + PLACE,
        _ => common,
    }
}

/// `text`, cut to at most `max` bytes at a character boundary, ending in `…` when cut.
fn capped(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…", &text[..end]))
}

/// One file of a batch: its path and line count.
#[derive(Debug, Clone, Copy)]
pub struct BatchFile<'a> {
    pub path: &'a str,
    pub lines: usize,
}

/// Everything the prompt of a batch of small files needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchPrompt<'a> {
    pub sub_prompt: &'a str,
    pub focus: Focus,
    pub detection: &'a Detection,
    pub files: &'a [BatchFile<'a>],
    /// All files' contents, each wrapped in the caller's delimiters (naming its path).
    pub content_block: &'a str,
    /// `--require-citations`: the files' citation blocks (empty without it), before the
    /// contents.
    pub citations: &'a str,
    /// What each file's answer must be.
    pub shape: Shape,
}

/// The system and user messages for a batch of small files of one content type. The
/// answer is one JSON object, `{"files": [{"file", …}]}`, whatever each file's answer is
/// (findings, the user's schema, their own JSON or text), so there is one format to ask
/// for and one to read.
pub fn render_batch(templates: &Templates, input: &BatchPrompt<'_>) -> Prompt {
    let analyst = Analyst::for_content(input.detection.content_type);
    let system = system_message(templates, analyst, input.focus, input.shape, true);
    let combined: usize = input.files.iter().map(|f| f.lines).sum();
    let mut user = format!(
        "Batch: {} {} files (combined: {combined} lines). Each is shown whole; line numbers count from line 1 of each file.\n",
        input.files.len(),
        input.detection.content_type
    );
    for (i, f) in input.files.iter().enumerate() {
        user.push_str(&format!(
            "{}. {} ({} lines)\n",
            i + 1,
            crate::escape::name(f.path),
            f.lines
        ));
    }
    // `{file}` names the batch's files: the instruction applies to each of them.
    let names: Vec<&str> = input.files.iter().map(|f| f.path).collect();
    let instruction = Instruction::split(input.sub_prompt);
    push_body(
        &mut user,
        input.citations,
        input.content_block,
        &instruction.closing_line(&names),
    );
    Prompt {
        system,
        shared: instruction.shared_message(),
        user,
    }
}

/// Everything the prompt of a batch read with the generic per-file prompt needs (glob mode
/// and every input mode but a directory's).
#[derive(Debug, Clone, Copy)]
pub struct GenericBatchPrompt<'a> {
    pub sub_prompt: &'a str,
    /// How many files the batch holds.
    pub files: usize,
    /// All files' contents, each wrapped in the caller's delimiters (naming its path).
    pub content_block: &'a str,
    /// `--require-citations`: the files' citation blocks (empty without it).
    pub citations: &'a str,
    /// What each file's answer must be: never findings (see [`generic_batch_shape`]).
    pub shape: Shape,
}

/// The shape of each file's answer in a generic batch: what the generic prompt would have
/// asked of the file alone — the user's schema, their JSON, else their text (never the
/// analysts' findings).
pub fn generic_batch_shape(sub_prompt: &str, schema: bool) -> Shape {
    match Shape::of(sub_prompt, schema) {
        Shape::Findings => Shape::OwnText,
        shape => shape,
    }
}

/// The system and user messages of a generic batch: the generic worker's rules for several
/// files, the one batch answer format, then the files and the instruction once, applied to
/// each file. The tags name every file already, so the message does not list them again,
/// and `{file}` is kept as written and said to stand for each file's path: naming every
/// file in its place would repeat the whole list once per mention (issue 27 counts every
/// token a small file pays besides its content).
pub fn render_generic_batch(templates: &Templates, input: &GenericBatchPrompt<'_>) -> Prompt {
    let mut parts: Vec<&str> = vec![templates.get(TemplateName::BatchGeneric).trim()];
    parts.extend(batch_format(templates, input.shape));
    let mut system = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    system.push('\n');
    let mut user = format!("{} files:\n", input.files);
    let instruction = Instruction::split(input.sub_prompt);
    push_body(
        &mut user,
        input.citations,
        input.content_block,
        &instruction.closing_line_for_each(),
    );
    Prompt {
        system,
        shared: instruction.shared_message(),
        user,
    }
}

/// Phase 1 of synthesis: one call per content type over its analysts' results (rendered by
/// the caller, each naming its file and lines).
pub fn render_type_synthesis(
    templates: &Templates,
    sub_prompt: &str,
    content_type: ContentType,
    results: &str,
) -> Prompt {
    synthesis(
        templates,
        TemplateName::SynthesizeType,
        &[
            ("query", sub_prompt),
            ("content_type", content_type.as_str()),
            ("results", results),
        ],
    )
}

/// Phase 2 of synthesis: the final report over the per-type summaries.
pub fn render_cross_synthesis(templates: &Templates, sub_prompt: &str, summaries: &str) -> Prompt {
    synthesis(
        templates,
        TemplateName::SynthesizeCross,
        &[("query", sub_prompt), ("summaries", summaries)],
    )
}

/// A synthesis template's `main` section is the system message and its `user` section the
/// user message; an override without a `user` section is all user message.
fn synthesis(templates: &Templates, name: TemplateName, values: &[(&str, &str)]) -> Prompt {
    match templates.section(name, "user") {
        Some(user) => Prompt {
            system: templates.section(name, "main").unwrap_or_default().to_owned(),
            shared: String::new(),
            user: fill(user, values),
        },
        None => Prompt {
            system: String::new(),
            shared: String::new(),
            user: fill(templates.get(name).trim(), values),
        },
    }
}

/// The analyst's role, its focus, and exactly one answer format: for one file the shape of
/// its answer, for a batch the `{"files": […]}` object with that shape per file.
fn system_message(templates: &Templates, analyst: Analyst, focus: Focus, shape: Shape, batch: bool) -> String {
    let template = analyst.template();
    let mut parts: Vec<&str> = vec![templates.section(template, "main").unwrap_or_default()];
    if let Some(fragment) = focus.template_for(analyst) {
        parts.push(templates.get(fragment).trim());
    }
    let findings = templates.section(template, "findings-schema").unwrap_or_default();
    if batch {
        parts.extend(batch_format(templates, shape));
        if shape == Shape::Findings {
            parts.push(findings);
        }
    } else {
        match shape {
            Shape::Findings => {
                parts.push(FINDINGS_ONLY);
                parts.push(findings);
            }
            Shape::OwnJson | Shape::OwnText => parts.push(templates.get(TemplateName::AnalystOwnFormat).trim()),
            // The schema's own instruction is added by the request (it names the schema).
            Shape::Schema => {}
        }
    }
    let mut system = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    system.push('\n');
    system
}

/// The one answer format of a batch, `{"files": […]}`, and the shape of each file's entry.
fn batch_format(templates: &Templates, shape: Shape) -> impl Iterator<Item = &str> {
    let batch_files = TemplateName::BatchFiles;
    let member = match shape {
        Shape::Findings => "member-findings",
        Shape::OwnJson => "member-json",
        Shape::OwnText => "member-text",
        Shape::Schema => "member-schema",
    };
    templates
        .section(batch_files, "main")
        .into_iter()
        .chain(templates.section(batch_files, member))
}

/// Before the findings schema of a single unit.
const FINDINGS_ONLY: &str =
    "Answer with one JSON object and nothing else: no code fences, no text before or after it. Its shape:";

/// `source_code (python), found by extension`.
fn describe_type(d: Detection) -> String {
    let language = d.language.map(|l| format!(" ({l})")).unwrap_or_default();
    let how = match d.detected_by {
        DetectedBy::Extension => "by extension",
        DetectedBy::Sniffing => "by its content",
        DetectedBy::Default => "by default (nothing more specific matched)",
    };
    format!("{}{language}, detected {how}", d.content_type)
}

/// The citation blocks, the content, then the instruction's closing line: long input first,
/// the question last.
fn push_body(user: &mut String, citations: &str, content_block: &str, closing_line: &str) {
    user.push('\n');
    if !citations.is_empty() {
        user.push_str(citations.trim_end());
        user.push_str("\n\n");
    }
    user.push_str(content_block);
    if !content_block.ends_with('\n') {
        user.push('\n');
    }
    user.push('\n');
    user.push_str(closing_line);
}

#[cfg(test)]
#[path = "analyst_tests.rs"]
mod tests;
