//! Findings for CI: read located findings out of every answer, write them as SARIF
//! (`results.sarif` in the run directory, and `--sarif PATH`), print them as GitHub
//! annotations under GitHub Actions, append the report to the step summary, and decide
//! `--fail-on`.

use std::collections::HashMap;

use crate::findings::{self, github, sarif, ArtifactBase, Finding, LevelCounts};
use crate::fs_atomic::{write_atomic, Durability};
use crate::printer::Printer;
use crate::report::FindingsSummary;
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;
use crate::unit::{UnitId, WorkUnit};

/// The findings of a run and where paths are relative to.
pub struct Collected {
    pub findings: Vec<Finding>,
    pub base: ArtifactBase,
}

/// Every finding in the answers, in plan order.
pub fn collect(settings: &BatchSettings, units: &[WorkUnit], texts: &HashMap<UnitId, String>) -> Collected {
    let mut all = Vec::new();
    for unit in units {
        let Some(text) = texts.get(&unit.id) else { continue };
        let default_path = unit.inputs.first().map_or(unit.label.as_str(), |i| i.display.as_str());
        let mut found = findings::extract(text, default_path);
        if let Some((path, span)) = unit
            .inputs
            .first()
            .and_then(|i| i.span.map(|s| (i.display.as_str(), s)))
        {
            for finding in found.iter_mut().filter(|f| f.path == path) {
                finding.region = to_original_lines(finding.region, span.start, span.end);
            }
        }
        all.extend(found);
    }
    let base = match findings_root(settings) {
        Some(root) => ArtifactBase::new(&root, &settings.cwd),
        None => ArtifactBase::at_root(),
    };
    Collected { findings: all, base }
}

/// A chunk's finding, in lines of the original file. The analyst was told the chunk's
/// original line range; a line inside it is kept, a line that only makes sense counted from
/// the chunk's first line is moved there, and any other is dropped (the finding stays, for
/// its file, without a line) rather than pointing at the wrong code.
fn to_original_lines(region: Option<findings::Region>, start: u64, end: u64) -> Option<findings::Region> {
    let r = region?;
    let inside = |line: u64| (start..=end).contains(&line);
    if inside(r.start_line) {
        return Some(r);
    }
    let shift = start - 1;
    if inside(r.start_line + shift) {
        return findings::Region::new(r.start_line + shift, r.end_line.map(|e| (e + shift).min(end)));
    }
    None
}

fn findings_root(settings: &BatchSettings) -> Option<std::path::PathBuf> {
    crate::input::changed::repository_root(&settings.cwd).ok().flatten()
}

/// Writes the SARIF files (when there are findings, or `--sarif`/`--fail-on` asked) and
/// returns the summary for the report. A file that cannot be written is an error of the run.
pub fn write(
    settings: &BatchSettings,
    run_dir: &RunDir,
    collected: &Collected,
    printer: &Printer,
) -> Option<FindingsSummary> {
    let asked = settings.task.sarif.is_some() || settings.task.fail_on.is_some();
    if collected.findings.is_empty() && !asked {
        return None;
    }
    let counts = LevelCounts::of(&collected.findings);
    let sarif = sarif::to_json(&collected.findings, &collected.base, &sarif::ToolInfo::rlm());
    let path = run_dir.dir.join("results.sarif");
    let shown = match write_atomic(&path, sarif.as_bytes(), Durability::Buffered) {
        Ok(()) => Some(super::write::shown(&path, &settings.cwd)),
        Err(e) => {
            printer.error(&format!("cannot write {}: {e}", path.display()));
            None
        }
    };
    if let Some(extra) = &settings.task.sarif {
        if let Err(e) = write_atomic(extra, sarif.as_bytes(), Durability::Buffered) {
            printer.error(&format!("--sarif {}: {e}", extra.display()));
        }
    }
    let failed_on = settings
        .task
        .fail_on
        .filter(|f| f.exceeded(&collected.findings))
        .map(|f| format!("a finding at or above {} (--fail-on)", f.threshold().name()));
    Some(FindingsSummary {
        error: counts.get(findings::Level::Error),
        warning: counts.get(findings::Level::Warning),
        note: counts.get(findings::Level::Note),
        sarif: shown,
        failed_on,
    })
}

/// After the report: annotations under GitHub Actions, and the step summary.
pub fn publish(settings: &BatchSettings, collected: &Collected, report_markdown: &str, printer: &Printer) {
    if settings.output.github_actions && !collected.findings.is_empty() {
        let text = github::annotations(&collected.findings, &collected.base);
        printer.important(text.trim_end());
    }
    if let Some(path) = &settings.output.step_summary {
        let md = github::summary_markdown(report_markdown, &collected.findings, &collected.base);
        if let Err(e) = github::append_step_summary(path, &md) {
            printer.warn(&e.to_string());
        }
    }
}

/// An empty SARIF log (no changed file to look at): still valid for code scanning.
pub fn write_empty(settings: &BatchSettings, printer: &Printer) {
    if let Some(path) = &settings.task.sarif {
        let sarif = sarif::to_json(&[], &ArtifactBase::at_root(), &sarif::ToolInfo::rlm());
        if let Err(e) = write_atomic(path, sarif.as_bytes(), Durability::Buffered) {
            printer.error(&format!("--sarif {}: {e}", path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Region;

    #[test]
    fn chunk_lines_map_to_the_original_file() {
        let r = |s, e| Region::new(s, e);
        // Inside the chunk (lines 301-600): kept.
        assert_eq!(to_original_lines(r(350, Some(360)), 301, 600), r(350, Some(360)));
        // Counted from the chunk's first line: moved.
        assert_eq!(to_original_lines(r(5, Some(9)), 301, 600), r(305, Some(309)));
        // Neither: no line rather than a wrong one.
        assert_eq!(to_original_lines(r(900, None), 301, 600), None);
        assert_eq!(to_original_lines(None, 301, 600), None);
        // The first chunk: original and chunk lines agree.
        assert_eq!(to_original_lines(r(12, None), 1, 300), r(12, None));
    }
}
