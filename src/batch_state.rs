//! Where a provider's batch is in its life, in words common to both providers: what the
//! batch clients report and the run store keeps. No wire format: the store reads these
//! without knowing any provider (see [`crate::provider::batch_api`] for the clients).

/// Where a batch is in its life, in words common to both providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// OpenAI checks the input file before it starts.
    Validating,
    InProgress,
    /// OpenAI writes the output files.
    Finalizing,
    /// A cancel was asked for; requests in flight finish.
    Canceling,
    /// Every request has a result (Anthropic `ended`, OpenAI `completed`).
    Ended,
    /// The whole batch was refused (OpenAI `failed`: its input did not validate).
    Failed,
    /// The 24 hours ran out; what finished has results, the rest expired.
    Expired,
    /// Canceled; what finished has results, the rest was canceled.
    Canceled,
}

impl BatchStatus {
    pub fn name(self) -> &'static str {
        match self {
            BatchStatus::Validating => "validating",
            BatchStatus::InProgress => "in_progress",
            BatchStatus::Finalizing => "finalizing",
            BatchStatus::Canceling => "canceling",
            BatchStatus::Ended => "ended",
            BatchStatus::Failed => "failed",
            BatchStatus::Expired => "expired",
            BatchStatus::Canceled => "canceled",
        }
    }

    pub fn from_name(name: &str) -> Option<BatchStatus> {
        [
            BatchStatus::Validating,
            BatchStatus::InProgress,
            BatchStatus::Finalizing,
            BatchStatus::Canceling,
            BatchStatus::Ended,
            BatchStatus::Failed,
            BatchStatus::Expired,
            BatchStatus::Canceled,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// No request will change any more: the results (if any) can be read.
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            BatchStatus::Ended | BatchStatus::Failed | BatchStatus::Expired | BatchStatus::Canceled
        )
    }
}

impl std::fmt::Display for BatchStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How many requests of a batch are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchCounts {
    pub processing: u64,
    pub succeeded: u64,
    pub errored: u64,
    pub canceled: u64,
    pub expired: u64,
}

impl BatchCounts {
    pub fn total(&self) -> u64 {
        self.processing + self.succeeded + self.errored + self.canceled + self.expired
    }

    /// Requests with a result of any kind.
    pub fn done(&self) -> u64 {
        self.total() - self.processing
    }
}

/// A batch as the last poll saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchState {
    pub batch_id: String,
    pub status: BatchStatus,
    /// The provider's own word for it (`in_progress`, `cancelling`, …).
    pub provider_status: String,
    pub counts: BatchCounts,
    /// Where the results are, once there are any: Anthropic's `results_url`; OpenAI's
    /// output file id, then its error file id.
    pub result_files: Vec<String>,
    /// Why the provider refused the batch (OpenAI `errors`), one line each.
    pub errors: Vec<String>,
    /// OpenAI refused the batch because the tokens enqueued for the model would pass the
    /// account's limit (`token_limit_exceeded`): nothing ran, and the same requests may be
    /// submitted again, in smaller batches or once other batches have ended.
    pub over_token_limit: bool,
}

impl BatchState {
    pub fn has_ended(&self) -> bool {
        self.status.has_ended()
    }
}
