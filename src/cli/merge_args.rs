//! What `rlm merge` makes of its arguments and of the options its runs recorded: the
//! merged run's [`BatchOptions`], from which its settings are built like any run's. The
//! merge itself ([`crate::merge`]) is given the settings, and knows no command line.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::MergeArgs;
use crate::error::{RlmError, SystemFailure};
use crate::merge::FinishedRun;
use crate::provider::ProviderKind;
use crate::settings::{BatchApiMode, BatchOptions};

impl MergeArgs {
    /// The merged run's options: the first run's, as it recorded them, for the whole plan (no
    /// shard), writing to `output_dir`, with the provider and model it resolved (so no
    /// server is asked again) and merge's own output, aggregation, gate and budget. A prompt
    /// read from a file is the prompt the run recorded, in a temporary file, returned with
    /// them: it must be kept while the merge runs.
    pub fn merged_options(
        self,
        first: &FinishedRun,
        output_dir: PathBuf,
    ) -> Result<(BatchOptions, Option<NamedTempFile>), RlmError> {
        let mut options = first.record.settings.clone();
        if options.files_from.as_deref() == Some(Path::new("-")) {
            return Err(RlmError::Usage(format!(
                "{} read its file list from standard input (--files-from -): rlm merge plans the job again, so run \
                 the shards with the list in a file (--files-from FILE)",
                first.shown
            )));
        }
        let prompt = match &options.prompt_file {
            Some(_) => {
                let mut file = NamedTempFile::new().map_err(SystemFailure::PromptFile)?;
                file.write_all(first.sub_prompt.as_bytes())
                    .map_err(SystemFailure::PromptFile)?;
                options.prompt_file = Some(file.path().to_path_buf());
                Some(file)
            }
            None => None,
        };
        options.shard = None;
        // The merge's own calls (aggregation at most) are few: realtime.
        options.batch_api = Some(BatchApiMode::Off);
        options.output_dir = Some(output_dir);
        options.dry_run = false;
        options.save_trajectory = None;
        options.json = self.json;
        options.quiet = self.quiet;
        options.yes = true;
        options.max_cost = self.max_cost;
        options.provider = match first.provider.as_str() {
            "anthropic" => Some(ProviderKind::Anthropic),
            "openai" => Some(ProviderKind::Openai),
            "command" => Some(ProviderKind::Command),
            _ => options.provider,
        };
        if !first.model.is_empty() && options.provider != Some(ProviderKind::Command) {
            options.model = Some(first.model.clone());
        }
        if let Some(aggregate) = self.aggregate {
            options.aggregate = Some(aggregate.into());
        }
        if let Some(level) = self.fail_on {
            options.fail_on = Some(level.into());
        }
        if self.sarif.is_some() {
            options.sarif = self.sarif;
        }
        Ok((options, prompt))
    }
}
