//! Claims with their citations (a [`CitedClaim`] is a line of prose with its evidence, not a
//! located [`crate::findings::Finding`]), and the `merge` contract of the seed: the same claim
//! from several results becomes one entry carrying every distinct citation tuple.

use super::parser::parse_inline;
use super::sources::dedupe;
use super::tuple::Citation;

/// One claim and the evidence cited for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedClaim {
    /// The claim without its citations (`**SQL injection in user lookup**`).
    pub text: String,
    pub citations: Vec<Citation>,
}

impl CitedClaim {
    /// A finding from one line of text: its inline citations are taken out, the rest
    /// (whitespace collapsed) is the claim.
    pub fn from_text(line: &str) -> CitedClaim {
        let found = parse_inline(line);
        let mut text = String::with_capacity(line.len());
        let mut at = 0;
        for l in &found {
            text.push_str(&line[at..l.span.start]);
            text.push(' ');
            at = l.span.end;
        }
        text.push_str(&line[at..]);
        CitedClaim {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            citations: dedupe(found.into_iter().map(|l| l.citation)),
        }
    }

    /// The key two findings are "the same" by: the claim lowercased, emphasis and code
    /// marks (`*`, `` ` ``) removed, whitespace collapsed, trailing punctuation dropped.
    pub fn normalized_text(&self) -> String {
        let plain: String = self.text.chars().filter(|c| !matches!(c, '*' | '`')).collect();
        let collapsed = plain.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        collapsed.trim_end_matches(['.', ',', ';', ':', '!', ' ']).to_string()
    }

    /// The claim followed by its citations inline, space-separated (the seed's merged form).
    pub fn render(&self) -> String {
        let mut out = self.text.clone();
        for c in &self.citations {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&c.inline());
        }
        out
    }
}

/// The findings of one markdown result: each list item (`- x`, `* x`, `+ x`, `1. x`)
/// is a finding, with or without citations.
pub fn claims_from_markdown(markdown: &str) -> Vec<CitedClaim> {
    markdown
        .lines()
        .filter_map(list_item)
        .map(CitedClaim::from_text)
        .collect()
}

/// Unions findings from several results: identical claims (by
/// [`CitedClaim::normalized_text`]) become one finding, in first-seen order, with the text of
/// its first occurrence and every distinct citation of all occurrences.
pub fn merge_claims(findings: impl IntoIterator<Item = CitedClaim>) -> Vec<CitedClaim> {
    let mut merged: Vec<CitedClaim> = Vec::new();
    let mut by_key: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for f in findings {
        match by_key.get(&f.normalized_text()) {
            Some(&i) => {
                let target = &mut merged[i];
                let all = target.citations.drain(..).chain(f.citations);
                target.citations = dedupe(all.collect::<Vec<_>>());
            }
            None => {
                by_key.insert(f.normalized_text(), merged.len());
                merged.push(f);
            }
        }
    }
    merged
}

fn list_item(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let rest = match l.strip_prefix(['-', '*', '+']) {
        Some(r) => r,
        None => {
            let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return None;
            }
            l[digits..].strip_prefix(['.', ')'])?
        }
    };
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let item = rest.trim();
    (!item.is_empty()).then_some(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citation::tuple::LineRange;

    const H1: &str = "a8f9c2d4e5f60718";
    const H2: &str = "c4d2e1a98f7b6c5a";

    #[test]
    fn a_finding_separates_claim_and_citations() {
        let f = CitedClaim::from_text(&format!(
            "**SQL injection** in lookup [src/db/user.ts@{H1}, L42-50] (high)"
        ));
        assert_eq!(f.text, "**SQL injection** in lookup (high)");
        assert_eq!(
            f.citations,
            vec![Citation::versioned("src/db/user.ts", H1, LineRange::new(42, 50))]
        );
    }

    #[test]
    fn merge_unions_identical_findings_and_attaches_every_distinct_citation() {
        let first = format!(
            "- **SQL injection in user lookup** [src/db/userQuery.ts@{H1}, L42-50]\n\
             - **Token expiry hardcoded** [src/auth/session.ts@{H1}, L101]\n\
             - General note without citation\n"
        );
        let second = format!(
            "* **SQL injection in user lookup.** [src/admin/userLookup.ts@{H2}, L88-94] [src/db/userQuery.ts@{H1}, L42-50]\n\
             1. **sql injection in user  lookup** [src/db/userQuery.ts@{H1}, L60-61]\n\
             - general note without citation\n"
        );
        let all = claims_from_markdown(&first)
            .into_iter()
            .chain(claims_from_markdown(&second));
        let merged = merge_claims(all);
        let rendered: Vec<String> = merged.iter().map(CitedClaim::render).collect();
        assert_eq!(
            rendered,
            vec![
                format!(
                    "**SQL injection in user lookup** [src/db/userQuery.ts@{H1}, L42-50] \
                     [src/admin/userLookup.ts@{H2}, L88-94] [src/db/userQuery.ts@{H1}, L60-61]"
                ),
                format!("**Token expiry hardcoded** [src/auth/session.ts@{H1}, L101]"),
                "General note without citation".to_string(),
            ]
        );
    }

    #[test]
    fn different_claims_stay_apart_even_with_the_same_citation() {
        let c = format!("[src/a.ts@{H1}, L1]");
        let merged = merge_claims(vec![
            CitedClaim::from_text(&format!("Uses MD5 {c}")),
            CitedClaim::from_text(&format!("No rate limit {c}")),
        ]);
        assert_eq!(merged.len(), 2);
    }
}
