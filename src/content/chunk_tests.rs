//! Tests of the dispatcher and the log chunker, and the properties every chunker keeps:
//! chunks cover every line of the original, and their content is the lines they claim.

use super::*;
use crate::content::content_type::Language;
use proptest::prelude::*;

/// Whether the chunks' ranges are within `1..=lines` and their union is all of it.
pub(crate) fn covers_all_lines(chunks: &[Chunk], lines: usize) -> bool {
    let mut ranges: Vec<LineRange> = chunks.iter().map(Chunk::lines).collect();
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut covered = 0;
    for r in &ranges {
        if r.start < 1 || r.end > lines || r.start > r.end || r.start > covered + 1 {
            return false;
        }
        covered = covered.max(r.end);
    }
    covered == lines
        && chunks
            .iter()
            .enumerate()
            .all(|(i, c)| c.index == i && c.total == chunks.len())
}

/// Whether a chunk's content is its own lines, after any prepended lines (and marker
/// lines between them), every content line being what its layout says: the original line,
/// or a marker rlm wrote. A piece of a long line is a part of that line.
pub(crate) fn content_matches(chunk: &Chunk, text: &str) -> bool {
    let index = LineIndex::new(text);
    if let Some(p) = chunk.partial_line {
        return p.line == chunk.start_line
            && p.line == chunk.end_line
            && index.slice(p.line, p.line).contains(chunk.content.as_str())
            && chunk.original_line(1) == Some(p.line);
    }
    let own = index.slice(chunk.start_line, chunk.end_line);
    if !chunk.content.ends_with(own) {
        return false;
    }
    let content = LineIndex::new(&chunk.content);
    let own_first = content.len() + 1 - chunk.lines().len();
    let shown: Vec<LineRange> = chunk
        .context
        .prepended
        .into_iter()
        .chain(chunk.context.header.iter().copied())
        .collect();
    (1..=content.len()).all(|k| match chunk.original_line(k) {
        Some(n) if k >= own_first => n == chunk.start_line + (k - own_first) && content.line(k) == index.line(n),
        Some(n) => shown.iter().any(|r| r.contains(n)) && content.line(k) == index.line(n),
        None => k < own_first && content.line(k).contains("are not in this chunk"),
    })
}

/// Every chunk within the budget, by the one token estimate.
pub(crate) fn assert_within_budget(chunks: &[Chunk], opts: &ChunkOptions) {
    for c in chunks {
        let tokens = crate::tokens::upper_bound(c.content.len() as u64);
        assert!(
            tokens <= opts.max_chunk_tokens.max(MIN_CHUNK_TOKENS),
            "chunk {} ({:?}) takes {tokens} tokens, over {}",
            c.index,
            c.lines(),
            opts.max_chunk_tokens
        );
    }
}

fn log_with_trace_at(trace_start: usize, lines: usize) -> String {
    let mut out = String::new();
    let mut n = 1;
    while n <= lines {
        if n == trace_start {
            out.push_str("2026-02-11 01:30:00,001 ERROR worker crashed\n");
            out.push_str("Traceback (most recent call last):\n");
            for i in 0..8 {
                out.push_str(&format!(
                    "  File \"/srv/app/jobs.py\", line {}, in run\n    step_{i}()\n",
                    100 + i
                ));
            }
            out.push_str("ValueError: bad row\n");
            n += 19;
        } else {
            out.push_str(&format!(
                "2026-02-11 01:{:02}:{:02} INFO request {n} ok\n",
                n / 60 % 60,
                n % 60
            ));
            n += 1;
        }
    }
    out
}

#[test]
fn a_stack_trace_across_a_window_edge_stays_whole() {
    // The trace occupies lines 190..=208; a plain 200-line window would cut it at 200.
    let text = log_with_trace_at(190, 450);
    let d = Detection::given(ContentType::Log, None);
    let chunks = chunk(&d, &text, &ChunkOptions::default());
    assert_eq!(chunks[0].lines(), LineRange::new(1, 208));
    assert!(chunks[0].content.contains("Traceback") && chunks[0].content.ends_with("ValueError: bad row\n"));
    assert_eq!(chunks[1].start_line, 189);
    assert_eq!(chunks[1].position_label(), format!("chunk 2 of {}", chunks.len()));
    assert!(covers_all_lines(&chunks, 450));
    assert!(chunks.iter().all(|c| content_matches(c, &text)));
}

#[test]
fn plain_logs_are_200_line_windows_with_20_overlap() {
    let text: String = (1..=500)
        .map(|n| format!("2026-02-11 01:00:00 INFO line {n}\n"))
        .collect();
    let chunks = chunk(
        &Detection::given(ContentType::Log, None),
        &text,
        &ChunkOptions::default(),
    );
    let ranges: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, vec![(1, 200), (181, 380), (361, 500)]);
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Windows));
}

#[test]
fn config_and_markup_use_the_fallback_windows() {
    let text: String = (1..=250).map(|n| format!("key_{n} = {n}\r\n")).collect();
    for t in [ContentType::Config, ContentType::Markup] {
        let chunks = chunk(&Detection::given(t, None), &text, &ChunkOptions::default());
        assert_eq!(
            chunks.iter().map(|c| (c.start_line, c.end_line)).collect::<Vec<_>>(),
            vec![(1, 200), (181, 250)]
        );
        assert!(chunks[1].content.starts_with("key_181 = 181\r\n"));
    }
}

#[test]
fn empty_text_has_no_chunks_and_whole_covers_everything() {
    assert!(chunk(
        &Detection::given(ContentType::Prose, None),
        "",
        &ChunkOptions::default()
    )
    .is_empty());
    let whole = Chunk::whole("a\nb");
    assert_eq!((whole.start_line, whole.end_line, whole.total), (1, 2, 1));
    assert_eq!(whole.context.strategy, ChunkStrategy::Whole);
}

#[test]
fn chunking_is_needed_over_1500_lines_or_over_budget() {
    assert!(!needs_chunking(1500, 60_000, None));
    assert!(needs_chunking(1501, 60_000, None));
    assert!(needs_chunking(10, 900_000, Some(400_000)));
    assert!(!needs_chunking(10, 900, Some(400_000)));
}

#[test]
fn chunks_serialize_for_plans() {
    let text: String = (1..=300).map(|n| format!("line {n}\n")).collect();
    let chunks = chunk(
        &Detection::given(ContentType::Config, None),
        &text,
        &ChunkOptions::default(),
    );
    let json = serde_json::to_value(&chunks[1]).unwrap();
    assert_eq!(json["start_line"], 181);
    assert_eq!(json["context"]["strategy"], "windows");
    assert!(json["context"].get("schema").is_none());
}

#[test]
fn a_megabyte_line_is_cut_alone_and_the_window_around_it_fits() {
    let mut text: String = (1..=300)
        .map(|n| format!("2026-02-11 01:00:00 INFO line {n}\n"))
        .collect();
    let long = format!("2026-02-11 01:00:00 DEBUG payload {}\n", "x".repeat(1_000_000));
    // The long line becomes line 100.
    let at = LineIndex::new(&text).start_of(100);
    text.insert_str(at, &long);
    let opts = ChunkOptions {
        max_chunk_tokens: 8_000,
        ..ChunkOptions::default()
    };
    let chunks = chunk(&Detection::given(ContentType::Log, None), &text, &opts);
    assert_within_budget(&chunks, &opts);
    assert!(covers_all_lines(&chunks, 301));
    assert!(chunks.iter().all(|c| content_matches(c, &text)));
    assert_eq!(chunks[0].lines(), LineRange::new(1, 99));
    let pieces: Vec<&Chunk> = chunks.iter().filter(|c| c.partial_line.is_some()).collect();
    assert_eq!(pieces.len(), long.len().div_ceil(24_000));
    assert!(pieces.iter().all(|c| c.lines() == LineRange::new(100, 100)));
    let last = pieces.last().unwrap();
    let n = pieces.len();
    let partial = last.partial_line.expect("a piece of line 100");
    assert_eq!((partial.line, partial.part, partial.parts), (100, n, n));
    // The byte ranges of the pieces follow one another over the whole line.
    let mut at = 0;
    for p in pieces.iter().filter_map(|c| c.partial_line) {
        assert_eq!(p.start, at);
        at = p.end;
    }
    assert_eq!(at, long.len());
    let note = format!("part {n} of {n} of line 100, which is too long for one chunk");
    assert_eq!(last.context.note.as_deref(), Some(note.as_str()));
    let rebuilt: String = pieces.iter().map(|c| c.content.as_str()).collect();
    assert_eq!(rebuilt, long);
    // The window after it starts right after it, not overlapping it.
    let after = chunks.iter().find(|c| c.start_line > 100).unwrap();
    assert_eq!((after.start_line, after.context.overlap_before), (101, None));
}

#[test]
fn log_windows_say_which_lines_the_previous_window_already_held() {
    let text: String = (1..=500)
        .map(|n| format!("2026-02-11 01:00:00 INFO line {n}\n"))
        .collect();
    let chunks = chunk(
        &Detection::given(ContentType::Log, None),
        &text,
        &ChunkOptions::default(),
    );
    let overlaps: Vec<Option<LineRange>> = chunks.iter().map(|c| c.context.overlap_before).collect();
    assert_eq!(
        overlaps,
        vec![None, Some(LineRange::new(181, 200)), Some(LineRange::new(361, 380))]
    );
}

#[test]
fn a_small_budget_shortens_windows_and_their_overlap_in_proportion() {
    // 35-byte lines; 1000 tokens hold 85 of them.
    let text: String = (1..=500)
        .map(|n| format!("2026-02-11 01:00:00 INFO line {n:04}\n"))
        .collect();
    let opts = ChunkOptions {
        max_chunk_tokens: 1_000,
        ..ChunkOptions::default()
    };
    let chunks = chunk(&Detection::given(ContentType::Log, None), &text, &opts);
    assert_within_budget(&chunks, &opts);
    assert_eq!(chunks[0].lines(), LineRange::new(1, 85));
    // 85 × 20 / 200 = 8 lines of overlap.
    assert_eq!(chunks[1].context.overlap_before, Some(LineRange::new(78, 85)));
}

#[test]
fn original_lines_of_plain_and_whole_chunks() {
    let whole = Chunk::whole("a\nb\nc\n");
    let mapped: Vec<Option<usize>> = (1..=4).map(|k| whole.original_line(k)).collect();
    assert_eq!(mapped, vec![Some(1), Some(2), Some(3), None]);
    let text: String = (1..=450).map(|n| format!("k{n} = {n}\n")).collect();
    let chunks = chunk(
        &Detection::given(ContentType::Config, None),
        &text,
        &ChunkOptions::default(),
    );
    assert_eq!(chunks[1].original_line(1), Some(181));
    assert_eq!(chunks[1].original_line(200), Some(380));
    assert_eq!(chunks[1].original_line(201), None);
    assert_eq!(chunks[1].original_line(0), None);
}

// ---------------------------------------------------------------------------------------
// The budget property: every chunker, random texts, random budgets.

/// A line of the given flavour, sometimes very long.
fn flavoured_line(kind: ContentType) -> BoxedStrategy<String> {
    let long = "[a-z ,]{1,20}".prop_map(|s| s.repeat(120));
    let line: BoxedStrategy<String> = match kind {
        ContentType::SourceCode => prop_oneof![
            4 => r#"[ a-z(){}\[\]:;=,.#"'`/*@<>-]{0,40}"#,
            1 => Just(String::new()),
            2 => "(def|class|fn|pub fn|impl|function|export|func|import|use|#include|@dec|struct|interface) ?[a-z_]{1,8}[(){}:]{0,3}",
            2 => r"    (def|fn|public void|if|return|async) [a-z_]{1,8}\(\)[ {:;]?",
            1 => "[ ]{0,8}[}{)];?",
            1 => r#"[ ]{0,4}(/\*|\*/|//|#|"""|'''|`|r#")[ a-z]{0,10}"#,
        ]
        .boxed(),
        ContentType::StructuredData => prop_oneof![
            6 => "[a-z0-9]{0,8}(,[a-z0-9 ]{0,8}){2,5}",
            1 => "\"[a-z,\n ]{0,12}\",[a-z]{0,5},[0-9]{1,3}",
            1 => Just(String::new()),
        ]
        .boxed(),
        ContentType::Jsonl => prop_oneof![
            6 => "[a-z]{1,6}".prop_map(|v| format!("{{\"k\":\"{v}\",\"n\":[1,2]}}")),
            1 => Just(String::new()),
        ]
        .boxed(),
        ContentType::Prose => prop_oneof![
            5 => "[A-Za-z ,.]{0,60}",
            1 => "#{1,6} [A-Za-z ]{1,10}",
            1 => "(===|---|```|~~~)",
            1 => Just(String::new()),
        ]
        .boxed(),
        _ => prop_oneof![
            3 => "2026-02-11 0[0-9]:00:00 (INFO|ERROR) [a-z ]{0,30}",
            1 => r"  at [a-z.]{1,20}\(\)",
            1 => "[a-z =]{0,30}",
        ]
        .boxed(),
    };
    prop_oneof![30 => line, 1 => long].boxed()
}

fn typed_text() -> impl Strategy<Value = (Detection, String)> {
    let kinds = prop_oneof![
        Just(Detection::given(ContentType::SourceCode, Some(Language::Python))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::JavaScript))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::TypeScript))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Rust))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Go))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Java))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::C))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Cpp))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Ruby))),
        Just(Detection::given(ContentType::SourceCode, None)),
        Just(Detection::given(ContentType::StructuredData, None)),
        Just(Detection::given(ContentType::Jsonl, None)),
        Just(Detection::given(ContentType::Log, None)),
        Just(Detection::given(ContentType::Prose, None)),
        Just(Detection::given(ContentType::Config, None)),
        Just(Detection::given(ContentType::Markup, None)),
    ];
    (kinds, any::<bool>(), any::<bool>()).prop_flat_map(|(d, crlf, final_newline)| {
        prop::collection::vec(flavoured_line(d.content_type), 0..400).prop_map(move |lines| {
            let sep = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(sep);
            if final_newline && !text.is_empty() {
                text.push_str(sep);
            }
            (d, text)
        })
    })
}

/// Small targets, so a few hundred lines make many chunks.
fn small_options() -> impl Strategy<Value = ChunkOptions> {
    (64u64..3_000, 5usize..60, 1usize..40, 0usize..30).prop_map(|(tokens, max, window, overlap)| ChunkOptions {
        max_chunk_tokens: tokens,
        code_max_lines: max,
        max_import_lines: 10,
        fallback: WindowSize { lines: window, overlap },
        log: WindowSize { lines: window, overlap },
        prose: WindowSize { lines: max, overlap },
        csv_rows: (1, window),
        jsonl_lines: window,
        ..ChunkOptions::default()
    })
}

/// Whether the chunks' ranges go forward (windows may overlap, never go back or skip).
fn in_order(chunks: &[Chunk]) -> bool {
    chunks.windows(2).all(|w| {
        w[0].start_line <= w[1].start_line && w[0].end_line <= w[1].end_line && w[1].start_line <= w[0].end_line + 1
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_chunk_fits_the_budget_and_the_chunks_cover_every_line_in_order(
        (detection, text) in typed_text(),
        opts in small_options(),
    ) {
        let chunks = chunk(&detection, &text, &opts);
        let lines = LineIndex::new(&text).len();
        prop_assert_eq!(chunks.is_empty(), lines == 0);
        for c in &chunks {
            let tokens = crate::tokens::upper_bound(c.content.len() as u64);
            prop_assert!(tokens <= opts.max_chunk_tokens, "chunk {} {:?} has {} tokens", c.index, c.lines(), tokens);
            prop_assert!(content_matches(c, &text), "chunk {} {:?}", c.index, c.lines());
        }
        prop_assert!(covers_all_lines(&chunks, lines), "{:?}", chunks.iter().map(Chunk::lines).collect::<Vec<_>>());
        prop_assert!(in_order(&chunks), "{:?}", chunks.iter().map(Chunk::lines).collect::<Vec<_>>());
        // Long lines are cut into pieces that give back the whole line.
        let index = LineIndex::new(&text);
        let mut k = 0;
        while k < chunks.len() {
            if let Some(p) = chunks[k].partial_line {
                let pieces: String = chunks[k..k + p.parts].iter().map(|c| c.content.as_str()).collect();
                prop_assert_eq!(pieces.as_str(), index.slice(p.line, p.line));
                k += p.parts;
            } else {
                k += 1;
            }
        }
    }

    #[test]
    fn default_options_keep_the_line_targets((detection, text) in typed_text()) {
        let chunks = chunk(&detection, &text, &ChunkOptions::default());
        for c in &chunks {
            let limit = match detection.content_type {
                // One item (a function) may be longer, while it fits the budget.
                ContentType::SourceCode => usize::MAX,
                // A log window grows over at most 50 continuation lines.
                ContentType::Log => 250,
                ContentType::Prose => 250,
                // Rows may hold quoted newlines.
                ContentType::StructuredData => 3_000,
                ContentType::Jsonl => 750,
                _ => 200,
            };
            prop_assert!(c.lines().len() <= limit, "{:?}", c.lines());
        }
    }
}

/// Text that is no code of its language (found by the property above) once held
/// tree-sitter's error recovery for minutes: the parse is given up at its deadline, and
/// the file is cut by the lines' rules, every line kept.
#[test]
fn a_parse_that_takes_too_long_is_given_up_and_the_file_still_cut() {
    let text = include_str!("code_grammar/slow_parse.ts.txt");
    let opts = ChunkOptions {
        max_chunk_tokens: 2408,
        code_max_lines: 12,
        max_import_lines: 10,
        fallback: WindowSize { lines: 24, overlap: 27 },
        ..ChunkOptions::default()
    };
    let chunks = chunk(&crate::content::detect("a.ts", ""), text, &opts);
    assert!(!chunks.is_empty());
    assert!(in_order(&chunks));
    assert_eq!(chunks.last().map(|c| c.end_line), Some(LineIndex::new(text).len()));
}
