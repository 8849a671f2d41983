//! `concat`: every result under its file's heading, in order (the seed's format).

use std::fmt::Write;

use super::{results_as_json, Aggregate, Processed, ResultItem};
use crate::escape;
use crate::unit_failure::UnitFailure;

/// The seed's concat format; failed files are listed at the end, never dropped silently.
/// "Files processed" counts files; the units they were read in are said beside it when
/// they are not one a file.
pub fn concat(
    pattern: &str,
    timestamp: &str,
    processed: Processed,
    results: &[ResultItem],
    failed: &[UnitFailure],
) -> Aggregate {
    let Processed { files, units } = processed;
    let units = if units == files {
        String::new()
    } else {
        format!(" (in {units} unit{})", if units == 1 { "" } else { "s" })
    };
    let mut md = format!(
        "# Batch Processing Results\n\nPattern: {}\nFiles processed: {files}{units}\nTimestamp: {timestamp}\n\n---\n\n",
        escape::name(pattern),
    );
    for r in results {
        let _ = write!(
            md,
            "## File: {}\n\n{}\n\n---\n\n",
            escape::name(&r.path),
            r.text.trim_end()
        );
    }
    if !failed.is_empty() {
        md.push_str("## Failed files\n\n");
        for f in failed {
            let _ = writeln!(md, "- {}: {}", escape::name(&f.unit), f.reason);
        }
        md.push('\n');
    }
    Aggregate {
        markdown: md,
        json: results_as_json(results),
        sources: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_format() {
        let results = vec![
            ResultItem {
                path: "a.ts".into(),
                text: "one\n".into(),
                json: None,
            },
            ResultItem {
                path: "b.ts".into(),
                text: "two".into(),
                json: None,
            },
        ];
        let processed = Processed { files: 2, units: 2 };
        let failed = [UnitFailure {
            unit: "c.ts".into(),
            kind: crate::unit_failure::FailureKind::Local,
            reason: "boom".into(),
        }];
        let agg = concat("*.ts", "T", processed, &results, &failed);
        assert_eq!(
            agg.markdown,
            "# Batch Processing Results\n\nPattern: *.ts\nFiles processed: 2\nTimestamp: T\n\n---\n\n\
             ## File: a.ts\n\none\n\n---\n\n## File: b.ts\n\ntwo\n\n---\n\n## Failed files\n\n- c.ts: boom\n\n"
        );
        assert!(agg.json.is_none());
        let chunks = Processed { files: 1, units: 17 };
        assert!(concat("app.log", "T", chunks, &results, &[])
            .markdown
            .contains("\nFiles processed: 1 (in 17 units)\n"));
    }
}
