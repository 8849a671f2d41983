//! The seed's CITATION REQUIREMENT block, filled in for one file, for `--require-citations`:
//! placed after the user's sub-prompt and before the file content.

/// The seed's instruction to the summarizer when `--require-citations` is active (Phase 4,
/// `summarize`): appended to the summarization prompt, before the results.
pub const SUMMARIZER_RULE: &str = "You MUST NOT drop or omit citations during summarization. The synthesized
prose may rephrase findings, but every claim that was citation-backed in
the input MUST remain citation-backed in the output. If you cannot retain
a specific citation, omit the underlying claim rather than the citation.
";

/// The instruction block for the file `path` with its 16-hex `content_hash`, or for a
/// path-only file (`None`: not index-tracked, no hash to cite).
pub fn instruction_block(path: &str, content_hash: Option<&str>) -> String {
    block_with_example(path, content_hash, (42, 58))
}

/// [`instruction_block`] whose example cites `lines` (a part of a file: lines it holds).
fn block_with_example(path: &str, content_hash: Option<&str>, (start, end): (u64, u64)) -> String {
    let (form, example, hash_rule) = match content_hash {
        Some(hash) => (
            format!("[{path}@{hash}, L<start>-<end>]"),
            format!("[{path}@{hash}, L{start}-{end}]"),
            format!(
                "The file's content_hash is {hash}. Use it verbatim. For a single line write\n\
                 L<line>; for a claim about the whole file omit the lines: [{path}@{hash}]."
            ),
        ),
        None => (
            format!("[{path}, L<start>-<end>]"),
            format!("[{path}, L{start}-{end}]"),
            "This file is path-only: it is not index-tracked and has no content_hash, so\n\
             emit the form above without a hash. For a single line write L<line>."
                .to_string(),
        ),
    };
    format!(
        "CITATION REQUIREMENT (--require-citations is active):\n\
         \n\
         Every finding you emit MUST carry a citation tuple linking it back to specific\n\
         content in the source file. Use the inline bracket form for markdown output:\n\
         \n  {form}\n\
         \n\
         Example:\n  - **SQL injection risk** {example}\n\
         \n\
         {hash_rule}\n\
         \n\
         Findings without citations may be rejected or flagged downstream.\n"
    )
}

/// The block for one input of a unit: its hash16 and, for a span, the lines it covers
/// (citations name lines of the whole file).
pub fn input_block(input: &crate::unit::UnitInput) -> String {
    let hash = &input.content_hash[..input.content_hash.len().min(16)];
    // A part's example cites lines it holds, never lines the range sentence below rules out.
    let example = input
        .span
        .map_or((42, 58), |span| (span.start, span.end.min(span.start + 16)));
    let mut block = block_with_example(&input.display, Some(hash), example);
    if let Some(span) = input.span {
        block.push_str(&format!(
            "\nThis part of the file is lines L{}-{}: cite line numbers of the whole file, within that range.\n",
            span.start, span.end
        ));
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citation::parser::parse_inline;

    #[test]
    fn versioned_block_names_the_file_and_hash_and_its_example_parses() {
        let block = instruction_block("src/db/query.ts", Some("a8f9c2d4e5f60718"));
        assert!(block.starts_with("CITATION REQUIREMENT (--require-citations is active):\n\n"));
        assert!(block.contains("\n  [src/db/query.ts@a8f9c2d4e5f60718, L<start>-<end>]\n"));
        assert!(block.contains("content_hash is a8f9c2d4e5f60718. Use it verbatim."));
        assert!(block.ends_with("Findings without citations may be rejected or flagged downstream.\n"));
        // The example and whole-file forms are real citations; the template form is not.
        let found: Vec<String> = parse_inline(&block).iter().map(|l| l.citation.inline()).collect();
        assert_eq!(
            found,
            vec![
                "[src/db/query.ts@a8f9c2d4e5f60718, L42-58]",
                "[src/db/query.ts@a8f9c2d4e5f60718]"
            ]
        );
    }

    #[test]
    fn path_only_block_has_no_hash() {
        let block = instruction_block("src/legacy/auth.py", None);
        assert!(block.contains("\n  [src/legacy/auth.py, L<start>-<end>]\n"));
        assert!(block.contains("This file is path-only"));
        assert!(!block.contains('@'));
    }

    #[test]
    fn an_input_block_has_the_hash16_and_a_span_s_lines() {
        let mut input = crate::unit::UnitInput {
            path: std::path::Path::new("src/a.py").into(),
            display: "src/a.py".into(),
            content_hash: "0123456789abcdef".repeat(4).into(),
            span: None,
            source: Default::default(),
            bytes: 0,
        };
        let whole = input_block(&input);
        assert!(whole.contains("[src/a.py@0123456789abcdef, L<start>-<end>]"), "{whole}");
        assert!(!whole.contains("This part of the file"));
        input.span = Some(crate::unit::LineSpan { start: 201, end: 400 });
        let span = input_block(&input);
        assert!(span.contains("This part of the file is lines L201-400"), "{span}");
        // Its example cites lines the part holds.
        assert!(span.contains("[src/a.py@0123456789abcdef, L201-217]"), "{span}");
        assert!(!span.contains("L42-58"), "{span}");
    }
}
