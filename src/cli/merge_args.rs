//! What `rlm merge` makes of its arguments and of the arguments its runs recorded: the
//! merged run's [`BatchArgs`], from which its settings are built like any run's. The merge
//! itself ([`crate::merge`]) is given the settings, and knows no command line.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::{BatchApiArg, BatchArgs, MergeArgs, ProviderArg};
use crate::error::RlmError;
use crate::merge::FinishedRun;

impl BatchArgs {
    /// The arguments `run` recorded; arguments this rlm cannot read refuse the run, as a run
    /// that recorded none is refused.
    pub fn recorded_by(run: &FinishedRun) -> Result<BatchArgs, RlmError> {
        serde_json::from_value(run.args.clone()).map_err(|_| run.unreadable())
    }
}

impl MergeArgs {
    /// The merged run's arguments: `recorded`, the first run's, for the whole plan (no
    /// shard), writing to `output_dir`, with the provider and model it resolved (so no
    /// server is asked again) and merge's own output, aggregation, gate and budget. A prompt
    /// read from a file is the prompt the run recorded, in a temporary file, returned with
    /// them: it must be kept while the merge runs.
    pub fn merged_batch_args(
        self,
        first: &FinishedRun,
        recorded: BatchArgs,
        output_dir: PathBuf,
    ) -> Result<(Box<BatchArgs>, Option<NamedTempFile>), RlmError> {
        let mut batch = Box::new(recorded);
        if batch.files_from.as_deref() == Some(Path::new("-")) {
            return Err(RlmError::Usage(format!(
                "{} read its file list from standard input (--files-from -): rlm merge plans the job again, so run \
                 the shards with the list in a file (--files-from FILE)",
                first.shown
            )));
        }
        let prompt = match &batch.prompt_file {
            Some(_) => {
                let mut file = NamedTempFile::new()
                    .map_err(|e| RlmError::System(format!("cannot write the runs' prompt to a temporary file: {e}")))?;
                file.write_all(first.sub_prompt.as_bytes())
                    .map_err(|e| RlmError::System(format!("cannot write the runs' prompt to a temporary file: {e}")))?;
                batch.prompt_file = Some(file.path().to_path_buf());
                Some(file)
            }
            None => None,
        };
        batch.shard = None;
        // The merge's own calls (aggregation at most) are few: realtime.
        batch.batch_api = Some(BatchApiArg::Off);
        batch.output_dir = Some(output_dir);
        batch.dry_run = false;
        batch.save_trajectory = None;
        batch.json = self.json;
        batch.quiet = self.quiet;
        batch.yes = true;
        batch.max_cost = self.max_cost;
        batch.provider = match first.provider.as_str() {
            "anthropic" => Some(ProviderArg::Anthropic),
            "openai" => Some(ProviderArg::Openai),
            "command" => Some(ProviderArg::Command),
            _ => batch.provider,
        };
        if !first.model.is_empty() && batch.provider != Some(ProviderArg::Command) {
            batch.model = Some(first.model.clone());
        }
        if self.aggregate.is_some() {
            batch.aggregate = self.aggregate;
        }
        if self.fail_on.is_some() {
            batch.fail_on = self.fail_on;
        }
        if self.sarif.is_some() {
            batch.sarif = self.sarif;
        }
        Ok((batch, prompt))
    }
}
