//! Content-aware planning: which files are cut into chunks, which small files share a call,
//! and the analyst prompt of every such unit.
//!
//! A file is chunked when it is over 1500 lines or over the model's context budget
//! (`--chunking off` never cuts); small files are batched only when asked (`--batch-small`).
//! Every other file stays the whole-file unit of [`plan::whole_file_unit`], with the prompt
//! and cache key it always had. Chunks and batches carry their rendered prompt; their cache
//! key names the analyst's system message, so editing a template re-asks.

use std::path::Path;

use crate::cache::CacheKey;
use crate::content::{
    self, batch_small, chunk, detect, head_lines, needs_chunking, render_batch, render_chunk, Analyst, BatchCandidate,
    BatchFile, BatchPrompt, Chunk, ChunkOptions, ChunkPrompt, Detection, Focus, Prompt, SizeTier, Templates,
    SNIFF_LINES,
};
use crate::error::RlmError;
use crate::input::{sha256_hex, InputFile, Manifest};
use crate::plan::{self, unit_key, KeyParts, PlanContext};
use crate::prompt::Delimiter;
use crate::run_dir::result_names;
use crate::unit::{BatchMember, LineSpan, UnitContent, UnitId, UnitInput, WorkUnit};

/// How content-aware planning is set up for a run.
#[derive(Debug, Clone)]
pub struct ContentOptions {
    /// `--chunking auto` (true) or `off`.
    pub chunking: bool,
    /// `--batch-small`: small files of one type share a call.
    pub batch_small: bool,
    /// `rlm query`: every file goes to its analyst, cut when it is longer than one chunk.
    pub chunk_always: bool,
    pub focus: Focus,
    pub templates: Templates,
}

/// Prompt templates: the embedded ones, each replaced by `.aiwg/rlm/prompts/<name>.md` when
/// that file exists.
pub fn load_templates(rlm_dir: &Path) -> Result<Templates, RlmError> {
    let mut templates = Templates::embedded();
    let dir = rlm_dir.join("prompts");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(templates);
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for path in names {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        if !name.ends_with(".md") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| RlmError::Usage(format!("cannot read the prompt override {}: {e}", path.display())))?;
        templates
            .set(&name, text)
            .map_err(|e| RlmError::Usage(format!("{}: {e}", path.display())))?;
    }
    Ok(templates)
}

/// What happens to one file.
enum Treatment {
    Whole,
    Chunked,
    Batched,
}

/// A file read for content-aware planning.
struct Read {
    text: String,
    detection: Detection,
    lines: usize,
}

/// Plans the units of a run (see the module doc).
pub fn plan(manifest: &Manifest, ctx: &PlanContext<'_>, opts: &ContentOptions, delimiter: &Delimiter) -> Vec<WorkUnit> {
    let budget_bytes = budget_bytes(ctx);
    let treatments: Vec<Treatment> = manifest
        .files
        .iter()
        .map(|f| {
            if opts.chunking && (opts.chunk_always || needs_chunking(f.lines as usize, f.size, budget_bytes)) {
                Treatment::Chunked
            } else if opts.batch_small {
                Treatment::Batched
            } else {
                Treatment::Whole
            }
        })
        .collect();
    if treatments.iter().all(|t| matches!(t, Treatment::Whole)) {
        return plan::plan(manifest, ctx);
    }
    let indices: Vec<usize> = (0..manifest.files.len()).collect();
    let reads: Vec<Option<Read>> =
        crate::parallel::map(&indices, crate::parallel::io_threads(), |&i| match treatments[i] {
            Treatment::Whole => None,
            _ => read(&manifest.files[i]),
        })
        .into_iter()
        .map(Option::flatten)
        .collect();

    // Drafts in file order: a chunked file's chunks in its place, a batch where its first
    // file was.
    let mut drafts: Vec<Draft> = Vec::new();
    let mut batchable: Vec<usize> = Vec::new();
    for i in 0..manifest.files.len() {
        match (&treatments[i], &reads[i]) {
            (Treatment::Chunked, Some(read)) => {
                let chunk_opts = ChunkOptions {
                    max_chunk_tokens: budget_bytes
                        .map_or(32_000, |b| crate::tokens::upper_bound(b.clamp(4_000, 100_000))),
                    ..ChunkOptions::default()
                };
                for c in chunk(&read.detection, &read.text, &chunk_opts) {
                    drafts.push(Draft::Chunk {
                        file: i,
                        chunk: Box::new(c),
                    });
                }
            }
            (Treatment::Batched, Some(_)) => {
                if batchable.is_empty() {
                    drafts.push(Draft::Batch(Vec::new()));
                }
                batchable.push(i);
            }
            _ => drafts.push(Draft::Whole(i)),
        }
    }
    // The batches take the place of the one placeholder, in batch_small's order.
    let candidates: Vec<BatchCandidate> = batchable
        .iter()
        .map(|&i| {
            let read = reads[i].as_ref().expect("batched files are read");
            BatchCandidate {
                content_type: read.detection.content_type,
                lines: read.lines,
            }
        })
        .collect();
    let batches: Vec<Vec<usize>> = batch_small(&candidates, SizeTier::SMALL_MAX_LINES)
        .into_iter()
        .map(|b| b.into_iter().map(|k| batchable[k]).collect())
        .collect();
    if let Some(at) = drafts.iter().position(|d| matches!(d, Draft::Batch(_))) {
        drafts.splice(at..=at, batches.into_iter().map(Draft::Batch));
    }

    // Names: every unit's label and every batch member's path, unique together.
    let labels: Vec<String> = drafts.iter().map(|d| d.label(manifest)).collect();
    let mut wanted: Vec<&str> = labels.iter().map(String::as_str).collect();
    for d in &drafts {
        if let Draft::Batch(files) = d {
            if files.len() > 1 {
                wanted.extend(files.iter().map(|&i| manifest.files[i].display.as_str()));
            }
        }
    }
    let mut names = result_names(&wanted).into_iter();
    let unit_names: Vec<String> = names.by_ref().take(drafts.len()).collect();
    let mut member_names = names;

    drafts
        .into_iter()
        .zip(unit_names)
        .zip(labels)
        .map(|((draft, result_name), label)| match draft {
            Draft::Whole(i) => plan::whole_file_unit(&manifest.files[i], result_name, ctx),
            Draft::Chunk { file, chunk } => {
                let read = reads[file].as_ref().expect("chunked files are read");
                let span = LineSpan {
                    start: chunk.start_line as u64,
                    end: chunk.end_line as u64,
                };
                chunk_unit(
                    &manifest.files[file],
                    read,
                    &chunk,
                    Some(span),
                    label,
                    result_name,
                    ctx,
                    opts,
                    delimiter,
                )
            }
            Draft::Batch(files) => {
                let members: Vec<(&InputFile, &Read)> = files
                    .iter()
                    .map(|&i| (&manifest.files[i], reads[i].as_ref().expect("batched files are read")))
                    .collect();
                let member_names: Vec<String> = if files.len() > 1 {
                    member_names.by_ref().take(files.len()).collect()
                } else {
                    Vec::new()
                };
                batch_unit(&members, member_names, label, result_name, ctx, opts, delimiter)
            }
        })
        .collect()
}

/// A unit before its name is known.
enum Draft {
    Whole(usize),
    Chunk { file: usize, chunk: Box<Chunk> },
    Batch(Vec<usize>),
}

impl Draft {
    fn label(&self, manifest: &Manifest) -> String {
        match self {
            Draft::Whole(i) => manifest.files[*i].display.clone(),
            Draft::Chunk { file, chunk } => {
                format!(
                    "{}:{}-{}",
                    manifest.files[*file].display, chunk.start_line, chunk.end_line
                )
            }
            Draft::Batch(files) => match files.as_slice() {
                [one] => manifest.files[*one].display.clone(),
                [first, rest @ ..] => format!("{} +{} more", manifest.files[*first].display, rest.len()),
                [] => "batch".to_string(),
            },
        }
    }
}

/// The input bytes a unit may hold: the context window minus the answer, at 3 bytes a
/// token, when the window is known.
fn budget_bytes(ctx: &PlanContext<'_>) -> Option<u64> {
    ctx.model.context_window_known.then(|| {
        let tokens = ctx
            .model
            .context_window
            .saturating_sub(u64::from(ctx.max_tokens))
            .saturating_sub(1_500);
        tokens * 3
    })
}

fn read(file: &InputFile) -> Option<Read> {
    let bytes = std::fs::read(&file.path).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let detection = detect(&file.display, head_lines(&text, SNIFF_LINES));
    let lines = content::count_lines(&text);
    Some(Read { text, detection, lines })
}

#[allow(clippy::too_many_arguments)]
/// A unit that reads one piece of a file through its type's analyst: a chunk (`span`), or
/// the whole file (`None`).
fn chunk_unit(
    file: &InputFile,
    read: &Read,
    chunk: &Chunk,
    span: Option<LineSpan>,
    label: String,
    result_name: String,
    ctx: &PlanContext<'_>,
    opts: &ContentOptions,
    delimiter: &Delimiter,
) -> WorkUnit {
    let block = delimiter.block(&file.display, &chunk.content);
    let prompt = render_chunk(
        &opts.templates,
        &ChunkPrompt {
            sub_prompt: &ctx.keys.sub_prompt,
            focus: opts.focus,
            path: &file.display,
            detection: &read.detection,
            file_lines: read.lines,
            chunk,
            content_block: &block,
        },
    );
    let inputs = vec![UnitInput::of_file(file, span)];
    finish(
        inputs,
        label,
        result_name,
        ctx,
        read.detection,
        chunk.content.clone(),
        prompt,
        Vec::new(),
    )
}

fn batch_unit(
    members: &[(&InputFile, &Read)],
    member_names: Vec<String>,
    label: String,
    result_name: String,
    ctx: &PlanContext<'_>,
    opts: &ContentOptions,
    delimiter: &Delimiter,
) -> WorkUnit {
    if let [(file, read)] = members {
        // Alone of its type: the analyst reads it whole.
        let whole = Chunk::whole(&read.text);
        return chunk_unit(file, read, &whole, None, label, result_name, ctx, opts, delimiter);
    }
    let detection = members[0].1.detection;
    let inputs: Vec<UnitInput> = members.iter().map(|(f, _)| UnitInput::of_file(f, None)).collect();
    let files: Vec<BatchFile<'_>> = members
        .iter()
        .map(|(f, r)| BatchFile {
            path: &f.display,
            lines: r.lines,
        })
        .collect();
    let content: String = members
        .iter()
        .map(|(f, r)| delimiter.block(&f.display, &r.text))
        .collect();
    let prompt = render_batch(
        &opts.templates,
        &BatchPrompt {
            sub_prompt: &ctx.keys.sub_prompt,
            focus: opts.focus,
            detection: &detection,
            files: &files,
            content_block: &content,
        },
    );
    let members = members
        .iter()
        .zip(member_names)
        .map(|((f, _), result_file)| BatchMember {
            path: f.display.clone(),
            result_file,
        })
        .collect();
    finish(inputs, label, result_name, ctx, detection, content, prompt, members)
}

#[allow(clippy::too_many_arguments)]
fn finish(
    inputs: Vec<UnitInput>,
    label: String,
    result_name: String,
    ctx: &PlanContext<'_>,
    detection: Detection,
    content: String,
    prompt: Prompt,
    members: Vec<BatchMember>,
) -> WorkUnit {
    let analyst = Analyst::for_content(detection.content_type);
    let mut prompt = prompt;
    if ctx.keys.require_citations {
        // --require-citations: each input's hash16 (and a chunk's lines) after the content.
        for input in &inputs {
            prompt.user.push_str("\n\n");
            prompt.user.push_str(&crate::citation::input_block(input));
        }
    }
    let bytes = (prompt.system.len() + prompt.user.len()) as u64;
    let budget_tokens = bytes.div_ceil(3);
    let window = ctx.model.context_window;
    let available = window.saturating_sub(u64::from(ctx.max_tokens));
    let blocked = (ctx.model.context_window_known && budget_tokens > available).then(|| {
        format!(
            "too large for the model's context budget even as a chunk: ~{budget_tokens} input tokens + {} output > \
             {window} ({}); pass --context-window or use a model with a larger window",
            ctx.max_tokens, ctx.model.id
        )
    });
    WorkUnit {
        id: UnitId::for_inputs(&inputs),
        label,
        cache_key: content_key(&inputs, ctx.keys, analyst, &prompt.system),
        inputs,
        result_name,
        estimated_input_tokens: bytes.div_ceil(4),
        blocked,
        content: Some(Box::new(UnitContent {
            content_type: detection.content_type,
            analyst,
            content,
            system: prompt.system,
            user: prompt.user,
            members,
        })),
    }
}

/// The key of a content-aware unit: its inputs (with spans), and a query naming the
/// analyst's system message (so an edited template re-asks).
fn content_key(inputs: &[UnitInput], keys: &KeyParts, analyst: Analyst, system: &str) -> CacheKey {
    let keys = KeyParts {
        query: format!(
            "{}+content/v1:{}:{}",
            keys.query,
            analyst.as_str(),
            &sha256_hex(system.as_bytes())[..16]
        ),
        ..keys.clone()
    };
    unit_key(inputs, &keys)
}
