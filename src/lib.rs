//! rlm: fan one prompt out over many files to language models in parallel, and combine the
//! answers into one result and a completion report.
//!
//! The flow runs one way — inputs → manifest → plan → cache pre-pass → execute →
//! aggregate → report — with one module per stage and a plain data type between stages.

pub mod aggregate;
pub mod batch;
pub mod cache;
pub mod citation;
pub mod cli;
pub mod error;
pub mod exec;
pub mod fs_atomic;
pub mod index;
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
        Command::Index(command) => Ok(run_index(command)),
        Command::VerifyCitations(args) => Ok(run_verify_citations(args)),
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

/// `rlm index …`: data on stdout; a notice (index built first) or the error on stderr.
fn run_index(command: cli::IndexCommand) -> ExitStatus {
    match index::command::run(command, &mut std::io::stdout().lock()) {
        Ok(outcome) => {
            if let Some(notice) = outcome.notice {
                eprintln!("rlm: {notice}");
            }
            ExitStatus::Success
        }
        // A closed pipe (`| head`) is not an error.
        Err(index::IndexError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Success,
        Err(e) => {
            eprintln!("rlm: error: {e}");
            e.exit_status()
        }
    }
}

/// `rlm verify-citations …`: the report on stdout; 1 when a citation fails, 2 on bad input.
fn run_verify_citations(args: cli::VerifyCitationsArgs) -> ExitStatus {
    match citation::command::run(args, &mut std::io::stdout().lock()) {
        Ok(status) => status,
        Err(citation::CitationError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Success,
        Err(e) => {
            eprintln!("rlm: error: {e}");
            e.exit_status()
        }
    }
}
