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

/// Whether a chunk's content is its own lines, after any prepended lines (and the one
/// marker line the code chunker writes between them).
pub(crate) fn content_matches(chunk: &Chunk, text: &str) -> bool {
    let index = LineIndex::new(text);
    let own = index.slice(chunk.start_line, chunk.end_line);
    match chunk.context.prepended {
        None => chunk.content == own,
        Some(p) => {
            let head = index.slice(p.start, p.end);
            chunk.content.starts_with(head) && chunk.content.ends_with(own) && {
                let between = &chunk.content[head.len()..chunk.content.len() - own.len()];
                between.is_empty() || (between.ends_with('\n') && between.matches('\n').count() == 1)
            }
        }
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

/// Random lines: code-ish tokens, blank lines, indentation, `\r\n` or `\n`, with or
/// without a final newline.
fn random_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => "[ a-z(){}:;=,.#]{0,30}",
        1 => Just(String::new()),
        1 => "(def|class|fn|pub fn|impl|function|export|func|import|use|#include|@dec|## ) ?[a-z_]{1,8}[(){}:]{0,3}",
        1 => "    (def|fn|public void|if|return) [a-z_]{1,8}\\(\\)[ {:]?",
        1 => "2026-02-11 0[0-9]:00:00 (INFO|ERROR) [a-z ]{0,20}",
    ];
    (prop::collection::vec(line, 0..900), any::<bool>(), any::<bool>()).prop_map(|(lines, crlf, final_newline)| {
        let sep = if crlf { "\r\n" } else { "\n" };
        let mut text = lines.join(sep);
        if final_newline && !text.is_empty() {
            text.push_str(sep);
        }
        text
    })
}

fn line_based_detection() -> impl Strategy<Value = Detection> {
    prop_oneof![
        Just(Detection::given(ContentType::SourceCode, Some(Language::Python))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Rust))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::Java))),
        Just(Detection::given(ContentType::SourceCode, Some(Language::TypeScript))),
        Just(Detection::given(ContentType::SourceCode, None)),
        Just(Detection::given(ContentType::Log, None)),
        Just(Detection::given(ContentType::Prose, None)),
        Just(Detection::given(ContentType::Config, None)),
        Just(Detection::given(ContentType::Markup, None)),
    ]
}

/// Small targets, so a few hundred lines make many chunks.
fn small_options() -> impl Strategy<Value = ChunkOptions> {
    (5usize..60, 1usize..40, 0usize..30).prop_map(|(max, window, overlap)| ChunkOptions {
        code_max_lines: max,
        max_import_lines: 10,
        fallback: WindowSize { lines: window, overlap },
        log: WindowSize { lines: window, overlap },
        prose: WindowSize { lines: max, overlap },
        ..ChunkOptions::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn line_chunks_cover_every_line_and_hold_exactly_their_lines(
        text in random_text(),
        detection in line_based_detection(),
        opts in small_options(),
    ) {
        let chunks = chunk(&detection, &text, &opts);
        let lines = LineIndex::new(&text).len();
        prop_assert_eq!(chunks.is_empty(), lines == 0);
        prop_assert!(covers_all_lines(&chunks, lines), "{:?}", chunks.iter().map(Chunk::lines).collect::<Vec<_>>());
        for c in &chunks {
            prop_assert!(content_matches(c, &text), "chunk {} {:?}", c.index, c.lines());
        }
    }

    #[test]
    fn default_options_never_exceed_their_targets_without_reason(text in random_text()) {
        let d = Detection::given(ContentType::SourceCode, Some(Language::Python));
        for c in chunk(&d, &text, &ChunkOptions::default()) {
            prop_assert!(c.lines().len() <= 300, "{:?}", c.lines());
        }
    }
}
