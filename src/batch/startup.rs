//! The start of a run: its inputs, its model (asking the server when no `--model` was
//! given) and its provider.

use std::sync::Arc;

use crate::error::RlmError;
use crate::input::{resolve_glob, Manifest, WalkOptions};
use crate::printer::Printer;
use crate::provider::discovery::discover_model;
use crate::provider::{HttpConfig, HttpProvider, ModelInfo, Provider};
use crate::settings::{BatchSettings, InputSource};

/// The files of the run; no match, or nothing sendable, ends it here (nothing was called).
pub fn resolve_inputs(settings: &BatchSettings, printer: &Printer) -> Result<Manifest, RlmError> {
    let input = &settings.input;
    let walk = WalkOptions {
        respect_ignore: input.respect_ignore,
        hidden: input.hidden,
        follow_links: input.follow_links,
        exclude_dir: settings.output.output_dir.clone(),
    };
    let manifest = match &input.source {
        InputSource::Glob { pattern } => resolve_glob(&settings.cwd, pattern, &walk)?,
        source @ InputSource::Neighbors { .. } => super::graph_inputs::resolve(settings, source, printer)?,
    };
    tracing::debug!(
        files = manifest.files.len(),
        skipped = manifest.skipped.len(),
        unreadable = manifest.unreadable.len(),
        "inputs resolved"
    );
    if manifest.matched() == 0 {
        return Err(RlmError::NoMatch(no_match_message(&input.pattern)));
    }
    if manifest.files.is_empty() {
        let all: Vec<_> = manifest.skipped.iter().chain(&manifest.unreadable).collect();
        let reasons: Vec<String> = all
            .iter()
            .take(3)
            .map(|s| format!("{}: {}", crate::escape::name(&s.path), s.reason))
            .collect();
        return Err(RlmError::Usage(format!(
            "all {} files matching '{}' were skipped ({}): nothing to send",
            all.len(),
            crate::escape::name(&input.pattern),
            reasons.join("; ")
        )));
    }
    Ok(manifest)
}

/// The seed's "No files matched" message.
fn no_match_message(pattern: &str) -> String {
    format!(
        "RLM Batch: No files matched pattern\n\nPattern: {}\n\nPlease check:\n\
         1. Pattern syntax is correct\n2. Files exist in expected location\n3. Working directory is correct\n\n\
         Examples:\n  - src/**/*.ts (all TypeScript files)\n  - test/**/*.test.js (all test files)\n  \
         - **/*.{{js,ts}} (all JS and TS files)\n\n\
         Skipped unless the pattern names them: VCS, dependency and build folders, lock files, minified \
         and generated files, binaries and media. --no-ignore includes .gitignore'd files, --hidden hidden ones.",
        crate::escape::name(pattern)
    )
}

/// The run's model: the one given, or the one the server serves. `Err` says why no call
/// can be made (the caller decides whether that ends the run or a dry run reports it).
pub async fn resolve_model(settings: &BatchSettings, printer: &Printer) -> Result<ModelInfo, String> {
    let provider = &settings.provider;
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
        &settings.budget.prices,
        provider.official,
    ))
}

/// The provider that makes the calls.
pub fn provider(settings: &BatchSettings, model: &ModelInfo) -> Result<Arc<dyn Provider>, RlmError> {
    let p = &settings.provider;
    let http = HttpProvider::new(HttpConfig {
        kind: p.kind,
        base_url: p.base_url.clone(),
        api_key: p.api_key.clone(),
        model: model.id.clone(),
        temperature: p.temperature,
        timeout: p.timeout,
    })
    .map_err(RlmError::Usage)?;
    Ok(Arc::new(http))
}
