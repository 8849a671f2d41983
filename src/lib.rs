//! rlm: fan one prompt out over many files to language models in parallel, and combine the
//! answers into one result and a completion report.
//!
//! The flow runs one way — inputs → manifest → plan → cache pre-pass → execute →
//! aggregate → report — with one module per stage and a plain data type between stages.

pub mod aggregate;
pub mod batch;
pub mod cache;
pub mod cli;
pub mod error;
pub mod exec;
pub mod fs_atomic;
pub mod input;
pub mod plan;
pub mod progress;
pub mod prompt;
pub mod provider;
pub mod report;
pub mod run_store;
pub mod settings;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{ExitStatus, RlmError};
use crate::settings::{BatchSettings, Environment};

/// Parses the command line, runs it, prints any error as one line, and returns the
/// documented exit code.
pub fn run_cli() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { ExitStatus::Usage as u8 } else { 0 });
        }
    };
    let status = match cli.command {
        Command::Batch(args) => run_batch(args).unwrap_or_else(|e| {
            match &e {
                RlmError::NoMatch(message) => eprintln!("{message}"),
                other => eprintln!("rlm: error: {other}"),
            }
            e.exit_status()
        }),
    };
    ExitCode::from(status as u8)
}

fn run_batch(args: cli::BatchArgs) -> Result<ExitStatus, RlmError> {
    let env = Environment::from_process()?;
    let settings = BatchSettings::resolve(args, &env)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RlmError::Usage(format!("cannot start the async runtime: {e}")))?;
    let status = runtime.block_on(batch::run(settings));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    status
}
