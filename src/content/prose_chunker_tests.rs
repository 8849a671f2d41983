//! Prose chunker tests: headings of every level, fences, setext, budgets.

use super::*;
use crate::content::chunk::tests::{assert_within_budget, content_matches, covers_all_lines};
use crate::content::chunk::{chunk, Chunk, ChunkOptions};
use crate::content::detect::Detection;
use crate::content::ContentType;

fn prose(text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    let chunks = chunk(&Detection::given(ContentType::Prose, None), text, opts);
    assert!(covers_all_lines(&chunks, LineIndex::new(text).len()));
    assert!(chunks.iter().all(|c| content_matches(c, text)));
    assert_within_budget(&chunks, opts);
    chunks
}

fn section(mark: &str, title: &str, lines: usize) -> String {
    let mut s = format!("{mark} {title}\n\n");
    for i in 0..lines.saturating_sub(2) {
        s.push_str(&format!("Paragraph text {i} about {title}.\n"));
    }
    s
}

fn first_lines(chunks: &[Chunk]) -> Vec<&str> {
    chunks.iter().map(|c| c.content.lines().next().unwrap()).collect()
}

#[test]
fn markdown_is_cut_at_headings_and_sections_stay_whole() {
    let mut doc = String::from("# Guide\n\nIntro line.\n");
    doc.push_str(&section("##", "Install", 120));
    doc.push_str("```sh\n# not a heading\n## nor this\n```\n");
    doc.push_str(&section("##", "Usage", 200));
    doc.push_str(&section("##", "FAQ", 100));
    let chunks = prose(&doc, &ChunkOptions::default());
    assert_eq!(first_lines(&chunks), vec!["# Guide", "## Usage", "## FAQ"]);
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Headings));
    assert!(chunks[0].content.contains("## nor this"));
}

#[test]
fn deeper_headings_cut_a_section_too_long_for_one_chunk() {
    // A release notes file: one `#` title, `##` versions, `###` parts of a long version.
    let mut doc = String::from("# Releases\n\n");
    doc.push_str(&section("##", "2.0", 10));
    doc.push_str(&section("###", "Added", 150));
    doc.push_str(&section("###", "Fixed", 150));
    doc.push_str(&section("####", "Details", 60));
    doc.push_str(&section("##", "1.0", 60));
    let chunks = prose(&doc, &ChunkOptions::default());
    assert_eq!(first_lines(&chunks), vec!["# Releases", "### Fixed", "## 1.0"]);
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Headings));
    // `#### Details` stays with its `### Fixed`.
    assert!(chunks[1].content.contains("#### Details"));
}

#[test]
fn a_sections_heading_stays_with_its_first_subsection() {
    // `## Part N` directly followed by `### Section N.0`: the part's heading opens the chunk
    // of its first section, never left at the end of the chunk before it.
    let mut doc = String::new();
    for part in 1..=3 {
        doc.push_str(&format!("## Part {part}\n\n"));
        for s in 0..6 {
            doc.push_str(&section("###", &format!("Section {part}.{s}"), 70));
        }
    }
    let chunks = prose(&doc, &ChunkOptions::default());
    for c in &chunks {
        let last = c.content.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
        assert!(!last.starts_with('#'), "a chunk ends with a heading: {last}");
    }
    for part in 2..=3 {
        let opening = chunks
            .iter()
            .find(|c| c.content.contains(&format!("## Part {part}\n")))
            .unwrap();
        assert!(
            opening
                .content
                .starts_with(&format!("## Part {part}\n\n### Section {part}.0")),
            "{}",
            &opening.content[..60]
        );
    }
}

#[test]
fn a_setext_sections_heading_stays_with_its_first_subsection_too() {
    let mut doc = String::new();
    for part in 1..=3 {
        doc.push_str(&format!("Part {part}\n======\n\n"));
        for s in 0..6 {
            doc.push_str(&format!("Section {part}.{s}\n----------\n\n"));
            for i in 0..68 {
                doc.push_str(&format!("Paragraph text {i} about section {part}.{s}.\n"));
            }
        }
    }
    let chunks = prose(&doc, &ChunkOptions::default());
    assert!(chunks.len() > 3, "{}", chunks.len());
    for c in &chunks {
        let last = c.content.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
        assert!(
            !is_underline(last) && !last.starts_with("Part ") && !last.starts_with("Section "),
            "a chunk ends with a heading: {last}"
        );
    }
}

#[test]
fn a_hash_comment_in_a_fence_is_not_a_heading() {
    let mut doc = section("##", "Setup", 20);
    doc.push_str("~~~bash\n");
    for i in 0..100 {
        doc.push_str(&format!("# step {i}\necho {i}\n"));
    }
    doc.push_str("~~~\n");
    doc.push_str(&section("##", "Next", 100));
    let chunks = prose(&doc, &ChunkOptions::default());
    assert_eq!(first_lines(&chunks), vec!["## Setup", "## Next"]);
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Headings));
}

#[test]
fn a_long_section_without_subheadings_falls_back_to_overlapping_windows() {
    let doc = format!("{}{}", section("##", "Short", 10), section("##", "Long", 600));
    let chunks = prose(&doc, &ChunkOptions::default());
    assert_eq!(chunks[0].lines(), LineRange::new(1, 10));
    assert_eq!(chunks[1].lines(), LineRange::new(11, 260));
    assert_eq!(chunks[2].start_line, 236);
    assert_eq!(chunks[2].context.overlap_before, Some(LineRange::new(236, 260)));
    assert_eq!(chunks[1].context.strategy, ChunkStrategy::Windows);
}

#[test]
fn setext_atx_levels_and_plain_text() {
    let idx = LineIndex::new("Title\n=====\n\ntext\n\nPart\n----\nmore\n### Three\n###### Six\n####### seven\n");
    let found: Vec<(usize, u8)> = headings(&idx).iter().map(|h| (h.line, h.level)).collect();
    assert_eq!(found, vec![(1, 1), (6, 2), (9, 3), (10, 6)]);
    // A fence's closing line is not setext text; front matter is not a heading.
    let idx = LineIndex::new("---\ntitle: x\n---\n```\ncode\n```\n---\n# Real\n");
    let found: Vec<usize> = headings(&idx).iter().map(|h| h.line).collect();
    assert_eq!(found, vec![8]);
    let plain: String = (0..600).map(|i| format!("line {i}\n")).collect();
    let chunks = prose(&plain, &ChunkOptions::default());
    let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, vec![(1, 250), (226, 475), (451, 600)]);
}

#[test]
fn a_small_budget_packs_sections_by_bytes() {
    let mut doc = String::new();
    for i in 0..20 {
        doc.push_str(&section("##", &format!("Part {i}"), 12));
    }
    // Each section is about 370 bytes; 400 tokens hold three.
    let opts = ChunkOptions {
        max_chunk_tokens: 400,
        ..ChunkOptions::default()
    };
    let chunks = prose(&doc, &opts);
    assert!(chunks.len() >= 6, "{} chunks", chunks.len());
    assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Headings));
}
