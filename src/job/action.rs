//! What `rlm job` is asked to do, as plain values: the command line's subcommands and flags
//! become these in `cli::into_options`, so the job module knows no command line.

use std::path::PathBuf;

use super::export::ExportOptions;
use super::settings::{CallFlags, RunFlags};

/// One `rlm job` subcommand.
#[derive(Debug)]
pub enum JobAction {
    /// `rlm job run JOB_FILE`.
    Run(RunJob),
    /// `rlm job pr-review OWNER/REPO --vision FILE`.
    PrReview(PrReviewOptions),
    /// `rlm job list`.
    List { json: bool },
    /// `rlm job status [JOB]`.
    Status { job: Option<String>, json: bool },
    /// `rlm job resume [JOB]`.
    Resume(ResumeJob),
    /// `rlm job rerun JOB --phase N|NAME`.
    Rerun(RerunJob),
    /// `rlm job export JOB --format …`.
    Export(ExportOptions),
}

impl JobAction {
    /// Whether the command asks for one JSON document on stdout (an error is then one too).
    pub fn wants_json(&self) -> bool {
        match self {
            JobAction::Run(a) => a.flags.json,
            JobAction::PrReview(a) => a.flags.json,
            JobAction::Resume(a) => a.flags.json,
            JobAction::Rerun(a) => a.flags.json,
            JobAction::List { json } | JobAction::Status { json, .. } => *json,
            JobAction::Export(_) => false,
        }
    }
}

/// A job file to run.
#[derive(Debug)]
pub struct RunJob {
    pub file: PathBuf,
    pub call: CallFlags,
    pub flags: RunFlags,
}

/// The PR review preset: the repository, the vision document, the pull requests.
#[derive(Debug)]
pub struct PrReviewOptions {
    /// `OWNER/REPO`.
    pub repo: String,
    /// The vision document (the job's context).
    pub vision: PathBuf,
    /// At most this many pull requests.
    pub limit: Option<u32>,
    /// The pull requests from this file (`gh pr list --json …`'s output), not from gh.
    pub input: Option<PathBuf>,
    pub call: CallFlags,
    pub flags: RunFlags,
}

/// A job to take up again where it stopped (the latest unfinished one when none is named).
#[derive(Debug)]
pub struct ResumeJob {
    pub job: Option<String>,
    pub call: CallFlags,
    pub flags: RunFlags,
}

/// A phase of a job to run again (with another prompt, when one is given).
#[derive(Debug)]
pub struct RerunJob {
    pub job: String,
    /// The phase's number or name.
    pub phase: String,
    pub prompt: Option<PathBuf>,
    pub call: CallFlags,
    pub flags: RunFlags,
}
