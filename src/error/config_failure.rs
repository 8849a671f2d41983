//! `ConfigFailure`: the configuration cannot serve the command — the batch API cannot be
//! set up for this provider, the server serves more than one model, a prompt override
//! cannot be read. The provider's or the file's error is kept as the source.

use crate::provider::batch_api::BatchError;
use crate::provider::discovery::DiscoveryError;

/// The provider configuration cannot serve the command (exit 2): nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFailure {
    /// `--batch-api`: no batch API client can be made for the provider, or the server has
    /// no batch API.
    #[error(transparent)]
    BatchApi(BatchError),
    /// The server serves no model, or several, and `--model` does not choose one.
    #[error(transparent)]
    ModelNotChosen(DiscoveryError),
    /// A prompt override in `.aiwg/rlm/prompts/` cannot be read.
    #[error("cannot read the prompt override: {0}")]
    PromptOverride(#[source] std::io::Error),
}
