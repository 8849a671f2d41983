//! JSON Lines chunking: whole lines split evenly (each chunk is valid JSONL when the file
//! is) and within the budget, with the field list of the file's first object given to
//! every chunk's analyst. A line longer than the budget is cut alone, inside the line.

use super::chunk::{ChunkContext, ChunkOptions, ChunkStrategy, Draft, WindowSize};
use super::json_schema::SchemaSummary;
use super::line_index::LineIndex;
use super::windows::{all_lines, budget_windows, pieces_to_drafts};

pub(crate) fn chunk_jsonl(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let lines = index.len();
    let max_bytes = opts.max_bytes();
    let schema = first_object_schema(index);
    let text_bytes = index.text().len();
    let parts = lines
        .div_ceil(opts.jsonl_lines.max(1))
        .max(text_bytes.div_ceil(max_bytes))
        .clamp(1, lines.max(1));
    if parts == 1 && text_bytes <= max_bytes {
        let mut context = ChunkContext::new(ChunkStrategy::Whole);
        context.schema = schema;
        return vec![Draft::verbatim(index, all_lines(index), context)];
    }
    // Even parts by count, closed early when the budget says so; a line longer than the
    // budget is cut alone.
    let size = WindowSize {
        lines: lines.div_ceil(parts),
        overlap: 0,
    };
    let pieces = budget_windows(index, all_lines(index), size, 0, |_| false, max_bytes);
    let mut drafts = pieces_to_drafts(index, &pieces, None, max_bytes);
    for d in &mut drafts {
        if d.context.strategy == ChunkStrategy::Windows {
            d.context.strategy = ChunkStrategy::Lines;
        }
        d.context.schema.clone_from(&schema);
    }
    drafts
}

/// Whether every non-blank line is a JSON value, and there are at least two.
pub(crate) fn is_jsonl(index: &LineIndex<'_>) -> bool {
    let mut values = 0;
    for n in 1..=index.len() {
        let line = index.line(n).trim();
        if line.is_empty() {
            continue;
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(line).is_err() {
            return false;
        }
        values += 1;
    }
    values >= 2
}

/// The schema of the first line that is a JSON object (among the first 50 lines).
fn first_object_schema(index: &LineIndex<'_>) -> Option<SchemaSummary> {
    (1..=index.len().min(50)).find_map(|n| {
        let line = index.line(n).trim();
        if !line.starts_with('{') {
            return None;
        }
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        Some(SchemaSummary::of_values(&[value]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::chunk::{chunk, ChunkOptions};
    use crate::content::detect::Detection;
    use crate::content::ContentType;

    #[test]
    fn lines_are_split_evenly_with_the_first_objects_fields() {
        let text: String = (0..2000)
            .map(|i| format!("{{\"id\":{i},\"event\":\"click\",\"meta\":{{\"src\":\"web\"}}}}\n"))
            .collect();
        let chunks = chunk(
            &Detection::given(ContentType::Jsonl, None),
            &text,
            &ChunkOptions::default(),
        );
        assert_eq!(chunks.len(), 3);
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 667));
        assert_eq!((chunks[2].start_line, chunks[2].end_line), (1335, 2000));
        for c in &chunks {
            assert_eq!(c.context.strategy, ChunkStrategy::Lines);
            assert_eq!(
                c.context.schema.as_ref().unwrap().to_string(),
                "event (string), id (number), meta (object), meta.src (string)"
            );
            for line in c.content.lines() {
                serde_json::from_str::<serde_json::Value>(line).unwrap();
            }
        }
    }

    #[test]
    fn byte_budget_splits_wide_lines() {
        let wide = "x".repeat(1000);
        let text: String = (0..300)
            .map(|i| format!("{{\"id\":{i},\"blob\":\"{wide}\"}}\n"))
            .collect();
        let opts = ChunkOptions {
            max_chunk_tokens: 33_334,
            ..ChunkOptions::default()
        };
        let chunks = chunk(&Detection::given(ContentType::Jsonl, None), &text, &opts);
        assert_eq!(chunks.len(), 4);
        assert!(chunks
            .iter()
            .all(|c| crate::tokens::upper_bound(c.content.len() as u64) <= 33_334));
    }

    #[test]
    fn jsonl_needs_two_values_and_no_junk() {
        assert!(is_jsonl(&LineIndex::new("{\"a\":1}\n\n{\"a\":2}\n")));
        assert!(!is_jsonl(&LineIndex::new("{\"a\":1}\n")));
        assert!(!is_jsonl(&LineIndex::new("{\"a\":1}\n{oops\n")));
    }
}
