//! Citation sets: deduplication by identity, and the `## Sources` footer that
//! `summarize` appends (every input citation, so nothing the summarizer drops is lost).

use std::collections::BTreeSet;

use super::tuple::Citation;

/// The citations once each, by identity `(artifact_id, content_hash, lines)`, in
/// first-seen order.
pub fn dedupe(citations: impl IntoIterator<Item = Citation>) -> Vec<Citation> {
    let mut seen = BTreeSet::new();
    citations.into_iter().filter(|c| seen.insert(c.clone())).collect()
}

/// The seed's footer: `## Sources`, then one `- path@hash (L42-58)` /
/// `- path (L88) [un-versioned]` line per distinct citation, sorted by path, hash, lines.
pub fn sources_footer<'a>(citations: impl IntoIterator<Item = &'a Citation>) -> String {
    let distinct: BTreeSet<&Citation> = citations.into_iter().collect();
    let mut out = String::from("## Sources\n\n");
    if distinct.is_empty() {
        out.push_str("No citations in the results.\n");
    }
    for c in distinct {
        out.push_str("- ");
        out.push_str(&c.source_entry());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citation::parser::parse_document;
    use crate::citation::tuple::LineRange;

    const H: &str = "a8f9c2d4e5f60718";

    #[test]
    fn dedupe_keeps_distinct_ranges_and_first_order() {
        let a = Citation::versioned("src/a.ts", H, LineRange::new(1, 2));
        let a_other_lines = Citation::versioned("src/a.ts", H, LineRange::new(3, 4));
        let a_path_only = Citation::path_only("src/a.ts", LineRange::new(1, 2));
        let got = dedupe(vec![
            a.clone(),
            a_other_lines.clone(),
            a.clone(),
            a_path_only.clone(),
            a_other_lines.clone(),
        ]);
        assert_eq!(got, vec![a, a_other_lines, a_path_only]);
    }

    #[test]
    fn footer_matches_the_seed_and_parses_back() {
        let cites = [
            Citation::versioned(
                "src/auth/sessionManager.ts",
                "b3d1e9c2f48a5b6c",
                LineRange::new(101, 101),
            ),
            Citation::path_only("src/legacy/auth.py", LineRange::new(88, 88)),
            Citation::versioned("src/auth/login.ts", H, LineRange::new(42, 58)),
            Citation::versioned("src/auth/login.ts", H, LineRange::new(42, 58)),
        ];
        let footer = sources_footer(&cites);
        assert_eq!(
            footer,
            "## Sources\n\n\
             - src/auth/login.ts@a8f9c2d4e5f60718 (L42-58)\n\
             - src/auth/sessionManager.ts@b3d1e9c2f48a5b6c (L101)\n\
             - src/legacy/auth.py (L88) [un-versioned]\n"
        );
        let back: Vec<Citation> = parse_document(&footer).into_iter().map(|l| l.citation).collect();
        assert_eq!(back, vec![cites[2].clone(), cites[0].clone(), cites[1].clone()]);
        assert_eq!(sources_footer(&[]), "## Sources\n\nNo citations in the results.\n");
    }
}
