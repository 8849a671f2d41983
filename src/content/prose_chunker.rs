//! Prose chunking: cut at level-1 and level-2 headings (`#`/`##`, setext `===`/`---`
//! underlines, AsciiDoc `=`/`==`), whole sections packed into chunks of up to the prose
//! window size; text without headings, and sections longer than a window, fall back to
//! 250-line windows with 25 lines of overlap. Headings inside fenced code do not count.

use super::chunk::{all_lines, window_drafts, ChunkContext, ChunkOptions, ChunkStrategy, Draft};
use super::line_index::LineIndex;
use super::line_range::{pack, segments_between, windows, LineRange, Split};

pub(crate) fn chunk_prose(index: &LineIndex<'_>, opts: &ChunkOptions) -> Vec<Draft> {
    let whole = all_lines(index);
    let size = opts.prose;
    if whole.len() <= size.lines {
        return vec![Draft::verbatim(index, whole, ChunkContext::new(ChunkStrategy::Whole))];
    }
    let headings = heading_lines(index);
    if headings.is_empty() {
        return window_drafts(index, whole, size, None);
    }
    let segments = segments_between(whole, &headings);
    let mut drafts = Vec::new();
    let mut oversize: Vec<LineRange> = Vec::new();
    let ranges = pack(&segments, size.lines.max(1), |section| {
        let parts = windows(section, size.lines, size.overlap, 0, |_| false);
        oversize.extend(parts.iter().copied());
        Split::Windows(parts)
    });
    for lines in ranges {
        let strategy = if oversize.contains(&lines) {
            ChunkStrategy::Windows
        } else {
            ChunkStrategy::Headings
        };
        drafts.push(Draft::verbatim(index, lines, ChunkContext::new(strategy)));
    }
    drafts
}

/// The first lines of level-1 and level-2 headings, outside fenced code blocks.
fn heading_lines(index: &LineIndex<'_>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for n in 1..=index.len() {
        let line = index.line(n);
        let t = line.trim_start();
        if let Some(open) = fence {
            if t.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        let atx = ["# ", "## ", "= ", "== "].iter().any(|p| line.starts_with(p)) || line == "#" || line == "##";
        if atx {
            out.push(n);
        } else if n > 1
            && is_underline(line)
            && !index.line(n - 1).trim().is_empty()
            && !is_underline(index.line(n - 1))
        {
            // Setext: the heading is the text line above its underline.
            if out.last() != Some(&(n - 1)) {
                out.push(n - 1);
            }
        }
    }
    out
}

/// `===` or `---` (at least three, nothing else): a setext or reStructuredText underline.
fn is_underline(line: &str) -> bool {
    let t = line.trim_end();
    t.len() >= 3 && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::chunk::{chunk, ChunkOptions};
    use crate::content::detect::Detection;
    use crate::content::ContentType;

    fn section(title: &str, lines: usize) -> String {
        let mut s = format!("## {title}\n\n");
        for i in 0..lines.saturating_sub(2) {
            s.push_str(&format!("Paragraph text {i} about {title}.\n"));
        }
        s
    }

    #[test]
    fn markdown_is_cut_at_headings_and_sections_stay_whole() {
        let mut doc = String::from("# Guide\n\nIntro line.\n");
        doc.push_str(&section("Install", 120));
        doc.push_str("```sh\n# not a heading\n## nor this\n```\n");
        doc.push_str(&section("Usage", 200));
        doc.push_str(&section("FAQ", 100));
        let chunks = chunk(
            &Detection::given(ContentType::Prose, None),
            &doc,
            &ChunkOptions::default(),
        );
        let starts: Vec<&str> = chunks.iter().map(|c| c.content.lines().next().unwrap()).collect();
        assert_eq!(starts, vec!["# Guide", "## Usage", "## FAQ"]);
        assert!(chunks.iter().all(|c| c.context.strategy == ChunkStrategy::Headings));
        assert!(chunks[0].content.contains("## nor this"));
    }

    #[test]
    fn a_long_section_falls_back_to_overlapping_windows() {
        let doc = format!("{}{}", section("Short", 10), section("Long", 600));
        let chunks = chunk(
            &Detection::given(ContentType::Prose, None),
            &doc,
            &ChunkOptions::default(),
        );
        assert_eq!(chunks[0].lines(), LineRange::new(1, 10));
        assert_eq!(chunks[1].lines(), LineRange::new(11, 260));
        assert_eq!(chunks[2].start_line, 236);
        assert_eq!(chunks[1].context.strategy, ChunkStrategy::Windows);
    }

    #[test]
    fn setext_and_plain_text() {
        let idx = LineIndex::new("Title\n=====\n\ntext\n\nPart\n----\nmore\n");
        assert_eq!(heading_lines(&idx), vec![1, 6]);
        let plain: String = (0..600).map(|i| format!("line {i}\n")).collect();
        let chunks = chunk(
            &Detection::given(ContentType::Prose, None),
            &plain,
            &ChunkOptions::default(),
        );
        let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(ranges, vec![(1, 250), (226, 475), (451, 600)]);
    }
}
