//! A job before it exists on disk: its definition, its prompts and schemas (compiled), its
//! context and its items, from a job file (`rlm job run`) or the pull-request review preset
//! (`rlm job pr-review`), everything checked and nothing written.

use std::path::Path;

use serde_json::Value;

use super::state::Source;
use super::{batch_check, github, ingest, pr_review, JobDefinition, PrReviewOptions};
use crate::error::{InputFailure, Interrupted, RlmError};
use crate::exec::Interrupt;
use crate::schema::OutputSchema;
use crate::settings::Environment;

/// A job before it exists on disk: everything checked, nothing written.
pub(super) struct Prepared {
    pub(super) definition: JobDefinition,
    pub(super) kind: &'static str,
    pub(super) source: Source,
    pub(super) items: Vec<Value>,
    /// Each phase's prompt and schema text.
    pub(super) texts: Vec<(Option<String>, Option<String>)>,
    pub(super) context: Option<String>,
}

/// A job file: the definition, its prompts and schemas (compiled), its context, its items
/// (a `command` that lists them is stopped by Ctrl-C, heard through `interrupt`).
pub(super) async fn prepare_file(
    path: &Path,
    env: &Environment,
    interrupt: &mut Interrupt,
) -> Result<Prepared, RlmError> {
    let path = env.cwd.join(path);
    let definition = JobDefinition::load(&path)?;
    let base = path.parent().map_or_else(|| env.cwd.clone(), Path::to_path_buf);
    // `at` names the phase (or the job) and the key, as a definition error does.
    let read = |p: &Path, at: &str| -> Result<String, RlmError> {
        fs_err::read_to_string(base.join(p))
            .map_err(|e| RlmError::Input(format!("{}: {at}: cannot read it: {e}", path.display())))
    };
    let mut texts = Vec::new();
    for (i, phase) in definition.phases.iter().enumerate() {
        let at = |key: &str| format!("phase {} ({}): `{key}`", i + 1, phase.name);
        let prompt = phase.prompt.as_deref().map(|p| read(p, &at("prompt"))).transpose()?;
        let schema = match &phase.output_schema {
            Some(p) => {
                let text = read(p, &at("output_schema"))?;
                let schema = OutputSchema::from_text(&text, p).map_err(|e| {
                    RlmError::Input(format!(
                        "phase {}: {}",
                        phase.name,
                        e.to_string().replace("--schema ", "output_schema ")
                    ))
                })?;
                if let Some(why) = batch_check::unanswerable(&schema.value, &definition.id) {
                    return Err(RlmError::Input(format!(
                        "{}: {}: no answer can pass {}: {why}",
                        path.display(),
                        at("output_schema"),
                        p.display()
                    )));
                }
                Some(text)
            }
            None => None,
        };
        texts.push((prompt, schema));
    }
    let context = definition
        .context
        .as_deref()
        .map(|p| read(p, "`context`"))
        .transpose()?;
    let (items, source) = match (&definition.input, &definition.command) {
        (Some(input), _) => {
            let full = base.join(input);
            (
                ingest::read_items_file(&full)?,
                Source::File {
                    path: full.display().to_string(),
                },
            )
        }
        (None, Some(argv)) => {
            let listed = ingest::command_output(argv, &base, interrupt.recv()).await;
            let out = listed.map_err(|e| match e {
                crate::process::ProcessError::NotFound { program } => RlmError::Config(format!(
                    "{}: the job's command {program} is not found (on PATH, or at that path): install it or change \
                     `command` in the job file",
                    path.display()
                )),
                crate::process::ProcessError::NotExecutable { program } => RlmError::Config(format!(
                    "{}: the job's command {program} is not executable: chmod +x it or change `command` in the job \
                     file",
                    path.display()
                )),
                crate::process::ProcessError::Cancelled { program } => Interrupted::JobCommand { program }.into(),
                other => RlmError::Input(format!("the job's command failed: {other}")),
            })?;
            let items = ingest::parse_items(&out, &format!("the output of {}", argv.join(" ")))?;
            (items, Source::Command { argv: argv.clone() })
        }
        (None, None) => {
            return Err(RlmError::Input(format!(
                "{}: no items: give `input = \"items.jsonl\"` or `command = [\"program\", \"arg\"]`",
                path.display()
            )))
        }
    };
    let shown = path.display().to_string();
    // gh's pull requests become the seed's records, as `rlm job pr-review` makes them.
    let (items, kind) = if definition.is_pr_review() {
        (pr_review::normalize_items(&items, &shown)?, "pr-review")
    } else {
        (items, "run")
    };
    ingest::check_ids(&items, &definition.id, &shown)?;
    if items.is_empty() {
        return Err(RlmError::Input(format!(
            "{shown}: the input has no items: nothing to do"
        )));
    }
    Ok(Prepared {
        definition,
        kind,
        source,
        items,
        texts,
        context,
    })
}

/// `rlm job pr-review`: the preset, the vision document, and the pull requests from gh (or
/// `--input`); gh is stopped by Ctrl-C, heard through `interrupt`.
pub(super) async fn prepare_pr_review(
    args: &PrReviewOptions,
    env: &Environment,
    interrupt: &mut Interrupt,
) -> Result<Prepared, RlmError> {
    github::check_repo(&args.repo)?;
    let vision = fs_err::read_to_string(env.cwd.join(&args.vision)).map_err(InputFailure::flag_file("--vision"))?;
    if vision.trim().is_empty() {
        return Err(RlmError::Input(format!(
            "--vision {} is empty: describe the project's goals and non-goals",
            args.vision.display()
        )));
    }
    let (text, shown) = match &args.input {
        Some(file) => (
            fs_err::read_to_string(env.cwd.join(file)).map_err(InputFailure::flag_file("--input"))?,
            file.display().to_string(),
        ),
        None => (
            github::pr_list(&args.repo, args.limit, &env.cwd, interrupt.recv()).await?,
            "gh pr list".to_string(),
        ),
    };
    let mut items = pr_review::normalize_all(&text, &shown)?;
    if let Some(limit) = args.limit {
        items.truncate(limit as usize);
    }
    ingest::check_ids(&items, "number", &shown)?;
    if items.is_empty() {
        return Err(RlmError::Input(format!(
            "{}: no open pull requests: nothing to review",
            args.repo
        )));
    }
    let mut definition = pr_review::definition(&args.repo);
    definition.context = Some(args.vision.clone());
    Ok(Prepared {
        definition,
        kind: "pr-review",
        source: Source::GitHub {
            repo: args.repo.clone(),
            limit: args.limit,
            input: args.input.as_ref().map(|p| p.display().to_string()),
        },
        items,
        texts: pr_review::texts(),
        context: Some(vision),
    })
}
