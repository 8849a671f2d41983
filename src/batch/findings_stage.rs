//! Findings for CI: read located findings out of every answer, write them as SARIF
//! (`results.sarif` in the run directory, and `--sarif PATH`), print them as GitHub
//! annotations under GitHub Actions, append the report to the step summary, and decide
//! `--fail-on`.

use super::answers::FileAnswer;
use crate::error::{OutputFailure, RlmError};
use crate::findings::{self, github, sarif, ArtifactBase, Finding, LevelCounts};
use crate::fs_atomic::{write_atomic, Durability};
use crate::printer::Printer;
use crate::report::FindingsSummary;
use crate::run_dir::RunDir;
use crate::settings::BatchSettings;

/// Refuses, before anything is sent, a `--sarif PATH` that cannot be written (a directory,
/// or under a file, or in a directory that cannot be written): the log is written once every
/// call has been paid for, too late to be told. Directories missing on its way are made when
/// it is written (as for `--save-trajectory`): `-o out --sarif out/rlm.sarif` or
/// `--sarif reports/rlm.sarif` in a fresh CI checkout.
pub fn check_sarif_path(settings: &BatchSettings) -> Result<(), RlmError> {
    let Some(path) = &settings.task.sarif else {
        return Ok(());
    };
    let shown = super::write::shown(path, &settings.cwd);
    if path.is_dir() {
        return Err(OutputFailure::SarifIsDirectory { shown }.into());
    }
    let parent = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(&settings.cwd);
    // The nearest directory on its way that exists: where the first missing directory, or
    // the file itself, will be made.
    let dir = parent
        .ancestors()
        .map(|d| {
            if d.as_os_str().is_empty() {
                settings.cwd.as_path()
            } else {
                d
            }
        })
        .find(|d| d.exists())
        .unwrap_or(&settings.cwd);
    if !dir.is_dir() {
        let file = super::write::shown(dir, &settings.cwd);
        return Err(OutputFailure::SarifUnderFile { shown, file }.into());
    }
    // Written as it will be: a temporary file, then renamed.
    match tempfile::Builder::new().prefix(".rlm-tmp-").tempfile_in(dir) {
        Ok(_) => Ok(()),
        Err(source) => Err(OutputFailure::SarifUnwritable {
            shown,
            dir: super::write::shown(dir, &settings.cwd),
            source,
        }
        .into()),
    }
}

/// The findings of a run and where paths are relative to.
pub struct Collected {
    pub findings: Vec<Finding>,
    pub base: ArtifactBase,
}

/// Every finding in the answers (in plan order, already kept once across units: see
/// [`crate::answer::dedupe`]). From the bundled toy model (`toy`), every finding is a note
/// that says where it came from: a 135M model invents findings, which must not reach code
/// scanning as errors or fail `--fail-on` (issue 25).
pub fn collect(settings: &BatchSettings, answers: &[FileAnswer], toy: bool) -> Collected {
    let mut findings: Vec<Finding> = answers.iter().flat_map(|a| a.answer.findings.iter().cloned()).collect();
    if toy {
        for f in &mut findings {
            f.level = findings::Level::Note;
            f.message = format!(
                "{} (unverified: from the bundled 135M-parameter local model)",
                f.message
            );
        }
    }
    let base = match findings_root(settings) {
        Some(root) => ArtifactBase::new(&root, &settings.cwd),
        None => ArtifactBase::at_root(),
    };
    Collected { findings, base }
}

fn findings_root(settings: &BatchSettings) -> Option<std::path::PathBuf> {
    crate::input::changed::repository_root(&settings.cwd).ok().flatten()
}

/// Writes the SARIF files (when there are findings, or `--sarif`/`--fail-on` asked) and
/// returns the summary for the report. A file that cannot be written is an error of the run:
/// it is said, and pushed to `errors` (the report's error, and a run that is not SUCCESS) —
/// CI would otherwise upload nothing and pass.
pub fn write(
    settings: &BatchSettings,
    run_dir: &RunDir,
    collected: &Collected,
    printer: &Printer,
    errors: &mut Vec<String>,
) -> Option<FindingsSummary> {
    let asked = settings.task.sarif.is_some() || settings.task.fail_on.is_some();
    if collected.findings.is_empty() && !asked {
        return None;
    }
    let counts = LevelCounts::of(&collected.findings);
    let sarif = sarif::to_json(&collected.findings, &collected.base, &sarif::ToolInfo::rlm());
    let mut failed = |e: String| {
        printer.error(&e);
        errors.push(e);
    };
    let path = run_dir.dir.join("results.sarif");
    let mut shown = match write_atomic(&path, sarif.as_bytes(), Durability::Buffered) {
        Ok(()) => Some(super::write::shown(&path, &settings.cwd)),
        Err(e) => {
            // The error names the file.
            failed(format!("cannot write the SARIF log: {e}"));
            None
        }
    };
    if let Some(extra) = &settings.task.sarif {
        match write_sarif(extra, &sarif) {
            // The log the user asked for is the one the report names.
            Ok(()) => shown = Some(super::write::shown(extra, &settings.cwd)),
            Err(e) => failed(format!("--sarif: {e}: pass a path in a directory that can be written")),
        }
    }
    let failed_on = settings
        .task
        .fail_on
        .filter(|f| f.exceeded(&collected.findings))
        .map(|f| {
            let level = f.threshold().name();
            let count = collected.findings.iter().filter(|x| x.level >= f.threshold()).count();
            let findings = if count == 1 { "finding" } else { "findings" };
            format!("{count} {findings} at or above {level} (--fail-on {level})")
        });
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

/// An empty SARIF log (no changed file to look at): still valid for code scanning. Returns
/// why it could not be written, if it could not (said already).
pub fn write_empty(settings: &BatchSettings, printer: &Printer) -> Option<String> {
    let path = settings.task.sarif.as_ref()?;
    let sarif = sarif::to_json(&[], &ArtifactBase::at_root(), &sarif::ToolInfo::rlm());
    let e = write_sarif(path, &sarif).err()?;
    let e = format!("--sarif: {e}: pass a path in a directory that can be written");
    printer.error(&e);
    Some(e)
}

/// Writes `--sarif PATH`, making the directories missing on its way.
fn write_sarif(path: &std::path::Path, sarif: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs_err::create_dir_all(dir)?;
    }
    write_atomic(path, sarif.as_bytes(), Durability::Buffered)
}
