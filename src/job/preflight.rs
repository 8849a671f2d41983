//! What is checked before a job is written to disk or anything is paid for: the phase
//! `--pause-after` names, and every phase that will run — its provider's key (a phase may
//! name its own provider) and its `fetch` program (gh for a PR review, also with
//! `--input`). A job that would stop half-way for one of these, after paying for the
//! phases before it, is refused at the start instead: one line, exit 2, nothing sent.

use std::path::Path;

use super::definition::{JobDefinition, PhaseDefinition, PhaseKind};
use super::ingest::id_key;
use super::settings::JobSettings;
use super::state::PhaseState;
use crate::error::{RlmError, TooLarge};
use crate::process::{find_program, ProgramProblem};
use crate::provider::ModelInfo;

/// `--pause-after PHASE` names a phase of the job that will run (`states`: each phase's,
/// for a job taken up again), else the job would never pause.
pub fn check_pause_after(
    settings: &JobSettings,
    definition: &JobDefinition,
    states: Option<&[PhaseState]>,
) -> Result<(), RlmError> {
    let Some(p) = &settings.pause_after else {
        return Ok(());
    };
    let index = definition.phase_index(p).map_err(|e| e.in_context("--pause-after"))?;
    if states.and_then(|s| s.get(index)).is_some_and(|s| s.status().is_done()) {
        return Err(RlmError::Usage(format!(
            "--pause-after {p}: phase {} is done already, so the job would not pause: name a phase still to run",
            definition.phases[index].name
        )));
    }
    Ok(())
}

/// Every item fits the context window of the model each map or review phase sends it to:
/// an item is never cut, so one larger than the window alone (at the estimate's 4 bytes a
/// token) is refused by the provider in every batch and every rerun, and takes its batch's
/// other items down with it. A window that is not known (no flag, not in the catalog)
/// never refuses an item: the server decides.
pub fn check_items_fit(
    definition: &JobDefinition,
    items: &[serde_json::Value],
    models: &[ModelInfo],
) -> Result<(), RlmError> {
    // The largest item, measured once for every phase.
    let Some((item, tokens)) = items
        .iter()
        .map(|item| (item, crate::tokens::expected(item.to_string().len() as u64)))
        .max_by_key(|(_, tokens)| *tokens)
    else {
        return Ok(());
    };
    for (i, (phase, model)) in definition.phases.iter().zip(models).enumerate() {
        if !matches!(phase.kind, PhaseKind::Map | PhaseKind::Review) || !model.context_window_known {
            continue;
        }
        let window = model.context_window;
        if tokens > window {
            let id = item.get(&definition.id).and_then(id_key).unwrap_or_default();
            return Err(TooLarge::Item {
                number: i + 1,
                phase: phase.name.clone(),
                item: id,
                tokens,
                model: model.id.clone(),
                window,
            }
            .into());
        }
    }
    Ok(())
}

/// A phase that will run in this invocation, and whether it calls a model (a reduce or a
/// report without a prompt does not).
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub phase: &'a PhaseDefinition,
    pub calls_model: bool,
}

/// What would stop the phases that will run: a provider without its key, a `fetch`
/// program that cannot be started. One line each, in phase order, never repeated.
pub fn blockers(settings: &JobSettings, runs: &[Runs<'_>]) -> Result<Vec<String>, RlmError> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |line: String| {
        if !found.contains(&line) {
            found.push(line);
        }
    };
    for run in runs {
        let phase = run.phase;
        if run.calls_model {
            let provider = settings.phase_provider(phase)?;
            if let Some(blocker) = provider.blocker {
                // The job's own provider needs no phase name: every phase uses it.
                if phase.provider.is_some() && provider.kind != settings.provider.kind {
                    add(format!("phase {}: {blocker}", phase.name));
                } else {
                    add(blocker);
                }
            }
        }
        if let Some(program) = phase.fetch.as_ref().and_then(|argv| argv.first()) {
            let path = settings.environment().var("PATH").map(str::to_string);
            if let Err(problem) = find_program(program, &settings.cwd, path.as_deref()) {
                add(problem_line(&problem, &phase.name, program));
            }
        }
    }
    Ok(found)
}

/// The line that says why phase `phase` cannot start `program`, and what to do; gh's names
/// gh's own remedy.
fn problem_line(problem: &ProgramProblem, phase: &str, program: &str) -> String {
    {
        let is_gh = Path::new(program).file_name().is_some_and(|n| n == "gh");
        match problem {
            ProgramProblem::NotFound if is_gh => format!(
                "gh (the GitHub CLI) is not installed or not on PATH, and phase {phase} fetches each pull request's \
                 diff with it: install it from https://cli.github.com and run gh auth login (nothing was sent)"
            ),
            ProgramProblem::NotFound => format!(
                "phase {phase}: the fetch program {program} is not found (on PATH, or at that path): install it or \
                 change `fetch` in the job file (nothing was sent)"
            ),
            ProgramProblem::NotExecutable(path) => format!(
                "phase {phase}: the fetch program {} is not executable: chmod +x it or change `fetch` in the job \
                 file (nothing was sent)",
                path.display()
            ),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_or_at_their_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs_err::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        fs_err::write(&tool, "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = bin.join("plain");
        fs_err::write(&plain, "data").unwrap();
        fs_err::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = format!("/nonexistent:{}", bin.display());
        assert_eq!(find_program("tool", dir.path(), Some(&path)), Ok(tool.clone()));
        assert_eq!(find_program("bin/tool", dir.path(), None), Ok(tool));
        assert_eq!(
            find_program("gone", dir.path(), Some(&path)),
            Err(ProgramProblem::NotFound)
        );
        assert_eq!(
            find_program("plain", dir.path(), Some(&path)),
            Err(ProgramProblem::NotExecutable(plain))
        );
        assert!(problem_line(&ProgramProblem::NotFound, "reviews", "gh").starts_with("gh (the GitHub CLI)"));
    }
}
