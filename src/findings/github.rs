//! GitHub Actions output: findings as workflow-command annotations
//! (`::error file=…,line=…::message`), and the completion report as the step summary.
//!
//! Pure functions return the text; the caller decides where it goes (annotations are read
//! by the runner from the step's output, stdout or stderr). Only [`append_step_summary`]
//! touches the file system.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::{ArtifactBase, Finding, Level, LevelCounts, DEFAULT_RULE};

/// GitHub shows at most this many annotations of one level; the rest would be dropped
/// silently, so we stop there and say how many were left out.
pub const MAX_ANNOTATIONS_PER_LEVEL: usize = 50;

/// The step summary lists at most this many findings (GitHub caps a summary at 1 MiB; the
/// full list is in the SARIF file and the run directory).
pub const MAX_SUMMARY_ROWS: usize = 200;

/// The summary file could not be appended to (the `fs_err` message names it).
#[derive(Debug, thiserror::Error)]
#[error("cannot append the step summary: {0}; check GITHUB_STEP_SUMMARY")]
pub struct StepSummaryError(#[source] pub std::io::Error);

/// Escapes a command's message (GitHub's rules for data): `%`, CR, LF.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`): the data rules plus `:` and `,`.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The workflow command for one level.
fn command(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Note => "notice",
    }
}

/// One annotation line (no newline): `::error file=web/a.ts,line=4,endLine=9,title=rlm%3A
/// sql-injection::message`. A finding without a region annotates the whole file.
pub fn annotation(finding: &Finding, base: &ArtifactBase) -> String {
    let mut props = format!("file={}", escape_property(&base.annotation_path(&finding.path)));
    if let Some(region) = finding.region {
        let _ = write!(props, ",line={}", region.start_line);
        if let Some(end) = region.end_line {
            let _ = write!(props, ",endLine={end}");
        }
    }
    let title = match finding.rule_id() {
        DEFAULT_RULE => "rlm".to_string(),
        rule => format!("rlm: {rule}"),
    };
    let _ = write!(props, ",title={}", escape_property(&title));
    format!(
        "::{} {props}::{}",
        command(finding.level),
        escape_data(&finding.message)
    )
}

/// Annotation lines for `findings`: the first [`MAX_ANNOTATIONS_PER_LEVEL`] of each level in
/// the order given, then, per level that had more, one plain line (not a command, so it
/// takes no annotation slot) saying how many were left out. Every line ends with `\n`.
pub fn annotations(findings: &[Finding], base: &ArtifactBase) -> String {
    let mut out = String::new();
    let mut shown = LevelCounts::default();
    let total = LevelCounts::of(findings);
    for finding in findings {
        let n = match finding.level {
            Level::Error => &mut shown.error,
            Level::Warning => &mut shown.warning,
            Level::Note => &mut shown.note,
        };
        if *n < MAX_ANNOTATIONS_PER_LEVEL {
            *n += 1;
            out.push_str(&annotation(finding, base));
            out.push('\n');
        }
    }
    for level in Level::ALL {
        let left_out = total.get(level) - shown.get(level);
        if left_out > 0 {
            let _ = writeln!(
                out,
                "rlm: {left_out} more {level} finding{} not shown as annotations (GitHub shows at most \
                 {MAX_ANNOTATIONS_PER_LEVEL} per level); all are in the SARIF file and the run directory",
                if left_out == 1 { " is" } else { "s are" },
            );
        }
    }
    out
}

/// The markdown for `$GITHUB_STEP_SUMMARY`: the completion report as given, then a findings
/// section (counts per level and a table of the first [`MAX_SUMMARY_ROWS`]) when there are any.
pub fn summary_markdown(report_markdown: &str, findings: &[Finding], base: &ArtifactBase) -> String {
    let mut md = report_markdown.trim_end().to_string();
    md.push_str("\n\n");
    if findings.is_empty() {
        return md;
    }
    let counts = LevelCounts::of(findings);
    let _ = writeln!(
        md,
        "## Findings\n\n{} error, {} warning, {} note\n\n| level | location | type | message |\n| --- | --- | --- | --- |",
        counts.error, counts.warning, counts.note
    );
    for f in findings.iter().take(MAX_SUMMARY_ROWS) {
        let mut location = base.annotation_path(&f.path);
        if let Some(r) = f.region {
            let _ = write!(location, ":{}", r.start_line);
            if let Some(end) = r.end_line {
                let _ = write!(location, "-{end}");
            }
        }
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} |",
            f.level,
            location.replace('`', "'"),
            table_cell(f.rule_id()),
            table_cell(&f.message)
        );
    }
    if findings.len() > MAX_SUMMARY_ROWS {
        let _ = writeln!(
            md,
            "\n{} more findings are in the SARIF file and the run directory.",
            findings.len() - MAX_SUMMARY_ROWS
        );
    }
    md.push('\n');
    md
}

/// Text made safe for one markdown table cell: one line, no column breaks.
fn table_cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Appends `markdown` to the step summary file at `path` (created if missing, never
/// truncated: earlier steps' summaries stay), after a blank line.
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<(), StepSummaryError> {
    let mut file = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(StepSummaryError)?;
    let mut text = String::with_capacity(markdown.len() + 2);
    text.push('\n');
    text.push_str(markdown);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    file.write_all(text.as_bytes()).map_err(StepSummaryError)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Region;

    fn finding(level: Level, line: Option<(u64, Option<u64>)>, message: &str, rule: Option<&str>) -> Finding {
        Finding {
            path: "src/a,b:c.ts".into(),
            region: line.and_then(|(s, e)| Region::new(s, e)),
            level,
            message: message.into(),
            rule: rule.map(str::to_string),
            scope: None,
            evidence: None,
        }
    }

    #[test]
    fn escaping_follows_githubs_rules() {
        assert_eq!(escape_data("50% done\r\nnext: a,b"), "50%25 done%0D%0Anext: a,b");
        assert_eq!(escape_property("50% a:b,c\n"), "50%25 a%3Ab%2Cc%0A");
    }

    #[test]
    fn one_annotation_per_level_with_escaped_properties() {
        let base = ArtifactBase::with_prefix("web");
        let e = finding(
            Level::Error,
            Some((4, Some(9))),
            "SQL: built\nfrom input, 100%",
            Some("sql,inj"),
        );
        assert_eq!(
            annotation(&e, &base),
            "::error file=web/src/a%2Cb%3Ac.ts,line=4,endLine=9,title=rlm%3A sql%2Cinj::SQL: built%0Afrom input, 100%25"
        );
        let w = finding(Level::Warning, Some((7, None)), "w", None);
        assert_eq!(
            annotation(&w, &base),
            "::warning file=web/src/a%2Cb%3Ac.ts,line=7,title=rlm::w"
        );
        let n = finding(Level::Note, None, "n", None);
        assert_eq!(annotation(&n, &base), "::notice file=web/src/a%2Cb%3Ac.ts,title=rlm::n");
    }

    #[test]
    fn at_most_fifty_per_level_and_the_rest_counted() {
        let mut findings: Vec<Finding> = (1..=53)
            .map(|i| finding(Level::Warning, Some((i, None)), "w", None))
            .collect();
        findings.push(finding(Level::Error, Some((1, None)), "e", None));
        findings.extend((1..=51).map(|i| finding(Level::Note, Some((i, None)), "n", None)));
        let text = annotations(&findings, &ArtifactBase::at_root());
        let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(count("::warning "), 50);
        assert_eq!(count("::error "), 1);
        assert_eq!(count("::notice "), 50);
        assert!(text.contains("::warning file=src/a%2Cb%3Ac.ts,line=50,"));
        assert!(
            !text.contains(",line=51,title=rlm::w"),
            "the first 50 are kept, in order"
        );
        let plain: Vec<&str> = text.lines().filter(|l| !l.starts_with("::")).collect();
        assert_eq!(plain.len(), 2, "{plain:?}");
        assert!(
            plain[0].starts_with("rlm: 3 more warning findings are not shown"),
            "{}",
            plain[0]
        );
        assert!(
            plain[1].starts_with("rlm: 1 more note finding is not shown"),
            "{}",
            plain[1]
        );
        assert!(annotations(&[], &ArtifactBase::at_root()).is_empty());
    }

    #[test]
    fn the_summary_holds_the_report_and_a_findings_table() {
        let findings = [
            finding(Level::Error, Some((4, Some(9))), "two\nlines | pipe", Some("sqli")),
            finding(Level::Note, None, "n", None),
        ];
        let md = summary_markdown(
            "# RLM Batch Completion Report\n\n**Status**: SUCCESS\n",
            &findings,
            &ArtifactBase::at_root(),
        );
        assert!(
            md.starts_with(
                "# RLM Batch Completion Report\n\n**Status**: SUCCESS\n\n## Findings\n\n1 error, 0 warning, 1 note\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("| error | `src/a,b:c.ts:4-9` | sqli | two lines \\| pipe |\n"),
            "{md}"
        );
        assert!(md.contains("| note | `src/a,b:c.ts` | rlm/finding | n |\n"), "{md}");
        assert_eq!(summary_markdown("# R\n", &[], &ArtifactBase::at_root()), "# R\n\n");
    }

    #[test]
    fn the_summary_table_is_capped() {
        let findings: Vec<Finding> = (1..=205)
            .map(|i| finding(Level::Note, Some((i, None)), "n", None))
            .collect();
        let md = summary_markdown("# R", &findings, &ArtifactBase::at_root());
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| note |")).count(),
            MAX_SUMMARY_ROWS
        );
        assert!(md.contains("5 more findings are in the SARIF file"));
    }

    #[test]
    fn the_step_summary_is_appended_never_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step_summary.md");
        fs_err::write(&path, "earlier step").unwrap();
        append_step_summary(&path, "# one").unwrap();
        append_step_summary(&path, "# two\n").unwrap();
        assert_eq!(fs_err::read_to_string(&path).unwrap(), "earlier step\n# one\n\n# two\n");
        let fresh = dir.path().join("new.md");
        append_step_summary(&fresh, "# x").unwrap();
        assert_eq!(fs_err::read_to_string(&fresh).unwrap(), "\n# x\n");
        let err = append_step_summary(&dir.path().join("missing/dir/s.md"), "# x").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot append the step summary: failed to open file `"),
            "{err}"
        );
        assert!(err.to_string().ends_with("; check GITHUB_STEP_SUMMARY"), "{err}");
    }
}
