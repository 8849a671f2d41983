//! `StoreRefusal`: the run store or the jobs directory does not know the run or job a
//! command names, or the run or job cannot take what was asked of it (resume a finished
//! job, cancel a run with no batch waiting). Nothing failed: the command was refused, and
//! the message says what to run instead.

use std::path::PathBuf;

use crate::job::JobStatus;
use crate::store::{RunId, RunStatus};

/// The run store or a job directory refused what a command asked of it (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum StoreRefusal {
    /// No run was ever recorded under this `.aiwg/rlm`.
    #[error("no runs recorded in {}: start one with rlm batch", rlm_dir.display())]
    NoRuns { rlm_dir: PathBuf },
    /// No run (or no root of a recursion tree) was started in the working directory.
    #[error("no run was started in this directory: rlm list shows every run")]
    NoRunHere,
    /// `rlm resume` without a run, and every run here has ended.
    #[error("no unfinished run in this directory: rlm list shows the runs (name one to resume it)")]
    NoUnfinishedRun,
    /// `rlm resume --failed` without a run, and no run here is unfinished or has failed
    /// units.
    #[error(
        "no unfinished run and no run with failed units in this directory: rlm list shows the runs (name one to \
         resume it)"
    )]
    NoRunToRetry,
    /// The run was started by another command than `rlm batch`.
    #[error(
        "run {run} was not started by rlm batch ({}): run its command again instead (finished answers are cached)",
        command.join(" ")
    )]
    NotBatch { run: RunId, command: Vec<String> },
    /// The run is a job's, and the job ended: nothing to resume.
    #[error("run {run} is a job ({status}): nothing to resume (rlm job rerun {run} --phase N redoes a phase)")]
    EndedJobRun { run: RunId, status: RunStatus },
    /// The run is a job's, which `rlm job resume` goes on with.
    #[error("run {run} is a job ({status}): rlm job resume {run} goes on with it")]
    JobRun { run: RunId, status: RunStatus },
    /// `rlm cancel`: the run has no batch at the provider.
    #[error("run {run} has no batch waiting at the provider: nothing to cancel (rlm status {run} shows it)")]
    NothingToCancel { run: RunId },
    /// `rlm cancel` of a job whose only submission lost its reply.
    #[error(
        "job {run} has a submission whose reply was lost, and no batch known yet: `rlm job resume {run}` looks for \
         its batch first (nothing is paid twice); cancel then"
    )]
    SubmissionLost { run: RunId },
    /// Another run took the run's output directory over (its marker names it).
    #[error(
        "run {run} cannot be resumed: its output directory {} now holds run {other} (its results were replaced); \
         run its command again instead (finished answers are cached)",
        dir.display()
    )]
    DirectoryTakenOver { run: String, dir: PathBuf, other: String },
    /// `--batch-api` without a run store to record the batches in.
    #[error(
        "--batch-api records each batch in the run store before waiting for it, and the store cannot be written: \
         nothing was sent"
    )]
    BatchApiWithoutStore,
    /// `rlm job resume` of a job that ended.
    #[error("job {job} is {}: nothing to resume (rlm job rerun {job} --phase N redoes a phase)", status.name())]
    JobEnded { job: String, status: JobStatus },
    /// `rlm job resume` without a job, and every job here has ended.
    #[error("no unfinished job in this directory: rlm job list shows the jobs (name one to resume it)")]
    NoUnfinishedJob,
    /// No job was ever started here.
    #[error("no jobs in {}: start one with rlm job run JOB.toml or rlm job pr-review OWNER/REPO", jobs.display())]
    NoJobs { jobs: PathBuf },
    /// No job's id is (or starts with) `query`.
    #[error("no job '{}' in {}: rlm job list shows the jobs", crate::escape::name(query), jobs.display())]
    UnknownJob { query: String, jobs: PathBuf },
    /// `job.json` is of a newer format than this rlm reads.
    #[error(
        "{} was written by a newer rlm (format {version}, this one reads {reads}): upgrade rlm",
        path.display()
    )]
    NewerJobRecord { path: PathBuf, version: u32, reads: u32 },
    /// A phase's prompts left no output schema in the job's directory.
    #[error("phase {phase}: no output schema in the job's prompts/")]
    NoOutputSchema { phase: String },
    /// `job.json` names a provider this rlm does not know.
    #[error("job.json names provider '{provider}': pass --provider anthropic, openai or command")]
    UnknownProvider { provider: String },
}
