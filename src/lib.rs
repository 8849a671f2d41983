//! rlm: fan one prompt out over many files to language models in parallel, and combine the
//! answers into one result and a completion report.
//!
//! The flow runs one way — inputs → manifest → plan → cache pre-pass → execute →
//! aggregate → report — with one module per stage and a plain data type between stages.

pub mod aggregate;
pub mod batch;
pub mod cache;
pub mod cli;
pub mod content;
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
    let outcome = match cli.command {
        Command::Batch(args) => run_batch(args),
    };
    let status = outcome.unwrap_or_else(|e| match e.downcast_ref::<RlmError>() {
        Some(RlmError::NoMatch(message)) => {
            eprintln!("{message}");
            ExitStatus::Usage
        }
        Some(known) => {
            eprintln!("rlm: error: {known}");
            known.exit_status()
        }
        // Anything else is the machine refusing (no threads, say): one line, its causes.
        None => {
            eprintln!("rlm: error: {e:#}");
            ExitStatus::Usage
        }
    });
    ExitCode::from(status as u8)
}

/// Typed errors ([`RlmError`]) carry their exit code up to here; anything else gets context.
fn run_batch(args: cli::BatchArgs) -> anyhow::Result<ExitStatus> {
    use anyhow::Context;
    let env = Environment::from_process()?;
    let settings = BatchSettings::resolve(args, &env)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let status = runtime.block_on(batch::run(settings));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(status?)
}
