//! CSV/TSV chunker tests: quoted newlines, header repetition, even splits, and a property
//! test that every chunk parses to the header plus a run of the original rows.

use super::*;
use crate::content::chunk::tests::{content_matches, covers_all_lines};
use crate::content::chunk::{chunk, Chunk, ChunkOptions};
use crate::content::content_type::ContentType;
use crate::content::detect::Detection;
use crate::content::line_range::LineRange;
use proptest::prelude::*;

/// An RFC 4180 reader written independently of the chunker's scanner, for checking.
fn parse(text: &str, delimiter: char) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            '\n' => {
                record.push(std::mem::take(&mut field).trim_end_matches('\r').to_owned());
                records.push(std::mem::take(&mut record));
                at_field_start = true;
            }
            c if c == delimiter => {
                record.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            _ => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

fn csv_chunks(text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    let chunks = chunk(&Detection::given(ContentType::StructuredData, None), text, opts);
    assert!(covers_all_lines(&chunks, crate::content::count_lines(text)));
    chunks
}

#[test]
fn quoted_fields_with_newlines_are_never_split_and_the_header_leads_every_chunk() {
    let mut text = String::from("id,name,note,created_at\n");
    for i in 0..2400 {
        if i % 7 == 0 {
            text.push_str(&format!(
                "{i},\"Smith, J\",\"line one\nline \"\"two\"\"\nline three\",2026-01-01\n"
            ));
        } else {
            text.push_str(&format!("{i},Ann,plain,2026-01-02\n"));
        }
    }
    // 4 columns: 8000 / 4 = 2000 rows, clamped to 1000: three chunks of 800 rows.
    let chunks = csv_chunks(&text, &ChunkOptions::default());
    assert_eq!(chunks.len(), 3);
    let original = parse(&text, ',');
    let mut rows = Vec::new();
    for (k, c) in chunks.iter().enumerate() {
        assert!(c.content.starts_with("id,name,note,created_at\n"));
        assert!(content_matches(c, &text));
        assert_eq!(c.context.prepended.is_some(), k > 0);
        let parsed = parse(&c.content, ',');
        assert_eq!(parsed[0], original[0]);
        assert_eq!(parsed.len() - 1, 800);
        rows.extend(parsed.into_iter().skip(1));
    }
    assert_eq!(rows, original[1..]);
}

#[test]
fn wide_tables_get_fewer_rows_and_tsv_is_recognized() {
    let header: Vec<String> = (0..20).map(|c| format!("col{c}")).collect();
    let mut text = header.join("\t") + "\n";
    for r in 0..1200 {
        let row: Vec<String> = (0..20).map(|c| format!("{r}.{c}")).collect();
        text.push_str(&(row.join("\t") + "\n"));
    }
    // 20 columns: 8000 / 20 = 400 rows, raised to the 500 minimum: ceil(1200 / 500) = 3.
    let chunks = csv_chunks(&text, &ChunkOptions::default());
    assert_eq!(chunks.len(), 3);
    for c in &chunks {
        let parsed = parse(&c.content, '\t');
        assert!(parsed.iter().all(|r| r.len() == 20));
        assert_eq!(parsed[0][19], "col19");
    }
}

#[test]
fn the_token_budget_splits_long_rows_and_the_header_maps_back() {
    let blob = "x".repeat(500);
    let text: String = std::iter::once("id,blob\n".to_owned())
        .chain((0..600).map(|i| format!("{i},{blob}\n")))
        .collect();
    // 301,000 bytes; the default 32,000 tokens hold 96,000 bytes: 4 chunks.
    let opts = ChunkOptions::default();
    let chunks = csv_chunks(&text, &opts);
    assert_eq!(chunks.len(), 4);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    let c = &chunks[2];
    assert_eq!(c.context.prepended, Some(LineRange::new(1, 1)));
    assert_eq!(c.original_line(1), Some(1));
    assert_eq!(c.original_line(2), Some(c.start_line));
    assert_eq!(c.original_line(3), Some(c.start_line + 1));
    // A small budget: more chunks, each within it, the header in each.
    let opts = ChunkOptions {
        max_chunk_tokens: 2_000,
        ..ChunkOptions::default()
    };
    let chunks = csv_chunks(&text, &opts);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    assert!(chunks.len() >= 50);
    assert!(chunks
        .iter()
        .all(|c| c.content.starts_with("id,blob\n") && content_matches(c, &text)));
}

#[test]
fn a_record_longer_than_the_budget_is_cut_alone() {
    let huge = "y".repeat(30_000);
    let text = format!("id,name,blob\n1,a,b\n2,\"multi\nline\",{huge}\n3,c,d\n");
    let opts = ChunkOptions {
        max_chunk_tokens: 4_000,
        ..ChunkOptions::default()
    };
    let chunks = csv_chunks(&text, &opts);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    let ranges: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    // Header and row 1; the record on lines 3–4 (line 4 cut in 3 pieces); row 5 with the header.
    assert_eq!(ranges, vec![(1, 2), (3, 3), (4, 4), (4, 4), (4, 4), (5, 5)]);
    assert!(chunks[2].partial_line.is_some());
    assert!(chunks[5].content.starts_with("id,name,blob\n3,c,d"));
}

#[test]
fn header_only_and_crlf_files() {
    let chunks = csv_chunks("a,b\r\n", &ChunkOptions::default());
    assert_eq!((chunks.len(), chunks[0].content.as_str()), (1, "a,b\r\n"));
    let text: String = std::iter::once("a,b\r\n".to_owned())
        .chain((0..1500).map(|i| format!("{i},\"q\r\nr\"\r\n")))
        .collect();
    let chunks = csv_chunks(&text, &ChunkOptions::default());
    assert_eq!(chunks.len(), 2);
    assert!(chunks[1].content.starts_with("a,b\r\n"));
    assert_eq!(parse(&chunks[1].content, ',')[1][1], "q\r\nr");
}

#[test]
fn an_unterminated_quote_runs_to_the_end_rather_than_be_cut() {
    let mut text = String::from("id,note\n");
    for i in 0..1200 {
        text.push_str(&format!("{i},ok\n"));
    }
    text.push_str("1200,\"never closed\n");
    for i in 0..900 {
        text.push_str(&format!("{i},inside\n"));
    }
    let chunks = csv_chunks(&text, &ChunkOptions::default());
    let last = chunks.last().unwrap();
    assert!(last.content.contains("1200,\"never closed") && last.content.ends_with("899,inside\n"));
}

#[test]
fn field_counts_for_sniffing_skip_blank_records() {
    assert_eq!(record_field_counts("a,b\n\n\"x\ny\",2\n", b','), vec![2, 2]);
}

/// A field: plain, or quoted with commas, quotes and newlines inside.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9 ]{0,8}",
        "[a-z,\"\n ]{0,12}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_chunk_parses_to_the_header_and_a_run_of_rows(
        columns in 1usize..6,
        rows in prop::collection::vec(prop::collection::vec(field(), 6), 0..300),
        rows_per_chunk in 1usize..40,
        final_newline in any::<bool>(),
    ) {
        let header: Vec<String> = (0..columns).map(|c| format!("h{c}")).collect();
        let mut text = header.join(",");
        for row in &rows {
            text.push('\n');
            text.push_str(&row[..columns].join(","));
        }
        if final_newline {
            text.push('\n');
        }
        let opts = ChunkOptions { csv_rows: (rows_per_chunk, rows_per_chunk), ..ChunkOptions::default() };
        let chunks = chunk(&Detection::given(ContentType::StructuredData, None), &text, &opts);
        prop_assert!(covers_all_lines(&chunks, crate::content::count_lines(&text)));
        let original = parse(&text, ',');
        let mut seen = Vec::new();
        for c in &chunks {
            prop_assert!(content_matches(c, &text));
            let parsed = parse(&c.content, ',');
            prop_assert_eq!(&parsed[0], &original[0]);
            seen.extend(parsed.into_iter().skip(1));
        }
        prop_assert_eq!(&seen[..], &original[1..]);
    }
}
