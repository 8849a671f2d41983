//! `rlm verify-citations FILE [--strict] [--json] [--root DIR]`: checks every citation of
//! an aggregate and reports one line per distinct citation plus a summary (or one JSON
//! document). Exit 0 when every citation passes, 1 when one is stale, broken or malformed
//! (or, under `--strict`, un-versioned, or there is none), 2 when the aggregate cannot be
//! read.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::document;
use super::error::CitationError;
use super::verify::{check_all, Check, Status, Summary};
use crate::error::ExitStatus;

/// Plain options of `rlm verify-citations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOptions {
    pub file: PathBuf,
    pub root: PathBuf,
    pub strict: bool,
    pub json: bool,
}

/// The result of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    pub file: PathBuf,
    pub root: PathBuf,
    pub strict: bool,
    pub passed: bool,
    pub summary: Summary,
    pub citations: Vec<Check>,
}

impl Verification {
    /// 0 when it passed, 1 when some citation failed.
    pub fn exit_status(&self) -> ExitStatus {
        if self.passed {
            ExitStatus::Success
        } else {
            ExitStatus::Partial
        }
    }
}

/// Parses, verifies and reports; the exit status says whether every citation passed.
pub fn run(opts: &VerifyOptions, out: &mut dyn Write) -> Result<ExitStatus, CitationError> {
    Ok(verify_file(opts, out)?.exit_status())
}

/// Verifies the citations of `opts.file` and writes the report to `out`.
pub fn verify_file(opts: &VerifyOptions, out: &mut dyn Write) -> Result<Verification, CitationError> {
    if !opts.root.is_dir() {
        return Err(CitationError::Root(opts.root.clone()));
    }
    let found = document::load(&opts.file)?;
    let citations = check_all(found, &opts.root);
    let summary = Summary::of(&citations);
    let verification = Verification {
        file: opts.file.clone(),
        root: opts.root.clone(),
        strict: opts.strict,
        passed: summary.passed(opts.strict),
        summary,
        citations,
    };
    if opts.json {
        serde_json::to_writer_pretty(&mut *out, &verification).map_err(|e| CitationError::Output(e.into()))?;
        writeln!(out).map_err(CitationError::Output)?;
    } else {
        write_human(&verification, out).map_err(CitationError::Output)?;
    }
    Ok(verification)
}

/// `FILE:LINE: status: [citation]: detail` per citation, then the summary line.
fn write_human(v: &Verification, out: &mut dyn Write) -> std::io::Result<()> {
    let file = v.file.display();
    for c in &v.citations {
        let location = match c.occurrences.first() {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        };
        let label = match (c.status, v.strict) {
            (Status::Unversioned, false) => "warning: un-versioned",
            (Status::Unversioned, true) => "error: un-versioned",
            (status, _) => status.label(),
        };
        let detail = c.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        let shown = c.written.clone().unwrap_or_else(|| c.citation.inline());
        writeln!(out, "{location}: {label}: {shown}{detail}")?;
    }
    let s = &v.summary;
    if s.total == 0 {
        return if v.strict {
            writeln!(
                out,
                "no citations found in {file}: FAILED (--strict needs at least one citation)"
            )
        } else {
            writeln!(out, "no citations found in {file}")
        };
    }
    writeln!(
        out,
        "{} citation{}: {} fresh, {} stale, {} broken, {} malformed, {} un-versioned: {}",
        s.total,
        if s.total == 1 { "" } else { "s" },
        s.fresh,
        s.stale,
        s.broken,
        s.malformed,
        s.unversioned,
        if v.passed { "OK" } else { "FAILED" }
    )
}

/// Convenience for callers that already hold the text: the checks of a markdown
/// aggregate against `root`, without writing anything.
pub fn verify_markdown(text: &str, root: &Path) -> Vec<Check> {
    check_all(document::in_markdown(text), root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citation::content_hash;

    const LOGIN: &str = "line 1\nline 2\nline 3\nline 4\n";

    /// A project with `src/login.ts` (4 lines) and `src/legacy.py` (2 lines, no newline at
    /// the end), and an aggregate citing them in every way.
    fn project() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("src")).unwrap();
        fs_err::write(dir.path().join("src/login.ts"), LOGIN).unwrap();
        fs_err::write(dir.path().join("src/legacy.py"), "a = 1\nb = 2").unwrap();
        let h = content_hash(LOGIN.as_bytes());
        let aggregate = format!(
            "# Summary\n\n\
             - **Plaintext compare** [src/login.ts@{h}, L2-4]\n\
             - **Again** [src/login.ts@{h}, L2-4] and whole file [src/login.ts@{h}]\n\
             - **Legacy** [src/legacy.py, L2]\n\n\
             ## Sources\n\n- src/login.ts@{h} (L2-4)\n- src/legacy.py (L2) [un-versioned]\n"
        );
        fs_err::write(dir.path().join("aggregate.md"), &aggregate).unwrap();
        (dir, h)
    }

    fn verify(dir: &Path, strict: bool, json: bool) -> (Verification, String) {
        let opts = VerifyOptions {
            file: dir.join("aggregate.md"),
            root: dir.to_path_buf(),
            strict,
            json,
        };
        let mut out = Vec::new();
        let v = verify_file(&opts, &mut out).unwrap();
        (v, String::from_utf8(out).unwrap())
    }

    fn statuses(v: &Verification) -> Vec<(String, Status)> {
        v.citations.iter().map(|c| (c.citation.inline(), c.status)).collect()
    }

    #[test]
    fn fresh_citations_pass_and_path_only_warns_unless_strict() {
        let (dir, h) = project();
        let (v, text) = verify(dir.path(), false, false);
        assert_eq!(
            statuses(&v),
            vec![
                (format!("[src/login.ts@{h}, L2-4]"), Status::Fresh),
                (format!("[src/login.ts@{h}]"), Status::Fresh),
                ("[src/legacy.py, L2]".to_string(), Status::Unversioned),
            ]
        );
        // Every occurrence, inline and in the footer, is one check.
        assert_eq!(v.citations[0].occurrences, vec![3, 4, 9]);
        assert!(v.passed);
        assert_eq!(v.exit_status(), ExitStatus::Success);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with(&format!("aggregate.md:3: fresh: [src/login.ts@{h}, L2-4]")),
            "{text}"
        );
        assert!(
            lines[2].contains(":5: warning: un-versioned: [src/legacy.py, L2]: path-only citation"),
            "{text}"
        );
        assert_eq!(
            lines[3],
            "3 citations: 2 fresh, 0 stale, 0 broken, 0 malformed, 1 un-versioned: OK"
        );

        let (v, text) = verify(dir.path(), true, false);
        assert!(!v.passed);
        assert_eq!(v.exit_status(), ExitStatus::Partial);
        assert!(text.contains("error: un-versioned"), "{text}");
        assert!(text.ends_with("FAILED\n"), "{text}");
    }

    #[test]
    fn editing_a_file_makes_its_citations_stale_and_short_files_break_ranges() {
        let (dir, h) = project();
        // Two lines now: the old version's hash no longer matches.
        fs_err::write(dir.path().join("src/login.ts"), "changed\n").unwrap();
        // The path-only citation's L2 no longer exists.
        fs_err::write(dir.path().join("src/legacy.py"), "only one line\n").unwrap();
        let (v, text) = verify(dir.path(), false, false);
        assert_eq!(
            statuses(&v),
            vec![
                (format!("[src/login.ts@{h}, L2-4]"), Status::Stale),
                (format!("[src/login.ts@{h}]"), Status::Stale),
                ("[src/legacy.py, L2]".to_string(), Status::Broken),
            ]
        );
        let now = content_hash(b"changed\n");
        assert_eq!(v.citations[0].current_hash.as_deref(), Some(now.as_str()));
        assert!(text.contains(&format!(
            "stale: [src/login.ts@{h}, L2-4]: the file changed since it was cited (now {now})"
        )));
        assert!(
            text.contains("broken: [src/legacy.py, L2]: L2 is past the end of the file (1 line)"),
            "{text}"
        );
        assert_eq!(v.exit_status(), ExitStatus::Partial);
    }

    #[test]
    fn missing_files_out_of_range_lines_and_paths_outside_the_root_are_broken() {
        let (dir, h) = project();
        let outside = dir.path().parent().unwrap().join("secret.txt");
        let text = format!(
            "- [src/gone.ts@{h}, L1]\n- [src/login.ts@{h}, L4-5]\n- [src/login.ts@{h}, L4]\n\
             - [../secret.txt, L1]\n- [{}, L1]\n- [src/, L1]\n",
            outside.display()
        );
        fs_err::write(dir.path().join("aggregate.md"), text).unwrap();
        let (v, out) = verify(dir.path(), false, false);
        let details: Vec<(Status, Option<&str>)> =
            v.citations.iter().map(|c| (c.status, c.detail.as_deref())).collect();
        assert_eq!(
            details,
            vec![
                (Status::Broken, Some("no such file")),
                (Status::Broken, Some("L5 is past the end of the file (4 lines)")),
                (Status::Fresh, None),
                (Status::Broken, Some("is outside the root")),
                (Status::Broken, Some("is outside the root")),
                (Status::Broken, Some("is a directory, not a file")),
            ]
        );
        assert!(
            out.ends_with("6 citations: 1 fresh, 0 stale, 5 broken, 0 malformed, 0 un-versioned: FAILED\n"),
            "{out}"
        );
    }

    #[test]
    fn json_report_and_json_aggregates() {
        let (dir, h) = project();
        let doc = serde_json::json!({
            "strategy": "merge",
            "findings": [{"text": "x", "citations": [
                {"artifact_id": "src/login.ts", "content_hash": h, "lines": "L1"},
                {"artifact_id": "src/login.ts", "content_hash": "XYZ", "lines": "L1"},
            ]}]
        });
        fs_err::write(dir.path().join("aggregate.json"), doc.to_string()).unwrap();
        let opts = VerifyOptions {
            file: dir.path().join("aggregate.json"),
            root: dir.path().to_path_buf(),
            strict: false,
            json: true,
        };
        let mut out = Vec::new();
        let v = verify_file(&opts, &mut out).unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(report["passed"], false);
        assert_eq!(report["summary"]["fresh"], 1);
        assert_eq!(report["summary"]["malformed"], 1);
        assert_eq!(report["citations"][1]["status"], "malformed");
        assert_eq!(report["citations"][0]["artifact_id"], "src/login.ts");
        assert_eq!(report["citations"][0]["lines"], "L1");
        assert_eq!(report["citations"][0]["status"], "fresh");
        assert_eq!(
            report["citations"][1]["detail"],
            "`XYZ` is not a content hash (16 lowercase hex characters)"
        );
        assert_eq!(v.exit_status(), ExitStatus::Partial);
    }

    #[test]
    fn no_citations_passes_with_a_note_fails_strict_and_a_bad_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("aggregate.md"), "# Nothing cited\n\n- [x] done\n").unwrap();
        let (v, text) = verify(dir.path(), false, false);
        assert!(v.passed);
        assert_eq!(
            text,
            format!("no citations found in {}\n", dir.path().join("aggregate.md").display())
        );
        let (v, text) = verify(dir.path(), true, false);
        assert!(!v.passed);
        assert!(
            text.ends_with(": FAILED (--strict needs at least one citation)\n"),
            "{text}"
        );
        let opts = VerifyOptions {
            file: dir.path().join("aggregate.md"),
            root: dir.path().join("nope"),
            strict: false,
            json: false,
        };
        assert!(matches!(
            verify_file(&opts, &mut Vec::new()),
            Err(CitationError::Root(_))
        ));
    }
}
