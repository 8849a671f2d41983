//! The plain options of commands, made from their arguments here: batch runs (whose
//! options a run records), the index, the citation checker and jobs know no command line.

use std::path::PathBuf;

use super::{
    BatchArgs, ChunkingArg, ExportFormatArg, IndexBuildArgs, IndexCommand, IndexNeighborsArgs, JobCallArgs, JobCommand,
    JobExportArgs, JobRunFlags, PrReviewArgs, Toggle, VerifyCitationsArgs,
};
use crate::cache::CacheMode;
use crate::citation::command::VerifyOptions;
use crate::index::command::{BuildOptions, GraphChoice, IndexAction, NeighborsOptions, PROJECT_GRAPH};
use crate::index::IndexError;
use crate::job::{
    CallFlags, ExportFormat, ExportOptions, JobAction, PrReviewOptions, RerunJob, ResumeJob, RunFlags, RunJob,
};
use crate::settings::BatchOptions;

impl From<BatchArgs> for BatchOptions {
    fn from(args: BatchArgs) -> Self {
        // Destructure exhaustively so a new flag is a compile error until it is carried over.
        let BatchArgs {
            pattern,
            sub_prompt,
            prompt_file,
            files_from,
            null,
            changed_since,
            sarif,
            fail_on,
            schema,
            chunking,
            batch_small,
            no_batch_small,
            focus,
            model,
            provider,
            command,
            agent_env,
            max_depth,
            base_url,
            output_dir,
            aggregate,
            max_parallel,
            no_prompt_cache,
            no_cache,
            cache_only,
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            connect_timeout,
            deadline,
            save_trajectory,
            retries,
            rate_limit_wait,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            no_ignore,
            hidden,
            follow_links,
            include,
            exclude,
            no_recursive,
            shard,
            max_files,
            neighbors_of,
            direction,
            depth,
            graph,
            graph_file,
            require_citations,
            batch_api,
            batch_api_fallback,
        } = args;
        BatchOptions {
            pattern,
            sub_prompt,
            prompt_file,
            files_from,
            null,
            changed_since,
            sarif,
            fail_on: fail_on.map(Into::into),
            schema,
            chunking: chunking == ChunkingArg::Auto,
            // On by default in every input mode (issue 27: framing cost more than tiny
            // files); `--batch-small` stays accepted.
            batch_small: !no_batch_small || batch_small,
            focus: focus.into(),
            model,
            provider: provider.map(Into::into),
            command,
            agent_env,
            max_depth,
            base_url,
            output_dir,
            aggregate: aggregate.map(Into::into),
            max_parallel,
            prompt_cache: !no_prompt_cache,
            cache_mode: if cache_only {
                CacheMode::ReadOnly
            } else if no_cache {
                CacheMode::WriteOnly
            } else {
                CacheMode::ReadWrite
            },
            force,
            yes,
            dry_run,
            json,
            quiet,
            timeout,
            connect_timeout,
            retries,
            deadline,
            save_trajectory,
            rate_limit_wait,
            max_tokens,
            max_cost,
            context_window,
            temperature,
            respect_ignore: !no_ignore,
            hidden,
            follow_links,
            include,
            exclude,
            no_recursive,
            shard,
            max_files,
            neighbors_of,
            direction: direction.map(Into::into),
            depth,
            graph,
            graph_file,
            require_citations,
            batch_api: batch_api.map(Into::into),
            batch_api_fallback: batch_api_fallback.into(),
        }
    }
}

impl TryFrom<IndexCommand> for IndexAction {
    type Error = IndexError;

    fn try_from(command: IndexCommand) -> Result<Self, IndexError> {
        Ok(match command {
            IndexCommand::Build(args) => IndexAction::Build(args.into()),
            IndexCommand::Neighbors(args) => IndexAction::Neighbors(args.try_into()?),
        })
    }
}

impl From<IndexBuildArgs> for BuildOptions {
    fn from(args: IndexBuildArgs) -> Self {
        BuildOptions {
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            json: args.json,
        }
    }
}

impl TryFrom<IndexNeighborsArgs> for NeighborsOptions {
    type Error = IndexError;

    /// `--graph` other than `project` is an error.
    fn try_from(args: IndexNeighborsArgs) -> Result<Self, IndexError> {
        let graph = match args.graph_file {
            Some(file) => GraphChoice::File(file),
            None if args.graph == PROJECT_GRAPH => GraphChoice::Project,
            None => return Err(IndexError::UnknownGraph(args.graph)),
        };
        Ok(NeighborsOptions {
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            node: args.node,
            direction: args.direction.into(),
            depth: args.depth,
            graph,
            edge_type: args.edge_type,
            json: args.json,
        })
    }
}

impl From<VerifyCitationsArgs> for VerifyOptions {
    fn from(args: VerifyCitationsArgs) -> Self {
        VerifyOptions {
            file: args.file,
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            strict: args.strict,
            json: args.json,
        }
    }
}

impl From<JobCommand> for JobAction {
    fn from(command: JobCommand) -> Self {
        match command {
            JobCommand::Run(args) => JobAction::Run(RunJob {
                file: args.file,
                call: args.call.into(),
                flags: args.flags.into(),
            }),
            JobCommand::PrReview(args) => JobAction::PrReview(args.into()),
            JobCommand::List(args) => JobAction::List { json: args.json },
            JobCommand::Status(args) => JobAction::Status {
                job: args.job,
                json: args.json,
            },
            JobCommand::Resume(args) => JobAction::Resume(ResumeJob {
                job: args.job,
                call: args.call.into(),
                flags: args.flags.into(),
            }),
            JobCommand::Rerun(args) => JobAction::Rerun(RerunJob {
                job: args.job,
                phase: args.phase,
                prompt: args.prompt,
                call: args.call.into(),
                flags: args.flags.into(),
            }),
            JobCommand::Export(args) => JobAction::Export(args.into()),
        }
    }
}

impl From<JobCallArgs> for CallFlags {
    fn from(args: JobCallArgs) -> Self {
        let JobCallArgs {
            model,
            provider,
            command,
            base_url,
            max_parallel,
            max_cost,
            timeout,
            rate_limit_wait,
            max_tokens,
            context_window,
            temperature,
            batch_api,
        } = args;
        CallFlags {
            model,
            provider: provider.map(Into::into),
            command,
            base_url,
            max_parallel,
            max_cost,
            timeout,
            rate_limit_wait,
            max_tokens,
            context_window,
            temperature,
            batch_api: batch_api.map(|toggle| toggle == Toggle::On),
        }
    }
}

impl From<JobRunFlags> for RunFlags {
    fn from(flags: JobRunFlags) -> Self {
        let JobRunFlags {
            yes,
            force,
            dry_run,
            no_cache,
            json,
            quiet,
            deadline,
            pause_after,
        } = flags;
        RunFlags {
            yes,
            force,
            dry_run,
            no_cache,
            json,
            quiet,
            deadline,
            pause_after,
        }
    }
}

impl From<PrReviewArgs> for PrReviewOptions {
    fn from(args: PrReviewArgs) -> Self {
        PrReviewOptions {
            repo: args.repo,
            vision: args.vision,
            limit: args.limit,
            input: args.input,
            call: args.call.into(),
            flags: args.flags.into(),
        }
    }
}

impl From<JobExportArgs> for ExportOptions {
    fn from(args: JobExportArgs) -> Self {
        ExportOptions {
            job: args.job,
            format: match args.format {
                ExportFormatArg::Json => ExportFormat::Json,
                ExportFormatArg::Markdown => ExportFormat::Markdown,
                ExportFormatArg::GithubComments => ExportFormat::GithubComments,
            },
            output: args.output,
            post: args.post,
            yes: args.yes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::DirectionArg;

    #[test]
    fn unknown_graph_name_is_an_error() {
        let args = IndexNeighborsArgs {
            node: "a.ts".into(),
            direction: DirectionArg::In,
            depth: 1,
            graph: "ssot".into(),
            graph_file: None,
            edge_type: None,
            root: None,
            json: false,
        };
        let err = NeighborsOptions::try_from(args).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown graph `ssot`: use `project` (this project's index) or --graph-file FILE"
        );
    }
}
