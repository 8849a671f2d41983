//! Findings of a chunk, placed at lines of the original file.
//!
//! The analyst is told which lines of the file its chunk holds and asked for those line
//! numbers. A cited line inside the chunk (or inside the lines prepended to it, such as the
//! import block) is kept. A line outside it is evidently counted from the top of the
//! content the analyst read: it is mapped through the content — prepended lines, a marker
//! line, then the chunk's own lines — to the original line; a line that lands nowhere in
//! the chunk loses its region (the finding stays, for its file) rather than point at the
//! wrong code.

use crate::content::Chunk;
use crate::findings::{Finding, Region};

/// Places `findings` about `path` (those of other files are left alone).
pub fn place(findings: &mut [Finding], path: &str, chunk: &Chunk) {
    for finding in findings.iter_mut().filter(|f| f.path == path) {
        finding.region = finding.region.and_then(|r| placed(r, chunk));
    }
}

fn placed(region: Region, chunk: &Chunk) -> Option<Region> {
    let start = region.start_line;
    let shown = |line: u64| {
        let line = line as usize;
        chunk.lines().contains(line)
            || chunk.context.prepended.is_some_and(|p| p.contains(line))
            || chunk.context.header.iter().any(|h| h.contains(line))
    };
    if shown(start) {
        return Some(region);
    }
    // Counted from the top of the content: mapped through its layout (prepended lines,
    // marker lines, the chunk's own lines).
    let original = chunk.original_line(usize::try_from(start).ok()?)? as u64;
    let end = region
        .end_line
        .and_then(|e| chunk.original_line(usize::try_from(e).ok()?))
        .map(|e| e as u64);
    Region::new(original, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{ChunkContext, ChunkStrategy, ContentSpan, LineRange};
    use crate::findings::Level;

    fn chunk(start: usize, end: usize, prepended: Option<(usize, usize)>, lead_extra: usize) -> Chunk {
        let mut content = String::new();
        if let Some((a, b)) = prepended {
            for n in a..=b {
                content.push_str(&format!("import {n}\n"));
            }
        }
        for _ in 0..lead_extra {
            content.push_str("# ... lines left out ...\n");
        }
        for n in start..=end {
            content.push_str(&format!("line {n}\n"));
        }
        let mut context = ChunkContext::new(ChunkStrategy::Boundaries);
        context.prepended = prepended.map(|(a, b)| LineRange::new(a, b));
        let mut layout = Vec::new();
        if let Some((a, b)) = prepended {
            layout.push(ContentSpan {
                lines: b - a + 1,
                original: Some(a),
            });
        }
        if lead_extra > 0 {
            layout.push(ContentSpan {
                lines: lead_extra,
                original: None,
            });
        }
        layout.push(ContentSpan {
            lines: end - start + 1,
            original: Some(start),
        });
        Chunk {
            index: 1,
            total: 3,
            start_line: start,
            end_line: end,
            content,
            context,
            partial_line: None,
            layout,
        }
    }

    fn at(line: u64, end: Option<u64>) -> Finding {
        Finding {
            path: "a.py".into(),
            region: Region::new(line, end),
            level: Level::Warning,
            message: "m".into(),
            rule: None,
            scope: None,
            evidence: None,
        }
    }

    fn place_one(f: Finding, c: &Chunk) -> Option<Region> {
        let mut all = [f];
        place(&mut all, "a.py", c);
        all[0].region
    }

    #[test]
    fn lines_inside_the_chunk_or_its_imports_are_kept() {
        let c = chunk(301, 600, Some((1, 12)), 1);
        assert_eq!(place_one(at(350, Some(360)), &c), Region::new(350, Some(360)));
        assert_eq!(place_one(at(5, None), &c), Region::new(5, None), "an import line");
    }

    #[test]
    fn content_relative_lines_count_the_prepended_lines() {
        // 12 import lines and a marker line precede line 301: content line 14 is line 301.
        let c = chunk(301, 600, Some((1, 12)), 1);
        assert_eq!(place_one(at(14, Some(20)), &c), Region::new(301, Some(307)));
        // The marker line is no line of the file.
        assert_eq!(place_one(at(13, None), &c), None);
        // Without anything prepended, line 5 of the content is line 305.
        let c = chunk(301, 600, None, 0);
        assert_eq!(place_one(at(5, None), &c), Region::new(305, None));
        // A line nowhere in the chunk loses its region.
        assert_eq!(place_one(at(900, None), &c), None);
    }

    #[test]
    fn other_files_are_left_alone() {
        let c = chunk(301, 600, None, 0);
        let mut f = at(5, None);
        f.path = "b.py".into();
        let mut all = [f];
        place(&mut all, "a.py", &c);
        assert_eq!(all[0].region, Region::new(5, None));
    }
}
