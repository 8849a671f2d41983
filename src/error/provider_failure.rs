//! `ProviderFailure`: the provider refused us or could not be reached before any work was
//! done (exit 3). The provider's error is kept as the source; the variant says which
//! request it refused.

use crate::provider::batch_api::BatchError;
use crate::provider::discovery::DiscoveryError;

/// A refusal by the provider that ends a command at the start.
#[derive(Debug, thiserror::Error)]
pub enum ProviderFailure {
    /// Model discovery: the server refused the key, or could not be reached.
    #[error(transparent)]
    Discovery(DiscoveryError),
    /// `--batch-api` could not submit the batches, or the server failed its probe.
    #[error("--batch-api: {0}")]
    BatchApi(#[source] BatchError),
    /// A batch could not be polled, and polling again would not help.
    #[error("--batch-api: cannot poll {batch}: {source}")]
    Poll {
        batch: String,
        #[source]
        source: BatchError,
    },
    /// The provider refused to cancel a batch.
    #[error("cancelling batch {batch}: {source}")]
    Cancel {
        batch: String,
        #[source]
        source: BatchError,
    },
}
