//! rlm: fan one prompt out over many files to language models in parallel, and combine the
//! answers into one result and a completion report.
//!
//! The flow runs one way — inputs → manifest → plan → cache pre-pass → execute →
//! aggregate → report — with one module per stage and a plain data type between stages.

pub mod aggregate;
pub mod batch;
pub mod cache;
pub mod cli;
pub mod completions;
pub mod error;
pub mod exec;
pub mod findings;
pub mod fs_atomic;
pub mod input;
pub mod man_page;
pub mod plan;
pub mod progress;
pub mod prompt;
pub mod provider;
pub mod report;
pub mod run_store;
pub mod settings;
pub mod skill;

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
        Command::Skill(action) => run_skill(action),
        Command::Completions(args) => print_data(&completions::completion_script(args.shell)),
        Command::Man(args) => man_page::man_page(args.subcommand.as_deref())
            .map_err(|e| RlmError::Usage(e.to_string()).into())
            .and_then(|page| print_data(&page)),
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

/// `rlm skill install|show`: the status lines of install go to stderr, `show`'s files to stdout.
fn run_skill(action: cli::SkillAction) -> anyhow::Result<ExitStatus> {
    let scope = |user: bool| -> Result<skill::Scope, RlmError> {
        if user {
            let home = std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .filter(|h| !h.is_empty())
                .ok_or_else(|| RlmError::Usage(skill::SkillError::NoHome.to_string()))?;
            Ok(skill::Scope::User(home.into()))
        } else {
            let cwd = std::env::current_dir().map_err(|e| RlmError::io(".", e))?;
            Ok(skill::Scope::Project(cwd))
        }
    };
    match action {
        cli::SkillAction::Install { user, force } => {
            let outcomes = skill::install(&scope(user)?, force).map_err(|e| match e {
                skill::SkillError::Io { path, source } => RlmError::io(path, source),
                other => RlmError::Usage(other.to_string()),
            })?;
            let _ = skill::write_outcomes(&mut std::io::stderr().lock(), &outcomes);
            Ok(ExitStatus::Success)
        }
        cli::SkillAction::Show { user } => {
            let mut text = Vec::new();
            // Into a buffer first: writing to a Vec cannot fail, so only stdout's errors remain.
            let _ = skill::show(&scope(user)?, &mut text);
            print_data(&text)
        }
    }
}

/// Writes generated data to stdout; a closed pipe (`| head`) is not an error.
fn print_data(bytes: &[u8]) -> anyhow::Result<ExitStatus> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(RlmError::io("<stdout>", e).into()),
        _ => Ok(ExitStatus::Success),
    }
}
