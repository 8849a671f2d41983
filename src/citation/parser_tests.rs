//! The citation parser on tricky markdown.

use super::*;

const H: &str = "a8f9c2d4e5f60718";
const H2: &str = "b3d1e9c2f48a5b6c";

fn cites(text: &str) -> Vec<String> {
    parse_inline(text).into_iter().map(|l| l.citation.inline()).collect()
}

fn lines(a: u32, b: u32) -> Option<LineRange> {
    LineRange::new(a, b)
}

#[test]
fn the_four_inline_forms() {
    let text = format!(
        "- **Plaintext password** [src/auth/login.ts@{H}, L42-58]\n\
         - **Token expiry** [src/auth/session.ts@{H2}, L101]\n\
         - whole file [src/auth/logout.ts@{H}]\n\
         - **Hardcoded credential** [src/legacy/auth.py, L88]\n\
         - range [src/legacy/auth.py, L88-90]\n"
    );
    let found = parse_inline(&text);
    let got: Vec<&Citation> = found.iter().map(|l| &l.citation).collect();
    assert_eq!(
        got,
        vec![
            &Citation::versioned("src/auth/login.ts", H, lines(42, 58)),
            &Citation::versioned("src/auth/session.ts", H2, lines(101, 101)),
            &Citation::versioned("src/auth/logout.ts", H, None),
            &Citation::path_only("src/legacy/auth.py", lines(88, 88)),
            &Citation::path_only("src/legacy/auth.py", lines(88, 90)),
        ]
    );
    assert_eq!(found.iter().map(|l| l.line).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    let first = &found[0];
    assert_eq!(&text[first.span.clone()], format!("[src/auth/login.ts@{H}, L42-58]"));
}

#[test]
fn markdown_constructs_are_not_citations() {
    let text = format!(
        "See [the guide](docs/guide.md) and [ref link][docs] or [docs].\n\
         ![diagram](img/arch.png) [^1] [^note, L3]\n\
         - [x] done\n- [ ] todo\n\
         [docs]: https://example.com/docs\n\
         [src/a.ts, L3]: https://example.com\n\
         A [src/a.ts@{H}, L3](https://x) link whose text looks like a citation.\n\
         Prose [see above, L5] and [TODO, L1] and [chapter 3.2, L4] and [e.g. this, L2].\n\
         Escaped \\[src/a.ts@{H}, L3\\] and a bare path [src/a.ts].\n\
         Placeholders [<file-path>@<content-hash>, L<start>-<end>] [src/db/query.ts@<hash>, L42-58]\n\
         Email [me@example.com] and url [https://x.io/a.ts, L3].\n"
    );
    assert_eq!(cites(&text), Vec::<String>::new());
}

#[test]
fn line_range_is_never_part_of_the_path() {
    let found = parse_inline(&format!("[src/a, b.ts@{H}, L7] [dir/x, y.py, L2-3] [odd.ts@{H}, L9-2]"));
    let got: Vec<&Citation> = found.iter().map(|l| &l.citation).collect();
    assert_eq!(
        got,
        vec![
            &Citation::versioned("src/a, b.ts", H, lines(7, 7)),
            &Citation::path_only("dir/x, y.py", lines(2, 3)),
        ]
    );
    // `L9-2` is not a range, so `odd.ts@…, L9-2` is no citation at all.
    assert_eq!(found.len(), 2);
}

#[test]
fn paths_with_spaces_and_at_signs() {
    let text = format!(
        "[docs/My Notes/read me.md@{H}, L1-2] [node_modules/@types/node/fs.d.ts@{H2}] \
         [packages/@scope/pkg/index.ts, L5] [src/user@host.ts@{H}, L3]"
    );
    let found = parse_inline(&text);
    let got: Vec<&Citation> = found.iter().map(|l| &l.citation).collect();
    assert_eq!(
        got,
        vec![
            &Citation::versioned("docs/My Notes/read me.md", H, lines(1, 2)),
            &Citation::versioned("node_modules/@types/node/fs.d.ts", H2, None),
            &Citation::path_only("packages/@scope/pkg/index.ts", lines(5, 5)),
            &Citation::versioned("src/user@host.ts", H, lines(3, 3)),
        ]
    );
}

#[test]
fn nested_brackets_and_several_citations_on_one_line() {
    let text = format!(
        "Claims [see [src/a.ts@{H}, L1] and [src/b.ts@{H2}, L2-4]] plus [app/[id]/page.tsx@{H}, L3] \
         and adjacent [x.ts@{H}, L1][y.ts@{H2}, L2]."
    );
    assert_eq!(
        cites(&text),
        vec![
            format!("[src/a.ts@{H}, L1]"),
            format!("[src/b.ts@{H2}, L2-4]"),
            format!("[app/[id]/page.tsx@{H}, L3]"),
            format!("[x.ts@{H}, L1]"),
            format!("[y.ts@{H2}, L2]"),
        ]
    );
}

#[test]
fn code_spans_and_fences_are_literal() {
    let text = format!(
        "Real [src/a.ts@{H}, L1] but `[src/b.ts@{H}, L2]` and ``x ` [src/c.ts@{H}, L3] ``.\n\
         ```markdown\n- example [src/d.ts@{H}, L4]\n```\n\
         ~~~~\n[src/e.ts@{H}, L5]\n```\nstill fenced [src/f.ts@{H}, L6]\n~~~~\n\
         After [src/g.ts@{H2}, L7] and an unclosed `tick [src/h.ts@{H2}, L8].\n"
    );
    assert_eq!(
        cites(&text),
        vec![
            format!("[src/a.ts@{H}, L1]"),
            format!("[src/g.ts@{H2}, L7]"),
            format!("[src/h.ts@{H2}, L8]")
        ]
    );
}

#[test]
fn uppercase_or_short_hashes_are_not_versions() {
    // After the last `@` there is no valid hash: a hex one written wrongly is no citation
    // (verification finds it as malformed), anything else leaves a path-only one.
    let found = parse_inline(&format!(
        "[src/a.ts@{}, L3] [src/a.ts@abc123] [src/a.ts@nothex, L4]",
        H.to_uppercase()
    ));
    let got: Vec<&Citation> = found.iter().map(|l| &l.citation).collect();
    assert_eq!(got, vec![&Citation::path_only("src/a.ts@nothex", lines(4, 4))]);
}

#[test]
fn sources_footer_items_are_citations_too() {
    let text = format!(
        "# Summary\n\nProse [src/auth/login.ts@{H}, L42-58].\n\n## Sources\n\n\
         - src/auth/login.ts@{H} (L42-58)\n\
         - src/auth/sessionManager.ts@{H2} (L101)\n\
         - src/whole.ts@{H}\n\
         - src/legacy/auth.py (L88) [un-versioned]\n\
         - [src/inline.ts@{H}, L1]\n\
         - not a citation at all\n\n\
         ## Next\n\n- src/after.ts@{H} (L1)\n"
    );
    let found = parse_document(&text);
    let got: Vec<String> = found
        .iter()
        .map(|l| format!("{}:{}", l.line, l.citation.source_entry()))
        .collect();
    assert_eq!(
        got,
        vec![
            format!("3:src/auth/login.ts@{H} (L42-58)"),
            format!("7:src/auth/login.ts@{H} (L42-58)"),
            format!("8:src/auth/sessionManager.ts@{H2} (L101)"),
            format!("9:src/whole.ts@{H}"),
            "10:src/legacy/auth.py (L88) [un-versioned]".to_string(),
            format!("11:src/inline.ts@{H} (L1)"),
        ]
    );
}

#[test]
fn source_entries_parse_strictly() {
    assert_eq!(
        parse_source_entry(&format!("src/a.ts@{H} (L4-5)")),
        Some(Citation::versioned("src/a.ts", H, lines(4, 5)))
    );
    assert_eq!(
        parse_source_entry("src/a.ts (L4) [un-versioned]"),
        Some(Citation::path_only("src/a.ts", lines(4, 4)))
    );
    assert_eq!(parse_source_entry(&format!("src/a.ts@{H} [un-versioned]")), None);
    assert_eq!(parse_source_entry("src/a.ts (lines 4-5)"), None);
    assert_eq!(parse_source_entry("see the appendix"), None);
}

#[test]
fn citations_written_wrongly_are_found_as_malformed_for_verification_only() {
    let text = format!(
        "- [src/a.ts@{H}, L50-5] and [src/a.ts@{H}, L0]\n\
         - [src/a.ts@deadbeef, L3] and [src/a.ts@A8F9C2D4E5F60718]\n\
         - not citations: [me@cafe12] [see above, L0] [x] [chapter 3.2, L0-1]\n\
         - fine: [src/a.ts@{H}, L2]\n\n\
         ## Sources\n\n- src/b.ts@DEADBEEF (L2)\n- src/c.ts (L0) [un-versioned]\n"
    );
    // The parsers whose citations go into aggregates see only the well-formed one.
    assert_eq!(cites(&text), vec![format!("[src/a.ts@{H}, L2]")]);
    assert_eq!(parse_document(&text).len(), 1);
    let found = parse_for_verification(&text);
    let got: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|l| (&text[l.span.clone()], l.problem.as_deref()))
        .collect();
    let h_l50 = format!("[src/a.ts@{H}, L50-5]");
    let h_l0 = format!("[src/a.ts@{H}, L0]");
    let fine = format!("[src/a.ts@{H}, L2]");
    assert_eq!(
        got,
        vec![
            (
                h_l50.as_str(),
                Some("`L50-5` is not a line range: it ends before it starts")
            ),
            (h_l0.as_str(), Some("`L0` is not a line range: lines start at L1")),
            (
                "[src/a.ts@deadbeef, L3]",
                Some("`deadbeef` is not a content hash (16 lowercase hex characters)")
            ),
            (
                "[src/a.ts@A8F9C2D4E5F60718]",
                Some("`A8F9C2D4E5F60718` is not a content hash (16 lowercase hex characters)")
            ),
            (fine.as_str(), None),
            (
                "src/b.ts@DEADBEEF (L2)",
                Some("`DEADBEEF` is not a content hash (16 lowercase hex characters)")
            ),
            (
                "src/c.ts (L0) [un-versioned]",
                Some("`L0` is not a line range: lines start at L1")
            ),
        ]
    );
    assert_eq!(found[2].citation.lines, lines(3, 3));
}

#[test]
fn a_hash_slot_of_other_characters_and_ranges_that_are_no_ranges_are_malformed() {
    let text = format!(
        "[src/a.ts@zzzzzzzzzzzzzzzz, L1] [src/a.ts@{H}, L-3] [src/a.ts@{H}, Lx] [src/a.ts@{H}, 12] \
         [src/a.ts, 12-15] [src/a.ts@{H}, see L3] [src/a.ts@{H}, L1-99999999999999999999]\n\
         not citations: [see above, 12] [chapter 3, L-1]\n"
    );
    assert!(cites(&text).is_empty(), "{:?}", cites(&text));
    let found = parse_for_verification(&text);
    let got: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|l| (&text[l.span.clone()], l.problem.as_deref()))
        .collect();
    let see_l3 = format!("[src/a.ts@{H}, see L3]");
    let huge = format!("[src/a.ts@{H}, L1-99999999999999999999]");
    let (l3, lx, twelve) = (
        format!("[src/a.ts@{H}, L-3]"),
        format!("[src/a.ts@{H}, Lx]"),
        format!("[src/a.ts@{H}, 12]"),
    );
    assert_eq!(
        got,
        vec![
            (
                "[src/a.ts@zzzzzzzzzzzzzzzz, L1]",
                Some("`zzzzzzzzzzzzzzzz` is not a content hash (16 lowercase hex characters)")
            ),
            (l3.as_str(), Some("`L-3` is not a line range (L42 or L42-58)")),
            (lx.as_str(), Some("`Lx` is not a line range (L42 or L42-58)")),
            (twelve.as_str(), Some("`12` is not a line range (L42 or L42-58)")),
            ("[src/a.ts, 12-15]", Some("`12-15` is not a line range (L42 or L42-58)")),
            (
                see_l3.as_str(),
                Some("`see L3` after the hash is not a line range (`, L42` or `, L42-58`)")
            ),
            (
                huge.as_str(),
                Some("`L1-99999999999999999999` is not a line range (L42 or L42-58)")
            ),
        ]
    );
    assert_eq!(found[0].citation.lines, lines(1, 1));
    assert_eq!(found[1].citation.content_hash.as_deref(), Some(H));
}

#[test]
fn dashes_several_ranges_and_several_citations_in_one_bracket() {
    let text = format!(
        "[src/a.ts@{H}, L3\u{2013}5] [src/a.ts@{H}, L7\u{2014}L9] [src/a.ts@{H}, L3, L7-8] \
         [src/a.ts@{H}, L3-5; src/b.ts@{H2}, L8] [src/c.ts, L1; src/d.ts@{H}]\n"
    );
    assert_eq!(
        cites(&text),
        vec![
            format!("[src/a.ts@{H}, L3-5]"),
            format!("[src/a.ts@{H}, L7-9]"),
            format!("[src/a.ts@{H}, L3]"),
            format!("[src/a.ts@{H}, L7-8]"),
            format!("[src/a.ts@{H}, L3-5]"),
            format!("[src/b.ts@{H2}, L8]"),
            "[src/c.ts, L1]".to_string(),
            format!("[src/d.ts@{H}]"),
        ]
    );
    // A path may hold `;`: the split is taken only when every part is a citation, a piece
    // that is none joined to the next.
    assert_eq!(cites("[dir/a;b.ts, L2]"), vec!["[dir/a;b.ts, L2]".to_string()]);
    assert_eq!(
        cites(&format!("[dir/a;b.ts@{H}, L2; src/c.ts@{H2}, L4]")),
        vec![format!("[dir/a;b.ts@{H}, L2]"), format!("[src/c.ts@{H2}, L4]")]
    );
    // One bracket, one span: a claim's text loses the bracket once.
    let claim = crate::citation::CitedClaim::from_text(&format!("- **X** [src/a.ts@{H}, L3, L7] done"));
    assert_eq!(claim.text, "- **X** done");
    assert_eq!(claim.citations.len(), 2);
}

#[test]
fn brackets_written_almost_right_are_malformed_never_dropped_or_missing_files() {
    let text = format!(
        "[src/a.ts@{H}, L50\u{2013}5] [src/a.ts@{H} L0] [src/a.ts@{H} L3] [src/a.ts@{H}, lines 3-5] \
         [src/a.ts L3] [src/a.ts@{H}, L3, L0] [src/a.ts@{H}, L3-5, src/b.ts@{H2}, L8] \
         [src/a.ts@{H}, L3; see above]\n"
    );
    assert!(cites(&text).is_empty(), "{:?}", cites(&text));
    let found = parse_for_verification(&text);
    let got: Vec<(String, Option<&str>)> = found
        .iter()
        .map(|l| (l.citation.inline(), l.problem.as_deref()))
        .collect();
    let a = |lines: &str| format!("[src/a.ts@{H}{lines}]");
    assert_eq!(
        got,
        vec![
            (
                a(""),
                Some("`L50\u{2013}5` is not a line range: it ends before it starts")
            ),
            (
                a(""),
                Some("a comma must separate the hash from the line range: `a8f9c2d4e5f60718, L0`")
            ),
            (
                a(""),
                Some("a comma must separate the hash from the line range: `a8f9c2d4e5f60718, L3`")
            ),
            (a(""), Some("`lines 3-5` is not a line range (L42 or L42-58)")),
            (
                "[src/a.ts]".to_string(),
                Some("a comma must separate the path from the line range: `src/a.ts, L3`")
            ),
            (a(", L3"), None),
            (a(""), Some("`L0` is not a line range: lines start at L1")),
            (
                format!("[src/a.ts@{H}, L3-5, src/b.ts@{H2}, L8]"),
                Some("several citations run together (after `@a8f9c2d4e5f60718`): separate them with `;`")
            ),
            (
                a(""),
                Some("`L3; see above` after the hash is not a line range (`, L42` or `, L42-58`)")
            ),
        ]
    );
}
