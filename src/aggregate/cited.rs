//! Aggregation under `--require-citations` (issue 10; the seed's "Citation Format →
//! Aggregation behavior"):
//! - `concat` passes results through verbatim (no change to its markdown);
//! - `merge` unions identical findings and attaches every distinct citation tuple
//!   ([`merge_with_citations`]);
//! - `summarize` appends a `## Sources` footer listing every input citation
//!   ([`with_sources`]), so nothing the summarizer drops is lost.
//!
//! `aggregate.json`, when written, carries the citations as objects
//! `{artifact_id, content_hash, lines}` under `citations` (and under each merged finding).

use std::fmt::Write;

use serde_json::{json, Map, Value};

use super::{merge, Aggregate, ResultItem};
use crate::citation::{claims_from_markdown, dedupe, merge_claims, parse_inline, sources_footer, Citation};
use crate::escape;

/// Every citation in the results, once each by identity, in first-seen order.
pub fn result_citations(results: &[ResultItem]) -> Vec<Citation> {
    dedupe(results.iter().flat_map(|r| parse_inline(&r.text)).map(|l| l.citation))
}

/// Adds the results' citations to an aggregate's JSON (`citations`, unless the JSON already
/// has that key or is not an object).
pub fn add_citations_to_json(aggregate: &mut Aggregate, results: &[ResultItem]) {
    if let Some(Value::Object(map)) = &mut aggregate.json {
        if !map.contains_key("citations") {
            map.insert("citations".into(), json!(result_citations(results)));
        }
    }
}

/// A summary followed by the seed's `## Sources` footer of every input citation.
pub fn with_sources(summary: &str, results: &[ResultItem]) -> String {
    let citations = result_citations(results);
    format!("{}\n\n{}", summary.trim_end(), sources_footer(&citations))
}

/// `merge` with citations: markdown findings (list items) from every result are unioned —
/// the same claim from several results becomes one finding carrying every distinct
/// citation — in first-seen order. JSON results merge as without the flag (their
/// citations are listed in `aggregate.json`); a result with neither is kept verbatim.
pub fn merge_with_citations(results: &[ResultItem]) -> Aggregate {
    if results.iter().any(|r| r.json.is_some()) {
        let mut aggregate = merge(results);
        add_citations_to_json(&mut aggregate, results);
        return aggregate;
    }
    let mut findings = Vec::new();
    let mut unstructured = Vec::new();
    for r in results {
        let found = claims_from_markdown(&r.text);
        if found.is_empty() {
            unstructured.push(r);
        }
        findings.extend(found);
    }
    let total = findings.len();
    let merged = merge_claims(findings);
    let mut md = String::from(
        "# Merged Results\n\nEvery finding the answers gave, identical ones merged, with every citation:\n\n",
    );
    for f in &merged {
        let _ = writeln!(md, "- {}", f.render());
    }
    let _ = writeln!(
        md,
        "\n(Identical findings merged: {total} total, {} unique)",
        merged.len()
    );
    if !unstructured.is_empty() {
        md.push_str("\n## Answers kept whole\n\nThese answers had no list items, so each is shown as written, under its file.\n\n");
        for r in unstructured {
            let _ = write!(md, "### File: {}\n\n{}\n\n", escape::name(&r.path), r.text.trim_end());
        }
    }
    let findings: Vec<Value> = merged
        .iter()
        .map(|f| json!({ "text": f.text, "citations": f.citations }))
        .collect();
    let mut doc = Map::new();
    doc.insert("findings".into(), Value::Array(findings));
    doc.insert("citations".into(), json!(result_citations(results)));
    Aggregate {
        markdown: md,
        json: Some(Value::Object(doc)),
        sources: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H1: &str = "a8f9c2d4e5f60718";
    const H2: &str = "c4d2e1a98f7b6c5a";

    fn item(path: &str, text: &str) -> ResultItem {
        ResultItem {
            path: path.into(),
            text: text.into(),
            json: crate::answer::json::json_values(text)
                .into_iter()
                .find(|v| v.is_object() || v.is_array()),
        }
    }

    #[test]
    fn merge_unions_findings_and_their_citations() {
        let agg = merge_with_citations(&[
            item(
                "a.ts",
                &format!("- **Shared state** [a.ts@{H1}, L1-2]\n- Only in a [a.ts@{H1}, L3]\n"),
            ),
            item(
                "b.ts",
                &format!("- **shared state.** [b.ts@{H2}, L4] [a.ts@{H1}, L1-2]\n"),
            ),
            item("c.ts", "no findings here"),
        ]);
        assert!(agg.markdown.contains(&format!(
            "- **Shared state** [a.ts@{H1}, L1-2] [b.ts@{H2}, L4]\n- Only in a [a.ts@{H1}, L3]\n"
        )));
        assert!(agg.markdown.contains("3 total, 2 unique"));
        assert!(agg.markdown.contains("### File: c.ts\n\nno findings here"));
        let json = agg.json.unwrap();
        assert_eq!(
            json["findings"][0]["citations"],
            json!([
                {"artifact_id": "a.ts", "content_hash": H1, "lines": "L1-2"},
                {"artifact_id": "b.ts", "content_hash": H2, "lines": "L4"}
            ])
        );
        assert_eq!(json["citations"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn json_results_keep_the_json_merge_and_list_citations() {
        let agg = merge_with_citations(&[
            item("a.ts", &format!(r#"{{"issues": ["x [a.ts@{H1}, L1]"]}}"#)),
            item("b.ts", r#"{"issues": ["y"]}"#),
        ]);
        let json = agg.json.unwrap();
        assert_eq!(json["issues"].as_array().unwrap().len(), 2);
        assert_eq!(
            json["citations"],
            json!([{"artifact_id": "a.ts", "content_hash": H1, "lines": "L1"}])
        );
    }

    #[test]
    fn sources_footer_follows_the_summary() {
        let text = with_sources(
            "The summary.\n",
            &[item("a.ts", &format!("x [a.ts@{H1}, L2] y [legacy.py, L8]"))],
        );
        assert_eq!(
            text,
            format!("The summary.\n\n## Sources\n\n- a.ts@{H1} (L2)\n- legacy.py (L8) [un-versioned]\n")
        );
    }
}
