//! The first stage of a run: inputs → manifest → model → units → cache pre-pass → estimate,
//! as one [`Plan`] that nothing after it changes. The dry run prints it; the real run
//! executes it.

use super::batch_api_run::{self, Delivery};
use super::estimate::{self, Estimate};
use super::prepass::{self, Prepass};
use super::startup;
use crate::cache::{Cache, CacheMode};
use crate::error::{RlmError, TooLarge};
use crate::input::Manifest;
use crate::plan::{self, PlanOptions};
use crate::printer::Printer;
use crate::provider::bundled_model::BundledModel;
use crate::provider::ModelInfo;
use crate::request::RequestContext;
use crate::settings::{BatchSettings, InputSource};
use crate::shard::PlanId;
use crate::unit::WorkUnit;

/// Everything a run will do, decided before any call.
pub struct Plan {
    pub manifest: Manifest,
    pub model: ModelInfo,
    /// How units become requests (the same for the dry run and the real run).
    pub requests: RequestContext,
    /// The units this run takes: every planned unit, or those of its `--shard`.
    pub units: Vec<WorkUnit>,
    /// The whole plan's identity (every unit, whatever the shard).
    #[allow(clippy::struct_field_names)] // the whole plan's, beside this shard's units
    pub plan_id: PlanId,
    /// Units in the whole plan.
    #[allow(clippy::struct_field_names)]
    pub plan_units: usize,
    pub pre: Prepass,
    pub estimate: Estimate,
    /// Why a real run could not start, as it would fail (a dry run reports it instead of
    /// failing).
    pub blocker: Option<RlmError>,
    /// Said at the start, and kept in `report.json`.
    pub warnings: Vec<String>,
    pub cache: Cache,
    /// Answers an earlier attempt of this run paid for but could not cache, by key.
    pub pending: std::collections::HashMap<String, crate::cache::CacheEntry>,
    /// Realtime calls, or the provider's batch API (`--batch-api`).
    pub delivery: Delivery,
}

/// What planning came to.
pub enum Planned {
    Plan(Box<Plan>),
    /// The input list selected no file: nothing to do (exit 0).
    Nothing(Manifest),
}

/// Plans a run (see the module doc). An error ends it before anything was called.
///
/// A model known only once the server names it may settle what the flags left open: the
/// bundled local model's answer budget when `--max-tokens` was not given.
pub async fn plan(settings: &mut BatchSettings, printer: &Printer) -> Result<Planned, RlmError> {
    let manifest = startup::resolve_inputs(settings, printer)?;
    // The reading threads' lists are freed: their pages go back before units are made.
    crate::memory::release_free();
    if manifest.files.is_empty() {
        // A resume has units left: inputs that select nothing now (a list piped to the
        // run, not to the resume) are no "nothing to do".
        if let Some(resume) = &settings.resume {
            return Err(RlmError::Input(nothing_selected_on_resume(settings, &resume.run_id)));
        }
        return Ok(Planned::Nothing(manifest));
    }
    let mut warnings = manifest.warnings.clone();
    warnings.extend(settings.exec.parallelism.warning.iter().cloned());
    let mut blocker = settings.provider.blocker.clone().map(RlmError::Config);
    if !settings.output.dry_run {
        if let Some(b) = blocker.take() {
            return Err(b);
        }
    }
    let model = match startup::resolve_model(settings, printer).await {
        Ok(model) => model,
        Err(e) if settings.output.dry_run => {
            blocker = blocker.or(Some(e.into()));
            ModelInfo::resolve("unknown".into(), None, &settings.budget.prices, false)
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(bundled) = BundledModel::recognize(&model.id) {
        if !settings.provider.max_tokens_given && settings.provider.kind != crate::provider::ProviderKind::Command {
            settings.provider.max_tokens = bundled.max_tokens;
        }
    }
    // Whether the server has a batch API is known before anything is planned around it.
    let delivery = match batch_api_run::delivery(settings, &model).await {
        Ok((delivery, notice)) => {
            warnings.extend(notice);
            delivery
        }
        Err(e) if settings.output.dry_run => {
            blocker = blocker.or(Some(e));
            Delivery::Realtime
        }
        Err(e) => return Err(e),
    };
    if !model.context_window_known && settings.provider.kind != crate::provider::ProviderKind::Command {
        warnings.push(format!(
            "the context window of {} is not known: rlm assumes {} tokens to size chunks (pass --context-window \
             with the model's real window)",
            model.id, model.context_window
        ));
    }
    let requests = RequestContext {
        sub_prompt: settings.task.sub_prompt.clone(),
        templates: plan::load_templates(&settings.rlm_dir())?,
        focus: settings.task.focus,
        schema: settings.task.schema.clone(),
        require_citations: settings.task.require_citations,
        max_tokens: settings.provider.max_tokens,
        model: model.id.clone(),
        endpoint: settings.provider.endpoint_identity(),
        prompt_cache: settings.exec.prompt_cache,
        query: settings.output.answer_on_stdout,
    };
    // A window the answer leaves no room in is the flags' mistake, said before any plan.
    plan::check_room(&requests, &model, settings.provider.context_window)?;
    let options = PlanOptions {
        chunking: settings.task.chunking,
        batch_small: settings.task.batch_small,
        batch_reader: if settings.input.is_directory_mode() {
            crate::unit::BatchReader::Analyst
        } else {
            crate::unit::BatchReader::Generic
        },
        chunk_always: settings.task.chunk_always,
    };
    let plan::UnitPlan {
        mut units,
        warnings: plan_warnings,
    } = plan::plan(&manifest, &options, &requests, &model);
    warnings.extend(plan_warnings);
    // Reading and planning freed much on their threads' heaps: given back before the run.
    crate::memory::release_free();
    tracing::debug!(units = units.len(), resident_mib = ?crate::memory::resident_mib(), "units planned");
    let plan_id = PlanId::of(&units);
    let plan_units = units.len();
    if let Some(shard) = settings.input.shard {
        units.retain(|u| shard.takes(&u.id));
    }
    warnings.extend(plan::unknown_window_warnings(
        &units,
        &model,
        settings.provider.max_tokens,
    ));
    warnings.extend(manifest.files.iter().filter_map(|f| {
        let source = f.source.as_deref().filter(|s| s.is_unusual())?;
        Some(if source.lossy {
            format!(
                "{}: not valid {}; bytes that could not be decoded were replaced (U+FFFD) in what is sent",
                crate::escape::name(&f.display),
                source.encoding
            )
        } else {
            format!(
                "{}: not UTF-8; read as {}",
                crate::escape::name(&f.display),
                source.encoding
            )
        })
    }));
    // The plan holds no text from here on (see `WorkUnit::release_text`).
    let mut manifest = manifest;
    for f in &mut manifest.files {
        if let Some(source) = f.source.as_mut().filter(|s| s.is_held()) {
            *source = source.released();
        }
    }

    let cache = Cache::new(&settings.rlm_dir());
    // Answers paid for and kept in run directories, not (yet) in the cache.
    let pending = super::pending::gather(settings);
    let answered = settings
        .resume
        .as_ref()
        .map(|r| r.earlier_completed.clone())
        .unwrap_or_default();
    let pre = prepass::run(
        &units,
        &cache,
        &pending,
        settings.exec.cache_mode,
        settings.provider.max_tokens,
        &answered,
    )?;
    // The lookups' lists, on a few threads' heaps, are freed: their pages go back.
    crate::memory::release_free();
    if settings.exec.cache_mode == CacheMode::ReadOnly && !pre.misses.is_empty() {
        return Err(prepass::cache_only_misses(&units, &pre.misses).into());
    }
    if let Some(e) = nothing_sendable(&units, &pre) {
        // Every unit is too large to send: nothing would be sent, so nothing starts (exit 2);
        // the dry run says so as its verdict.
        if !settings.output.dry_run {
            return Err(e);
        }
        blocker = blocker.or(Some(e));
    }
    let estimate = estimate::estimate(&units, &pre, settings, &model, delivery);
    Ok(Planned::Plan(Box::new(Plan {
        manifest,
        model,
        requests,
        units,
        plan_id,
        plan_units,
        pre,
        estimate,
        blocker,
        warnings,
        cache,
        pending,
        delivery,
    })))
}

/// The refusal of a plan whose every unit is too large to send (none cached, none to call).
fn nothing_sendable(units: &[WorkUnit], pre: &Prepass) -> Option<RlmError> {
    if !pre.hits.is_empty() || !pre.misses.is_empty() {
        return None;
    }
    let (i, reason) = pre.blocked.first()?;
    Some(
        TooLarge::EveryUnit {
            first: units[*i].label.to_string(),
            reason: reason.clone(),
            more: pre.blocked.len() - 1,
        }
        .into(),
    )
}

/// Why `rlm resume RUN` stops when the run's inputs select no file now, and what to do.
fn nothing_selected_on_resume(settings: &BatchSettings, run: &str) -> String {
    match &settings.input.source {
        InputSource::FilesFrom { list, .. } if list == std::path::Path::new("-") => format!(
            "run {run} read its --files-from list from standard input, and this resume was given none: pipe the \
             same list to `rlm resume {run}`; nothing was sent"
        ),
        _ => format!(
            "run {run}: its inputs ({}) select no file now: nothing was sent; put them back to resume it",
            crate::escape::name(&settings.input.pattern)
        ),
    }
}
