//! The start of a run: its inputs, its model (asking the server when no `--model` was
//! given) and its provider.

use std::sync::Arc;

use crate::error::{InputFailure, NoMatch, RlmError, SystemFailure};
use crate::input::changed::changed_since;
use crate::input::files_from::{read_files_from, ListSeparator};
use crate::input::{
    cap_largest, resolve_directory, resolve_glob, resolve_list, DirectoryQuery, ListFilter, Manifest, WalkOptions,
};
use crate::printer::Printer;
use crate::provider::catalog::PriceTable;
use crate::provider::command::CommandProvider;
use crate::provider::discovery::{discover_model, DiscoveryError};
use crate::provider::{HttpProvider, ModelInfo, Provider};
use crate::settings::{BatchSettings, InputSource, ProviderSettings};

/// The files of the run; no match, or nothing sendable, ends it here (nothing was called).
pub fn resolve_inputs(settings: &BatchSettings, printer: &Printer) -> Result<Manifest, RlmError> {
    let input = &settings.input;
    let walk = WalkOptions {
        respect_ignore: input.respect_ignore,
        hidden: input.hidden,
        follow_links: input.follow_links,
        exclude_dir: settings.output.output_dir.clone(),
    };
    let mut manifest = match &input.source {
        InputSource::Glob { pattern } => resolve_glob(&settings.cwd, pattern, &walk)?,
        InputSource::Directory {
            dir,
            include,
            exclude,
            recursive,
            ..
        } => resolve_directory(
            &settings.cwd,
            &DirectoryQuery {
                dir,
                include,
                exclude,
                recursive: *recursive,
            },
            &walk,
        )?,
        InputSource::FilesFrom { list, null, filter } => {
            let separator = if *null {
                ListSeparator::Nul
            } else {
                ListSeparator::Newline
            };
            let paths = read_files_from(list, separator, &mut std::io::stdin()).map_err(InputFailure::FilesFrom)?;
            // A bare list names its files; one filtered by a pattern selects what the
            // pattern would in a walk (see crate::input::list).
            let filter = ListFilter {
                pattern: filter.as_deref(),
                walk_rules: filter.is_some(),
            };
            resolve_list(&settings.cwd, paths, filter, &walk)?
        }
        InputSource::ChangedSince { reference, filter } => {
            let paths = changed_since(reference, &settings.cwd).map_err(InputFailure::Changed)?;
            let filter = ListFilter {
                pattern: filter.as_deref(),
                walk_rules: true,
            };
            resolve_list(&settings.cwd, paths, filter, &walk)?
        }
        InputSource::Neighbors {
            node,
            direction,
            depth,
            graph,
            graph_file,
        } => {
            let query = crate::input::NeighborsQuery {
                node,
                direction: *direction,
                depth: *depth,
                graph_file: graph_file.as_deref(),
                follow_links: input.follow_links,
            };
            super::graph_inputs::resolve(settings, &query, graph, printer)?
        }
    };
    // `--max-files` (a directory always has one: 20 unless given).
    if let Some(max_files) = input.max_files {
        cap_largest(&mut manifest, max_files);
    }
    // A list that names only unreadable files is not "nothing to do": they fail the run.
    if manifest.files.is_empty() && manifest.unreadable.is_empty() && input.source.empty_is_success() {
        // No plan follows to say the warnings (paths skipped for lying outside): say them.
        for warning in &manifest.warnings {
            printer.warn(warning);
        }
        return Ok(manifest);
    }
    tracing::debug!(
        files = manifest.files.len(),
        skipped = manifest.skipped.len(),
        unreadable = manifest.unreadable.len(),
        resident_mib = ?crate::memory::resident_mib(),
        "inputs resolved"
    );
    if manifest.matched() == 0 {
        return Err(NoMatch::Pattern {
            pattern: input.pattern.clone(),
        }
        .into());
    }
    if manifest.files.is_empty() {
        // The unreadable first: they are failures, where a skip is a choice.
        let all: Vec<_> = manifest.unreadable.iter().chain(&manifest.skipped).collect();
        let mut reasons: Vec<String> = all
            .iter()
            .take(5)
            .map(|s| format!("{}: {}", crate::escape::name(&s.path), s.reason))
            .collect();
        if all.len() > 5 {
            reasons.push(format!("and {} more", all.len() - 5));
        }
        let (subject, verb) = if all.len() == 1 {
            ("the one file", "was")
        } else {
            ("all", "were")
        };
        let what = if manifest.unreadable.is_empty() {
            format!("{verb} skipped")
        } else {
            format!("{verb} skipped or could not be read")
        };
        let files = if all.len() == 1 {
            String::new()
        } else {
            format!("{} files ", all.len())
        };
        return Err(RlmError::Input(format!(
            "{subject} {files}matching '{}' {what} ({}): nothing to send",
            crate::escape::name(&input.pattern),
            reasons.join("; ")
        )));
    }
    Ok(manifest)
}

/// The run's model: the one given, or the one the server serves. `Err` says why no call
/// can be made (the caller decides whether that ends the run or a dry run reports it).
pub async fn resolve_model(settings: &BatchSettings, printer: &Printer) -> Result<ModelInfo, DiscoveryError> {
    model_for(&settings.provider, &settings.budget.prices, printer).await
}

/// [`resolve_model`] from the provider settings and price table alone (`rlm job` has no
/// [`BatchSettings`]).
pub async fn model_for(
    provider: &ProviderSettings,
    prices: &PriceTable,
    printer: &Printer,
) -> Result<ModelInfo, DiscoveryError> {
    if provider.kind == crate::provider::ProviderKind::Command {
        let id = provider.model.clone().unwrap_or_else(|| "command".into());
        return Ok(ModelInfo::external(id, provider.context_window));
    }
    let id = match &provider.model {
        Some(id) => id.clone(),
        None => {
            let notice = |text: &str| printer.banner(text);
            discover_model(&provider.base_url, provider.api_key.as_ref(), &notice).await?
        }
    };
    Ok(ModelInfo::resolve(
        id,
        provider.context_window,
        prices,
        provider.official,
    ))
}

/// The provider that makes the calls.
pub fn provider(settings: &BatchSettings, model: &ModelInfo, run_id: &str) -> Result<Arc<dyn Provider>, RlmError> {
    provider_for(&settings.provider, model, run_id)
}

/// [`provider`] from the provider settings alone.
pub fn provider_for(p: &ProviderSettings, model: &ModelInfo, run_id: &str) -> Result<Arc<dyn Provider>, RlmError> {
    if let Some(argv) = &p.command {
        // Its children know how deep they are and which run started them.
        let env = vec![
            ("RLM_DEPTH".to_string(), (p.depth + 1).to_string()),
            ("RLM_PARENT_RUN".to_string(), run_id.to_string()),
        ];
        let withheld = crate::provider::command::withheld(&p.agent_env);
        return Ok(Arc::new(CommandProvider::new(argv.clone(), env, withheld, p.timeout)));
    }
    let http = HttpProvider::new(p.http_config(&model.id))
        // Nothing was sent: the system could not give what an HTTP client needs.
        .map_err(SystemFailure::HttpClient)?;
    Ok(Arc::new(http))
}
