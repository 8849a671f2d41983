//! How a run's calls are made ([`Delivery`]: realtime, or through the provider's batch API),
//! decided when it is planned; the batch API of the run's endpoint; and the refusal, before
//! anything is sent, of a resume whose settings point at another server than the one its
//! batches were recorded at ([`refuse_batches_elsewhere`]).

use crate::error::{ConfigFailure, ProviderFailure, RlmError};
use crate::provider::batch_api::{self, batch_api, BatchApi, BatchError, BatchTimeouts};
use crate::provider::catalog::PriceTier;
use crate::provider::ModelInfo;
use crate::settings::{BatchApiMode, BatchSettings};
use crate::store::{RunId, TaskStore};

/// How a run's calls are made, decided when it is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Realtime calls.
    Realtime,
    /// The units through the provider's batch API; with `aggregation`, the aggregation
    /// calls too.
    BatchApi { aggregation: bool },
}

impl Delivery {
    /// The price the per-unit calls are billed at.
    pub fn unit_tier(self) -> PriceTier {
        match self {
            Delivery::Realtime => PriceTier::Realtime,
            Delivery::BatchApi { .. } => PriceTier::Batch,
        }
    }

    /// The price the aggregation calls are billed at.
    pub fn aggregate_tier(self) -> PriceTier {
        match self {
            Delivery::BatchApi { aggregation: true } => PriceTier::Batch,
            _ => PriceTier::Realtime,
        }
    }
}

/// The batch API of the run's endpoint.
pub(super) fn client(settings: &BatchSettings, model: &str) -> Result<Box<dyn BatchApi>, BatchError> {
    batch_api(
        &settings.provider.http_config(model),
        settings.exec.batch_api.limits,
        BatchTimeouts::default(),
    )
}

/// How the run's calls are made, and the notice to give when `--batch-api auto` falls back
/// to realtime calls. A server that is not the provider's own is asked first whether it
/// has a batch API at all (one listing), so that a run never starts around one it lacks:
/// without `auto` that is an error naming the server, before anything is paid for.
pub async fn delivery(settings: &BatchSettings, model: &ModelInfo) -> Result<(Delivery, Option<String>), RlmError> {
    let mode = settings.exec.batch_api.mode;
    if !mode.is_on() || settings.exec.cache_mode == crate::cache::CacheMode::ReadOnly {
        // Off, or `--cache-only`: nothing is called.
        return Ok((Delivery::Realtime, None));
    }
    let batched = Delivery::BatchApi {
        aggregation: mode == BatchApiMode::All,
    };
    if settings.provider.official {
        return Ok((batched, None));
    }
    let api = client(settings, &model.id).map_err(ConfigFailure::BatchApi)?;
    match api.probe().await {
        Ok(()) => Ok((batched, None)),
        Err(e) if e.is_unsupported() && mode == BatchApiMode::Auto => Ok((
            Delivery::Realtime,
            Some(format!(
                "{} has no batch API: --batch-api auto makes realtime calls instead (at the list price)",
                api.server()
            )),
        )),
        Err(e) if e.is_unsupported() => Err(ConfigFailure::BatchApi(e).into()),
        Err(e) => Err(ProviderFailure::BatchApi(e).into()),
    }
}

/// Refuses, before anything is sent, a resume (or `rlm cancel`) of run `run` whose settings
/// point at another server than one of its uncollected batches was recorded at: the batch
/// can only be polled, collected or canceled there. `rlm cancel --forget` passes (it gives
/// such batches up).
pub fn refuse_batches_elsewhere(settings: &BatchSettings, run: &RunId) -> Result<(), RlmError> {
    if settings.exec.batch_api.forget {
        return Ok(());
    }
    let store = TaskStore::open(&settings.rlm_dir())?;
    let batches = store.batch_submissions(run)?;
    let current = batch_api::server_name(&settings.provider.base_url);
    let provider = settings.provider.kind.name();
    let intents = store.batch_intents(run)?;
    let elsewhere: Vec<(&str, &str)> = batches
        .iter()
        .filter(|b| b.collected_at.is_none() && (b.server != current || b.provider != provider))
        .map(|b| (b.batch_id.as_str(), b.server.as_str()))
        .chain(
            intents
                .iter()
                .filter(|i| i.server != current || i.provider != provider)
                .map(|i| (i.token.as_str(), i.server.as_str())),
        )
        .collect();
    match elsewhere.as_slice() {
        [] => Ok(()),
        [(first, server), rest @ ..] => Err(RlmError::Config(elsewhere_message(
            run,
            first,
            server,
            rest.len(),
            &current,
        ))),
    }
}

/// Why a batch recorded at `recorded` is not reached through `current`, and what to do.
pub(super) fn elsewhere_message(run: &RunId, batch_id: &str, recorded: &str, more: usize, current: &str) -> String {
    format!(
        "{}, or give it up with `rlm cancel {run} --forget` (its requests are then sent again, and paid again)",
        elsewhere(run, batch_id, recorded, more, current)
    )
}

/// [`elsewhere_message`] for a job, whose batches are canceled, never given up.
pub(super) fn elsewhere_for_a_job(run: &RunId, batch_id: &str, recorded: &str, current: &str) -> String {
    format!(
        "{} (`rlm cancel {run}` cancels it there)",
        elsewhere(run, batch_id, recorded, 0, current)
    )
}

fn elsewhere(run: &RunId, batch_id: &str, recorded: &str, more: usize, current: &str) -> String {
    let more = match more {
        0 => String::new(),
        1 => " (and 1 more batch)".to_string(),
        n => format!(" (and {n} more batches)"),
    };
    format!(
        "run {run}: batch {batch_id}{more} waits at {recorded}, but the settings now point at {current} (--base-url, \
         ANTHROPIC_BASE_URL / OPENAI_BASE_URL or the config changed); nothing was sent. Point them back at \
         {recorded} to collect it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiers_follow_the_delivery() {
        assert_eq!(Delivery::Realtime.unit_tier(), PriceTier::Realtime);
        let units = Delivery::BatchApi { aggregation: false };
        assert_eq!(
            (units.unit_tier(), units.aggregate_tier()),
            (PriceTier::Batch, PriceTier::Realtime)
        );
        let all = Delivery::BatchApi { aggregation: true };
        assert_eq!(all.aggregate_tier(), PriceTier::Batch);
    }
}
