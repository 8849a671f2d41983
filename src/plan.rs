//! Manifest → work units: which files are sent whole, which are cut into chunks, which small
//! files share a call, and the key and size of every unit.
//!
//! A file is cut when it is over 1500 lines or over the model's context budget (`--chunking
//! off` never cuts; `rlm query` always reads through the analyst); the other files of one
//! type are packed into shared calls unless `--no-batch-small` says not to (issue 27: a
//! small file's framing — system prompt, delimiters, instruction — cost more than its
//! content). A pack is read by whoever would read its files alone ([`BatchReader`]): their
//! type's analyst in directory mode, the generic per-file prompt in every other mode. A
//! file left alone, and every file under `--no-batch-small`, is a unit of its own: a
//! [`UnitBody::Plain`] unit with the generic per-file prompt, or its analyst's.
//!
//! Chunks are sized from the budget: the model's window, minus the answer (`--max-tokens`),
//! minus the rest of the prompt, measured with [`crate::tokens::upper_bound`] — the same
//! rule as the block check below, so a planned chunk is never blocked. Each unit is then
//! rendered once ([`crate::request::render`]) for its cache key and size.

use std::path::Path;
use std::sync::Arc;

use crate::content::{
    self, batch_small, chunk, context_max_bytes, detect, head_lines, needs_chunking, BatchCandidate, Chunk,
    ChunkContext, ChunkOptions, ChunkStrategy, Detection, SizeTier, Templates, SNIFF_LINES,
};
use crate::error::{ConfigFailure, RlmError};
use crate::input::{InputFile, Manifest};
use crate::provider::ModelInfo;
use crate::request::{self, RequestContext};
use crate::run_dir::result_names;
use crate::tokens;
use crate::unit::{Batch, BatchMember, BatchReader, LineSpan, Piece, UnitBody, UnitId, UnitInput, WorkUnit};

/// How units are cut and grouped.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// `--chunking auto` (true) or `off`.
    pub chunking: bool,
    /// Small files of one type share a call (off with `--no-batch-small`).
    pub batch_small: bool,
    /// Who reads a pack of small files (and a file left alone).
    pub batch_reader: BatchReader,
    /// `rlm query`: every file goes to its analyst, cut when it is longer than one chunk.
    pub chunk_always: bool,
}

/// Prompt bytes a unit needs besides its content and what [`overhead_bytes`] and
/// [`file_frame_bound`] count: the fixed words of the lines naming the file, its type and
/// its lines, the delimiters' tags, the labels of the instruction's parts.
const FIXED_LINES_BYTES: u64 = 512;

/// The answer tokens a file of a pack is given: a pack holds at most `--max-tokens` / this
/// many files, so that one answer has room for all of theirs (a file the answer leaves out
/// is asked again alone, and paid twice).
const ANSWER_TOKENS_PER_PACKED_FILE: u32 = 128;

/// A chunk's content below this many tokens is too little to say much about: the plan
/// warns that the window is mostly taken by the answer and the instructions.
const SMALL_CHUNK_TOKENS: u64 = 1_000;

/// Prompt templates: the embedded ones, each replaced by `.aiwg/rlm/prompts/<name>.md` when
/// that file exists.
pub fn load_templates(rlm_dir: &Path) -> Result<Templates, RlmError> {
    let mut templates = Templates::embedded();
    let dir = rlm_dir.join("prompts");
    let Ok(entries) = fs_err::read_dir(&dir) else {
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
        let text = fs_err::read_to_string(&path).map_err(ConfigFailure::PromptOverride)?;
        templates
            .set(&name, text)
            .map_err(|e| RlmError::Config(format!("{}: {e}", path.display())))?;
    }
    Ok(templates)
}

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Treatment {
    Whole,
    Chunked,
    Batched,
}

/// The budget of one unit's prompt, in [`tokens::upper_bound`] tokens.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The model's window minus the answer.
    pub input_tokens: u64,
    /// The model's window (what a blocked unit's message compares its request with).
    pub window: u64,
    /// Whether the window is the model's (known, or given with `--context-window`) rather
    /// than rlm's assumption.
    pub known: bool,
}

impl Budget {
    pub fn of(model: &ModelInfo, max_tokens: u32) -> Budget {
        Budget {
            input_tokens: model.context_window.saturating_sub(u64::from(max_tokens)),
            window: model.context_window,
            known: model.context_window_known,
        }
    }

    /// The tokens left for content once `frame_bytes` of prompt are taken (at least
    /// [`MIN_CONTENT_TOKENS`]: [`check_room`] has made sure the window leaves that beside
    /// the instructions, and a file whose own frame takes more is still cut into chunks
    /// the block check then names).
    fn for_content(self, frame_bytes: u64) -> u64 {
        self.input_tokens
            .saturating_sub(tokens::upper_bound(frame_bytes))
            .max(MIN_CONTENT_TOKENS)
    }
}

/// The least content budget a chunk is given. A window that leaves less than this once the
/// answer and the instructions are counted is refused before anything is planned
/// ([`check_room`]): chunks of a few lines each, thousands of them, help no one.
const MIN_CONTENT_TOKENS: u64 = 256;

/// What to do about a window the answer leaves too little of, when the window is the model's.
pub const WHAT_TO_DO_KNOWN: &str = "pass a smaller --max-tokens or a larger --context-window (the model's real window)";

/// The message for a `--max-tokens` at least as large as the context window (`window` says
/// which: the flag's, or the model's).
pub fn answer_fills_window(max_tokens: u32, window: &str, what_to_do: &str) -> String {
    format!("--max-tokens {max_tokens} is not less than {window}: no room is left for the input; {what_to_do}")
}

/// Refuses (a usage error, for the dry run as for the real run) a `--max-tokens` that leaves
/// the window no room for content once the instructions are counted. `window_flag` is
/// `--context-window` when it was given, so the message names where the window came from.
pub fn check_room(ctx: &RequestContext, model: &ModelInfo, window_flag: Option<u64>) -> Result<(), RlmError> {
    let budget = Budget::of(model, ctx.max_tokens);
    let instructions = tokens::upper_bound(least_frame_bytes(ctx));
    let room = budget.input_tokens.saturating_sub(instructions);
    if room >= MIN_CONTENT_TOKENS {
        return Ok(());
    }
    let window = match (window_flag, model.context_window_known) {
        (Some(w), _) => format!("the context window (--context-window {w})"),
        (None, true) => format!("the {}-token context window of {}", model.context_window, model.id),
        (None, false) => format!(
            "the {}-token context window rlm assumes for {} (its real one is not known)",
            model.context_window, model.id
        ),
    };
    let max_tokens = ctx.max_tokens;
    let what_to_do = if model.context_window_known {
        WHAT_TO_DO_KNOWN
    } else {
        "pass --context-window with the model's real window, or a smaller --max-tokens"
    };
    Err(RlmError::Usage(if budget.input_tokens == 0 {
        answer_fills_window(max_tokens, &window, what_to_do)
    } else {
        let left = match room {
            0 => "no room".to_string(),
            n => format!("only {n} tokens"),
        };
        format!(
            "--max-tokens {max_tokens} for the answer and ~{instructions} tokens of instructions leave {left} for \
             content in {window} (a chunk needs at least {MIN_CONTENT_TOKENS}); {what_to_do}"
        )
    }))
}

/// The units of a run, and what planning them has to say (a window too small to leave
/// room for content).
#[derive(Debug, Default)]
pub struct UnitPlan {
    pub units: Vec<WorkUnit>,
    pub warnings: Vec<String>,
}

/// Plans the units of a run (see the module doc).
pub fn plan(manifest: &Manifest, opts: &PlanOptions, ctx: &RequestContext, model: &ModelInfo) -> UnitPlan {
    let budget = Budget::of(model, ctx.max_tokens);
    let files = &manifest.files;
    // The prompt around a whole file or a batch, without content: at most this.
    let overhead = overhead_bytes(ctx);
    let content_budget = budget.for_content(overhead + FIXED_LINES_BYTES);
    let treatments: Vec<Treatment> = files
        .iter()
        .map(|f| {
            let whole_budget = budget.for_content(overhead + FIXED_LINES_BYTES + file_frame_bound(f, ctx));
            let over_budget = tokens::upper_bound(f.size) > whole_budget;
            if opts.chunking && (opts.chunk_always || needs_chunking(f.lines as usize, f.size, None) || over_budget) {
                Treatment::Chunked
            } else if opts.batch_small {
                Treatment::Batched
            } else {
                Treatment::Whole
            }
        })
        .collect();
    // Detection, chunking and rendering are spread over the cores: planning tens of
    // thousands of files is mostly these.
    let work: Vec<(&InputFile, Treatment)> = files.iter().zip(treatments.iter().copied()).collect();
    // (A whole file needs its type only when its analyst reads it.)
    let analysts = opts.batch_reader == BatchReader::Analyst;
    let detections: Vec<Option<Detection>> = crate::parallel::map_pure(&work, |(f, t)| {
        (*t != Treatment::Whole || analysts).then(|| detection(f))
    });
    drop(work);
    let chunked: Vec<usize> = (0..files.len())
        .filter(|&i| treatments[i] == Treatment::Chunked && detections[i].is_some())
        .collect();
    let mut chunks: Vec<Vec<Chunk>> = (0..files.len()).map(|_| Vec::new()).collect();
    // Each file's chunks are sized by its own frame: its path, its citation block and its
    // analyst's prompt are measured, not guessed.
    let cut = crate::parallel::map_pure_from(&chunked, 2, |&i| {
        detections[i].map_or_else(
            || (MIN_CONTENT_TOKENS, Vec::new()),
            |d| {
                let chunk_opts = ChunkOptions {
                    max_chunk_tokens: budget.for_content(frame_bytes(&files[i], d, ctx)),
                    ..ChunkOptions::default()
                };
                let mut chunks = chunk(&d, &text_of(&files[i]).text, &chunk_opts);
                if chunks.is_empty() {
                    // Its text could not be had again: one unit, blocked when it is sized.
                    chunks.push(Chunk::whole(""));
                }
                (chunk_opts.max_chunk_tokens, chunks)
            },
        )
    });
    let mut small: Vec<(usize, u64, usize)> = Vec::new();
    for (i, (file_budget, file_chunks)) in chunked.into_iter().zip(cut) {
        if file_budget < SMALL_CHUNK_TOKENS && file_chunks.len() > 1 {
            small.push((i, file_budget, file_chunks.len()));
        }
        chunks[i] = file_chunks;
    }
    let warnings = small_budget_warning(&small, files, model, ctx.max_tokens)
        .into_iter()
        .collect();

    // Drafts in file order: a chunked file's chunks in its place, the batches where the
    // first batched file was.
    let mut drafts: Vec<Draft> = Vec::new();
    let mut batchable: Vec<usize> = Vec::new();
    for (i, file_chunks) in chunks.into_iter().enumerate() {
        match (treatments[i], &detections[i]) {
            (Treatment::Chunked, Some(_)) => {
                for c in file_chunks {
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
    let batches = group_batches(files, &detections, &batchable, content_budget, ctx);
    let reader = opts.batch_reader;
    if let Some(at) = drafts.iter().position(|d| matches!(d, Draft::Batch(_))) {
        drafts.splice(at..=at, batches.into_iter().map(Draft::Batch));
    }

    // Names: every unit's label and every batch member's path, unique together.
    let labels = unique_labels(drafts.iter().map(|d| d.label(manifest)).collect(), &drafts);
    let mut wanted: Vec<&str> = labels.iter().map(AsRef::as_ref).collect();
    for d in &drafts {
        if let Draft::Batch(members) = d {
            if members.len() > 1 {
                wanted.extend(members.iter().map(|&i| files[i].display.as_ref()));
            }
        }
    }
    let mut names = result_names(&wanted).into_iter();
    let unit_names: Vec<String> = names.by_ref().take(drafts.len()).collect();
    let mut member_names = names;

    let mut units: Vec<WorkUnit> = drafts
        .into_iter()
        .zip(unit_names)
        .zip(labels)
        .map(|((draft, result_name), label)| {
            let (inputs, body) = match draft {
                // Read as a file left alone of its type is: by its analyst in directory
                // mode (`--no-batch-small` there too), else by the generic prompt.
                Draft::Whole(i) => batch_body(files, &detections, &[i], reader, &mut member_names),
                Draft::Chunk { file, chunk } => {
                    let f = &files[file];
                    let whole = chunk.total == 1 && chunk.start_line <= 1 && chunk.end_line as u64 >= f.lines;
                    let span = (!whole).then_some(LineSpan {
                        start: chunk.start_line as u64,
                        end: chunk.end_line as u64,
                    });
                    let piece = Piece {
                        detection: detections[file].unwrap_or_else(|| detection(f)),
                        file_lines: f.lines as usize,
                        chunk: *chunk,
                        content_released: false,
                    };
                    (vec![UnitInput::of_file(f, span)], UnitBody::Piece(Box::new(piece)))
                }
                Draft::Batch(members) => batch_body(files, &detections, &members, reader, &mut member_names),
            };
            unsized_unit(inputs, body, label, result_name)
        })
        .collect();
    drop((detections, treatments));
    // Sized in place, on all cores: a million units hold nothing more while they are.
    crate::parallel::for_each_mut(&mut units, 64, |unit| {
        let size = Size::of(unit, ctx);
        settle(unit, size, ctx, budget);
        // The plan holds no text: each unit's is read again when it is sent.
        unit.release_text();
    });
    unique_ids(&mut units);
    UnitPlan { units, warnings }
}

/// The bytes of a chunk's prompt over `file`, besides its content, at most: the prompt
/// rendered for a chunk of it without content or context lines — its analyst's system
/// message, the instruction's shared and closing lines, the file's name and type, line
/// numbers and chunk positions at their longest, the citation block, the delimiters — and
/// the most its context lines can take ([`context_max_bytes`]). Measured, not guessed, so
/// a planned chunk is never blocked.
fn frame_bytes(file: &InputFile, detection: Detection, ctx: &RequestContext) -> u64 {
    let last = file.lines.max(1);
    // A file has at most one chunk a byte.
    let positions = usize::try_from(file.size).unwrap_or(usize::MAX).max(2);
    let probe = Chunk {
        index: positions - 1,
        total: positions,
        start_line: last as usize,
        end_line: last as usize,
        content: String::new(),
        context: ChunkContext::new(ChunkStrategy::Windows),
        partial_line: None,
        layout: Vec::new(),
    };
    let piece = Piece {
        detection,
        file_lines: file.lines as usize,
        chunk: probe,
        content_released: false,
    };
    let span = LineSpan { start: last, end: last };
    // Measured without content: the probe's text is empty, whatever the file's.
    let mut input = UnitInput::of_file(file, Some(span));
    input.source = std::sync::Arc::default();
    let unit = unsized_unit(
        vec![input],
        UnitBody::Piece(Box::new(piece)),
        Arc::default(),
        String::new(),
    );
    request::render(&unit, ctx).prompt_bytes() + context_max_bytes(detection.content_type) as u64
}

/// The least [`frame_bytes`] a chunk of any file can have: a one-letter name, whichever
/// analyst's prompt is the shortest. A window that leaves this too little room leaves every
/// file too little (and the per-file numbers the plan warns with are never below it).
fn least_frame_bytes(ctx: &RequestContext) -> u64 {
    ["a.py", "a.csv", "a.json", "a.txt"]
        .into_iter()
        .map(|name| {
            let file = InputFile {
                path: std::path::Path::new(name).into(),
                display: name.into(),
                size: 1,
                lines: 1,
                content_hash: "".into(),
                source: None,
                detection: None,
            };
            frame_bytes(&file, detect(name, ""), ctx)
        })
        .min()
        .unwrap_or(0)
}

/// What a file adds to a prompt besides its content and [`overhead_bytes`], at most: its
/// name wherever the prompt names it (the file line, the delimiters, each `{file}` of the
/// instruction), its citation block, and the lines about a chunk's context. For deciding
/// whether a file is sent whole; a chunked file is measured ([`frame_bytes`]).
fn file_frame_bound(file: &InputFile, ctx: &RequestContext) -> u64 {
    let name = crate::escape::name(&file.display)
        .len()
        .max(crate::escape::attribute(&file.display).len());
    let mentions = 3 + ctx.sub_prompt.matches("{file}").count();
    (mentions * name + citation_bytes(file, ctx) + context_max_bytes(content::ContentType::Json)) as u64
}

/// The bytes of `file`'s citation block under `--require-citations` (with a line span at
/// its longest), else 0.
fn citation_bytes(file: &InputFile, ctx: &RequestContext) -> usize {
    if !ctx.require_citations {
        return 0;
    }
    let last = file.lines.max(1);
    let input = UnitInput::of_file(file, Some(LineSpan { start: last, end: last }));
    crate::citation::input_block(&input).len() + 2
}

/// One warning when the window leaves chunks too little content (`small`: file, content
/// budget, chunks): the answer (`--max-tokens`) and the instructions take most of it.
fn small_budget_warning(
    small: &[(usize, u64, usize)],
    files: &[InputFile],
    model: &ModelInfo,
    max_tokens: u32,
) -> Option<String> {
    let &(first, tokens, chunks) = small.first()?;
    let others = match small.len() {
        1 => String::new(),
        n => format!(" (and {} more file{})", n - 1, if n == 2 { "" } else { "s" }),
    };
    Some(format!(
        "a context window of {} tokens less --max-tokens {max_tokens} for the answer leaves about {tokens} tokens of \
         content a chunk once the instructions are counted: {} is cut into {chunks} chunks{others}; pass a larger \
         --context-window (the model's real window) or a smaller --max-tokens",
        model.context_window,
        crate::escape::name(&files[first].display),
    ))
}

/// The last guard of unit ids: a unit whose id another unit of the plan already has (it
/// should not happen: [`WorkUnit::part`] tells apart units over the same lines) gets `-2`,
/// `-3`… after it, in plan order, so answers are never filed under another unit's id.
fn unique_ids(units: &mut [WorkUnit]) {
    // The units in the order of their ids (then of the plan), not a map of every id: a
    // million units' map was the largest thing planning held at its end.
    // Each beside the first 16 bytes of its id, so most comparisons read no id: sorting
    // indexes by the ids behind them missed the processor's cache at every step. Any order
    // that puts equal ids together will do.
    let head = |id: &UnitId| {
        let mut bytes = [0u8; 16];
        let id = id.as_str().as_bytes();
        let n = id.len().min(16);
        bytes[..n].copy_from_slice(&id[..n]);
        u128::from_be_bytes(bytes)
    };
    let mut order: Vec<(u128, usize)> = units.iter().enumerate().map(|(i, u)| (head(&u.id), i)).collect();
    order
        .sort_unstable_by(|&(ha, a), &(hb, b)| ha.cmp(&hb).then_with(|| units[a].id.cmp(&units[b].id)).then(a.cmp(&b)));
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && units[order[end].1].id == units[order[start].1].id {
            end += 1;
        }
        // The second unit with an id in plan order is `id-2`, the third `id-3`…
        for (n, &(_, i)) in order[start..end].iter().enumerate().skip(1) {
            units[i].id = UnitId::named(format!("{}-{}", units[i].id, n + 1));
        }
        start = end;
    }
}

/// The prompt bytes besides content: the longest system message a unit of this run can get,
/// and the instruction (which may be repeated per file of a batch and once more at the end).
fn overhead_bytes(ctx: &RequestContext) -> u64 {
    let system = ctx
        .templates
        .longest_analyst_system()
        .max(crate::prompt::BATCH_SYSTEM.len());
    let schema = ctx.schema.as_ref().map_or(0, |s| s.instruction().len());
    (system + schema + ctx.sub_prompt.len()) as u64
}

/// A file's content type.
fn detection(file: &InputFile) -> Detection {
    if let Some(detection) = file.detection {
        return detection;
    }
    detect(&file.display, head_lines(&text_of(file).text, SNIFF_LINES))
}

/// `file`'s text, read again when the read that hashed it did not keep it; empty when it
/// cannot be had (its unit is then blocked when it is sized: see [`Size::of`]).
fn text_of(file: &InputFile) -> std::sync::Arc<crate::source::SourceText> {
    file.text().unwrap_or_default()
}

/// The chunk of a file read whole: its text, or — when the read did not keep the text —
/// nothing yet ([`WorkUnit::with_text`] puts it there when the unit is sized or sent).
fn whole_piece(file: &InputFile, detection: Detection) -> Piece {
    let held = file.source.as_deref().is_some_and(crate::source::SourceText::is_held);
    let (chunk, content_released) = if held {
        (Chunk::whole(&text_of(file).text), false)
    } else {
        (Chunk::whole_unread(file.lines as usize), true)
    };
    Piece {
        detection,
        file_lines: file.lines as usize,
        chunk,
        content_released,
    }
}

/// Small files in batches: files of one type, up to 1500 lines together, within the content
/// budget together, and as many as one answer has room for
/// ([`ANSWER_TOKENS_PER_PACKED_FILE`]); a file alone of its type is a unit of its own.
fn group_batches(
    files: &[InputFile],
    detections: &[Option<Detection>],
    batchable: &[usize],
    content_budget: u64,
    ctx: &RequestContext,
) -> Vec<Vec<usize>> {
    let mentions = 2 + ctx.sub_prompt.matches("{file}").count();
    let candidates: Vec<BatchCandidate> = batchable
        .iter()
        .map(|&i| BatchCandidate {
            content_type: detections[i].map_or(content::ContentType::Prose, |d| d.content_type),
            lines: files[i].lines as usize,
        })
        .collect();
    let max_members = usize::try_from(ctx.max_tokens / ANSWER_TOKENS_PER_PACKED_FILE)
        .unwrap_or(usize::MAX)
        .max(2);
    let mut out = Vec::new();
    for group in batch_small(&candidates, SizeTier::SMALL_MAX_LINES) {
        // Each file is listed, delimited, named by each `{file}` and cited: count its
        // bytes and those.
        let mut current: Vec<usize> = Vec::new();
        let mut tokens_so_far = 0;
        for k in group {
            let i = batchable[k];
            let f = &files[i];
            let name = crate::escape::name(&f.display).len() + 2;
            let t = tokens::upper_bound(f.size + (mentions * name + citation_bytes(f, ctx) + 120) as u64);
            if !current.is_empty() && (tokens_so_far + t > content_budget || current.len() >= max_members) {
                out.push(std::mem::take(&mut current));
                tokens_so_far = 0;
            }
            current.push(i);
            tokens_so_far += t;
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// The inputs and body of a batch (a batch of one is its file, read whole by its reader).
fn batch_body(
    files: &[InputFile],
    detections: &[Option<Detection>],
    members: &[usize],
    reader: BatchReader,
    member_names: &mut impl Iterator<Item = String>,
) -> (Vec<UnitInput>, UnitBody) {
    let first = members.first().copied().unwrap_or_default();
    if let ([one], BatchReader::Generic) = (members, reader) {
        return (vec![UnitInput::of_file(&files[*one], None)], UnitBody::Plain);
    }
    let detection = detections[first].unwrap_or_else(|| detection(&files[first]));
    if let [one] = members {
        let f = &files[*one];
        let piece = whole_piece(f, detection);
        return (vec![UnitInput::of_file(f, None)], UnitBody::Piece(Box::new(piece)));
    }
    let inputs: Vec<UnitInput> = members.iter().map(|&i| UnitInput::of_file(&files[i], None)).collect();
    let members = members
        .iter()
        .map(|&i| BatchMember {
            path: files[i].display.to_string(),
            lines: files[i].lines as usize,
            result_file: member_names.next().unwrap_or_default(),
        })
        .collect();
    (
        inputs,
        UnitBody::Batch(Box::new(Batch {
            detection,
            reader,
            members,
        })),
    )
}

/// A unit with its key, its size and, when it cannot be sent, why.
fn finish(
    inputs: Vec<UnitInput>,
    body: UnitBody,
    label: Arc<str>,
    result_name: String,
    ctx: &RequestContext,
    budget: Budget,
) -> WorkUnit {
    let mut unit = unsized_unit(inputs, body, label, result_name);
    let size = Size::of(&unit, ctx);
    settle(&mut unit, size, ctx, budget);
    unit
}

/// A unit whose key and size are not known yet (see [`settle`]).
fn unsized_unit(inputs: Vec<UnitInput>, body: UnitBody, label: Arc<str>, result_name: String) -> WorkUnit {
    WorkUnit {
        // Set with the key (hashing is done on all cores).
        id: UnitId::named(String::new()),
        label,
        inputs,
        result_name,
        body,
        cache_key: crate::cache::CacheKey(String::new()),
        estimated_input_tokens: 0,
        prompt_bytes: 0,
        content_bytes: 0,
        prefix: Default::default(),
        blocked: None,
    }
}

/// What rendering a unit tells the plan: its id, its key and its prompt's size.
struct Size {
    id: UnitId,
    key: crate::cache::CacheKey,
    prompt_bytes: u64,
    content_bytes: u64,
    prefix: crate::unit::PromptPrefix,
    /// Why the unit cannot be sent, when its text could not be read again.
    unsendable: Option<String>,
    /// What it sends of each input, in bytes.
    input_bytes: Vec<u64>,
}

impl Size {
    /// Renders `unit` (its text read again when it is not held) to measure it; a unit
    /// whose text cannot be had again is measured without it and gets why in `unsendable`.
    fn of(unit: &WorkUnit, ctx: &RequestContext) -> Size {
        let (loaded, unsendable) = match unit.with_text() {
            Ok(loaded) => (loaded, None),
            Err(why) => (std::borrow::Cow::Borrowed(unit), Some(why)),
        };
        let rendered = request::render(&loaded, ctx);
        Size {
            input_bytes: loaded.inputs.iter().map(|i| i.content().len() as u64).collect(),
            id: UnitId::for_part(&unit.inputs, unit.part().as_deref()),
            prompt_bytes: rendered.prompt_bytes(),
            content_bytes: rendered.content_bytes,
            prefix: rendered.prefix(),
            key: rendered.key,
            unsendable,
        }
    }
}

/// Gives `unit` its key and size and, when it cannot be sent, why.
fn settle(unit: &mut WorkUnit, size: Size, ctx: &RequestContext, budget: Budget) {
    let bytes = size.prompt_bytes;
    let needed = tokens::upper_bound(bytes);
    unit.id = size.id;
    unit.cache_key = size.key;
    unit.prefix = size.prefix;
    unit.estimated_input_tokens = tokens::expected(bytes);
    unit.prompt_bytes = bytes;
    unit.content_bytes = size.content_bytes;
    for (input, bytes) in unit.inputs.iter_mut().zip(size.input_bytes) {
        input.bytes = bytes;
    }
    if let Some(why) = size.unsendable {
        unit.blocked = Some(why);
    } else if needed > budget.input_tokens && budget.known {
        unit.blocked = Some(format!(
            "too large for the model's context budget: ~{needed} input tokens + {} output > {} tokens; {}",
            ctx.max_tokens,
            budget.window,
            match unit.body {
                UnitBody::Plain => "drop --chunking off so it is cut into chunks, or pass --context-window",
                _ => "pass --context-window or use a model with a larger window",
            }
        ));
    }
}

/// Labels that name one unit each (the report, the aggregate and the progress lines name
/// units by them): chunks over the same lines (JSON elements of a one-line document) are
/// told apart by their place in the document, and any label still taken twice gets ` #2`,
/// ` #3`… in plan order.
fn unique_labels(labels: Vec<Arc<str>>, drafts: &[Draft]) -> Vec<Arc<str>> {
    let count = |labels: &[Arc<str>]| {
        let mut counts: std::collections::HashMap<Arc<str>, usize> = std::collections::HashMap::new();
        for l in labels {
            *counts.entry(l.clone()).or_default() += 1;
        }
        counts
    };
    // Nearly always every label is distinct: told by their hashes (distinct hashes, distinct
    // labels), without a map of a million copies of them.
    let mut hashes = std::collections::HashSet::with_capacity(labels.len());
    if labels
        .iter()
        .all(|l| hashes.insert(crate::hash::fast_hash(l.as_bytes())))
    {
        return labels;
    }
    drop(hashes);
    let counts = count(&labels);
    if counts.len() == labels.len() {
        return labels;
    }
    let mut labels: Vec<String> = labels.iter().map(ToString::to_string).collect();
    for (label, draft) in labels.iter_mut().zip(drafts) {
        if let (Some(2..), Draft::Chunk { chunk, .. }) = (counts.get(label.as_str()), draft) {
            if let Some(path) = &chunk.context.json_path {
                label.push(' ');
                label.push_str(path);
            }
        }
    }
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for label in &mut labels {
        let n = seen.entry(label.clone()).or_default();
        *n += 1;
        if *n > 1 {
            label.push_str(&format!(" #{n}"));
        }
    }
    labels.into_iter().map(Arc::from).collect()
}

/// A unit before its name is known.
enum Draft {
    Whole(usize),
    Chunk { file: usize, chunk: Box<Chunk> },
    Batch(Vec<usize>),
}

impl Draft {
    /// A whole file's label is its shown path, shared with it.
    fn label(&self, manifest: &Manifest) -> Arc<str> {
        match self {
            Draft::Whole(i) => manifest.files[*i].display.clone(),
            Draft::Chunk { file, chunk } => {
                let f = &manifest.files[*file];
                if let Some(p) = chunk.partial_line {
                    format!("{}:{} (part {} of {})", f.display, p.line, p.part, p.parts).into()
                } else if chunk.total == 1 && chunk.start_line <= 1 && chunk.end_line as u64 >= f.lines {
                    f.display.clone()
                } else {
                    format!("{}:{}-{}", f.display, chunk.start_line, chunk.end_line).into()
                }
            }
            Draft::Batch(files) => match files.as_slice() {
                [one] => manifest.files[*one].display.clone(),
                [first, rest @ ..] => format!("{} +{} more", manifest.files[*first].display, rest.len()).into(),
                [] => "batch".into(),
            },
        }
    }
}

/// The units over the budget of a model whose window rlm does not know: sent anyway (the
/// server decides), and said.
pub fn unknown_window_warnings(units: &[WorkUnit], model: &ModelInfo, max_tokens: u32) -> Vec<String> {
    if model.context_window_known {
        return Vec::new();
    }
    let budget = Budget::of(model, max_tokens);
    let over: Vec<&WorkUnit> = units
        .iter()
        .filter(|u| tokens::upper_bound(u.prompt_bytes) > budget.input_tokens)
        .collect();
    match over.as_slice() {
        [] => Vec::new(),
        [first, ..] => vec![format!(
            "{} unit{} ({}{}) may not fit the context window rlm assumes for {} ({} tokens): pass --context-window \
             with the model's real window",
            over.len(),
            if over.len() == 1 { "" } else { "s" },
            crate::escape::name(&first.label),
            if over.len() > 1 { ", …" } else { "" },
            model.id,
            model.context_window
        )],
    }
}

/// Member `index` of a batch unit, as a unit of its own: read whole by the batch's reader
/// (its type's analyst, or the generic per-file prompt) and written to the member's result
/// file. A file a batch's answer left out (or answered invalidly) is retried this way, alone.
pub fn member_unit(unit: &WorkUnit, index: usize, ctx: &RequestContext, budget: Budget) -> Option<WorkUnit> {
    let UnitBody::Batch(batch) = &unit.body else {
        return None;
    };
    let member = batch.members.get(index)?;
    let input = unit.inputs.get(index)?.clone();
    if batch.reader == BatchReader::Generic {
        return Some(finish(
            vec![input],
            UnitBody::Plain,
            member.path.as_str().into(),
            member.result_file.clone(),
            ctx,
            budget,
        ));
    }
    let piece = Piece {
        detection: batch.detection,
        file_lines: member.lines,
        // Put there by `with_text` when it is sized.
        chunk: Chunk::whole_unread(member.lines),
        content_released: true,
    };
    Some(finish(
        vec![input],
        UnitBody::Piece(Box::new(piece)),
        member.path.as_str().into(),
        member.result_file.clone(),
        ctx,
        budget,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_taken_twice_get_their_place_among_the_units_with_that_id() {
        let (long, longer) = ("u-0123456789abcd-x", "u-0123456789abcd-y");
        let mut units: Vec<WorkUnit> = ["b", "a", "b", "c", long, longer, "b", "a", long]
            .into_iter()
            .map(|id| {
                let mut u = unsized_unit(Vec::new(), UnitBody::Plain, id.into(), format!("{id}.result.md"));
                u.id = UnitId::named(id.to_string());
                u
            })
            .collect();
        unique_ids(&mut units);
        let ids: Vec<&str> = units.iter().map(|u| u.id.as_str()).collect();
        // Ids alike in their first 16 bytes are told apart by the rest.
        let (long_2, b_3, a_2) = (format!("{long}-2"), "b-3", "a-2");
        assert_eq!(ids, ["b", "a", "b-2", "c", long, longer, b_3, a_2, &long_2]);
    }
}
